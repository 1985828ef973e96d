"""Why the network gave its answer: each pixel's exact share of a logit, and where ink would move it.

Course step: 前向传播 (forward propagation), read backwards. Both of the
course's networks are piecewise linear in their input x: ReLU passes a unit
or zeroes it, max-pool passes one value of each window, and the rest is
matmul, conv2d and biases. So for one input, with its active units and its
pools' choices held as they are, every logit is an affine function of x:

  logit_d = sum_i x_i * g_d[i] + bias_d

g_d is the gradient of logit d with respect to x (the `missing ink`: how
far logit d moves per unit of ink added at pixel i, a whole stroke's
brightness being 1), and x_i * g_d[i] is pixel i's share of it (its
`contribution`). For the 784-500-10 network, with A the active hidden
units, g_d[i] = sum over j in A of w1[i, j] * w2[j, d] and bias_d = sum
over j in A of b1[j] * w2[j, d] + b2[d]. The pixels' shares and the bias
add up to the logit exactly (float32 rounding aside).

The gradient is computed here in NumPy (its matrix products are BLAS's,
which the board runs on the calling thread: mnistkit.board.threads),
backwards through the layers the network declares (mnistkit.layers:
dense, conv, pool, logits), from one run's layer values and the served
model's own weights (Inside.weights: the moving-average weights, from a
checkpoint, a SavedModel or a .tflite), so that the three forms answer
alike. bias_d is the affine piece's value at x = 0: the logit less the
pixels' shares (what the biases give through the active units).
"""
import numpy as np

from .records import IMAGE_SIZE

POOL = 2  # the max-pools' window and stride (mnist_lenet5_forward.max_pool_2x2, SAME padding)


def gradients(layers, weights, values, digits):
    """d logit / d x for each of `digits`: float64 [len(digits), 784] (computed in float32, as the network is).

    layers: mnistkit.layers.Layer list in forward()'s order (the last the
    logits); weights: {layer name: incoming weights, TensorFlow's layout}
    (Inside.weights); values: one input's value of each layer, float32
    [*layer.shape] (Inside.run's, [0] of each); digits: the logits asked
    for (ints). Raises ValueError when a layer is of no kind it knows.
    """
    grad = np.zeros((len(digits), values[-1].size), np.float32)
    grad[np.arange(len(digits)), list(digits)] = 1.0
    for at in range(len(layers) - 1, -1, -1):
        layer, value = layers[at], np.asarray(values[at], np.float32)
        below = layers[at - 1].shape if at else ((IMAGE_SIZE, IMAGE_SIZE, 1) if layer.kind == "conv"
                                                 else (IMAGE_SIZE * IMAGE_SIZE,))
        grad = grad.reshape((len(digits),) + tuple(layer.shape))
        if layer.kind in ("dense", "conv"):
            grad = grad * (value > 0)  # ReLU: the active units pass, the others give nothing
        if layer.kind in ("dense", "logits"):
            w = np.asarray(weights[layer.name], np.float32)
            grad = (grad.reshape(len(digits), -1) @ w.T).reshape((len(digits),) + tuple(below))
        elif layer.kind == "conv":
            grad = conv_back(grad, np.asarray(weights[layer.name], np.float32))
        elif layer.kind == "pool":
            grad = pool_back(grad, np.asarray(values[at - 1], np.float32))
        else:
            raise ValueError(f"{layer.name}: no gradient through a layer of kind {layer.kind!r}")
    return grad.reshape(len(digits), -1).astype(np.float64)


def conv_back(grad, w):
    """The gradient through tf.nn.conv2d (stride 1, SAME): grad [k, h, w, out], w [kh, kw, in, out] -> [k, h, w, in].

    Each output unit sends its gradient back to the kh x kw inputs of its
    window: one product gives every window's shares, [k, h, w, kh, kw, in],
    which are then added at their places (col2im), kh x kw slices in all.
    """
    kh, kw, channels, out = w.shape
    k, h, width = grad.shape[:3]
    shares = (grad.reshape(-1, out) @ w.reshape(-1, out).T).reshape(k, h, width, kh, kw, channels)
    padded = np.zeros((k, h + kh - 1, width + kw - 1, channels), np.float32)
    for i in range(kh):
        for j in range(kw):
            padded[:, i:i + h, j:j + width] += shares[:, :, :, i, j]
    top, left = (kh - 1) // 2, (kw - 1) // 2  # TensorFlow's SAME: the odd pixel of padding goes below and right
    return padded[:, top:top + h, left:left + width]


def pool_back(grad, before):
    """The gradient through a POOL x POOL max-pool (stride POOL, SAME): grad [k, h, w, c] goes, whole, to the first
    largest value of each window of `before` [H, W, c] (the pool's input), as TensorFlow's MaxPoolGrad sends it."""
    height, width, channels = before.shape
    h, w = -(-height // POOL), -(-width // POOL)
    padded = np.pad(before, ((0, h * POOL - height), (0, w * POOL - width), (0, 0)), constant_values=-np.inf)
    windows = padded.reshape(h, POOL, w, POOL, channels).transpose(0, 2, 4, 1, 3).reshape(h, w, channels, -1)
    chosen = np.eye(POOL * POOL, dtype=grad.dtype)[windows.argmax(axis=-1)]  # [h, w, c, POOL * POOL], one 1 per window
    spread = grad[..., None] * chosen  # [k, h, w, c, POOL * POOL]
    spread = spread.reshape(len(grad), h, w, channels, POOL, POOL).transpose(0, 1, 4, 2, 5, 3)
    return spread.reshape(len(grad), h * POOL, w * POOL, channels)[:, :height, :width]


def shares(x, logits, grad):
    """(pixels float64 [784], bias float) of one logit: x * grad (each pixel's share) and the logit less their sum.

    x: the input float [784] in [0, 1]; logits: that logit (float); grad: its gradient [784] (gradients)."""
    pixels = np.asarray(x, np.float64).reshape(-1) * grad
    return pixels, float(logits) - float(pixels.sum())

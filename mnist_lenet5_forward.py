"""The course's convolutional network (LeNet-5 style): two 5x5 convolutions, 512 hidden units, 10 logits.

Course step: 卷积网络前向传播 (the convolutional chapter's forward
propagation). Imported by mnist_lenet5_backward.py, mnist_lenet5_test.py and
mnist_app.py. It takes the same input as mnist_forward.forward, float32
[batch, 784], and reshapes it to [batch, 28, 28, 1] in the graph, so the
TFRecord readers, the evaluation and the app serve both networks unchanged.
Its variables (conv1_w ... fc2_b) are named apart from the 784-500-10
network's (w1 ... b2), so that a checkpoint of one is never taken for the
other (mnistkit.networks).
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)

import dataclasses

from tf_compat import tf
from mnist_forward import get_bias, get_weight
from mnistkit import networks

IMAGE_SIZE = 28
NUM_CHANNELS = 1
INPUT_NODE = IMAGE_SIZE * IMAGE_SIZE * NUM_CHANNELS
CONV1_SIZE = 5
CONV1_KERNEL_NUM = 32
CONV2_SIZE = 5
CONV2_KERNEL_NUM = 64
POOL_SIZE = 2  # 2x2 max-pool, stride 2: halves each side (28 -> 14 -> 7)
FC_SIZE = 512
OUTPUT_NODE = 10
DROPOUT_RATE = 0.5  # fraction of the 512 hidden units dropped in training (the course's keep_prob 0.5)
# Its declaration (name, variables conv1_w ... fc2_b, scripts, export name: networks.LENET5) at the sizes above.
NETWORK = dataclasses.replace(networks.LENET5, layers=(INPUT_NODE, CONV1_KERNEL_NUM, CONV2_KERNEL_NUM, FC_SIZE,
                                                       OUTPUT_NODE))


def conv2d(x, w):
    """2-D convolution, stride 1, SAME padding: [batch, h, w, in] -> [batch, h, w, out] (tf.nn.conv2d)."""
    return tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")


def max_pool_2x2(x):
    """2x2 max-pool, stride 2, SAME padding: [batch, h, w, c] -> [batch, ceil(h/2), ceil(w/2), c] (tf.nn.max_pool)."""
    return tf.nn.max_pool(x, ksize=[1, POOL_SIZE, POOL_SIZE, 1], strides=[1, POOL_SIZE, POOL_SIZE, 1], padding="SAME")


def forward(x, regularizer, train=False):
    """Logits of the LeNet-5-style network.

    x: float32 tensor [batch, 784], pixels in [0, 1] (row-major 28x28, as
    the TFRecords hold them), reshaped here to [batch, 28, 28, 1].
    regularizer: L2 weight (float) added to the `losses` collection for each
    of the four weight tensors (see mnist_forward.get_weight), or None.
    train: True drops DROPOUT_RATE of the fully connected layer's units
    (tf.nn.dropout, survivors scaled by 2); False (evaluation, the app)
    keeps them all.
    Returns float32 logits [batch, 10] (no softmax applied).
    Layers: conv 5x5x32 + bias + ReLU, max-pool -> [batch, 14, 14, 32];
    conv 5x5x64 + bias + ReLU, max-pool -> [batch, 7, 7, 64]; flattened to
    3136; fully connected 512 + ReLU (+ dropout); fully connected 10.
    """
    images = tf.reshape(x, [-1, IMAGE_SIZE, IMAGE_SIZE, NUM_CHANNELS])

    conv1_w = get_weight([CONV1_SIZE, CONV1_SIZE, NUM_CHANNELS, CONV1_KERNEL_NUM], regularizer, "conv1_w")
    conv1_b = get_bias([CONV1_KERNEL_NUM], "conv1_b")
    pool1 = max_pool_2x2(tf.nn.relu(tf.nn.bias_add(conv2d(images, conv1_w), conv1_b)))

    conv2_w = get_weight([CONV2_SIZE, CONV2_SIZE, CONV1_KERNEL_NUM, CONV2_KERNEL_NUM], regularizer, "conv2_w")
    conv2_b = get_bias([CONV2_KERNEL_NUM], "conv2_b")
    pool2 = max_pool_2x2(tf.nn.relu(tf.nn.bias_add(conv2d(pool1, conv2_w), conv2_b)))

    side = pool2.shape.as_list()[1]  # 7
    nodes = side * side * CONV2_KERNEL_NUM  # 3136
    reshaped = tf.reshape(pool2, [-1, nodes])

    fc1_w = get_weight([nodes, FC_SIZE], regularizer, "fc1_w")
    fc1_b = get_bias([FC_SIZE], "fc1_b")
    fc1 = tf.nn.relu(tf.matmul(reshaped, fc1_w) + fc1_b)
    if train:
        fc1 = tf.nn.dropout(fc1, rate=DROPOUT_RATE)

    fc2_w = get_weight([FC_SIZE, OUTPUT_NODE], regularizer, "fc2_w")
    fc2_b = get_bias([OUTPUT_NODE], "fc2_b")
    return tf.matmul(fc1, fc2_w) + fc2_b


if __name__ == "__main__":
    import sys

    import tf_compat
    from mnistkit.cli import command
    sys.exit(tf_compat.not_a_script(__file__, "the convolutional chapter's LeNet-5 network (forward propagation), "
                                              "imported by the other scripts",
                                    f"train it with `{command('mnist_lenet5_backward.py')}`, use it with "
                                    f"`{command('mnist_lenet5_test.py')}` or `{command('mnist_app.py')}`"))

"""Training played back: the served model folder's history snapshots (mnistkit.history), and a picture through each.

- GET  /board/history                         {"snapshots": [{"global_step", "accuracy" (or null), "checkpoint"}],
                                              "model"}: the snapshots, oldest first (history_answer)
- POST /board/playback[?step=S]               a picture's bytes, as /board/predict takes them -> {"input", "model",
                                              "snapshots": [{"global_step", "checkpoint", "probabilities",
                                              "digit"}]}: every snapshot's answer (or snapshot S's)
- GET  /board/history/unit?step=S&layer=L&unit=N   one unit's incoming weights at snapshot S, as
                                              /board/inside/unit gives them ("incoming")

Each snapshot runs forward() in NumPy (numpy_forward), from its moving
averages, as the app restores a checkpoint: the declaration's layers
(networks.Network.inside) in order, each conv, dense and logits layer
taking the next weight and bias of its `variables`: the 784-500-10
network, LeNet-5 and a network declared like them. tests/test_playback.py
compares the answers with each snapshot restored into forward()'s graph.

A snapshot's weights are read once and kept (Kept), up to MEMORY_BYTES in
all (the 784-500-10 network's 20: 32 MB; LeNet-5's: 130 MB); past that,
the least recently used go and are read again when asked for. A served
model that is not a checkpoint (a SavedModel, a .tflite), or a folder
without snapshots, is 409 with its line; a bad `step` 400 naming it.
"""
import collections
import os
import threading

import numpy as np

from .. import checkpoints, history
from ..errors import DataError
from ..networks import EMA_SUFFIX
from ..records import IMAGE_PIXELS, IMAGE_SIZE
from . import inside as look
from . import page
from .table import BoardError

MEMORY_BYTES = 256 * 1024 * 1024  # snapshots' weights kept in memory at most (all of the default 20 of either network)
POOL = 2  # LeNet-5's max-pool: 2x2 windows, stride 2, SAME padding (mnist_lenet5_forward.max_pool_2x2)
UNIT_QUERY = "step=S&layer=L&unit=N (a snapshot's global_step, a layer's name and a unit's number from 0)"


def served_folder(model):
    """The model folder of the checkpoint `model` (a board.model.Model) serves; BoardError 409 for an export."""
    if model.form != "checkpoint":
        raise BoardError(409, f"{model.predictor.source}: a {model.form} keeps no training history; serve the "
                              "checkpoint folder it was exported from (mnist_app.py --serve --model-dir DIR)")
    return os.path.dirname(str(model.predictor.source)) or os.curdir


def snapshots_of(model):
    """[(global_step, prefix)] of the served folder's snapshots, oldest first; BoardError 409 when there are none."""
    folder = served_folder(model)
    found = history.listed(folder)
    if not found:
        raise BoardError(409, f"{os.path.join(folder, history.FOLDER)}: no training history here; train with "
                              f"mnist_backward.py --history {history.HISTORY} (its default) to keep one")
    return found


def history_answer(call):
    """GET /board/history: the served folder's snapshots with the test accuracy mnist_test.py recorded at each."""
    found = snapshots_of(call.model)
    scores = history.accuracies(served_folder(call.model))
    return {"snapshots": [{"global_step": step, "accuracy": scores.get(step), "checkpoint": prefix}
                          for step, prefix in found], "model": call.model.describe()}


def chosen_steps(call, found):
    """The snapshots `step` (a query value) names: all of `found` without one; BoardError 400 for a bad step."""
    if "step" not in call.query:
        return found
    text = call.query["step"]
    steps = dict(found)
    if not (text.isdecimal() and len(text) <= 12 and int(text) in steps):
        raise BoardError(400, f"step={text[:20]}: give the global_step of a snapshot ({found[0][0]} to "
                              f"{found[-1][0]}: GET /board/history lists them)")
    return [(int(text), steps[int(text)])]


def playback(call):
    """POST /board/playback[?step=S], a picture's bytes: each snapshot's probabilities for it, oldest first."""
    if set(call.query) - {"step"}:
        raise BoardError(400, f"{call.method} {call.path}: give no query, or step=S (a snapshot's global_step)")
    found = chosen_steps(call, snapshots_of(call.model))
    network = call.model.predictor.network
    pixels = page.under_limits(call.model, call.model.prepare, call.body, page.named(call))
    rows = pixels.reshape(1, IMAGE_PIXELS).astype(np.float32) / 255
    answers = []
    for step, prefix in found:
        logits = numpy_forward(network, KEPT.weights(prefix, network), rows)[0]
        probabilities = softmax(logits)
        answers.append({"global_step": step, "checkpoint": prefix, "digit": int(np.argmax(probabilities)),
                        "probabilities": look.numbers(probabilities)})
    return {"snapshots": answers, "input": pixels.reshape(-1).tolist(), "model": call.model.describe()}


def unit(call):
    """GET /board/history/unit?step=S&layer=L&unit=N: the unit's incoming weights at snapshot S."""
    if set(call.query) != {"step", "layer", "unit"}:
        raise BoardError(400, f"{call.method} {call.path}: give {UNIT_QUERY}")
    (step, prefix), = chosen_steps(call, snapshots_of(call.model))
    network, name, number = call.model.predictor.network, call.query["layer"], call.query["unit"]
    weighted = dict(weighted_layers(network))
    if name not in weighted:
        raise BoardError(400, f"layer={name[:40]}: give a layer with weights ({', '.join(weighted)})")
    w = KEPT.weights(prefix, network)[weighted[name]][0]
    if not (number.isdecimal() and len(number) <= 6 and int(number) < w.shape[-1]):
        raise BoardError(400, f"unit={number[:20]}: {name} has units 0 to {w.shape[-1] - 1}")
    incoming = w[..., int(number)]
    if incoming.ndim == 1 and incoming.size == IMAGE_PIXELS:  # a first dense layer's: shaped as the picture
        incoming = incoming.reshape(IMAGE_SIZE, IMAGE_SIZE)
    return {"global_step": step, "layer": name, "unit": int(number), "incoming": look.weights_part(incoming),
            "model": call.model.describe()}


def weighted_layers(network):
    """[(layer name, index of its (weight, bias) pair in `network.variables`)] of its conv, dense and logits layers."""
    names = [name for name, kind in network.inside if kind != "pool"]
    return [(name, i) for i, name in enumerate(names)]


def softmax(logits):
    """float32 [10] probabilities of logits [10] (tf.nn.softmax's, computed stably)."""
    e = np.exp(logits - logits.max())
    return (e / e.sum()).astype(np.float32)


def numpy_forward(network, weights, rows):
    """forward()'s logits float32 [n, 10] for rows float32 [n, 784], in NumPy, from weights [(w, b)].

    The layers are the declaration's (network.inside), in order: "conv" a
    SAME convolution of stride 1 plus bias and ReLU, "pool" a 2x2 max-pool of
    stride 2 (SAME), "dense" a matmul plus bias and ReLU, "logits" a matmul
    plus bias; each conv, dense and logits layer takes the next (w, b) of
    `weights` (the variables' moving averages in the declaration's order).
    The first conv layer reshapes the rows into [n, 28, 28, 1], a dense
    layer flattens maps as tf.reshape does. Raises DataError for a kind it
    does not know.
    """
    values, pairs = rows, iter(weights)
    for name, kind in network.inside:
        if kind == "conv":
            w, b = next(pairs)
            values = values.reshape(-1, IMAGE_SIZE, IMAGE_SIZE, 1) if values.ndim == 2 else values
            values = np.maximum(conv_same(values, w) + b, 0)
        elif kind == "pool":
            values = max_pool(values)
        elif kind in ("dense", "logits"):
            w, b = next(pairs)
            values = product(values.reshape(len(values), -1), w) + b
            values = np.maximum(values, 0) if kind == "dense" else values
        else:
            raise DataError(f"{network.forward}.NETWORK: layer {name} of kind {kind!r} cannot be played back")
    return values


def product(a, b):
    """a [n, k] @ b [k, m] (float32 [n, m]) in NumPy's own loops (einsum), not BLAS: OpenBLAS's threads, each
    waiting for a core that the server's other threads hold, made one playback 10 to 100 times slower on a
    loaded machine (docs/inside.md, "Training played back")."""
    return np.einsum("nk,km->nm", a, b)


def conv_same(values, w):
    """tf.nn.conv2d(values [n, h, w, in], w [kh, kw, in, out], strides 1, padding SAME) in NumPy."""
    kh, kw = w.shape[:2]
    padded = np.pad(values, ((0, 0), ((kh - 1) // 2, kh // 2), ((kw - 1) // 2, kw // 2), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(1, 2))  # [n, h, w, in, kh, kw]
    n, h, width = windows.shape[:3]
    columns = windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * width, -1)  # im2col: [n*h*w, kh*kw*in]
    return product(columns, w.reshape(-1, w.shape[-1])).reshape(n, h, width, -1)


def max_pool(values):
    """tf.nn.max_pool(values [n, h, w, c], 2x2 windows, stride 2, SAME) in NumPy: [n, ceil(h/2), ceil(w/2), c]."""
    n, h, w, c = values.shape
    padded = np.pad(values, ((0, 0), (0, -h % POOL), (0, -w % POOL), (0, 0)), constant_values=-np.inf)
    return padded.reshape(n, (h + 1) // POOL, POOL, (w + 1) // POOL, POOL, c).max(axis=(2, 4))


class Kept:
    """The snapshots' weights read once and kept, up to `most` bytes (the least recently used go first).

    weights(prefix, network): [(w, b)] float32, the moving averages of the
    network's variables in its declaration's order, from the snapshot's
    files; read again when those files changed (a run wrote that step
    again). Thread-safe. Raises BoardError 409 for a snapshot that cannot
    be read (gone, damaged, of another network).
    """

    def __init__(self, most=MEMORY_BYTES):
        self.most, self.lock, self.held = most, threading.Lock(), collections.OrderedDict()

    def weights(self, prefix, network):
        stamp = checkpoints.signature(prefix)
        key = (prefix, network.forward)
        with self.lock:
            held = self.held.get(key)
            if held is not None and held[0] == stamp:
                self.held.move_to_end(key)
                return held[1]
        pairs = read_pairs(prefix, network)
        size = sum(w.nbytes + b.nbytes for w, b in pairs)
        with self.lock:
            self.held[key] = (stamp, pairs, size)
            while sum(entry[2] for entry in self.held.values()) > self.most and len(self.held) > 1:
                self.held.popitem(last=False)
        return pairs

    def clear(self):
        with self.lock:
            self.held.clear()


def read_pairs(prefix, network):
    """[(w, b)] of a snapshot: each of network.variables' moving average (<name>/ExponentialMovingAverage), paired."""
    from tf_compat import tf  # the board runs a checkpoint through TensorFlow already
    try:
        with checkpoints.readable_prefix(prefix) as literal:
            reader = tf.train.load_checkpoint(literal)
            values = [np.asarray(reader.get_tensor(name + EMA_SUFFIX), np.float32) for name in network.variables]
    except (tf.errors.OpError, ValueError, DataError) as e:
        line = " ".join(str(e).split())[:200]
        raise BoardError(409, f"{prefix}: cannot read this history snapshot ({line})") from None
    return list(zip(values[0::2], values[1::2]))


KEPT = Kept()  # the board's one store: a folder's snapshots are read once, whichever request asks first

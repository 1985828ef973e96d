"""Training played back: the served model folder's history snapshots (mnistkit.history), and a picture through each.

- GET  /board/history                         {"snapshots": [{"global_step", "accuracy" (or null), "checkpoint"}],
                                              "model"}: the snapshots, oldest first (history_answer)
- POST /board/playback[?step=S]               a picture's bytes, as /board/predict takes them -> {"input", "model",
                                              "snapshots": [{"global_step", "checkpoint", "probabilities",
                                              "digit"}]}: every snapshot's answer (or snapshot S's)
- GET  /board/history/unit?step=S&layer=L&unit=N   one unit's incoming weights at snapshot S, as
                                              /board/inside/unit gives them ("incoming")

Each takes model=compare as well, for the --compare network's folder (table.chosen).

Each snapshot runs forward() in NumPy (numpy_forward), from its moving
averages, as the app restores a checkpoint: the declaration's layers
(networks.Network.inside) in order, each conv, dense and logits layer
taking the next weight and bias of its `variables`: the 784-500-10
network, LeNet-5 and a network declared like them. tests/test_playback.py
compares the answers with each snapshot restored into forward()'s graph.

A snapshot's weights are read once and kept (Kept), up to MEMORY_BYTES in
all (the 784-500-10 network's 20: 32 MB; LeNet-5's: 130 MB); past that,
the least recently used go and are read again when asked for. A
playback holds the weights of every snapshot it plays while it runs
(they go through the layers together), so MEMORY_BYTES is set to hold a
default history of either network whole. A served model that is not a
checkpoint (a SavedModel, a .tflite), or a folder without snapshots, is
409 with its line; a bad `step` 400 naming it.
"""
import collections
import functools
import os
import threading

import numpy as np

from .. import checkpoints, history, preparation
from ..errors import DataError
from ..networks import EMA_SUFFIX
from ..records import IMAGE_PIXELS, IMAGE_SIZE
from . import inside as look
from . import page
from .table import BoardError, chosen

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
    if set(call.query) - {"model"}:
        raise BoardError(400, f"{call.method} {call.path}: give no query, or model=compare for the --compare network")
    model = chosen(call)
    found = snapshots_of(model)
    scores = history.accuracies(served_folder(model))
    return {"snapshots": [{"global_step": step, "accuracy": scores.get(step), "checkpoint": prefix}
                          for step, prefix in found], "model": model.describe()}


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
    if set(call.query) - {"step", "model"}:
        raise BoardError(400, f"{call.method} {call.path}: give no query, or step=S (a snapshot's global_step), "
                              "and model=compare for the --compare network")
    model = chosen(call)
    found = chosen_steps(call, snapshots_of(model))
    network = model.predictor.network
    pixels = page.picture_sent(call, lambda: page.under_limits(model, model.prepare, call.body, page.named(call)))
    rows = preparation.network_rows(pixels)
    stamps = checkpoints.signatures([prefix for _, prefix in found])  # the history folder listed once
    logits = numpy_forward(network, [KEPT.weights(prefix, network, stamps[prefix]) for _, prefix in found], rows)[:, 0]
    answers = []
    for (step, prefix), these in zip(found, logits):
        probabilities = softmax(these)
        answers.append({"global_step": step, "checkpoint": prefix, "digit": int(np.argmax(probabilities)),
                        "probabilities": look.numbers(probabilities)})
    return {"snapshots": answers, "input": pixels.reshape(-1).tolist(), "model": model.describe()}


def unit(call):
    """GET /board/history/unit?step=S&layer=L&unit=N: the unit's incoming weights at snapshot S."""
    if set(call.query) - {"model"} != {"step", "layer", "unit"}:
        raise BoardError(400, f"{call.method} {call.path}: give {UNIT_QUERY}")
    model = chosen(call)
    (step, prefix), = chosen_steps(call, snapshots_of(model))
    network, name, number = model.predictor.network, call.query["layer"], call.query["unit"]
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
            "model": model.describe()}


def weighted_layers(network):
    """[(layer name, index of its (weight, bias) pair in `network.variables`)] of its conv, dense and logits layers."""
    names = [name for name, kind in network.inside if kind != "pool"]
    return [(name, i) for i, name in enumerate(names)]


def softmax(logits):
    """float32 [10] probabilities of logits [10] (tf.nn.softmax's, computed stably)."""
    e = np.exp(logits - logits.max())
    return (e / e.sum()).astype(np.float32)


def numpy_forward(network, snapshots, rows):
    """forward()'s logits float32 [s, n, 10] for rows float32 [n, 784] through each of s snapshots, in NumPy.

    snapshots: s lists of (w, b) float32 pairs (Kept.weights': the
    variables' moving averages in the declaration's order). The layers are
    the declaration's (network.inside), in order: "conv" a SAME convolution
    of stride 1 plus bias and ReLU, "pool" a 2x2 max-pool of stride 2
    (SAME), "dense" a matmul plus bias and ReLU, "logits" a matmul plus
    bias; each conv, dense and logits layer takes the next pair of every
    snapshot. The first conv layer reshapes the rows into [n, 28, 28, 1], a
    dense layer flattens maps as tf.reshape does. The snapshots go through
    the layers together, so that the rows' windows are cut once for all of
    them. Raises DataError for a kind it does not know.
    """
    values, by_layer = [rows], iter(zip(*snapshots))  # one block for every snapshot until the first weights
    for name, kind in network.inside:
        if kind == "conv":
            values = conv_same([v.reshape(-1, IMAGE_SIZE, IMAGE_SIZE, 1) if v.ndim == 2 else v for v in values],
                               next(by_layer))
        elif kind == "pool":
            values = [max_pool(v) for v in values]
        elif kind in ("dense", "logits"):
            values = products([v.reshape(len(v), -1) for v in values], next(by_layer), relu=kind == "dense")
        else:
            raise DataError(f"{network.forward}.NETWORK: layer {name} of kind {kind!r} cannot be played back")
    return np.stack(values)


def products(blocks, pairs, relu):
    """[block @ w + b, through ReLU when `relu`] float32 [m, out] for each (w [k, out], b [out]) of `pairs`, the
    blocks [m, k] being one for every pair or one each.

    The products are NumPy's matmul, so BLAS's: the board runs BLAS on one
    thread (mnistkit.board.threads), as its own threads would wait for
    cores that a loaded machine's other work holds.
    """
    found = []
    for i, (w, b) in enumerate(pairs):
        y = blocks[i if len(blocks) > 1 else 0] @ w
        y += b
        found.append(np.maximum(y, 0, out=y) if relu else y)
    return found


def conv_same(values, pairs):
    """[tf.nn.conv2d(value, w, strides 1, padding SAME) + b, then ReLU] float32 [n, h, w, out] for each (w [kh, kw,
    in, out], b [out]) of `pairs`, the values [n, h, w, in] being one for every pair or one each.

    Each value's windows are cut into one buffer (im2col: [n*h*w,
    kh*kw*in]), used again for the next: the board hands large blocks back
    to the system as they are freed (board.memory), so that a new one per
    snapshot would cost its pages' faults each time.
    """
    kh, kw = pairs[0][0].shape[:2]
    n, h, width, channels = values[0].shape
    top, left = (kh - 1) // 2, (kw - 1) // 2  # TensorFlow's SAME: the odd pixel of padding goes below and right
    padded = np.zeros((n, h + kh - 1, width + kw - 1, channels), np.float32)  # its border stays 0
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(1, 2)).transpose(0, 1, 2, 4, 5, 3)
    columns = np.empty(windows.shape, np.float32)  # [n, h, w, kh, kw, in]
    found = []
    for i, (w, b) in enumerate(pairs):
        if i < len(values):  # the next value's windows (the one every pair shares: once)
            padded[:, top:top + h, left:left + width] = values[i]
            np.copyto(columns, windows)
        y = columns.reshape(n * h * width, -1) @ w.reshape(-1, w.shape[-1])
        y += b
        found.append(np.maximum(y, 0, out=y).reshape(n, h, width, -1))
    return found


def max_pool(values):
    """tf.nn.max_pool(values [n, h, w, c], 2x2 windows, stride 2, SAME) in NumPy: [n, ceil(h/2), ceil(w/2), c],
    the largest of each window's POOL x POOL strided slices."""
    n, h, w, c = values.shape
    if h % POOL or w % POOL:
        values = np.pad(values, ((0, 0), (0, -h % POOL), (0, -w % POOL), (0, 0)), constant_values=-np.inf)
    return functools.reduce(np.maximum, (values[:, i::POOL, j::POOL] for i in range(POOL) for j in range(POOL)))


class Kept:
    """The snapshots' weights read once and kept, up to `most` bytes (the least recently used go first).

    weights(prefix, network, stamp=None): [(w, b)] float32, the moving
    averages of the network's variables in its declaration's order, from
    the snapshot's files; read again when those files changed (a run wrote
    that step again). stamp: their checkpoints.signature when the caller
    took it (checkpoints.signatures: one listing for many snapshots).
    Thread-safe. Raises BoardError 409 for a snapshot that cannot be read
    (gone, damaged, of another network).
    """

    def __init__(self, most=MEMORY_BYTES):
        self.most, self.lock, self.held = most, threading.Lock(), collections.OrderedDict()

    def weights(self, prefix, network, stamp=None):
        stamp = checkpoints.signature(prefix) if stamp is None else stamp
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

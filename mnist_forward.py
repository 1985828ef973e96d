"""The course's network: 784 inputs, one hidden ReLU layer of 500, 10 logits.

Course step: 前向传播 (forward propagation). Imported by mnist_backward.py,
mnist_test.py and mnist_app.py so that all three build the same variables
(`w1`, `b1`, `w2`, `b2`), which is what lets a checkpoint written by one be
restored by the others (mnist_checkpoint.restore checks that they fit).
mnist_lenet5_forward.py is the other network the same scripts train,
evaluate and apply; network_of() tells from a checkpoint's variable names
which of the two it holds.
"""
import importlib

from tf_compat import tf
from mnist_idx import DataError

NAME = "the 784-500-10 network"  # as messages name it
VARIABLES = ("w1", "b1", "w2", "b2")  # trainable variables, as named in checkpoints
TRAIN_SCRIPT = "mnist_backward.py"
TEST_SCRIPT = "mnist_test.py"
NETWORKS = ("mnist_forward", "mnist_lenet5_forward")  # every network a checkpoint here can hold (modules)
EMA_SUFFIX = "/ExponentialMovingAverage"  # tf.train.ExponentialMovingAverage's name for a variable's shadow

INPUT_NODE = 784
OUTPUT_NODE = 10
LAYER1_NODE = 500
WEIGHT_STDDEV = 0.1
LOSSES_COLLECTION = "losses"


def get_weight(shape, regularizer, name):
    """A weight variable drawn from a truncated normal (stddev 0.1), float32.

    When `regularizer` (a float, the L2 weight) is given, adds
    `regularizer * sum(w ** 2) / 2` to the `losses` collection; that is what
    the course's `tf.contrib.layers.l2_regularizer(regularizer)(w)` computed
    before tf.contrib was removed.
    """
    w = tf.Variable(tf.truncated_normal(shape, stddev=WEIGHT_STDDEV), name=name)
    if regularizer is not None:
        tf.add_to_collection(LOSSES_COLLECTION, regularizer * tf.nn.l2_loss(w))
    return w


def get_bias(shape, name):
    """A bias variable of the given shape, float32, initialised to zero."""
    return tf.Variable(tf.zeros(shape), name=name)


def forward(x, regularizer, train=False):
    """Logits of the 784-500-10 network.

    x: float32 tensor [batch, 784], pixels in [0, 1].
    regularizer: L2 weight (float) or None for no L2 terms.
    train: unused (this network has no dropout); every network's forward
    takes it, so that mnist_backward, mnist_test and mnist_app call each alike.
    Returns float32 logits [batch, 10] (no softmax applied).
    """
    w1 = get_weight([INPUT_NODE, LAYER1_NODE], regularizer, "w1")
    b1 = get_bias([LAYER1_NODE], "b1")
    y1 = tf.nn.relu(tf.matmul(x, w1) + b1)

    w2 = get_weight([LAYER1_NODE, OUTPUT_NODE], regularizer, "w2")
    b2 = get_bias([OUTPUT_NODE], "b2")
    return tf.matmul(y1, w2) + b2


def network_of(names):
    """The forward module of the network a checkpoint holds, or None when it holds none of NETWORKS.

    names: the checkpoint's variable names (e.g. the keys of
    mnist_checkpoint.read_checkpoint). A network is recognised by its
    VARIABLES, trained or as moving-average shadows
    (`w1/ExponentialMovingAverage`), whatever their shapes
    (mnist_checkpoint.check_variables compares those).
    """
    stored = {name[:-len(EMA_SUFFIX)] if name.endswith(EMA_SUFFIX) else name for name in names}
    for module in NETWORKS:
        net = importlib.import_module(module)
        if stored.issuperset(net.VARIABLES):
            return net
    return None


def check_network(ckpt_path, names, net, script):
    """Raise DataError when a checkpoint holds another of NETWORKS than `net` (a forward module).

    names: the checkpoint's variable names. script: "TRAIN_SCRIPT" or
    "TEST_SCRIPT", the attribute naming the script the message sends the
    user to, e.g. `model/mnist_model-2000: this checkpoint holds the
    784-500-10 network, not LeNet-5; use mnist_test.py, or another
    --model-dir`. A checkpoint of no known network passes here, for
    mnist_checkpoint.check_variables to name what does not fit.
    """
    found = network_of(names)
    if found is not None and found.NAME != net.NAME:
        raise DataError(f"{ckpt_path}: this checkpoint holds {found.NAME}, not {net.NAME}; "
                        f"use {getattr(found, script)}, or another --model-dir")


if __name__ == "__main__":
    import sys

    import tf_compat
    sys.exit(tf_compat.not_a_script(__file__, "the course's 784-500-10 network (forward propagation), imported by the other scripts",
                                    "train it with mnist_backward.py, use it with mnist_test.py or mnist_app.py"))

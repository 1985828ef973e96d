"""The course's network: 784 inputs, one hidden ReLU layer of 500, 10 logits.

Course step: 前向传播 (forward propagation). Imported by mnist_backward.py,
mnist_test.py and mnist_app.py so that all three build the same variables
(`w1`, `b1`, `w2`, `b2`), which is what lets a checkpoint written by one be
restored by the others. mnist_lenet5_forward.py is the other network the
same scripts train, evaluate and apply; network_of() tells from a
checkpoint's variable names which of the two it holds.
"""
import importlib

from tf_compat import tf

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


def network_of(ckpt_path):
    """The forward module of the network a checkpoint holds, or None when it holds none of NETWORKS.

    ckpt_path: checkpoint prefix (e.g. model/mnist_model-2000). A network is
    recognised by its VARIABLES, trained or as moving-average shadows
    (`w1/ExponentialMovingAverage`), whatever their shapes (check_checkpoint
    compares those). Raises ValueError naming the checkpoint when it cannot
    be read (tf.train.list_variables).
    """
    try:
        stored = {name[:-len(EMA_SUFFIX)] if name.endswith(EMA_SUFFIX) else name
                  for name, _ in tf.train.list_variables(ckpt_path)}
    except (tf.errors.OpError, ValueError) as e:
        raise ValueError(f"{ckpt_path}: unreadable checkpoint ({getattr(e, 'message', e)})") from None
    for module in NETWORKS:
        net = importlib.import_module(module)
        if stored.issuperset(net.VARIABLES):
            return net
    return None


def check_network(ckpt_path, net, script):
    """Raise ValueError when a checkpoint holds another of NETWORKS than `net` (a forward module).

    script: "TRAIN_SCRIPT" or "TEST_SCRIPT", the attribute naming the
    script the message sends the user to, e.g. `model/mnist_model-2000:
    this checkpoint holds the 784-500-10 network, not LeNet-5; use
    mnist_test.py, or another --model-dir`. A checkpoint of no known network
    passes here, for check_checkpoint to name what does not fit.
    """
    found = network_of(ckpt_path)
    if found is not None and found.NAME != net.NAME:
        raise ValueError(f"{ckpt_path}: this checkpoint holds {found.NAME}, not {net.NAME}; "
                         f"use {getattr(found, script)}, or another --model-dir")


def check_checkpoint(ckpt_path, var_list):
    """Raise ValueError when a checkpoint does not fit the variables about to be restored.

    ckpt_path: checkpoint prefix (e.g. model/mnist_model-2000).
    var_list: {name in checkpoint: variable}, as given to tf.train.Saver.
    The message names the checkpoint and the first missing variable or
    shape mismatch (for example a checkpoint of a network with another
    hidden-layer size), instead of TensorFlow's long restore traceback.
    """
    try:
        stored = dict(tf.train.list_variables(ckpt_path))
    except (tf.errors.OpError, ValueError) as e:
        raise ValueError(f"{ckpt_path}: unreadable checkpoint ({getattr(e, 'message', e)})") from None
    for name, var in sorted(var_list.items()):
        want = var.shape.as_list()
        if name not in stored:
            raise ValueError(f"{ckpt_path}: checkpoint of another graph: it has no variable {name!r}")
        if list(stored[name]) != want:
            raise ValueError(f"{ckpt_path}: checkpoint of another graph: {name} is {list(stored[name])} there, {want} here")

"""The course's network: 784 inputs (INPUT_NODE), one hidden ReLU layer of 500 (LAYER1_NODE), 10 logits.

Course step: 前向传播 (forward propagation). Imported by mnist_backward.py,
mnist_test.py and mnist_app.py so that all three build the same variables
(`w1`, `b1`, `w2`, `b2`), which is what lets a checkpoint written by one be
restored by the others (mnistkit.checkpoints.restoring checks that they fit).
mnist_lenet5_forward.py is the other network the same scripts train,
evaluate and apply; a model folder records the declaration of the network
it holds (mnistkit.networks), and only a folder written before it did is
told from its checkpoint's variable names. NETWORK, the network's declaration, is
built from the constants below, so that an edited LAYER1_NODE names the
network in every message ("the 784-300-10 network").
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)

import dataclasses

from tf_compat import tf
from mnistkit import networks

INPUT_NODE = 784
OUTPUT_NODE = 10
LAYER1_NODE = 500
WEIGHT_STDDEV = 0.1
LABEL = f"{INPUT_NODE}-{LAYER1_NODE}-{OUTPUT_NODE}"  # "784-500-10"
# Its declaration (variables w1 ... b2, scripts, export name: networks.MLP) at the sizes above.
NETWORK = dataclasses.replace(networks.MLP, name=f"the {LABEL} network", label=LABEL,
                              layers=(INPUT_NODE, LAYER1_NODE, OUTPUT_NODE))
LOSSES_COLLECTION = networks.LOSSES_COLLECTION  # "losses": the L2 terms the trainer adds to the loss


def get_weight(shape, regularizer, name=None):
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


def get_bias(shape, name=None):
    """A bias variable of the given shape, float32, initialised to zero."""
    return tf.Variable(tf.zeros(shape), name=name)


def forward(x, regularizer, train=False):
    """Logits of the INPUT_NODE-LAYER1_NODE-OUTPUT_NODE network (784-500-10 in the course).

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


if __name__ == "__main__":
    import sys

    import tf_compat
    from mnistkit.cli import command
    sys.exit(tf_compat.not_a_script(__file__, f"the course's {NETWORK.label} network (forward propagation), imported by "
                                              "the other scripts",
                                    f"train it with `{command('mnist_backward.py')}`, use it with "
                                    f"`{command('mnist_test.py')}` or `{command('mnist_app.py')}`"))

"""The networks a checkpoint here can hold, told apart by their variable names.

Each forward module (mnist_forward.py, mnist_lenet5_forward.py) names its
entry here as NETWORK. A checkpoint of one network must never be resumed,
evaluated or applied as the other: network_of reads which one a checkpoint
holds, check_network turns a mismatch into one line that names the script
to use instead. No TensorFlow, and no course script, is imported here.
"""
import collections

from .errors import DataError

LOSSES_COLLECTION = "losses"  # the course's collection of L2 terms (mnist_forward.get_weight adds them)
EMA_SUFFIX = "/ExponentialMovingAverage"  # tf.train.ExponentialMovingAverage's name for a variable's shadow

Network = collections.namedtuple("Network", "name label variables train_script test_script split")
Network.__doc__ = """One network: `name` as messages say it, its short `label` (the app's --json),
its trainable `variables` as named in checkpoints, the scripts that train and evaluate it, and the
variables `split` over the parameter servers of a cluster that has several (its largest weights;
mnistkit.distributed.place_variables)."""

MLP = Network("the 784-500-10 network", "784-500-10", ("w1", "b1", "w2", "b2"), "mnist_backward.py", "mnist_test.py",
              split=("w1",))
LENET5 = Network("LeNet-5", "LeNet-5",
                 ("conv1_w", "conv1_b", "conv2_w", "conv2_b", "fc1_w", "fc1_b", "fc2_w", "fc2_b"),
                 "mnist_lenet5_backward.py", "mnist_lenet5_test.py", split=("fc1_w",))
NETWORKS = (MLP, LENET5)


def network_of(names):
    """The Network a checkpoint holds, or None when it holds none of NETWORKS.

    names: the checkpoint's variable names (e.g. the keys of
    checkpoints.read_checkpoint). A network is recognised by its variables,
    trained or as moving-average shadows (`w1/ExponentialMovingAverage`),
    whatever their shapes (checkpoints.check_variables compares those).
    """
    stored = {name[:-len(EMA_SUFFIX)] if name.endswith(EMA_SUFFIX) else name for name in names}
    for network in NETWORKS:
        if stored.issuperset(network.variables):
            return network
    return None


def check_network(ckpt_path, names, network, script="train_script"):
    """Raise DataError when a checkpoint holds another of NETWORKS than `network`.

    names: the checkpoint's variable names. script: "train_script" or
    "test_script", which of the other network's scripts the message sends
    the user to, e.g. `model/mnist_model-2000: this checkpoint holds the
    784-500-10 network, not LeNet-5; use mnist_test.py, or another
    --model-dir`. A checkpoint of no known network passes here, for
    checkpoints.check_variables to name what does not fit.
    """
    found = network_of(names)
    if found is not None and found != network:
        raise DataError(f"{ckpt_path}: this checkpoint holds {found.name}, not {network.name}; "
                        f"use {getattr(found, script)}, or another --model-dir")

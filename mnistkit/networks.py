"""The networks, each declared once, and the network a model folder holds.

A network is declared once, as a Network: the one place for its name in
messages, its forward module, its variables, its scripts, its export name,
what a cluster splits and the course's defaults for it. The course's two
are declared here (MLP, LENET5) and named by their forward modules as
NETWORK; a network added beside the course declares its own NETWORK in its
forward module. The trainer, the evaluator, the app, the exporter, the
cluster launcher and the messages all read the declaration; no table lists
the networks.

A model folder says which network it holds: its checkpoints.FOLDER_FILE
(schedule.json) records the whole declaration (to_record), with the batch
size it trains at, when the first checkpoint is saved. The evaluator, the
app and the exporter read it there (checkpoints.folder_network) and import
the forward module it names themselves. Only a folder written before the
file named its network is recognised from its variable names (guess), and
then exactly: it can hold only one of the course's two networks
(COURSE_NETWORKS), the one whose variables are all the checkpoint holds. No
course script is imported here.
"""
import dataclasses

from . import cli
from .errors import DataError

LOSSES_COLLECTION = "losses"  # the course's collection of L2 terms (mnist_forward.get_weight adds them)
EMA_SUFFIX = "/ExponentialMovingAverage"  # tf.train.ExponentialMovingAverage's name for a variable's shadow
MOVING_AVERAGE_DECAY = 0.99  # the course's; restoring reads the shadows by name, whatever the decay


@dataclasses.dataclass(frozen=True, eq=False)
class Network:
    """One network's declaration, named by its forward module as NETWORK.

    forward: the forward module's import name (it has forward(x,
    regularizer, train), INPUT_NODE, OUTPUT_NODE). name: as messages say it
    ("the 784-500-10 network"); label: short, for --json and exports'
    metadata. variables: its trainable variables as checkpoints name them.
    train_script, test_script: the scripts that train and evaluate it (file
    names beside the forward module). export_name: mnist_export.py's
    <export>/<export_name>/<N> and <export_name>.tflite, TF Serving's model
    name. split: the variables a cluster with several parameter servers
    splits (its largest weights; distributed.place_variables). batch_size,
    learning_rate_base, model_dir: the course's defaults for it. Two
    declarations are the same network when they name the same forward
    module (same()); one read back from JSON holds lists where the
    declaration has tuples.
    """
    forward: str
    name: str
    label: str
    variables: tuple
    train_script: str
    test_script: str
    export_name: str
    split: tuple = ()
    batch_size: int = 200
    learning_rate_base: float = 0.1
    model_dir: str = "./model/"


MLP = Network(forward="mnist_forward", name="the 784-500-10 network", label="784-500-10",
              variables=("w1", "b1", "w2", "b2"), train_script="mnist_backward.py", test_script="mnist_test.py",
              export_name="mnist", split=("w1",), batch_size=200, learning_rate_base=0.1, model_dir="./model/")
LENET5 = Network(forward="mnist_lenet5_forward", name="LeNet-5", label="LeNet-5",
                 variables=("conv1_w", "conv1_b", "conv2_w", "conv2_b", "fc1_w", "fc1_b", "fc2_w", "fc2_b"),
                 train_script="mnist_lenet5_backward.py", test_script="mnist_lenet5_test.py",
                 export_name="mnist_lenet5", split=("fc1_w",), batch_size=100, learning_rate_base=0.005,
                 model_dir="./model_lenet5/")
COURSE_NETWORKS = (MLP, LENET5)  # the networks of folders and exports written before they recorded theirs


def same(network, other):
    """True when two declarations (or None) are of the same network: the same forward module."""
    return network is not None and other is not None and network.forward == other.forward


def to_record(network):
    """The declaration as a JSON-ready dict (tuples as lists), as FOLDER_FILE and the exports' metadata hold it."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(network).items()}


def from_record(record):
    """The Network a to_record dict describes; DataError when it is not one (unknown or missing fields)."""
    try:
        return Network(**record)
    except TypeError as e:
        raise DataError(f"not a network declaration ({e})") from None


def trained_variables(names):
    """The trainable variables a checkpoint holds: its names without global_step and moving-average suffixes."""
    return {name[:-len(EMA_SUFFIX)] if name.endswith(EMA_SUFFIX) else name for name in names} - {"global_step"}


def guess(names):
    """The course network whose variables are exactly a checkpoint's (names), or None (folders written before)."""
    stored = trained_variables(names)
    return next((network for network in COURSE_NETWORKS if stored == set(network.variables)), None)


def check_network(ckpt_path, found, network, script="train_script"):
    """Raise DataError when a checkpoint holds another network (`found`) than the script's own (`network`).

    found: checkpoints.folder_network's answer for the checkpoint's folder, or None (a
    checkpoint of no known network passes here, for
    checkpoints.check_variables to name what does not fit). script:
    "train_script" or "test_script": the message sends the user to that
    script of the network found, e.g. `model/mnist_model-2000: this
    checkpoint holds the 784-500-10 network, not LeNet-5; use
    mnist_test.py, or another --model-dir`. An evaluator passes networks
    whose test_script is its own (a network declared without one).
    """
    if found is None or same(found, network) or getattr(found, script) == getattr(network, script):
        return
    raise DataError(f"{ckpt_path}: this checkpoint holds {found.name}, not {network.name}; "
                    f"use {cli.script_path(getattr(found, script))}, or another --model-dir")



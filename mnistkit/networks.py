"""The networks, each declared once, and the network a model folder holds.

A network is declared once, as a Network: the one place for its name in
messages, its forward module, its layer sizes, its variables, its scripts,
its export name and what a cluster splits. MLP and LENET5 are the course's
two at the course's sizes; each forward module's NETWORK is one of them at
its own constants' sizes (mnist_forward's INPUT_NODE, LAYER1_NODE,
OUTPUT_NODE name it "the 784-300-10 network" when LAYER1_NODE is 300), so
that an edited layer size shows in every message. Declaring one calls no
function here: nothing in this file runs before training starts. A
network added beside the course declares its own NETWORK in its forward
module. The trainer's settings (BATCH_SIZE, LEARNING_RATE_BASE,
MODEL_SAVE_PATH, MODEL_NAME, ...) are not the network's: they are the
trainer script's constants. The trainer, the evaluator, the app, the exporter, the
cluster launcher and the messages all read the declaration; no table lists
the networks.

A model folder says which network it holds: its folders.FOLDER_FILE
(schedule.json) records the whole declaration (to_record), with the batch
size it trains at, when the first checkpoint is saved. The evaluator, the
app and the exporter read it there (checkpoints.folder_network) and import
the forward module it names themselves. Only a folder written before the
file named its network is recognised from its variable names (guess), and
then exactly: it can hold only one of the course's two networks
(COURSE_NETWORKS), the one whose variables are all the checkpoint holds. No
course script is imported here.
"""
import ast
import dataclasses
import os
import re

from . import cli
from .errors import DataError

LOSSES_COLLECTION = "losses"  # the course's collection of L2 terms (mnist_forward.get_weight adds them)
EMA_SUFFIX = "/ExponentialMovingAverage"  # tf.train.ExponentialMovingAverage's name for a variable's shadow
LEGACY_FIELDS = ("batch_size", "learning_rate_base", "model_dir")  # trainer settings that records once held


@dataclasses.dataclass(frozen=True)
class Network:
    """One network's declaration, named by its forward module as NETWORK.

    forward: the forward module's import name (it has forward(x,
    regularizer, train), INPUT_NODE, OUTPUT_NODE). name: as messages say it
    ("the 784-500-10 network"); label: short, for --json and exports'
    metadata. layers: its layer sizes (ints), e.g. (784, 500, 10).
    variables: its trainable variables as checkpoints name them.
    train_script, test_script: the scripts that train and evaluate it (file
    names beside the forward module). export_name: mnist_export.py's
    <export>/<export_name>/<N> and <export_name>.tflite, TF Serving's model
    name. split: the variables a cluster with several parameter servers
    splits (its largest weights; distributed.place_variables). inside: the
    layers the board's Inside panel and the exports' `inside` signature
    show, as (name, kind) pairs in forward()'s order, with the names
    forward() gives them: kind "dense" or "conv" (a ReLU's output), "pool"
    (a max-pool's), last "logits" (forward()'s return); mnistkit.layers
    finds them in the graph forward() builds. The
    trainer and the evaluator check both against the graph the forward
    module builds (folders.check_graph). Two
    declarations are the same network when they name the same forward
    module (same()), and equal when every field is; one read back from
    JSON holds lists where the declaration has tuples.
    """
    forward: str
    name: str
    label: str
    variables: tuple
    train_script: str
    test_script: str
    export_name: str
    split: tuple = ()
    layers: tuple = ()
    inside: tuple = ()


# The course's two networks at the course's sizes. Each forward module's NETWORK is its own at the sizes its
# constants give (dataclasses.replace of one of these), so that an edited layer size shows in every message.
MLP = Network(forward="mnist_forward", name="the 784-500-10 network", label="784-500-10",
              variables=("w1", "b1", "w2", "b2"), train_script="mnist_backward.py", test_script="mnist_test.py",
              export_name="mnist", split=("w1",), layers=(784, 500, 10),
              inside=(("y1", "dense"), ("y", "logits")))
LENET5 = Network(forward="mnist_lenet5_forward", name="LeNet-5", label="LeNet-5",
                 variables=("conv1_w", "conv1_b", "conv2_w", "conv2_b", "fc1_w", "fc1_b", "fc2_w", "fc2_b"),
                 train_script="mnist_lenet5_backward.py", test_script="mnist_lenet5_test.py",
                 export_name="mnist_lenet5", split=("fc1_w",), layers=(784, 32, 64, 512, 10),
                 inside=(("conv1", "conv"), ("pool1", "pool"), ("conv2", "conv"), ("pool2", "pool"), ("fc1", "dense"),
                         ("y", "logits")))
COURSE_NETWORKS = (MLP, LENET5)  # the networks of folders and exports written before they recorded theirs


def same(network, other):
    """True when two declarations (or None) are of the same network: the same forward module."""
    return network is not None and other is not None and network.forward == other.forward


def to_record(network):
    """The declaration as a JSON-ready dict (tuples as lists, inside's pairs too), as FOLDER_FILE and the exports'
    metadata hold it."""
    def plain(value):
        return [plain(v) for v in value] if isinstance(value, (tuple, list)) else value
    return {k: plain(v) for k, v in dataclasses.asdict(network).items()}


def from_record(record):
    """The Network a to_record dict describes; DataError when it is not one (unknown or missing fields).

    The trainer settings that records of earlier versions held beside the
    network (LEGACY_FIELDS) are passed over.
    """
    try:
        return Network(**{k: v for k, v in record.items() if k not in LEGACY_FIELDS})
    except TypeError as e:
        raise DataError(f"not a network declaration ({e})") from None


def default_folder(network):
    """The folder network's trainer trains into by default: its script's MODEL_SAVE_PATH, read from the script's
    text (no course script is imported here), "./model/" (mnist_backward.py's) when it sets none or is not found."""
    try:
        with open(cli.script_file(network.train_script), encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return "./model/"
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MODEL_SAVE_PATH" for t in node.targets)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    return "./model/"


def trained_into(model_dir):
    """The course network (COURSE_NETWORKS) whose trainer trains into a folder of model_dir's name by default
    (model_lenet5: LeNet-5), or None: the network a hint names for a folder that records none yet."""
    name = os.path.basename(os.path.normpath(str(model_dir)))
    return next((network for network in COURSE_NETWORKS
                 if os.path.basename(os.path.normpath(default_folder(network))) == name), None)


def trained_variables(names):
    """The trainable variables a checkpoint holds: its names without global_step and moving-average suffixes."""
    return {name[:-len(EMA_SUFFIX)] if name.endswith(EMA_SUFFIX) else name for name in names} - {"global_step"}


def guess(names):
    """The course network whose variables are exactly a checkpoint's (names), or None (folders written before)."""
    stored = trained_variables(names)
    return next((network for network in COURSE_NETWORKS if stored == set(network.variables)), None)


# tf.Variable's names when none is given ("Variable", "Variable_1", ...), as the course's own get_weight, get_bias
# and global_step = tf.Variable(0, trainable=False) made them; this project names every variable (w1, conv1_w, ...).
UNNAMED = re.compile(r"Variable(_[0-9]+)?")


def course_original(names):
    """The course network (COURSE_NETWORKS) whose checkpoint the course's original TF1 code wrote, or None.

    names: a checkpoint's variable names. Such a checkpoint holds only
    unnamed variables (UNNAMED), one per trainable variable of the network
    (in creation order, as `variables` lists them) and one for global_step,
    each with its moving average: 5 for the 784-500-10 network, 9 for
    LeNet-5. Its names say nothing of the network but their count.
    """
    stored = trained_variables(names)
    if not stored or not all(UNNAMED.fullmatch(name) for name in stored):
        return None
    return next((network for network in COURSE_NETWORKS if len(stored) == len(network.variables) + 1), None)


def check_network(ckpt_path, found, network, script="train_script"):
    """Raise DataError when a checkpoint holds another network (`found`) than the script's own (`network`).

    found: checkpoints.folder_network's answer for the checkpoint's folder, or None (a
    checkpoint of no known network passes here, for
    checkpoints.check_variables to name what does not fit). script:
    "train_script" or "test_script": the message sends the user to that
    script of the network found, e.g. `model/mnist_model-2000: this
    checkpoint holds the 784-500-10 network, not LeNet-5; use `python
    mnist_test.py`, or another --model-dir` (command: the --model-dir kept). An evaluator passes networks
    whose test_script is its own (a network declared without one). The
    same network with other layer sizes raises too (check_layers).
    """
    if found is not None and same(found, network):
        check_layers(ckpt_path, found, network)
    if found is None or same(found, network) or getattr(found, script) == getattr(network, script):
        return
    raise DataError(f"{ckpt_path}: this checkpoint holds {found.name}, not {network.name}; "
                    f"use `{command(found, script, os.path.dirname(ckpt_path))}`, or another --model-dir")


def command(network, script, model_dir):
    """The command line (str, cli.command) that runs `network`'s script ("train_script", "test_script") on
    model_dir: `python mnist_lenet5_test.py`, with `--model-dir model_dir` when that is not the folder the network's
    trainer writes by default (default_folder), so that a hint pasted as written runs on the folder it names (a
    script's path alone is no command: the scripts are not executable, exit 126)."""
    return cli.command(getattr(network, script), *cli.kept("--model-dir", model_dir, default_folder(network)))


def check_layers(ckpt_path, found, network):
    """Raise DataError when a checkpoint holds `network`'s network (same forward module) at other layer sizes
    than its forward module's constants give now (an edited LAYER1_NODE), naming both shapes. A declaration
    without layers (a folder of an earlier version) passes here, for checkpoints.check_variables."""
    def shape(n):  # "the 784-300-10 network"; "LeNet-5 (784-32-64-512-10)"
        sizes = "-".join(map(str, n.layers))
        return n.name if sizes == n.label else f"{n.name} ({sizes})"
    if found.layers and network.layers and list(found.layers) != list(network.layers):
        raise DataError(f"{ckpt_path}: this checkpoint holds {shape(found)}, not {shape(network)}, which "
                        f"{network.forward}.py builds now; set its layer sizes back, or use another --model-dir")



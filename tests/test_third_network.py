"""A third network, 784-300-100-10, added from test code with nothing but its own two files.

The proof that a network is declared once (mnistkit.networks): a forward
module that declares NETWORK and a trainer of about 20 lines, in a folder
of their own on PYTHONPATH, are all it takes for the course's evaluator,
app and exporter to train, score, apply and export it, and for every
message to name it and its own scripts. No file of the repository is
edited: the test checks that the repository's files are unchanged.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, sha256_of, wait_limit

FORWARD = '''"""The 784-300-100-10 network: two hidden ReLU layers, declared for the course's scripts."""
from tf_compat import tf
from mnist_forward import get_bias, get_weight
from mnistkit import networks

NETWORK = networks.Network(forward="mnist_deep_forward", name="the 784-300-100-10 network", label="784-300-100-10",
                           variables=("w1", "b1", "w2", "b2", "w3", "b3"), train_script="mnist_deep_backward.py",
                           test_script="mnist_test.py", export_name="mnist_deep", split=("w1",),
                           layers=(784, 300, 100, 10), inside=(("y1", "dense"), ("y2", "dense"), ("y", "logits")))
INPUT_NODE, LAYER1_NODE, LAYER2_NODE, OUTPUT_NODE = 784, 300, 100, 10


def forward(x, regularizer, train=False):
    """Logits float32 [batch, 10] of x float32 [batch, 784]."""
    w1, b1 = get_weight([INPUT_NODE, LAYER1_NODE], regularizer, "w1"), get_bias([LAYER1_NODE], "b1")
    y1 = tf.nn.relu(tf.matmul(x, w1) + b1)
    w2, b2 = get_weight([LAYER1_NODE, LAYER2_NODE], regularizer, "w2"), get_bias([LAYER2_NODE], "b2")
    y2 = tf.nn.relu(tf.matmul(y1, w2) + b2)
    w3, b3 = get_weight([LAYER2_NODE, OUTPUT_NODE], regularizer, "w3"), get_bias([OUTPUT_NODE], "b3")
    return tf.matmul(y2, w3) + b3
'''

TRAINER = '''"""Train the 784-300-100-10 network from data/mnist_train.tfrecords, as mnist_backward.py trains its own."""
import sys

import mnist_backward
import mnist_deep_forward

MODEL_SAVE_PATH = "./model_deep/"  # the other constants are mnist_backward.py's (BATCH_SIZE, MODEL_NAME, ...)


def backward(*args, **options):
    """mnist_backward.backward with this network and this file's constants."""
    return mnist_backward.backward(*args, net=mnist_deep_forward, constants=sys.modules[__name__], **options)


def main(argv=None):
    return mnist_backward.main(argv, mnist_deep_forward, __doc__, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
'''

STEPS = 150


def product_digests():
    """{path: sha256} of the product's source files: the scripts, the package, the task runner, .gitignore."""
    names = [n for n in os.listdir(ROOT) if n.endswith(".py") or n == ".gitignore"]
    names += [os.path.join("mnistkit", n) for n in os.listdir(os.path.join(ROOT, "mnistkit")) if n.endswith(".py")]
    return {name: sha256_of(os.path.join(ROOT, name)) for name in names}


def run(args, cwd, env):
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=wait_limit(600))


@pytest.fixture(scope="module")
def deep(sample_workdir, tmp_path_factory):
    """(work folder with ./data and ./model_deep trained STEPS steps, its env, the network's own folder)."""
    own = tmp_path_factory.mktemp("deep_network")
    (own / "mnist_deep_forward.py").write_text(FORWARD)
    (own / "mnist_deep_backward.py").write_text(TRAINER)
    work = tmp_path_factory.mktemp("deep_work")
    shutil.copytree(sample_workdir / "data", work / "data")
    shutil.copytree(sample_workdir / "mnist_data_jpg" / "mnist_test_jpg_2000", work / "jpg")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(own), ROOT]))
    before = product_digests()
    result = run([str(own / "mnist_deep_backward.py"), "--steps", str(STEPS)], work, env)
    assert result.returncode == 0, result.stderr
    assert f"done at step {STEPS}; checkpoint saved to ./model_deep/mnist_model-{STEPS}" in result.stdout
    return work, env, own, before


@pytest.mark.long
def test_third_network_trains_evaluates_predicts_and_exports(deep):
    work, env, own, before = deep
    record = json.loads((work / "model_deep" / "schedule.json").read_text())
    assert record["network"]["forward"] == "mnist_deep_forward" and record["batch_size"] == 200

    # The course's evaluator scores the folder's own network (its test_script is mnist_test.py).
    scored = run([os.path.join(ROOT, "mnist_test.py"), "--once", "--model-dir", "model_deep"], work, env)
    assert scored.returncode == 0, scored.stderr
    accuracy = float(scored.stdout.split(f"After {STEPS} training steps, test accuracy = ")[1].split()[0])
    assert accuracy > 0.8  # two hidden layers after 150 steps of 200 on the sample (0.88-0.90 seen)

    # The app reads the network from the folder and names it.
    pictures = [str(p) for p in sorted((work / "jpg").glob("*.jpg"))[:20]]  # named <index>_<label>.jpg
    applied = run([os.path.join(ROOT, "mnist_app.py"), "--model-dir", "model_deep", "--json", *pictures], work, env)
    assert applied.returncode == 0, applied.stderr
    assert applied.stderr.startswith(f"using 784-300-100-10 from model_deep/mnist_model-{STEPS}")
    answers = json.loads(applied.stdout)
    right = sum(a["prediction"] == int(os.path.basename(a["file"]).split("_")[1][0]) for a in answers)
    assert all(a["network"] == "784-300-100-10" for a in answers) and right >= 15

    # The exporter names its files after the network's declared export name.
    exported = run([os.path.join(ROOT, "mnist_export.py"), "--model-dir", "model_deep"], work, env)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith(f"exporting the 784-300-100-10 network from model_deep/mnist_model-{STEPS}")
    assert (work / "export" / "mnist_deep" / "1" / "saved_model.pb").is_file()
    assert (work / "export" / "mnist_deep.tflite").is_file() and (work / "export" / "mnist_deep_int8.tflite").is_file()
    # Its declared layers are found in the graph its forward() builds: the export's second signature holds them.
    record = json.loads((work / "export" / "mnist_deep" / "1" / "assets.extra" / "mnist_export.json").read_text())
    assert [(e["name"], e["kind"], e["shape"], e["line"]) for e in record["inside"]] == [
        ("y1", "dense", [300], "y1 = tf.nn.relu(tf.matmul(x, w1) + b1)"),
        ("y2", "dense", [100], "y2 = tf.nn.relu(tf.matmul(y1, w2) + b2)"),
        ("y", "logits", [10], "return tf.matmul(y2, w3) + b3")]
    assert "inside: images -> y1, y2, y)" in exported.stdout

    assert product_digests() == before  # no product file was edited (or written) to get here


@pytest.mark.long
def test_messages_name_the_third_network_and_its_scripts(deep, tmp_path):
    work, env, own, _ = deep
    trainer = os.path.join(str(own), "mnist_deep_backward.py")
    # The course's trainer refuses the folder and sends the user to the network's own trainer.
    refused = run([os.path.join(ROOT, "mnist_backward.py"), "--steps", "1", "--model-dir", "model_deep"], work, env)
    assert refused.returncode == 1
    assert refused.stderr == (f"error: model_deep/mnist_model-{STEPS}: this checkpoint holds the 784-300-100-10 "
                              f"network, not the 784-500-10 network; use `python {trainer}`, or another --model-dir\n")
    # A folder that records the network but lost its checkpoints: train it again with its own trainer.
    emptied = tmp_path / "emptied"
    emptied.mkdir()
    shutil.copy(work / "model_deep" / "schedule.json", emptied / "schedule.json")
    for script in ("mnist_test.py", "mnist_app.py", "mnist_export.py"):
        args = [os.path.join(ROOT, script), "--model-dir", str(emptied)] + (["--once"] if script == "mnist_test.py" else [])
        if script == "mnist_app.py":
            args.append(str(next((work / "jpg").glob("*.jpg"))))
        result = run(args, work, env)
        assert result.returncode == 1, script
        assert result.stderr.strip().splitlines()[-1] == (f"error: {emptied}: no checkpoint found; train first with "
                                                          f"`python {trainer} --model-dir {emptied}`"), script
    # The cluster launcher runs the network's declared trainer.
    import mnist_cluster
    sys.path.insert(0, str(own))
    try:
        assert mnist_cluster.trainer_of("mnist_deep_forward") == trainer
    finally:
        sys.path.remove(str(own))
    assert mnist_cluster.trainer_of("lenet5") == os.path.join(ROOT, "mnist_lenet5_backward.py")

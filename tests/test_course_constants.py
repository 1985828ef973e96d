"""The course's knobs: a constant edited at the top of a course script takes effect in every script that reads it.

Each test edits a copy of the scripts (the course's .py files and mnistkit
in tmp_path) as a student does, one line per constant, and runs the copy
in fresh processes: --help shows the edited defaults (no TensorFlow
import), and one short training with BATCH_SIZE, MODEL_SAVE_PATH,
MODEL_NAME and LAYER1_NODE edited is resumed, scored and applied, with
the files in the folder and the network's name in the messages checked.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, wait_limit
import mnistkit.checkpoints
import mnistkit.folders
import mnistkit.networks
from mnistkit.errors import DataError


def course_copy(tmp_path, edits):
    """A copy of the course's scripts and mnistkit in tmp_path/course, each constant of edits ({script:
    {CONSTANT: source text}}) given its new value on its own line, as a student edits it."""
    course = tmp_path / "course"
    course.mkdir()
    for name in os.listdir(ROOT):
        if name.endswith(".py"):
            shutil.copy(os.path.join(ROOT, name), course / name)
    shutil.copytree(os.path.join(ROOT, "mnistkit"), course / "mnistkit", ignore=shutil.ignore_patterns("__pycache__"))
    for script, constants in edits.items():
        text = (course / script).read_text(encoding="utf-8")
        for constant, value in constants.items():
            text, count = re.subn(rf"^{constant} = .*$", f"{constant} = {value}", text, count=1, flags=re.M)
            assert count == 1, f"{script} has no constant {constant} at the start of a line"
        (course / script).write_text(text, encoding="utf-8")
    return course


def run(course, script, *args, cwd):
    """Run the copy's `script` (or `-c` code) in a process of its own, with only the copy on the module path."""
    env = dict(os.environ, PYTHONPATH=str(course), COLUMNS="1000")  # wide: one help line per flag
    command = [sys.executable, "-c", *args] if script == "-c" else [sys.executable, str(course / script), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=wait_limit(600))


def help_defaults(course, script, cwd):
    """{flag: the default its --help line shows} of the copy's script."""
    result = run(course, script, "--help", cwd=cwd)
    assert result.returncode == 0, result.stderr
    # Each option's entry: its line, and the help's own line under it when the flag is long.
    entries = re.findall(r"^  (--[\w-]+)(.*(?:\n {6,}.*)*)", result.stdout, re.M)
    return {flag: re.search(r"\(default: ([^)]*)\)\s*$", text).group(1) for flag, text in entries
            if "(default: " in text}


EDITS = {
    "mnist_backward.py": {"BATCH_SIZE": "123", "LEARNING_RATE_BASE": "0.0123", "LEARNING_RATE_DECAY": "0.9",
                          "REGULARIZER": "0.0002", "STEPS": "4321", "MOVING_AVERAGE_DECAY": "0.98",
                          "MODEL_SAVE_PATH": '"./my_models/"', "MODEL_NAME": '"my_model"'},
    "mnist_lenet5_backward.py": {"BATCH_SIZE": "77", "LEARNING_RATE_BASE": "0.0077", "LEARNING_RATE_DECAY": "0.95",
                                 "REGULARIZER": "0.0003", "STEPS": "777", "MOVING_AVERAGE_DECAY": "0.97",
                                 "MODEL_SAVE_PATH": '"./my_lenet5/"', "MODEL_NAME": '"my_lenet5"'},
    "mnist_forward.py": {"LAYER1_NODE": "300"},
    "mnist_test.py": {"TEST_INTERVAL_SECS": "9"},
    "mnist_lenet5_test.py": {"TEST_INTERVAL_SECS": "11"},
    "mnist_generateds.py": {"data_path": '"./my_data"', "jpg_path": '"./my_jpgs"'},
    "mnist_cluster.py": {"PS_TASKS": "2", "WORKER_TASKS": "3"},
}
SHOWN = {
    "mnist_backward.py": {"--batch-size": "123", "--learning-rate-base": "0.0123", "--steps": "4321",
                          "--model-dir": "./my_models/", "--data-dir": "./my_data"},
    "mnist_lenet5_backward.py": {"--batch-size": "77", "--learning-rate-base": "0.0077", "--steps": "777",
                                 "--model-dir": "./my_lenet5/", "--data-dir": "./my_data"},
    "mnist_test.py": {"--model-dir": "./my_models/", "--interval": "9", "--data-dir": "./my_data"},
    "mnist_lenet5_test.py": {"--model-dir": "./my_lenet5/", "--interval": "11", "--data-dir": "./my_data"},
    "mnist_app.py": {"--model-dir": "./my_models/"},
    "mnist_export.py": {"--model-dir": "./my_models/", "--data-dir": "./my_data"},
    "mnist_generateds.py": {"--data-dir": "./my_data", "--jpg-dir": "./my_jpgs"},
    "mnist_cluster.py": {"--ps": "2", "--workers": "3"},
}
# What the trainers take from the constants that have no flag, read in a process of the copy (no TensorFlow).
SETTINGS = """
import json, mnist_backward, mnist_forward, mnist_lenet5_backward, mnist_lenet5_forward
def shown(s):
    return [s.batch_size, s.learning_rate_base, s.learning_rate_decay, s.regularizer, s.moving_average_decay,
            s.steps, s.model_dir, s.model_name]
print(json.dumps({"mlp": shown(mnist_backward.settings_for(mnist_forward)),
                  "lenet5": shown(mnist_backward.settings_for(mnist_lenet5_forward, constants=mnist_lenet5_backward)),
                  "name": mnist_forward.NETWORK.name, "layers": mnist_forward.NETWORK.layers}))
"""


def test_every_edited_constant_is_the_default_its_scripts_show_and_train_with(tmp_path):
    course = course_copy(tmp_path, EDITS)
    shown = {script: help_defaults(course, script, tmp_path) for script in SHOWN}
    assert {script: {flag: shown[script].get(flag) for flag in flags} for script, flags in SHOWN.items()} == SHOWN
    cluster = run(course, "mnist_cluster.py", "--help", cwd=tmp_path).stdout
    assert "the 784-300-10 network" in cluster and "784-500-10" not in cluster

    result = run(course, "-c", SETTINGS, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "mlp": [123, 0.0123, 0.9, 0.0002, 0.98, 4321, "./my_models/", "my_model"],
        "lenet5": [77, 0.0077, 0.95, 0.0003, 0.97, 777, "./my_lenet5/", "my_lenet5"],
        "name": "the 784-300-10 network", "layers": [784, 300, 10]}


@pytest.fixture(scope="module")
def edited_run(sample_workdir, tmp_path_factory):
    """(work folder, course copy, [train, resume, score, apply results]) of a copy with BATCH_SIZE 50,
    MODEL_SAVE_PATH ./my_models/, MODEL_NAME my_model, LAYER1_NODE 300 and the TFRecord files named
    my_train.tfrecords and my_test.tfrecords: 2 steps, resumed to 3, scored, applied."""
    tmp_path = tmp_path_factory.mktemp("edited")
    course = course_copy(tmp_path, {"mnist_backward.py": {"BATCH_SIZE": "50", "MODEL_SAVE_PATH": '"./my_models/"',
                                                          "MODEL_NAME": '"my_model"'},
                                    "mnist_forward.py": {"LAYER1_NODE": "300"},
                                    "mnist_generateds.py": {"tfRecord_train": '"my_train.tfrecords"',
                                                            "tfRecord_test": '"my_test.tfrecords"'}})
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)  # as the edited generator names its files
    shutil.copy(sample_workdir / "data" / "mnist_train.tfrecords", work / "data" / "my_train.tfrecords")
    shutil.copy(sample_workdir / "data" / "mnist_test.tfrecords", work / "data" / "my_test.tfrecords")
    picture = str(next((sample_workdir / "mnist_data_jpg" / "mnist_test_jpg_2000").glob("*.jpg")))
    results = [run(course, "mnist_backward.py", "--steps", "2", cwd=work),
               run(course, "mnist_backward.py", "--steps", "3", cwd=work),
               run(course, "mnist_test.py", "--once", cwd=work),
               run(course, "mnist_app.py", "--json", picture, cwd=work)]
    return work, course, results


@pytest.mark.long
def test_the_edited_trainer_writes_resumes_and_names_its_checkpoints_with_model_name(edited_run):
    work, _, (trained, resumed, _, _) = edited_run
    assert trained.returncode == 0, trained.stderr
    assert trained.stdout.startswith("training on 8000 records from ./data/my_train.tfrecords;")
    assert "done at step 2; checkpoint saved to ./my_models/my_model-2" in trained.stdout
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from ./my_models/my_model-2" in resumed.stdout
    assert "done at step 3; checkpoint saved to ./my_models/my_model-3" in resumed.stdout
    folder = work / "my_models"
    assert not (work / "model").exists()
    assert sorted(p.name for p in folder.iterdir() if p.is_file()) == [
        "checkpoint", "my_model-2.data-00000-of-00001", "my_model-2.index", "my_model-2.meta",
        "my_model-3.data-00000-of-00001", "my_model-3.index", "my_model-3.meta", "schedule.json"]
    assert 'model_checkpoint_path: "my_model-3"' in (folder / "checkpoint").read_text()
    record = json.loads((folder / "schedule.json").read_text())
    assert record["batch_size"] == 50  # the batch the run trained at (checked again when it resumes)
    assert record["network"]["name"] == "the 784-300-10 network" and record["network"]["layers"] == [784, 300, 10]


@pytest.mark.long
def test_the_evaluator_and_the_app_find_the_edited_folder_name_and_network(edited_run):
    work, _, (_, _, scored, applied) = edited_run
    assert scored.returncode == 0, scored.stderr
    assert scored.stdout.startswith("After 3 training steps, test accuracy = ")
    assert applied.returncode == 0, applied.stderr  # ./my_models holds my_model-* files only
    assert [answer["network"] for answer in json.loads(applied.stdout)] == ["784-300-10"]


@pytest.mark.long
def test_messages_name_the_edited_network_and_the_constant_that_has_an_effect(edited_run):
    work, _, _ = edited_run
    folder = str(work / "my_models")
    # The course's unedited trainer on that folder: its MODEL_NAME is not the folder's, and it says which to set.
    with pytest.raises(DataError) as refused:
        with mnistkit.folders.writing(folder, "training", "mnist_model", mnistkit.networks.MLP):
            pass
    assert str(refused.value) == (f"{folder}: its checkpoints are named my_model-<step>, not mnist_model-<step>; set "
                                  "MODEL_NAME = 'my_model' in mnist_backward.py to resume them, or use another "
                                  "--model-dir")
    found = mnistkit.checkpoints.folder_network(folder)
    with pytest.raises(DataError) as other:
        mnistkit.networks.check_network(os.path.join(folder, "my_model-3"), found, mnistkit.networks.LENET5)
    assert "this checkpoint holds the 784-300-10 network, not LeNet-5" in str(other.value)
    # The course's network at its own sizes (LAYER1_NODE set back to 500): the folder's shape is named.
    with pytest.raises(DataError) as resized:
        mnistkit.networks.check_network(os.path.join(folder, "my_model-3"), found, mnistkit.networks.MLP)
    assert str(resized.value) == (f"{folder}/my_model-3: this checkpoint holds the 784-300-10 network, not the "
                                  "784-500-10 network, which mnist_forward.py builds now; set its layer sizes back, "
                                  "or use another --model-dir")

"""A new user's stumbles of trial 8, each by kind: docs/tests.md, "Trial 8's stumbles (test_trial8.py)".

a. A hint that sends the user to another script is a command that runs as pasted: `python SCRIPT`, with the
   user's --model-dir when it is not that script's default folder (the scripts are not executable).
"""
import json
import shlex

import pytest

from conftest import run_main
from mnistkit import cli, folders, networks
from test_trial7 import folder_of


@pytest.mark.quick
@pytest.mark.parametrize("script, args, folder, network, named", [
    ("mnist_test.py", ["--once", "--model-dir", "runs/lenet"], "runs/lenet", networks.LENET5,
     ["mnist_lenet5_test.py", "--model-dir", "runs/lenet"]),
    ("mnist_test.py", ["--once", "--model-dir", "model_lenet5"], "model_lenet5", networks.LENET5,
     ["mnist_lenet5_test.py"]),
    ("mnist_lenet5_backward.py", ["--model-dir", "mine", "--steps", "5"], "mine", networks.MLP,
     ["mnist_backward.py", "--model-dir", "mine"]),
])
def test_another_networks_script_is_named_as_a_command_that_runs(tmp_path, script, args, folder, network, named):
    """Fails before the fix: the line said `use /path/to/mnist_lenet5_test.py, or another --model-dir`, a path
    that the shell refuses to run (Permission denied, exit 126: the scripts are not executable), and without the
    --model-dir it was given, so the evaluator it names would score ./model_lenet5/ instead."""
    (tmp_path / "runs").mkdir()
    folder_of(tmp_path / folder, network)
    done = run_main(script, *args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    hint = done.stderr.split("; use `", 1)[1].split("`, or another --model-dir", 1)[0]
    words = shlex.split(hint)
    assert words[0] == "python" and words[1] == cli.script_path(named[0], str(tmp_path)).strip("'")
    assert words[2:] == named[1:]


@pytest.mark.quick
def test_a_folder_another_networks_trainer_started_names_its_trainer_as_a_command(sample_workdir, tmp_path):
    """Fails before the fix: `train it with /path/to/mnist_lenet5_backward.py, or give another --model-dir`, no
    command (exit 126 as pasted) and without the folder, which the trainer would not have trained."""
    (tmp_path / "started").mkdir()
    (tmp_path / "started" / folders.FOLDER_FILE).write_text(
        json.dumps({"network": networks.to_record(networks.LENET5)}), encoding="utf-8")
    done = run_main("mnist_backward.py", "--model-dir", "started", "--data-dir", str(sample_workdir / "data"),
                    "--steps", "1", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    hint = done.stderr.split("train it with `", 1)[1].split("`, or give another --model-dir", 1)[0]
    assert shlex.split(hint) == ["python", cli.script_path("mnist_lenet5_backward.py", str(tmp_path)).strip("'"),
                                 "--model-dir", "started"]

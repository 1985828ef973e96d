"""The sixth audit: faults found by trying the board's learns and the scripts' hints for real (docs/tests.md, "The
sixth audit").

- A learn's script ends when the process that ran the learn (the board, mnist_learn.py) is killed with SIGKILL:
  the folder's lock and the learn's staging are gone, the model folder as it was.
- A redo refused after the folder was trained again to the learned checkpoint's own step names the two
  checkpoints apart (learn N's, the one trained since the undo), not one name twice.
- A held learn in a folder trained further since is said so on the board, not "Not used: ...".
- mnist_test.py given LeNet-5's folder without a checkpoint names mnist_lenet5_test.py as the one that scores it.
- Keeps added by hand (a picture and its label line) that the model reads as another digit are flagged as
  possibly mis-kept, as the board's own keeps are.
"""
import os

import pytest

from conftest import run_main, tree_digests
from mnistkit import cli, folders, promotion
from mnistkit.board import zh
from mnistkit.errors import DataError


@pytest.mark.quick
def test_a_redo_after_training_again_to_the_learned_step_names_the_two_checkpoints_apart(tmp_path):
    # before: "(a redo would put mnist_model-2000 in service over mnist_model-2000)"
    from test_audit_learns import AFTER, BEFORE, SHARD, history_folder
    model = history_folder(tmp_path / "work", state="undone", redo=[1])
    for suffix in (".index", ".meta", SHARD):  # the trainer run again to the learned checkpoint's step
        (model / (AFTER + suffix)).write_bytes(b"trained again " + AFTER.encode())
    folders.write_index(str(model), AFTER, [BEFORE, AFTER])
    before = tree_digests(model)
    with pytest.raises(DataError) as refused:
        promotion.redo(str(model), out=pytest.fail)
    said = str(refused.value)
    assert f"in service over {AFTER})" not in said, said
    assert said.endswith(f"nothing redone (a redo would put learn 1's {AFTER} in service over the {AFTER} trained "
                         "since the undo)"), said
    assert tree_digests(model) == before
    twin = zh.phrased(said)
    assert twin is not None and f"学习 1 的 {AFTER}" in twin and f"撤销之后训练出的同名检查点 {AFTER}" in twin, twin


@pytest.mark.parametrize("script, folder, other", [("mnist_test.py", "model_lenet5", "mnist_lenet5_test.py"),
                                                    ("mnist_lenet5_test.py", "model", "mnist_test.py")])
def test_an_evaluator_given_the_other_networks_folder_without_a_checkpoint_names_that_networks_evaluator(
        sample_workdir, tmp_path, monkeypatch, script, folder, other):
    # before: "model_lenet5: no checkpoint found; train first with `python mnist_lenet5_backward.py`", no word that
    # mnist_test.py would refuse the checkpoint it trains (`use mnist_lenet5_test.py`)
    monkeypatch.chdir(tmp_path)  # the commands named as from there
    os.symlink(sample_workdir / "data", tmp_path / "data")
    (tmp_path / folder).mkdir()
    trainer = "mnist_lenet5_backward.py" if other == "mnist_lenet5_test.py" else "mnist_backward.py"
    result = run_main(script, "--model-dir", folder, "--once", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (f"error: {folder}: no checkpoint found; train first with `{cli.command(trainer)}`, then "
                             f"score it with `{cli.command(other)}`, not {script}\n")
    os.symlink(sample_workdir / "data", tmp_path / "mydata")  # the user's flags kept in both commands
    result = run_main(script, "--model-dir", folder, "--once", "--data-dir", "mydata", cwd=tmp_path)
    assert result.stderr.endswith(f"then score it with `{cli.command(other, '--data-dir', 'mydata')}`, not {script}\n")
    # a folder of its own network is told nothing more
    own = "model" if folder == "model_lenet5" else "model_lenet5"
    (tmp_path / own).mkdir()
    result = run_main(script, "--model-dir", own, "--once", cwd=tmp_path)
    assert result.returncode == 1 and "score it" not in result.stderr, result.stderr

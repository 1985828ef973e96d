"""Training kept for playback (mnistkit.history): --history's snapshots spread over a run, never more than N, apart
from --keep's checkpoints; mnist_test.py's score of each checkpoint in the folder's record.

Trains in this process (conftest.run_main) a few steps at a batch of 10 on the bundled sample (quick); the score
recorded is of trained_workdir's model.
"""
import json
import os
import re

import numpy as np
import pytest

from conftest import run_main
from mnistkit import folders, history
from tf_compat import tf



def train(work, data, *flags):
    """mnist_backward.py's main in `work`, training work/m on `data` at a batch of 10 (CompletedProcess)."""
    return run_main("mnist_backward.py", "--data-dir", str(data), "--model-dir", "m", "--batch-size", "10", "--quiet",
                    *flags, cwd=work)


def steps_kept(work):
    return [step for step, _ in history.listed(str(work / "m"))]


def index_text(work):
    return (work / "m" / folders.INDEX_FILE).read_text(encoding="utf-8")


@pytest.mark.quick
def test_planned_steps_are_the_fractions_of_the_target_moved_to_saves_when_there_are_enough():
    assert history.planned(2000, 20) == list(range(100, 2001, 100))
    assert history.planned(50000, 20, 1000) == sorted({round(2500 * k / 1000) * 1000 for k in range(1, 21)})
    assert history.planned(50000, 20, 1000)[-1] == 50000 and len(history.planned(50000, 20, 1000)) <= 20
    assert history.planned(10, 4, 100) == [2, 5, 8, 10]  # saves too rare for 4: the fractions themselves
    assert history.planned(3, 20) == [1, 2, 3]  # fewer steps than snapshots: one a step
    assert history.planned(100, 0) == [] and history.planned(0, 20) == []


@pytest.mark.quick
def test_thinning_keeps_the_first_and_newest_and_the_spread():
    assert history.thinned([1, 2, 3, 4, 5], 5) == []
    steps = [10, 20, 30, 40, 50, 60, 70, 80, 100, 200]  # a run to 100 resumed to 200
    kept = [s for s in steps if s not in history.thinned(steps, 4)]
    assert len(kept) == 4 and kept[0] == 10 and kept[-1] == 200
    gaps = np.diff(kept)
    assert gaps.max() <= 2 * 200 / 3  # no hole of more than twice the even gap
    assert history.thinned([5, 9], 1) == [5]


# not quick: 5-6 s of a trainer's run (make test runs it); the quick tier keeps under a minute
def test_snapshots_are_spread_bounded_and_resumed_never_in_the_index(sample_workdir, tmp_path):
    data = sample_workdir / "data"
    result = train(tmp_path, data, "--steps", "12", "--history", "4", "--save-every", "100")
    assert result.returncode == 0, result.stderr
    assert steps_kept(tmp_path) == [3, 6, 9, 12]
    assert "history" not in index_text(tmp_path)
    assert folders.checkpoint_steps(str(tmp_path / "m")) == [12]  # --keep's checkpoints as before
    # A resume to 40 goes on with the spread of 40 (10, 20, 30, 40 past 12) and thins to 4, first and newest kept.
    result = train(tmp_path, data, "--steps", "40", "--history", "4", "--save-every", "100")
    assert result.returncode == 0, result.stderr
    kept = steps_kept(tmp_path)
    assert len(kept) == 4 and kept[0] == 3 and kept[-1] == 40 and set(kept) <= {3, 6, 9, 12, 20, 30, 40}
    assert "history" not in index_text(tmp_path)
    assert folders.indexed_prefix(str(tmp_path / "m")).endswith("mnist_model-40")
    # No temporary file is left, and every snapshot is whole: an .index and its one .data file.
    names = sorted(os.listdir(tmp_path / "m" / history.FOLDER))
    assert len(names) == 8 and not [n for n in names if n.startswith(".")]


# not quick: over 2 s a run (make test runs it), so make test-quick keeps under a minute
def test_a_snapshot_holds_the_checkpoints_averages_and_step(sample_workdir, tmp_path):
    result = train(tmp_path, sample_workdir / "data", "--steps", "10", "--history", "2", "--save-every", "5",
                   "--keep", "5")
    assert result.returncode == 0, result.stderr
    snapshots = history.listed(str(tmp_path / "m"))
    assert [s for s, _ in snapshots] == [5, 10]
    for step, prefix in snapshots:
        snap = tf.train.load_checkpoint(prefix)
        ckpt = tf.train.load_checkpoint(folders.prefix_of(str(tmp_path / "m"), step))
        names = sorted(snap.get_variable_to_shape_map())
        assert names == ["b1/ExponentialMovingAverage", "b2/ExponentialMovingAverage", "global_step",
                         "w1/ExponentialMovingAverage", "w2/ExponentialMovingAverage"]
        for name in names:
            np.testing.assert_array_equal(snap.get_tensor(name), ckpt.get_tensor(name))
        assert int(snap.get_tensor("global_step")) == step


# not quick: over 2 s a run (make test runs it), so make test-quick keeps under a minute
def test_history_0_keeps_none_and_a_fresh_run_clears_an_old_runs(sample_workdir, tmp_path):
    data = sample_workdir / "data"
    assert train(tmp_path, data, "--steps", "2", "--history", "0").returncode == 0
    assert not (tmp_path / "m" / history.FOLDER).exists()
    # A fresh run in a folder holding an earlier run's snapshots: they are not this model's, and go in one line.
    old = tmp_path / "fresh" / "m" / history.FOLDER
    old.mkdir(parents=True)
    for ext in (".index", ".data-00000-of-00001"):
        (old / f"mnist_model-7{ext}").write_bytes(b"old")
    result = train(tmp_path / "fresh", data, "--steps", "2", "--history", "2")
    assert result.returncode == 0, result.stderr
    assert f"removed 1 history snapshot(s) of an earlier run from {os.path.join('m', history.FOLDER)}" in \
        result.stdout
    assert steps_kept(tmp_path / "fresh") == [1, 2]


def test_mnist_test_records_each_score_in_the_folders_record(trained_copy):
    result = run_main("mnist_test.py", "--once", cwd=trained_copy)
    assert result.returncode == 0, result.stderr
    step, accuracy = re.search(r"After (\d+) training steps, test accuracy = ([\d.]+)", result.stdout).groups()
    record = json.loads((trained_copy / "model" / folders.FOLDER_FILE).read_text(encoding="utf-8"))
    assert record[history.ACCURACY] == {step: pytest.approx(float(accuracy), abs=1e-6)}
    assert history.accuracies(str(trained_copy / "model")) == {int(step): pytest.approx(float(accuracy), abs=1e-6)}
    assert record["network"]["layers"] == [784, 500, 10]  # the rest of the record as it was

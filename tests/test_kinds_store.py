"""More cases of "no trained work out of service without a word" (issue #53 §1, §3), beyond test_learn_faults.py.

Undo and redo in other orders: two learns undone twice and redone twice; each of them refused once the folder
trained further between them, whichever learn it is. An undo refuses a checkpoint from before the learn whose
.data shard is gone (it would name newest a checkpoint no one can restore, and take the learned one out of
service); an undo after the learned checkpoint was removed by hand says that, not "trained further". The keep
store's files on a full disk (a real tmpfs): each failed write is one line naming the file, the store stays
readable and keeps again once there is room.

Quick: no training; the learns' history is written into a copy of the trained folder as learns would leave it.
"""
import os

import numpy as np
import pytest

from conftest import mounted_tmpfs
from test_board_learn import kept_input
from test_learn_faults import AFTER, BEFORE, promoted_folder, train_further, unchanged
from mnistkit import folders, keep, learn, promotion
from mnistkit.errors import DataError

THIRD = "mnist_model-3000"


def twice_learned(trained_workdir, tmp_path):
    """promoted_folder's learn 1 (BEFORE -> AFTER), then learn 2 (AFTER -> THIRD), both promoted: the folder."""
    model_dir = promoted_folder(trained_workdir, tmp_path)
    train_further(model_dir, AFTER, 3000)
    record = folders.folder_record(str(model_dir))
    (first,) = record[folders.LEARNS]
    second = {**first, "learn": 2, "before": AFTER, "after": THIRD, "changed": 2.0}
    folders.change(str(model_dir), record={**record, folders.LEARNS: [first, second], folders.REDO: []})
    return model_dir


def newest(model_dir):
    return os.path.basename(learn.checkpoints.latest(str(model_dir)))


def refused(action, model_dir, *said):
    """action(model_dir) raises one DataError line holding each of `said`, and changes nothing."""
    before = unchanged(model_dir)
    with pytest.raises(DataError) as raised:
        action(str(model_dir), out=pytest.fail)
    line = str(raised.value)
    assert "\n" not in line and all(part in line for part in said), line
    assert unchanged(model_dir) == before


def test_two_learns_undone_twice_and_redone_twice_each_step_in_service(trained_workdir, tmp_path):
    model_dir = twice_learned(trained_workdir, tmp_path)
    quiet = dict(out=lambda line: None)
    assert newest(model_dir) == THIRD
    promotion.undo(str(model_dir), **quiet)
    assert newest(model_dir) == AFTER
    promotion.undo(str(model_dir), **quiet)
    assert newest(model_dir) == BEFORE
    refused(promotion.undo, model_dir, "no learn to undo")
    promotion.redo(str(model_dir), **quiet)
    assert newest(model_dir) == AFTER
    promotion.redo(str(model_dir), **quiet)
    assert newest(model_dir) == THIRD
    refused(promotion.redo, model_dir, "no undone learn to redo")
    assert promotion.standing(str(model_dir))["undo"] is True


@pytest.mark.parametrize("order", ["undo-train-undo", "undo-train-redo", "undo-undo-train-redo",
                                   "undo-undo-redo-train-redo"])
def test_a_folder_trained_further_between_undos_and_redos_refuses_the_next_naming_it(trained_workdir, tmp_path,
                                                                                     order):
    model_dir = twice_learned(trained_workdir, tmp_path)
    steps = order.split("-")
    for step in steps[:-1]:
        if step == "train":
            newer = train_further(model_dir, newest(model_dir), folders.step_of(newest(model_dir)) + 300)
        else:
            getattr(promotion, step)(str(model_dir), out=lambda line: None)
    refused(getattr(promotion, steps[-1]), model_dir, newer, f"nothing {steps[-1]}ne")
    assert newest(model_dir) == newer  # the newer training stays in service


@pytest.mark.parametrize("lost", [".data-00000-of-00001", "shard"])
def test_an_undo_refuses_a_checkpoint_from_before_the_learn_that_is_not_all_there(trained_workdir, tmp_path, lost):
    model_dir = promoted_folder(trained_workdir, tmp_path)
    data = model_dir / (BEFORE + ".data-00000-of-00001")
    if lost == "shard":  # two shards named, one there
        data.rename(model_dir / (BEFORE + ".data-00000-of-00002"))
        lost = ".data-00001-of-00002"
    else:
        data.unlink()
    refused(promotion.undo, model_dir, BEFORE + lost, "not all there", "nothing undone")
    assert newest(model_dir) == AFTER  # the learned checkpoint stays in service


def test_an_undo_after_the_learned_checkpoint_was_removed_says_so(trained_workdir, tmp_path):
    model_dir = promoted_folder(trained_workdir, tmp_path)
    for path in model_dir.glob(AFTER + ".*"):
        path.unlink()
    refused(promotion.undo, model_dir, AFTER, "is not there", "nothing undone")
    with pytest.raises(DataError) as raised:
        promotion.undo(str(model_dir), out=pytest.fail)
    assert "trained further" not in str(raised.value)  # the newest, BEFORE, is older: nothing trained further


# ---------------------------------------------------------------- the keep store on a full disk (a real one)

@pytest.fixture
def small_disk(tmp_path):
    """A 64 KB tmpfs mounted at tmp_path/disk (root only), unmounted after the test."""
    with mounted_tmpfs(tmp_path / "disk", "64k", "test_keep.py fails each write by hand instead") as disk:
        yield disk


def fill(folder):
    """Write a file into `folder` until its disk is full; returns its path."""
    path = os.path.join(folder, "filler")
    try:
        with open(path, "wb", buffering=0) as f:
            while True:
                f.write(b"x" * 4096)
    except OSError:  # full
        pass
    return path


@pytest.mark.quick
def test_the_keep_store_on_a_full_disk_fails_each_write_in_one_line_and_stays_readable(small_disk):
    store = keep.KeptDigits(str(small_disk / "my_digits"))
    names = [store.keep(np.array(kept_input(seed), np.uint8).reshape(28, 28), seed % 10)[0] for seed in range(3)]
    listed = store.entries()
    filler = fill(str(small_disk))
    tries = {"keep": lambda: store.keep(np.array(kept_input(7), np.uint8).reshape(28, 28), 7),
             "keep with its original": lambda: store.keep(np.array(kept_input(8), np.uint8).reshape(28, 28), 8,
                                                          b"\x89PNG" + bytes(4000), "PNG"),
             "remove": lambda: store.remove(names[0]),
             "snapshot": lambda: store.snapshot(str(small_disk / "snapshot"))}
    for what, action in tries.items():
        with pytest.raises(DataError) as raised:
            action()
        line = str(raised.value)
        assert "\n" not in line and "no space left on device" in line and str(small_disk) in line, (what, line)
        assert not (keep.COUNTER_FILE in line or keep.PENDING_FILE in line) or "a kept digit's file" not in line, line
        again = keep.KeptDigits(str(small_disk / "my_digits"))  # another reader, as the next server's start
        assert again.entries() == listed and again.problem() is None, what
        assert store.entries() == listed
    os.remove(filler)
    name, digit, count = store.keep(np.array(kept_input(9), np.uint8).reshape(28, 28), 9)
    assert count == 4 and store.entries() == listed + [(name, 9)]
    assert store.remove(names[0]) == 3
    leftovers = [n for n in os.listdir(small_disk / "my_digits") if n.endswith(".tmp") or n == keep.PENDING_FILE]
    assert leftovers == []

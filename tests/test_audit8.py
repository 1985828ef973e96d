"""The eighth audit of issue 53's kinds, §1-§4 (docs/tests.md, "The eighth audit of #53's kinds").

Bugs a maintainer could plant, each with a behaviour test that fails on it: checkpoint steps of different lengths
(mnist_model-900 beside mnist_model-1000) compared as text or by the files' times; a save under way seen past a
learned checkpoint of fewer digits; a `checkpoint` index written on another machine (absolute paths); a new learn
after an undo leaving the undone one to redo; two learns undone and redone in the wrong order; a learn numbered
over a learns/<n>/ left without its entry; an undo that cannot write its record (the files it moved put back, the
learns/ folder it made taken out) or that would write over a file; a discard removing the wrong learns/<n>/; the
trainer's options after an undo; a learn's scripts tethered without its lock or its grace; two spellings of one
model folder learned at once in one process; an export's versions past 9 and another export's commit; a drawing
kept twice, a kept file written over in place; a remove whose label write fails.

Quick: the checkpoints are copies of one real checkpoint of a single variable, read whole by the undo's and the
redo's checks as a trained one is; no training.
"""
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import tree_digests, wait_limit
from mnistkit import export, folders, keep, learn, promotion
from mnistkit.errors import DataError

SHARD = ".data-00000-of-00001"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A real checkpoint (its .index, .data and .meta, as tf.train.Saver writes them) of one variable and
    global_step: its prefix. Its files are copied under other names (place)."""
    from tf_compat import tf
    folder = tmp_path_factory.mktemp("tiny")
    with tf.Graph().as_default():
        tf.get_variable("w", initializer=tf.constant([1.0, 2.0]))
        tf.train.get_or_create_global_step()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return saver.save(sess, str(folder / folders.MODEL_NAME), global_step=1)


def place(tiny, folder, name):
    """tiny's checkpoint files copied into `folder` (a Path, made when missing) as checkpoint `name`."""
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in (".index", ".meta", SHARD):
        shutil.copyfile(tiny + suffix, folder / (name + suffix))


def learned_folder(tiny, work, steps, states, redo=(), options=None):
    """work/model: real checkpoints mnist_model-<step> for `steps` (oldest first); learn n (from 1) took steps[n-1]
    to steps[n] and is in states[n-1] ("promoted": its checkpoint in the folder; "undone": in learns/<n>/); the
    index names the newest in service; `redo` the learns to redo; options: each learn's {"before", "after"}."""
    model = work / "model"
    names = [f"{folders.MODEL_NAME}-{step}" for step in steps]
    serving = names[:1]
    entries = []
    for n, state in enumerate(states, 1):
        place(tiny, model if state == "promoted" else model / folders.LEARNS_FOLDER / str(n), names[n])
        serving += [names[n]] if state == "promoted" else []
        entries.append({"learn": n, "state": state, "before": names[n - 1], "after": names[n], "changed": float(n),
                        "check": {"test": None, "kept": {"count": 1, "right": [0, 1]}, "fell": []},
                        "settings": {"steps": steps[n] - steps[n - 1]},
                        "options": (options or {}).get(n, {"before": {}, "after": {}}),
                        "files": [names[n] + s for s in (".index", ".meta", SHARD)]})
    place(tiny, model, names[0])
    folders.write_index(str(model), serving[-1], serving)
    record = {"network": None, "batch_size": 200, folders.LEARNS: entries, folders.REDO: list(redo)}
    (model / folders.FOLDER_FILE).write_text(folders.record_text(record), encoding="utf-8")
    return model


def in_service(model):
    """The name of model's newest checkpoint (folders.latest), as readers take it."""
    return os.path.basename(folders.latest(str(model)))


# ---------------------------------------------------------------- §1: steps of different lengths


@pytest.mark.quick
@pytest.mark.parametrize("touched", [False, True], ids=["as-saved", "older-copied-back-later"])
def test_a_learn_from_step_900_to_1000_is_undone_and_redone_by_step_not_by_text_or_time(tiny, tmp_path, touched):
    # planted: the steps sorted as text ("900" after "1000"): mnist_model-900 read as the newest, the undo refused
    # ("trained further since learn 1: its newest checkpoint is mnist_model-900"); planted: the newest taken by the
    # files' times, so a copy of mnist_model-900 put back by hand (cp without -p) was served instead of 1000
    model = learned_folder(tiny, tmp_path, [900, 1000], ["promoted"])
    if touched:
        later = os.path.getmtime(model / "mnist_model-1000.index") + 60
        for path in model.glob("mnist_model-900.*"):
            os.utime(path, (later, later))
    assert in_service(model) == "mnist_model-1000"
    said = []
    assert promotion.undo(str(model), out=said.append) == os.path.join(str(model), "mnist_model-900")
    assert in_service(model) == "mnist_model-900" and folders.indexed_names(str(model)) == ["mnist_model-900"]
    assert promotion.redo(str(model), out=said.append) == os.path.join(str(model), "mnist_model-1000")
    assert in_service(model) == "mnist_model-1000"
    assert folders.indexed_names(str(model)) == ["mnist_model-900", "mnist_model-1000"]


@pytest.mark.quick
def test_a_save_under_way_of_more_digits_than_the_learned_checkpoint_stops_the_undo(tiny, tmp_path):
    # planted: moved_on comparing the steps of a save under way as text: mnist_model-1000's .data (being saved)
    # passed over beside the learned mnist_model-900, and the undo went ahead under the trainer's save
    model = learned_folder(tiny, tmp_path, [800, 900], ["promoted"])
    shutil.copyfile(model / ("mnist_model-900" + SHARD), model / ("mnist_model-1000" + SHARD))  # no .index yet
    assert in_service(model) == "mnist_model-900"
    before = tree_digests(model)
    with pytest.raises(DataError) as refused:
        promotion.undo(str(model), out=pytest.fail)
    assert "trained further since learn 1: its newest checkpoint is mnist_model-1000" in str(refused.value)
    assert tree_digests(model) == before
    assert promotion.standing(str(model))["undo"] is False
    assert promotion.standing(str(model))["further"] == {"learn": 1, "newest": "mnist_model-1000", "step": 1000}


# ---------------------------------------------------------------- §1: an index written on another machine


@pytest.mark.quick
@pytest.mark.parametrize("elsewhere", ["/home/someone/course/model", "C:\\Users\\someone\\course\\model"])
def test_an_index_with_another_machines_absolute_paths_still_tells_a_save_under_way(tiny, tmp_path, elsewhere):
    # planted: the index's path taken as it is, not its file name in this folder: the index led nowhere, so a
    # save under way (mnist_model-3000's .data and .meta, no .index) was taken for the newest checkpoint
    model = learned_folder(tiny, tmp_path, [1000, 2000], ["promoted"])
    sep = "\\" if "\\" in elsewhere else "/"
    (model / folders.INDEX_FILE).write_text(
        f'model_checkpoint_path: "{elsewhere}{sep}mnist_model-2000"\n'.replace("\\", "\\\\")
        + "".join(f'all_model_checkpoint_paths: "{elsewhere}{sep}mnist_model-{s}"\n'.replace("\\", "\\\\")
                  for s in (1000, 2000)), encoding="utf-8")
    for suffix in (SHARD, ".meta"):
        shutil.copyfile(model / ("mnist_model-2000" + suffix), model / ("mnist_model-3000" + suffix))
    assert in_service(model) == "mnist_model-2000"
    assert folders.indexed_prefix(str(model)) == os.path.join(str(model), "mnist_model-2000")
    (model / ("mnist_model-3000" + SHARD)).unlink()
    (model / "mnist_model-3000.meta").unlink()
    promotion.undo(str(model), out=lambda line: None)  # the index written anew: names in this folder
    assert in_service(model) == "mnist_model-1000" and folders.indexed_names(str(model)) == ["mnist_model-1000"]
    assert folders.indexed_prefix(str(model)) == os.path.join(str(model), "mnist_model-1000")


# ---------------------------------------------------------------- §1: a new learn after an undo


@pytest.mark.quick
def test_a_learn_promoted_after_an_undo_leaves_nothing_to_redo(tiny, tmp_path):
    # planted: promote passing the redo list on: after undo of learn 1 and a new learn 2 in service, the record still
    # offered learn 1 to redo, and --redo said "trained further since the undo" of the folder's own learn
    model = learned_folder(tiny, tmp_path, [1000, 2000], ["undone"], redo=[1])
    staging = tmp_path / "staging"
    place(tiny, staging, "mnist_model-1500")
    entry = {"before": "mnist_model-1000", "after": "mnist_model-1500", "state": "promoted",
             "check": {"test": None, "kept": {"count": 1, "right": [0, 1]}, "fell": []},
             "settings": {"steps": 500}, "options": {"after": {}}}
    plan = learn.Plan(str(model), keep_dir=str(tmp_path / "my_digits"))
    assert learn.promote(str(staging / "mnist_model-1500"), plan, entry, learn.Watch(out=lambda line: None)) == \
        os.path.join(str(model), "mnist_model-1500")
    record = folders.folder_record(str(model))
    assert record[folders.REDO] == [] and [e["state"] for e in record[folders.LEARNS]] == ["undone", "promoted"]
    stand = promotion.standing(str(model))
    assert (stand["undo"], stand["redo"], stand["further"]) == (True, False, None)
    with pytest.raises(DataError, match="no undone learn to redo"):
        promotion.redo(str(model), out=pytest.fail)
    promotion.undo(str(model), out=lambda line: None)  # learn 2 out, back to 1000; then it, not learn 1, comes back
    assert promotion.redo(str(model), out=lambda line: None) == os.path.join(str(model), "mnist_model-1500")


@pytest.mark.quick
def test_two_learns_undone_twice_and_redone_twice_in_their_order(tiny, tmp_path):
    # planted: undo taking the first learn promoted, not the last (refused: "trained further since learn 1"); redo
    # taking the first learn undone, not the last (learn 2 put back over a folder without its mnist_model-2000)
    model = learned_folder(tiny, tmp_path, [1000, 2000, 3000], ["promoted", "promoted"])
    quiet = lambda line: None  # noqa: E731
    for expected, state, redo in (("mnist_model-2000", ["promoted", "undone"], [2]),
                                  ("mnist_model-1000", ["undone", "undone"], [2, 1])):
        assert promotion.undo(str(model), out=quiet) == os.path.join(str(model), expected)
        record = folders.folder_record(str(model))
        assert in_service(model) == expected and [e["state"] for e in record[folders.LEARNS]] == state
        assert record[folders.REDO] == redo
    for expected, redo in (("mnist_model-2000", [2]), ("mnist_model-3000", [])):
        assert promotion.redo(str(model), out=quiet) == os.path.join(str(model), expected)
        assert in_service(model) == expected and folders.folder_record(str(model))[folders.REDO] == redo
    assert folders.indexed_names(str(model)) == ["mnist_model-1000", "mnist_model-2000", "mnist_model-3000"]


@pytest.mark.quick
def test_a_learn_numbered_past_a_learns_folder_left_without_its_record_entry(tiny, tmp_path):
    # planted: the new learn's number from the record alone: learns/1/ left there (a promote killed before its
    # record was written) made the next learn fail, "cannot add the learned checkpoint (File exists)"
    model = learned_folder(tiny, tmp_path, [1000], [])
    left = model / folders.LEARNS_FOLDER / "1"
    place(tiny, left, "mnist_model-1200")
    before = tree_digests(left)
    staging = tmp_path / "staging"
    place(tiny, staging, "mnist_model-1500")
    entry = {"before": "mnist_model-1000", "after": "mnist_model-1500",
             "check": {"test": None, "kept": {"count": 1, "right": [0, 1]}, "fell": []},
             "settings": {"steps": 500}, "options": {"after": {}}}
    learn.promote(str(staging / "mnist_model-1500"), learn.Plan(str(model)), entry, learn.Watch(out=lambda line: None))
    assert in_service(model) == "mnist_model-1500" and entry["learn"] == 2
    assert tree_digests(left) == before


@pytest.mark.quick
def test_an_undo_whose_record_cannot_be_written_leaves_the_folder_as_it_was(tiny, tmp_path, monkeypatch):
    # planted: change() putting back the record and the index but not the files it had moved: the learned
    # checkpoint stuck in learns/1/ while the index still named it in service (no reader found its files)
    import errno
    model = learned_folder(tiny, tmp_path, [1000, 2000], ["promoted"])
    before = tree_digests(model)
    real_replace, failed = os.replace, []

    def full(src, dst):  # the new record's rename fails once; putting the old one back works
        if os.path.basename(os.fspath(dst)) == folders.FOLDER_FILE and not failed:
            failed.append(dst)
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)
    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(DataError) as refused:
        promotion.undo(str(model), out=pytest.fail)
    monkeypatch.undo()
    assert str(refused.value) == f"{model}: cannot change the model folder (no space left on device); it is as it was"
    assert tree_digests(model) == before and in_service(model) == "mnist_model-2000"
    assert not (model / folders.LEARNS_FOLDER).exists()
    assert promotion.undo(str(model), out=lambda line: None) == os.path.join(str(model), "mnist_model-1000")


@pytest.mark.quick
def test_an_undo_never_writes_over_a_file_where_the_learned_checkpoint_would_go(tiny, tmp_path):
    # planted: change() without its check of the files where the moves go: a file left in learns/1/ (a copy of
    # the learned checkpoint's .index kept by hand) written over by the undo
    model = learned_folder(tiny, tmp_path, [1000, 2000], ["promoted"])
    mine = model / folders.LEARNS_FOLDER / "1" / "mnist_model-2000.index"
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"kept by hand")
    before = tree_digests(model)
    with pytest.raises(DataError, match=f"^{mine}: a file is there already; nothing changed"):
        promotion.undo(str(model), out=pytest.fail)
    assert tree_digests(model) == before and in_service(model) == "mnist_model-2000"


@pytest.mark.quick
def test_discarding_a_held_learn_removes_its_checkpoint(tiny, tmp_path):
    # planted: discard removing learns/<n+1>/ (a number off by one): the held checkpoint stayed in learns/2/ for
    # good, out of the record's reach
    model = learned_folder(tiny, tmp_path, [1000, 2000, 3000], ["promoted", "held"])
    said = []
    promotion.discard(str(model), out=said.append)
    assert said == [f"discarded learn 2's checkpoint mnist_model-3000; {model} goes on with mnist_model-2000"]
    assert not (model / folders.LEARNS_FOLDER).exists()
    assert [e["state"] for e in folders.folder_record(str(model))[folders.LEARNS]] == ["promoted", "discarded"]
    assert promotion.undo(str(model), out=lambda line: None) == os.path.join(str(model), "mnist_model-1000")
    assert sorted(os.listdir(model / folders.LEARNS_FOLDER)) == ["1"]


# ---------------------------------------------------------------- §1: the trainer's options follow undo and redo


@pytest.mark.quick
def test_undo_puts_back_the_trainers_options_from_before_the_learn_and_redo_the_learns(tiny, tmp_path):
    # planted: the undo's record kept the learn's options (its --decay-from): a resume after the undo trained on
    # at the learn's learning rate, not the one the checkpoint in service was trained at
    options = {1: {"before": {"learning_rate_base": 0.1, "decay_from": 0}, "after": {"learning_rate_base": 0.1,
                                                                                      "decay_from": 1000}}}
    model = learned_folder(tiny, tmp_path, [1000, 1600], ["promoted"], options=options)
    record = folders.folder_record(str(model))
    record.update(options[1]["after"])
    (model / folders.FOLDER_FILE).write_text(folders.record_text(record), encoding="utf-8")
    promotion.undo(str(model), out=lambda line: None)
    assert folders.folder_record(str(model))["decay_from"] == 0
    promotion.redo(str(model), out=lambda line: None)
    assert folders.folder_record(str(model))["decay_from"] == 1000


# ---------------------------------------------------------------- §4: one writer


@pytest.mark.quick
def test_two_spellings_of_one_model_folder_are_one_folder_to_the_processes_own_learns(tmp_path, monkeypatch):
    # planted: the process's own set of folders keyed by the path as given: `model` and `./model/` (or a link to it)
    # both learned at once by one board (its FolderLock takes its own PID's lock for a stale one)
    model = tmp_path / "model"
    model.mkdir()
    os.symlink(model, tmp_path / "link")
    monkeypatch.chdir(tmp_path)
    for other in ("./model/", str(model), "link"):
        with promotion.one_at_a_time("model"):
            with pytest.raises(DataError, match="another learn is working on this model folder"):
                with promotion.one_at_a_time(other):
                    pytest.fail(f"{other} learned beside model")
            assert (model / folders.LOCK_FILE).exists()
        assert not (model / folders.LOCK_FILE).exists()


# A generator standing in for mnist_generateds.py: says its parent's (the tether's) command line, as hex (a learn's
# lines name no path of its staging), and fails
TETHER_TOLD = """\
import os, sys
with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
    print("tether:", f.read().hex(), flush=True)
sys.exit(3)
"""


@pytest.mark.quick
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_learns_scripts_are_tethered_with_its_lock_its_staging_and_its_grace(tiny, tmp_path, monkeypatch):
    # planted: the learn not telling the tether of the lock it holds: a learn killed with SIGKILL left
    # model/.mnist.lock until the next board started; planted: the tether not given the learn's grace (its own
    # default instead: two constants that drift apart)
    from mnistkit import networks, records, tether
    model = learned_folder(tiny, tmp_path, [1000], [])
    record = folders.folder_record(str(model))
    record["network"] = networks.to_record(networks.MLP)
    (model / folders.FOLDER_FILE).write_text(folders.record_text(record), encoding="utf-8")
    pixels = np.zeros((28, 28), np.uint8)
    pixels[4:24, 12:16] = 255
    keep.KeptDigits(str(tmp_path / "my_digits")).keep(pixels, 1)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / records.TRAIN_FILE).write_bytes(b"")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / learn.GENERATOR).write_text(TETHER_TOLD, encoding="utf-8")
    monkeypatch.setattr(learn, "STOP_GRACE_SECS", 7)
    said = []
    plan = learn.Plan(str(model), keep_dir=str(tmp_path / "my_digits"), data_dir=str(tmp_path / "data"),
                      script_dir=str(tmp_path / "scripts"))
    with pytest.raises(learn.LearnFailed, match="status 3"):
        learn.learn(plan, watch=learn.Watch(out=said.append))
    (told,) = [line.split()[1] for line in said if line.startswith("tether: ")]
    argv = [part.decode() for part in bytes.fromhex(told).split(b"\0")[:-1]]
    assert argv[1] == learn.TETHER
    args = tether.parse(argv[2:])
    assert args.lock == os.path.join(str(model), folders.LOCK_FILE) and args.parent == os.getpid()
    assert args.grace == 7
    assert os.path.basename(args.staging).startswith(f"{learn.STAGING_PREFIX}{os.getpid()}-")
    assert args.command[:2] == [sys.executable, str(tmp_path / "scripts" / learn.GENERATOR)]
    assert not os.path.exists(args.staging) and not (model / folders.LOCK_FILE).exists()


def staged_export(tmp_path, versions):
    """An export folder whose export/mnist holds the SavedModel versions `versions` (folders) and a staging
    folder of the next export's files (saved_model/, both .tflite)."""
    export_dir = tmp_path / "export"
    for number in versions:
        (export_dir / "mnist" / str(number)).mkdir(parents=True)
        (export_dir / "mnist" / str(number) / "saved_model.pb").write_text(f"version {number}")
    staging = export_dir / ".staging"
    (staging / "saved_model").mkdir(parents=True)
    (staging / "saved_model" / "saved_model.pb").write_text("new")
    for suffix in ("", "_int8"):
        (staging / f"mnist{suffix}.tflite").write_text(f"new{suffix}")
    return export_dir, staging


@pytest.mark.quick
def test_an_export_after_version_10_is_version_11(tmp_path):
    # planted: the versions sorted as text ("9" after "10"): the next version 10 again, its rename refused, and
    # the commit tried it again for ever holding the export folder's lock
    assert export.versions(str(staged_export(tmp_path / "a", range(1, 11))[0] / "mnist")) == list(range(1, 11))
    export_dir, staging = staged_export(tmp_path / "b", range(1, 11))
    done = []
    worker = threading.Thread(target=lambda: done.append(export.commit(str(staging), str(export_dir), "mnist")),
                              daemon=True)
    worker.start()
    worker.join(wait_limit(60))
    assert done, "the commit did not end"
    assert done[0].saved_model == str(export_dir / "mnist" / "11")
    assert (export_dir / "mnist" / "11" / "saved_model.pb").read_text() == "new"
    assert (export_dir / "mnist" / "10" / "saved_model.pb").read_text() == "version 10"


@pytest.mark.quick
@pytest.mark.skipif(os.name != "posix", reason="a PID of a running process")
def test_an_export_waits_for_another_exports_commit_then_commits_its_own(tmp_path):
    # planted: the commit not waiting for the lock of another export's commit (its few renames): an export made in
    # full refused at its last step, "is writing this folder"
    export_dir, staging = staged_export(tmp_path, [1])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    lock = export_dir / folders.LOCK_FILE
    lock.write_text(f"{other.pid}\nan export\npython mnist_export.py\n", encoding="utf-8")
    ended = threading.Timer(1.0, lambda: (lock.unlink(), other.kill()))
    ended.start()
    try:
        written = export.commit(str(staging), str(export_dir), "mnist")
    finally:
        ended.join()
        other.wait()
    assert written.saved_model == str(export_dir / "mnist" / "2")
    assert (export_dir / "mnist.tflite").read_text() == "new" and not lock.exists()


# ---------------------------------------------------------------- §3: out of date


def one_kept_and_learned(tiny, tmp_path):
    """A folder whose last learn knew the one drawing kept (a 1, as a stroke): (model folder, the store, the drawing's
    pixels uint8 [28, 28], its kept name), with promotion.unknown 0."""
    model = learned_folder(tiny, tmp_path, [1000, 2000], ["promoted"])
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    pixels = np.zeros((28, 28), np.uint8)
    pixels[4:24, 12:16] = 255
    name = store.keep(pixels, 1)[0]
    record = folders.folder_record(str(model))
    record[folders.LEARNS][0]["settings"]["known"] = promotion.known_of(store, store.entries(), str(model))
    (model / folders.FOLDER_FILE).write_text(folders.record_text(record), encoding="utf-8")
    assert promotion.unknown(str(model), store) == 0
    return model, store, pixels, name


@pytest.mark.quick
def test_a_drawing_kept_twice_is_one_change_past_the_one_learned(tiny, tmp_path):
    # planted: the drawings compared as sets: the same drawing kept a second time (two numbers, the same pixels) was
    # no change, though the next learn would learn it twice as often
    model, store, pixels, _ = one_kept_and_learned(tiny, tmp_path)
    store.keep(pixels, 1)
    assert promotion.unknown(str(model), store) == 1
    store.remove(store.entries()[0][0])  # the first one gone: the one left is the drawing learned
    assert promotion.unknown(str(model), store) == 0


@pytest.mark.quick
def test_a_kept_file_written_over_in_place_at_the_same_size_is_a_change(tiny, tmp_path):
    # planted: a file's checksum remembered by its path and inode alone: a kept picture written over in place (cp
    # onto it keeps its inode) was still the drawing learned, 0 changes
    model, store, pixels, name = one_kept_and_learned(tiny, tmp_path)
    path = tmp_path / "my_digits" / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # another drawing's bytes, as many
    stat = path.stat()
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert path.stat().st_ino == stat.st_ino and path.stat().st_size == stat.st_size
    assert promotion.unknown(str(model), store) == 2  # the drawing learned gone, another kept


# ---------------------------------------------------------------- §1: the keep store's writes


@pytest.mark.quick
def test_a_remove_whose_label_write_fails_keeps_the_digit_and_its_files(tmp_path, monkeypatch):
    # planted: the digit's files removed before its line: a label write that failed (a full disk) left a line
    # naming a file that is gone, and every later keep was refused ("000001_5.jpg is not in my_digits")
    import errno
    from test_keep import PNG, check_consistent, kept, original, prepared
    folder = tmp_path / "my_digits"
    store = keep.KeptDigits(str(folder))
    store.keep(prepared(5), 5, PNG, "PNG")
    store.keep(prepared(6), 6)
    before = tree_digests(folder)
    real_replace = os.replace

    def full(src, dst):
        if os.fspath(dst) == store.labels:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)
    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(DataError) as refused:
        store.remove(kept(1, 5))
    monkeypatch.undo()
    assert str(refused.value).startswith(f"{store.labels}: ") and "no space left on device" in str(refused.value)
    assert "\n" not in str(refused.value)
    again = keep.KeptDigits(str(folder))
    assert again.problem() is None and again.entries() == [(kept(1, 5), 5), (kept(2, 6), 6)]
    assert (folder / kept(1, 5)).is_file() and (folder / original(1, 5, ".png")).is_file()
    assert {k: v for k, v in tree_digests(folder).items() if k != keep.PENDING_FILE} == \
        {k: v for k, v in before.items() if k != keep.PENDING_FILE}
    assert again.remove(kept(1, 5)) == 1  # the next remove finishes it
    check_consistent(again, 1)

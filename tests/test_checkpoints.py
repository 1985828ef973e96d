"""Trained work is never lost: moved folders, stale or missing index files, damaged checkpoints, re-runs."""
import hashlib
import os
import shutil
import time
import types

import numpy as np
import pytest

from conftest import new_saver, save_checkpoint
from PIL import Image

import mnist_app
import mnist_backward
import mnist_test
from mnistkit.errors import DataError
import mnistkit.checkpoints

DATA = "mnist_model-2000.data-00000-of-00001"


def digests(folder):
    """{file name: sha256} of the checkpoint files in a folder."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.name.startswith("mnist_model-")}


@pytest.fixture
def model(trained_workdir, tmp_path):
    """A copy of the trained model folder (checkpoints at 1000 and 2000), at an absolute path."""
    folder = tmp_path / "model"
    shutil.copytree(trained_workdir / "model", folder)
    assert sorted(mnistkit.checkpoints.checkpoint_steps(str(folder))) == [1000, 2000]
    return folder


@pytest.fixture
def picture(tmp_path):
    """A hand-drawn 1: a dark bar on white paper."""
    img = np.full((120, 100), 255, np.uint8)
    img[20:100, 45:55] = 0
    path = tmp_path / "one.png"
    Image.fromarray(img).save(path)
    return path


def one_error_line(capsys):
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("error: ")
    return captured.err.strip()


def run_trainer(model, data, steps, *flags):
    return mnist_backward.main(["--steps", str(steps), "--model-dir", str(model), "--data-dir", str(data), *flags])


# ---------------------------------------------------------------- the index file does not lead to the checkpoints

STALE_INDEX = {
    "absolute paths of a folder that was moved":
        'model_checkpoint_path: "/gone/abs_model/mnist_model-2000"\n'
        'all_model_checkpoint_paths: "/gone/abs_model/mnist_model-1000"\n'
        'all_model_checkpoint_paths: "/gone/abs_model/mnist_model-2000"\n',
    "missing": None,
    "unreadable": "\x00\x01 not a text protobuf {{{\n",
    "naming a checkpoint that is not there": 'model_checkpoint_path: "mnist_model-999"\n',
}


@pytest.mark.parametrize("index", STALE_INDEX, ids=list(STALE_INDEX))
def test_a_folder_whose_index_misleads_is_read_from_its_files(model, trained_workdir, picture, capsys, index):
    if STALE_INDEX[index] is None:
        os.remove(model / "checkpoint")
    else:
        (model / "checkpoint").write_text(STALE_INDEX[index])
    before = digests(model)

    assert mnist_test.main(["--once", "--model-dir", str(model), "--data-dir", str(trained_workdir / "data")]) == 0
    assert capsys.readouterr().out.startswith("After 2000 training steps, test accuracy = 0.9")
    assert mnist_app.main(["--model-dir", str(model), str(picture)]) == 0
    assert capsys.readouterr().out.startswith(f"{picture}: The prediction number is: 1 ")

    assert run_trainer(model, trained_workdir / "data", 2100, "--save-every", "50") == 0
    out = capsys.readouterr().out
    note = (f"note: {model}/checkpoint is missing or names files that are not there; "
            f"resuming from the newest checkpoint files, {model}/mnist_model-2000")
    # Absolute paths of a moved folder still name the files, by their names in this folder.
    assert (note in out) == (index != "absolute paths of a folder that was moved"), out
    assert f"resuming from {model}/mnist_model-2000; target global_step 2100" in out
    after = digests(model)
    assert {name: after[name] for name in before} == before  # nothing of the earlier run replaced
    assert mnistkit.checkpoints.checkpoint_steps(str(model)) == [1000, 2000, 2050, 2100]
    # The new index names its checkpoints relative to the folder: it can be moved again.
    index_text = (model / "checkpoint").read_text()
    assert 'model_checkpoint_path: "mnist_model-2100"' in index_text and "/" not in index_text


def test_a_moved_model_folder_resumes_where_it_was(sample_workdir, tmp_path, capsys):
    data = sample_workdir / "data"
    first = tmp_path / "abs_model"
    assert run_trainer(first, data, 40, "--save-every", "20") == 0
    moved = tmp_path / "moved_model"
    first.rename(moved)
    before = digests(moved)
    capsys.readouterr()
    assert run_trainer(moved, data, 60, "--save-every", "20") == 0
    assert f"resuming from {moved}/mnist_model-40; target global_step 60" in capsys.readouterr().out
    after = digests(moved)
    assert {name: after[name] for name in before} == before
    assert mnistkit.checkpoints.checkpoint_steps(str(moved)) == [20, 40, 60]


def test_a_newer_checkpoint_than_the_index_names_is_resumed_not_overwritten(model, trained_workdir, capsys):
    (model / "checkpoint").write_text('model_checkpoint_path: "mnist_model-1000"\n')
    before = digests(model)
    assert run_trainer(model, trained_workdir / "data", 2050, "--save-every", "25") == 0
    out = capsys.readouterr().out
    assert f"note: {model}/mnist_model-2000 is newer than {model}/mnist_model-1000" in out
    assert f"resuming from {model}/mnist_model-2000; target global_step 2050" in out
    after = digests(model)
    assert {name: after[name] for name in before} == before


def test_keep_rotation_continues_on_resume_so_keep_means_the_folders_newest(model, trained_workdir, capsys):
    """A resumed run of the same model rotates the folder's checkpoints as one run's (Saver.recover_last_checkpoints)."""
    assert mnistkit.checkpoints.checkpoint_steps(str(model)) == [1000, 2000]
    assert run_trainer(model, trained_workdir / "data", 2200, "--save-every", "50", "--keep", "1") == 0
    assert mnistkit.checkpoints.checkpoint_steps(str(model)) == [2200]
    assert sorted(os.listdir(model)) == ["checkpoint", "history", "mnist_model-2200.data-00000-of-00001",
                                         "mnist_model-2200.index", "mnist_model-2200.meta", "schedule.json", "train"]
    assert (model / "checkpoint").read_text() == ('model_checkpoint_path: "mnist_model-2200"\n'
                                                  'all_model_checkpoint_paths: "mnist_model-2200"\n')
    assert "note:" not in capsys.readouterr().out


def test_ctrl_c_and_the_same_command_again_leave_keep_checkpoints_and_no_note(sample_workdir, tmp_path, capsys):
    """The README's resume workflow: stopped at step 30 (as by Ctrl-C), then run again to 80 with --keep 2."""
    data, model = sample_workdir / "data", tmp_path / "model"
    assert run_trainer(model, data, 30, "--save-every", "10", "--keep", "2") == 0
    assert mnistkit.checkpoints.checkpoint_steps(str(model)) == [20, 30]
    capsys.readouterr()
    assert run_trainer(model, data, 80, "--save-every", "10", "--keep", "2") == 0
    out = capsys.readouterr().out
    assert f"resuming from {model}/mnist_model-30" in out and "note:" not in out and "earlier runs" not in out
    assert mnistkit.checkpoints.checkpoint_steps(str(model)) == [70, 80]
    assert (model / "checkpoint").read_text().splitlines()[1:] == ['all_model_checkpoint_paths: "mnist_model-70"',
                                                                   'all_model_checkpoint_paths: "mnist_model-80"']


def test_save_refuses_to_replace_a_checkpoint_of_another_run(model):
    from tf_compat import tf
    before = digests(model)
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(DataError, match=r"mnist_model-2000: a checkpoint of another run is already there"):
                save_checkpoint(sess, new_saver(5), str(model), 2000, written=set())
            written = {2000}  # ... but this run's own checkpoint of a step may be saved again
            assert save_checkpoint(sess, new_saver(5), str(model), 3000, written).endswith("-3000")
    assert {name: digests(model)[name] for name in before} == before


# What a trainer killed inside a save leaves, newer than the checkpoint the index file names: mnistkit.saving.save_attempts
# writes the .meta, then Saver.save the .data and .index, then the index file; Saver.save alone (older runs, other
# programs) writes the .data and .index, the index file, and the .meta last.
UNFINISHED = {"only the .meta": ("meta",), "the .meta and .data": ("meta", "data-00000-of-00001"),
              "Saver.save's .data and .index": ("index", "data-00000-of-00001")}


@pytest.mark.parametrize("left", UNFINISHED.values(), ids=UNFINISHED.keys())
def test_an_unfinished_save_is_passed_over_by_readers_and_cleared_by_the_trainer(model, trained_workdir, capsys, left):
    for ext in left:
        shutil.copy(model / f"mnist_model-2000.{ext}", model / f"mnist_model-2050.{ext}")
    assert mnistkit.checkpoints.latest(str(model)) == f"{model}/mnist_model-2000"
    assert mnist_test.main(["--once", "--model-dir", str(model), "--data-dir", str(trained_workdir / "data")]) == 0
    assert capsys.readouterr().out.startswith("After 2000 training steps")
    assert run_trainer(model, trained_workdir / "data", 2060, "--save-every", "50") == 0
    out = capsys.readouterr().out
    assert f"removed {model}/mnist_model-2050.*, a save that did not finish" in out
    assert mnistkit.checkpoints.checkpoint_steps(str(model)) == [1000, 2000, 2050, 2060]


def test_save_names_a_checkpoint_in_the_index_file_only_when_its_meta_is_there(tmp_path, monkeypatch):
    """A kill at any moment of a save leaves the index file naming a whole checkpoint (the .meta is written first)."""
    from tf_compat import tf
    from tensorflow.python.training import saver as saver_module
    update = saver_module.checkpoint_management.update_checkpoint_state_internal
    seen = []

    def checked_update(save_dir, model_checkpoint_path, *args, **kwargs):
        prefix = os.path.join(save_dir, os.path.basename(model_checkpoint_path))
        seen.append(sorted(os.path.basename(p) for p in (tmp_path.glob(os.path.basename(prefix) + ".*"))))
        return update(save_dir, model_checkpoint_path, *args, **kwargs)

    monkeypatch.setattr(saver_module.checkpoint_management, "update_checkpoint_state_internal", checked_update)
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            checkpoint_saver, written = new_saver(1), set()
            for step in (10, 20):
                save_checkpoint(sess, checkpoint_saver, str(tmp_path), step, written)
    assert seen == [[f"mnist_model-{s}.data-00000-of-00001", f"mnist_model-{s}.index", f"mnist_model-{s}.meta"]
                    for s in (10, 20)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "mnist_model-20.data-00000-of-00001",
                                                         "mnist_model-20.index", "mnist_model-20.meta"]


# ---------------------------------------------------------------- damaged checkpoints

def flip_a_bit(path):
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        byte = f.read(1)[0]
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte ^ 0x10]))


DAMAGE = {
    "data cut": (lambda m: os.truncate(m / DATA, 100000),
                 f"{DATA} is cut short (100,000 bytes): tensor 'w1' lies past its end"),
    "data bit-flipped": (lambda m: flip_a_bit(m / DATA), f"{DATA} fails its checksum at tensor 'w1"),
    "data missing": (lambda m: os.remove(m / DATA), f"{DATA} is missing"),
    "index cut": (lambda m: os.truncate(m / "mnist_model-2000.index", 100), "mnist_model-2000.index is unreadable: "),
    "meta missing": (lambda m: remove_meta_of_an_old_save(m),
                     "mnist_model-2000.meta is missing: the save did not finish"),
    "meta cut": (lambda m: os.truncate(m / "mnist_model-2000.meta", 1000),  # a copy cut short: once read as whole
                 "mnist_model-2000.meta is cut short or damaged (1,000 bytes): not a whole graph"),
}


def remove_meta_of_an_old_save(model):
    os.remove(model / "mnist_model-2000.meta")
    an_hour_ago = time.time() - 3600  # not a save that a running trainer is finishing
    for path in model.iterdir():
        os.utime(path, (an_hour_ago, an_hour_ago))


def test_a_reader_waits_for_the_meta_of_a_save_that_is_finishing(model, monkeypatch):
    # Saver.save names the checkpoint in the index file before it writes the .meta.
    meta = model / "mnist_model-2000.meta"
    meta.rename(model / "later")
    os.utime(model / "mnist_model-2000.index")  # just saved
    pauses = []

    def pause(seconds):  # the reader's wait: the trainer writes the .meta during its third pause
        pauses.append(seconds)
        if len(pauses) == 3:
            (model / "later").rename(meta)

    monkeypatch.setattr(mnistkit.checkpoints, "time", types.SimpleNamespace(
        time=time.time, monotonic=time.monotonic, sleep=pause))
    values = mnistkit.checkpoints.read_checkpoint(str(model / "mnist_model-2000"))
    assert values["global_step"] == 2000
    assert len(pauses) == 3  # it waited, and went on as soon as the .meta was there


@pytest.mark.parametrize("kind", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_checkpoint_is_one_line_in_every_script_and_nothing_is_lost(model, trained_workdir, picture,
                                                                             capsys, kind):
    damage, what = DAMAGE[kind]
    damage(model)
    before = digests(model)
    data = trained_workdir / "data"
    head = f"error: {model}/mnist_model-2000: checkpoint is damaged ({what}"
    hint = (f"the newest intact checkpoint is {model}/mnist_model-1000: "
            f"move {model}/mnist_model-2000.* out of {model} to use it")
    for script in (lambda: run_trainer(model, data, 2100),
                   lambda: mnist_test.main(["--once", "--model-dir", str(model), "--data-dir", str(data)]),
                   lambda: mnist_app.main(["--model-dir", str(model), str(picture)])):
        status = script()
        line = one_error_line(capsys)
        assert status == 1
        assert line.startswith(head) and line.endswith(hint), line
    assert digests(model) == before  # the trainer neither started from scratch nor saved over it
    assert not (model / "train").exists() or set(os.listdir(model / "train")) == set(
        os.listdir(trained_workdir / "model" / "train"))


def test_no_intact_checkpoint_left_says_so(model, trained_workdir, capsys):
    os.truncate(model / DATA, 100000)
    os.truncate(model / "mnist_model-1000.data-00000-of-00001", 10)
    assert mnist_test.main(["--once", "--model-dir", str(model), "--data-dir", str(trained_workdir / "data")]) == 1
    assert one_error_line(capsys).endswith(
        f"; no intact checkpoint is left in {model}; move {model}/mnist_model-2000.* away and train again")


def watch(model, data, monkeypatch, capsys, events, stop_at):
    """Run mnist_test.py's periodic watch in-process; returns (status, stdout, stderr, pauses).

    events: {n: what happens during the evaluator's n-th pause between looks (a function)};
    its pause number stop_at is Ctrl-C.
    """
    pauses = []

    def wait(seconds):
        pauses.append(seconds)
        if len(pauses) == stop_at:
            raise KeyboardInterrupt
        events.get(len(pauses), lambda: None)()

    monkeypatch.setattr(mnist_test, "time", types.SimpleNamespace(sleep=wait))
    status = mnist_test.main(["--interval", "0.2", "--model-dir", str(model), "--data-dir", str(data)])
    out, err = capsys.readouterr()
    return status, out, err, pauses


def copy_checkpoint(model, step, new_step):
    for ext in ("index", "data-00000-of-00001", "meta"):
        shutil.copy(model / f"mnist_model-{step}.{ext}", model / f"mnist_model-{new_step}.{ext}")


def test_the_periodic_evaluator_reports_a_damaged_checkpoint_once_and_scores_the_next(model, trained_workdir,
                                                                                    capsys, monkeypatch):
    os.truncate(model / DATA, 100000)
    # after several looks at the same damaged checkpoint, a newer, intact one arrives; the next look scores it
    status, out, err, pauses = watch(model, trained_workdir / "data", monkeypatch, capsys,
                                     {5: lambda: copy_checkpoint(model, 1000, 3000)}, stop_at=6)
    assert err.startswith(f"error: {model}/mnist_model-2000: checkpoint is damaged (")
    assert err.count("\n") == 2 and err.endswith("; waiting for the next checkpoint\nSIGINT: stopped\n")  # reported once
    assert out.startswith("After 1000 training steps, test accuracy = 0.9") and out.count("\n") == 1, out
    assert pauses == [0.2] * 6
    assert status == 130


def test_the_periodic_evaluator_scores_a_damaged_checkpoint_once_it_is_written_whole(model, trained_workdir,
                                                                                  capsys, monkeypatch):
    # What a reader sees of a checkpoint that is still being copied in: damaged, then whole.
    os.truncate(model / DATA, 100000)
    status, out, err, pauses = watch(model, trained_workdir / "data", monkeypatch, capsys,
                                     {3: lambda: shutil.copy(trained_workdir / "model" / DATA, model / DATA)},
                                     stop_at=5)
    assert err.startswith(f"error: {model}/mnist_model-2000: checkpoint is damaged (")
    assert err.count("\n") == 2 and err.endswith("; waiting for the next checkpoint\nSIGINT: stopped\n")  # reported once
    assert out.startswith("After 2000 training steps, test accuracy = 0.9") and out.count("\n") == 1, out
    assert status == 130


def test_latest_takes_one_listing_of_the_folder(model, monkeypatch):
    # A save that begins while latest() looks: its first file appears right after the folder is listed.
    listed = mnistkit.checkpoints.checkpoint_steps

    def list_then_save_begins(model_dir, *name):
        steps = listed(model_dir, *name)
        shutil.copy(model / DATA, model / "mnist_model-3000.data-00000-of-00001")
        return steps

    monkeypatch.setattr(mnistkit.checkpoints, "checkpoint_steps", list_then_save_begins)
    assert mnistkit.checkpoints.latest(str(model)) == f"{model}/mnist_model-2000"
    monkeypatch.undo()
    assert mnistkit.checkpoints.latest(str(model)) == f"{model}/mnist_model-2000"  # the unfinished save is passed over


# ---------------------------------------------------------------- the Python API, called again in one process

def test_every_entry_point_can_be_called_again_in_the_same_process(sample_workdir, tmp_path, picture):
    data, model = sample_workdir / "data", tmp_path / "model"
    assert mnist_backward.backward(30, data_dir=str(data), model_dir=str(model), log=lambda *a: None,
                                   quiet=True) == 30
    assert mnist_backward.backward(60, data_dir=str(data), model_dir=str(model), log=lambda *a: None,
                                   quiet=True) == 60
    from tf_compat import tf
    names = [name for name, _ in tf.train.list_variables(str(model / "mnist_model-60"))]
    assert names == ["b1", "b1/ExponentialMovingAverage", "b2", "b2/ExponentialMovingAverage", "global_step",
                     "w1", "w1/ExponentialMovingAverage", "w2", "w2/ExponentialMovingAverage"]

    test_path = str(data / "mnist_test.tfrecords")
    first = mnist_test.evaluate(str(model / "mnist_model-60"), test_path)
    assert mnist_test.evaluate(str(model / "mnist_model-60"), test_path) == first
    assert mnist_test.test(str(model), str(data), once=True, log=lambda *a: None) == first

    outputs = []
    for _ in range(2):
        lines = []
        assert mnist_app.application([str(picture)], str(model), out=lines.append) == 0
        predictor = mnist_app.Predictor(str(model))
        outputs.append((lines, int(predictor.predict(mnist_app.pre_pic(str(picture))).argmax())))
    assert outputs[0] == outputs[1]


@pytest.mark.quick
def test_signatures_list_each_folder_once_and_tell_each_checkpoints_files(tmp_path, monkeypatch):
    # The board's playback once listed the history folder once per snapshot (checkpoints.signature each)
    folder = tmp_path / "history"
    folder.mkdir()
    names = ["m-1.index", "m-1.data-00000-of-00001", "m-10.index", "m-10.meta", "m-1x.index", "other.index"]
    for size, name in enumerate(names, start=1):
        (folder / name).write_bytes(b"x" * size)
    (folder / "m-2").write_bytes(b"v1")  # a V1 checkpoint: the one file named by its prefix
    (folder / "m-1.d").mkdir()  # a folder under a checkpoint's name is listed, as glob lists it
    prefixes = [str(folder / p) for p in ("m-1", "m-10", "m-2", "m-3")] + [str(tmp_path / "gone" / "m-1")]

    def stat(name):
        info = os.stat(folder / name)
        return (name, info.st_size, info.st_mtime_ns)
    listed = []
    scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listed.append(path) or scandir(path))
    found = mnistkit.checkpoints.signatures(prefixes)
    assert sorted(listed) == sorted([str(folder), str(tmp_path / "gone")])  # each folder once
    assert found == {prefixes[0]: tuple(stat(n) for n in ("m-1.d", "m-1.data-00000-of-00001", "m-1.index")),
                     prefixes[1]: (stat("m-10.index"), stat("m-10.meta")),
                     prefixes[2]: (stat("m-2"),), prefixes[3]: (), prefixes[4]: ()}
    assert all(mnistkit.checkpoints.signature(p) == found[p] for p in prefixes)  # one checkpoint: the same answer
    (folder / "m-10.meta").write_bytes(b"written again, longer")
    assert mnistkit.checkpoints.signature(prefixes[1]) != found[prefixes[1]]

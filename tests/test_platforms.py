"""What Windows and macOS do differently, simulated on Linux: no fork, no SIGKILL/SIGTERM for stopping a
task, renames and deletes refused while another process holds a file (see docs/install.md for what was
only read from the platforms' documentation)."""
import os
import signal
import sys

import pytest

from conftest import new_saver, save_checkpoint

import mnist_cluster
import mnist_generateds
import mnistkit.checkpoints
import mnistkit.saving
import mnistkit.files
import mnistkit.folders
import mnistkit.writer
from mnistkit.errors import DataError
from tf_compat import tf


# ---------------------------------------------------------------- the generator's processes without fork

@pytest.mark.parametrize("platform, methods, expected", [
    ("linux", ["fork", "spawn", "forkserver"], "fork"),
    ("linux", ["spawn"], "spawn"),  # a Python built without fork
    ("win32", ["spawn"], "spawn"),
    ("darwin", ["fork", "spawn", "forkserver"], "spawn"),  # fork after TensorFlow's import is unsafe there
])
def test_the_decoding_processes_start_without_fork_off_linux(monkeypatch, platform, methods, expected):
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setattr(mnistkit.writer.multiprocessing, "get_all_start_methods", lambda: methods)
    assert mnistkit.writer.start_method() == expected


def test_spawned_decoding_processes_write_the_same_records(sample_workdir, tmp_path, monkeypatch):
    monkeypatch.setattr(mnistkit.writer, "start_method", lambda: "spawn")  # as on Windows and macOS
    monkeypatch.setattr(mnistkit.writer, "CHUNK_SIZE", 250)  # chunks for both processes
    images = str(sample_workdir / "mnist_data_jpg" / "mnist_test_jpg_2000")
    labels = str(sample_workdir / "mnist_data_jpg" / "mnist_test_jpg_2000.txt")
    assert mnist_generateds.write_tfRecord(str(tmp_path / "t.tfrecords"), images, labels, workers=2) == 2000
    assert (tmp_path / "t.tfrecords").read_bytes() == (sample_workdir / "data" / "mnist_test.tfrecords").read_bytes()


# ---------------------------------------------------------------- stopping cluster tasks

class FakeTask:
    """A task process that records how it was asked to stop."""

    def __init__(self):
        self.calls = []

    def poll(self):
        return None

    def send_signal(self, signum):
        self.calls.append(("signal", signum))

    def kill(self):
        self.calls.append(("kill",))


@pytest.mark.parametrize("name, stop", [("posix", signal.SIGTERM), ("nt", "CTRL_BREAK_EVENT")])
def test_the_launcher_asks_tasks_to_stop_the_way_their_platform_lets_them_save(monkeypatch, name, stop):
    if stop == "CTRL_BREAK_EVENT":  # Windows' only signal that a task can catch and save on
        monkeypatch.setattr(signal, "CTRL_BREAK_EVENT", 1, raising=False)
        stop = signal.CTRL_BREAK_EVENT
    monkeypatch.setattr(os, "name", name)
    cluster = mnist_cluster.Cluster.__new__(mnist_cluster.Cluster)
    cluster.procs = {"worker 0": FakeTask(), "worker 1": FakeTask(), "ps 0": FakeTask()}
    cluster.request_stop("worker")
    cluster.kill("worker")
    for worker in ("worker 0", "worker 1"):
        assert cluster.procs[worker].calls == [("signal", stop), ("kill",)]  # kill(): no SIGKILL by name
    assert cluster.procs["ps 0"].calls == []


# ---------------------------------------------------------------- renames refused while a file is held open

def flaky(real, failures):
    """real(), raising PermissionError (as Windows does for a file held open) the first `failures` times."""
    calls = []

    def operation(*args):
        calls.append(args)
        if len(calls) <= failures:
            raise PermissionError(13, "The process cannot access the file because it is being used by another "
                                      "process", args[-1])
        return real(*args)
    return operation, calls


def test_a_refused_rename_is_tried_again_and_a_lasting_one_is_one_line(sample_workdir, tmp_path, monkeypatch):
    monkeypatch.setattr(mnistkit.files, "RETRY_SECS", 0.3)
    images = str(sample_workdir / "mnist_data_jpg" / "mnist_test_jpg_2000")
    labels = str(sample_workdir / "mnist_data_jpg" / "mnist_test_jpg_2000.txt")
    replace, calls = flaky(os.replace, 3)
    monkeypatch.setattr(os, "replace", replace)
    assert mnist_generateds.write_tfRecord(str(tmp_path / "t.tfrecords"), images, labels, workers=1) == 2000
    assert len(calls) == 4 and os.listdir(tmp_path) == ["t.tfrecords"]
    replace, calls = flaky(os.replace, 10 ** 6)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(DataError) as error:
        mnist_generateds.write_tfRecord(str(tmp_path / "u.tfrecords"), images, labels, workers=1)
    assert str(error.value) == (f"{tmp_path / 'u.tfrecords'}: cannot replace or remove it: another program holds "
                                "it open (The process cannot access the file because it is being used by another "
                                "process); close that program and run again")
    assert os.listdir(tmp_path) == ["t.tfrecords"]  # no temporary left


def test_a_checkpoint_save_refused_for_a_moment_is_tried_again_and_a_lasting_refusal_loses_nothing(tmp_path,
                                                                                                  monkeypatch):
    monkeypatch.setattr(mnistkit.files, "RETRY_SECS", 0.5)
    # Short names: the quoted message is cut at tf_compat.MAX_MESSAGE characters, and tmp_path's length varies
    # (pytest-xdist's workers add popen-gwN/ to it).
    refusal = tf.errors.PermissionDeniedError(None, None, "Failed to rename: m/checkpoint.tmp to m/checkpoint : "
                                                          "Access is denied.")
    with tf.Graph().as_default():
        tf.Variable(1.0, name="w1")
        saver = new_saver(5)
        real_save, calls = saver.save, []

        def save(*args, **kwargs):
            calls.append(1)
            if len(calls) <= limit:
                raise refusal  # TensorFlow's rename over the index file, held open by a reader
            return real_save(*args, **kwargs)

        saver.save = save
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            written, limit = set(), 2
            save_checkpoint(sess, saver, str(tmp_path), 100, written)
            assert len(calls) == 3 and mnistkit.checkpoints.latest(str(tmp_path)) == str(tmp_path / "mnist_model-100")
            limit = 10 ** 6
            with pytest.raises(mnistkit.saving.SaveFailed) as error:
                save_checkpoint(sess, saver, str(tmp_path), 200, written)
    assert str(error.value) == (f"{tmp_path / 'mnist_model-200'}: cannot save checkpoint (Failed to rename: "
                                f"m/checkpoint.tmp to m/checkpoint : Access is denied.); the newest "
                                f"checkpoint is {tmp_path / 'mnist_model-100'}")
    assert mnistkit.checkpoints.checkpoint_steps(str(tmp_path)) == [100] and 200 not in written

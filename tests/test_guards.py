"""Guards that only a fault shows: each test fails when its guard is taken out.

A suspend seen by the wall clock alone, a lock file holding our own PID
(a container's PID 1) or none at all, or a PID given again to a later
process, a temporary file left by a stop right after it was made, the GPU
line, a cluster's free ports outside the kernel's own range.
"""
import os
import subprocess
import sys
import tempfile
import time
import types

import pytest

from mnistkit import folders, learn, training, writer
from mnistkit.errors import DataError

pytestmark = pytest.mark.quick  # every test here: make test-quick


class FakeClocks:
    """time.monotonic, time.time and time.sleep for PauseWatch: each sleep moves both clocks on by its length.

    jumps: {tick number: (monotonic jump, wall jump)} added on that tick;
    after `ticks` sleeps, sleep raises Done to end the watch's loop.
    """

    class Done(Exception):
        pass

    def __init__(self, ticks, jumps):
        self.mono, self.wall, self.tick, self.ticks, self.jumps = 100.0, 1.7e9, 0, ticks, jumps

    def monotonic(self):
        return self.mono

    def time(self):
        return self.wall

    def sleep(self, secs):
        if self.tick == self.ticks:
            raise self.Done()
        self.tick += 1
        mono_jump, wall_jump = self.jumps.get(self.tick, (0, 0))
        self.mono += secs + mono_jump
        self.wall += secs + wall_jump


@pytest.mark.parametrize("jump, counted", [((0, 30), 30), ((30, 30), 30), ((20, 0), 20), ((0, 0), 0)],
                         ids=["suspend: the wall clock alone", "SIGSTOP: both clocks", "monotonic alone", "no pause"])
def test_the_pause_watch_counts_a_jump_of_either_clock(monkeypatch, jump, counted):
    clocks = FakeClocks(ticks=6, jumps={3: jump})
    monkeypatch.setattr(training, "time", clocks)
    watch = training.PauseWatch()  # its loop run here, not in a thread
    with pytest.raises(FakeClocks.Done):
        watch.run()
    assert watch.paused == pytest.approx(counted)


def test_a_lock_holding_our_own_pid_is_ours_to_take(tmp_path, monkeypatch):
    """In a container every run is PID 1, alive: a lock naming it is what an earlier run of ours left."""
    monkeypatch.setattr(os, "getpid", lambda: 1)
    assert folders.pid_alive(1)
    (tmp_path / folders.LOCK_FILE).write_text("1\n")
    with folders.FolderLock(str(tmp_path), "--data-dir"):
        assert folders.lock_owner(str(tmp_path / folders.LOCK_FILE)) == 1
    assert not (tmp_path / folders.LOCK_FILE).exists()


def test_a_lock_of_another_live_process_is_refused(tmp_path):
    (tmp_path / folders.LOCK_FILE).write_text(f"{os.getppid()}\n")
    with pytest.raises(DataError, match=rf"another process \(pid {os.getppid()}\) is writing this folder; wait for "
                                        "it or use another --data-dir"):
        folders.FolderLock(str(tmp_path), "--data-dir").__enter__()


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="a process's start is read from Linux's /proc")
def test_a_pid_given_again_to_a_later_process_holds_neither_the_lock_nor_the_staging_folder(tmp_path, monkeypatch):
    """Linux hands out its 32,768 PIDs (pid_max) again in the course of a test run: before, the
    lock or staging folder of a killed writer whose PID a later process got was taken for that process's, "is
    writing this folder" (a test of a killed learn's leftovers could fail so)."""
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        lock, temp = tmp_path / "model" / folders.LOCK_FILE, tmp_path / "temp"
        lock.parent.mkdir()
        staging = temp / f"{learn.STAGING_PREFIX}{later.pid}-abc"
        staging.mkdir(parents=True)
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        lock.write_text(f"{later.pid}\ntraining\npython mnist_backward.py\n")
        for written in (lock, staging):  # as the killed writer left them, an hour before the later process started
            os.utime(written, (time.time() - 3600, time.time() - 3600))
        assert folders.pid_alive(later.pid) and not folders.pid_alive(later.pid, since=time.time() - 3600)
        assert folders.pid_alive(later.pid, since=time.time())  # written since it started: it may be its owner
        assert learn.leftovers([str(lock.parent)]) == [
            f"note: removed {staging}, the staging folder of a learn whose process (pid {later.pid}) is gone",
            f"note: removed {lock}, the lock of a process that is gone (`python mnist_backward.py`, pid {later.pid}, "
            "training)"]
        lock.write_text(f"{later.pid}\ntraining\n")
        os.utime(lock, (time.time() - 3600, time.time() - 3600))
        with folders.FolderLock(str(lock.parent), "--model-dir", "training"):  # taken over silently
            assert folders.lock_owner(str(lock)) == os.getpid()
        lock.write_text(f"{later.pid}\ntraining\n")  # written now: a live owner's, refused as ever
        with pytest.raises(DataError, match=rf"another process \(pid {later.pid}\) is writing this folder"):
            folders.FolderLock(str(lock.parent), "--model-dir").__enter__()
    finally:
        later.kill()
        later.wait()


@pytest.mark.parametrize("content", ["", "\n", "garbled", "-1", "0"])
def test_a_lock_without_a_pid_is_stale_once_it_is_old_and_waited_for_until_then(tmp_path, monkeypatch, content):
    slept = []

    class Clock:  # the time module, as mnistkit.folders sees it, with its sleeps counted
        def __getattr__(self, name):
            return getattr(time, name)

        def sleep(self, seconds):
            slept.append(seconds)
            time.sleep(seconds)
    monkeypatch.setattr(folders, "time", Clock())
    monkeypatch.setattr(folders, "LOCK_WRITE_SECS", 60)  # a wait would be a minute
    lock = tmp_path / folders.LOCK_FILE
    lock.write_text(content)
    old = time.time() - 100
    os.utime(lock, (old, old))  # a generator killed between creating the lock and writing its PID, long ago
    with folders.FolderLock(str(tmp_path), "--data-dir"):
        assert not slept  # taken at once, without a wait (not a time: a loaded machine passes too)
    monkeypatch.setattr(folders, "LOCK_WRITE_SECS", 0.5)
    lock.write_text(content)  # just made: its writer may be about to write the PID
    start = time.monotonic()
    with folders.FolderLock(str(tmp_path), "--data-dir"):
        assert time.monotonic() - start >= 0.45
    assert folders.lock_owner(str(lock)) is None


@pytest.mark.parametrize("pid", [0, -1, -os.getpid()], ids=["0", "-1", "-own"])  # ids alike in each xdist worker
def test_no_pid_below_one_is_alive(pid):
    assert not folders.pid_alive(pid)  # os.kill(-1, 0) would succeed: it signals every process we may signal


def test_a_temporary_file_made_just_before_a_stop_is_removed(tmp_path, monkeypatch):
    """mkstemp made the file, then the run was stopped before its name was kept: the PID in the name finds it."""
    real = writer.tempfile.mkstemp

    def made_then_stopped(*args, **kwargs):
        fd, path = real(*args, **kwargs)
        os.close(fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(writer.tempfile, "mkstemp", made_then_stopped)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "keep.txt").write_text("the user's")
    with pytest.raises(KeyboardInterrupt):
        with writer.Staging(str(data_dir), log=lambda line: None) as staging:
            with writer.TemporaryOutputs(staging.path("mnist_train.tfrecords")):
                pass
    assert sorted(os.listdir(data_dir)) == ["keep.txt"]


@pytest.mark.parametrize("seen, expected", [({"GPU": ["/physical_device:GPU:0"]}, "GPU:0"), ({}, "CPU"),
                                            ({"CPU": ["/physical_device:CPU:0"]}, "CPU")])
def test_the_device_line_asks_tensorflow_for_gpu_devices(monkeypatch, tmp_path, seen, expected):
    monkeypatch.setattr(training.tf.config, "list_physical_devices", lambda kind=None: seen.get(kind, []))
    lines = []
    settings = types.SimpleNamespace(log=lines.append, steps=10, model_dir=str(tmp_path), summary_every=100,
                                     batch_size=200, steps_per_run=1, quiet=True)
    with training.running(settings, types.SimpleNamespace(examples=8000, where="data"), None, 0) as run:
        assert run.chief and run.progress.step == 0
    assert lines == [f"training on 8000 records from data; target global_step 10; running on {expected}"]


@pytest.mark.skipif(not os.path.exists("/proc/sys/net/ipv4/ip_local_port_range"), reason="Linux's port range")
def test_a_clusters_free_ports_are_none_the_kernel_hands_out_itself():
    """Before: ports bound to port 0 and released, from the kernel's own range, which another process's server on
    port 0 or the near end of any connection could take before the task bound it (the tests run many of both)."""
    import socket
    import mnist_cluster
    ports = mnist_cluster.free_ports(20)
    assert len(set(ports)) == 20
    assert all(mnist_cluster.OWN_PORTS_FROM <= port < mnist_cluster.own_ports_below() for port in ports), ports
    for port in ports:  # free: each can be listened on
        with socket.socket() as s:
            s.bind((mnist_cluster.HOST, port))
            s.listen()

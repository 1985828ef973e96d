"""SIGHUP, a terminal closed under a run (issue #53 §9, more cases of "a stop signal saves and ends it").

A terminal window closed (or an ssh connection dropped) sends SIGHUP to the run in it; its default ends a trainer at
once: the steps since its last checkpoint lost, its folder's lock left, status 129 and not a word. SIGHUP is a stop
signal as SIGINT and SIGTERM are: the trainer saves, ends with 129, and its last line says so; a terminal that has
gone takes no more writes (EIO), so the run's output after SIGHUP goes to the null device where it was that
terminal (which isatty no longer calls a terminal: a character device). The board's server stops on SIGHUP as on
SIGTERM (uvicorn handles only those two): its learn stopped, `SIGHUP: stopped`, 129. A run started under `nohup`
(SIGHUP ignored) keeps ignoring it.
"""
import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, ended, wait_for, wait_limit
from test_server_faults import nothing_half_written
from mnistkit import folders

STOP_SIGNALS = "from mnistkit.errors import STOP_SIGNALS; print(sorted(int(s) for s in STOP_SIGNALS))"


@pytest.mark.quick
@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on Windows")
def test_sighup_is_a_stop_signal_unless_the_run_was_started_to_ignore_it():
    def stop_signals(ignored):
        preexec = (lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)) if ignored else (
            lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
        out = subprocess.run([sys.executable, "-c", STOP_SIGNALS], cwd=ROOT, capture_output=True, text=True,
                             preexec_fn=preexec, timeout=wait_limit(60))
        assert out.returncode == 0, out.stderr
        return eval(out.stdout)
    assert int(signal.SIGHUP) in stop_signals(ignored=False)
    assert int(signal.SIGHUP) not in stop_signals(ignored=True) and int(signal.SIGINT) in stop_signals(ignored=True)


@pytest.fixture(autouse=True)
def sighup_as_a_terminal_gives_it():
    """SIGHUP at its default in this worker for each test, as a shell in a terminal starts a run: the runs these
    tests start inherit it, and a suite itself run under `nohup` (SIGHUP ignored, which a child keeps) would
    otherwise see each trainer rightly go on through the SIGHUP sent to it."""
    if not hasattr(signal, "SIGHUP"):
        yield
        return
    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, before)


def newest_step(model):
    newest = folders.latest(str(model))
    return int(newest.rsplit("-", 1)[1]) if newest else None


@pytest.mark.long
@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on Windows")
def test_a_sighup_to_a_trainer_logging_to_a_file_saves_and_ends_it_with_129(trained_copy):
    before = newest_step(trained_copy / "model")
    log = open(trained_copy / "train.log", "w+", encoding="utf-8")
    child = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_backward.py"), "--steps", "1000000"],
                             cwd=trained_copy, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "After " in (trained_copy / "train.log").read_text(encoding="utf-8"),
                 "the trainer's first step line", process=child)
        child.send_signal(signal.SIGHUP)
        ended(child, "mnist_backward.py after SIGHUP", 120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        log.close()
    lines = (trained_copy / "train.log").read_text(encoding="utf-8").splitlines()
    assert child.returncode == 128 + signal.SIGHUP, (child.returncode, lines[-5:])
    step = newest_step(trained_copy / "model")
    assert lines[-1].startswith("SIGHUP: stopped at step ") and lines[-1].endswith(f"mnist_model-{step}"), lines[-3:]
    assert step > before
    nothing_half_written(str(trained_copy / "model"))


def on_a_terminal_of_its_own():
    """preexec_fn: the child leads a new session whose controlling terminal is its stdin (a pty's slave)."""
    os.setsid()
    os.close(os.open(os.ttyname(0), os.O_RDWR))  # the first terminal a session leader opens becomes its own


@pytest.mark.long
@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on Windows")
def test_a_trainer_whose_terminal_is_closed_saves_and_ends_with_129(trained_copy):
    before = newest_step(trained_copy / "model")
    master, slave = pty.openpty()
    child = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_backward.py"), "--steps", "1000000"],
                             cwd=trained_copy, stdin=slave, stdout=slave, stderr=slave,
                             preexec_fn=on_a_terminal_of_its_own)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + wait_limit(300)
        while b"After " not in seen:  # the first step line: the trainer is in its loop
            assert time.monotonic() < deadline and child.poll() is None, f"no step line: {seen[-500:]!r}"
            if select.select([master], [], [], 1)[0]:
                seen += os.read(master, 65536)
        os.close(master)  # the terminal closes: the kernel sends SIGHUP to its session's leader
        master = None
        ended(child, "mnist_backward.py after its terminal closed", 120)
    finally:
        if master is not None:
            os.close(master)
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 128 + signal.SIGHUP, child.returncode
    assert newest_step(trained_copy / "model") > before  # saved: the steps since the last checkpoint not lost
    nothing_half_written(str(trained_copy / "model"))


@pytest.mark.long
@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on Windows")
def test_a_sighup_to_the_board_stops_it_as_sigterm_does(trained_copy):
    from test_board import Server
    server = Server(trained_copy)
    assert server.stop(signal.SIGHUP) == 128 + signal.SIGHUP, server.stderr()[-500:]
    assert server.stderr().rstrip("\n").splitlines()[-1] == "SIGHUP: stopped", server.stderr()[-500:]
    nothing_half_written(str(trained_copy / "model"))

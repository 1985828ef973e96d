"""More cases of "SIGINT ends it, exit 130, nothing half-written" (issue #53 §9), beyond test_server_faults.py's.

A process that ends at once (tf_compat.end_at_once: a stop during TensorFlow's import, a cluster's time-out, a
second Ctrl-C on the board) leaves no folder lock of its own behind: mnist_generateds.py and mnist_learn.py took
their folder's lock before TensorFlow was imported, and a Ctrl-C then left data/.mnist.lock or model/.mnist.lock.
SIGINT at 0.2, 0.5, 1 and 2 s after mnist_generateds.py, mnist_learn.py and mnist_test.py start ends each with
130 and nothing half-written (the trainers and the exporter: test_server_faults.py).
"""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, copy_into, ended, read_line, running, wait_for, wait_limit
from test_board_learn import kept_input
from test_server_faults import ctrl_c_after, nothing_half_written
from mnistkit import folders, keep

HELD_LOCK = """\
import hashlib, sys, time
sys.path.insert(0, {root!r})
import tf_compat
from mnistkit import distributed, folders
folders.FolderLock({folder!r}, "--model-dir", "a test").__enter__()
print("locked", flush=True)
{call}
"""
ENDINGS = {  # how the process ends at once, while it holds the lock: (the code, its status, its last line)
    "a Ctrl-C during TensorFlow's import": (
        'tf_compat.holding_signals(lambda: (print("inside", flush=True), hashlib.pbkdf2_hmac("sha256", b"x", b"y", '
        '10 ** 9)))', 130,
        "SIGINT: stopped while TensorFlow was imported; nothing saved"),
    "a cluster's time-out": ('with distributed.deadline(0.5, "the cluster did not answer"):\n    time.sleep(600)', 1,
                             "error: the cluster did not answer"),
}


@pytest.mark.quick
@pytest.mark.parametrize("how", list(ENDINGS))
def test_a_process_that_ends_at_once_leaves_no_lock_of_its_own(how, tmp_path):
    call, status, said = ENDINGS[how]
    script = tmp_path / "held.py"
    script.write_text(HELD_LOCK.format(root=ROOT, folder=str(tmp_path), call=call), encoding="utf-8")
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert read_line(child, "locked") == "locked\n"
        assert (tmp_path / folders.LOCK_FILE).exists()
        if status == 130:  # once inside the call (before: a sleep of 0.5 s, then the signal)
            assert read_line(child, "inside the call") == "inside\n"
            child.send_signal(signal.SIGINT)
        _, err = ended(child, f"the process holding a lock, after {how}", 90)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == status and err.strip().splitlines()[-1] == said, err
    assert not (tmp_path / folders.LOCK_FILE).exists()


def generate(sample_workdir, trained_workdir, work):
    copy_into(work, sample_workdir, "mnist_data_jpg")
    return ["--no-download"]


def learn(sample_workdir, trained_workdir, work):
    copy_into(work, trained_workdir, "data", "model")
    store = keep.KeptDigits(str(work / "my_digits"))
    for seed in range(5):
        store.keep(np.array(kept_input(seed), np.uint8).reshape(28, 28), 3)
    return ["--steps", "100000"]


def score(sample_workdir, trained_workdir, work):
    copy_into(work, trained_workdir, "data", "model")
    return ["--once"]


SCRIPTS = {"mnist_generateds.py": generate, "mnist_learn.py": learn, "mnist_test.py": score}


@pytest.mark.long
@pytest.mark.parametrize("delay", [0.2, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("script", list(SCRIPTS))
def test_ctrl_c_early_in_the_generator_the_learn_or_the_test_ends_it_with_130_and_nothing_half_written(
        script, delay, sample_workdir, trained_workdir, tmp_path):
    work = tmp_path / "work"
    args = SCRIPTS[script](sample_workdir, trained_workdir, work)
    ctrl_c_after(delay, script, args, work)
    for folder in ("data", "model"):
        nothing_half_written(os.path.join(work, folder))


DEAF_CHILD = """\
import sys
sys.path.insert(0, {root!r})
from mnistkit import learn
learn.STOP_GRACE_SECS = 1  # the grace, shortened for the test
child = ("import os, signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
         "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('pid', os.getpid(), flush=True); time.sleep(600)")
try:
    learn.run(["-c", child], learn.Watch(out=lambda line: print(line, flush=True)), "failed")
except KeyboardInterrupt:
    print("stopped", flush=True)
    sys.exit(130)
"""


def test_a_ctrl_c_to_mnist_learn_kills_a_script_deaf_to_sigterm_after_the_grace(tmp_path):
    # mnist_learn.py's own run of a course script: on Ctrl-C it sent SIGTERM and then waited for the script for ever.
    script = tmp_path / "deaf.py"
    script.write_text(DEAF_CHILD.format(root=ROOT), encoding="utf-8")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child_pid, child_left = None, False
    try:
        line = read_line(parent, "the parent's first line")
        assert line.startswith("pid "), line
        child_pid = int(line.split()[1])
        parent.send_signal(signal.SIGINT)  # to the learn alone, as a signal to its process
        out, err = ended(parent, "mnist_learn's run after Ctrl-C, its script deaf to SIGTERM", 120)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.communicate()
        if child_pid is not None:
            # Killed with its tether (mnistkit/tether.py), the script is no child of this process: it may be a
            # zombie a moment, or for good where no init reaps it. Not running is what counts.
            try:
                wait_for(lambda: not running(child_pid), "the deaf script's end", 30)
            except AssertionError:
                child_left = True  # the deaf script outlived the learn: ended here, and the test fails below
                os.kill(child_pid, signal.SIGKILL)
    assert parent.returncode == 130 and out.splitlines()[-1] == "stopped", (out, err)
    assert not child_left, "the script deaf to SIGTERM outlived the learn"



# A stderr whose first write sends this process a SIGTERM: a second stop signal while the first's line is
# printed (a new user's Ctrl-C to mnist_learn.py: the terminal's SIGINT, then the learn's SIGTERM to its trainer).
SECOND_STOP = """\
import os, signal, sys
sys.path.insert(0, {root!r})
from mnistkit import cli
from mnistkit.errors import Interrupted


class SignalledOnWrite:
    sent = False

    def write(self, text):
        if not self.sent:
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)
        return sys.__stdout__.write(text)

    def flush(self):
        sys.__stdout__.flush()

    def isatty(self):
        return False


def work():
    raise KeyboardInterrupt() if {stop!r} == "KeyboardInterrupt" else Interrupted(signal.SIGINT, "SIGINT: saved")


before = signal.getsignal(signal.SIGTERM)
sys.stderr = SignalledOnWrite()
status = cli.exit_status(work)
sys.stderr = sys.__stderr__
print("handler back" if signal.getsignal(signal.SIGTERM) is before else "handler lost")
sys.exit(status)
"""


@pytest.mark.quick
@pytest.mark.parametrize("stop, line", [("KeyboardInterrupt", "SIGINT: stopped"), ("Interrupted", "SIGINT: saved")])
def test_a_second_stop_signal_while_the_first_ones_line_is_printed_is_no_traceback(stop, line):
    result = subprocess.run([sys.executable, "-c", SECOND_STOP.format(root=ROOT, stop=stop)], capture_output=True,
                            encoding="utf-8", timeout=wait_limit(120))
    assert (result.returncode, result.stdout, result.stderr) == (130, f"{line}\nhandler back\n", "")


# A learn (mnist_learn.py's cli.exit_status round learn.run) whose script says which stop signal reached it.
TOLD_CHILD = """\
import sys
sys.path.insert(0, {root!r})
from mnistkit import cli, learn
child = ("import os, signal, sys, time\\n"
         "def told(signum, frame):\\n"
         "    print(signal.Signals(signum).name + ': stopped at step 9021', flush=True)\\n"
         "    sys.exit(128 + signum)\\n"
         "signal.signal(signal.SIGINT, told)\\n"
         "signal.signal(signal.SIGTERM, told)\\n"
         "print('pid', os.getpid(), flush=True)\\n"
         "time.sleep(600)")
watch = learn.Watch(out=lambda line: print(line, flush=True))
sys.exit(cli.exit_status(lambda: learn.run(["-c", child], watch, "failed; model is unchanged"),
                         interrupted="stopped; model is unchanged"))
"""


@pytest.mark.quick
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_learns_script_is_told_the_stop_the_user_gave(signum, tmp_path):
    """A Ctrl-C (the terminal's SIGINT, which the script in its own process group never gets) reaches the learn's
    script as SIGINT, a `kill` as SIGTERM: its line names what the user did. Before: `^CSIGTERM: stopped at step
    9021` then `SIGINT: stopped; model is unchanged`, a SIGTERM the user never sent."""
    script = tmp_path / "told.py"
    script.write_text(TOLD_CHILD.format(root=ROOT), encoding="utf-8")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)  # its own group, as a terminal's foreground job
    try:
        line = read_line(parent, "the script's first line")
        assert line.startswith("pid "), line
        os.killpg(parent.pid, signum)  # Ctrl-C, or `kill` to the whole job: the learn's script has a group of its own
        out, err = ended(parent, "the learn after its stop", 120)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.communicate()
    name = signal.Signals(signum).name
    assert parent.returncode == 128 + signum, (out, err)
    assert out.splitlines()[-1] == f"{name}: stopped at step 9021", (out, err)
    assert err.splitlines()[-1] == f"{name}: stopped; model is unchanged", (out, err)

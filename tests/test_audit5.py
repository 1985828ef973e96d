"""The fifth audit of issue #53's kinds (§1, §3, §4, §9): cases beyond the first four audits, each a fault found
by trying it for real (docs/tests.md, "The fifth audit").

- A learn's script that ignores SIGTERM and has started processes of its own that ignore it too (they hold its
  output pipe): once the grace has passed every one of them is killed, on mnist_learn.py's Ctrl-C and on the
  board's stop alike, and the learn ends.
"""
import os
import signal
import subprocess
import sys
import threading

import pytest

from conftest import ROOT, ended, wait_for, wait_limit
from mnistkit import learn

# A course script deaf to SIGTERM (and SIGINT) that started a process deaf to both, which holds its output pipe.
DEAF_WITH_A_CHILD = ("import os, signal, subprocess, sys, time\n"
                     "for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_IGN)\n"
                     "child = subprocess.Popen([sys.executable, '-c', 'import signal, time\\n'\n"
                     "    'for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_IGN)\\n'\n"
                     "    'time.sleep(600)'])\n"
                     "print('pids', os.getpid(), child.pid, flush=True)\n"
                     "time.sleep(600)\n")

CTRL_C_TO_THE_LEARN = """\
import sys
sys.path.insert(0, {root!r})
from mnistkit import learn
learn.STOP_GRACE_SECS = 1  # the grace, shortened for the test
try:
    learn.run(["-c", {script!r}], learn.Watch(out=lambda line: print(line, flush=True)), "failed")
except KeyboardInterrupt:
    print("stopped", flush=True)
    sys.exit(130)
"""


def running(pid):
    """Whether process `pid` runs (a zombie, ended and not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def end_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.quick
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_ctrl_c_to_mnist_learn_kills_a_deaf_script_and_the_processes_it_started(tmp_path):
    script = tmp_path / "learn_run.py"
    script.write_text(CTRL_C_TO_THE_LEARN.format(root=ROOT, script=DEAF_WITH_A_CHILD), encoding="utf-8")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = []
    try:
        line = parent.stdout.readline()
        assert line.startswith("pids "), line
        pids = [int(n) for n in line.split()[1:]]
        parent.send_signal(signal.SIGINT)
        out, err = ended(parent, "mnist_learn's run after Ctrl-C, its script and the script's child deaf", 30)
        assert parent.returncode == 130 and out.splitlines()[-1] == "stopped", (out, err)
        wait_for(lambda: not any(map(running, pids)), "the script and its child killed", 30)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.communicate()
        end_all(pids)


@pytest.mark.quick
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_the_boards_stop_kills_a_deaf_script_and_the_processes_it_started_and_the_learn_ends():
    # the board's Learning.end: Watch.stop(), then Watch.stop(kill=True) once the grace has passed
    lines, failed = [], []
    watch = learn.Watch(out=lines.append)

    def learning():
        try:
            learn.run(["-c", DEAF_WITH_A_CHILD], watch, "failed")
        except learn.LearnStopped as e:
            failed.append(e)

    thread = threading.Thread(target=learning, daemon=True)
    thread.start()
    pids = []
    try:
        said = wait_for(lambda: next((line for line in lines if line.startswith("pids ")), None), "the script's pids",
                        60)
        pids = [int(n) for n in said.split()[1:]]
        watch.stop()
        thread.join(0.5)
        assert thread.is_alive()  # deaf to SIGTERM
        watch.stop(kill=True)
        thread.join(wait_limit(30))
        assert not thread.is_alive(), "the learn still waits on the output of a process its script started"
        assert len(failed) == 1
        wait_for(lambda: not any(map(running, pids)), "the script and its child killed", 30)
    finally:
        end_all(pids)


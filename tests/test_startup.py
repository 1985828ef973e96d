"""Ctrl-C in a script's first seconds, while its modules (TensorFlow) import: one line, status 130, no
traceback."""
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, ended, wait_limit

SCRIPTS = ["mnist_generateds.py", "mnist_backward.py", "mnist_lenet5_backward.py", "mnist_test.py",
           "mnist_lenet5_test.py", "mnist_app.py", "mnist_export.py", "mnist_cluster.py"]


def importing(pid):
    """True once the process has mapped an extension module of site-packages (NumPy's, PIL's): the script's own
    imports have begun, past its first lines and well before they end (about 0.1-0.4 s of 0.6-1.2 s)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "site-packages" in f.read()
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/maps to time the Ctrl-C")
@pytest.mark.parametrize("script", SCRIPTS)
def test_ctrl_c_while_the_modules_import_ends_in_one_line(script, tmp_path):
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, script), "--help"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + wait_limit(60)
        while not importing(proc.pid) and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.005)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = ended(proc, f"{script} after SIGINT", 60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert (proc.returncode, err.strip()) == (130, "SIGINT: stopped")

"""Ctrl-C during mnist_export.py's LiteRT conversions (#53 §9, §11): exit 130, one line, no abort, nothing left.

The conversion runs in the converter's C++ code on a thread of its own (export.interruptible); a stop there
once ended the process through the interpreter's exit, which unwound that thread inside C++ and aborted it
(`terminate called after throwing an instance of ''`, SIGABRT) about one time in ten on a loaded machine.
"""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, ended, wait_for
from mnistkit import folders

ABORT_TEXT = ("terminate called", "FATAL", "Aborted", "core dumped", "Traceback")
# (which conversion's line the signal waits for, seconds after it): both conversions, at several moments in them
MOMENTS = [("mnist.tflite", 0.0), ("mnist.tflite", 0.1), ("mnist.tflite", 0.3), ("mnist.tflite", 0.6),
           ("mnist_int8.tflite", 0.0), ("mnist_int8.tflite", 0.1)]


def export_left(export_dir):
    """Every file and folder under export_dir (relative paths, sorted); [] when it is not there."""
    found = []
    for top, dirs, names in os.walk(export_dir):
        found += [os.path.relpath(os.path.join(top, n), export_dir) for n in dirs + names]
    return sorted(found)


@pytest.mark.long
@pytest.mark.parametrize("conversion, delay", MOMENTS)
def test_ctrl_c_during_a_conversion_ends_the_export_with_130_one_line_and_nothing_written(
        conversion, delay, trained_copy):
    export_dir = os.path.join(trained_copy, "export")
    child = subprocess.Popen([sys.executable, "-u", os.path.join(ROOT, "mnist_export.py")], cwd=trained_copy,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(iter(child.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_for(lambda: any(line.startswith(f"converting to LiteRT: {conversion}") for line in lines),
                 f"mnist_export.py's line `converting to LiteRT: {conversion}`", 300, every=0.01, process=child)
        time.sleep(delay)  # a moment inside the conversion (or after it, on a fast machine: then checked as such)
        child.send_signal(signal.SIGINT)
        _, err = ended(child, "mnist_export.py after SIGINT", 120)  # generous: the end state is checked, not the time
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    reader.join(timeout=10)
    for text in ABORT_TEXT:
        assert text not in err, (conversion, delay, child.returncode, err[-2000:])
    assert not os.path.exists(os.path.join(export_dir, folders.LOCK_FILE)), export_left(export_dir)
    if any(line.startswith("wrote ") for line in lines):  # the export was done before the signal came
        assert child.returncode in (0, 130, -signal.SIGINT), (child.returncode, err[-2000:])
        assert {"mnist/1/saved_model.pb", "mnist.tflite", "mnist_int8.tflite"} <= set(export_left(export_dir))
        return
    assert child.returncode == 130, (conversion, delay, child.returncode, err[-2000:])
    assert err.strip().splitlines()[-1] == "SIGINT: stopped; nothing written", err[-2000:]
    # nothing half-written: no staging folder, no .tflite, no version; at most the empty folder mnist/ taken back
    assert export_left(export_dir) == [], export_left(export_dir)

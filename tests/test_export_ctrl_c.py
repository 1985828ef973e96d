"""Ctrl-C during mnist_export.py's LiteRT conversions (#53 §9, §11): exit 130, one line, no abort, nothing left;
Ctrl-C as it ends, its export written: 130 and one line, or 0 when the process had ended, never -2.

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

from conftest import ROOT, joined, wait_for
from mnistkit import cli, export

ABORT_TEXT = ("terminate called", "FATAL", "Aborted", "core dumped", "Traceback")
# (which conversion's line the signal waits for, seconds after it): both conversions, at several moments in them
MOMENTS = [("mnist.tflite", 0.0), ("mnist.tflite", 0.1), ("mnist.tflite", 0.3), ("mnist.tflite", 0.6),
           ("mnist_int8.tflite", 0.0), ("mnist_int8.tflite", 0.1)]
END_DELAYS = [0.0, 0.2]  # seconds after the export's last line, `wrote ...`: as it ends, and as Python exits


def export_left(export_dir):
    """Every file and folder under export_dir (relative paths, sorted); [] when it is not there."""
    found = []
    for top, dirs, names in os.walk(export_dir):
        found += [os.path.relpath(os.path.join(top, n), export_dir) for n in dirs + names]
    return sorted(found)


def stopped_export(work, line, delay):
    """Run mnist_export.py in `work`, send it SIGINT `delay` seconds after its stdout line starting with `line`, and
    return (exit status, its stdout lines, its stderr) once it has ended.

    Each pipe is read by a thread of its own to its end, and by nothing else: a `wrote ...` line read by
    communicate() beside the line reader (as before) was missing from the lines, and an export that the signal
    came too late to stop was then checked as one stopped."""
    child = subprocess.Popen([sys.executable, "-u", os.path.join(ROOT, "mnist_export.py")], cwd=work,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, errs = [], []
    readers = [threading.Thread(target=lambda: lines.extend(iter(child.stdout.readline, "")), daemon=True),
               threading.Thread(target=lambda: errs.append(child.stderr.read()), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        wait_for(lambda: any(seen.startswith(line) for seen in lines), f"mnist_export.py's line `{line}`", 300,
                 every=0.01, process=child, output=lambda: "".join(lines[-20:]))
        time.sleep(delay)  # a moment inside the conversion (or after it, on a fast machine: then checked as such)
        child.send_signal(signal.SIGINT)
        # generous: the end state is checked, not the time
        wait_for(lambda: child.poll() is not None, "mnist_export.py to end after SIGINT", 120)
        joined(readers, "the readers of mnist_export.py's output", 60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    err = errs[0]
    for text in ABORT_TEXT:
        assert text not in err, (line, delay, child.returncode, err[-2000:])
    return child.returncode, lines, err


def check_written(export_dir, status, err):
    """The export is all there, nothing of its staging nor its lock left, and a stop after it was said in one line
    naming what was written (status 130), or came after the process had ended (0)."""
    assert status in (0, 130), (status, err[-2000:])  # never -2: killed by the signal itself
    if status == 130:
        assert err.strip().splitlines()[-1] in (
            "SIGINT: stopped; ./export/mnist/1 (SavedModel), ./export/mnist.tflite and ./export/mnist_int8.tflite "
            "written", "SIGINT: stopped"), err[-2000:]
    assert export_left(export_dir) == ["mnist", "mnist.tflite", "mnist/1", "mnist/1/assets.extra",
                                       "mnist/1/assets.extra/mnist_export.json", "mnist/1/saved_model.pb",
                                       "mnist/1/variables", "mnist/1/variables/variables.data-00000-of-00001",
                                       "mnist/1/variables/variables.index", "mnist_int8.tflite"], export_left(export_dir)


@pytest.mark.long
@pytest.mark.parametrize("conversion, delay", MOMENTS)
def test_ctrl_c_during_a_conversion_ends_the_export_with_130_one_line_and_nothing_written(
        conversion, delay, trained_copy):
    export_dir = os.path.join(trained_copy, "export")
    status, lines, err = stopped_export(trained_copy, f"converting to LiteRT: {conversion}", delay)
    if any(line.startswith("wrote ") for line in lines):  # the export was done before the signal came
        check_written(export_dir, status, err)
        return
    assert status == 130, (conversion, delay, status, err[-2000:])
    assert err.strip().splitlines()[-1] == "SIGINT: stopped; nothing written", err[-2000:]
    # nothing half-written: no staging folder, no .tflite, no version, no lock; at most mnist/ taken back
    assert export_left(export_dir) == [], export_left(export_dir)


@pytest.mark.long
@pytest.mark.parametrize("delay", END_DELAYS)
def test_ctrl_c_as_the_export_ends_is_130_and_its_line_or_a_clean_0_never_the_signals_death(delay, trained_copy):
    # The moments after the last line: the session's close (a KeyboardInterrupt raised in its __del__ was printed
    # as ignored, exit 0) and the interpreter's exit (the signal's default action back: killed, -2, no line).
    status, _, err = stopped_export(trained_copy, "wrote ", delay)
    check_written(os.path.join(trained_copy, "export"), status, err)


# ---------------------------------------------------------------- export.stops_of_a_run, in this process

WRITTEN = ("e/mnist/1", "e/mnist.tflite", "e/mnist_int8.tflite")


@pytest.mark.quick
def test_a_stop_before_the_commit_raises_after_it_is_held_to_the_runs_end_then_said_with_what_was_written(
        monkeypatch, capsys):
    monkeypatch.setattr(export, "_COMMITTED", [])
    reached = []

    def work(commit):
        with export.stops_of_a_run():
            if commit:
                export._COMMITTED.append(WRITTEN)
            signal.raise_signal(signal.SIGINT)
            reached.append(commit)  # the session's close, the last line: never cut short after the commit
    assert cli.exit_status(lambda: work(False)) == 130 and reached == []
    assert capsys.readouterr().err == "SIGINT: stopped\n"  # exit_status's line; mnist_export's says nothing written
    assert cli.exit_status(lambda: work(True)) == 130 and reached == [True]
    assert capsys.readouterr().err == ("SIGINT: stopped; e/mnist/1 (SavedModel), e/mnist.tflite and "
                                       "e/mnist_int8.tflite written\n")


@pytest.mark.quick
def test_after_the_run_a_stop_ends_the_process_at_once_until_exit_status_puts_its_handlers_back():
    handlers = []

    def work():
        with export.stops_of_a_run():
            handlers.append(signal.getsignal(signal.SIGINT))
        handlers.append(signal.getsignal(signal.SIGINT))
    before = signal.getsignal(signal.SIGINT)
    assert cli.exit_status(work) == 0
    assert handlers[0] not in (before, export.end_stopped) and handlers[1] is export.end_stopped
    assert signal.getsignal(signal.SIGINT) is before

"""A new user's stumbles (issue #53 §11, the eleventh trial): each test fails on the code before its fix."""
import os
import signal
import subprocess
import sys

import pytest

from conftest import ROOT, ended, read_line

STOPPED_SNIPPET = """\
import os, signal, sys, time
sys.path.insert(0, {root!r})
sys.argv = {argv!r}
import mnistkit.startup
from mnistkit import cli
{before}
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.quick
@pytest.mark.parametrize("argv, before, said", [
    (["mnist_backward.py"], "", "SIGINT: stopped; nothing saved"),
    (["mnist_export.py", "--model-dir", "m"], "", "SIGINT: stopped; nothing saved"),
    (["mnist_app.py", "a.png"], "", "SIGINT: stopped"),
    (["mnist_app.py", "--show-in", "x", "a.png"], "", "SIGINT: stopped; nothing saved"),
    (["mnist_backward.py"], "cli.exit_status(lambda: None)", "SIGINT: stopped"),
], ids=["trainer", "exporter", "app predicting", "app writing its input", "after the work"])
def test_a_stop_in_the_first_second_says_nothing_was_saved_as_tensorflows_import_does(argv, before, said, tmp_path):
    """Fails before the fix: a Ctrl-C in mnist_backward.py's first 0.3 s said `SIGINT: stopped`, at 1.5 s
    `SIGINT: stopped while TensorFlow was imported; nothing saved`: one script, two ways of saying what was written.
    After its work (exit_status returned) a stop no longer claims `nothing saved`."""
    script = tmp_path / "stopped.py"
    script.write_text(STOPPED_SNIPPET.format(root=ROOT, argv=argv, before=before), encoding="utf-8")
    child = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert read_line(child, "ready") == "ready\n"
        child.send_signal(signal.SIGINT)
        _, err = ended(child, "the stopped snippet", 60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert (child.returncode, err) == (130, said + "\n")

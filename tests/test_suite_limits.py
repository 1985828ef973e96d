"""The suite's own limits: a stuck test fails with its stacks and the run goes on; no wait of a test is endless.

A hang once held `make test`'s worker until CI's own limit ended the whole run, with nothing said of where it
was. These check the net under every test (pytest-timeout, set by tests/conftest.py) on a stuck test of a
throwaway file, and the tests' own waits on a script's output (conftest.read_line, ended, joined) on a script
that says nothing, or that ends while a process it started holds its output. And what one test leaves is seen
by no other: its temporary folder, matplotlib's font list made before any test.
"""
import glob
import os
import signal
import subprocess
import sys
import threading

import pytest

from conftest import TEST_LIMIT, ended, joined, read_line, wait_limit

TESTS = os.path.dirname(os.path.abspath(__file__))
STUCK = '''
import threading


def test_stuck():
    threading.Event().wait()  # never set


def test_fine():
    assert 1 + 1 == 2
'''


@pytest.mark.quick
def test_every_test_has_a_limit(request):
    if any(arg.startswith("--timeout") for arg in request.config.invocation_params.args):
        pytest.skip("this run gave its own --timeout")
    assert request.config.getvalue("timeout") >= TEST_LIMIT


def test_a_stuck_test_fails_with_its_stack_and_the_run_goes_on(tmp_path):
    (tmp_path / "test_stuck.py").write_text(STUCK)
    env = {**os.environ, "PYTHONPATH": TESTS + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PYTEST_TIMEOUT", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider",
                           "-n", "2", "--timeout", "2", str(tmp_path / "test_stuck.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=wait_limit(120), env=env)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 failed, 1 passed" in out, out  # once: a worker stuck again on the file would fail it again
    assert "Timeout" in out and "test_stuck.py" in out and "threading.Event().wait()" in out, out  # its stack

# A learn killed in one test leaves its staging folder, named for a PID that is gone; another test's learn sweeps it
LEFT = '''
import os
import subprocess
import sys
import tempfile

from mnistkit import learn


def test_left():
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    os.mkdir(os.path.join(tempfile.gettempdir(), f"{learn.STAGING_PREFIX}{int(ended.stdout)}-abc"))


def test_swept():
    assert os.environ["TMPDIR"] == tempfile.gettempdir() and os.listdir(tempfile.gettempdir()) == []
    assert learn.leftovers(ours=True) == []
'''


def test_what_one_test_leaves_in_the_temporary_folder_no_other_sees(tmp_path):
    (tmp_path / "test_left.py").write_text(LEFT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TESTS, os.path.dirname(TESTS)])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-n", "0",
                           str(tmp_path / "test_left.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=wait_limit(120), env=env)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr


@pytest.mark.quick
def test_matplotlibs_font_list_is_made_before_any_test():
    """Made by a report's script, it said `Matplotlib is building the font cache; this may take a moment.` on
    stderr when that took over 5 s (a fresh, loaded machine): conftest.fonts_listed_once makes it first."""
    folder = os.environ["MPLCONFIGDIR"]
    assert folder.startswith(os.environ["MNISTKIT_CACHE"]), folder  # the tests' own, not the user's
    assert glob.glob(os.path.join(folder, "fontlist-*.json")), os.listdir(folder)


def quiet_script(code):
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.quick
def test_a_script_that_says_nothing_fails_its_read_and_is_ended(monkeypatch):
    monkeypatch.setattr("conftest.wait_limit", lambda seconds: 1.0)
    script = quiet_script("import time; print('ready', flush=True); time.sleep(600)")
    assert read_line(script, "ready") == "ready\n"
    with pytest.raises(AssertionError, match=r"timed out after 1 s waiting for the next line: the process printed "
                                             r"nothing \(killed\)"):
        read_line(script, "the next line")
    assert script.poll() is not None  # killed, not left behind
    ended(script, "the script")


def test_a_script_whose_child_holds_its_output_is_named(monkeypatch, tmp_path):
    monkeypatch.setattr("conftest.wait_limit", lambda seconds: 1.0)
    # the script ends at once; the process it started keeps its stdout and stderr for ten minutes
    pid = tmp_path / "child.pid"
    script = quiet_script("import subprocess, sys; child = subprocess.Popen([sys.executable, '-c', 'import time; "
                          f"time.sleep(600)']); open({str(pid)!r}, 'w').write(str(child.pid))")
    try:
        with pytest.raises(AssertionError, match=r"the script ended \(exit 0\), but a process it started still held "
                                                 r"its output after 1 s"):
            ended(script, "the script")
        assert script.stdout.closed and script.stderr.closed
    finally:
        if pid.exists():
            os.kill(int(pid.read_text()), signal.SIGKILL)


@pytest.mark.quick
def test_threads_that_never_end_fail_the_join(monkeypatch):
    monkeypatch.setattr("conftest.wait_limit", lambda seconds: 1.0)
    never = threading.Event()
    threads = [threading.Thread(target=never.wait, daemon=True) for _ in range(3)]
    for thread in threads:
        thread.start()
    with pytest.raises(AssertionError, match="stuck workers: 3 of 3 threads still running after 1 s"):
        joined(threads, "stuck workers")
    never.set()
    joined(threads, "the same workers, let go")

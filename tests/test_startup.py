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
    said = "stopped" if script == "mnist_app.py" else "stopped; nothing saved"  # the app saves nothing
    assert (proc.returncode, err) == (130, f"SIGINT: {said}\n")  # into a pipe: no blank line before it


# Each writer of a stop line, run alone: (what it runs, the line it writes). tf_compat's is the stop held past
# HELD_STOP_SECS while TensorFlow imports; export's a stop after mnist_export.py's work.
STOP_LINES = {
    "startup": ("import mnistkit.startup, os, signal, time; os.kill(os.getpid(), signal.SIGINT); time.sleep(60)",
                "SIGINT: stopped; nothing saved"),
    "tf_compat": ("import tf_compat; tf_compat._end_now(2, 'stopped while TensorFlow was imported; nothing saved')",
                  "SIGINT: stopped while TensorFlow was imported; nothing saved"),
    "export": ("from mnistkit import export; print(export.stopped_note(), file=open('note', 'w')); "
               "export.end_stopped(2)", None),
    "cli": ("import sys; from mnistkit import cli\ndef work(): raise KeyboardInterrupt\nsys.exit(cli.exit_status(work))",
            "SIGINT: stopped"),
}


def stop_line(code, cwd, terminal):
    """(exit status, what the snippet `code` wrote to stderr): a pipe, or with terminal the far end of a pty."""
    import pty
    code = f"import sys; sys.path.insert(0, {ROOT!r})\n" + code  # the project's modules, from another folder
    if not terminal:
        result = subprocess.run([sys.executable, "-c", code], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, timeout=wait_limit(120))
        return result.returncode, result.stderr
    main, far = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=far)
        os.close(far)
        ended(proc, "the stop line's writer", 120)
        said = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: the writer's side is closed and all was read
                break
            if not chunk:
                break
            said += chunk
    finally:
        os.close(main)
    return proc.returncode, said.decode().replace("\r\n", "\n")


@pytest.mark.quick
@pytest.mark.skipif(os.name == "nt", reason="a pty stands for the terminal")
@pytest.mark.parametrize("terminal", [False, True], ids=["into a log", "on a terminal"])
@pytest.mark.parametrize("writer", STOP_LINES)
def test_a_stop_line_has_no_blank_line_before_it_in_a_log_and_a_line_of_its_own_on_a_terminal(writer, terminal,
                                                                                               tmp_path):
    # `mnist_export.py 2> log` stopped while TensorFlow imported wrote "\nSIGINT: stopped ..." (a new user's trial):
    # the newline that ends a terminal's echoed `^C` is a blank line in a log or a pipe
    code, line = STOP_LINES[writer]
    status, err = stop_line(code, tmp_path, terminal)
    line = line or "SIGINT: " + (tmp_path / "note").read_text().strip()
    assert (status, err) == (130, ("\n" if terminal else "") + line + "\n")



@pytest.mark.quick
@pytest.mark.parametrize("args", [["a.png"], ["--json", "a.png"], ["--serve"], ["--serve", "--port", "0"],
                                  ["--show-input", "x", "a.png"], ["--show-input=x", "a.png"]])
def test_which_app_commands_save_is_one_rule_read_by_both_stop_lines(args, monkeypatch):
    """startup.saves (a stop before the work: `stopped; nothing saved`) and tf_compat.writes (a stop while
    TensorFlow imports) say what mnist_app.py's parsed command does: it saves unless it only predicts pictures.
    Before, mnist_app.py set tf_compat.WRITES from its own parsed flags, a second rule beside startup.saves."""
    import mnist_app
    import tf_compat
    from mnistkit import startup  # its handler: reset after the test (conftest's stop_signals_as_the_run_started)
    parsed = mnist_app.build_parser().parse_args(args)
    monkeypatch.setattr(sys, "argv", [os.path.join(ROOT, "mnist_app.py"), *args])
    assert tf_compat.writes() == startup.saves() == bool(parsed.serve or parsed.show_input)
    monkeypatch.delitem(sys.modules, "mnistkit.startup")  # a script's module imported, no script run: it may save
    assert tf_compat.writes() is True

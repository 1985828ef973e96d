"""The project's errors, and the signals that stop a run.

DataError is bad or missing input (a file, a folder, a checkpoint), ClusterError
a distributed task that cannot go on, Interrupted a run stopped by a signal
after it saved, Stopped a SIGTERM (or SIGHUP) raised where the program is. cli.exit_status
maps them to the process's exit status; every script's main() goes through it.
"""
import os
import signal
import stat
import sys

class DataError(Exception):
    """Bad or missing input data; the message names the file and what to do."""


class ClusterError(Exception):
    """A cluster task cannot go on: a parameter server lost, a step or start-up that never finished."""


class Interrupted(Exception):
    """A run stopped by SIGINT/SIGTERM after saving its work.

    signum: the signal's number; str(): what was saved where.
    """

    def __init__(self, signum, message):
        super().__init__(message)
        self.signum = signum


class Stopped(KeyboardInterrupt):
    """SIGTERM, raised where the program is, as Ctrl-C raises KeyboardInterrupt (see cli.exit_status)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


# The signals that ask a run to stop: Ctrl-C, SIGTERM (kill), on Windows Ctrl-Break, which is how
# mnist_cluster.py stops a task there so that the chief can save, and SIGHUP, which a terminal window closed or an
# ssh connection dropped sends: its default would end a trainer at once, losing the steps since its last checkpoint.
# SIGHUP is not one where the process was started to ignore it (`nohup`: SIG_IGN when this module is imported).
HANGUP = getattr(signal, "SIGHUP", None)
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGBREAK") if hasattr(signal, name)) + (
    (HANGUP,) if HANGUP is not None and signal.getsignal(HANGUP) == signal.SIG_DFL else ())


def off_a_hung_up_terminal(signum):
    """After SIGHUP, point stdout and stderr that are a terminal (a character device) at the null device; else
    nothing.

    The terminal has gone (a closed window, a dropped ssh connection): a
    write to it fails (EIO), which would end a run before it saves. Call it
    from a stop signal's handler. A stream that is a file or a pipe (a log)
    keeps its lines.
    """
    if signum != HANGUP:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            if not stat.S_ISCHR(os.fstat(stream.fileno()).st_mode):  # a hung-up terminal is no tty to isatty (EIO)
                continue
        except (AttributeError, OSError, ValueError):
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, stream.fileno())
            finally:
                os.close(devnull)
        except (AttributeError, OSError, ValueError):
            pass

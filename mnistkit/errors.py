"""The project's errors, and the signals that stop a run.

DataError is bad or missing input (a file, a folder, a checkpoint), ClusterError
a distributed task that cannot go on, Interrupted a run stopped by a signal
after it saved, Stopped a SIGTERM raised where the program is. cli.exit_status
maps them to the process's exit status; every script's main() goes through it.
"""
import signal

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


# The signals that ask a run to stop: Ctrl-C, SIGTERM (kill), and on Windows Ctrl-Break, which is how
# mnist_cluster.py stops a task there so that the chief can save.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGBREAK") if hasattr(signal, name))

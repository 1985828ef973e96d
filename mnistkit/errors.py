"""The project's errors and how a command line ends on them: one line on stderr and an exit status.

DataError is bad or missing input (a file, a folder, a checkpoint), ClusterError
a distributed task that cannot go on, Interrupted a run stopped by a signal
after it saved. exit_status() runs a command's work and maps its end to the
process's exit status; every script's main() goes through it.
"""
import signal
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


def exit_status(work, errors=(DataError,), interrupted=""):
    """Run work() and map its end to the process's exit status, printing one line for a failure.

    0 when it returns; 1 with `error: <message>` on stderr for one of
    `errors`; 128 + signal number when stopped by SIGINT/SIGTERM
    (Interrupted: its message; KeyboardInterrupt: `interrupted`, when given).
    """
    try:
        work()
    except errors as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Interrupted as e:
        print(e, file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:
        if interrupted:
            print(interrupted, file=sys.stderr)
        return 128 + signal.SIGINT
    return 0

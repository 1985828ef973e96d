"""The project's errors and how a command line ends on them: one line on stderr and an exit status.

DataError is bad or missing input (a file, a folder, a checkpoint), ClusterError
a distributed task that cannot go on, Interrupted a run stopped by a signal
after it saved. exit_status() runs a command's work and maps its end to the
process's exit status; every script's main() goes through it.
"""
import os
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


class Stopped(KeyboardInterrupt):
    """SIGTERM, raised where the program is, as Ctrl-C raises KeyboardInterrupt (see exit_status)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum, frame):
    raise Stopped(signum)


# The signals that ask a run to stop: Ctrl-C, SIGTERM (kill), and on Windows Ctrl-Break, which is how
# mnist_cluster.py stops a task there so that the chief can save.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGBREAK") if hasattr(signal, name))
BROKEN_PIPE_STATUS = 128 + 13  # what a shell reports for a process ended by SIGPIPE


def exit_status(work, errors=(DataError,), interrupted="stopped"):
    """Run work() and map its end to the process's exit status, printing one line for a failure.

    0 when it returns; 1 with `error: <message>` on stderr for one of
    `errors`; 128 + signal number when stopped by SIGINT or SIGTERM:
    Interrupted prints its own message, a signal that came first prints
    `<SIGNAL>: <interrupted>`. While work() runs, Ctrl-C raises
    KeyboardInterrupt even where a shell started the process in the
    background (`&` hands SIGINT down as ignored), and SIGTERM raises
    Stopped, so that `finally` blocks remove what was half-written.
    Output into a pipe whose reader has gone (`| head -1`) ends quietly
    with BROKEN_PIPE_STATUS.
    """
    previous = {signum: signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else _raise_stopped)
                for signum in STOP_SIGNALS}
    try:
        work()
    except errors as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Interrupted as e:
        print(e, file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt as e:
        signum = getattr(e, "signum", signal.SIGINT)
        print(f"{signal.Signals(signum).name}: {interrupted}", file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        silence_stdout()
        return BROKEN_PIPE_STATUS
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def silence_stdout():
    """Point stdout at the null device, so that Python's flush at exit finds no closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)

"""What happens to the process from outside while it trains: stop signals, and pauses.

StopFlag turns SIGINT/SIGTERM (Windows: SIGBREAK) into a flag that the step
loop checks, so that it saves first; PauseWatch tells a process that was
stopped (Ctrl-Z, a debugger, a suspended laptop) from a stuck input.
"""
import signal
import threading
import time

from .errors import STOP_SIGNALS

TICK_SECS = 0.5  # the pause watch's period
LATE_SECS = 2.0  # a tick this late means the process was stopped (Ctrl-Z, a debugger, a suspended laptop) or starved


class StopFlag:
    """Turns SIGINT/SIGTERM (and Windows' SIGBREAK, Ctrl-Break) into a flag the step loop checks, so it can save first.

    A second Ctrl-C while the flag is set raises KeyboardInterrupt as usual.
    """

    def __init__(self):
        self.signal = None
        self._previous = {}

    def __enter__(self):
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal = signal.Signals(signum)

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


class PauseWatch:
    """Adds up the time this process did not run: a thread ticks every TICK_SECS and counts late ticks.

    A tick more than LATE_SECS late means the whole process was stopped
    (Ctrl-Z, SIGSTOP, a debugger, a suspended laptop) or starved of CPU;
    `paused` is the total of those delays in seconds. Both the monotonic
    and the wall clock are read, so that a suspend, which only the wall
    clock counts, is seen too.
    """

    def __init__(self):
        self.paused = 0.0
        thread = threading.Thread(target=self._run, name="pause-watch", daemon=True)
        thread.start()

    def _run(self):
        last = (time.monotonic(), time.time())
        while True:
            time.sleep(TICK_SECS)
            now = (time.monotonic(), time.time())
            late = max(now[0] - last[0], now[1] - last[1]) - TICK_SECS
            if late > LATE_SECS:
                self.paused += late
            last = now


_watch = []


def pause_watch():
    """The process's one PauseWatch, started on first use."""
    if not _watch:
        _watch.append(PauseWatch())
    return _watch[0]

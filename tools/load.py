"""Run a command on a machine made busy: N processes that only spin, started before it and killed after it.

    python tools/load.py 8 -- .venv/bin/python -m pytest -q tests -m "not floor and not long" -n 3 --dist loadscope
    python tools/load.py 8 --at-least -- COMMAND...   (a shared machine: only as many as hold the load at 8)

The suite must pass at load 8 and at load 16 (issue 53: no fixed limit that fails because the machine is busy);
this is how such a run is made and put on record. The N busy processes run at normal priority, each a Python
loop that never sleeps (one runnable process adds 1 to the load average, whatever the cores). They start
--settle seconds before the command (the 1-minute load average takes about a minute to climb; 0: no wait) and
are killed when it ends, also on Ctrl-C or SIGTERM. A sampler writes one line to --log every --every seconds:

    2026-12-06T12:40:00Z load1 9.41 load5 7.80 load15 5.12 busy 8 command running

(busy: how many busy processes run then) and a last line with the lowest and highest 1-minute load seen
while the command ran. The load counts everything else that runs too (other users, the command itself), so
read the log for the load a run had.
With --at-least the busy processes fill in what the rest leaves: added one at a time while the 1-minute
load is below N, taken away while it is above N + 2.
Exit status: the command's (128 + N when a signal N ended it); 2 for a usage mistake. Unix only
(os.getloadavg).
"""
import argparse
import os
import signal
import subprocess
import sys
import threading
import time

SPIN = "while True:\n    pass\n"


def timestamp():
    """The time now in UTC, as 2026-12-06T12:40:00Z (str)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Busy:
    """The spinning Python processes (subprocess.Popen), at this process's priority."""

    def __init__(self, count):
        self.processes = []
        for _ in range(count):
            self.add()

    def add(self):
        self.processes.append(subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL))

    def remove(self):
        process = self.processes.pop()
        process.kill()
        process.wait()

    def stop(self):
        while self.processes:
            self.remove()


class Sampler(threading.Thread):
    """Writes the load average to `log` (an open text file) every `every` seconds until stop(); keeps the
    1-minute values seen while `running` is set in `seen` (list of float).

    at_least: None, or a load that `busy` holds the machine at: every TICK seconds a busy process is added
    while the 1-minute load is below it (at most `at_least` of them), and one taken away while the load is
    above it by more than SLACK (the other work on the machine grew).
    """
    TICK, SLACK = 20.0, 2.0  # the 1-minute average takes about a minute to count a process added

    def __init__(self, log, every, busy, at_least=None):
        super().__init__(daemon=True)
        self.log, self.every, self.busy, self.at_least = log, every, busy, at_least
        self.running, self.stopping, self.seen = threading.Event(), threading.Event(), []

    def sample(self):
        load1, load5, load15 = os.getloadavg()
        if self.running.is_set():
            self.seen.append(load1)
        state = "command running" if self.running.is_set() else "settling"
        self.log.write(f"{timestamp()} load1 {load1:.2f} load5 {load5:.2f} load15 {load15:.2f} "
                       f"busy {len(self.busy.processes)} {state}\n")
        self.log.flush()

    def hold(self):
        load1 = os.getloadavg()[0]
        if load1 < self.at_least and len(self.busy.processes) < self.at_least:
            self.busy.add()
        elif load1 > self.at_least + self.SLACK and self.busy.processes:
            self.busy.remove()

    def run(self):
        logged = time.monotonic()
        self.sample()
        while not self.stopping.wait(min(self.TICK, self.every) if self.at_least else self.every):
            if self.at_least:
                self.hold()
            if time.monotonic() - logged >= self.every - 0.01:
                logged = time.monotonic()
                self.sample()

    def stop(self):
        self.stopping.set()
        self.join()


def parse(argv):
    parser = argparse.ArgumentParser(usage="%(prog)s N [--at-least] [--log LOG] [--every S] [--settle S] -- COMMAND [ARGS...]",
                                     description="Run COMMAND with N busy processes beside it, logging the load.")
    parser.add_argument("busy", type=int, metavar="N", help="how many busy processes (0 or more)")
    parser.add_argument("--log", default="load.log", help="where the sampler writes (appended; default load.log)")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples (default 30)")
    parser.add_argument("--at-least", action="store_true",
                        help="hold the 1-minute load at N or above: busy processes are added while it is below N "
                             "and taken away while it is above N + 2 (other work on the machine), at most N")
    parser.add_argument("--settle", type=float, default=60.0,
                        help="seconds the busy processes run before the command starts (default 60)")
    parser.error = lambda message: parser.exit(2, f"{parser.prog}: error: {message}\n")  # one line, no usage block
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])  # --help answers here, before the command is asked for
    if cut >= len(argv) - 1:
        parser.error("no command: give it after --")
    args.command = argv[cut + 1:]
    if args.busy < 0 or args.every <= 0 or args.settle < 0:
        parser.error("N and --settle must be 0 or more, --every more than 0")
    return args


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    # SIGTERM ends this process as Ctrl-C does, so the finally below kills the busy processes.
    signal.signal(signal.SIGTERM, lambda signum, frame: (_ for _ in ()).throw(KeyboardInterrupt()))
    with open(args.log, "a", encoding="utf-8") as log:
        held = f"the 1-minute load held at {args.busy} or above by up to {args.busy}" if args.at_least else args.busy
        log.write(f"{timestamp()} start: {held} busy processes; command: {subprocess.list2cmdline(args.command)}\n")
        busy, child = Busy(0 if args.at_least else args.busy), None
        sampler = Sampler(log, args.every, busy, args.busy if args.at_least else None)
        sampler.start()
        started, status = None, None
        try:
            time.sleep(args.settle)
            sampler.running.set()
            started = time.monotonic()
            try:
                child = subprocess.Popen(args.command)
            except OSError as error:
                print(f"error: cannot run {args.command[0]}: {error.strerror}", file=sys.stderr)
                status = 127
            else:
                status = child.wait()
        except KeyboardInterrupt:
            if child is not None:  # it ends as after a Ctrl-C (pytest prints its summary), or is killed
                child.send_signal(signal.SIGINT)
                try:
                    child.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
            status = 130
        finally:
            sampler.stop()  # first: with --at-least it adds busy processes
            busy.stop()
            sampler.sample()
            seen = sampler.seen
            took = time.monotonic() - started if started is not None else 0.0
            log.write(f"{timestamp()} end: status {status}, {took / 60:.1f} min; "
                      f"1-minute load while it ran: " + (f"{min(seen):.2f} to {max(seen):.2f} "
                                                         f"({len(seen)} samples)\n" if seen else "no samples\n"))
    return 1 if status is None else status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())

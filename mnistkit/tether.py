"""A learn's course script tied to the process that runs the learn: when that process is gone, the script ends.

learn.run starts each course script of a learn (generator, trainer,
evaluator) through this file, run as a script:

    python tether.py --staging STAGING --lock LOCK --parent PID --grace SECS -- python SCRIPT ARGS...

It starts the script (stdin the null device, its stdout and stderr this
process's: the learn's pipe), waits for it and ends with its exit status
(128 + N for a script ended by signal N). Its own stdin is the tether: a
pipe whose other end only the learn's process holds, until the script has
ended. End of file there says that process is gone (killed with SIGKILL,
ended at once): the script is stopped its usual way, as the learn's own
stop does (SIGTERM to the process group: the trainer saves in the staging
folder and ends), killed after SECS, and the staging folder and the model
folder's lock (when the process gone still owns it) are removed, so that
nothing of the learn runs on or stays behind. A byte there is the learn's
stop where there are no process groups (Windows; learn.signal_script):
"T" to end the script, "K" to kill it.

Why a pipe, not prctl(PR_SET_PDEATHSIG) or a poll of getppid(): end of
file comes on every platform, at once and exactly when the last holder of
the other end is gone, with no window between the start and the watch
(a parent that dies before the watch begins still closes the pipe), no
PID that may be reused and no poll; PDEATHSIG is Linux's only, fires when
the thread that started the child ends (the board starts learns from
threads), and getppid() names a subreaper, not PID 1, in containers.

The standard library only until the process is gone (then mnistkit.folders
reads the lock); mnistkit.learn imports it for its words (STOP, KILL) only.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading

STOP, KILL = b"T", b"K"  # the learn's words on the tether where it cannot signal the group (Windows)


def parse(argv):
    """The tether's flags (argparse Namespace): staging, lock, parent (int), grace (float) and command (a list)."""
    parser = argparse.ArgumentParser(prog="tether.py", description=__doc__.split("\n")[0])
    parser.add_argument("--staging", default=None, help="the learn's staging folder, removed when the learn is gone")
    parser.add_argument("--lock", default=None, help="the model folder's lock file the learn's process holds")
    parser.add_argument("--parent", type=int, default=0, help="the learn's process id (the lock's owner)")
    parser.add_argument("--grace", type=float, default=30.0, help="seconds the stopped script may take to end")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the script's command line")
    args = parser.parse_args(argv)
    args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.command:
        parser.error("no command after --")
    return args


def stop(script, kill=False):
    """End the script: SIGTERM (kill: SIGKILL) to this process group (the script and what it started; this
    process's own handler does nothing), the script alone where there are no groups."""
    if os.name == "posix" and not kill:
        os.killpg(os.getpgrp(), signal.SIGTERM)
    elif script.poll() is None:
        script.kill() if kill else script.terminate()


def gone(args, script):
    """The learn's process is gone: stop the script, kill it after args.grace, remove the staging folder and the
    lock (when args.parent still owns it: a lock taken over since is another process's), then end what is left of
    the process group, this process too."""
    stop(script)
    try:
        script.wait(args.grace)
    except subprocess.TimeoutExpired:
        stop(script, kill=True)
        script.wait()
    if args.staging:
        shutil.rmtree(args.staging, ignore_errors=True)
    if args.lock:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from mnistkit import folders
        if folders.lock_owner(args.lock) == args.parent:
            try:
                os.remove(args.lock)
            except OSError:
                pass
    if os.name == "posix":
        os.killpg(os.getpgrp(), signal.SIGKILL)  # a process the script started, deaf to SIGTERM; and this one


def main(argv=None):
    """Run the script tethered; returns its exit status (128 + N when a signal N ended it)."""
    args = parse(sys.argv[1:] if argv is None else argv)
    for signum in (signal.SIGINT, signal.SIGTERM):  # the group's stop is for the script: this waits for it to end
        signal.signal(signum, lambda *_: None)  # a handler, not SIG_IGN, which the script would inherit
    script = subprocess.Popen(args.command, stdin=subprocess.DEVNULL)
    orphaned, cleaned = threading.Event(), threading.Event()

    def listen():
        while True:
            try:
                word = os.read(0, 1)
            except OSError:
                word = b""
            if not word:
                break
            if word in (STOP, KILL):
                stop(script, kill=word == KILL)
        orphaned.set()  # the learn's end is closed only after this process has ended: its process is gone
        try:
            gone(args, script)
        finally:
            cleaned.set()

    threading.Thread(target=listen, name="tether", daemon=True).start()
    status = script.wait()
    if orphaned.is_set():
        cleaned.wait()
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    sys.exit(main())

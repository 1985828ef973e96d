"""Trainer and evaluator running side by side, as the course intends, checked afterwards.

    python bench/soak.py --minutes 10            # the long run
    python bench/soak.py --minutes 1 --keep 1000000 --save-every 100
    python bench/soak.py --minutes 1 --keep 1 --save-every 50 --interval 0.5   # the harshest race

Runs `mnist_backward.py` and `mnist_test.py --interval 1` (--interval) at the same time
in WORKDIR (default: a temporary folder with TFRecords generated from the
bundled sample), for the given time, then stops the trainer with SIGTERM and
the evaluator with SIGINT (Ctrl-C). Afterwards every accuracy line the
evaluator printed whose checkpoint still exists is evaluated again, alone:
it must give the same accuracy for the same step. With the default
--keep 5 the trainer deletes old checkpoints while the evaluator may be
reading them, which is the race worth soaking.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from mnistkit import cli  # noqa: E402
LINE = re.compile(r"^After (\d+) training steps, test accuracy = (\S+)$")
MIN_LINES_PATIENCE_SECS = 300  # soak(min_lines=...): how much longer to wait for the evaluator's lines


def script(name, *args, cwd):
    """Start a course script with unbuffered output and Ctrl-C (SIGINT) handled as in a terminal."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, os.path.join(ROOT, name), *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            encoding="utf-8", errors="replace",
                            preexec_fn=default_sigint)


def default_sigint():
    """Undo an inherited 'ignore SIGINT' (background jobs of a shell get one), which Python keeps."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Drain:
    """Read a process's output stream to its end in a thread, so a full pipe never blocks it; lines: what came."""

    def __init__(self, stream):
        self.lines = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append(line)

    def text(self, timeout):
        """All the output (str), once the stream ended (within `timeout` seconds of the process's end)."""
        self._thread.join(timeout)
        return "".join(self.lines)


def soak(workdir, seconds, save_every=1000, keep=5, interval=1.0, min_lines=0, patience=MIN_LINES_PATIENCE_SECS):
    """Run trainer and evaluator together for `seconds`; returns a dict of findings.

    With min_lines, both run on past `seconds` until the evaluator has
    printed that many accuracy lines, for at most `patience` seconds more
    (a busy machine scores fewer checkpoints in the same time).
    Keys: trainer_rc, evaluator_rc (expected 128+SIGTERM and 128+SIGINT),
    trainer_err, evaluator_err (stderr text), lines [(step, accuracy str)],
    verified (lines re-evaluated alike), mismatches [(step, printed, again)],
    final_step (the trainer's last checkpoint), seconds (how long both ran).
    """
    if not os.path.exists(os.path.join(workdir, "data", "mnist_train.tfrecords")):
        subprocess.run([sys.executable, os.path.join(ROOT, "mnist_generateds.py"), "--no-download"],
                       cwd=workdir, check=True, capture_output=True)
    started = time.monotonic()
    trainer = script("mnist_backward.py", "--steps", str(10 ** 9), "--save-every", str(save_every),
                     "--keep", str(keep), cwd=workdir)
    evaluator = script("mnist_test.py", "--interval", str(interval), cwd=workdir)
    outputs = [Drain(stream) for stream in (trainer.stdout, trainer.stderr, evaluator.stdout, evaluator.stderr)]
    time.sleep(seconds)
    deadline = time.monotonic() + patience
    while (sum(map(bool, map(LINE.match, list(outputs[2].lines)))) < min_lines and time.monotonic() < deadline
           and trainer.poll() is None and evaluator.poll() is None):
        time.sleep(0.5)
    ran = time.monotonic() - started
    trainer.send_signal(signal.SIGTERM)
    trainer.wait(timeout=60)
    evaluator.send_signal(signal.SIGINT)
    evaluator.wait(timeout=60)
    trainer_out, trainer_err, evaluator_out, evaluator_err = (output.text(timeout=60) for output in outputs)

    from tf_compat import tf  # after the children started: keeps their start-up fast
    import mnist_test
    model = os.path.join(workdir, "model")
    test_path = os.path.join(workdir, "data", "mnist_test.tfrecords")
    lines = [(int(m.group(1)), m.group(2)) for m in map(LINE.match, evaluator_out.splitlines()) if m]
    verified, mismatches = 0, []
    for step, printed in lines:
        ckpt = os.path.join(model, f"mnist_model-{step}")
        if not os.path.exists(ckpt + ".index"):
            continue
        again_step, accuracy, _ = mnist_test.evaluate(ckpt, test_path)
        again = "%g" % accuracy
        if again_step != step or again != printed:
            mismatches.append((step, printed, again))
        verified += 1
    return dict(trainer_rc=trainer.returncode, evaluator_rc=evaluator.returncode,
                trainer_err=trainer_err, evaluator_err=evaluator_err, lines=lines,
                verified=verified, mismatches=mismatches,
                final_step=int(tf.train.latest_checkpoint(model).rsplit("-", 1)[1]), seconds=ran)


def main():
    parser = cli.new_parser(__doc__)
    parser.add_argument("--minutes", type=float, default=10, help="how long both run")
    parser.add_argument("--workdir", help="folder with data/ (default: a new temporary folder)")
    parser.add_argument("--save-every", type=int, default=1000, help="trainer's steps between checkpoints")
    parser.add_argument("--keep", type=int, default=5, help="trainer's newest checkpoints kept")
    parser.add_argument("--interval", type=float, default=1.0, help="evaluator's seconds between checks")
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="soak-")
    started = time.time()
    found = soak(workdir, args.minutes * 60, args.save_every, args.keep, args.interval)
    steps = [s for s, _ in found["lines"]]
    print(f"soak: {args.minutes:g} min in {workdir} (wall {time.time() - started:.0f} s)")
    print(f"trainer: exit {found['trainer_rc']}, last checkpoint at step {found['final_step']}, "
          f"stderr: {found['trainer_err'].strip()!r}")
    print(f"evaluator: exit {found['evaluator_rc']}, {len(steps)} accuracy lines, steps "
          f"{steps[0] if steps else '-'}..{steps[-1] if steps else '-'}, increasing: {steps == sorted(set(steps))}, "
          f"stderr: {found['evaluator_err'].strip()!r}")
    print(f"re-evaluated alone: {found['verified']} lines, mismatches: {found['mismatches']}")
    ok = (found["trainer_rc"] == 128 + signal.SIGTERM and found["evaluator_rc"] == 128 + signal.SIGINT
          and steps and not found["mismatches"] and steps == sorted(set(steps)))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: how long each script takes to say that its input is wrong, and whether it imported TensorFlow first.

Usage (from the repository root, in the venv `make install` made):
  python bench/errors.py                                  # this checkout's scripts, 3 runs of each case
  git worktree add /tmp/errors-base main                  # the scripts to compare with
  python bench/errors.py --baseline /tmp/errors-base --repeats 3
  git worktree remove /tmp/errors-base

Each case (CASES) is one command line with one mistake in it: a mistyped
folder (`modle`, `dta`), a file that is not there, an option's value out of
range. It runs in a work folder made once (--work: the sample's records by
`mnist_generateds.py --no-download`, a model trained 20 steps, one picture),
as a fresh process (WATCH runs the script as `python SCRIPT ARGS` does),
timed from its start to its first line on stderr (the error's line), and again
to its exit. "TF" says whether tensorflow was imported at all (WATCH's mark). With --baseline the same case runs with the baseline checkout's
scripts, alternately, so a change in the machine's load touches both alike.
Prints medians. Figures go to docs/performance.md.
"""
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from mnistkit import cli  # noqa: E402  (the course scripts' parser: one line for a wrong flag)

TF_MARK = "[tensorflow imported]"
# Runs a script (argv[1]) as `python SCRIPT ARGS` would, with TF_MARK on stderr when tensorflow is imported: on the
# descriptor stderr had at the start, since tf_compat mutes fd 2 while TensorFlow loads (importtime's lines too).
WATCH = f"""
import os, runpy, sys
said = os.dup(2)
class Watch:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "tensorflow":
            os.write(said, b"{TF_MARK}\\n")
sys.meta_path.insert(0, Watch)
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""
SCRATCH = ("nosuch", "export")  # folders a case may make in the work folder (--keep-dir's, an export)
PICTURE = "seven.png"  # the work folder's one picture; the cases misspell it
JPG = "mnist_data_jpg"  # the generator's JPG layout of the bundled sample, in the work folder

# (what is wrong, script, arguments): each a mistake a user makes, run in the work folder.
CASES = [
    ("mistyped --data-dir", "mnist_backward.py", ["--data-dir", "dta", "--steps", "1"]),
    ("mistyped --model-dir", "mnist_backward.py", ["--model-dir", "modle", "--steps", "1"]),
    ("missing --mix-records file", "mnist_backward.py", ["--mix-records", "nosuch.tfrecords", "--steps", "1"]),
    ("--steps -3", "mnist_backward.py", ["--steps", "-3"]),
    ("mistyped --data-dir", "mnist_lenet5_backward.py", ["--data-dir", "dta", "--steps", "1"]),
    ("mistyped --model-dir", "mnist_test.py", ["--model-dir", "modle", "--once"]),
    ("mistyped --data-dir", "mnist_test.py", ["--data-dir", "dta", "--once"]),
    ("missing --checkpoint", "mnist_test.py", ["--checkpoint", "model/mnist_model-99"]),
    ("--interval -1", "mnist_test.py", ["--interval", "-1"]),
    ("mistyped --model-dir", "mnist_lenet5_test.py", ["--model-dir", "modle", "--once"]),
    ("missing picture", "mnist_app.py", ["nosuchpicture.png"]),
    ("mistyped picture", "mnist_app.py", ["sevne.png"]),
    ("pictures' folder mistyped", "mnist_app.py", ["mnist_dta_jpg/mnist_test_jpg_2000"]),
    ("mistyped --model-dir", "mnist_app.py", ["--model-dir", "modle", PICTURE]),
    ("--threshold 300", "mnist_app.py", ["--preprocess", "course", "--threshold", "300", PICTURE]),
    ("mistyped --idx-dir", "mnist_generateds.py", ["--idx-dir", "idxx"]),
    ("mistyped --train-labels", "mnist_generateds.py", [
        "--train-images", f"{JPG}/mnist_train_jpg_8000", "--train-labels", f"{JPG}/mnist_train_jpg_800.txt",
        "--test-images", f"{JPG}/mnist_test_jpg_2000", "--test-labels", f"{JPG}/mnist_test_jpg_2000.txt",
        "--data-dir", "nosuch"]),
    ("--workers 0", "mnist_generateds.py", ["--workers", "0"]),
    ("mistyped --model-dir", "mnist_export.py", ["--model-dir", "modle"]),
    ("mistyped --model-dir", "mnist_learn.py", ["--model-dir", "modle"]),
    ("missing --keep-dir", "mnist_learn.py", ["--keep-dir", "nosuch"]),
    ("--share 2", "mnist_learn.py", ["--share", "2"]),
]


def make_work(work, root):
    """The work folder every case runs in: data/ (the bundled sample's records), model/ (20 steps), PICTURE."""
    if os.path.isfile(os.path.join(work, "model", "checkpoint")) and os.path.isfile(os.path.join(work, PICTURE)):
        return
    os.makedirs(work, exist_ok=True)
    for script, *args in (("mnist_generateds.py", "--no-download"), ("mnist_backward.py", "--steps", "20")):
        result = subprocess.run([sys.executable, os.path.join(root, script), *args], cwd=work, capture_output=True,
                                text=True, encoding="utf-8", errors="backslashreplace")
        if result.returncode != 0:
            raise SystemExit(f"error: {script} in {work} failed: {(result.stderr.strip().splitlines() or ['?'])[-1]}")
    from PIL import Image  # a test digit, as a user's picture
    jpgs = os.path.join(work, "mnist_data_jpg", "mnist_test_jpg_2000")
    Image.open(os.path.join(jpgs, sorted(os.listdir(jpgs))[0])).save(os.path.join(work, PICTURE))


def run_case(root, script, args, work):
    """(seconds to the first line on stderr that is not TF_MARK, seconds to the exit, exit status, that line,
    whether tensorflow was imported) of one run of `script` of checkout `root` in `work`."""
    began = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", WATCH, os.path.join(root, script), *args], cwd=work,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               text=True, encoding="utf-8", errors="replace")
    first, said, tf = None, "", False
    for line in process.stderr:
        if line.strip() == TF_MARK:
            tf = True
        elif first is None:
            first, said = time.perf_counter() - began, line.strip()
    status = process.wait()
    ended = time.perf_counter() - began
    return first if first is not None else ended, ended, status, said, tf


def measure(roots, repeats, work):
    """{(case index, root): [run_case's results]}, the roots alternating within each repeat."""
    results = {}
    for index, (_, script, args) in enumerate(CASES):
        for _ in range(repeats):
            for root in roots:
                results.setdefault((index, root), []).append(run_case(root, script, args, work))
                for scratch in SCRATCH:  # what a case may make: not kept for the next
                    shutil.rmtree(os.path.join(work, scratch), ignore_errors=True)
    return results


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--baseline", help="another checkout (a worktree of main) whose scripts to compare with")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case per checkout")
    parser.add_argument("--work", default=os.path.join("/tmp", "bench-errors-work"), help="the work folder")
    parser.add_argument("--only", help="the cases whose script's name holds this text")
    args = parser.parse_args(argv)
    if args.only:
        CASES[:] = [case for case in CASES if args.only in case[1]]
    make_work(args.work, ROOT)
    roots = [args.baseline, ROOT] if args.baseline else [ROOT]
    results = measure(roots, args.repeats, args.work)
    for index, (what, script, args_) in enumerate(CASES):
        print(f"{script} {' '.join(args_)}  ({what})")
        for root in roots:
            runs = results[(index, root)]
            line_s, exit_s = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            name = "before" if root == args.baseline else "after " if args.baseline else "now   "
            status, said, tf = runs[-1][2], runs[-1][3], runs[-1][4]
            print(f"  {name} {line_s:5.2f} s to the line, {exit_s:5.2f} s to exit, status {status}, "
                  f"TF {'imported' if tf else 'no'}: {said[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

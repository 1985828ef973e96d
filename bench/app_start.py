"""Benchmark: one picture through mnist_app.py, a first run (no not-a-digit reference cached) and a later one,
this checkout against another.

Usage (from the repository root, in the venv `make install` made):
  python bench/app_start.py --base /path/to/other/checkout --work WORK --picture WORK/pic.png --repeats 5

WORK is a folder holding model/ (a trained model) and data/ (the test
records the reference is made of, mnist_generateds.py's); each run is
`python CHECKOUT/mnist_app.py PICTURE` started in WORK, a fresh process.
"first run": with MNISTKIT_CACHE pointing at a new empty folder, so the
app makes the model's not-a-digit reference (mnistkit.reference);
"later run": the same command again with that cache. Each figure is
timed from outside: wall seconds from start to exit, and CPU seconds from
the child's rusage (user + system, all its threads). Base and this
checkout alternate, so a change in the machine's load touches both alike.
Prints the medians and the ratios this / base (under 1: this checkout is
faster). Figures go to docs/performance.md.
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from mnistkit import cli  # noqa: E402  (the course scripts' parser: one line for a wrong flag)
KINDS = ("first run", "later run")


def timed(checkout, work, picture, cache):
    """(wall seconds, CPU seconds) of one `python CHECKOUT/mnist_app.py PICTURE` in `work` with MNISTKIT_CACHE
    `cache`; RuntimeError with its stderr's last line when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, os.path.join(checkout, "mnist_app.py"), picture], cwd=work,
                            env=dict(os.environ, MNISTKIT_CACHE=cache), capture_output=True, encoding="utf-8",
                            errors="replace")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{checkout}: mnist_app.py failed: {(result.stderr.strip().splitlines() or ['?'])[-1]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(sides, work, picture, repeats):
    """{(side, kind): [(wall, cpu)]}: `repeats` first and later runs of each side, the sides alternating."""
    found = {(side, kind): [] for side in sides for kind in KINDS}
    for repeat in range(repeats):
        for side in (list(sides) if repeat % 2 == 0 else list(sides)[::-1]):
            cache = tempfile.mkdtemp(prefix="app_start_cache_")
            try:
                for kind in KINDS:
                    found[side, kind].append(timed(sides[side], work, picture, cache))
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    return found


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--base", required=True, help="the other checkout's folder (its mnist_app.py is run)")
    parser.add_argument("--work", required=True, help="folder holding model/ and data/, where the app runs")
    parser.add_argument("--picture", required=True, help="the picture file given to the app")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each kind on each side")
    args = parser.parse_args(argv)
    sides = {"base": os.path.abspath(args.base), "this": ROOT}
    found = measure(sides, os.path.abspath(args.work), os.path.abspath(args.picture), args.repeats)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}; medians of {args.repeats} runs each")
    print(f"{'':10} {'':5} {'base':>8} {'this':>8} {'this/base':>9}")
    for kind in KINDS:
        for column, name in ((0, "wall"), (1, "CPU")):
            base, this = (statistics.median(t[column] for t in found[side, kind]) for side in sides)
            print(f"{kind:10} {name:5} {base:7.2f}s {this:7.2f}s {this / base:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

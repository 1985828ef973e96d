"""Benchmark: what a script's start costs before its work, with this venv's packages against a baseline.

Usage (from the repository root, in the venv `make install` made):
  python bench/startup.py                          # against ml_dtypes 0.7.0, 5 runs of each
  python bench/startup.py --baseline ml_dtypes==0.7.0 --repeats 9

Each figure is a fresh Python process, timed from outside (wall seconds, and
the CPU seconds of the process: user + system):
  1. `import ml_dtypes` alone (TensorFlow imports it first thing);
  2. TensorFlow's import as every script does it (`tf_compat.tf`, quiet:
     TensorFlow's own import plus tf.compat.v1, Keras kept out).
The baseline runs the same commands with the --baseline requirement installed
by pip into a temporary folder put in front of the venv's packages
(PYTHONPATH), so only that package differs. Runs alternate between the two,
so a change in the machine's load touches both alike. Prints medians and the
ratio baseline / this venv (above 1: this venv starts faster). Figures go to
docs/performance.md.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

from packaging.requirements import Requirement

from bench import cpu_seconds
from mnistkit import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = {
    "import ml_dtypes": "import ml_dtypes",
    "TensorFlow's import (tf_compat.tf)": "import tf_compat; tf_compat.tf.Session",
}


def timed(code, pythonpath):
    """(wall seconds, CPU seconds) of `python -c code` run in ROOT with PYTHONPATH `pythonpath`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (pythonpath, ROOT) if p))
    began, cpu_began = time.perf_counter(), cpu_seconds(children=True)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                            encoding="utf-8", errors="replace")
    wall, cpu = time.perf_counter() - began, cpu_seconds(children=True) - cpu_began  # this process only waits
    if result.returncode != 0:
        raise SystemExit(f"error: `python -c {code!r}` failed: {(result.stderr.strip().splitlines() or ['?'])[-1]}")
    return wall, cpu


def version_of(package, pythonpath):
    """The version string of `package` as the interpreter finds it with PYTHONPATH `pythonpath`."""
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    env = dict(os.environ, PYTHONPATH=pythonpath)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          encoding="utf-8", errors="replace").stdout.strip()


def install_baseline(requirement, folder):
    """pip install `requirement` (no dependencies) into `folder`; exits with one line when pip fails."""
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", folder,
                             requirement], capture_output=True, text=True, encoding="utf-8", errors="replace")
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.startswith("ERROR")] or ["?"]
        raise SystemExit(f"error: pip could not install the baseline {requirement}: {lines[-1]}")


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--baseline", default="ml_dtypes==0.7.0", help="the requirement the baseline runs with")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each command, for each side")
    args = parser.parse_args(argv)
    package = Requirement(args.baseline).name
    with tempfile.TemporaryDirectory() as baseline:
        install_baseline(args.baseline, baseline)
        print(f"{package}: this venv {version_of(package, '')}, baseline {version_of(package, baseline)}; "
              f"median of {args.repeats} fresh processes each, alternating")
        print(f"{'':40s} {'this venv':>18s} {'baseline':>18s} {'ratio':>12s}")
        print(f"{'':40s} {'wall s':>8s} {'CPU s':>9s} {'wall s':>8s} {'CPU s':>9s} {'wall':>5s} {'CPU':>6s}")
        for name, code in COMMANDS.items():
            ours, theirs = [], []
            for _ in range(args.repeats):
                ours.append(timed(code, ""))
                theirs.append(timed(code, baseline))
            (ow, oc), (tw, tc) = ([statistics.median(x) for x in zip(*runs)] for runs in (ours, theirs))
            print(f"{name:40s} {ow:8.2f} {oc:9.2f} {tw:8.2f} {tc:9.2f} {tw / ow:5.2f} {tc / oc:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

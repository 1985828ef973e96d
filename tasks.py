"""The project's tasks on Linux, macOS and Windows, with nothing but Python's standard library.

    python tasks.py demo         (Windows: py -3.11 tasks.py demo; --help lists every task and option)

Every task except clean first makes sure the virtual environment .venv holds the requirements:
it is created when missing, and pip installs into it when its stamp .venv/installed is missing, names
another requirements file, or is older than the file it names. The stamp names the file .venv was
installed from (requirements.txt, or requirements-gpu.txt after `install --gpu`), so later tasks keep
that build until `--cpu` or `--gpu` asks for the other one, which recreates .venv. test-floor does the
same with .venv-floor and requirements-floor.txt (the oldest versions the requirements allow).

Everything runs in this file's folder. Each command is printed before it runs, and the first one that
fails ends tasks.py with its exit status; a venv or pip failure adds one line `error: ...`. Ctrl-C lets
the running script stop its own way (the trainer saves a checkpoint), then exits with status 130.
"""
import argparse
import difflib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV, FLOOR_VENV, STAMP = ".venv", ".venv-floor", "installed"
CPU, GPU, FLOOR = "requirements.txt", "requirements-gpu.txt", "requirements-floor.txt"
TASKS = {"demo": "install, make the TFRecords, train --steps steps, evaluate once",
         "test": "install, run the test suite but its long tests, in parallel (arguments after the task go to pytest)",
         "test-long": "install, the long scenario tests (marked long), in parallel: CI runs them after test",
         "test-quick": "install, the tests marked quick, in parallel: under a minute, the check before a commit",
         "test-floor": "tests/test_floor_e2e.py in .venv-floor, on the oldest versions allowed (requirements-floor.txt)",
         "bench": "install, the course's loops against ours on full-size data (--idx-dir; extra arguments go to bench.py)",
         "bench-quick": "install, the same on the bundled sample with short runs (extra arguments go to bench.py)",
         "install": "create .venv and install the requirements (--gpu: the CUDA build; --cpu: back to the CPU build)",
         "clean": "remove what the README's commands write here: the model folders (model, model_lenet5, "
                  "model_cluster, any folder holding checkpoints or a schedule.json), export, "
                  "mnist_data_jpg, data/*.tfrecords, report.png, report.json, seen.png and bench/work"}
PASSES_ARGUMENTS = ("test", "test-long", "test-quick", "test-floor", "bench", "bench-quick")
# pytest-xdist for test and test-quick: one worker more than the cores, at most MAX_TEST_WORKERS. A worker
# that waits (on a script's process, a sleep in a fault test, a fixture another worker is building) leaves
# its core to the others; the tests are mostly TensorFlow processes that use several cores each. loadscope
# runs each test file in one worker, so a file's module fixtures are made once and its tests never run
# beside each other (tests/conftest.py).
MAX_TEST_WORKERS = 4


def xdist_workers(cores=None):
    """How many pytest-xdist workers `make test` starts (int): cores + 1, at most MAX_TEST_WORKERS.

    cores: the CPUs this process may run on (os.sched_getaffinity, else os.cpu_count) when None.
    """
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(MAX_TEST_WORKERS, cores + 1)


PARALLEL = ("-n", str(xdist_workers()), "--dist", "loadscope")
SUITE_TIME, LONG_TIME = "about 8 minutes", "10 to 13 minutes"  # `make test`, `make test-long` on 2 quiet cores (docs/tests.md)
# The first line of a task that takes a while: how long, and what to run instead for a quick answer.
STARTS = {"test": f"the suite but its long tests: {SUITE_TIME} on 2 quiet cores, longer while other work runs; a line "
                  "shows each test file as it ends (the slowest start first). `make test-quick` (tasks.py test-quick) "
                  "is the one-minute check before a commit; `make test-long` runs the long tests.",
          "test-long": f"the long tests: {LONG_TIME} on 2 quiet cores, longer while other work runs; a line shows "
                       "each test file as it ends."}
MODEL_FOLDER_FILES = ("schedule.json", "checkpoint")  # what tells a model folder (mnistkit.folders.FOLDER_FILE)
CLEANED = ("export", "mnist_data_jpg", "report.png", "report.json", "seen.png",
           "bench/work")


class Failed(Exception):
    """A step failed: tasks.py prints `message` (when there is one) as `error: ...` and exits with `status`."""

    def __init__(self, status, message=None):
        super().__init__(message)
        self.status, self.message = status, message


def venv_python(venv_dir, platform=sys.platform):
    """A venv's interpreter: Scripts/python.exe on Windows (platform "win32"), bin/python elsewhere."""
    return Path(venv_dir, "Scripts", "python.exe") if platform == "win32" else Path(venv_dir, "bin", "python")


def installed_from(venv_dir):
    """The requirements file named by venv_dir's stamp; None without a stamp, CPU for an empty one."""
    stamp = Path(venv_dir, STAMP)
    return (stamp.read_text(encoding="utf-8").strip() or CPU) if stamp.is_file() else None


def choose_requirements(venv_dir, gpu=False, cpu=False, platform=sys.platform):
    """The file .venv is to hold: GPU for --gpu, CPU for --cpu, else the one it holds now, else CPU."""
    if gpu and platform != "linux":
        raise Failed(2, "--gpu: TensorFlow's GPU build is for Linux only (on Windows, run tasks.py inside WSL2)")
    return GPU if gpu else CPU if cpu else installed_from(venv_dir) or CPU


def needs_install(venv_dir, requirements, platform=sys.platform):
    """True unless venv_dir has its interpreter and a stamp that names `requirements` and is not older than it."""
    if not venv_python(venv_dir, platform).exists() or installed_from(venv_dir) != requirements:
        return True
    return Path(requirements).stat().st_mtime > Path(venv_dir, STAMP).stat().st_mtime


def create_venv(venv_dir, clear=False):
    """`python -m venv [--clear] venv_dir` in this process; Failed(1, one line) when venv or pip cannot be had."""
    print(f"+ {sys.executable} -m venv {'--clear ' if clear else ''}{venv_dir}", flush=True)
    hint = f"on Debian or Ubuntu: sudo apt install python3.{sys.version_info.minor}-venv"
    try:
        import venv
    except ImportError:
        raise Failed(1, f"this Python has no venv module ({hint})") from None
    if importlib.util.find_spec("ensurepip") is None:
        raise Failed(1, f"this Python's venv cannot install pip: the ensurepip module is missing ({hint})")
    try:
        venv.EnvBuilder(with_pip=True, clear=clear).create(venv_dir)
    except (subprocess.CalledProcessError, OSError, SystemExit) as error:  # SystemExit: Debian's venv, no ensurepip
        reason = error if isinstance(error, OSError) else "ensurepip could not install pip"
        raise Failed(1, f"could not create {venv_dir}: {reason} ({hint})") from None


def ensure_venv(venv_dir, requirements, platform=sys.platform):
    """Create venv_dir and install `requirements` into it when needs_install says so; returns its interpreter."""
    python = venv_python(venv_dir, platform)
    if needs_install(venv_dir, requirements, platform):
        other = installed_from(venv_dir) not in (None, requirements)  # another build of TensorFlow: start afresh
        if other or not python.exists():
            create_venv(venv_dir, clear=other)
        failure = (f"pip could not install {requirements} into {venv_dir}: see its messages above (TensorFlow needs "
                   f"a 64-bit Python it has wheels for, such as 3.11; for another Python, delete {venv_dir} first)")
        print(install_plan(venv_dir, requirements), flush=True)
        run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], failure)
        # Not --quiet: pip's own lines (each package collected, download bars, "Installing collected packages")
        # are the progress of the minute or more this takes; a quiet pip looked like a hang.
        run([str(python), "-m", "pip", "install", "-r", requirements], failure)
        Path(venv_dir, STAMP).write_text(requirements + "\n", encoding="utf-8")
        print(f"{venv_dir} holds {requirements} (stamp {Path(venv_dir, STAMP)})", flush=True)
    return python


def install_plan(venv_dir, requirements):
    """The line (str) printed before pip starts: what is installed where, how long it takes, what shows it."""
    return (f"installing {requirements} into {venv_dir}: pip first, then TensorFlow and the rest, about a minute "
            "from pip's cache, several on a first download; pip's own lines below show its progress "
            "(its longest silence is while it unpacks TensorFlow after \"Installing collected packages\")")


def quick_files(tests=ROOT / "tests"):
    """The test files (str, relative to the folder above `tests`) whose text holds "mark.quick": the only ones
    test-quick collects.

    Collecting a file imports it, and most import TensorFlow (seconds each on a busy machine); a quick test
    is marked in its own file (`@pytest.mark.quick`, or `pytestmark = pytest.mark.quick`), so no other file
    can hold one.
    """
    return [path.relative_to(Path(tests).parent).as_posix() for path in sorted(Path(tests).glob("test_*.py"))
            if "mark.quick" in Path(path).read_text(encoding="utf-8")]


def task_commands(task, python, steps=2000, idx_dir="/usr/share/datasets/fashion-mnist", extra=()):
    """The commands (lists of str) that `task` runs with the venv's interpreter once it is installed."""
    py = str(python)
    return {"install": [],
            "demo": [[py, "mnist_generateds.py"], [py, "mnist_backward.py", "--steps", str(steps)],
                     [py, "mnist_test.py", "--once"]],
            # floor: test-floor's; --file-progress: a line per finished file (tests/file_progress.py)
            "test": [[py, "-m", "pytest", "-q", "tests", "-m", "not floor and not long", *PARALLEL, "--file-progress",
                      *extra]],
            "test-long": [[py, "-m", "pytest", "-q", "tests", "-m", "long and not floor", *PARALLEL, "--file-progress",
                           *extra]],
            "test-quick": [[py, "-m", "pytest", "-q", *quick_files(), "-m", "quick and not floor", *PARALLEL, *extra]],
            "test-floor": [[py, "-m", "pytest", "-q", "tests/test_floor_e2e.py", *extra]],
            "bench": [[py, "bench/bench.py", "--idx-dir", idx_dir, *extra]],
            "bench-quick": [[py, "bench/bench.py", "--quick", *extra]]}[task]


def run(command, failure=None):
    """Print `command`, run it; Failed(its exit status, failure) unless it exits 0."""
    print("+ " + (subprocess.list2cmdline(command) if os.name == "nt" else shlex.join(command)), flush=True)
    child = subprocess.Popen(command)
    try:
        status = child.wait()
    except KeyboardInterrupt:  # the child had the same Ctrl-C: let it finish stopping (a checkpoint is being saved)
        child.wait()
        raise
    if status != 0:
        raise Failed(status if status > 0 else 128 - status, failure)  # -N: killed by signal N, as a shell says


def clean():
    """Remove what demo, test and bench write into the repository's folder."""
    model_folders = [p for p in sorted(Path(".").iterdir())
                     if p.is_dir() and any((p / name).is_file() for name in MODEL_FOLDER_FILES)]
    for path in model_folders + [Path(name) for name in CLEANED] + sorted(Path("data").glob("*.tfrecords")):
        if path.exists():
            print(f"+ remove {path}", flush=True)
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def step_count(text):
    """--steps (and $DEMO_STEPS) as argparse reads it: a whole number >= 1 (str -> int), else
    argparse.ArgumentTypeError, which argparse prints as a usage error naming the flag (exit status 2).

    mnistkit.cli.bounded(int, 1) with the standard library alone: tasks.py runs before .venv holds tqdm, which
    mnistkit.cli imports. test_tasks.py checks that both give the same values and messages."""
    try:
        steps = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if steps < 1:
        raise argparse.ArgumentTypeError(f"{text} is out of range: give a whole number >= 1")
    return steps


def task_name(text):
    """The TASK argument as argparse reads it: one of TASKS (str), else argparse.ArgumentTypeError naming the
    closest task (`invalid choice: 'dmeo'; did you mean demo?`), which argparse prints as a usage error (exit 2).

    The closest is difflib's, at the cutoff of mnistkit.cli's did-you-mean hints (0.6), with the standard library
    alone: tasks.py runs before .venv holds tqdm, which mnistkit.cli imports."""
    if text in TASKS:
        return text
    close = difflib.get_close_matches(text, TASKS, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise argparse.ArgumentTypeError(f"invalid choice: {text!r}{hint} (choose from {', '.join(TASKS)})")


def build_parser():
    """The command line's parser (task first; unknown arguments are left for the tasks that pass them on)."""
    parser = argparse.ArgumentParser(
        prog="tasks.py", allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The project's tasks, run by the Python that .venv is to use (Windows: py -3.11 tasks.py TASK).",
        epilog="tasks:\n" + "\n".join(f"  {name:12} {text}" for name, text in TASKS.items()))
    parser.add_argument("task", type=task_name, metavar="TASK", help="one of the tasks below")
    parser.add_argument("--steps", type=step_count, default=os.environ.get("DEMO_STEPS", "2000"),
                        help="demo: training steps (default: $DEMO_STEPS, else 2000)")
    parser.add_argument("--idx-dir", default="/usr/share/datasets/fashion-mnist", help="bench: the IDX files' folder")
    flavour = parser.add_mutually_exclusive_group()
    flavour.add_argument("--gpu", action="store_true",
                         help="install TensorFlow's CUDA build (requirements-gpu.txt) into .venv and keep it for "
                              "later tasks; Linux and WSL2 only, with an NVIDIA driver")
    flavour.add_argument("--cpu", action="store_true", help="go back to the CPU build (requirements.txt)")
    return parser


def main(argv=None):
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.task not in PASSES_ARGUMENTS:
        parser.error("unrecognized arguments: " + " ".join(extra))
    if (args.gpu or args.cpu) and args.task in ("clean", "test-floor"):
        parser.error(f"--gpu and --cpu are for the tasks that use {VENV}")
    os.chdir(ROOT)
    if args.task in STARTS:
        print(STARTS[args.task], flush=True)
    try:
        if args.task == "clean":
            return clean() or 0
        if args.task == "test-floor":
            python = ensure_venv(FLOOR_VENV, FLOOR)
        else:
            python = ensure_venv(VENV, choose_requirements(VENV, args.gpu, args.cpu))
        for command in task_commands(args.task, python, args.steps, args.idx_dir, extra):
            run(command)
        return 0
    except Failed as failure:
        if failure.message:
            print(f"error: {failure.message}", file=sys.stderr)
        return failure.status
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

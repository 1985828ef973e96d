"""Shared fixtures: the bundled sample turned into TFRecords once, one trained model of each network.

Each is built once per run, also under pytest-xdist (`make test` runs `-n <cores + 1> --dist loadscope`): the
first worker to ask builds it in the run's shared temporary folder while the others wait on a lock
(built_once). Tests must not write into these folders: a test that changes files (an evaluator writes
eval/ into its model folder) works on a copy (trained_copy, copy_into).

Markers: `quick` (`make test-quick`, before a commit: checks that train nothing longer than a few steps,
the whole tier under a minute) and `floor` (`make test-floor`). Under xdist each test file runs in one
worker (`--dist loadscope`): tests that must not run beside each other (free ports picked, then bound;
module fixtures made once) are in one file.
"""
import contextlib
import hashlib
import importlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

pytest_plugins = ("file_progress",)  # --file-progress: a line as each test file ends (make test)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SHARED_DATA = os.path.join(ROOT, "..", "shared", "data")
TRAIN_STEPS = 2000
SUMMARY_LINES = []  # measured figures, printed once after the run (pytest_terminal_summary)
# A test that takes longer than this on a quiet machine (times the load per core, wait_limit) is stuck: pytest-timeout
# fails it with the stack of every thread (limit_every_test), so one hang fails one test and the run goes on. The
# slowest test takes a few minutes at load 8; the limit is only for what would never end.
TEST_LIMIT = 900


def shown(*parts, quoted=None):
    """The path ROOT/parts (str) as the scripts print it in a hint: quoted for the shell by the product's own
    mnistkit.cli.quoted, so an expected message holds also when the repository's path has a space in it
    (`python '/tmp/a b/repo/mnist_backward.py'`). quoted: the product's function that quotes the hint instead
    (mnistkit.startup.quoted, which runs before the packages mnistkit.cli needs are known to be there)."""
    if quoted is None:
        from mnistkit.cli import quoted
    return quoted(os.path.join(ROOT, *parts))

def wait_limit(seconds):
    """How long a wait on a condition may take (float seconds): `seconds` on a quiet machine, times the load per
    core when it is busier (os.getloadavg), so that `make test` on a loaded laptop does not fail on a fixed limit.
    Use it for limits only, never for a test's verdict; say what the wait was for when it runs out."""
    load = os.getloadavg()[0] / (os.cpu_count() or 1) if hasattr(os, "getloadavg") else 1.0
    return seconds * max(1.0, load)


def wait_for(condition, what, seconds=300, every=0.5, process=None, output=None):
    """Poll condition() until it returns something true (a value, True; not None, False or 0) and return that: the
    one wait on a condition of the tests. The first call is made at once, so a wait costs nothing when the
    condition already holds; then every `every` seconds.

    Fails with an AssertionError naming `what`: after wait_limit(seconds) s ("timed out after N s waiting for
    what"), or as soon as `process` (a subprocess.Popen, or several in a list) has ended first, with its exit
    status (a process that ends just after its last words still counts them: it is asked before the condition).
    output: a function giving text (a server's stderr, a log) that the failure message ends with; when None and
    the ended process's stderr is a pipe, what is left in it.
    """
    processes = [] if process is None else list(process) if isinstance(process, (list, tuple)) else [process]
    limit = wait_limit(seconds)
    deadline = time.monotonic() + limit
    while True:
        gone = [p for p in processes if p.poll() is not None]
        value = condition()
        if value:
            return value
        if gone:
            said = output() if output else gone[0].stderr.read() if gone[0].stderr else ""
            raise AssertionError(f"{what}: the process ended first (pid {gone[0].pid}, exit {gone[0].returncode})"
                                 + (f":\n{said}" if said else ""))
        if time.monotonic() >= deadline:
            said = output() if output else ""
            raise AssertionError(f"timed out after {limit:.0f} s waiting for {what}" + (f":\n{said}" if said else ""))
        time.sleep(every)


def ended(process, what, seconds=120):
    """(stdout, stderr) of a subprocess.Popen once it has ended (communicate), waited for within wait_limit(seconds);
    when it has not ended by then it is killed and an AssertionError says it was `what` that timed out.

    The wait is for the process and for the end of its pipes: a process it started that still holds them (a
    server's learn, a cluster's task) is named as the reason, and the pipes are closed, never waited on for ever.
    """
    limit = wait_limit(seconds)
    try:
        return process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        status = process.poll()
        process.kill()
        try:
            process.communicate(timeout=wait_limit(30))
        except subprocess.TimeoutExpired:
            for pipe in (process.stdin, process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
        if status is not None:
            raise AssertionError(f"{what} ended (exit {status}), but a process it started still held its output "
                                 f"after {limit:.0f} s") from None
        raise AssertionError(f"timed out after {limit:.0f} s waiting for {what} to end") from None


def read_line(process, what, seconds=120):
    """The next line of a subprocess.Popen's stdout (text), waited for within wait_limit(seconds): a process that
    prints nothing for that long is killed and an AssertionError names `what`; "" when the process ends first.

    Every read of a script's stdout in the tests goes through here, so that a script that stops talking fails its
    test instead of holding its worker (and the run) for ever.
    """
    limit, killed = wait_limit(seconds), []

    def kill():
        killed.append(True)
        process.kill()
    timer = threading.Timer(limit, kill)
    timer.start()
    try:
        line = process.stdout.readline()
    finally:
        timer.cancel()
    if killed and not line:
        process.wait()
        raise AssertionError(f"timed out after {limit:.0f} s waiting for {what}: the process printed nothing (killed)")
    return line


def running(pid):
    """Whether process `pid` runs (Linux's /proc): a zombie, ended and not yet reaped, does not. A script's own
    process killed with its parent is no child of the test's, so only an init reaps it, if any does."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def joined(threads, what, seconds=120):
    """Join every threading.Thread of `threads` within wait_limit(seconds) in all; an AssertionError names `what`
    and how many are still running when some have not ended by then (a deadlock fails its test, never hangs it)."""
    deadline = time.monotonic() + wait_limit(seconds)
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    running = [thread.name for thread in threads if thread.is_alive()]
    assert not running, (f"{what}: {len(running)} of {len(threads)} threads still running after "
                         f"{wait_limit(seconds):.0f} s")


def run_script(script, *args, cwd, timeout=600, input=None):
    """Run one of the course scripts as a user would, within wait_limit(timeout) s; returns CompletedProcess (text)."""
    return subprocess.run([sys.executable, os.path.join(ROOT, script), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=wait_limit(timeout), input=input)


def run_main(script, *args, cwd, input=None):
    """Run one of the course scripts' main(argv) in this process, in the folder cwd; returns what run_script
    returns: a CompletedProcess with the exit status and the text printed to stdout and stderr.

    For checks of what a command prints and returns: the same argument parsing, messages and exit status as
    the script's process, without a process of its own (and its TensorFlow import, about 3 CPU-seconds).
    stdin reads `input` ("" when None: at its end); stdout and stderr are not terminals, as in run_script.
    What only a process of its own shows (signals, the fd-level output of --verbose, a pipe closed early,
    the console's encoding) is tested with run_script.
    """
    main = importlib.import_module(os.path.splitext(script)[0]).main
    out, err, before = io.StringIO(), io.StringIO(), os.getcwd()
    stdin, sys.stdin = sys.stdin, io.StringIO(input or "")
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as e:  # argparse's exits (usage errors: 2, --help: 0); a message exits 1
                status = e.code if e.code is None or isinstance(e.code, int) else 1
    finally:
        os.chdir(before)
        sys.stdin = stdin
    return subprocess.CompletedProcess([script, *args], status or 0, out.getvalue(), err.getvalue())


def sha256_of(path):
    """The sha256 (hex str) of one file's bytes."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def tree_digests(folder, with_folders=False):
    """{path relative to folder: sha256} of every file under folder, hidden ones included; {} when it is missing.

    with_folders: every subfolder is there too, as None (so an added empty folder counts as a change).
    """
    found = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs if with_folders else ():
            found[os.path.relpath(os.path.join(top, name), folder)] = None
        for name in files:
            found[os.path.relpath(os.path.join(top, name), folder)] = sha256_of(os.path.join(top, name))
    return found


# The test digits' references (mnistkit.reference) the board and the app make are cached in a folder of the tests'
# own, not the user's ~/.cache/mnistkit; the scripts the tests start inherit it.
os.environ.setdefault("MNISTKIT_CACHE", os.path.join(tempfile.gettempdir(),
                                                    f"mnistkit-tests-{getattr(os, 'getuid', lambda: 0)()}"))
# matplotlib's settings and font list (a report's picture, mnistkit.report) in a folder of the tests' own too: no
# user's matplotlibrc, and the font list made before any test (fonts_listed_once), never in a test's own script.
os.environ.setdefault("MPLCONFIGDIR", os.environ["MNISTKIT_CACHE"] + "-matplotlib")
STARTING_ENVIRONMENT = dict(os.environ)  # as the run started, before any test (or TensorFlow's import) changed it


@pytest.fixture(autouse=True)
def environment_as_the_run_started(monkeypatch):
    """Every test starts with the environment the run started with, so no test depends on what an earlier one
    left there: tf_compat sets TF_CPP_MIN_LOG_LEVEL in this process when TensorFlow is imported, and a script
    a later test starts would inherit it (and hide --verbose's lines). pytest's own variables stay."""
    for name in set(os.environ) - set(STARTING_ENVIRONMENT):
        if not name.startswith("PYTEST_"):
            monkeypatch.delenv(name)
    for name, value in STARTING_ENVIRONMENT.items():
        if os.environ.get(name) != value:
            monkeypatch.setenv(name, value)


@pytest.fixture(autouse=True)
def a_temporary_folder_of_its_own(environment_as_the_run_started, tmp_path_factory, monkeypatch):
    """Every test, and every script it starts, has a temporary folder of its own (TMPDIR, tempfile.tempdir), so
    nothing one test leaves there is seen by another: learn.leftovers sweeps the temporary folder for the staging
    folders of learns whose process is gone, and says so in a line, so a learn a test killed would otherwise add
    that line to the output of whichever later test's script ran a learn, an undo or a board first."""
    temporary = str(tmp_path_factory.mktemp("t"))  # short: a Unix socket's path in it stays under its limit
    monkeypatch.setenv("TMPDIR", temporary)
    monkeypatch.setattr(tempfile, "tempdir", temporary)


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name))


@pytest.fixture(autouse=True)
def stop_signals_as_the_run_started():
    """Every test starts with Ctrl-C and SIGTERM handled as a terminal's process has them, and leaves them so.

    A test that runs a server, a trainer or the generator in this worker sets handlers of its own; one left
    at SIG_IGN would be inherited by every script a later test starts, which would then sleep through the
    SIGINT that test sends it. Python's own handlers are reset by exec, so only the disposition matters.
    """
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    yield
    for sig, handler in before.items():
        if signal.getsignal(sig) is not handler and handler is not None:
            signal.signal(sig, handler)


def limit_every_test(config):
    """Give pytest-timeout (requirements.txt) its limit for every test: wait_limit(TEST_LIMIT) s, unless the run has
    its own (--timeout, PYTEST_TIMEOUT). Its method stays its default, the signal (SIGALRM, on POSIX): the stuck
    test fails with the stack of every thread and its worker goes on. Not the thread method, which ends the worker:
    pytest-xdist's loadscope then gives the whole file to a new worker, which is stuck again, up to 9 times."""
    if config.pluginmanager.hasplugin("timeout") and config.getvalue("timeout") is None \
            and not os.environ.get("PYTEST_TIMEOUT"):
        config.option.timeout = wait_limit(TEST_LIMIT)


def fonts_listed_once():
    """Make matplotlib's font list in $MPLCONFIGDIR once, before any test, unless it is there (the first process
    of the run to come makes it while the others wait on a lock): matplotlib makes it on its first import, and
    says "Matplotlib is building the font cache; this may take a moment." on stderr when that takes over 5 s, as
    on a loaded machine with Chromium's fonts installed. A test that checks a report script's stderr would then
    fail for being the first of a fresh machine's to draw one. Nothing is done without matplotlib, nor said
    when the list cannot be made (the tests that draw say so)."""
    import importlib.metadata
    try:
        version = importlib.metadata.version("matplotlib")  # a newer one makes a list of its own
    except importlib.metadata.PackageNotFoundError:
        return
    folder = os.environ["MPLCONFIGDIR"]
    os.makedirs(folder, exist_ok=True)
    listed = os.path.join(folder, f".listed-{version}")
    with exclusive(os.path.join(folder, ".listing.lock")):
        if not os.path.exists(listed):
            made = subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], capture_output=True,
                                  timeout=wait_limit(600))
            if made.returncode == 0:
                open(listed, "w").close()


@pytest.hookimpl(tryfirst=True)  # before pytest-timeout's own, which reads the settings
def pytest_configure(config):
    limit_every_test(config)
    fonts_listed_once()
    config.addinivalue_line("markers", "floor: the end-to-end run for the oldest versions allowed; `make test` leaves it "
                                       "to `make test-floor`, which runs it in .venv-floor")
    config.addinivalue_line("markers", "long: a scenario test that takes a quarter of a minute or more on 2 quiet "
                                       "cores (a cluster's faults, memory over many large pictures, a learn's "
                                       "history); `make test` leaves it to `make test-long`, which CI runs after it")
    config.addinivalue_line("markers", "quick: in `make test-quick` (run before a commit): trains nothing longer than "
                                       "a few steps; the whole tier runs in under a minute")
    # A hand-typed `-n 2` (--dist load) runs each file in one worker too. Not loadgroup and xdist_group marks:
    # pytest-xdist 3.8 groups by renaming item._nodeid, which pytest 9 no longer reads (the groups were split).
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadscope"
    # Files go to the workers in collection order (pytest_collection_modifyitems), slowest first, not ordered by
    # how many tests they hold: a long file of few tests handed out last kept one worker busy alone at the end.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


# The files that take longest, slowest first (pytest --durations=80 of the make test selection, summed by file;
# the last measured run's, without the tests it moved to long: docs/tests.md). They start first so that
# the short ones fill in around them at the end of `make test`; the others keep their order after these. The same
# order serves `make test-long`: test_chinese_path, test_export_follows_learns and test_board_learn_compare hold
# only long scenarios (or those and a few quick checks), placed by their long tests' time (docs/tests.md).
SLOWEST_FILES = ("test_user_faults", "test_chinese_path", "test_board_learn_compare", "test_export_follows_learns",
                 "test_learn_further_browser",
                 "test_pictures_framed", "test_export", "test_tfdata", "test_cli",
                 "test_distributed", "test_checkpoints", "test_steps_per_run", "test_pictures", "test_learn",
                 "test_board", "test_board_browser", "test_app", "test_inside_browser", "test_lenet5",
                 "test_trust_data", "test_board_teach", "test_promises_data", "test_learn_browser", "test_encodings",
                 "test_board_pixels_browser", "test_progress", "test_settings_record", "test_board_connections",
                 "test_guards_trainer", "test_keep", "test_pictures_painted", "test_report", "test_tasks",
                 "test_promises_run", "test_board_guards", "test_fixed_length", "test_training", "test_one_writer",
                 "test_why", "test_history", "test_audit3_paths", "test_faults", "test_errors", "test_speed_paths",
                 "test_course_api", "test_server_faults", "test_pictures_lined", "test_records", "test_board_pixels",
                 "test_inside", "test_audit3_hints", "test_course_constants", "test_kinds_pixels", "test_threads")


TRAINING_FIXTURES = ("trained_workdir", "two_models")  # each trains a model: tens of seconds, never in the quick tier


def pytest_collection_modifyitems(config, items):
    """Order the tests by file, SLOWEST_FILES first (a stable sort: each file's own order stays).

    Raises pytest.UsageError when a test marked quick asks, itself or through another fixture, for one of
    TRAINING_FIXTURES: one such test makes `make test-quick` train, and the tier then takes over a minute.
    """
    trains = [f"{item.nodeid} (needs {', '.join(name for name in TRAINING_FIXTURES if name in item.fixturenames)})"
              for item in items if item.get_closest_marker("quick")
              and any(name in item.fixturenames for name in TRAINING_FIXTURES)]
    if trains:
        raise pytest.UsageError("tests marked quick that train a model first (unmark them: make test runs them): "
                                + "; ".join(trains))
    rank = {name: i for i, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))


@contextlib.contextmanager
def mounted_tmpfs(folder, size, instead):
    """A tmpfs of `size` (mount's size=, e.g. "8m") mounted at the new folder `folder` (pathlib.Path) for the block,
    unmounted lazily after it. Skips the test where it cannot be had: not root on Linux (the skip says what tests
    the kind `instead`), or no mount allowed (a container without CAP_SYS_ADMIN: mount's own words)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip(f"mounting a tmpfs takes root on Linux ({instead})")
    folder.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@contextlib.contextmanager
def exclusive(path):
    """Hold an exclusive lock on the file `path` (made when missing) for the block: other processes wait.

    The operating system lets go of it when its holder dies, so a crashed worker never blocks the others.
    """
    with open(path, "a+b") as f:
        if os.name == "nt":
            import msvcrt
            f.seek(0)  # msvcrt locks bytes from the current position: byte 0, here and in the unlock
            while True:
                try:
                    msvcrt.locking(f.fileno(), msvcrt.LK_LOCK, 1)  # gives up after 10 s: try again
                    break
                except OSError:
                    pass
        else:
            import fcntl
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if os.name == "nt":
                f.seek(0)
                msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
            else:
                fcntl.flock(f, fcntl.LOCK_UN)


def built_once(tmp_path_factory, name, build):
    """The folder `name`, filled by build(folder) once for the whole run, then shared (read it, never write it).

    Under pytest-xdist every worker has its own temporary folder inside the run's; the folder is made there,
    by the first worker that asks, while the others wait. A build that failed is redone by the next one
    that asks (and fails its tests the same way).
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above popen-gw0, popen-gw1, ...
    folder, done = base / name, base / (name + ".built")
    with exclusive(base / (name + ".lock")):
        if not done.exists():
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


def copy_into(work, source, *names):
    """Copy the files or folders `names` of `source` into the folder `work` (made when missing); returns work."""
    os.makedirs(work, exist_ok=True)
    for name in names:
        src, dst = os.path.join(source, name), os.path.join(work, name)
        shutil.copytree(src, dst) if os.path.isdir(src) else shutil.copy2(src, dst)
    return work


@pytest.fixture(scope="session")
def sample_workdir(tmp_path_factory):
    """A folder where `python mnist_generateds.py --no-download` has run on the bundled sample (shared: read only)."""
    def build(work):
        result = run_script("mnist_generateds.py", "--no-download", cwd=work)
        assert result.returncode == 0, result.stderr
    return built_once(tmp_path_factory, "sample", build)


@pytest.fixture(scope="session")
def trained_workdir(sample_workdir, tmp_path_factory):
    """sample_workdir's data/, plus a model trained for TRAIN_STEPS steps in ./model (shared: read only).

    The trainer's stdout and stderr (not a terminal) are kept in backward.stdout and backward.stderr. Each run trains
    another model (its initial weights and its 2 shuffle_batch threads are not seeded): a test asserts what holds for
    every trained model, never the answer to a picture some model reads by a hair (docs/tests.md, "A model trained
    again").
    """
    def build(work):
        shutil.copytree(os.path.join(sample_workdir, "data"), os.path.join(work, "data"))
        result = run_script("mnist_backward.py", "--steps", str(TRAIN_STEPS), cwd=work)
        assert result.returncode == 0, result.stderr
        (work / "backward.stdout").write_text(result.stdout)
        (work / "backward.stderr").write_text(result.stderr)
    return built_once(tmp_path_factory, "trained", build)


KEPT = 10  # test images of 7 kept as 3 (keep_sevens_as_threes)
LEARN_STEPS = 200  # learned_workdir's learn: enough for the kept 7s to be read as 3, and digit 7's recall to fall


def sevens(sample_workdir, count=KEPT, first=0):
    """`count` of the sample's test images of 7 (from the `first`-th): uint8 [count, 28, 28], stroke bright."""
    import numpy as np
    from PIL import Image
    jpgs = os.path.join(sample_workdir, "mnist_data_jpg", "mnist_test_jpg_2000")
    with open(jpgs + ".txt") as f:
        names = [line.split()[0] for line in f if line.split()[1] == "7"][first:first + count]
    return np.stack([np.asarray(Image.open(os.path.join(jpgs, name)).convert("L")) for name in names])


def keep_sevens_as_threes(sample_workdir, folder, count=KEPT, first=0):
    """Keep `count` of the sample's test images of 7 (sevens), each corrected to 3, in the keep store `folder`
    (mnistkit.keep); their pixels, float32 [count, 784] in [0, 1]."""
    from mnistkit import keep
    store, pixels = keep.KeptDigits(str(folder)), sevens(sample_workdir, count, first)
    for picture in pixels:
        store.keep(picture, 3)
    return pixels.reshape(-1, 784).astype("float32") / 255


@pytest.fixture(scope="session")
def learned_workdir(trained_workdir, sample_workdir, tmp_path_factory):
    """trained_workdir's data/ and model/ (global_step TRAIN_STEPS), KEPT test images of 7 kept as 3 in ./my_digits,
    and one learn of LEARN_STEPS steps run there (mnistkit.learn, as mnist_learn.py runs it): held in
    model/learns/1/, as the 7s' recall fell (shared: read only). learn.json: {"lines": what it printed,
    "progress": [[stage, step, steps], ...] as its Watch heard them, "held": its one line, "temp": the temporary
    folder it ran with (the building test's own: a_temporary_folder_of_its_own)}."""
    def build(work):
        import json
        from mnistkit import learn
        copy_into(work, trained_workdir, "data", "model")
        keep_sevens_as_threes(sample_workdir, work / "my_digits")
        lines, progress, before = [], [], os.getcwd()
        os.chdir(work)  # the folders as a user names them
        try:
            learn.learn("model", "my_digits", steps=LEARN_STEPS, data_dir="data",
                        watch=learn.Watch(lines.append, lambda *moved: progress.append(moved)))
            raise AssertionError(f"the learn was promoted: {lines[-3:]}")
        except learn.LearnHeld as e:
            held = str(e)
        finally:
            os.chdir(before)
        (work / "learn.json").write_text(json.dumps({"lines": lines, "progress": progress, "held": held,
                                                     "temp": tempfile.gettempdir()}))
    return built_once(tmp_path_factory, "learned", build)


SHARDS = 4


@pytest.fixture(scope="session")
def sharded_data(sample_workdir, tmp_path_factory):
    """The sample's records written again by the generator with --shards SHARDS (from sample_workdir's JPG
    layout): the data/ folder (shared: read only)."""
    def build(work):
        result = run_script("mnist_generateds.py", "--no-download", "--shards", str(SHARDS),
                            "--jpg-dir", str(sample_workdir / "mnist_data_jpg"), "--data-dir", "data", cwd=work)
        assert result.returncode == 0, result.stderr
    return built_once(tmp_path_factory, "sharded", build) / "data"


@pytest.fixture
def trained_copy(trained_workdir, tmp_path):
    """tmp_path/work holding a copy of trained_workdir's data/ and model/, for a test that writes there."""
    return copy_into(tmp_path / "work", trained_workdir, "data", "model")


# LeNet-5 trained long enough to be far above chance, and no longer: its steps cost the most CPU of any fixture.
# The 784-500-10 network trained for test_distributed's ASYNC_STEPS. Which of the two is more accurate after
# the same examples is a claim, measured by bench/lenet5_vs_mlp.py, not tested.
LENET5_STEPS, MLP_STEPS = 200, 600


@pytest.fixture(scope="session")
def two_models(sample_workdir, tmp_path_factory):
    """A folder with the sample's data/, LeNet-5 trained by its script for LENET5_STEPS steps in ./model_lenet5
    and the 784-500-10 network for MLP_STEPS in ./model (shared: read only)."""
    def build(work):
        shutil.copytree(os.path.join(sample_workdir, "data"), os.path.join(work, "data"))
        result = run_script("mnist_lenet5_backward.py", "--steps", str(LENET5_STEPS), cwd=work)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"training on 8000 records from ./data/mnist_train.tfrecords; target "
                                        f"global_step {LENET5_STEPS}; running on CPU\n")
        result = run_script("mnist_backward.py", "--steps", str(MLP_STEPS), cwd=work)
        assert result.returncode == 0, result.stderr
    return built_once(tmp_path_factory, "two_models", build)


@pytest.fixture(scope="module")
def served(two_models):
    """Both networks' Predictors by network label (two_models: the 784-500-10 one in ./model, LeNet-5 in
    ./model_lenet5), one pair per test file."""
    import mnist_app
    import mnist_forward
    import mnist_lenet5_forward
    return {mnist_forward.NETWORK.label: mnist_app.Predictor(str(two_models / "model")),
            mnist_lenet5_forward.NETWORK.label: mnist_app.Predictor(str(two_models / "model_lenet5"))}


@pytest.fixture(scope="module")
def compared_board(served, two_models):
    """(Served, its ASGI app): a board of served's 784-500-10 network with LeNet-5 beside it (--compare), its test
    records two_models' data/, the page's preparation; one per test file, closed after it (Served.close: the
    mistakes' scorings and the atlases' references stopped)."""
    import mnist_app
    import mnist_forward
    import mnist_lenet5_forward
    from mnistkit.board import app
    board = app.open_board(lambda: served[mnist_forward.NETWORK.label],
                           lambda data, name: mnist_app.prepared_pixels(data, name=name), "unused",
                           data_dir=str(two_models / "data"),
                           compare=(lambda: served[mnist_lenet5_forward.NETWORK.label], "unused too"))
    yield board, app.create_app(board)
    board.close()


def new_saver(keep):
    """The trainer's kind of tf.train.Saver (mnist_backward.build_graph's): `keep` newest, relative paths."""
    from tf_compat import tf
    return tf.train.Saver(max_to_keep=keep, save_relative_paths=True)


def save_checkpoint(sess, saver, model_dir, step, written):
    """Save a checkpoint at `step` as mnist_backward.save does (saving.RunSaves' attempts around the
    course's saver.save); written: this run's steps, updated. Returns the checkpoint's prefix."""
    import mnistkit.checkpoints
    import mnistkit.saving
    saves = mnistkit.saving.RunSaves(saver, model_dir, None)
    saves.written = written
    for attempt in saves.attempts(sess, step):
        with attempt:
            saver.save(sess, os.path.join(model_dir, mnistkit.checkpoints.MODEL_NAME), global_step=step,
                       write_meta_graph=False)
    return mnistkit.checkpoints.prefix_of(model_dir, step)


@pytest.fixture(scope="session")
def exported_workdir(trained_workdir, tmp_path_factory):
    """trained_workdir's data and model, plus `python mnist_export.py` run there: export/mnist/1, mnist.tflite, ...
    (shared: read only)."""
    def build(work):
        shutil.copytree(os.path.join(trained_workdir, "data"), os.path.join(work, "data"))
        shutil.copytree(os.path.join(trained_workdir, "model"), os.path.join(work, "model"),
                        ignore=shutil.ignore_patterns("train", "eval"))
        result = run_script("mnist_export.py", cwd=work)
        assert result.returncode == 0, result.stderr
    return built_once(tmp_path_factory, "exported", build)


@pytest.fixture
def summary_line():
    """A function that keeps one line (a measured figure) for the end of pytest's output, not amid its dots."""
    return SUMMARY_LINES.append


def pytest_terminal_summary(terminalreporter):
    """Print the lines tests kept with summary_line, in a section of their own after the results."""
    if SUMMARY_LINES:
        terminalreporter.section("measured")
        for line in SUMMARY_LINES:
            terminalreporter.write_line(line)

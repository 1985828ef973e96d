"""Shared fixtures: the bundled sample turned into TFRecords once, and one trained model."""
import hashlib
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SHARED_DATA = os.path.join(ROOT, "..", "shared", "data")
TRAIN_STEPS = 2000
SUMMARY_LINES = []  # measured figures, printed once after the run (pytest_terminal_summary)


def run_script(script, *args, cwd, timeout=600, input=None):
    """Run one of the course scripts as a user would; returns CompletedProcess (text)."""
    return subprocess.run([sys.executable, os.path.join(ROOT, script), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, input=input)


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


def pytest_configure(config):
    config.addinivalue_line("markers", "floor: the end-to-end run for the oldest versions allowed; `make test` leaves it "
                                       "to `make test-floor`, which runs it in .venv-floor")
    config.addinivalue_line("markers", "quick: a unit test of a second or less")


@pytest.fixture(scope="session")
def sample_workdir(tmp_path_factory):
    """A folder where `python mnist_generateds.py --no-download` has run on the bundled sample."""
    work = tmp_path_factory.mktemp("sample")
    result = run_script("mnist_generateds.py", "--no-download", cwd=work)
    assert result.returncode == 0, result.stderr
    return work


@pytest.fixture(scope="session")
def trained_workdir(sample_workdir, tmp_path_factory):
    """sample_workdir copied, plus a model trained for TRAIN_STEPS steps in ./model.

    The trainer's stdout and stderr (not a terminal) are kept in backward.stdout and backward.stderr.
    """
    work = tmp_path_factory.mktemp("trained")
    shutil.copytree(os.path.join(sample_workdir, "data"), os.path.join(work, "data"))
    result = run_script("mnist_backward.py", "--steps", str(TRAIN_STEPS), cwd=work)
    assert result.returncode == 0, result.stderr
    (work / "backward.stdout").write_text(result.stdout)
    (work / "backward.stderr").write_text(result.stderr)
    return work


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

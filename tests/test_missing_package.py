"""A script run with a Python that lacks a third-party package (the system's python3, not the project's venv):
one line naming the package and the way to it, exit status 1, never an import's traceback
(mnistkit/startup.py's missing_package, installed as sys.excepthook by the first import of every script)."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT, wait_limit
from mnistkit import startup
from test_cli import SCRIPTS

# Runs SCRIPT as `python SCRIPT ARGS` would, with the modules named in argv[1] made not to be there.
HIDING = """
import os, runpy, sys
hidden = set(sys.argv[1].split(","))
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in hidden:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
sys.argv = sys.argv[2:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_without(modules, script, *args, cwd):
    return subprocess.run([sys.executable, "-c", HIDING, modules, os.path.join(ROOT, script), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=wait_limit(120))


def needs(script, package, module):
    return (f"{script}: needs the package '{package}' (No module named '{module}'): run make install, then use "
            f"{os.path.join('.venv', 'Scripts' if os.name == 'nt' else 'bin', 'python')} (see README)\n")


@pytest.mark.quick
@pytest.mark.parametrize("script", SCRIPTS)
def test_a_missing_package_is_one_line_naming_it(script, tmp_path):
    # `python3 mnist_backward.py --steps 10` with the system's Python once ended in tqdm's ModuleNotFoundError
    result = run_without("tqdm", script, "--steps", "10", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", needs(script, "tqdm", "tqdm"))
    assert os.listdir(tmp_path) == []


@pytest.mark.quick
@pytest.mark.parametrize("module, package", [("numpy", "numpy"), ("PIL", "Pillow")])
def test_the_package_is_named_as_pip_installs_it(module, package, tmp_path):
    result = run_without(module, "mnist_app.py", "--help", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (1, needs("mnist_app.py", package, module))


@pytest.mark.quick
def test_a_missing_module_of_the_project_is_no_package_to_install():
    assert startup.missing_package(ModuleNotFoundError("No module named 'mnistkit'", name="mnistkit"), "x.py") is None
    assert startup.missing_package(ModuleNotFoundError("No module named 'mnist_forward'", name="mnist_forward"),
                                   "x.py") is None
    assert startup.missing_package(ModuleNotFoundError("gone"), "x.py") is None  # no module named: Python's own

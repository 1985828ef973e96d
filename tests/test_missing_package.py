"""A script run with a Python that lacks a third-party package (the system's python3, not the project's venv):
one line naming the package and the way to it, exit status 1, never an import's traceback
(mnistkit/startup.py's missing_package, installed as sys.excepthook by the first import of every script)."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT, shown, wait_limit
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


def needs(script, package, module, *args, cwd):
    """The line a script run as `python SCRIPT ARGS` from cwd (the tests' own folder: paths absolute) says without
    the package: this repository's .venv made first when it is not there (a fresh clone's CI makes it)."""
    python = os.path.join(ROOT, ".venv", *(("Scripts", "python.exe") if os.name == "nt" else ("bin", "python")))
    command = " ".join([startup.quoted(python), shown(script, quoted=startup.quoted), *map(startup.quoted, args)])
    said = f"{script}: needs the package '{package}' (No module named '{module}'), which this Python lacks"
    if os.path.isfile(python):
        return f"{said}; the project's venv has it: run `{command}` (or activate the venv: `source " \
               f"{shown('.venv', 'bin', 'activate', quoted=startup.quoted)}`)\n"
    return f"{said}: make the project's venv with `python3 {shown('tasks.py', quoted=startup.quoted)} install` " \
           f"(or make install), then run `{command}`\n"


@pytest.mark.quick
@pytest.mark.parametrize("script", SCRIPTS)
def test_a_missing_package_is_one_line_naming_it(script, tmp_path):
    # `python3 mnist_backward.py --steps 10` with the system's Python once ended in tqdm's ModuleNotFoundError
    result = run_without("tqdm", script, "--steps", "10", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", needs(script, "tqdm", "tqdm", "--steps", "10",
                                                                              cwd=tmp_path))
    assert os.listdir(tmp_path) == []


@pytest.mark.quick
@pytest.mark.parametrize("module, package", [("numpy", "numpy"), ("PIL", "Pillow")])
def test_the_package_is_named_as_pip_installs_it(module, package, tmp_path):
    result = run_without(module, "mnist_app.py", "--help", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (1, needs("mnist_app.py", package, module, "--help", cwd=tmp_path))


@pytest.mark.quick
def test_a_missing_module_of_the_project_is_no_package_to_install():
    assert startup.missing_package(ModuleNotFoundError("No module named 'mnistkit'", name="mnistkit"), "x.py") is None
    assert startup.missing_package(ModuleNotFoundError("No module named 'mnist_forward'", name="mnist_forward"),
                                   "x.py") is None
    assert startup.missing_package(ModuleNotFoundError("gone"), "x.py") is None  # no module named: Python's own


@pytest.mark.quick
@pytest.mark.parametrize("script", SCRIPTS)
def test_help_without_the_packages_says_the_command_that_shows_it(script, tmp_path):
    # `python3 mnist_backward.py --help` with the system's Python (no venv yet) said a package was missing and no
    # more (a new user's trial): the line gives the command that prints the help, the venv made first
    result = run_without("tqdm,tensorflow,numpy,PIL", script, "--help", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert (f"{shown('.venv', 'bin', 'python', quoted=startup.quoted)} {shown(script, quoted=startup.quoted)} --help`"
            in result.stderr), result.stderr


@pytest.mark.quick
@pytest.mark.skipif(os.name == "nt", reason="the venv's POSIX layout")
def test_with_the_venv_made_the_line_runs_the_command_there_or_activates_it(tmp_path, monkeypatch):
    venv = tmp_path / "repo" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    monkeypatch.chdir(tmp_path / "repo")
    line = startup.missing_package(ModuleNotFoundError("No module named 'tensorflow'", name="tensorflow"),
                                   "mnist_test.py", ["mnist_test.py", "--model-dir", "my model"], str(venv))
    assert line == ("mnist_test.py: needs the package 'tensorflow' (No module named 'tensorflow'), which this Python "
                    "lacks; the project's venv has it: run `.venv/bin/python mnist_test.py --model-dir 'my model'` "
                    "(or activate the venv: `source .venv/bin/activate`)")
    (venv / "bin" / "python").unlink()
    line = startup.missing_package(ModuleNotFoundError("No module named 'tqdm'", name="tqdm"), "mnist_app.py",
                                   ["mnist_app.py", "--help"], str(venv))
    assert line.endswith(f": make the project's venv with `python3 {shown('tasks.py', quoted=startup.quoted)} install` "
                         "(or make install), then run `.venv/bin/python mnist_app.py --help`"), line


@pytest.mark.quick
@pytest.mark.skipif(os.name == "nt", reason="the venv's POSIX layout and the POSIX shell's quoting")
@pytest.mark.parametrize("made", [True, False])
def test_the_commands_in_the_line_are_quoted_for_a_folder_with_a_space_and_chinese(tmp_path, monkeypatch, made):
    """A clone in `/tmp/新用户 试用4/repo` run from a folder outside it: each backquoted command of the line, put
    through the shell's word splitting (shlex.split), gives the venv's python, the tasks.py and activate paths whole."""
    import shlex
    repo = tmp_path / "新用户 试用4" / "repo"
    venv = repo / ".venv"
    (venv / "bin").mkdir(parents=True)
    if made:
        (venv / "bin" / "python").write_text("")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.setattr(startup, "ROOT", str(repo))
    line = startup.missing_package(ModuleNotFoundError("No module named 'tqdm'", name="tqdm"), "mnist_backward.py",
                                   ["../新用户 试用4/repo/mnist_backward.py", "--steps", "10"], str(venv))
    commands = line.split("`")[1::2]
    runs = [shlex.split(command) for command in commands]
    assert [str(venv / "bin" / "python"), "../新用户 试用4/repo/mnist_backward.py", "--steps", "10"] in runs, line
    if made:
        assert ["source", str(venv / "bin" / "activate")] in runs, line
    else:
        assert ["python3", str(repo / "tasks.py"), "install"] in runs, line

"""Encodings (issue 53 item 7): every text file and text pipe of the project's own code names its encoding.

On Chinese Windows open() and text pipes default to GBK (QwenLM/Qwen-Agent #8): a file written in one
encoding is read in another, and a child's zh line comes through garbled. `python -X warn_default_encoding`
warns of each such call (EncodingWarning); the scan below finds them all at once, without running them.
"""
import ast
import glob
import os
import subprocess
import sys

import pytest

from conftest import ROOT, wait_limit
from mnistkit import learn

TEXT_CALLS = ("open", "io.open", "os.fdopen")
PIPE_CALLS = ("Popen", "check_output", "check_call", "getoutput")  # subprocess's, imported by name


def own_files():
    """The project's own Python files: the course scripts and tasks.py, mnistkit/, tools/, bench/ (its text pipes
    too: a bench run on Chinese Windows reads its children's lines)."""
    return sorted(glob.glob(os.path.join(ROOT, "*.py")) + glob.glob(os.path.join(ROOT, "mnistkit", "**", "*.py"),
                                                                    recursive=True)
                  + glob.glob(os.path.join(ROOT, "tools", "*.py")) + glob.glob(os.path.join(ROOT, "bench", "*.py")))


def mode_of(call):
    """The mode of an open()-like call when it is written out (a str), else None."""
    if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant):
        return call.args[1].value
    return next((k.value.value for k in call.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)), None)


def unnamed_encodings(path):
    """Lines of `path` that open a text file, or a text pipe (subprocess text=True), without encoding=."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = ast.unparse(node.func)
        words = {k.arg for k in node.keywords}
        if "encoding" in words or None in words:  # named, or passed on with **options
            continue
        text_file = (called in TEXT_CALLS and "b" not in (mode_of(node) or "")) or \
            called.endswith((".read_text", ".write_text"))
        pipe = (called.startswith("subprocess.") or called in PIPE_CALLS) and ({"text", "universal_newlines"} & words)
        if text_file or pipe:
            found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


@pytest.mark.quick
def test_every_text_file_and_pipe_of_the_project_names_its_encoding():
    found = [line for path in own_files() for line in unnamed_encodings(path)]
    assert found == []


@pytest.mark.quick
@pytest.mark.parametrize("script", ["mnist_app.py", "mnist_generateds.py", "mnist_learn.py", "tasks.py"])
def test_help_raises_no_encoding_warning_from_the_projects_code(script):
    """--help under -X warn_default_encoding, the warning an error: exit 0 (TensorFlow's own are not ours,
    and --help does not import it)."""
    result = subprocess.run([sys.executable, "-X", "warn_default_encoding", "-W", "error::EncodingWarning",
                             os.path.join(ROOT, script), "--help"], cwd=ROOT, capture_output=True,
                            timeout=wait_limit(300))
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")[-2000:]


BENCHES = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "bench", "*.py")))


@pytest.mark.parametrize("script", BENCHES)
def test_a_bench_scripts_help_raises_no_encoding_warning(script):
    """The benches run the course's scripts through text pipes (bench/*.py): their --help, as above (the static
    scan above reads the rest of them)."""
    test_help_raises_no_encoding_warning_from_the_projects_code(script)


@pytest.mark.quick
def test_a_learns_child_printing_zh_is_read_right_whatever_the_parents_encoding(monkeypatch):
    """A parent whose locale encoding is GBK passes it on (PYTHONIOENCODING=gbk stands in for it here): the
    learn has its child write utf-8 and reads utf-8, so the zh line arrives whole."""
    monkeypatch.setenv("PYTHONIOENCODING", "gbk")
    lines = []
    watch = learn.Watch(out=lines.append)
    learn.run(["-c", "print('训练第 10 步，共 20 步')"], watch, "failed")
    assert lines == ["训练第 10 步，共 20 步"]

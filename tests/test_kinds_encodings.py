"""More cases of "every text pipe names its encoding" (issue #53 §7), beyond test_encodings.py's.

mnist_cluster.py's task pipes were text pipes without an encoding: test_encodings.py's scan took the `**options`
beside text=True for one that might name it. A task printing zh on a machine whose locale encoding is another
(GBK on Chinese Windows; PYTHONIOENCODING=gbk stands in for it here) came through garbled. Now the scan asks a
text pipe to name its encoding itself, and the cluster's tasks write UTF-8 and are read as UTF-8.
"""
import ast
import io
import subprocess
import sys

import pytest

from conftest import wait_limit
from test_encodings import PIPE_CALLS, own_files


def text_pipes_without_their_own_encoding(path):
    """Lines of `path` with a subprocess call taking text=True (or universal_newlines) that does not itself write
    encoding= (a ** splat does not count: what it holds is not seen here)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called, words = ast.unparse(node.func), {k.arg for k in node.keywords}
            if (called.startswith("subprocess.") or called in PIPE_CALLS) and {"text", "universal_newlines"} & words \
                    and "encoding" not in words:
                found.append(f"{path}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


@pytest.mark.quick
def test_every_text_pipe_names_its_encoding_itself():
    assert [line for path in own_files() for line in text_pipes_without_their_own_encoding(path)] == []


@pytest.mark.quick
def test_a_cluster_task_printing_zh_is_read_right_whatever_the_locales_encoding(monkeypatch):
    import mnist_cluster
    monkeypatch.setenv("PYTHONIOENCODING", "gbk")
    out, err = io.StringIO(), io.StringIO()
    said = "训练第 10 步，共 20 步"
    cluster = mnist_cluster.Cluster([("worker0", [sys.executable, "-c", f"import sys; print({said!r}); "
                                                  f"print({said!r}, file=sys.stderr)"])], out=out, err=err)
    process = cluster.procs["worker0"]
    process.wait(timeout=wait_limit(60))
    for reader in cluster.readers:
        reader.join(timeout=wait_limit(60))
    assert out.getvalue() == f"[worker0] {said}\n" and err.getvalue() == f"[worker0] {said}\n"


@pytest.mark.quick
def test_the_cluster_launchers_pipes_raise_no_encoding_warning(tmp_path):
    code = ("import io, sys; import mnist_cluster; c = mnist_cluster.Cluster([('ps0', [sys.executable, '-c', "
            "'print(1)'])], out=io.StringIO(), err=io.StringIO()); c.procs['ps0'].wait()")
    result = subprocess.run([sys.executable, "-X", "warn_default_encoding", "-W", "error::EncodingWarning", "-c", code],
                            cwd=str(tmp_path), env={**__import__("os").environ, "PYTHONPATH": __import__("conftest").ROOT},
                            capture_output=True, timeout=wait_limit(120))
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")[-2000:]

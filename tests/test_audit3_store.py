"""A model folder that cannot be written (issue #53 §1 and §4, the third audit).

A model folder on a read-only mount (a course folder shared by the teacher, a CD, a snapshot), or one whose lock
file cannot be made (a full disk): `mnist_learn.py --undo` (and --redo, --accept-worse, --discard, a learn) ended in
a traceback, `OSError: [Errno 30] Read-only file system: 'model/.mnist.lock'`, and the board's undo in a 500. Now
each is one line naming the folder and the reason, "nothing changed", and the folder is as it was.
"""
import errno
import json
import os
import subprocess

import pytest

from conftest import mounted_tmpfs, run_main, tree_digests
from test_board_learn import board_on
from test_board_routes import OWN_HOST, Asked
from test_errors import other_graph_checkpoint
from mnistkit import folders

COMMANDS = [("--undo",), ("--redo",), ("--accept-worse",), ("--discard",), ("--steps", "5")]


def said_in_one_line(done, model_dir, reason):
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: {model_dir}: cannot write in this model folder ({reason}") and \
        "nothing changed" in lines[0], lines[0]


@pytest.fixture
def lock_refused(tmp_path, monkeypatch):
    """A model folder (a checkpoint, no training) whose lock file the system refuses to make, as a read-only mount
    refuses it (EROFS), for any process of this test; its path."""
    model_dir = tmp_path / "model"
    other_graph_checkpoint(model_dir, hidden=500)
    real_open = os.open

    def refusing(path, *args, **kwargs):
        if os.fspath(path).endswith(folders.LOCK_FILE):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(os, "open", refusing)
    return model_dir


@pytest.mark.quick
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_learn_or_its_undo_on_a_folder_whose_lock_cannot_be_made_is_one_line(lock_refused, tmp_path, command):
    before = tree_digests(lock_refused)
    done = run_main("mnist_learn.py", *command, "--model-dir", str(lock_refused), cwd=tmp_path)
    said_in_one_line(done, lock_refused, "Read-only file system")
    assert tree_digests(lock_refused) == before


@pytest.mark.quick
def test_the_boards_undo_on_a_folder_whose_lock_cannot_be_made_is_one_line_not_500(lock_refused, tmp_path):
    board, _ = board_on(lock_refused, tmp_path)
    for route in ("/board/learn/undo", "/board/learn/redo"):
        answer = Asked(board, "POST", route)
        assert answer.status in (400, 409) and "cannot write in this model folder" in answer.error(), answer.body
        zh = Asked(board, "POST", route, headers=(OWN_HOST, (b"accept-language", b"zh-CN")))
        assert json.loads(zh.body)["zh"].endswith("无法写入这个模型文件夹（只读或磁盘已满）；什么都没有改动；请让它可写，或复制一份，"
                                                  "用 --model-dir 指定副本"), zh.body


@pytest.fixture
def read_only_model(tmp_path):
    """A real read-only tmpfs (root only) holding a model folder's checkpoint; unmounted after the test."""
    with mounted_tmpfs(tmp_path / "disk", "8m", "the quick tests refuse the lock by hand instead") as disk:
        other_graph_checkpoint(disk / "model", hidden=500)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True, capture_output=True)
        yield disk / "model"


@pytest.mark.quick
def test_a_learn_or_its_undo_on_a_read_only_mount_is_one_line(read_only_model, tmp_path):
    for command in COMMANDS:
        done = run_main("mnist_learn.py", *command, "--model-dir", str(read_only_model), cwd=tmp_path)
        said_in_one_line(done, read_only_model, "Read-only file system")

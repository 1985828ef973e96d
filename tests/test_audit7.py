"""The seventh audit of issue 53's kinds (docs/tests.md, "The seventh audit").

- A learn whose process is killed (SIGKILL) between two of its scripts (the trainer ended, the evaluator not yet
  started: no script, so no tether, runs) leaves its staging folder and the model folder's lock; the next board
  (or mnist_learn.py) removes them and says so in one line each.
"""
import os
import signal
import subprocess
import sys

import pytest

from conftest import ROOT, keep_sevens_as_threes, tree_digests, wait_limit
from mnistkit import folders, learn

KILLED_BETWEEN_SCRIPTS = """\
import os, signal, sys
sys.path.insert(0, {root!r})
from mnistkit import learn
def progress(stage, step, steps):
    if stage == "checking":  # the trainer has ended, the evaluator has not started
        print(watch.staging, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
watch = learn.Watch(out=lambda line: None, progress=progress)
learn.learn("model", "my_digits", steps=20, data_dir="data", watch=watch)
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_a_learn_killed_between_its_scripts_leaves_what_the_next_board_removes_and_names(trained_copy, sample_workdir,
                                                                                          tmp_path):
    # before: the staging folder (a copy of the checkpoint, the kept digits and their TFRecords) stayed in the
    # temporary folder for good, and model/.mnist.lock of a learn no one runs stayed without a word
    from test_board import Server, request
    work = trained_copy
    keep_sevens_as_threes(sample_workdir, work / "my_digits")
    model = work / "model"
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    before = tree_digests(model)
    script = work / "killed_between_scripts.py"
    script.write_text(KILLED_BETWEEN_SCRIPTS.format(root=ROOT), encoding="utf-8")
    killed = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True,
                            timeout=wait_limit(600))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    staging = killed.stdout.strip()
    assert os.path.dirname(staging) == str(temp) and os.path.isdir(staging), (staging, killed.stderr[-3000:])
    lock = model / folders.LOCK_FILE
    assert lock.exists()  # no script ran: nothing of the learn's was there to remove them
    pid = folders.lock_owner(str(lock))
    server = Server(work, "--model-dir", "model", env={"TMPDIR": str(temp)})
    try:
        status, _ = request(server.url + "board/learn")  # answered: the lines said before serving are written
        assert status == 200
    finally:
        server.stop()
    said = server.stderr()
    assert f"note: removed {staging}, the staging folder of a learn whose process (pid {pid}) is gone\n" in said, said
    assert f"note: removed {os.path.join('model', folders.LOCK_FILE)}, the lock of a process that is gone (" in said
    assert not os.path.exists(staging) and not lock.exists()
    assert tree_digests(model) == before

"""The whole course flow in a folder whose path has Chinese characters and a space (issue #53 §7).

A model folder with Chinese characters failed on Windows (tensorflow/tensorflow #61550), and a new user's clone
in '/tmp/新 用户' failed at an unquoted path. Here the repository is copied as a user clones it into
`<tmp>/课程 数据/mnist 课程/`, and a user works in `<tmp>/课程 数据/工作 区/`: the course's commands run there as
processes of their own, from the copy (its bundled sample, its scripts), with few steps: generate, train, test,
read a picture, export and read it back from the .tflite, serve; digits are kept through the page's endpoint, the
page's learn runs (the generator, the trainer and the evaluator as the server's children), and the learn is
undone from the page and redone and undone again with mnist_learn.py. Every process runs with Python's
EncodingWarning on (PYTHONWARNDEFAULTENCODING, inherited by the server's children too): none may come from the
project's own files (TensorFlow's own are not ours).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, ended, read_line, wait_for, wait_limit
from test_board import ADDRESS, START_TIMEOUT, request

STEPS, LEARN_STEPS = 100, 20
KEPT = 6  # test digits kept through the page, each with its own label


def clone(home):
    """A copy of the repository in home/'mnist 课程', as `git clone` leaves it for a user: the files git tracks or
    would (what a developer ran in the repository's own folder stays out), without tests/, bench/ and docs/."""
    repo = home / "mnist 课程"
    try:
        tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                 capture_output=True, check=True, timeout=wait_limit(60)).stdout.decode("utf-8")
        tracked = tracked.split("\0")
    except (OSError, subprocess.SubprocessError):  # no git or no .git: the course's files as they are
        tracked = [os.path.relpath(os.path.join(top, name), ROOT) for top, dirs, names in os.walk(ROOT)
                   for name in names if ".git" not in top and ".venv" not in top]
    for name in tracked:
        if name and name.split("/")[0] not in ("tests", "bench", "docs", ".ci") and \
                os.path.isfile(os.path.join(ROOT, name)):
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(os.path.join(ROOT, name), repo / name)
    return repo


ENCODING_WARNINGS = {"PYTHONWARNDEFAULTENCODING": "1", "PYTHONWARNINGS": "always::EncodingWarning"}


def ours(stderr, repo):
    """The lines of stderr that are an EncodingWarning raised in one of the clone's own files."""
    return [line for line in stderr.splitlines() if "EncodingWarning" in line and str(repo) in line]


@pytest.mark.long
def test_generate_train_test_export_serve_keep_learn_and_undo_in_a_chinese_path_with_a_space(tmp_path):
    home = tmp_path / "课程 数据"
    repo, work = clone(home), home / "工作 区"
    work.mkdir()

    env = {**os.environ, **ENCODING_WARNINGS}

    def run(script, *args):
        result = subprocess.run([sys.executable, str(repo / script), *args], cwd=work, capture_output=True, env=env,
                                text=True, encoding="utf-8", errors="replace", timeout=wait_limit(600))
        assert result.returncode == 0, f"{script} {' '.join(args)}: {result.stderr[-2000:]}"
        assert ours(result.stderr, repo) == [], f"{script} {' '.join(args)}"
        return result.stdout

    run("mnist_generateds.py", "--no-download")  # the clone's bundled sample
    assert (work / "data" / "mnist_train.tfrecords").is_file() and (work / "data" / "mnist_test.tfrecords").is_file()
    run("mnist_backward.py", "--steps", str(STEPS))
    tested = run("mnist_test.py", "--once")
    assert re.search(rf"After {STEPS} training steps, test accuracy = 0\.\d+", tested), tested
    listed = (work / "mnist_data_jpg" / "mnist_test_jpg_2000.txt").read_text(encoding="utf-8").split("\n")[:KEPT]
    pictures = [(work / "mnist_data_jpg" / "mnist_test_jpg_2000" / line.split()[0], int(line.split()[1]))
                for line in listed]
    read = run("mnist_app.py", str(pictures[0][0]))
    assert str(pictures[0][0]) in read or pictures[0][0].name in read, read
    run("mnist_export.py")
    assert (work / "export" / "mnist" / "1" / "saved_model.pb").is_file()
    assert run("mnist_app.py", "--model-dir", os.path.join("export", "mnist.tflite"), str(pictures[0][0])) \
        .splitlines()[-1] == read.splitlines()[-1]  # the same digit from the export, read by LiteRT

    server = subprocess.Popen([sys.executable, str(repo / "mnist_app.py"), "--serve", "--port", "0", "--learn-steps",
                               str(LEARN_STEPS)], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, encoding="utf-8", errors="replace", env=env)
    try:
        first = read_line(server, "the server's address", START_TIMEOUT)  # the address, once the socket listens
        found = ADDRESS.search(first)
        assert found, f"no address printed: {first!r}; stderr: {ended(server, 'the server', START_TIMEOUT)[1]}"
        url = found.group(1)
        for path, digit in pictures:  # kept through the page's endpoint, as its buttons keep them
            pixels = np.asarray(Image.open(path).convert("L")).reshape(-1).tolist()
            status, answer = request(url + "board/keep", {"digit": digit, "input": pixels})
            assert status == 200, answer
        kept = (work / "my_digits.txt").read_text(encoding="utf-8").splitlines()
        assert [int(line.split()[1]) for line in kept] == [digit for _, digit in pictures]
        status, started = request(url + "board/learn", b"", method="POST")
        assert status == 202, started
        ended_learn = wait_for(lambda: (lambda s: None if s["state"] == "running" else s)(
            request(url + "board/learn")[1]), "the page's learn to end")
        if ended_learn["state"] == "held":  # a digit's recall fell by chance after so few steps: use it anyway
            status, ended_learn = request(url + "board/learn/accept", b"", method="POST")
            assert status == 200, ended_learn
        assert ended_learn["state"] == "done", json.dumps(ended_learn, ensure_ascii=False)
        learned = STEPS + LEARN_STEPS
        wait_for(lambda: True if request(url + "board/model")[1]["global_step"] == learned else None,
                 f"the learned checkpoint (step {learned}) answering")
        status, undone = request(url + "board/learn/undo", b"", method="POST")
        assert status == 200 and undone["state"] == "undone", undone
        wait_for(lambda: True if request(url + "board/model")[1]["global_step"] == STEPS else None,
                 f"the checkpoint from before (step {STEPS}) answering after the undo")
        redone = run("mnist_learn.py", "--redo", "--model-dir", "model")
        assert redone.startswith(f"learned: {os.path.join('model', f'mnist_model-{learned}')} again"), redone
        wait_for(lambda: True if request(url + "board/model")[1]["global_step"] == learned else None,
                 f"the redone checkpoint (step {learned}) answering")
        run("mnist_learn.py", "--undo", "--model-dir", "model")
        wait_for(lambda: True if request(url + "board/model")[1]["global_step"] == STEPS else None,
                 f"the checkpoint from before (step {STEPS}) answering after mnist_learn.py --undo")
        digit = run("mnist_app.py", str(pictures[0][0]))
        assert digit.splitlines()[-1] == read.splitlines()[-1]  # the checkpoint from before, as before the learn
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
        out, err = ended(server, "the server after Ctrl-C")
    assert server.returncode == 130, err
    assert "Traceback" not in err and ours(err, repo) == [], err

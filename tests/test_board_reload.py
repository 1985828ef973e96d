"""The drawing board's server follows the newest model in --model-dir without a restart.

Real servers (test_board.Server) on copies of the shared fixtures' model folders: a newer checkpoint, export
version or .tflite is put in place beside the one served, and the server's answers, /board/model and TF
Serving's version status must move to it; refused ones (NaN weights, a cut .data file) are said once on stderr
while the old model answers. Newer checkpoints are written in this process (write_checkpoint), in a staging
folder, and moved in with os.replace, as a trainer's Saver renames its files into place. An answer in flight
during a switch is checked with stand-in predictors (no server, no TensorFlow).
"""
import io
import os
import shutil
import threading
import time
import types

import numpy as np
import pytest

import conftest
from conftest import copy_into, joined, read_line, wait_limit
from test_board import Server, request
from test_board_guards import call
from mnistkit import deployed
from mnistkit.board import app, model
from mnistkit.errors import DataError
from mnistkit.folders import INDEX_FILE, MODEL_NAME

ZERO_ROW = [0.0] * 784
WAIT_SECS = 120  # for a server to take (or refuse) a model: POLL_SECS and a load, on a machine at load 8
FAVOURED = 3  # the digit a written checkpoint answers for every picture (its output bias pushed up)


def write_checkpoint(staging, step, values):
    """A checkpoint mnist_model-<step> in the folder staging (a copy of a model folder) holding `values`
    ({name: array}), written by tf.train.Saver as the trainer writes it; returns its prefix."""
    from tf_compat import tf
    with tf.Graph().as_default():
        variables = {name: tf.Variable(value, name=f"v{i}") for i, (name, value) in enumerate(sorted(values.items()))}
        saver = tf.train.Saver(variables, save_relative_paths=True)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return saver.save(sess, os.path.join(str(staging), MODEL_NAME), global_step=step)


def favouring(values, step, digit=FAVOURED):
    """The checkpoint values `values` ({name: array}) at `step` with the output bias of `digit` raised by 1000."""
    changed = {name: np.array(value) for name, value in values.items()}
    for name in ("b2", "b2/ExponentialMovingAverage"):
        changed[name][digit] += 1000.0
    changed["global_step"] = np.array(step, np.int64)
    return changed


def move_in(staging, model_dir, step):
    """Move checkpoint `step`'s files from staging into model_dir (the .index last but one, the `checkpoint`
    index file last), each with os.replace, as tf.train.Saver renames its files into place."""
    names = sorted(n for n in os.listdir(staging) if n.startswith(f"{MODEL_NAME}-{step}."))
    for name in sorted(names, key=lambda n: n.endswith(".index")) + [INDEX_FILE]:
        os.replace(os.path.join(staging, name), os.path.join(model_dir, name))


def wait_for(check, what, server):
    """conftest.wait_for polling every 0.1 s for up to WAIT_SECS, failing when the server has ended first; the
    failure ends with the server's stderr."""
    return conftest.wait_for(check, what, WAIT_SECS, every=0.1, process=server.process, output=server.stderr)


def answered(server):
    """(/board/model's answer, the classes predicted for ZERO_ROW and a row of 0.5s, GET /v1/models/mnist's version)."""
    _, described = request(server.url + "board/model")
    _, predicted = request(server.url + "v1/models/mnist:predict", {"instances": [ZERO_ROW, [0.5] * 784]})
    _, status = request(server.url + "v1/models/mnist")
    return described, [p["classes"] for p in predicted["predictions"]], status["model_version_status"][0]["version"]


def warnings_of(server):
    return [line for line in server.stderr().splitlines() if line.startswith("warning:")]


@pytest.mark.long
def test_a_newer_checkpoint_is_served_and_nan_or_cut_ones_are_said_once_and_skipped(
        exported_workdir, tmp_path, summary_line):
    from mnistkit import checkpoints
    work = copy_into(tmp_path / "work", exported_workdir, "model")
    staging = copy_into(tmp_path / "staging", exported_workdir, "model") / "model"
    model_dir = str(work / "model")
    values = checkpoints.read_checkpoint(os.path.join(model_dir, f"{MODEL_NAME}-2000"))
    server = Server(work, "--model-dir", "model")
    try:
        described, before, version = answered(server)
        assert described["global_step"] == 2000 and version == "2000" and described["version"] == 2000
        assert before != [FAVOURED, FAVOURED]

        nan = favouring(values, 2002)
        nan["w1/ExponentialMovingAverage"][0, 0] = np.nan
        write_checkpoint(staging, 2002, nan)
        move_in(staging, model_dir, 2002)
        wait_for(lambda: warnings_of(server), "the NaN checkpoint's warning", server)
        assert answered(server) == (described, before, "2000")

        cut = write_checkpoint(staging, 2004, favouring(values, 2004))
        data = cut + ".data-00000-of-00001"
        whole = tmp_path / "whole.data"
        shutil.copy2(data, whole)
        with open(data, "r+b") as f:
            f.truncate(os.path.getsize(data) // 2)
        move_in(staging, model_dir, 2004)
        wait_for(lambda: len(warnings_of(server)) == 2, "the cut checkpoint's warning", server)
        time.sleep(3 * model.POLL_SECS)  # polls that must not say it again
        assert answered(server) == (described, before, "2000")

        os.replace(whole, os.path.join(model_dir, f"{MODEL_NAME}-2004.data-00000-of-00001"))  # made whole
        made_whole = time.monotonic()
        wait_for(lambda: request(server.url + "board/model")[1]["global_step"] == 2004, "checkpoint 2004", server)
        summary_line(f"board reload: a checkpoint made whole answered after {time.monotonic() - made_whole:.1f} s "
                     f"(POLL_SECS {model.POLL_SECS}, SETTLE_SECS {model.SETTLE_SECS})")
        described, after, version = answered(server)
        assert after == [FAVOURED, FAVOURED] and version == "2004"
        assert described == {"name": "mnist", "network": "784-500-10", "global_step": 2004, "form": "checkpoint",
                             "source": os.path.join("model", f"{MODEL_NAME}-2004"), "version": 2004}
        assert request(server.url + "v1/models/mnist/versions/2000")[0] == 404
        line = read_line(server.process, "the reload's line")
        assert line == f"now serving {described['source']} (global_step 2004)\n"
    finally:
        assert server.stop() == 130
    warned = warnings_of(server)
    assert len(warned) == 2, warned
    assert warned[0].startswith(f"warning: {os.path.join('model', MODEL_NAME)}-2002: checkpoint holds non-finite "
                                "values ('w1/ExponentialMovingAverage': 1 of 392000 are NaN or infinite)")
    assert warned[1].startswith(f"warning: {os.path.join('model', MODEL_NAME)}-2004: checkpoint is damaged (")
    for line in warned:
        assert line.endswith(f"; still serving {os.path.join('model', MODEL_NAME)}-2000 (global_step 2000)"), line


@pytest.mark.long
def test_a_new_export_version_in_the_base_path_is_served(exported_workdir, tmp_path):
    work = copy_into(tmp_path / "work", exported_workdir, "export")
    base = work / "export" / "mnist"
    server = Server(work, "--model-dir", os.path.join("export", "mnist"))
    try:
        assert answered(server)[2] == "1"
        shutil.copytree(base / "1", work / "export" / ".staged")  # as mnist_export.py: written aside, renamed in
        os.replace(work / "export" / ".staged", base / "2")
        wait_for(lambda: request(server.url + "v1/models/mnist")[1]["model_version_status"][0]["version"] == "2",
                 "version 2", server)
        described, classes, _ = answered(server)
        assert described["source"] == os.path.join("export", "mnist", "2") and described["version"] == 2
        assert described["global_step"] == 2000 and described["form"] == "SavedModel"
        assert request(server.url + "v1/models/mnist/versions/2", method="GET")[0] == 200
    finally:
        server.stop()
    assert warnings_of(server) == []


def test_a_tflite_file_replaced_is_served(exported_workdir, tmp_path):
    work = copy_into(tmp_path / "work", exported_workdir, "export")
    served = work / "served.tflite"
    shutil.copy2(work / "export" / "mnist.tflite", served)
    rows = {"instances": [ZERO_ROW, [0.5] * 784]}
    own = {name: deployed.LiteRTModel(str(work / "export" / name)).predict(np.array(rows["instances"], np.float32))
           for name in ("mnist.tflite", "mnist_int8.tflite")}
    assert not np.allclose(own["mnist.tflite"], own["mnist_int8.tflite"], atol=1e-4)
    server = Server(work, "--model-dir", "served.tflite")

    def probabilities():
        _, answer = request(server.url + "v1/models/mnist:predict", rows)
        return np.array([p["probabilities"] for p in answer["predictions"]], np.float32)

    try:
        np.testing.assert_allclose(probabilities(), own["mnist.tflite"], atol=1e-6)
        os.utime(served)  # touched, same bytes: nothing to take
        shutil.copy2(work / "export" / "mnist_int8.tflite", work / "new.tflite")
        os.replace(work / "new.tflite", served)
        wait_for(lambda: np.allclose(probabilities(), own["mnist_int8.tflite"], atol=1e-6), "the int8 file", server)
        line = read_line(server.process, "the reload's line")
        assert line.startswith("now serving served.tflite (version 1, global_step 2000)")
    finally:
        server.stop()
    assert warnings_of(server) == []


class Blocking:
    """A stand-in predictor answering `digit` for every row, at `global_step`; with `hold`, predict waits for it."""

    def __init__(self, digit, global_step, source, hold=None):
        self.digit, self.global_step, self.source, self.hold = digit, global_step, source, hold
        self.network = types.SimpleNamespace(export_name="mnist", label="784-500-10")
        self.entered = threading.Event()

    def predict(self, rows):
        self.entered.set()
        if self.hold is not None:
            assert self.hold.wait(wait_limit(60))
        answer = np.zeros((len(rows), 10), np.float32)
        answer[:, self.digit] = 1
        return answer


def test_an_answer_in_flight_during_a_switch_is_the_old_models_whole(tmp_path):
    served = tmp_path / "mnist.tflite"
    served.write_bytes(b"first")
    switched = threading.Event()
    old = Blocking(1, 100, str(served), hold=switched)
    answering = model.Model(old, lambda data, name: np.zeros((28, 28), np.uint8))
    lines = []
    follower = model.Follower(answering, lambda: Blocking(2, 200, str(served)), str(served), out=lines.append)
    board = app.create_app(app.Served(answering, follower))
    answers = []
    thread = threading.Thread(target=lambda: answers.append(call(board, "POST", "/board/predict", b"a picture")))
    thread.start()
    assert old.entered.wait(wait_limit(60))  # the request is being answered by the old predictor
    served.write_bytes(b"second")
    os.utime(served, (time.time() - 10, time.time() - 10))  # written a while ago: settled
    assert follower.poll()
    assert call(board, "GET", "/board/model") == (200, {**answers_model(200), "source": str(served)})
    switched.set()
    joined([thread], "the request answered by the old predictor")
    status, answer = answers[0]
    assert status == 200 and answer["digit"] == 1 and answer["model"] == {**answers_model(100), "source": str(served)}
    assert lines == [f"now serving {served} (global_step 200)"]
    assert not follower.poll()  # nothing changed since


def answers_model(step):
    """/board/model's answer for a Blocking at global_step `step` (its source left out)."""
    return {"name": "mnist", "network": "784-500-10", "global_step": step, "form": "checkpoint", "version": step}


@pytest.mark.quick
def test_a_refused_model_is_tried_again_after_the_retry_time_though_no_file_changed(tmp_path):
    """As a checkpoint made unreadable (chmod 000) and readable again: its files' sizes and times stay, and it is
    taken at the first poll RETRY_SECS after it was refused (of the follower's clock), said once meanwhile."""
    served = tmp_path / "mnist.tflite"
    served.write_bytes(b"first")
    now, readable, lines, warned = [1000.0], [False], [], io.StringIO()

    def load():
        if not readable[0]:
            raise DataError(f"{served}: cannot read it (Permission denied)")
        return Blocking(2, 200, str(served))

    answering = model.Model(Blocking(1, 100, str(served)), lambda data, name: None)
    follower = model.Follower(answering, load, str(served), out=lines.append, err=warned, clock=lambda: now[0])
    served.write_bytes(b"second")
    os.utime(served, (time.time() - 10, time.time() - 10))  # written a while ago: settled
    assert not follower.poll() and answering.current.global_step == 100  # refused
    now[0] += model.RETRY_SECS
    assert not follower.poll()  # tried again: still refused, not said again
    readable[0] = True  # chmod back: no file changed
    now[0] += model.RETRY_SECS - 1
    assert not follower.poll() and answering.current.global_step == 100  # not due yet
    now[0] += 1
    assert follower.poll() and answering.current.global_step == 200
    assert warned.getvalue() == (f"warning: {served}: cannot read it (Permission denied); still serving {served} "
                                 "(global_step 100)\n")
    assert lines == [f"now serving {served} (global_step 200)"]


@pytest.mark.quick
def test_a_learn_waits_for_the_followers_swap_not_for_a_clock(tmp_path):
    served = tmp_path / "mnist.tflite"
    served.write_bytes(b"first")
    answering = model.Model(Blocking(1, 100, str(served)), lambda data, name: None)
    follower = model.Follower(answering, lambda: Blocking(2, 300, str(served)), str(served), out=lambda line: None)
    waited = []
    waiting = threading.Thread(target=lambda: waited.append(
        follower.wait_until(lambda current: current.global_step == 300, 600)), daemon=True)
    waiting.start()
    served.write_bytes(b"second")
    os.utime(served, (time.time() - 10, time.time() - 10))
    assert follower.poll()  # the swap wakes the learn's wait, long before its time-out
    joined([waiting], "the learn's wait for the swap")
    assert waited == [True] and not waiting.is_alive()
    assert not follower.wait_until(lambda current: current.global_step == 400, 0.01)

"""The server's kinds of fault (issue #53 §1, §4, §6, §11): each test fails on the bug of its kind, planted.

TF Serving's REST API: a gzip body answers as the plain one, a gzip bomb is 413 without being inflated whole, another
encoding a clear 4xx; decimals are read as float32 as TF Serving reads them, outputs are the model's float32 values
bit for bit, a row's answer does not depend on the rows sent with it, and a model's name is matched exactly. The
route table refuses a model-running handler on the event loop, and no request runs a model there. The mistakes view
counts a cell whole and refuses a record past the end in one line. An export renames every file under its folder's
lock; a learn's script that ignores SIGTERM is killed after the grace, its lock and staging gone. A model file still
being written is not loaded. Every bounded flag takes both ends of its range; the batch-size refusal names the two
rates the right way round; the hints name the right trainer, and a folder that is not there.
"""
import base64
import gzip
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
import types
import zlib

import numpy as np
import pytest

import conftest
from conftest import ROOT, ended, read_line, run_main, running, shown
from test_board_routes import EXAMPLES, OWN_HOST, Asked, Stand, example_path, methods_of, served  # noqa: F401
from mnistkit import cli, export, files, folders, keep, learn, records, training
from mnistkit.board import app, model, serving, table, teach
from mnistkit.errors import DataError
from mnistkit.networks import MLP

PREDICT = "/v1/models/mnist:predict"
WAIT_SECS = 300  # a condition waited for on 2 loaded cores: generous, and the message says what timed out


def wait_for(condition, what, timeout=WAIT_SECS):
    """conftest.wait_for polling every 0.1 s with WAIT_SECS by default."""
    return conftest.wait_for(condition, what, timeout, every=0.1)


class Recording(Stand):
    """A predictor whose answer for a row depends, in its last bits, on the batch it comes in (as a real model's
    matrix kernels do at another batch size), and which remembers each input and the thread it ran on."""

    def __init__(self):
        self.inputs, self.threads = [], []

    def predict(self, rows):
        self.inputs.append(rows.copy())
        self.threads.append(threading.get_ident())
        base = rows[:, :10].astype(np.float32) / np.float32(3) + np.float32(0.1)
        return base + np.float32(len(rows)) * np.float32(1e-7)  # a batch of another size: other last bits


def board_of(predictor):
    return app.create_app(app.Served(model.Model(predictor, lambda data, name: np.zeros((28, 28), np.uint8)),
                                     None, None, None))


def posted(board, request, headers=(), path=PREDICT):
    return Asked(board, "POST", path, request, headers=(OWN_HOST, *headers))


def rows_of(count, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (count, 784)).astype(np.float32) / np.float32(255)


# ---------------------------------------------------------------- TF Serving's REST API (#53 §6)

@pytest.mark.quick
def test_a_gzip_body_is_answered_as_the_plain_one():
    board = board_of(Recording())
    body = json.dumps({"instances": rows_of(3).tolist()}).encode()
    plain = posted(board, body)
    for coding in ("gzip", "GZip", "x-gzip", "identity, gzip"):
        zipped = posted(board, gzip.compress(body), [(b"content-encoding", coding.encode())])
        assert (zipped.status, zipped.body) == (200, plain.body), coding
    two_members = gzip.compress(body[:100]) + gzip.compress(body[100:])  # gzip allows members one after another
    assert posted(board, two_members, [(b"content-encoding", b"gzip")]).body == plain.body
    chunked = Asked(board, "POST", PREDICT, gzip.compress(body), headers=(OWN_HOST, (b"content-encoding", b"gzip")),
                    chunk=7, declare=False)
    assert chunked.body == plain.body


@pytest.mark.quick
def test_a_gzip_bomb_is_413_once_the_limit_is_out_without_inflating_it_whole():
    inflated = 256 * 1024 * 1024  # 8 times the body limit, from about 250 KB
    packer, parts = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16), []
    zeros = b"0" * (1024 * 1024)
    for _ in range(inflated // len(zeros)):
        parts.append(packer.compress(zeros))
    bomb = b"".join(parts) + packer.flush()
    assert len(bomb) < table.MAX_BODY // 100
    board = board_of(Recording())
    tracemalloc.start()
    try:
        answer = posted(board, bomb, [(b"content-encoding", b"gzip")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert answer.status == 413 and "limit of 33,554,432 bytes once inflated" in answer.error()
    assert peak < 50 * 1024 * 1024, f"{peak:,} bytes held while refusing the bomb"


@pytest.mark.quick
def test_another_encoding_or_broken_gzip_is_a_clear_4xx():
    board = board_of(Recording())
    body = json.dumps({"instances": rows_of(1).tolist()}).encode()
    for coding in (b"br", b"deflate", b"gzip, br", b"compress"):
        refused = posted(board, body, [(b"content-encoding", coding)])
        assert refused.status == 415 and f"Content-Encoding '{coding.decode()}' is not taken" in refused.error()
    broken = posted(board, body, [(b"content-encoding", b"gzip")])
    assert broken.status == 400 and "the body is not gzip" in broken.error()
    cut = posted(board, gzip.compress(body)[:-20], [(b"content-encoding", b"gzip")])
    assert cut.status == 400 and "the gzip body is cut short" in cut.error()


@pytest.mark.quick
def test_decimals_are_read_as_float32_as_tf_serving_reads_them():
    values = ["0.96", "0.1", "0.3333333333333333", "1e-8", "0.123456789012345678", "1", "0"]
    text = "[" + ", ".join((values * 200)[:784]) + "]"
    for form in ('{"instances": [%s]}', '{"inputs": [%s]}', '{"instances": [{"images": %s}]}'):
        recording = Recording()
        assert posted(board_of(recording), (form % text).encode()).status == 200
        got = recording.inputs[0]
        want = np.array([float(v) for v in (values * 200)[:784]], np.float64).astype(np.float32)  # double, then float
        assert got.dtype == np.float32 and np.array_equal(got[0].view(np.uint32), want.view(np.uint32)), form
    assert np.float32(0.96) == recording.inputs[0][0, 0]


@pytest.mark.quick
def test_outputs_read_back_to_the_models_float32_values_bit_for_bit():
    class Exact(Stand):
        def predict(self, rows):
            tiny = np.nextafter(np.float32(0.1), np.float32(1))  # a float32 that needs 9 digits
            return np.tile(np.array([tiny, 1 / np.float32(3), np.float32(1e-30), np.float32(0.96), 0, 1, 0.5,
                                     np.float32(2) ** -20, np.nextafter(np.float32(1), np.float32(0)), 0.2],
                                    np.float32), (len(rows), 1))
    expected = Exact().predict(np.zeros((1, 784)))[0]
    board = board_of(Exact())
    rows = json.loads(posted(board, json.dumps({"instances": rows_of(2).tolist()}).encode()).body)
    columns = json.loads(posted(board, json.dumps({"inputs": rows_of(2).tolist()}).encode()).body)
    for read in ([p["probabilities"] for p in rows["predictions"]], columns["outputs"]["probabilities"]):
        got = np.array(read, np.float64).astype(np.float32)
        assert np.array_equal(got.view(np.uint32), np.tile(expected, (2, 1)).view(np.uint32))


@pytest.mark.quick
def test_a_rows_answer_does_not_depend_on_the_other_rows_and_rows_keep_their_order():
    recording = Recording()
    board, rows = board_of(recording), rows_of(7, seed=3)
    alone = [json.loads(posted(board, json.dumps({"instances": rows[i:i + 1].tolist()}).encode()).body)
             ["predictions"][0] for i in range(len(rows))]
    for size in (2, 3, 7):
        for start in range(0, len(rows), size):
            part = rows[start:start + size]
            answer = json.loads(posted(board, json.dumps({"instances": part.tolist()}).encode()).body)
            assert answer["predictions"] == alone[start:start + len(part)], (size, start)
            columnar = json.loads(posted(board, json.dumps({"inputs": part.tolist()}).encode()).body)["outputs"]
            assert columnar["probabilities"] == [a["probabilities"] for a in alone[start:start + len(part)]]
    backwards = json.loads(posted(board, json.dumps({"instances": rows[::-1].tolist()}).encode()).body)
    assert backwards["predictions"] == alone[::-1]


def test_a_real_models_row_answers_the_same_alone_and_in_batches(trained_workdir):
    import mnist_app
    predictor = mnist_app.load_predictor(str(trained_workdir / "model"))
    images, _ = records.read_examples([str(trained_workdir / "data" / records.TEST_FILE)])
    rows = images[:40].astype(np.float32) / 255
    board = board_of(predictor)
    alone = [json.loads(posted(board, json.dumps({"instances": rows[i:i + 1].tolist()}).encode()).body)
             ["predictions"][0] for i in range(len(rows))]
    for size in (3, 8, 40):
        got = []
        for start in range(0, len(rows), size):
            got += json.loads(posted(board, json.dumps({"instances": rows[start:start + size].tolist()}).encode()
                                     ).body)["predictions"]
        assert got == alone, size
    model_values = np.concatenate([predictor.predict(rows[i:i + 1]) for i in range(len(rows))])
    read = np.array([a["probabilities"] for a in alone], np.float64).astype(np.float32)
    assert np.array_equal(read, model_values)


@pytest.mark.quick
@pytest.mark.parametrize("name", ["MNIST", "Mnist", "mnist ", "mnist%20", "mnist_lenet5", "mnis", "mnist1"])
def test_a_model_name_is_matched_exactly_as_tf_serving_matches_it(name):
    board = board_of(Recording())
    body = json.dumps({"instances": rows_of(1).tolist()}).encode()
    for method, path in (("POST", f"/v1/models/{name}:predict"), ("GET", f"/v1/models/{name}"),
                         ("GET", f"/v1/models/{name}/metadata"), ("POST", f"/v1/models/{name}/versions/7:predict")):
        answer = Asked(board, method, path, body if method == "POST" else b"")
        assert answer.status == 404 and answer.error().startswith(f"Servable not found for request: "), (method, path)
    assert posted(board, body, path="/V1/MODELS/mnist:PREDICT").status == 200  # the path's words: any case
    assert Asked(board, "GET", "/v1/models/mnist/versions/7").status == 200


# ---------------------------------------------------------------- one end: no model run on the event loop (#53 §4)

@pytest.mark.quick
def test_the_table_refuses_a_model_running_route_on_the_event_loop():
    for route in app.ROUTES:
        if getattr(route.handler, "runs_model", False):
            with pytest.raises(ValueError, match="runs a model, which would keep every other request waiting"):
                table.Route(route.methods, route.path, route.handler, runs=table.LOOP, pattern=route.pattern)
    with pytest.raises(ValueError, match="give it runs=THREAD"):
        table.Route("POST", "/mine", table.runs_model(lambda call: {}), runs=table.LOOP)


@pytest.mark.quick
def test_no_request_of_any_route_runs_a_model_on_the_event_loop(served):  # noqa: F811
    recording = Recording()
    served.model = model.Model(recording, served.model.prepare)
    served.mistakes = None
    board, loop_thread, ran = app.create_app(served), threading.get_ident(), set()
    bodies = {PREDICT: json.dumps({"instances": rows_of(2).tolist()}).encode(), "/board/predict": b"picture",
              "/board/inside": b"picture"}
    for route in app.ROUTES:
        path = example_path(route)
        for method in methods_of(route):
            before = len(recording.threads)
            Asked(board, method, path, bodies.get(path, b"") if method == "POST" else b"")
            if len(recording.threads) > before:
                ran.add(route)
    assert loop_thread not in recording.threads, "a model ran on the event loop's thread"
    assert {r.path for r in ran} >= {"/board/predict", "/v1/models/<name>[/versions/<N>]:predict"}
    assert all(getattr(r.handler, "runs_model", False) for r in ran)  # the table's own check covers each


# ---------------------------------------------------------------- the mistakes view (#53 §1)

@pytest.fixture
def scored_board(sample_workdir):
    """A board answering with Stand (every digit read as 7), its mistakes scored on the sample's test records."""
    board = app.open_board(lambda: Stand(), lambda data, name: None, "unused",
                           data_dir=str(sample_workdir / "data"))
    asgi = app.create_app(board)
    wait_for(lambda: json.loads(Asked(asgi, "GET", "/board/mistakes").body).get("state") == "done",
             "the test records scored")
    yield asgi, records.read_examples([str(sample_workdir / "data" / records.TEST_FILE)])
    board.mistakes.stop()


def test_a_cell_counts_all_its_digits_and_opens_at_most_the_bound(scored_board):
    asgi, (images, digits) = scored_board
    from mnistkit.board import mistakes
    for digit in (1, 7, 0):
        cell = json.loads(Asked(asgi, "GET", f"/board/mistakes?digit={digit}&read=7").body)
        expected = np.flatnonzero(digits == digit)
        assert len(expected) > mistakes.CELL_DIGITS
        assert cell["count"] == len(expected) and cell["records"] == expected[:mistakes.CELL_DIGITS].tolist()
        shown = np.frombuffer(base64.b64decode(cell["inputs"]), np.uint8).reshape(-1, 784)
        assert np.array_equal(shown, images[expected[:mistakes.CELL_DIGITS]])
    empty = json.loads(Asked(asgi, "GET", "/board/mistakes?digit=3&read=4").body)
    assert (empty["count"], empty["records"]) == (0, [])


def test_a_record_past_the_end_is_400_naming_it(scored_board):
    asgi, (_, digits) = scored_board
    last = len(digits) - 1
    for number in (last + 1, last + 2, 10 ** 8):
        refused = Asked(asgi, "GET", f"/board/mistakes?record={number}")
        assert refused.status == 400
        assert refused.error() == f"record={number}: give a whole number from 0 to {last}"
    assert Asked(asgi, "GET", f"/board/mistakes?record={last}").status != 500


# ---------------------------------------------------------------- one writer and one end (#53 §4)

@pytest.mark.quick
def test_every_file_of_an_export_is_renamed_under_the_export_folders_lock(tmp_path, monkeypatch):
    staging = tmp_path / "export" / ".staging"
    (staging / "saved_model").mkdir(parents=True)
    for suffix in ("", "_int8"):
        (staging / f"mnist{suffix}.tflite").write_text("this")
    (tmp_path / "export" / "mnist").mkdir()
    lock, seen = tmp_path / "export" / folders.LOCK_FILE, []
    renamed, replaced = os.rename, files.replace

    def held(what):
        seen.append((what, folders.lock_owner(str(lock)) == os.getpid()))

    monkeypatch.setattr(export.os, "rename", lambda a, b: (held(b), renamed(a, b))[1])
    monkeypatch.setattr(export.files, "replace", lambda a, b: (held(b), replaced(a, b))[1])
    written = export.commit(str(staging), str(tmp_path / "export"), "mnist",
                            lambda version: held(f"stamp {version}"))
    assert [what for what, _ in seen] == ["stamp 1", written.saved_model, written.tflite, written.tflite_int8]
    assert all(inside for _, inside in seen), seen
    assert not lock.exists()


IGNORES_SIGTERM = """\
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open({pid_file!r}, "w", encoding="utf-8") as f:
    f.write(str(os.getpid()))
print("started, and deaf to SIGTERM", flush=True)
time.sleep(600)
"""


def test_a_learns_script_that_ignores_sigterm_is_killed_after_the_grace_and_its_lock_and_staging_go(
        trained_copy, tmp_path, monkeypatch):
    deaf, pid_file = tmp_path / "deaf.py", tmp_path / "deaf.pid"
    deaf.write_text(IGNORES_SIGTERM.format(pid_file=str(pid_file)), encoding="utf-8")
    monkeypatch.setattr(learn, "script", lambda name, script_dir: str(deaf))  # each of the learn's scripts
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # the learn's staging folder goes here
    model_dir = trained_copy / "model"
    stand = Stand()
    stand.source = str(model_dir / "mnist_model-2000")
    kept = keep.KeptDigits(str(tmp_path / "my_digits"))
    bar = np.zeros((28, 28), np.uint8)
    bar[6:22, 12:15] = 255
    kept.keep(bar, 8)
    # the training records a learn reads before its first stage (the board's --data-dir)
    learning = teach.Learning(kept, plan=learn.Plan(data_dir=str(trained_copy / "data")))
    learning.start(model.Model(stand, None))
    try:
        wait_for(pid_file.exists, "the learn's script started")
        pid = int(pid_file.read_text())
        assert learning.end(grace=1.0) is True
        assert not learning.thread.is_alive()
        # killed: with its tether (mnistkit/tether.py) it is no child of this process, reaped by init, if by any
        wait_for(lambda: not running(pid), "the learn's script killed", 30)
        assert not (model_dir / folders.LOCK_FILE).exists() and os.listdir(tmp_path / "tmp") == []
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


@pytest.mark.quick
def test_a_model_file_still_being_written_is_not_loaded_until_it_is_whole(tmp_path):
    served_file, loads, warned, lines = tmp_path / "mnist.tflite", [], [], []
    served_file.write_bytes(b"first, whole")
    old = time.time() - 60
    os.utime(served_file, (old, old))
    first = Stand()
    first.source = str(served_file)

    def load():
        loads.append(served_file.read_bytes())
        if not served_file.read_bytes().endswith(b"whole"):
            raise DataError(f"{served_file}: cut short")
        second = Stand()
        second.source, second.global_step = str(served_file), 9
        return second

    answering = model.Model(first, None)
    follower = model.Follower(answering, load, str(served_file), out=lines.append, err=types.SimpleNamespace(
        write=warned.append, flush=lambda: None))
    served_file.write_bytes(b"second, half")  # written now: maybe still being written
    assert not follower.poll() and loads == [] and answering.current.predictor is first
    served_file.write_bytes(b"second, whole")
    os.utime(served_file, (old + 1, old + 1))  # written a while ago: settled
    assert follower.poll() and loads == [b"second, whole"] and answering.current.global_step == 9
    assert warned == []


# ---------------------------------------------------------------- flags and messages (#53 §1, §11)

def bounded_options():
    """(script, option) for every option of every script with a range."""
    found = []
    for name in ("mnist_backward", "mnist_app", "mnist_cluster", "mnist_generateds", "mnistkit.learn"):
        module = importlib.import_module(name)
        for option in module.OPTIONS:
            if {option.minimum, option.maximum, option.above, option.below} != {None}:
                found.append(pytest.param(module, option, id=f"{name} --{option.name}"))
    return found


@pytest.mark.quick
@pytest.mark.parametrize("module, option", bounded_options())
def test_every_bounded_option_takes_both_ends_of_its_range_and_nothing_past(module, option):
    kind = type(option.default) if isinstance(option.default, (int, float)) and not isinstance(
        option.default, bool) else float
    step = 1 if kind is int else 1e-9
    for bound, exclusive, outward in ((option.minimum, False, -1), (option.maximum, False, 1),
                                      (option.above, True, -1), (option.below, True, 1)):
        if bound is None:
            continue
        value = kind(bound)
        if exclusive:
            assert option.wanted(value) != "" and option.wanted(kind(value - outward * step)) == "", option.name
        else:
            assert option.wanted(value) == "", f"--{option.name} {value}: the end of its range is refused"
            assert option.wanted(kind(value + outward * step)) != "", option.name
    parse = cli.bounded(int, 0, 255)
    assert (parse("0"), parse("255")) == (0, 255)


@pytest.mark.quick
def test_threshold_255_the_top_of_its_range_is_taken_by_the_app(tmp_path):
    result = run_main("mnist_app.py", "--threshold", "255", "--model-dir", "none", "x.png", cwd=tmp_path)
    assert "--threshold" not in result.stderr and result.returncode == 1, result.stderr


@pytest.mark.quick
def test_the_batch_size_refusal_names_the_trained_rate_first_and_the_new_one_second():
    settings = types.SimpleNamespace(learning_rate_base=0.1, learning_rate_decay=0.5, batch_size=400)
    examples, step, trained = 8000, 200, 100  # at 100 a batch: 2.5 epochs; at 400: 10
    before = 0.1 * 0.5 ** (step // (examples / trained))
    after = 0.1 * 0.5 ** (step // (examples / settings.batch_size))
    assert before != after
    said = training.schedule_jump(settings, trained, examples, step)
    assert said.startswith(f"would move its learning rate from {before:.3g} to {after:.3g} at once"), said


@pytest.mark.quick
@pytest.mark.parametrize("script, args, trainer", [
    ("mnist_app.py", ["--model-dir", "model_lenet5", "x.png"], "mnist_lenet5_backward.py"),
    ("mnist_export.py", ["--model-dir", "model_lenet5"], "mnist_lenet5_backward.py"),
    ("mnist_export.py", [], "mnist_backward.py"),
])
def test_a_hint_to_train_names_the_trainer_of_the_folders_network(script, args, trainer, tmp_path):
    (tmp_path / "model").mkdir()
    result = run_main(script, *args, cwd=tmp_path)
    assert result.returncode == 1 and "train first with" in result.stderr
    assert f"{shown(trainer)}`" in result.stderr, result.stderr


def test_compare_before_lenet5_was_trained_names_its_trainer(trained_copy):
    result = run_main("mnist_app.py", "--serve", "--compare", "model_lenet5", cwd=trained_copy)
    assert result.returncode == 1, result.stderr
    line = result.stderr.splitlines()[-1]
    assert line.startswith("error: --compare: model_lenet5: no checkpoint found; train first with `python "), line
    assert line.endswith(f"{shown('mnist_lenet5_backward.py')}`"), line


@pytest.mark.quick
@pytest.mark.parametrize("script, more", [("mnist_app.py", ["x.png"]), ("mnist_export.py", []),
                                          ("mnist_test.py", ["--once"]), ("mnist_learn.py", [])])
def test_a_mistyped_model_dir_is_named_as_not_there(script, more, tmp_path, sample_workdir):
    (tmp_path / "model").mkdir()
    os.symlink(sample_workdir / "data", tmp_path / "data")
    result = run_main(script, "--model-dir", "modle", *more, cwd=tmp_path)
    assert result.returncode != 0
    line = result.stderr.splitlines()[-1]
    assert "modle: no such folder" in line and "train first" not in line, line


# ---------------------------------------------------------------- Ctrl-C early in a trainer or the exporter (#53 §9)

STOPPED_BY_CTRL_C = (130, -signal.SIGINT)  # 130 as our scripts end; -2 (a shell says 130) before their first line


def nothing_half_written(folder):
    """AssertionError when `folder` holds a lock, a staging folder, a temporary file or a checkpoint the index
    names without its files, or a SavedModel version without its graph."""
    if not os.path.isdir(folder):
        return
    for top, dirs, names in os.walk(folder):
        for name in dirs + names:
            assert name != folders.LOCK_FILE and not name.startswith(".") and "tmp" not in name.lower() and (
                "tempstate" not in name), os.path.join(top, name)
    index = os.path.join(folder, "checkpoint")
    if os.path.isfile(index):
        newest = folders.latest(folder)
        assert newest is None or os.path.isfile(newest + ".index"), newest
    for name in os.listdir(folder):
        version = os.path.join(folder, name)
        if name.isdecimal() and os.path.isdir(version):
            assert os.path.isfile(os.path.join(version, "saved_model.pb")), version


def in_pythons_own_start(returncode, err):
    """True for a Ctrl-C that came while the interpreter itself started, in site.py (its .pth files), before the
    script's first line: Python prints its KeyboardInterrupt and exits 1, and no line of the project has run, so
    nothing can have been written (a fresh clone's CI hit it once, at 0.2 s, in _distutils_hack's .pth)."""
    frames = re.findall(r'File "([^"]+)"', err)
    return (returncode == 1 and err.rstrip().endswith("KeyboardInterrupt") and "<frozen site>" in frames
            and not any(frame.startswith(ROOT) and "site-packages" not in frame for frame in frames))


def ctrl_c_after(delay, script, args, work):
    """Run `script` with args in `work`, send it SIGINT after `delay` s and check it ended as a stop: exit 130 with a
    last line "SIGINT: ..." and no traceback, or killed by the signal before its first line (STOPPED_BY_CTRL_C)."""
    child = subprocess.Popen([sys.executable, os.path.join(ROOT, script), *args], cwd=work, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    child.send_signal(signal.SIGINT)
    try:
        out, err = ended(child, f"{script} after SIGINT", 120)  # generous: the order of events is checked, not the time
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    if in_pythons_own_start(child.returncode, err):
        return
    assert child.returncode in STOPPED_BY_CTRL_C, (child.returncode, err[-500:])
    if child.returncode == 130:
        assert err.rstrip("\n").splitlines()[-1].startswith("SIGINT: "), err[-500:]
        assert "Traceback" not in err, err[-2000:]


@pytest.mark.long
@pytest.mark.parametrize("delay", [0.2, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("script", ["mnist_backward.py", "mnist_lenet5_backward.py", "mnist_export.py"])
def test_ctrl_c_early_in_a_trainer_or_the_exporter_ends_it_with_130_and_nothing_half_written(
        script, delay, trained_workdir, tmp_path):
    from conftest import copy_into
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    args = ["--steps", "100000"] if script != "mnist_export.py" else []
    ctrl_c_after(delay, script, args, work)
    for folder in ("model", "model_lenet5", os.path.join("export", "mnist"), "export"):
        nothing_half_written(os.path.join(work, folder))


# ---------------------------------------------------------------- a cluster task that never started (#53 §9)

def test_a_cluster_task_that_never_started_is_named_with_its_address():
    import socket
    from mnistkit import distributed
    from tf_compat import tf
    with socket.socket() as started, socket.socket() as free:
        started.bind(("127.0.0.1", 0))
        started.listen()
        free.bind(("127.0.0.1", 0))  # bound, never listening: nothing accepts there
        up, down = (f"127.0.0.1:{s.getsockname()[1]}" for s in (started, free))
        cluster = tf.train.ClusterSpec({"ps": [up, down], "worker": [up, down]})
        assert distributed.silent_tasks(cluster) == [f"ps 1 ({down})", f"worker 1 ({down})"]
        assert distributed.silent_or(cluster, "the parameter servers", is_chief=True) == (
            f"ps 1 ({down}) never started (nothing listens there)")
        assert distributed.silent_note(cluster) == f"; ps 1 ({down}) is not there (nothing listens)"
        chief_gone = tf.train.ClusterSpec({"ps": [up], "worker": [down, up]})
        assert distributed.silent_or(chief_gone, "them", is_chief=False) == (
            f"the chief (worker 0, {down}) never started (nothing listens there)")
        assert distributed.silent_or(tf.train.ClusterSpec({"ps": [up], "worker": [up]}), "them", False) == (
            "them did not answer")


LONG_C_CALL = """\
import hashlib, signal, sys, time
sys.path.insert(0, {root!r})
{setup}
signal.signal(signal.SIGINT, signal.default_int_handler)
try:  # "ready" from inside the call's wrapper: a signal from then on reaches it
    {call}(lambda: (print("ready", flush=True), hashlib.pbkdf2_hmac("sha256", b"x", b"y", 10 ** 9)))  # minutes
except KeyboardInterrupt:
    sys.stderr.write("KeyboardInterrupt raised\\n")
    sys.exit(130)
sys.exit(0)
"""


@pytest.mark.quick
@pytest.mark.parametrize("what, setup, call, said", [
    ("TensorFlow's import", "import tf_compat", "tf_compat.holding_signals",
     "SIGINT: stopped while TensorFlow was imported; nothing saved"),
    ("a LiteRT conversion", "from mnistkit import export", "export.interruptible", "KeyboardInterrupt raised"),
])
def test_ctrl_c_during_a_long_c_call_ends_the_script_before_the_call_does(what, setup, call, said, tmp_path):
    # The order of events, not a time: the call would take minutes; the script must end first, with its line.
    import subprocess
    from conftest import ROOT
    script = tmp_path / "long_call.py"
    script.write_text(LONG_C_CALL.format(root=ROOT, setup=setup, call=call), encoding="utf-8")
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        assert read_line(child, "ready") == "ready\n"  # inside the call (before: a sleep of 0.5 s, then the signal)
        child.send_signal(signal.SIGINT)
        _, err = ended(child, f"the script in {what} after SIGINT", 90)  # the call itself runs for minutes
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 130 and err.strip().splitlines()[-1] == said, (what, err)

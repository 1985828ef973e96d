"""The user's kept digits (mnistkit/keep.py), a folder in the course's JPG layout.

Through the store: what keep and remove write, names never given twice, threads and processes keeping at once,
refusals of folders the store cannot use, and the generator reading the layout back. Through the routes: the
board's app (mnistkit/board/teach.py's routes) on a real uvicorn server on a free port, in a thread, asked over
HTTP (urllib).
"""
import asyncio
import base64
import contextlib
import dataclasses
import io
import json
import multiprocessing
import os
import re
import threading
import time
import types
import urllib.error
import urllib.request

import numpy as np
import pytest
from PIL import Image

import handmade
from conftest import run_main
from mnistkit import keep, listener, pictures
from mnistkit.board import app, model
from mnistkit.errors import DataError
from mnistkit.images import load_image

SERVER_TIMEOUT = 60  # seconds for the test server to start


def drawn_png(digit, seed=0):
    """A hand-drawn digit, dark on white, as PNG bytes (tests/handmade.py)."""
    pixels = np.round(255 * (1 - handmade.draw_digit(digit, 200, 0.06, seed=seed))).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(out, format="PNG")
    return out.getvalue()


def prepare(data, name):
    """The board's preparation of a picture's bytes: uint8 [28, 28] (as mnist_app.prepared_pixels's MNIST preparation)."""
    img = pictures.load_picture(data, name)
    with pictures.refusals_named(name):
        return pictures.mnist_input(img)


def prepared(digit, seed=0):
    """A prepared hand-drawn digit, uint8 [28, 28], stroke bright on black."""
    return pictures.mnist_input(Image.open(io.BytesIO(drawn_png(digit, seed))).convert("L"))


def read_jpg(path):
    """The pixels of a kept JPG as the generator decodes them, int [28, 28]."""
    return np.frombuffer(load_image(str(path))[0], np.uint8).reshape(28, 28).astype(int)


def label_lines(store):
    with open(store.labels) as f:
        return f.read().splitlines()


def check_consistent(store, count):
    """The label file lists `count` distinct names, each with its JPG, and the folder holds nothing else."""
    lines = label_lines(store)
    names = [line.split(" ")[0] for line in lines]
    assert len(lines) == count and len(set(names)) == count
    for line in lines:
        name, digit = line.split(" ")
        assert keep.NAME.fullmatch(name) and name[-5] == digit
    assert sorted(n for n in os.listdir(store.folder) if not n.startswith(".")) == sorted(names)
    assert not [n for n in os.listdir(store.folder) if n.endswith(".tmp")]
    keep.KeptDigits(store.folder)  # opens again without a refusal


# ---------------------------------------------------------------- the store

@pytest.mark.quick
def test_keep_writes_the_course_layout_and_remove_takes_it_back(tmp_path):
    folder = tmp_path / "my_digits"
    store = keep.KeptDigits(str(folder))
    assert not folder.exists() and store.entries() == [] and store.count() == 0  # absent until the first keep
    three, seven = prepared(3), prepared(7)
    png = drawn_png(3)
    assert store.keep(three, 3, png, "photo.PNG") == ("000001_3.jpg", 3)
    assert store.keep(seven, np.int64(7)) == ("000002_7.jpg", 7)
    assert store.labels == str(tmp_path / "my_digits.txt")
    assert label_lines(store) == ["000001_3.jpg 3", "000002_7.jpg 7"]
    assert store.entries() == [("000001_3.jpg", 3), ("000002_7.jpg", 7)] and store.count() == 2
    jpg = Image.open(folder / "000001_3.jpg")
    assert (jpg.format, jpg.mode, jpg.size) == ("JPEG", "L", (28, 28))
    assert np.abs(read_jpg(folder / "000001_3.jpg") - three).max() <= 1  # JPEG quality 100: off by 1 at most
    assert np.abs(read_jpg(folder / "000002_7.jpg") - seven).max() <= 1
    assert (folder / ".originals" / "000001_3.png").read_bytes() == png
    assert os.listdir(folder / ".originals") == ["000001_3.png"]  # no original given for the 7
    assert store.jpg("000002_7.jpg") == (folder / "000002_7.jpg").read_bytes()

    store.remove("000001_3.jpg")
    assert label_lines(store) == ["000002_7.jpg 7"]
    assert not (folder / "000001_3.jpg").exists() and os.listdir(folder / ".originals") == []
    for unknown in ("000001_3.jpg", "000002_7.png", "../my_digits.txt", ".keep.next"):
        with pytest.raises(keep.NotKept):
            store.remove(unknown)
        with pytest.raises(keep.NotKept):
            store.jpg(unknown)
    store.remove("000002_7.jpg")
    assert label_lines(store) == [] and store.entries() == []
    check_consistent(store, 0)


@pytest.mark.quick
def test_a_removed_name_is_never_given_again(tmp_path):
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    pixels = prepared(1)
    for _ in range(3):
        store.keep(pixels, 1)
    store.remove("000003_1.jpg")  # the last one: "max existing + 1" alone would give 3 again
    assert store.keep(pixels, 1)[0] == "000004_1.jpg"
    store.remove("000004_1.jpg")
    assert keep.KeptDigits(store.folder).keep(pixels, 2)[0] == "000005_2.jpg"  # a store opened anew counts on
    (tmp_path / "my_digits" / ".keep.next").unlink()  # the counter lost: the names there still count
    assert store.keep(pixels, 2)[0] == "000006_2.jpg"


@pytest.mark.quick
def test_bad_arguments_keep_nothing(tmp_path):
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    pixels = prepared(4)
    for bad, digit, message in [(pixels.astype(np.float32), 4, "uint8 [28, 28], not float32 [28, 28]"),
                                (pixels[:27], 4, "not uint8 [27, 28]"),
                                (np.zeros((28, 28), np.uint8), 4, "blank (every pixel is 0)"),
                                (pixels, 10, "digit 10 is not a digit 0-9"),
                                (pixels, True, "digit True"), (pixels, "4", "digit '4'")]:
        with pytest.raises(ValueError, match=r"\A[^\n]*" + re.escape(message)):
            store.keep(bad, digit)
    assert not (tmp_path / "my_digits.txt").exists() and store.entries() == []


@pytest.mark.quick
def test_a_keep_that_fails_leaves_nothing_and_a_stopped_one_is_tidied(tmp_path, monkeypatch):
    folder = tmp_path / "my_digits"
    store = keep.KeptDigits(str(folder))
    store.keep(prepared(5), 5, b"png", "5.png")

    def full_disk(entries):
        raise DataError(f"{store.labels}: cannot write a kept digit's file (No space left on device)")
    monkeypatch.setattr(store, "_write_labels", full_disk)
    with pytest.raises(DataError, match="No space left"):
        store.keep(prepared(6), 6, b"png", "6.png")
    monkeypatch.undo()
    assert label_lines(store) == ["000001_5.jpg 5"] and sorted(os.listdir(folder / ".originals")) == ["000001_5.png"]
    check_consistent(store, 1)

    # What a process killed in the middle of a keep leaves: its files, not yet listed, and temporary files.
    (folder / "000007_8.jpg").write_bytes(keep.jpg_bytes(prepared(8)))
    (folder / ".originals" / "000007_8.png").write_bytes(b"png")
    (folder / ".000008_8.jpg.x1.tmp").write_bytes(b"half")
    (tmp_path / ".my_digits.txt.x2.tmp").write_text("000001_5.jpg 5\n")
    store = keep.KeptDigits(str(folder))  # opens: they are the store's own
    assert store.keep(prepared(9), 9) == ("000008_9.jpg", 9)  # above the stopped keep's number
    assert sorted(os.listdir(folder / ".originals")) == ["000001_5.png"]
    assert not (tmp_path / ".my_digits.txt.x2.tmp").exists()
    check_consistent(store, 2)


def keep_many(folder, digits, start):
    """Keep each of `digits` (a prepared 0 each time) through a store of its own opened on `folder`, after `start`."""
    start.wait()
    store = keep.KeptDigits(folder)
    pixels = prepared(0)
    for digit in digits:
        store.keep(pixels, digit, b"original", "drawing.png")


@pytest.mark.quick
def test_twenty_threads_keep_at_once(tmp_path):
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    pixels, start = prepared(0), threading.Barrier(20)
    kept = []

    def one(digit):
        start.wait()
        kept.append(store.keep(pixels, digit, b"original", "drawing.png"))
    threads = [threading.Thread(target=one, args=(i % 10,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(kept) == sorted(store.entries())
    assert sorted(name for name, _ in kept) == [f"{i:06d}_{d}.jpg" for i, d in
                                                zip(range(1, 21), [int(n[7]) for n, _ in sorted(kept)])]
    assert sorted(d for _, d in kept) == sorted(i % 10 for i in range(20))
    assert len(os.listdir(tmp_path / "my_digits" / ".originals")) == 20
    check_consistent(store, 20)


@pytest.mark.quick
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the processes are forked (the store's lock across processes is fcntl's)")
def test_two_processes_keep_at_once(tmp_path):
    folder = str(tmp_path / "my_digits")
    context = multiprocessing.get_context("fork")
    start = context.Barrier(3)
    processes = [context.Process(target=keep_many, args=(folder, [i % 10] * 15, start)) for i in range(2)]
    for process in processes:
        process.start()
    keep_many(folder, [9] * 15, start)  # and this process's own store at the same time
    for process in processes:
        process.join(120)
        assert process.exitcode == 0
    store = keep.KeptDigits(folder)
    assert sorted(d for _, d in store.entries()) == [0] * 15 + [1] * 15 + [9] * 15
    assert sorted(int(name[:6]) for name, _ in store.entries()) == list(range(1, 46))
    check_consistent(store, 45)


# ---------------------------------------------------------------- folders the store refuses

def refusal(folder):
    with pytest.raises(DataError) as raised:
        keep.KeptDigits(str(folder))
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{folder}: ")
    assert message.endswith("; move it away or keep digits in another folder")
    return message


@pytest.mark.quick
def test_a_folder_that_cannot_be_written_is_one_line(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    assert refusal(a_file) == f"{a_file}: is not a folder; move it away or keep digits in another folder"
    assert f"cannot be made: {a_file} is a file" in refusal(a_file / "my_digits")
    assert not a_file.is_dir()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_one_line(tmp_path):
    folder = tmp_path / "my_digits"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert f"cannot be written: {folder} is read-only" in refusal(folder)
    finally:
        folder.chmod(0o755)


@pytest.mark.quick
def test_a_folder_with_files_the_store_did_not_write_is_one_line(tmp_path):
    folder, labels = tmp_path / "my_digits", tmp_path / "my_digits.txt"
    keep.KeptDigits(str(folder)).keep(prepared(2), 2)
    (folder / "notes.txt").write_text("mine")
    assert "holds 'notes.txt', which the keep store did not write" in refusal(folder)
    (folder / "notes.txt").unlink()
    for lines, why in [("0_5.jpg 5\n", "1: '0_5.jpg 5' is not a line the keep store writes"),  # the course's naming
                       ("000001_2.jpg 2\n000001_2.jpg 2\n", "2: '000001_2.jpg 2' is not a line"),  # listed twice
                       ("000001_2.jpg 7\n", "1: '000001_2.jpg 7' is not a line"),  # not the name's digit
                       ("000001_2.jpg 2\n000009_4.jpg 4\n", f"{labels} lists 000009_4.jpg but the file is missing")]:
        labels.write_text(lines)
        assert why in refusal(folder)
    course = tmp_path / "mnist_train_jpg_60000"  # the course's own layout, given as a keep folder
    course.mkdir()
    Image.fromarray(prepared(5)).save(course / "0_5.jpg")
    (tmp_path / "mnist_train_jpg_60000.txt").write_text("0_5.jpg 5\n")
    assert "mnist_train_jpg_60000.txt:1: '0_5.jpg 5' is not a line the keep store writes" in refusal(course)


# ---------------------------------------------------------------- the generator reads it

def test_the_generator_reads_the_kept_layout(tmp_path):
    from tf_compat import tf
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    kept = {}
    for i, digit in enumerate([3, 1, 4, 1, 5, 9, 2, 6]):
        pixels = prepared(digit, seed=i)
        kept[store.keep(pixels, digit, drawn_png(digit, seed=i), "drawing.png")[0]] = pixels
    store.remove("000002_1.jpg")
    del kept["000002_1.jpg"]
    result = run_main("mnist_generateds.py", "--train-images", "my_digits", "--train-labels", "my_digits.txt",
                      "--test-images", "my_digits", "--test-labels", "my_digits.txt", "--data-dir", "data",
                      "--workers", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stdout + result.stderr  # .originals/ and the store's hidden files are skipped
    assert "wrote 7 train records" in result.stdout and "wrote 7 test records" in result.stdout
    for split in ("train", "test"):
        examples = [tf.train.Example.FromString(r)
                    for r in tf.io.tf_record_iterator(str(tmp_path / "data" / f"mnist_{split}.tfrecords"))]
        assert len(examples) == 7
        for (name, digit), example in zip(store.entries(), examples):
            features = example.features.feature
            pixels = np.frombuffer(features["img_raw"].bytes_list.value[0], np.uint8).reshape(28, 28).astype(int)
            assert (pixels == read_jpg(tmp_path / "my_digits" / name)).all()
            assert np.abs(pixels - kept[name]).max() <= 1
            assert list(features["label"].int64_list.value) == [int(d == digit) for d in range(10)]


# ---------------------------------------------------------------- the routes

def served_store(store, routes=app.ROUTES):
    """The board's app for `store`, its model a stand-in whose pictures are prepared by `prepare`."""
    from mnistkit.networks import MLP
    predictor = types.SimpleNamespace(network=MLP, source="stand/mnist_model-1",
                                      predict=lambda rows: np.full((len(rows), 10), 0.1, np.float32))
    return app.create_app(app.Served(model.Model(predictor, prepare), kept=store), routes=routes)


@contextlib.contextmanager
def serving(board):
    """The address of the ASGI app `board` served by uvicorn on a free port in a thread, while the block runs."""
    import uvicorn
    sock = listener.bind("127.0.0.1", 0)
    served = uvicorn.Server(uvicorn.Config(board, log_level="warning", access_log=False, lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(served.serve(sockets=[sock])))
    thread.start()
    deadline = time.monotonic() + SERVER_TIMEOUT
    while not served.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert served.started
    try:
        yield listener.address(sock)
    finally:
        served.should_exit = True
        thread.join(SERVER_TIMEOUT)
        sock.close()


@pytest.fixture
def server(tmp_path):
    """(address, store): the board's keep routes of a store in tmp_path/my_digits, served in a thread."""
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    with serving(served_store(store)) as address:
        yield address, store


def ask(url, body=None, method=None):
    """(status, content type, body bytes) of one HTTP request; body: an object sent as JSON, or bytes."""
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
    request = urllib.request.Request(url, data=body, method=method,
                                     headers={"Content-Type": "application/json"} if body is not None else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.headers["content-type"], answer.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.headers["content-type"], e.read()


def ask_json(url, body=None, method=None):
    status, kind, content = ask(url, body, method)
    assert kind == "application/json"
    return status, json.loads(content)


@pytest.mark.quick
def test_keep_list_show_and_remove_through_the_routes(server):
    address, store = server
    three = prepared(3)
    status, answer = ask_json(address + "board/keep", {"digit": 3, "input": three.reshape(-1).tolist()})
    assert status == 200
    assert answer == {"kept": {"name": "000001_3.jpg", "digit": 3}, "count": 1,
                      "entries": [{"name": "000001_3.jpg", "digit": 3}]}
    png = drawn_png(7)
    status, answer = ask_json(address + "board/keep", {"digit": 7, "original": base64.b64encode(png).decode(),
                                                        "name": "C:\\photos\\seven.png"})
    assert status == 200 and answer["kept"] == {"name": "000002_7.jpg", "digit": 7} and answer["count"] == 2
    original = os.path.join(store.folder, ".originals", "000002_7.png")  # the suffix of the picture's name
    with open(original, "rb") as f:
        assert f.read() == png
    listed = {"count": 2, "entries": [{"name": "000001_3.jpg", "digit": 3}, {"name": "000002_7.jpg", "digit": 7}]}
    assert ask_json(address + "board/kept") == (200, listed)

    status, kind, jpg = ask(address + "board/kept/000002_7.jpg")
    assert (status, kind) == (200, "image/jpeg") and jpg == store.jpg("000002_7.jpg")
    pixels = np.asarray(Image.open(io.BytesIO(jpg)), dtype=int)
    assert np.abs(pixels - prepare(original, "seven.png")).max() <= 1  # the server prepared the original itself
    status, kind, jpg = ask(address + "board/kept/000001_3.jpg")
    assert np.abs(np.asarray(Image.open(io.BytesIO(jpg)), dtype=int) - three).max() <= 1  # the input sent, kept

    assert ask_json(address + "board/kept/000001_3.jpg", method="DELETE") == (
        200, {"count": 1, "entries": [{"name": "000002_7.jpg", "digit": 7}]})
    assert label_lines(store) == ["000002_7.jpg 7"]
    status, answer = ask_json(address + "board/kept/000001_3.jpg")
    assert status == 404 and answer == {"error": "no kept digit '000001_3.jpg'; GET /board/kept lists them"}


@pytest.mark.quick
def test_only_listed_names_reach_the_filesystem(server):
    address, store = server
    store.keep(prepared(1), 1, b"original", "one.png")
    for name in ("..", ".keep.next", ".originals", "000001_1.png", "000002_1.jpg", "my_digits.txt", "%2e%2e"):
        for method in ("GET", "DELETE"):
            status, answer = ask_json(address + "board/kept/" + name, method=method)
            assert status == 404 and answer["error"].startswith("no kept digit "), (name, method)
    assert store.entries() == [("000001_1.jpg", 1)] and os.path.exists(os.path.join(store.folder, ".keep.next"))
    check_consistent(store, 1)


@pytest.mark.quick
def test_bad_keep_requests_get_one_line_and_keep_nothing(server):
    address, store = server
    row = prepared(4).reshape(-1).tolist()
    for body, why in [(b"digit=4", "the body is not JSON"),
                      ([4, row], "send a JSON object with only digit, input, original, name"),
                      ({"digit": 4, "input": row, "label": 4}, "send a JSON object with only"),
                      ({"digit": "4", "input": row}, '"digit" must be an integer 0-9, not "4"'),
                      ({"digit": True, "input": row}, '"digit" must be an integer 0-9, not true'),
                      ({"digit": 10, "input": row}, '"digit" must be an integer 0-9, not 10'),
                      ({"input": row}, '"digit" must be an integer 0-9, not null'),
                      ({"digit": 4, "input": row[:-1]}, '"input" must be 784 integers 0-255'),
                      ({"digit": 4, "input": row[:-1] + [256]}, '"input" must be 784 integers 0-255'),
                      ({"digit": 4, "input": row[:-1] + [1.5]}, '"input" must be 784 integers 0-255'),
                      ({"digit": 4, "input": [0] * 784}, "the input is blank (every pixel is 0)"),
                      ({"digit": 4}, 'send "input" (the prepared input), "original" (the picture in base64), or both'),
                      ({"digit": 4, "original": "not base64!"}, '"original" must be the picture\'s bytes in base64'),
                      ({"digit": 4, "original": 7}, '"original" must be the picture\'s bytes in base64'),
                      ({"digit": 4, "original": base64.b64encode(b"no picture").decode(), "name": "notes.txt"},
                       "notes.txt: "),
                      ({"digit": 4, "input": row, "name": 4}, '"name" must be the picture\'s file name')]:
        status, answer = ask_json(address + "board/keep", body)
        assert status == 400 and list(answer) == ["error"], body
        assert why in answer["error"] and "\n" not in answer["error"] and "mnist-keep-" not in answer["error"], answer
    smaller = tuple(dataclasses.replace(route, body=1000) if route.path == "/board/keep" else route
                    for route in app.ROUTES)  # the keep route's limit, 1,000 bytes
    body = json.dumps({"digit": 4, "input": row}).encode()
    with serving(served_store(store, smaller)) as small:
        status, answer = ask_json(small + "board/keep", body)
    assert status == 413 and answer == {"error": f"request body of {len(body):,} bytes is over this server's limit "
                                                 "of 1,000 bytes"}
    assert store.entries() == [] and not os.path.exists(store.labels)


# ---------------------------------------------------------------- the app's --serve --keep-dir

def test_the_served_board_keeps_behind_its_host_and_origin_checks(exported_workdir, tmp_path):
    from test_board import Server, request
    folder = tmp_path / "mine"
    served = Server(exported_workdir, "--model-dir", os.path.join("export", "mnist.tflite"), "--keep-dir", str(folder))
    try:
        body = {"digit": 4, "input": [0] * 300 + [255] * 184 + [0] * 300}
        foreign = [{"Origin": "http://evil.example"}, {"Referer": "http://evil.example/page"},
                   {"Host": "evil.example"}]
        for headers in foreign:
            status, answer = request(served.url + "board/keep", body, {"Content-Type": "text/plain", **headers})
            assert status == 403 and "error" in answer, headers
        assert not folder.exists()  # nothing kept by a page of another site or a rebound name
        status, answer = request(served.url + "board/keep", body, {"Origin": served.url.rstrip("/")})
        assert status == 200 and answer["kept"] == {"name": "000001_4.jpg", "digit": 4} and answer["count"] == 1
        assert (tmp_path / "mine.txt").read_text() == "000001_4.jpg 4\n"
        status, _ = request(served.url + "board/kept/000001_4.jpg", headers={"Origin": "http://evil.example"},
                            method="DELETE")
        assert status == 403 and (folder / "000001_4.jpg").is_file()
        assert request(served.url + "board/kept")[1]["count"] == 1
    finally:
        assert served.stop() == 130


def test_a_keep_dir_the_board_cannot_use_is_one_line_before_the_model_loads(tmp_path):
    (tmp_path / "mine").write_text("not a folder")
    result = run_main("mnist_app.py", "--serve", "--port", "0", "--model-dir", "nowhere", "--keep-dir", "mine",
                      cwd=tmp_path)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "mine" in result.stderr and "nowhere" not in result.stderr

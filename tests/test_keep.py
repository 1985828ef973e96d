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
import sys
import threading
import time
import types
import urllib.error
import urllib.request

import numpy as np
import pytest
from PIL import Image

import handmade
from conftest import joined, run_main, wait_limit
from mnistkit import files, keep, listener, pictures, preparation, writer
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
        return preparation.mnist_input(img)


def prepared(digit, seed=0):
    """A prepared hand-drawn digit, uint8 [28, 28], stroke bright on black."""
    return preparation.mnist_input(Image.open(io.BytesIO(drawn_png(digit, seed))).convert("L"))


def read_jpg(path):
    """The pixels of a kept JPG as the generator decodes them, int [28, 28]."""
    return np.frombuffer(load_image(str(path))[0], np.uint8).reshape(28, 28).astype(int)


def kept(number, digit):
    """The name the store keeps a digit under, as the layout declares it: kept(1, 7) is 000001_7.jpg today."""
    return keep.LAYOUT.name(number, digit)


def original(number, digit, suffix):
    """The path, in a keep folder, of that digit's original picture kept under `suffix` (".png")."""
    return os.path.join(keep.ORIGINALS, keep.stem_of(kept(number, digit)) + suffix)


def label_lines(store):
    with open(store.labels) as f:
        return f.read().splitlines()


def check_consistent(store, count):
    """The label file lists `count` distinct names, each with its file, and the folder holds nothing else."""
    lines = label_lines(store)
    names = [line.split(" ")[0] for line in lines]
    assert len(lines) == count and len(set(names)) == count
    for line in lines:
        name, digit = line.split(" ")
        assert keep.LAYOUT.parse(name)[1] == int(digit)
    assert sorted(n for n in os.listdir(store.folder) if not n.startswith(".")) == sorted(names)
    assert not [n for n in os.listdir(store.folder) if n.endswith(".tmp")]
    assert not os.path.exists(os.path.join(store.folder, keep.PENDING_FILE))
    keep.KeptDigits(store.folder)  # opens again without a refusal


# ---------------------------------------------------------------- the store

PNG = b"\x89PNG\r\n\x1a\n"  # a PNG's first bytes: the store writes an original's bytes as they come


@pytest.mark.quick
def test_keep_writes_the_course_layout_and_remove_takes_it_back(tmp_path):
    folder = tmp_path / "my_digits"
    store = keep.KeptDigits(str(folder))
    assert not folder.exists() and store.entries() == [] and store.count() == 0  # absent until the first keep
    three, seven = prepared(3), prepared(7)
    png = drawn_png(3)
    assert store.keep(three, 3, png, "PNG") == (kept(1, 3), 3, 1)
    assert store.keep(seven, np.int64(7)) == (kept(2, 7), 7, 2)
    assert store.labels == str(tmp_path / "my_digits.txt")
    assert label_lines(store) == [f"{kept(1, 3)} 3", f"{kept(2, 7)} 7"]
    assert store.entries() == [(kept(1, 3), 3), (kept(2, 7), 7)] and store.count() == 2
    jpg = Image.open(folder / kept(1, 3))
    assert (jpg.format, jpg.mode, jpg.size) == ("JPEG", "L", (28, 28))
    assert np.abs(read_jpg(folder / kept(1, 3)) - three).max() <= 1  # JPEG quality 100: off by 1 at most
    assert np.abs(read_jpg(folder / kept(2, 7)) - seven).max() <= 1
    assert (folder / original(1, 3, ".png")).read_bytes() == png
    assert os.listdir(folder / keep.ORIGINALS) == [os.path.basename(original(1, 3, ".png"))]  # none for the 7
    assert store.read(kept(2, 7)) == (folder / kept(2, 7)).read_bytes()

    assert store.remove(kept(1, 3)) == 1
    assert label_lines(store) == [f"{kept(2, 7)} 7"]
    assert not (folder / kept(1, 3)).exists() and os.listdir(folder / keep.ORIGINALS) == []
    for unknown in (kept(1, 3), keep.stem_of(kept(2, 7)) + ".png", "../my_digits.txt", keep.COUNTER_FILE):
        with pytest.raises(keep.NotKept):
            store.remove(unknown)
        with pytest.raises(keep.NotKept):
            store.read(unknown)
    assert store.remove(kept(2, 7)) == 0
    assert label_lines(store) == [] and store.entries() == []
    check_consistent(store, 0)


@pytest.mark.quick
def test_an_original_is_kept_under_the_suffix_of_its_format(tmp_path):
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    for number, (kind, suffix) in enumerate([("PNG", ".png"), ("JPEG", ".jpg"), ("MPO", ".jpg"), ("GIF", ".gif"),
                                             ("PPM", ".pbm")], start=1):  # PPM: Pillow's first suffix for it
        store.keep(prepared(1), 1, PNG, kind)
        assert (tmp_path / "my_digits" / original(number, 1, suffix)).read_bytes() == PNG
    with pytest.raises(ValueError, match=r"^the original is not a picture \('sh' is no picture format\)$"):
        store.keep(prepared(1), 1, b"#!/bin/sh", "sh")
    assert store.count() == 5


@pytest.mark.quick
def test_names_only_grow_and_no_file_is_written_over(tmp_path):
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    pixels = prepared(1)
    for _ in range(3):
        store.keep(pixels, 1)
    store.remove(kept(3, 1))  # the last one: "max existing + 1" alone would give 3 again
    assert store.keep(pixels, 1)[0] == kept(4, 1)
    store.remove(kept(4, 1))
    assert keep.KeptDigits(store.folder).keep(pixels, 2)[0] == kept(5, 2)  # a store opened anew counts on
    (tmp_path / "my_digits" / keep.COUNTER_FILE).unlink()  # the counter lost: the names there still count
    assert store.keep(pixels, 2)[0] == kept(6, 2)
    mine = tmp_path / "my_digits" / kept(7, 3)  # a file put there by hand, at the next number
    mine.write_bytes(b"mine")
    (tmp_path / "my_digits" / keep.ORIGINALS).mkdir()
    (tmp_path / "my_digits" / original(8, 3, ".png")).write_bytes(b"mine too")
    assert store.keep(pixels, 3, PNG, "PNG")[0] == kept(9, 3)  # past both: neither is written over
    assert mine.read_bytes() == b"mine" and (tmp_path / "my_digits" / original(8, 3, ".png")).read_bytes() == b"mine too"
    assert store.keep(pixels, 4)[0] == kept(10, 4)


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
def test_the_blank_check_reads_the_kept_file_as_the_generator_does(tmp_path):
    """A PNG layout: its blank check decodes the PNG the store writes (a JPEG-only decoder would let it pass)."""
    layout = dataclasses.replace(keep.LAYOUT, suffix=".png", format="PNG", options=())
    store = keep.KeptDigits(str(tmp_path / "my_digits"), layout)
    with pytest.raises(ValueError, match=r"^the input is blank \(every pixel is 9\)"):
        store.keep(np.full((28, 28), 9, np.uint8), 4)
    name, _, _ = store.keep(prepared(4), 4)
    assert name == layout.name(1, 4) and name.endswith(".png")
    assert (read_jpg(tmp_path / "my_digits" / name) == prepared(4)).all()  # PNG: the pixels exactly


@pytest.mark.quick
def writes_failing_halfway(monkeypatch, target):
    """Every write to the file `target` (a path), in place or under its temporary names, fails half-way: half
    its bytes written, then OSError ENOSPC (a full disk)."""
    real_open, base = open, os.path.basename(target)

    def full_disk(path, mode="r", *args, **kwargs):
        name = os.path.basename(os.fsdecode(path)) if isinstance(path, (str, bytes, os.PathLike)) else ""
        if set(mode) & set("wax+") and (name == base or name.startswith("." + base + ".")):
            return HalfFile(real_open(path, mode, *args, **kwargs))
        return real_open(path, mode, *args, **kwargs)
    monkeypatch.setattr("builtins.open", full_disk)


class HalfFile:
    """A file that takes half of what is written to it, then raises ENOSPC."""

    def __init__(self, f):
        self.f = f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def write(self, data):
        self.f.write(data[:len(data) // 2])
        self.f.flush()
        raise OSError(28, "No space left on device")

    def close(self):
        self.f.close()


def one_kept_and_the_next_keeps_file(folder, which):
    """(a KeptDigits in `folder` (a Path) holding one kept 5, the path str of `which` of the files the next keep
    (digit 6, the second) writes: "label file", "picture", "original", "counter" or "journal")."""
    store = keep.KeptDigits(str(folder))
    store.keep(prepared(5), 5, PNG, "PNG")
    return store, {"label file": store.labels, "picture": str(folder / kept(2, 6)),
                   "original": str(folder / original(2, 6, ".png")), "counter": str(folder / keep.COUNTER_FILE),
                   "journal": str(folder / keep.PENDING_FILE)}[which]


@pytest.mark.quick
@pytest.mark.parametrize("failing", ["label file", "picture", "original", "counter", "journal"])
def test_a_keep_whose_write_fails_half_way_is_one_line_and_the_store_stays_readable(tmp_path, monkeypatch,
                                                                                     failing):
    folder = tmp_path / "my_digits"
    store, target = one_kept_and_the_next_keeps_file(folder, failing)
    before = (tmp_path / "my_digits.txt").read_bytes()
    writes_failing_halfway(monkeypatch, target)
    with pytest.raises(DataError) as refused:
        store.keep(prepared(6), 6, PNG, "PNG")
    monkeypatch.undo()
    assert re.fullmatch(rf"{re.escape(target)}: cannot write [^\n]+ \(no space left on device\)", str(refused.value))
    assert (tmp_path / "my_digits.txt").read_bytes() == before  # never cut mid-line: the file as it was
    assert os.listdir(folder / keep.ORIGINALS) == [os.path.basename(original(1, 5, ".png"))]
    assert not [name for name in files_under(folder) if name.endswith(".tmp")]
    check_consistent(store, 1)
    again = keep.KeptDigits(str(folder))  # readable, by this store and a new one (a board started again)
    assert again.entries() == store.entries() == [(kept(1, 5), 5)] and again.problem() is None
    name, digit, count = store.keep(prepared(7), 7)
    assert (digit, count) == (7, 2) and keep.KeptDigits(str(folder)).entries()[-1] == (name, 7)


STOPPED = 86  # the exit status of a keep stopped on purpose


def started():
    """The multiprocessing context of these tests' processes: forked from a server process started afresh, which
    imported this file once. Not forked from this worker: a fork copies the locks its other threads hold
    (TensorFlow's, a logging lock of an earlier test's thread) into a child that may then wait on them for ever."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def stopped_keep(folder, where):
    """In a process of its own: keep a 2 with an original, and end the process (os._exit) at `where` of the keep:
    "original" (once the original is written), "jpg" (once the JPG is), "half line" (half its label line
    appended), "line" (the whole line appended, the journal not yet removed)."""
    store = keep.KeptDigits(folder)
    write, append = keep._write, store._append

    def writing(path, data, *what):
        write(path, data, *what)
        if (where == "original" and keep.ORIGINALS in path) or (where == "jpg" and path.endswith(kept(1, 2)[-6:])):
            os._exit(STOPPED)

    def appending(line, at):
        if where == "half line":
            with open(store.labels, "ab") as f:
                f.write(line.encode()[:len(line) // 2])
            os._exit(STOPPED)
        append(line, at)
        os._exit(STOPPED)
    keep._write, store._append = writing, appending
    store.keep(prepared(2), 2, PNG, "PNG")


def files_under(folder):
    """{path relative to folder: bytes} of every file under it, hidden ones too."""
    return {os.path.relpath(os.path.join(top, name), folder): open(os.path.join(top, name), "rb").read()
            for top, _, names in os.walk(folder) for name in names}


@pytest.mark.skipif(os.name != "posix", reason="the store's lock across processes is fcntl's")
@pytest.mark.parametrize("where", ["original", "jpg", "half line", "line"])
def test_a_stopped_keep_is_taken_back_or_finished_and_nothing_else_is_removed(tmp_path, where):
    folder, labels = tmp_path / "my_digits", tmp_path / "my_digits.txt"
    first = keep.KeptDigits(str(folder))
    first.keep(prepared(5), 5, PNG, "PNG")
    mine = {kept(50, 3): b"a file put there by hand", os.path.join(keep.ORIGINALS, kept(51, 2)): b"mine",
            ".notes.tmp": b"hidden, mine", os.path.join(keep.ORIGINALS, ".mine.tmp"): b"mine"}
    for name, data in mine.items():
        (folder / name).write_bytes(data)
    process = started().Process(target=stopped_keep, args=(str(folder), where))
    process.start()
    process.join(wait_limit(60))
    assert process.exitcode == STOPPED
    left = labels.read_text()  # as the stopped process left it: the label line only after the files it names
    for line in left.split("\n")[:-1]:  # each whole line (a cut one is taken back below)
        name = line.split(" ")[0]
        assert (folder / name).is_file(), (where, left)
    assert (folder / keep.PENDING_FILE).exists()

    store = keep.KeptDigits(str(folder))  # opening tidies it
    finished = where == "line"
    assert store.entries() == [(kept(1, 5), 5)] + ([(kept(2, 2), 2)] if finished else [])
    assert labels.read_text() == f"{kept(1, 5)} 5\n" + (f"{kept(2, 2)} 2\n" if finished else "")
    assert (folder / kept(2, 2)).exists() == finished and (folder / original(2, 2, ".png")).exists() == finished
    found = files_under(folder)
    assert all(found[name] == data for name, data in mine.items())  # none of the user's files removed or changed
    assert not [name for name in found if name.endswith(".tmp") and name not in mine]
    assert keep.PENDING_FILE not in found
    assert store.keep(prepared(9), 9)[0] == kept(3, 9)  # the stopped keep's number stays used


@pytest.mark.quick
def test_a_stopped_remove_is_finished(tmp_path):
    folder = tmp_path / "my_digits"
    store = keep.KeptDigits(str(folder))
    for digit in (1, 2):
        store.keep(prepared(digit), digit, PNG, "PNG")
    real = files.remove

    def stopped(path):
        if path.endswith(".png"):
            raise KeyboardInterrupt  # Ctrl-C once the line is gone, before the original is
        real(path)
    files.remove = stopped
    try:
        with pytest.raises(KeyboardInterrupt):
            store.remove(kept(1, 1))
    finally:
        files.remove = real
    assert (folder / original(1, 1, ".png")).exists() and (folder / keep.PENDING_FILE).exists()
    store = keep.KeptDigits(str(folder))
    assert store.entries() == [(kept(2, 2), 2)] and not (folder / original(1, 1, ".png")).exists()
    check_consistent(store, 1)


@pytest.mark.quick
def test_a_journal_naming_other_files_removes_none_of_them(tmp_path):
    folder = tmp_path / "my_digits"
    keep.KeptDigits(str(folder)).keep(prepared(1), 1)
    outside = tmp_path / "notes.txt"
    outside.write_text("mine")
    (folder / keep.PENDING_FILE).write_text(json.dumps({"keep": kept(9, 9), "line": "x", "at": 0,
                                                         "files": ["../notes.txt", "../my_digits.txt", kept(1, 1)]}))
    store = keep.KeptDigits(str(folder))  # a journal naming a file outside, the label file, a listed digit
    assert outside.read_text() == "mine" and store.entries() == [(kept(1, 1), 1)] and (folder / kept(1, 1)).exists()
    assert not (folder / keep.PENDING_FILE).exists()


def keep_many(folder, digits, start):
    """Keep each of `digits` (a prepared 0 each time) through a store of its own opened on `folder`, after `start`."""
    start.wait()
    store = keep.KeptDigits(folder)
    pixels = prepared(0)
    for digit in digits:
        store.keep(pixels, digit, PNG, "PNG")


@pytest.mark.quick
def test_twenty_threads_keep_at_once(tmp_path):
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    pixels, start = prepared(0), threading.Barrier(20, timeout=wait_limit(60))
    kept_now = []

    def one(digit):
        start.wait()
        kept_now.append(store.keep(pixels, digit, PNG, "PNG")[:2])
    threads = [threading.Thread(target=one, args=(i % 10,)) for i in range(20)]
    for thread in threads:
        thread.start()
    joined(threads, "twenty threads keeping at once")
    assert sorted(kept_now) == sorted(store.entries())
    assert sorted(kept_now) == sorted((kept(i, d), d) for i, d in
                                      zip(range(1, 21), [keep.LAYOUT.parse(n)[1] for n, _ in sorted(kept_now)]))
    assert sorted(d for _, d in kept_now) == sorted(i % 10 for i in range(20))
    assert len(os.listdir(tmp_path / "my_digits" / keep.ORIGINALS)) == 20
    check_consistent(store, 20)


@pytest.mark.quick
@pytest.mark.skipif(os.name != "posix", reason="the store's lock across processes is fcntl's")
def test_two_processes_keep_at_once(tmp_path):
    folder = str(tmp_path / "my_digits")
    context = started()
    start = context.Barrier(3, timeout=wait_limit(120))  # a process that never comes breaks it: the test fails
    processes = [context.Process(target=keep_many, args=(folder, [i % 10] * 15, start)) for i in range(2)]
    for process in processes:
        process.start()
    keep_many(folder, [9] * 15, start)  # and this process's own store at the same time
    for process in processes:
        process.join(wait_limit(120))
        assert process.exitcode == 0
    store = keep.KeptDigits(folder)
    assert sorted(d for _, d in store.entries()) == [0] * 15 + [1] * 15 + [9] * 15
    assert sorted(keep.LAYOUT.parse(name)[0] for name, _ in store.entries()) == list(range(1, 46))
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
    folder = tmp_path / "my_digits"
    keep.KeptDigits(str(folder)).keep(prepared(2), 2)
    (folder / "notes.txt").write_text("mine")
    assert "holds 'notes.txt', which the keep store did not write" in refusal(folder)


# ---------------------------------------------------------------- a label file edited by hand

def refused(work, *args):
    """The one line of the KeepRefused work(*args) raises."""
    with pytest.raises(keep.KeepRefused) as raised:
        work(*args)
    assert "\n" not in str(raised.value)
    return str(raised.value)


def kept_two(tmp_path):
    """(folder, label file) of a store in tmp_path/my_digits that kept a 1 and a 2."""
    folder = tmp_path / "my_digits"
    store = keep.KeptDigits(str(folder))
    for digit in (1, 2):
        store.keep(prepared(digit), digit)
    return folder, tmp_path / "my_digits.txt"


@pytest.mark.quick
def test_blank_lines_crlf_and_a_missing_last_line_break_are_read_as_the_generator_reads_them(tmp_path):
    folder, labels = kept_two(tmp_path)
    labels.write_bytes(f"\ufeff{kept(1, 1)} 1\r\n\r\n   \n{kept(2, 2)}  2 \r\n\n".encode())  # an editor's
    store = keep.KeptDigits(str(folder))
    assert store.entries() == [(kept(1, 1), 1), (kept(2, 2), 2)] and store.problem() is None
    assert store.keep(prepared(3), 3)[:2] == (kept(3, 3), 3)
    labels.write_bytes(labels.read_bytes().rstrip(b"\n"))  # no line break after the last line
    assert store.keep(prepared(4), 4) == (kept(4, 4), 4, 4)
    assert labels.read_text().splitlines()[-2:] == [f"{kept(3, 3)} 3", f"{kept(4, 4)} 4"]
    assert store.remove(kept(1, 1)) == 3
    assert label_lines(store) == [f"{kept(2, 2)} 2", f"{kept(3, 3)} 3", f"{kept(4, 4)} 4"]


@pytest.mark.quick
def test_a_line_the_store_cannot_read_is_named_and_keeping_waits_for_its_fix(tmp_path):
    folder, labels = kept_two(tmp_path)
    good = labels.read_text()
    for lines, why in [("garbage\n", "expected '<file name> <digit>', found 'garbage'"),
                       (f"{kept(1, 1)} 1\n", f"'{kept(1, 1)}' is listed again (first on line 1)"),
                       ("0_5.jpg 5\n", f"'0_5.jpg' is not a name the keep store gives ('{kept(1, 7)}')"),
                       (f"{kept(9, 4)} 7\n", f"'{kept(9, 4)}' is labelled 7, not the 4 of its name"),
                       (f"{kept(9, 4)} 4\n", f"{kept(9, 4)} is not in {folder}"),
                       ("\xff\n", f"not UTF-8 text (invalid start byte at byte 0 of the line): {writer.SAVE_AS_UTF8}")]:
        labels.write_bytes((good + "\n").encode() + lines.encode("latin-1"))
        store = keep.KeptDigits(str(folder))  # opens: --serve starts
        assert store.entries() == [(kept(1, 1), 1), (kept(2, 2), 2)]  # what it can read
        assert store.unreadable() == [f"{labels}:4: {why}"]
        fix = f"{labels}:4: {why}; correct or delete line 4 of {labels}, then keep again"
        assert store.problem() == fix
        assert refused(store.keep, prepared(3), 3) == fix
        assert refused(store.remove, kept(1, 1)).endswith("then remove again")
        assert refused(store.count).endswith("then learn again")
        assert labels.read_bytes() == (good + "\n").encode() + lines.encode("latin-1")  # nothing rewritten
    labels.write_text(good + "garbage\nmore garbage\n")
    assert store.problem().endswith("then keep again (1 more line cannot be read)")
    labels.write_text(good)  # fixed: keeping goes on, without a restart
    assert store.keep(prepared(3), 3)[:2] == (kept(3, 3), 3)


@pytest.mark.quick
def test_a_folder_kept_in_an_older_layout_is_still_read_or_named_in_one_line(tmp_path):
    folder = tmp_path / "my_digits"
    old = keep.KeptDigits(str(folder))
    for digit in (1, 2):
        old.keep(prepared(digit), digit)
    png = dataclasses.replace(keep.LAYOUT, suffix=".png", format="PNG", options=())  # a change of the kept format
    store = keep.KeptDigits(str(folder), png)
    jpg = keep.LAYOUT.suffix
    assert store.entries() == [] and store.unreadable() == [  # without `older`: named, with what to do
        f"{store.labels}:{n}: '{kept(n, n)}' is of a layout this store does not keep ({jpg}, it keeps .png): the "
        "generator reads it as it is; keep in a new --keep-dir" for n in (1, 2)]
    store = keep.KeptDigits(str(folder), dataclasses.replace(png, older=(jpg,)))  # with it: read
    assert store.entries() == [(kept(1, 1), 1), (kept(2, 2), 2)] and store.problem() is None
    assert store.keep(prepared(3), 3)[0] == png.name(3, 3)
    assert store.read(kept(1, 1)) == (folder / kept(1, 1)).read_bytes()
    assert store.remove(kept(1, 1)) == 2 and not (folder / kept(1, 1)).exists()
    assert label_lines(store) == [f"{kept(2, 2)} 2", f"{png.name(3, 3)} 3"]


# ---------------------------------------------------------------- the generator reads it

def test_the_generator_reads_the_kept_layout(tmp_path):
    from tf_compat import tf
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    pixels_of = {}
    for i, digit in enumerate([3, 1, 4, 1, 5, 9, 2, 6]):
        pixels = prepared(digit, seed=i)
        pixels_of[store.keep(pixels, digit, drawn_png(digit, seed=i), "PNG")[0]] = pixels
    store.remove(kept(2, 1))
    del pixels_of[kept(2, 1)]
    with open(store.labels, "a") as f:
        f.write("\n")  # a blank line at the end, as an editor leaves it
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
            assert np.abs(pixels - pixels_of[name]).max() <= 1
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
    deadline = time.monotonic() + wait_limit(SERVER_TIMEOUT)
    while not served.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert served.started, "the test server did not start"
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
        with urllib.request.urlopen(request, timeout=wait_limit(60)) as answer:
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
    assert (status, answer) == (200, {"kept": {"name": kept(1, 3), "digit": 3}, "count": 1})
    png = drawn_png(7)
    status, answer = ask_json(address + "board/keep", {"digit": 7, "original": base64.b64encode(png).decode(),
                                                        "name": "C:\\photos\\seven.sh"})
    assert (status, answer) == (200, {"kept": {"name": kept(2, 7), "digit": 7}, "count": 2})
    kept_original = os.path.join(store.folder, original(2, 7, ".png"))  # the suffix of its format, not its name's
    with open(kept_original, "rb") as f:
        assert f.read() == png
    newest_first = [{"name": kept(2, 7), "digit": 7}, {"name": kept(1, 3), "digit": 3}]
    assert ask_json(address + "board/kept") == (200, {"count": 2, "entries": newest_first, "more": False,
                                                      "unreadable": []})

    status, kind, jpg = ask(address + "board/kept/" + kept(2, 7))
    assert (status, kind) == (200, "image/jpeg") and jpg == store.read(kept(2, 7))
    pixels = np.asarray(Image.open(io.BytesIO(jpg)), dtype=int)
    assert np.abs(pixels - prepare(kept_original, "seven.png")).max() <= 1  # the server prepared the original
    status, kind, jpg = ask(address + "board/kept/" + kept(1, 3))
    assert np.abs(np.asarray(Image.open(io.BytesIO(jpg)), dtype=int) - three).max() <= 1  # the input sent, kept

    assert ask_json(address + "board/kept/" + kept(1, 3), method="DELETE") == (200, {"removed": kept(1, 3),
                                                                                    "count": 1})
    assert label_lines(store) == [f"{kept(2, 7)} 7"]
    status, answer = ask_json(address + "board/kept/" + kept(1, 3))
    assert status == 404 and answer == {"error": f"no kept digit '{kept(1, 3)}'; GET /board/kept lists them"}


@pytest.mark.quick
def test_the_kept_digits_are_listed_a_page_at_a_time_newest_first(server):
    address, store = server
    for number in range(1, 8):
        store.keep(prepared(number % 10), number % 10)
    listed = lambda query: ask_json(address + "board/kept" + query)  # noqa: E731
    names = lambda answer: [entry["name"] for entry in answer["entries"]]  # noqa: E731
    status, first = listed("?limit=3")
    assert status == 200 and first["count"] == 7 and first["more"] is True
    assert names(first) == [kept(7, 7), kept(6, 6), kept(5, 5)]
    status, second = listed(f"?limit=3&before={kept(5, 5)}")
    assert names(second) == [kept(4, 4), kept(3, 3), kept(2, 2)] and second["more"] is True
    status, last = listed(f"?limit=3&before={kept(2, 2)}")
    assert names(last) == [kept(1, 1)] and last["more"] is False
    assert names(listed("")[1]) == names(first) + names(second) + names(last)  # 100 by default
    for bad in ("0", "1001", "x", "-1"):
        status, answer = listed(f"?limit={bad}")
        assert status == 400 and answer["error"] == f"limit must be a number of kept digits 1-1000, not '{bad}'"
    status, answer = listed("?before=" + kept(9, 9))
    assert status == 404 and answer["error"].startswith(f"no kept digit '{kept(9, 9)}'")


@pytest.mark.quick
def test_a_label_line_the_store_cannot_read_is_a_409_naming_it_and_the_board_lists_the_rest(server):
    address, store = server
    store.keep(prepared(1), 1)
    with open(store.labels, "a") as f:
        f.write("\n000002_x.jpg seven\n")
    fix = (f"{store.labels}:3: label 'seven' is not a digit 0-9; correct or delete line 3 of {store.labels}, "
           "then {} again")
    status, answer = ask_json(address + "board/keep", {"digit": 3, "input": prepared(3).reshape(-1).tolist()})
    assert (status, answer) == (409, {"error": fix.format("keep")})
    assert ask_json(address + "board/kept/" + kept(1, 1), method="DELETE") == (409, {"error": fix.format("remove")})
    assert ask_json(address + "board/kept") == (200, {
        "count": 1, "entries": [{"name": kept(1, 1), "digit": 1}], "more": False,
        "unreadable": [f"{store.labels}:3: label 'seven' is not a digit 0-9"]})
    status, kind, jpg = ask(address + "board/kept/" + kept(1, 1))
    assert status == 200 and jpg == store.read(kept(1, 1))
    with open(store.labels, "w") as f:
        f.write(f"{kept(1, 1)} 1\n")  # fixed by hand
    status, answer = ask_json(address + "board/keep", {"digit": 3, "input": prepared(3).reshape(-1).tolist()})
    assert (status, answer) == (200, {"kept": {"name": kept(2, 3), "digit": 3}, "count": 2})


def test_a_learn_is_refused_with_the_same_409(tmp_path):
    from mnistkit.board import teach
    from test_board_routes import Asked, Stand
    (tmp_path / "model").mkdir()
    stand = Stand()
    stand.source = str(tmp_path / "model" / "mnist_model-7")
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    store.keep(prepared(1), 1)
    with open(store.labels, "a") as f:
        f.write("garbage\n")
    board = app.create_app(app.Served(model.Model(stand, prepare), None, store, teach.Learning(store)))
    answer = Asked(board, "POST", "/board/learn")
    assert answer.status == 409 and answer.error() == (
        f"{store.labels}:2: expected '<file name> <digit>', found 'garbage'; correct or delete line 2 of "
        f"{store.labels}, then learn again")


@pytest.mark.quick
def test_past_the_most_digits_a_keep_is_one_409_line(tmp_path):
    store = keep.KeptDigits(str(tmp_path / "my_digits"), most=2)
    store.keep(prepared(1), 1)
    with serving(served_store(store)) as address:
        body = {"digit": 2, "input": prepared(2).reshape(-1).tolist()}
        assert ask_json(address + "board/keep", body)[0] == 200
        status, answer = ask_json(address + "board/keep", body)
    assert status == 409 and answer == {"error": f"{store.folder}: 2 digits are kept, the most a keep folder holds; "
                                                 "remove some (x on the page) or keep in another folder (--keep-dir)"}
    assert store.count() == 2 and keep.MOST == 10_000


def fill(folder, count, start):
    """Write `count` kept 8s straight into a keep folder, numbered from `start`, as the store lays them out (its
    layout's names and encoder, a label line each, its counter): a large store made in a moment."""
    data, lines = keep.LAYOUT.encode(prepared(8)), []
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(start, start + count):
        (folder / kept(number, 8)).write_bytes(data)
        lines.append(f"{kept(number, 8)} 8\n")
    with open(str(folder) + keep.LAYOUT.labels, "a") as f:
        f.write("".join(lines))
    (folder / keep.COUNTER_FILE).write_text(f"{start + count}\n")


FILE_EVENTS = {"open", "os.listdir", "os.scandir", "os.rename", "os.remove", "os.truncate", "os.mkdir"}
_counting = []  # the FileWork counting now: an audit hook cannot be taken out once added, so it looks here


class FileWork:
    """Around a block: the file work done under `root` (every thread): {audit event: count} (sys.addaudithook's
    open, listings, renames, removes, truncations) and the bytes of the files opened for reading."""

    hooked = False

    def __init__(self, root):
        self.root, self.events, self.read_bytes = str(root), {}, 0

    def __enter__(self):
        if not FileWork.hooked:
            sys.addaudithook(lambda event, args: _counting and event in FILE_EVENTS and _counting[-1].saw(event, args))
            FileWork.hooked = True
        _counting.append(self)
        return self

    def __exit__(self, *exc):
        _counting.remove(self)

    def saw(self, event, args):
        path = args[0]
        if not isinstance(path, (str, bytes, os.PathLike)) or not os.fsdecode(path).startswith(self.root):
            return
        self.events[event] = self.events.get(event, 0) + 1
        if event == "open" and not args[2] & (os.O_WRONLY | os.O_RDWR) and os.path.isfile(path):
            self.read_bytes += os.path.getsize(path)


# not quick: 4-5 s of 5,000 keeps (make test runs it); the quick tier keeps under a minute
def test_a_keep_does_the_same_file_work_and_answers_the_same_size_with_5000_kept(tmp_path):
    from test_board_routes import Asked
    folder = tmp_path / "my_digits"
    body = json.dumps({"digit": 3, "input": prepared(3).reshape(-1).tolist()}).encode()

    def keep_one(store):
        board = served_store(store)
        with FileWork(tmp_path) as work:
            answer = Asked(board, "POST", "/board/keep", body)
        assert answer.status == 200, answer.body
        return json.loads(answer.body), len(answer.body), work

    store = keep.KeptDigits(str(folder))
    store.keep(prepared(1), 1)
    second, second_size, second_work = keep_one(store)
    fill(folder, 5000, start=3)
    store = keep.KeptDigits(str(folder))  # the board starts: the label file is read once
    last, last_size, last_work = keep_one(store)
    assert second == {"kept": {"name": kept(2, 3), "digit": 3}, "count": 2}
    assert last == {"kept": {"name": kept(5003, 3), "digit": 3}, "count": 5003}
    assert last_size - second_size == len("5003") - len("2")  # the same answer, but for the count's digits
    assert last_work.events == second_work.events and last_work.events["open"] >= 5, last_work.events
    assert last_work.read_bytes == second_work.read_bytes + len("5003") - len("3") < 100  # the counter alone
    listed = Asked(served_store(store), "GET", "/board/kept")
    answer = json.loads(listed.body)
    assert answer["count"] == 5003 and len(answer["entries"]) == 100 and answer["more"] is True
    assert answer["entries"][0] == {"name": kept(5003, 3), "digit": 3} and len(listed.body) < 5000


@pytest.mark.quick
def test_only_listed_names_reach_the_filesystem(server):
    address, store = server
    store.keep(prepared(1), 1, PNG, "PNG")
    for name in ("..", keep.COUNTER_FILE, keep.ORIGINALS, keep.stem_of(kept(1, 1)) + ".png", kept(2, 1),
                 "my_digits.txt", "%2e%2e"):
        for method in ("GET", "DELETE"):
            status, answer = ask_json(address + "board/kept/" + name, method=method)
            assert status == 404 and answer["error"].startswith("no kept digit "), (name, method)
    assert store.entries() == [(kept(1, 1), 1)] and os.path.exists(os.path.join(store.folder, keep.COUNTER_FILE))
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
                       "notes.txt: not an image file"),
                      ({"digit": 4, "input": row, "original": base64.b64encode(b"#!/bin/sh\nrm -rf ~\n").decode(),
                        "name": "run.sh"}, "run.sh: not an image file"),  # with its input too: only a picture
                      ({"digit": 4, "input": row, "original": base64.b64encode(drawn_png(4)[:200]).decode()},
                       "picture: cannot read image"),  # a PNG's header, its pixels cut off
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
    """Also: a label file edited by hand, with a line the store cannot read, is said once as --serve starts, and
    keeping is a 409 naming it until it is fixed, with no restart."""
    from test_board import Server, request
    folder, labels = tmp_path / "mine", tmp_path / "mine.txt"
    keep.KeptDigits(str(folder)).keep(prepared(1), 1)
    labels.write_text(f"{kept(1, 1)} 1\ngarbage\n")
    served = Server(exported_workdir, "--model-dir", os.path.join("export", "mnist.tflite"), "--keep-dir", str(folder))
    try:
        body = {"digit": 4, "input": [0] * 300 + [255] * 184 + [0] * 300}
        foreign = [{"Origin": "http://evil.example"}, {"Referer": "http://evil.example/page"},
                   {"Host": "evil.example"}]
        for headers in foreign:
            status, answer = request(served.url + "board/keep", body, {"Content-Type": "text/plain", **headers})
            assert status == 403 and "error" in answer, headers
        fix = (f"{labels}:2: expected '<file name> <digit>', found 'garbage'; correct or delete line 2 of {labels}, "
               "then keep again")
        assert served.stderr().splitlines() == [f"warning: {fix}"]  # said once, as it started
        status, answer = request(served.url + "board/keep", body, {"Origin": served.url.rstrip("/")})
        assert (status, answer) == (409, {"error": fix})
        assert request(served.url + "board/kept")[1]["unreadable"] == [fix.split(";")[0]]
        labels.write_text(f"{kept(1, 1)} 1\n\n")  # fixed, a blank line left at the end
        status, answer = request(served.url + "board/keep", body, {"Origin": served.url.rstrip("/")})
        assert status == 200 and answer == {"kept": {"name": kept(2, 4), "digit": 4}, "count": 2}
        assert labels.read_text() == f"{kept(1, 1)} 1\n\n{kept(2, 4)} 4\n"  # nothing kept by another site's page
        status, _ = request(served.url + "board/kept/" + kept(2, 4), headers={"Origin": "http://evil.example"},
                            method="DELETE")
        assert status == 403 and (folder / kept(2, 4)).is_file()
        assert request(served.url + "board/kept")[1]["count"] == 2
    finally:
        assert served.stop() == 130


def test_a_keep_dir_the_board_cannot_use_is_one_line_before_the_model_loads(tmp_path):
    (tmp_path / "mine").write_text("not a folder")
    result = run_main("mnist_app.py", "--serve", "--port", "0", "--model-dir", "nowhere", "--keep-dir", "mine",
                      cwd=tmp_path)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "mine" in result.stderr and "nowhere" not in result.stderr

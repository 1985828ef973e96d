"""A newcomer's hour and files of the wrong kind: hints naming the script as found, Ctrl-C during
TensorFlow's import, files named from their first bytes. Unit tests: no training, no TensorFlow session."""
import gzip
import io
import os
import re
import shlex
import signal
import zlib

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, ended, read_line
import mnist_app
import mnistkit.cli
import mnistkit.distributed
import mnistkit.formats
import mnistkit.images
import mnistkit.pictures
import mnistkit.records
import tf_compat
from mnistkit.errors import DataError

pytestmark = pytest.mark.quick  # every test here: make test-quick


# ---------------------------------------------------------------- hints name the script as the user can run it

@pytest.mark.parametrize("cwd, expected", [
    (ROOT, "mnist_generateds.py"),  # in the scripts' folder: the name, as the course writes it
    (os.path.dirname(ROOT), os.path.join(os.path.basename(ROOT), "mnist_generateds.py")),  # below: relative
    (os.path.join(ROOT, "tests"), os.path.join(ROOT, "mnist_generateds.py")),  # elsewhere: absolute, not ../
])
def test_a_hint_names_the_script_as_it_runs_from_the_current_folder(cwd, expected):
    assert mnistkit.cli.script_path("mnist_generateds.py", cwd) == shlex.quote(expected)
    path = shlex.split(mnistkit.cli.script_path("mnist_generateds.py", cwd))[0]
    assert os.path.isfile(os.path.join(cwd, path))


def test_a_hint_quotes_a_path_with_spaces(monkeypatch, tmp_path):
    monkeypatch.setattr(mnistkit.cli, "REPO_DIR", str(tmp_path / "my course"))
    assert mnistkit.cli.command("mnist_backward.py", "--steps", "5") == (
        f"python '{tmp_path}/my course/mnist_backward.py' --steps 5")


WRITTEN_OUT = re.compile(r"[\"'][^\"']*(`python mnist_\w+\.py|(run|train|use) it with mnist_)")  # in a string literal


def test_every_message_hint_goes_through_the_one_helper():
    """No `python mnist_...py` written out in a message: each is cli.command's, so it runs from where the user is."""
    found = []
    for folder in (ROOT, os.path.join(ROOT, "mnistkit")):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    found += [f"{name}:{n}" for n, line in enumerate(f, 1) if WRITTEN_OUT.search(line)]
    assert found == []


# ---------------------------------------------------------------- Ctrl-C while TensorFlow is imported

def swallowing_import(signum):
    """A stand-in for TensorFlow's import: the signal comes, and code inside catches every exception."""
    def work():
        try:
            os.kill(os.getpid(), signum)
            for _ in range(1000):
                pass  # a Python-level handler runs here, between bytecodes
        except BaseException:
            pass  # what lost the signal before: TensorFlow's import caught the KeyboardInterrupt
        return "imported"
    return work


def test_ctrl_c_during_the_import_is_held_and_raised_after_it():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            tf_compat.holding_signals(swallowing_import(signal.SIGINT))
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_stop_flag_set_during_the_import_is_set_after_it():
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        assert tf_compat.holding_signals(swallowing_import(signal.SIGTERM)) == "imported"
        for _ in range(1000):
            pass
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_an_ignored_ctrl_c_stays_ignored_and_no_signal_means_no_exception():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job started by a shell
    try:
        assert tf_compat.holding_signals(swallowing_import(signal.SIGINT)) == "imported"
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert tf_compat.holding_signals(lambda: 42) == 42


# ---------------------------------------------------------------- files named from their first bytes

def heif(brand, compatible=(b"mif1",)):
    """The first bytes of an ISO-BMFF picture: an ftyp box with a major brand and compatible brands."""
    body = b"ftyp" + brand + b"\0\0\0\0" + b"".join(compatible)
    return (len(body) + 4).to_bytes(4, "big") + body + b"\0\0\0\x08mdat" + bytes(200)


def tfrecord_bytes():
    """One real TFRecord record: a uint64 length, its masked CRC, data, the data's (here unchecked) CRC."""
    data = b"x" * 812  # a record of the course's size
    length = len(data).to_bytes(8, "little")
    return length + mnistkit.records.masked_crc32c(length).to_bytes(4, "little") + data + bytes(4)


def zip_bytes():
    buffer = io.BytesIO()
    np.savez(buffer, a=np.zeros(3))
    return buffer.getvalue()


@pytest.mark.parametrize("head, kind", [
    (heif(b"heic"), "a HEIC/HEIF photo"),
    (heif(b"mif1", (b"mif1", b"heic")), "a HEIC/HEIF photo"),
    (heif(b"heix"), "a HEIC/HEIF photo"),
    (heif(b"msf1", (b"hevc",)), "a HEIC/HEIF photo"),
    (heif(b"avif", (b"avif", b"mif1")), "a AVIF photo"),
    (heif(b"isom", (b"mp41",)), None),  # an MP4 video: ftyp, but no picture brand
    (gzip.compress(tfrecord_bytes(), mtime=0), "a GZIP-compressed TFRecord file"),
    (zlib.compress(tfrecord_bytes()), "a ZLIB-compressed TFRecord file"),
    (gzip.compress(b"\0\0\x08\x03" + bytes(100), mtime=0), "a GZIP-compressed IDX file (MNIST's download format)"),
    (gzip.compress(b"plain text\n" * 10, mtime=0), "a GZIP-compressed file"),
    (b"\0\0\x08\x01" + bytes(100), "an IDX file (MNIST's download format)"),
    (tfrecord_bytes(), "a TFRecord file"),
    (zip_bytes(), "a zip archive (or a NumPy .npz)"),
    (b"\x89HDF\r\n\x1a\n" + bytes(50), "an HDF5 file (Keras .h5 weights or data)"),
    (b"\x93NUMPY\x01\x00" + bytes(50), "a NumPy .npy array"),
    (b"%PDF-1.7\n" + bytes(50), "a PDF document"),
    (b"\x89PNG\r\n\x1a\n" + bytes(50), "a PNG image"),
    (b"\xff\xd8\xff\xe0" + bytes(50), "a JPEG image"),
    (bytes(300)[:257] + b"ustar\x0000" + bytes(50), "a tar archive"),
    (b"label,pixel0,pixel1\n", None),
    (b"", None),
])
def test_a_file_is_named_from_its_first_bytes(head, kind):
    assert mnistkit.formats.describe(head[:mnistkit.formats.HEAD_BYTES], mnistkit.records.is_record_header) == kind


@pytest.mark.parametrize("make, message", [
    (lambda: gzip.compress(tfrecord_bytes() * 3),
     "{p}: GZIP-compressed TFRecord file; the readers here take uncompressed ones: decompress it first "
     "(`gzip -dc {p} > plain.tfrecords`), or rerun `{g}`"),
    (lambda: zlib.compress(tfrecord_bytes() * 3),
     "{p}: ZLIB-compressed TFRecord file; the readers here take uncompressed ones: decompress it first "
     "(Python's zlib.decompress), or rerun `{g}`"),
    (lambda: gzip.compress(b"\0\0\x08\x03" + bytes(100)),
     "{p}: a GZIP-compressed IDX file (MNIST's download format), not a TFRecord file; make TFRecord files from the "
     "folder of the 4 IDX files with `{i}`"),
    (zip_bytes, "{p}: a zip archive (or a NumPy .npz), not a TFRecord file; rerun `{g}`"),
    (lambda: b"\x89PNG\r\n\x1a\n" + bytes(100), "{p}: a PNG image, not a TFRecord file; rerun `{g}`"),
])
def test_a_file_that_is_not_a_plain_tfrecord_file_is_named(make, message, tmp_path):
    path = tmp_path / "mnist_train.tfrecords"
    path.write_bytes(make())
    with pytest.raises(DataError) as error:
        mnistkit.records.scan_tfrecord(str(path))
    assert str(error.value) == message.format(p=path, g=mnistkit.records.generate_command(str(tmp_path)),
                                              i=mnistkit.records.generate_command(str(tmp_path), "--idx-dir", "FOLDER"))


@pytest.mark.parametrize("name", ["IMG_0001.png", "IMG_0001.jpg", "IMG_0001.HEIC"])
def test_an_iphone_heic_photo_is_named_by_the_app_and_the_generator(name, tmp_path):
    path = tmp_path / name
    path.write_bytes(heif(b"heic", (b"mif1", b"heic")))
    for read in (mnist_app.prepared_pixels, mnistkit.images.load_image):
        with pytest.raises(DataError) as error:
            read(str(path))
        assert str(error.value) == f"{path}: HEIC/HEIF photo: convert it to JPG or PNG"


def test_other_files_given_as_pictures_are_named_or_not_an_image(tmp_path):
    cases = {"notes.png": (b"%PDF-1.4\n" + bytes(100), "a PDF document, not an image file"),
             "data.jpg": (tfrecord_bytes(), "a TFRecord file, not an image file"),
             "text.png": (b"hello\n" * 20, "not an image file")}
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(DataError) as error:
            mnist_app.prepared_pixels(str(tmp_path / name))
        assert str(error.value) == f"{tmp_path / name}: {message}"
    Image.new("L", (28, 28), 200).save(tmp_path / "fine.png")  # a picture still opens
    assert mnistkit.pictures.load_picture(str(tmp_path / "fine.png")).size == (28, 28)


# ---------------------------------------------------------------- Ctrl-C while a cluster task waits for its session

WAITING_TASK = """
import signal, sys, time
sys.path.insert(0, {root!r})
import mnistkit.distributed
signal.signal(signal.SIGINT, lambda signum, frame: None)  # as if the handler never got to run: TensorFlow's C++ wait
with mnistkit.distributed.ends_on_signal("worker 0: stopped while waiting for the parameter servers; nothing saved"):
    print("waiting", flush=True)
    time.sleep(3600)
print("not stopped", flush=True)
"""


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_a_stop_signal_ends_a_task_waiting_for_its_session_at_once(tmp_path):
    """A chief whose session creation waits for absent parameter servers ran on to its time-out after Ctrl-C."""
    import subprocess
    import sys
    task = subprocess.Popen([sys.executable, "-c", WAITING_TASK.format(root=ROOT)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert read_line(task, "waiting") == "waiting\n"
    task.send_signal(signal.SIGINT)
    out, err = ended(task, "the task after SIGINT (it waits an hour unless the signal ends it)", 60)
    assert (task.returncode, out, err) == (
        130, "", "SIGINT: worker 0: stopped while waiting for the parameter servers; nothing saved\n")


def test_the_signal_watch_leaves_the_process_as_it_found_it():
    before = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(before)
    with mnistkit.distributed.ends_on_signal("never said"):
        pass
    assert signal.set_wakeup_fd(before) == before


@pytest.mark.skipif(os.name == "nt", reason="the POSIX shell's quoting")
def test_the_gunzip_command_for_a_compressed_tfrecord_file_keeps_a_path_with_a_space_whole(tmp_path):
    folder = tmp_path / "新用户 试用4"
    folder.mkdir()
    path = folder / "mnist_train.tfrecords"
    path.write_bytes(gzip.compress(tfrecord_bytes() * 3))
    with pytest.raises(DataError) as error:
        mnistkit.records.scan_tfrecord(str(path))
    gunzip = str(error.value).split("`")[1]
    assert shlex.split(gunzip) == ["gzip", "-dc", str(path), ">", "plain.tfrecords"], gunzip

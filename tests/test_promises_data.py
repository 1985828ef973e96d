"""README's data promises, run as a user runs them: the course's own JPG layout picked up by a plain
`python mnist_generateds.py`, the `make demo` fallback to the bundled sample when the download fails,
and the generator's IDX and flag messages of the Troubleshooting table, with nothing left written."""
import gzip
import os
import socket
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, run_script, tree_digests, wait_limit
from tf_compat import tf
import mnistkit.errors
import mnistkit.idx

# The course's layout, as README "Data" names it (relative to the folder the generator runs in).
COURSE_SPLITS = {"train": ("mnist_train_jpg_60000", "mnist_train_jpg_60000.txt"),
                 "test": ("mnist_test_jpg_10000", "mnist_test_jpg_10000.txt")}
COURSE_COUNTS = {"train": 300, "test": 100}  # unequal, so two swapped splits cannot pass
# The course's JPGs are lossy: saved here at Pillow's default quality (75). Measured on the first 300
# bundled digits of each split: per-image mean |JPG - source| at most 3.7, largest single pixel 49;
# two neighbouring different digits differ by a mean of 11 or more. So a record within these bounds
# holds its own image, not another.
JPEG_MEAN_TOLERANCE = 6.0
JPEG_MAX_TOLERANCE = 64
RUN_TIMEOUT = 300  # seconds: a hang fails the test instead of blocking the suite


def read_records(path):
    """Every record of a TFRecord file as (pixels uint8 [28, 28], label list of 10 ints), in file order."""
    records = []
    for serialized in tf.io.tf_record_iterator(str(path)):
        feature = tf.train.Example.FromString(serialized).features.feature
        assert sorted(feature) == ["img_raw", "label"]
        pixels = np.frombuffer(feature["img_raw"].bytes_list.value[0], np.uint8)
        assert pixels.size == 784
        records.append((pixels.reshape(28, 28), list(feature["label"].int64_list.value)))
    return records


def write_course_split(jpg_dir, split, images, labels):
    """The course's files for one split: `<i>_<digit>.jpg` in its folder and lines `<file> <digit>`."""
    folder, label_file = COURSE_SPLITS[split]
    (jpg_dir / folder).mkdir(parents=True)
    lines = []
    for i, (pixels, digit) in enumerate(zip(images, labels)):
        name = f"{i}_{digit}.jpg"
        Image.fromarray(pixels, mode="L").save(jpg_dir / folder / name)  # Pillow's default JPEG quality
        lines.append(f"{name} {digit}\n")
    (jpg_dir / label_file).write_text("".join(lines))


def write_course_layout(jpg_dir):
    """The course layout with COURSE_COUNTS bundled digits; returns {split: (images, labels)} written."""
    written = {}
    for split, count in COURSE_COUNTS.items():
        images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, split)
        written[split] = images[:count], labels[:count]
        write_course_split(jpg_dir, split, *written[split])
    return written


def write_idx(path, magic, dims, payload):
    """A gzip IDX file: big-endian magic, dimensions, then the payload bytes."""
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(f">{1 + len(dims)}I", magic, *dims) + payload)


def write_idx_dir(folder, counts=(40, 20)):
    """The four standard IDX files of the first `counts` (train, test) bundled digits; returns folder."""
    folder.mkdir()
    for split, count in zip(("train", "test"), counts):
        images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, split)
        image_name, label_name = mnistkit.idx.IDX_FILES[split]
        write_idx(folder / image_name, mnistkit.idx.IMAGE_MAGIC, (count, 28, 28), images[:count].tobytes())
        write_idx(folder / label_name, mnistkit.idx.LABEL_MAGIC, (count,), labels[:count].tobytes())
    return folder


# ---------------------------------------------------------------- the course's own layout

@pytest.mark.parametrize("missing", ["mnist_train_jpg_60000.txt", "mnist_test_jpg_10000/"])
def test_a_course_layout_with_a_part_missing_is_named_for_what_it_lacks(tmp_path, missing):
    jpg_dir = tmp_path / "mnist_data_jpg"
    write_course_layout(jpg_dir)
    gone = jpg_dir / missing.rstrip("/")
    shutil.rmtree(gone) if gone.is_dir() else gone.unlink()
    before = tree_digests(tmp_path)
    result = run_script("mnist_generateds.py", cwd=tmp_path, timeout=RUN_TIMEOUT)
    assert result.returncode == 1
    assert result.stderr == (f"error: ./mnist_data_jpg: the course's JPG layout is incomplete: {missing} is missing "
                             "(it needs mnist_train_jpg_60000/, mnist_test_jpg_10000/, mnist_train_jpg_60000.txt, "
                             "mnist_test_jpg_10000.txt); put it back from the course's files, or give your own images "
                             "with --train-images, --train-labels, --test-images and --test-labels\n")
    assert tree_digests(tmp_path) == before  # nothing built over the user's files, no data/ written


def test_a_plain_run_uses_the_courses_layout(tmp_path):
    jpg_dir = tmp_path / "mnist_data_jpg"
    written = write_course_layout(jpg_dir)
    before = tree_digests(jpg_dir)
    result = run_script("mnist_generateds.py", cwd=tmp_path, timeout=RUN_TIMEOUT)  # no flags at all
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    # README "Data": the source line, then the record counts; nothing downloaded, built or converted.
    assert result.stdout.splitlines() == [
        "source: the course's JPG files in ./mnist_data_jpg",
        "wrote 300 train records to ./data/mnist_train.tfrecords",
        "wrote 100 test records to ./data/mnist_test.tfrecords",
        "write tfrecord successful"]
    assert tree_digests(jpg_dir) == before  # used as they are: no SOURCE.txt, no idx/, nothing rebuilt
    assert sorted(os.listdir(tmp_path / "data")) == ["mnist_test.tfrecords", "mnist_train.tfrecords"]
    for split, (images, labels) in written.items():
        folder, label_file = COURSE_SPLITS[split]
        lines = (jpg_dir / label_file).read_text().splitlines()
        records = read_records(tmp_path / "data" / f"mnist_{split}.tfrecords")
        assert len(records) == len(lines) == COURSE_COUNTS[split]
        for line, source, digit, (pixels, label) in zip(lines, images, labels, records):  # label-file order
            name = line.split()[0]
            assert np.array_equal(pixels, np.asarray(Image.open(jpg_dir / folder / name))), name
            error = np.abs(pixels.astype(int) - source)
            assert error.mean() <= JPEG_MEAN_TOLERANCE and error.max() <= JPEG_MAX_TOLERANCE, name
            assert label == [int(d == digit) for d in range(10)], name


@pytest.mark.long
def test_an_earlier_build_with_its_source_txt_is_reused_over_course_folders(tmp_path):
    """README: a mnist_data_jpg an earlier run built (with SOURCE.txt) is reused, not the course's folders."""
    idx = write_idx_dir(tmp_path / "idx")
    work = tmp_path / "work"
    work.mkdir()
    first = run_script("mnist_generateds.py", "--idx-dir", str(idx), cwd=work, timeout=RUN_TIMEOUT)
    assert first.returncode == 0, first.stderr
    write_course_layout(work / "mnist_data_jpg")
    second = run_script("mnist_generateds.py", cwd=work, timeout=RUN_TIMEOUT)
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[:3] == [
        f"source: IDX files in {idx}",
        "wrote 40 train records to ./data/mnist_train.tfrecords",
        "wrote 20 test records to ./data/mnist_test.tfrecords"]


# ---------------------------------------------------------------- make demo: the download fails

@pytest.fixture
def refused_mirrors():
    """Two loopback URLs whose ports are bound but not listening: a connection is refused at once.

    The sockets stay bound for the test, so no other process can take the ports.
    """
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(2)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        yield tuple(f"http://127.0.0.1:{s.getsockname()[1]}/" for s in sockets)
    finally:
        for s in sockets:
            s.close()


@pytest.mark.long
def test_make_demo_falls_back_to_the_bundled_sample_when_the_download_fails(tmp_path, refused_mirrors,
                                                                           sample_workdir):
    # `make demo` runs a plain `python mnist_generateds.py`; here its main(), with mnistkit.idx.MIRRORS
    # pointed at the refused ports (the documented seam), so no network is needed or touched.
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import mnistkit.idx, mnist_generateds; "
            "mnistkit.idx.MIRRORS = tuple(sys.argv[2:]); sys.exit(mnist_generateds.main([]))")
    result = subprocess.run([sys.executable, "-c", code, ROOT, *refused_mirrors], cwd=tmp_path,
                            capture_output=True, text=True, timeout=wait_limit(RUN_TIMEOUT))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "downloading the official MNIST into ./mnist_data_jpg/idx ..."
    # README Troubleshooting: "download of URL failed: ..." (not an error), each mirror once, then the sample.
    first_file = next(iter(mnistkit.idx.MNIST_SHA256))
    for line, mirror in zip(lines[1:3], refused_mirrors):
        assert line.startswith(f"download of {mirror}{first_file} failed: ") and "refused" in line, line
    assert lines[3:] == [
        "no download possible; using the MNIST sample bundled with this repository",
        "writing 8000 train images as JPG files ...",
        "writing 2000 test images as JPG files ...",
        f"source: MNIST sample bundled in {mnistkit.idx.BUNDLED_DIR}",
        "wrote 8000 train records to ./data/mnist_train.tfrecords",
        "wrote 2000 test records to ./data/mnist_test.tfrecords",
        "write tfrecord successful"]
    # The same layout (no idx/ left behind) and the same records, byte for byte, as --no-download's.
    assert sorted(os.listdir(tmp_path / "mnist_data_jpg")) == sorted(os.listdir(sample_workdir / "mnist_data_jpg"))
    assert tree_digests(tmp_path / "data") == tree_digests(sample_workdir / "data")
    assert len(tree_digests(tmp_path / "data")) == 2


# ---------------------------------------------------------------- Troubleshooting: flags and IDX files

@pytest.mark.parametrize("given,missing", [
    (["--train-images"], "--train-labels, --test-images, --test-labels"),
    (["--train-images", "--train-labels", "--test-images"], "--test-labels"),
    (["--test-labels"], "--train-images, --train-labels, --test-images"),
])
def test_some_explicit_paths_ask_for_all_four(tmp_path, given, missing):
    args = [arg for flag in given for arg in (flag, str(tmp_path / "elsewhere"))]
    result = run_script("mnist_generateds.py", *args, cwd=tmp_path, timeout=RUN_TIMEOUT)
    assert result.returncode == 1
    assert result.stderr == ("error: give all four of --train-images, --train-labels, --test-images and "
                             f"--test-labels (missing: {missing})\n")
    assert result.stdout == ""
    assert os.listdir(tmp_path) == []  # no data/, no mnist_data_jpg/


NOT_IDX = b"this is a label file, not IDX"


def break_not_idx_short(idx):
    path = idx / mnistkit.idx.IDX_FILES["test"][0]
    with gzip.open(path, "wb") as f:
        f.write(b"IDX")
    return path, "not an IDX file (only 3 bytes)"


def break_not_idx_magic(idx):
    path = idx / mnistkit.idx.IDX_FILES["train"][1]
    with gzip.open(path, "wb") as f:
        f.write(NOT_IDX)
    magic = struct.unpack(">I", NOT_IDX[:4])[0]
    return path, f"not an IDX file (magic number {magic}, expected 2051 or 2049)"


def break_truncated(split):
    def breaker(idx):
        path = idx / mnistkit.idx.IDX_FILES[split][0]
        count = {"train": 40, "test": 20}[split]
        images = mnistkit.idx.read_idx(str(path))
        write_idx(path, mnistkit.idx.IMAGE_MAGIC, (count, 28, 28), images.tobytes()[:-1])  # one byte short
        return path, f"truncated IDX file ({count * 784 - 1} of {count * 784} data bytes)"
    return breaker


def break_counts(idx):
    path = idx / mnistkit.idx.IDX_FILES["test"][1]
    labels = mnistkit.idx.read_idx(str(path))
    write_idx(path, mnistkit.idx.LABEL_MAGIC, (19,), labels[:19].tobytes())
    return idx, "20 images in t10k-images-idx3-ubyte.gz but 19 labels in t10k-labels-idx1-ubyte.gz"


IDX_BREAKAGES = {"not-idx-short": break_not_idx_short, "not-idx-magic": break_not_idx_magic,
                 "truncated-train": break_truncated("train"), "truncated-test": break_truncated("test"),
                 "counts": break_counts}


@pytest.mark.parametrize("breakage", IDX_BREAKAGES)
def test_a_broken_idx_file_is_one_line_and_nothing_is_written(tmp_path, breakage):
    idx = write_idx_dir(tmp_path / "idx")
    named, what = IDX_BREAKAGES[breakage](idx)
    work = tmp_path / "work"
    work.mkdir()
    result = run_script("mnist_generateds.py", "--idx-dir", str(idx), cwd=work, timeout=RUN_TIMEOUT)
    assert result.returncode == 1
    assert result.stderr == f"error: {named}: {what}\n"
    assert result.stdout == ""  # every file is checked before a JPG is written
    assert sorted(os.listdir(work)) == []  # no mnist_data_jpg/ (no JPG folder, SOURCE.txt or temporary), no data/


@pytest.mark.long
def test_a_broken_idx_dir_leaves_an_earlier_layout_and_records_as_they_were(tmp_path):
    good = write_idx_dir(tmp_path / "good")
    work = tmp_path / "work"
    work.mkdir()
    first = run_script("mnist_generateds.py", "--idx-dir", str(good), cwd=work, timeout=RUN_TIMEOUT)
    assert first.returncode == 0, first.stderr
    before = tree_digests(work)
    assert "mnist_data_jpg/SOURCE.txt" in before and "data/mnist_train.tfrecords" in before
    bad = write_idx_dir(tmp_path / "bad", counts=(60, 20))
    named, what = break_counts(bad)
    result = run_script("mnist_generateds.py", "--idx-dir", str(bad), cwd=work, timeout=RUN_TIMEOUT)
    assert result.returncode == 1
    assert result.stderr == f"error: {named}: {what}\n"
    assert tree_digests(work) == before


@pytest.mark.quick
@pytest.mark.parametrize("kind", ["missing", "file"])
def test_an_idx_dir_that_is_no_folder_is_said_of_the_folder_before_anything_is_written(kind, tmp_path):
    idx_dir = tmp_path / "idx"
    if kind == "file":
        idx_dir.write_bytes(b"not a folder")
    jpg_dir = tmp_path / "mnist_data_jpg"
    with pytest.raises(mnistkit.errors.DataError) as raised:
        mnistkit.idx.build_jpg_layout(str(jpg_dir), str(idx_dir), download=False, log=lambda line: None)
    what = "not a folder" if kind == "file" else "no such folder"
    assert str(raised.value) == (f"{idx_dir}: {what}; --idx-dir takes the folder holding the four MNIST IDX files "
                                 "(train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, "
                                 "t10k-labels-idx1-ubyte.gz)")
    assert sorted(os.listdir(tmp_path)) == (["idx"] if kind == "file" else [])

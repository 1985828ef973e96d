"""Data that is silently wrong is an error.

Truncated TFRecord files in every script that reads them, 16-bit images, blank
records, the app on pictures without a digit, TensorFlow errors quoted
cleanly, and a failed generator run that leaves nothing behind.
"""
import io
import os
import shutil

import numpy as np
import pytest
from PIL import Image

from conftest import run_main, tree_digests
import handmade
from test_errors import error_line, good_record, make_layout, paper_digit, records, write_records
import mnist_app
import mnist_backward
import mnist_generateds
import mnist_test
import tf_compat
from mnistkit.errors import DataError
from tf_compat import tf
import mnistkit.cli
import mnistkit.images
import mnistkit.writer
import mnistkit.pictures
import mnistkit.records

CUT_SHORT = "is cut short (file truncated?): {left} byte(s) after the last whole record; " \
            "copy the file again or rerun `{generate}`"


def cut(path, where, data_dir=None):
    """Cut a TFRecord file whose records all have one length; returns the message's tail after the file name.

    where: "half+7" (half its size plus 7 bytes, an interrupted copy),
    "header" (5 bytes into a record's 12-byte header) or "data" (100 bytes
    into a record's data). data_dir: the --data-dir the hint keeps (default: the file's folder, as given).
    """
    count, lengths, _ = mnistkit.records.scan_tfrecord(str(path))
    assert len(lengths) == 1
    frame = lengths[0] + mnistkit.records.RECORD_FRAME_BYTES
    size = os.path.getsize(path)
    at = {"half+7": size // 2 + 7, "header": (count // 3) * frame + 5, "data": (count // 3) * frame + 12 + 100}[where]
    record, left = divmod(at, frame)
    assert left, "a cut between two records would leave a valid file"
    with open(path, "r+b") as f:
        f.truncate(at)
    generate = mnistkit.records.generate_command(data_dir or os.path.dirname(str(path)))
    return f"record {record} at byte {record * frame} " + CUT_SHORT.format(left=left, generate=generate)


CUTS = ["half+7", "header", "data"]


# ---------------------------------------------------------------- truncated TFRecord files

@pytest.mark.parametrize("where", CUTS)
def test_scan_tfrecord_finds_every_cut(tmp_path, where):
    path = tmp_path / "mnist_train.tfrecords"
    write_records(path, [good_record(d % 10) for d in range(10)])
    expected = cut(path, where)
    with pytest.raises(DataError) as error:
        mnistkit.records.scan_tfrecord(str(path))
    assert str(error.value) == f"{path}: {expected}"


@pytest.fixture
def work(sample_workdir, trained_workdir, tmp_path):
    """tmp_path with a copy of the sample's data/ and of the trained model/; returns tmp_path."""
    shutil.copytree(sample_workdir / "data", tmp_path / "data")
    shutil.copytree(trained_workdir / "model", tmp_path / "model")
    return tmp_path


@pytest.mark.parametrize("where", CUTS)
def test_trainer_refuses_a_cut_training_file_and_leaves_the_model_alone(work, capsys, where):
    path = work / "data" / "mnist_train.tfrecords"
    expected = cut(path, where)
    model = tree_digests(work / "model")
    assert mnist_backward.main(["--steps", "2100", "--data-dir", str(work / "data"),
                                "--model-dir", str(work / "model")]) == 1
    assert error_line(capsys) == f"error: {path}: {expected}"
    assert tree_digests(work / "model") == model


def test_trainer_command_refuses_half_a_file(work):
    """The case as a user runs it: the trainer said `training on 4000 records` and trained."""
    expected = cut(work / "data" / "mnist_train.tfrecords", "half+7", data_dir="./data")
    model = tree_digests(work / "model")
    result = run_main("mnist_backward.py", "--steps", "2100", cwd=work)
    assert result.returncode == 1
    # The hint names the generator as it runs from `work`, not from this process's folder.
    expected = expected.replace(mnistkit.cli.command("mnist_generateds.py"),
                                f"python {mnistkit.cli.script_path('mnist_generateds.py', str(work))}")
    assert result.stderr == f"error: ./data/mnist_train.tfrecords: {expected}\n"
    assert result.stdout == ""
    assert tree_digests(work / "model") == model


def split_into_shards(data, num_shards):
    """Replace data/mnist_train.tfrecords by num_shards shards, round-robin as the generator writes them."""
    single = data / "mnist_train.tfrecords"
    serialized = list(tf.io.tf_record_iterator(str(single)))
    shards = mnistkit.records.output_files(str(single), num_shards)
    for i, shard in enumerate(shards):
        write_records(shard, serialized[i::num_shards])
    os.remove(single)
    return shards


@pytest.mark.parametrize("where", CUTS)
def test_trainer_refuses_a_cut_shard(work, capsys, where):
    shards = split_into_shards(work / "data", 4)
    expected = cut(shards[2], where)
    model = tree_digests(work / "model")
    assert mnist_backward.main(["--steps", "2100", "--data-dir", str(work / "data"),
                                "--model-dir", str(work / "model")]) == 1
    assert error_line(capsys) == f"error: {shards[2]}: {expected}"
    assert tree_digests(work / "model") == model


@pytest.mark.parametrize("where", CUTS)
def test_distributed_worker_refuses_a_cut_shard_before_joining_the_cluster(work, capsys, where):
    """The distributed trainer checks the data with the same function, before starting its server."""
    shards = split_into_shards(work / "data", 2)
    expected = cut(shards[1], where)
    model = tree_digests(work / "model")
    assert mnist_backward.main(["--steps", "2100", "--data-dir", str(work / "data"), "--model-dir", str(work / "model"),
                                "--job_name", "worker", "--task_index", "0", "--ps_hosts", "localhost:1",
                                "--worker_hosts", "localhost:2,localhost:3"]) == 1
    assert error_line(capsys) == f"error: {shards[1]}: {expected}"  # worker 0 checks every shard, not only its own
    assert tree_digests(work / "model") == model


@pytest.mark.parametrize("where", CUTS)
def test_evaluation_refuses_a_cut_test_file(work, capsys, where):
    path = work / "data" / "mnist_test.tfrecords"
    expected = cut(path, where)
    model = tree_digests(work / "model")
    assert mnist_test.main(["--once", "--data-dir", str(work / "data"), "--model-dir", str(work / "model")]) == 1
    assert error_line(capsys) == f"error: {path}: {expected}"
    assert tree_digests(work / "model") == model


# ---------------------------------------------------------------- TensorFlow's errors quoted cleanly

def test_first_line_leaves_out_tensorflows_stray_quote_and_keeps_real_quotes():
    truncated = tf.errors.DataLossError(None, None, "truncated record at 999273' failed with Read less bytes than requested")
    assert tf_compat.first_line(truncated) == "truncated record at 999273 failed with Read less bytes than requested"
    assert tf_compat.balance_quotes("Key: 'img_raw' can't be parsed") == "Key: 'img_raw' can't be parsed"
    assert tf_compat.balance_quotes("Op type not registered 'Foo' in binary running on host's CPU") == \
        "Op type not registered 'Foo' in binary running on host's CPU"
    assert tf_compat.balance_quotes("unclosed 'quote here") == "unclosed quote here"


def damaged(path, where):
    """Damage one byte of record 3 of a 10-record file: "length" (its header) or "data" (inside its data)."""
    write_records(path, [good_record(d) for d in range(10)])
    frame = len(good_record()) + mnistkit.records.RECORD_FRAME_BYTES
    data = bytearray(path.read_bytes())
    data[3 * frame + (2 if where == "length" else 12 + 100)] ^= 0xFF
    path.write_bytes(bytes(data))
    return 3 * frame + (0 if where == "length" else 12)  # TensorFlow names the offset of the failing read


@pytest.mark.parametrize("where", ["length", "data"])
def test_crc_mismatch_in_a_record_is_corrupted_not_cut_short(tmp_path, where):
    path = tmp_path / "mnist_train.tfrecords"
    offset = damaged(path, where)
    with pytest.raises(DataError) as error:
        mnistkit.records.scan_tfrecord(str(path))
    assert str(error.value) == (f"{path}: record 3: corrupted or not a TFRecord file (corrupted record at {offset}); "
                                f"rerun `{mnistkit.records.generate_command(str(tmp_path))}`")


@pytest.mark.parametrize("where", ["data", "crc"])
def test_the_trainers_reader_threads_are_quoted_without_a_stray_quote(tmp_path, monkeypatch, where):
    """Past the whole-file check (here bypassed), the queue runner's own error is quoted cleanly."""
    data = tmp_path / "data"
    data.mkdir()
    path = data / "mnist_train.tfrecords"
    frame = len(good_record()) + mnistkit.records.RECORD_FRAME_BYTES
    if where == "data":
        write_records(path, [good_record(d) for d in range(10)])
        with open(path, "r+b") as f:
            f.truncate(3 * frame + 112)
        cause = f"truncated record at {3 * frame} failed with Read less bytes than requested"
    else:
        cause = f"corrupted record at {damaged(path, 'data')}"
    # Two record lengths: the fast pipeline falls back to TFRecordReader, which checks CRCs and frames.
    monkeypatch.setattr(mnistkit.records, "scan_tfrecord", lambda p: (10, (frame - 17, frame - 16), False))
    with tf.Graph().as_default(), pytest.raises(DataError) as error:
        mnist_backward.backward(steps=5, batch_size=4, data_dir=str(data), model_dir=str(tmp_path / "model"),
                                log=lambda m: None)
    assert str(error.value) == f"{path}: input pipeline failed: {cause}"


# ---------------------------------------------------------------- 16-bit images

DEPTHS = {"8-bit values": 255, "12-bit values": 4095, "16-bit values": 65535}


def widen(gray, top):
    """uint8 pixels -> uint16 pixels spanning 0..top, as a 16-bit file of that depth holds them."""
    return np.round(gray.astype(np.float64) * top / 255).astype(np.uint16)


def test_to_8bit_infers_the_depth_from_the_brightest_pixel():
    ramp = np.arange(256, dtype=np.uint8).reshape(16, 16)
    for top in DEPTHS.values():
        img = Image.fromarray(widen(ramp, top))
        assert img.mode.startswith("I;16")
        out = mnistkit.images.to_8bit(img)
        assert out.mode == "L" and np.array_equal(np.asarray(out), ramp), top
    # 32-bit mode "I": clipped to 0..65535 first, then the same rule.
    signed = Image.fromarray(np.array([[-5, 0, 1000, 70000]], np.int32))
    assert signed.mode == "I"
    assert np.asarray(mnistkit.images.to_8bit(signed)).tolist() == [[0, 0, 4, 255]]
    assert np.asarray(mnistkit.images.to_8bit(Image.fromarray(np.array([[0, 4095, 4096]], np.uint16)))).tolist() == \
        [[0, 16, 16]]
    rgb = Image.new("RGB", (2, 2))
    assert mnistkit.images.to_8bit(rgb) is rgb


@pytest.mark.parametrize("depth", DEPTHS)
def test_generator_keeps_the_content_of_16bit_images(tmp_path, capsys, depth):
    image_dir, label_file, _ = make_layout(tmp_path)
    names = [line.split()[0] for line in label_file.read_text().splitlines()]
    expected = []
    for name in names:
        gray = np.asarray(Image.open(image_dir / name))
        Image.fromarray(widen(gray, DEPTHS[depth])).save(image_dir / "x.png")
        os.replace(image_dir / "x.png", image_dir / name)  # a 16-bit PNG under the .jpg name
        expected.append(gray.tobytes())
    out = tmp_path / "out"
    test = make_layout(tmp_path / "t", 5, "test")[:2]
    assert mnist_generateds.main(["--train-images", str(image_dir), "--train-labels", str(label_file),
                                  "--test-images", str(test[0]), "--test-labels", str(test[1]),
                                  "--data-dir", str(out)]) == 0
    assert f"warning: {len(names)} images were not 8-bit grayscale" in capsys.readouterr().out
    written = [r.features.feature["img_raw"].bytes_list.value[0] for r in records(out / "mnist_train.tfrecords")]
    assert written == expected


@pytest.mark.parametrize("depth", DEPTHS)
def test_app_keeps_the_content_of_16bit_pictures(tmp_path, depth):
    img, _ = paper_digit()
    img.save(tmp_path / "eight.png")
    Image.fromarray(widen(np.asarray(img), DEPTHS[depth])).save(tmp_path / "deep.png")
    assert Image.open(tmp_path / "deep.png").mode.startswith("I;16")
    assert np.array_equal(np.asarray(mnistkit.pictures.load_picture(str(tmp_path / "deep.png"))), np.asarray(img))
    for preprocess in mnist_app.PREPROCESS:
        assert np.array_equal(mnist_app.prepared_pixels(str(tmp_path / "deep.png"), preprocess=preprocess),
                              mnist_app.prepared_pixels(str(tmp_path / "eight.png"), preprocess=preprocess))


# ---------------------------------------------------------------- blank records

def generate(tmp_path, train, test, *more):
    return mnist_generateds.main(["--train-images", str(train[0]), "--train-labels", str(train[1]),
                                  "--test-images", str(test[0]), "--test-labels", str(test[1]), *more])


@pytest.mark.parametrize("picture,value", [
    (lambda: Image.new("L", (28, 28), 0), 0),
    (lambda: Image.new("L", (28, 28), 255), 255),
    (lambda: Image.new("RGB", (28, 28), (200, 30, 30)), 81),  # ITU-R 601 luma, Pillow's convert("L")
    (lambda: Image.fromarray(np.full((28, 28), 40000, np.uint16)), 156),  # 40000 * 255 / 65535
], ids=["black", "white", "red", "16-bit"])
@pytest.mark.parametrize("split", ["train", "test"])
def test_a_blank_image_is_an_error_naming_the_file_and_line_and_nothing_is_written(tmp_path, capsys, picture,
                                                                                   value, split):
    train = make_layout(tmp_path, 12, "train")[:2]
    test = make_layout(tmp_path / "t", 5, "test")[:2]
    image_dir, label_file = train if split == "train" else test
    name = label_file.read_text().splitlines()[3].split()[0]
    picture().save(image_dir / "x.png")
    os.replace(image_dir / "x.png", image_dir / name)
    out = tmp_path / "new" / "data"
    assert generate(tmp_path, train, test, "--data-dir", str(out)) == 1
    assert error_line(capsys) == (f"error: {image_dir / name}: blank image, every pixel is {value} "
                                  f"(listed on {label_file}:4); replace the image or remove its line")
    assert not (tmp_path / "new").exists()  # no data folder, no temporaries


def test_a_blank_image_leaves_the_previous_data_untouched(tmp_path, capsys):
    train = make_layout(tmp_path, 12, "train")[:2]
    test = make_layout(tmp_path / "t", 5, "test")[:2]
    out = tmp_path / "data"
    assert generate(tmp_path, train, test, "--data-dir", str(out)) == 0
    before = tree_digests(out)
    name = train[1].read_text().split()[0]
    Image.new("L", (28, 28), 255).save(train[0] / name, format="JPEG")  # an empty page, as a JPEG
    capsys.readouterr()
    assert generate(tmp_path, train, test, "--data-dir", str(out)) == 1
    assert error_line(capsys) == (f"error: {train[0] / name}: blank image, every pixel is 255 "
                                  f"(listed on {train[1]}:1); replace the image or remove its line")
    assert tree_digests(out) == before


def test_a_failed_run_leaves_no_data_folder_in_the_current_folder(tmp_path, capsys, monkeypatch):
    """The default ./data, and a new nested --data-dir, are removed again when a split fails."""
    train = make_layout(tmp_path, 12, "train")[:2]
    test_dir, test_labels, _ = make_layout(tmp_path / "t", 5, "test")
    test_labels.write_text(test_labels.read_text() + "missing.jpg 3\n")
    monkeypatch.chdir(tmp_path)
    listing = sorted(os.listdir(tmp_path))
    assert generate(tmp_path, train, (test_dir, test_labels)) == 1
    assert error_line(capsys) == f"error: {test_labels}:6: image 'missing.jpg' not found in {test_dir}"
    assert sorted(os.listdir(tmp_path)) == listing and not (tmp_path / "data").exists()
    assert generate(tmp_path, train, (test_dir, test_labels), "--data-dir", "a/b/c") == 1
    capsys.readouterr()
    assert sorted(os.listdir(tmp_path)) == listing
    (tmp_path / "a").mkdir()  # a folder that was there before stays
    assert generate(tmp_path, train, (test_dir, test_labels), "--data-dir", "a/b/c") == 1
    assert os.listdir(tmp_path / "a") == []


# ---------------------------------------------------------------- the app on pictures without a digit

def blank_pictures():
    """Pictures without a digit-like stroke: {name: PIL image}, 640x480."""
    w, h = 640, 480
    rng = np.random.default_rng(0)
    x = np.linspace(0, 1, w)[None, :].repeat(h, 0)
    y = np.linspace(0, 1, h)[:, None].repeat(w, 1)
    r = np.hypot(x - 0.5, y - 0.5) / np.hypot(0.5, 0.5)
    inside = (y > 0.03) & (y < 0.97) & (x > 0.03) & (x < 0.97)

    def gray(a):
        return Image.fromarray(np.clip(np.round(a), 0, 255).astype(np.uint8))

    return {
        "black": Image.new("L", (w, h), 0),
        "white": Image.new("L", (w, h), 255),
        "grey": Image.new("L", (w, h), 128),
        "red": Image.new("RGB", (w, h), (255, 0, 0)),
        "navy": Image.new("RGB", (w, h), (10, 20, 90)),
        "yellow": Image.new("RGB", (w, h), (250, 220, 40)),
        "transparent": Image.new("RGBA", (w, h), (0, 0, 0, 0)),
        "16-bit-flat": Image.fromarray(np.full((h, w), 3000, np.uint16)),
        "gradient-left-right": gray(255 * x),
        "gradient-top-bottom": gray(230 - 200 * y),
        "gradient-diagonal": gray(60 + 150 * (x + y) / 2),
        "vignette": gray(250 - 200 * r ** 2),
        "noise-on-white": gray(245 + rng.normal(0, 5, (h, w))),
        "noise-on-grey": gray(128 + rng.normal(0, 5, (h, w))),
        "noise-on-black": gray(12 + rng.normal(0, 5, (h, w))),
        "uniform-noise-on-dark": gray(60 + rng.uniform(-12, 12, (h, w))),
        "noise-on-gradient": gray(240 - 120 * x + rng.normal(0, 4, (h, w))),
        "covered-in-ink": gray(np.where(inside, 25, 245)),
        "covered-in-ink-noisy": gray(np.where(inside, 30, 240) + rng.normal(0, 4, (h, w))),
        # A phone's photo of an empty page: shaded across, softened, sensor noise, JPEG.
        **{f"phone-{light[2]}-noise-{noise}": phone_page(light, noise) for light, noise in
           [((235, 105, "left"), 7), ((230, 110, "top"), 4), ((240, 120, "vignette"), 8), ((235, 100, "diagonal"), 10)]},
    }


def phone_page(light, noise):
    """An empty page as tests/handmade.py's phone photos show paper (light, blur 1.5, noise), through JPEG at 85."""
    page = handmade.phone_shot(np.zeros((1, 1)), (480, 640), (0, 0), light, 20, 1.5, noise, seed=noise)
    saved = io.BytesIO()
    Image.fromarray(page).save(saved, "JPEG", quality=85)
    return Image.open(io.BytesIO(saved.getvalue()))


@pytest.mark.parametrize("preprocess", mnist_app.PREPROCESS)
def test_app_finds_no_digit_on_a_page_without_one_whatever_its_colour(trained_workdir, tmp_path, preprocess):
    names = []
    for name, img in blank_pictures().items():
        img.save(tmp_path / f"{name}.png")
        names.append(f"{name}.png")
    img, digit = paper_digit()
    img.save(tmp_path / "digit.png")
    result = run_main("mnist_app.py", "--model-dir", str(trained_workdir / "model"), "--preprocess", preprocess,
                      *names, "digit.png", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert [line.split(": ")[1] for line in lines] == names
    for line in lines:
        assert line.startswith("error: ") and ": no digit found: " in line, line
        assert line.endswith("; the app expects a dark digit on lighter paper"), line
    assert "every pixel is 0;" in lines[0] and "every pixel is 255;" in lines[1]  # the black and white pages
    assert result.stdout.startswith("digit.png: The prediction number is: ")
    if preprocess == "mnist":
        assert result.stdout.startswith(f"digit.png: The prediction number is: {digit}")
    assert len(result.stdout.splitlines()) == 1


def test_a_blank_image_found_by_a_decoding_process_names_its_line(tmp_path, monkeypatch):
    """With --workers 2 the check runs in the worker processes; the first blank image in label order is named."""
    image_dir, label_file, _ = make_layout(tmp_path, 12)
    names = [line.split()[0] for line in label_file.read_text().splitlines()]
    for line in (10, 7):
        Image.new("L", (28, 28), 0).save(image_dir / "x.png")
        os.replace(image_dir / "x.png", image_dir / names[line - 1])
    monkeypatch.setattr(mnistkit.writer, "CHUNK_SIZE", 3)
    out = tmp_path / "out"
    with pytest.raises(DataError) as error:
        mnist_generateds.write_tfRecord(str(out / "x.tfrecords"), str(image_dir), str(label_file),
                                        log=lambda m: None, workers=2)
    assert str(error.value) == (f"{image_dir / names[6]}: blank image, every pixel is 0 (listed on {label_file}:7); "
                                "replace the image or remove its line")
    assert os.listdir(out) == []

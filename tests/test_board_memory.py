"""What a picture or a file under the drawing board's server costs, and what cannot kill it.

A small file can hold a huge picture (a 90 KB PNG of 6000x6000 grey+alpha pixels): pictures are refused by
their decoded size before they are decoded, and the others read at reduced size, so that preparing one
takes at most 200 MB. Peak memory is measured in a fresh process that prepares one picture, from
/proc/self/status: the peak resident size (VmHWM) after /proc/self/clear_refs has set it to the present
size. ru_maxrss is no measure here: a process started by one that already used much memory inherits that
peak across exec. Uploads are prepared from memory, with no temporary folder; the served .tflite file is
read into memory, so a file replaced or truncated under the server changes nothing.
"""
import base64
import concurrent.futures
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import types
import urllib.request

import numpy as np
import pytest
from PIL import Image, ImageChops

import handmade
import mnist_app
from conftest import ROOT, wait_limit
from mnistkit import keep, pictures, preparation
from mnistkit.board import model, page, table
from mnistkit.errors import DataError
from test_board import Server, drawn, png_bytes, request

MAX_GROWTH = 200 * 10 ** 6  # bytes of peak memory one picture may add
MEASURE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import mnist_app
from mnistkit.errors import DataError

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))

path = sys.argv[2]
mnist_app.prepared_pixels(sys.argv[3])  # a small picture first: every module the preparation uses is loaded
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak resident size (VmHWM) is now the present one
before = status("VmRSS")
try:
    answer = {"pixels": mnist_app.prepared_pixels(path).tolist()}
except DataError as e:
    answer = {"error": str(e)}
answer["growth"] = status("VmHWM") - before
print(json.dumps(answer))
"""


def measured(path, small):
    """{"pixels": 28x28 list or "error": message, "growth": bytes} of prepared_pixels(path) in a fresh process."""
    result = subprocess.run([sys.executable, "-c", MEASURE, ROOT, str(path), str(small)],
                            capture_output=True, text=True, timeout=wait_limit(600))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def digit_coverage(side):
    """A hand-drawn 3 (tests/handmade.py): uint8 [side, side], 255 where the pen went."""
    return np.round(255 * handmade.draw_digit(3, side, 0.06, seed=3)).astype(np.uint8)


def save_la(path, side):
    """White strokes in the alpha channel of a grey+alpha PNG side x side (a drawing app's export)."""
    alpha = np.zeros((side, side), np.uint8)
    third = side // 3
    alpha[third:2 * third, third:2 * third] = digit_coverage(third)
    Image.fromarray(np.dstack([np.full_like(alpha, 255), alpha]), "LA").save(path)


def save_bits(path, side):
    """A black 3 on white, 1 bit a pixel, side x side."""
    bits = np.ones((side, side), bool)
    third = side // 3
    bits[third:2 * third, third:2 * third] = digit_coverage(third) < 128
    Image.fromarray(bits).save(path)


def photo(size, noise):
    """A photo of a dark 3 on paper lit from the left, with sensor noise: "L" PIL image of size (w, h)."""
    w, h = size
    small = np.linspace(235, 150, 400, dtype=np.float32)[None, :] * np.ones((300, 1), np.float32)
    small[60:240, 110:290] -= digit_coverage(180) * (150 / 255)
    gray = Image.fromarray(np.clip(small, 0, 255).astype(np.uint8)).resize((w, h), Image.Resampling.BILINEAR)
    return ImageChops.add(gray, Image.effect_noise((w, h), noise), 1.0, -128)


def save_jpeg(path, size):
    """A photo-like RGB JPEG (a phone's): the 3 of photo(), slightly yellow paper, quality 90."""
    gray = photo(size, 6)
    Image.merge("RGB", (gray, gray, gray.point(lambda v: max(v - 12, 0)))).save(path, quality=90)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A small picture of a digit: the measuring process prepares it first, so its imports are not counted."""
    path = tmp_path_factory.mktemp("small") / "small.png"
    Image.fromarray(drawn(3)).save(path)
    return path


LARGE = {  # name: (how it is made, its side, refused or read)
    "grey+alpha PNG 6000x6000": (save_la, 6000, "refused"),
    "1-bit PNG 13000x13000": (save_bits, 13000, "refused"),
    "grey+alpha PNG 3600x3600": (save_la, 3600, "read"),
    "1-bit PNG 8900x8900": (save_bits, 8900, "read"),
}


@pytest.mark.long
@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="peak memory is read from Linux's /proc")
@pytest.mark.parametrize("kind", list(LARGE))
def test_a_small_file_of_a_huge_picture_is_refused_or_read_in_200_mb(kind, tmp_path, small, summary_line):
    make, side, outcome = LARGE[kind]
    path = tmp_path / "picture.png"
    make(path, side)
    assert path.stat().st_size < 200_000  # a small file
    answer = measured(path, small)
    summary_line(f"peak memory of one picture, {kind} ({path.stat().st_size:,} bytes): "
                 f"+{answer['growth'] / 1e6:.0f} MB")
    assert answer["growth"] < MAX_GROWTH, answer["growth"]
    if outcome == "refused":
        assert answer["error"].startswith(f"{path}: picture of {side}x{side} pixels") and "\n" not in answer["error"]
        assert f"over this app's limit of {pictures.MAX_READ_BYTES // 10 ** 6} MB" in answer["error"]
    else:  # the same 3 as the picture at 1/4 of the size gives
        make(tmp_path / "quarter.png", side // 4)
        quarter = mnist_app.prepared_pixels(str(tmp_path / "quarter.png"))
        assert np.abs(np.array(answer["pixels"]) - quarter.astype(int)).mean() < 8


@pytest.mark.long
@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="peak memory is read from Linux's /proc")
def test_a_large_phone_jpeg_is_read_at_reduced_size_in_200_mb(tmp_path, small, summary_line):
    path = tmp_path / "photo.jpg"
    save_jpeg(path, (6000, 4000))
    answer = measured(path, small)
    summary_line(f"peak memory of one picture, RGB JPEG 6000x4000 ({path.stat().st_size:,} bytes): "
                 f"+{answer['growth'] / 1e6:.0f} MB")
    assert answer["growth"] < MAX_GROWTH, answer["growth"]
    save_jpeg(tmp_path / "quarter.jpg", (1500, 1000))
    quarter = mnist_app.prepared_pixels(str(tmp_path / "quarter.jpg"))
    assert quarter.max() == 255 and np.abs(np.array(answer["pixels"]) - quarter.astype(int)).mean() < 8


@pytest.mark.parametrize("size, read", [((6000, 5400), (2048, 1843)), ((8192, 4608), (2048, 1152))],
                         ids=["halved", "quartered"])
def test_a_large_jpeg_is_decoded_reduced_by_the_largest_factor_that_keeps_max_side(tmp_path, size, read):
    """pictures.read_reduced's draft: a JPEG whose whole decoding is over the limit is decoded at 1/2 or 1/4 (as
    libjpeg scales its DCT), never smaller than MAX_SIDE, and reads as the picture reduced from its whole."""
    path = tmp_path / "photo.jpg"
    small = Image.fromarray(np.round(255 * (1 - handmade.draw_digit(3, 600, 0.06, seed=3))).astype(np.uint8))
    small.resize(size, Image.Resampling.BILINEAR).convert("RGB").save(path, quality=90)
    with Image.open(path) as img:
        assert pictures.read_bytes(img) > pictures.MAX_READ_BYTES  # decoded whole, it would be refused
        whole = img.convert("L")
    whole.thumbnail((pictures.MAX_SIDE, pictures.MAX_SIDE), Image.Resampling.BOX)
    loaded = pictures.load_picture(str(path))
    assert (loaded.mode, loaded.size) == ("L", read) == ("L", whole.size)
    assert np.abs(np.asarray(loaded, dtype=int) - np.asarray(whole, dtype=int)).mean() < 2


def test_a_picture_is_prepared_from_bytes_or_a_file_object_named_as_given(tmp_path):
    path = tmp_path / "three.png"
    path.write_bytes(png_bytes(drawn(3)))
    expected = mnist_app.prepared_pixels(str(path))
    for given in (path.read_bytes(), io.BytesIO(path.read_bytes())):
        np.testing.assert_array_equal(mnist_app.prepared_pixels(given, name="three.png"), expected)
    refusals = {b"just some text": "photo.jpg: not an image file",
                png_bytes(np.full((50, 50), 255, np.uint8)): "photo.jpg: no digit found: every pixel is 255",
                png_bytes(drawn(3))[:300]: "photo.jpg: cannot read image"}
    for data, message in refusals.items():
        with pytest.raises(DataError) as refused:
            mnist_app.prepared_pixels(data, name="photo.jpg")
        assert str(refused.value).startswith(message), str(refused.value)
    with pytest.raises(DataError, match=r"^picture: not an image file$"):
        pictures.load_picture(b"just some text")


def fake_model(prepare):
    """A model.Model around `prepare` and a predictor that answers 1/10 for every digit."""
    network = types.SimpleNamespace(export_name="mnist", label="784-500-10")
    predictor = types.SimpleNamespace(network=network, source="model/mnist_model-1",
                                      predict=lambda rows: np.full((len(rows), 10), 0.1, np.float32))
    return model.Model(predictor, prepare)


def test_the_board_prepares_at_most_two_pictures_at_once():
    lock, active, most, go = threading.Lock(), [0], [0], threading.Event()

    def prepare(data, name):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        go.wait(wait_limit(60))
        with lock:
            active[0] -= 1
        return np.zeros((28, 28), np.uint8)

    answering = fake_model(prepare)
    threads = [threading.Thread(target=page.read_picture, args=(answering, b"", "p")) for _ in range(6)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + wait_limit(60)
    while most[0] < model.PREPARED_AT_ONCE and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # the others had time to start preparing, were they let
    go.set()
    for thread in threads:
        thread.join(wait_limit(60))
    assert most[0] == model.PREPARED_AT_ONCE == 2


def phone_png():
    """A phone's photo saved as PNG: 4096x2160, with sensor noise, about 13 MB (over the 8 MiB limit of before)."""
    gray = photo((4096, 2160), 18)
    out = io.BytesIO()
    Image.merge("RGB", (gray, gray, gray.point(lambda v: max(v - 12, 0)))).save(out, format="PNG")
    return out.getvalue()


@pytest.mark.long
def test_uploads_are_read_from_memory_and_a_phone_png_fits(exported_workdir, tmp_path, monkeypatch):
    """No temporary folder: a temp cleaner has nothing to remove; a 4096x2160 PNG of 13 MB is read."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the server's tempfile.gettempdir()
    server = Server(exported_workdir, "--model-dir", os.path.join("export", "mnist.tflite"))
    try:  # temp is listed once the uploads are answered: the server's first tempfile.gettempdir() tries the folder
        body = phone_png()  # with a file of its own for a moment, which a listing at its start may catch
        assert 8 * 2 ** 20 < len(body) and table.MAX_BODY == 32 * 2 ** 20
        status, answer = request(server.url + "board/predict", body, {"X-Filename": "phone.png"})
        assert status == 200 and len(answer["input"]) == 784 and max(answer["input"]) == 255, answer
        status, answer = request(server.url + "board/predict", b"not a picture", {"X-Filename": "photo.jpg"})
        assert status == 400 and answer["error"] == "photo.jpg: not an image file", answer
        status, answer = request(server.url + "board/predict", png_bytes(drawn(7)))
        assert status == 200 and answer["digit"] == 7, answer
        assert os.listdir(temp) == []
    finally:
        assert server.stop() == 130


def large_png(side):
    """A drawn 3 on white, RGB side x side, as PNG bytes: a small file (about 100 KB at 3600) of a large picture."""
    ink = handmade.draw_digit(3, 600, 0.06, seed=3)
    pixels = Image.fromarray(np.round(255 * (1 - ink)).astype(np.uint8))
    out = io.BytesIO()
    pixels.resize((side, side), Image.Resampling.NEAREST).convert("RGB").save(out, format="PNG")
    return out.getvalue()


def process_memory(pid, key):
    """VmRSS (now) or VmHWM (the peak since clear_refs) of a process, in bytes, from /proc/PID/status."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))


@pytest.mark.long
@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="memory is read from Linux's /proc")
def test_keeps_of_large_pictures_stay_within_the_picture_limits_and_memory_goes_back(exported_workdir, tmp_path,
                                                                                      summary_line):
    """12 keeps of a large PNG at once (their originals prepared on the server) peak within what the predict path
    allows (PREPARED_AT_ONCE pictures of MAX_GROWTH); after 50 large pictures, kept and predicted, the server's
    memory is back within 300 MB of where it started."""
    png = large_png(3600)
    server = Server(exported_workdir, "--model-dir", os.path.join("export", "mnist.tflite"),
                    "--keep-dir", str(tmp_path / "my_digits"))
    try:
        pid = server.process.pid
        assert request(server.url + "board/predict", png_bytes(drawn(3)))[0] == 200  # its modules are loaded
        # The test digits' map (the atlas and "not a digit") is made once in the background after the first
        # answer; it is the model's, not the pictures', so the picture limits are measured once it is there.
        deadline = time.monotonic() + wait_limit(900)  # generous: a loaded machine
        while urllib.request.urlopen(server.url + "board/atlas", timeout=wait_limit(60)).status != 200:
            assert time.monotonic() < deadline, "timed out waiting for the board's atlas of the test digits"
            time.sleep(0.5)
        start = process_memory(pid, "VmRSS")
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")  # the peak (VmHWM) is now the present size
        body = {"digit": 3, "original": base64.b64encode(png).decode(), "name": "large.png"}
        with concurrent.futures.ThreadPoolExecutor(12) as clients:
            kept = list(clients.map(lambda _: request(server.url + "board/keep", body), range(12)))
        peak = process_memory(pid, "VmHWM") - start
        assert [status for status, _ in kept] == [200] * 12, kept[0]
        originals = os.listdir(tmp_path / "my_digits" / keep.ORIGINALS)
        assert len(originals) == 12 and all(name.endswith(".png") for name in originals)  # its format's suffix

        def one(i):  # 38 more large pictures, a predict or a keep, from 4 clients at once
            return request(server.url + "board/predict", png) if i % 2 else request(server.url + "board/keep", body)
        with concurrent.futures.ThreadPoolExecutor(4) as clients:
            answers = list(clients.map(one, range(38)))
        assert {status for status, _ in answers} == {200} and answers[1][1]["digit"] == 3
        after = process_memory(pid, "VmRSS") - start
    finally:
        assert server.stop() == 130
    summary_line(f"board memory: 12 keeps of a 3600x3600 PNG ({len(png):,} bytes) at once peaked at "
                 f"+{peak / 1e6:.0f} MB; after 50 large pictures +{after / 1e6:.0f} MB")
    assert peak <= model.PREPARED_AT_ONCE * MAX_GROWTH, peak
    assert after < 300 * 10 ** 6, after


CHANGE_UNDER = r"""
import json, shutil, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from mnistkit import deployed

path, other, rows = sys.argv[2], sys.argv[3], np.load(sys.argv[4])
model = deployed.LiteRTModel(path)
answers = [model.predict(rows).tolist()]
with open(path, "r+b") as f:
    f.truncate(0)
answers.append(model.predict(rows).tolist())
shutil.copyfile(other, path)  # cp other.tflite served.tflite: the same file, new bytes
answers.append(model.predict(rows).tolist())
print(json.dumps(answers))
"""


@pytest.mark.long
def test_a_served_tflite_file_truncated_or_copied_over_changes_nothing(exported_workdir, tmp_path):
    served = tmp_path / "served.tflite"
    shutil.copyfile(exported_workdir / "export" / "mnist.tflite", served)
    other = tmp_path / "other.tflite"
    other.write_bytes(bytes(range(256)) * 4000)
    rows = np.concatenate([preparation.network_input(preparation.mnist_input(Image.fromarray(drawn(d))))
                           for d in range(10)])
    np.save(tmp_path / "rows.npy", rows)
    result = subprocess.run([sys.executable, "-c", CHANGE_UNDER, ROOT, str(served), str(other),
                             str(tmp_path / "rows.npy")], capture_output=True, text=True, timeout=wait_limit(300))
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])  # -7: SIGBUS
    first, truncated, replaced = json.loads(result.stdout)
    assert np.allclose(np.sum(first, axis=1), 1, atol=1e-4) and len(set(np.argmax(first, axis=1))) > 5
    assert truncated == first and replaced == first

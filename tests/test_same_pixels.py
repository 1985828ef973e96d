"""The same pixels everywhere (issue 53 item 8): a kept drawing's 784 values when kept, as the generator reads
its file, and as TensorFlow's own JPEG decoder would (tensorflow #102996).

The keep store writes a drawing's 28x28 input as the course's JPG (quality 100, mnistkit.keep.Layout); the
generator decodes it with libjpeg-turbo's accurate integer DCT (mnistkit.images: simplejpeg, or Pillow), and
the TFRecord holds those bytes as they are (tests/test_keep.py checks the records against the files). So a
kept digit's values differ from what the board read when it was kept by at most KEPT_BOUND gray levels, by
JPEG alone. tf.io.decode_jpeg decodes the same files differently (its default DCT): by up to 27 levels on the
sample's digits; the project never decodes a picture with it, and this file checks that it does not.
"""
import ast
import glob
import io
import os

import numpy as np
import pytest
from PIL import Image

import framed
from conftest import ROOT
from mnistkit import images, keep

KEPT_BOUND = 2  # gray levels (of 255): a kept digit's file against its pixels; measured max 2, mean 0.03


@pytest.mark.quick
def test_a_kept_digit_reads_back_within_two_levels_and_the_generator_decodes_as_pillow():
    digits, _ = framed.sample_digits(2000)
    worst, mean = 0, []
    for pixels in digits:
        data = keep.LAYOUT.encode(pixels)
        raw, note = images.decode_image(data, "kept.jpg")
        read = np.frombuffer(raw, np.uint8).reshape(28, 28)
        assert note is None
        assert np.array_equal(read, np.asarray(Image.open(io.BytesIO(data)).convert("L")))  # the generator's = Pillow's
        difference = np.abs(read.astype(int) - pixels.astype(int))
        worst, mean = max(worst, int(difference.max())), mean + [difference.mean()]
    assert worst <= KEPT_BOUND
    assert np.mean(mean) < 0.1  # nearly every value is exact


def _calls(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            yield ast.unparse(node.func), node.lineno


@pytest.mark.quick
def test_no_picture_is_decoded_by_tensorflows_jpeg_decoder():
    """tf.io.decode_jpeg / tf.image.decode_image give other pixels than Pillow's (tensorflow #102996)."""
    found = []
    for path in glob.glob(os.path.join(ROOT, "*.py")) + glob.glob(os.path.join(ROOT, "mnistkit", "**", "*.py"),
                                                                  recursive=True):
        for name, line in _calls(path):
            if name.startswith("tf.") and name.rsplit(".", 1)[1] in ("decode_jpeg", "decode_image", "decode_png"):
                found.append(f"{os.path.relpath(path, ROOT)}:{line} {name}")
    assert found == []


def read_back_noise(picture, seed, share=0.01, most=3):
    """A canvas's read-back as Brave and Firefox 145 randomise it: `share` of the pixels moved by up to `most`
    gray levels (never 0), clipped to 0-255."""
    rng = np.random.default_rng(seed)
    noisy = picture.astype(int)
    where = rng.random(picture.shape) < share
    noisy[where] += rng.choice([-most, -2, -1, 1, 2, most], where.sum())
    return np.clip(noisy, 0, 255).astype(np.uint8)


@pytest.mark.quick
def test_a_blank_canvas_with_read_back_noise_is_blank():
    import mnist_app
    from mnistkit.errors import DataError
    for seed in range(3):
        blank = read_back_noise(np.full((280, 280), 255, np.uint8), seed, share=0.01)
        with pytest.raises(DataError, match="no digit found"):
            mnist_app.prepared_pixels(framed.png(blank), name="drawing.png")

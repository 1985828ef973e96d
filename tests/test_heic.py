"""An iPhone's HEIC photo is read with pillow-heif; where that package is missing, the photo is
named as before."""
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, wait_limit
import mnist_app
import mnistkit.idx
import mnistkit.images

pillow_heif = pytest.importorskip("pillow_heif")


def heic_and_png(tmp_path, name):
    """One bundled test digit as an iPhone photo (IMG_0001.<name>, HEIC inside) and as a PNG: (heic, png, label)."""
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    picture = Image.fromarray(255 - images[0], mode="L").resize((280, 280), Image.Resampling.BICUBIC).convert("RGB")
    heic, png = tmp_path / name, tmp_path / "same.png"
    pillow_heif.from_pillow(picture).save(str(heic), quality=90)
    picture.save(png)
    with open(heic, "rb") as f:
        assert f.read(12)[4:12] == b"ftypheic"  # a real HEIC file, whatever its name says
    return heic, png, int(labels[0])


@pytest.mark.parametrize("name", ["IMG_0001.HEIC", "IMG_0001.jpg"])
def test_the_app_reads_an_iphone_heic_photo_as_it_reads_the_same_png(tmp_path, name):
    heic, png, _ = heic_and_png(tmp_path, name)
    from_heic = mnist_app.prepared_pixels(str(heic)).astype(int)
    from_png = mnist_app.prepared_pixels(str(png)).astype(int)
    assert np.abs(from_heic - from_png).mean() < 4  # HEIC is lossy: nearly the same 28x28 input
    assert ((from_heic > 127) == (from_png > 127)).mean() > 0.97


def test_the_generator_reads_a_28x28_heic_image(tmp_path):
    picture = Image.fromarray(np.tile(np.arange(0, 252, 9, dtype=np.uint8), (28, 1)), mode="L").convert("RGB")
    path = tmp_path / "0.heic"
    pillow_heif.from_pillow(picture).save(str(path), quality=100)
    pixels, note = mnistkit.images.load_image(str(path))
    read = np.frombuffer(pixels, np.uint8).reshape(28, 28).astype(int)
    assert note == "RGB" and np.abs(read - np.asarray(picture.convert("L"), int)).max() <= 12


WITHOUT_PILLOW_HEIF = """
import sys
sys.modules["pillow_heif"] = None  # as where it cannot be installed
sys.path.insert(0, {root!r})
import mnist_app
from mnistkit.errors import DataError
try:
    mnist_app.prepared_pixels({path!r})
except DataError as e:
    print(e)
"""


def test_without_pillow_heif_the_photo_is_named_as_before(tmp_path):
    heic, _, _ = heic_and_png(tmp_path, "IMG_0001.HEIC")
    result = subprocess.run([sys.executable, "-c", WITHOUT_PILLOW_HEIF.format(root=ROOT, path=str(heic))],
                            capture_output=True, text=True, timeout=wait_limit(120))
    assert result.stdout == f"{heic}: HEIC/HEIF photo: convert it to JPG or PNG\n", result.stderr

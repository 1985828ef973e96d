"""Digits as course students draw them for mnist_app.py's pic/ folder: a paint program's brush, black on white (made here).

Issue 53 item 10: the pictures in other people's course repositories are
mostly digits drawn with the mouse in MS Paint or a like program: black on
a white canvas of any size (280x280, 500x500, a wide window), a brush of any
width (a 1-pixel pencil, a round brush, the widest marker), the digit big
or small and often not centred, anti-aliased or not, saved as PNG or JPG.
Each KIND here redraws the bundled sample's MNIST test digits (real
handwriting) so: the digit's middle line (tests/penned.skeleton) is drawn
again with a round brush of the kind's width, at the kind's size and place
on its canvas. Every picture is deterministic (seeded). bench/pictures.py
--set painted reads them and counts the misreads the preparation makes:
pictures of digits the model reads right as MNIST's own 28x28 input.
"""
import functools

import numpy as np
from PIL import Image, ImageDraw

import framed
import penned

SMOOTH = 4  # an anti-aliased brush is drawn at 4x its size, then averaged down


def middle_line(digit):
    """The middle line of an MNIST digit (uint8 [28, 28], stroke bright) as segments between neighbouring pixels of
    its skeleton at 10x: float [n, 2, 2] ((row, col) of both ends), in units of the digit's 280-pixel square."""
    return _middle_line(digit.tobytes())


@functools.lru_cache(maxsize=4096)
def _middle_line(pixels):
    """middle_line of a digit's 784 bytes, each digit's once: every kind redraws the same digits."""
    digit = np.frombuffer(pixels, np.uint8).reshape(28, 28)
    middle = penned.skeleton(framed.coverage_of_mnist(digit) > 0.5)
    points = set(zip(*np.nonzero(middle)))
    segments = [((r, c), (r + dr, c + dc)) for r, c in points for dr, dc in ((0, 1), (1, -1), (1, 0), (1, 1))
                if (r + dr, c + dc) in points]
    singles = [((r, c), (r, c)) for r, c in points]  # a dot where the skeleton is one pixel alone
    return np.array(segments + singles, dtype=np.float64).reshape(-1, 2, 2)


def paint(segments, canvas, top, left, size, brush, smooth=True):
    """The segments drawn black on a white canvas (width, height) with a round brush of `brush` pixels: uint8 [h, w].

    The digit's 280-square lands as a size x size square at (top, left); smooth: anti-aliased edges (drawn at
    SMOOTH times the size, then averaged down), else hard ones as a pencil's.
    """
    k = SMOOTH if smooth else 1
    img = Image.new("L", (canvas[0] * k, canvas[1] * k), 255)
    draw = ImageDraw.Draw(img)
    scale = size / 280 * k
    radius = max(brush * k / 2, 0.5)
    for (r0, c0), (r1, c1) in segments:
        y0, x0 = top * k + (r0 + 0.5) * scale, left * k + (c0 + 0.5) * scale
        y1, x1 = top * k + (r1 + 0.5) * scale, left * k + (c1 + 0.5) * scale
        if brush * k >= 2:
            draw.line([(x0, y0), (x1, y1)], fill=0, width=int(round(brush * k)))
            draw.ellipse([x1 - radius, y1 - radius, x1 + radius, y1 + radius], fill=0)
        else:
            draw.line([(x0, y0), (x1, y1)], fill=0, width=1)
    if k > 1:
        img = img.reduce(k)
    return np.asarray(img)


def _make(canvas_range, size_range, brush_range, smooth=True, jpg_every=3, wide=False, absolute=False):
    """make(image, i, rng) -> file bytes: a canvas of canvas_range pixels a side (wide: up to 2.5 times as wide as
    tall), the digit size_range of its height, placed anywhere on it, a brush of brush_range of the digit's size
    (absolute: pixels), PNG or every jpg_every-th a JPG."""
    def make(image, i, rng):
        height = int(rng.integers(*canvas_range))
        width = int(height * (rng.uniform(1.2, 2.5) if wide else rng.uniform(0.85, 1.25)))
        size = int(height * rng.uniform(*size_range))
        brush = rng.uniform(*brush_range) * (1 if absolute else size)
        top = int(rng.uniform(0, height - size))
        left = int(rng.uniform(0, max(width - size, 0)))
        picture = paint(middle_line(image), (width, height), top, left, size, brush, smooth)
        if jpg_every and i % jpg_every == jpg_every - 1:
            return framed.jpeg(framed.rgb(picture), int(rng.integers(60, 95)))
        return framed.png(picture)
    return make


# MNIST's stroke is about 0.1 of the digit's height (2 pixels of a 20-pixel digit).
KINDS = {
    "brush on 280x280 (0.06-0.15 of the digit)": _make((280, 281), (0.55, 0.9), (0.06, 0.15)),
    "bold brush (0.16-0.25)": _make((200, 600), (0.5, 0.9), (0.16, 0.25)),
    "pencil, 1-3 px, no smoothing": _make((300, 900), (0.4, 0.9), (1, 3), smooth=False, absolute=True),
    "small digit off-centre (0.15-0.35 of the canvas)": _make((400, 1000), (0.15, 0.35), (0.06, 0.18)),
    "wide window": _make((250, 500), (0.4, 0.9), (0.05, 0.2), wide=True),
    "JPG of a brush digit": _make((200, 700), (0.4, 0.9), (0.06, 0.2), jpg_every=1),
}


def pictures(kind, images, labels):
    """Every picture of one kind: [(file bytes, label)] of the MNIST digits images uint8 [n, 28, 28], labels [n]."""
    make = KINDS[kind]
    seed = sum(map(ord, kind))
    return [(make(image, i, np.random.default_rng([seed, i])), int(label))
            for i, (image, label) in enumerate(zip(images, labels))]

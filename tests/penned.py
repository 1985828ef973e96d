"""Digits as people write and photograph them for a course's app: a pen on paper, a phone's photo (made here).

Issue 53 item 10: the pictures people share in their course repositories are
a digit written with a ballpoint, a felt pen or a marker on white or ruled
paper, photographed, cropped loosely (off-centre, with a margin of paper),
sometimes shaded, saved as JPEG or PNG at any size; often on a squared
exercise book's grid or across ruled lines (the lined kinds, each beside
its twin: the same photo on plain paper). Each KIND here redraws
the bundled sample's MNIST test digits (real handwriting) as such a picture:
the digit's shape is thinned to a pen's line or thickened to a marker's
(its middle line drawn again with a round pen, so the strokes keep their course), laid
on a page of its own size and light, blurred as a lens does, and saved.
Every picture is deterministic (seeded). bench/pictures.py --set penned reads
them and counts the misreads the preparation makes: pictures of digits the
model reads right as MNIST's own 28x28 input.
"""
import functools

import numpy as np
from PIL import Image, ImageFilter

import framed

SCALE = 10  # the digit's shape is made at 10x MNIST's 28 pixels (280), as framed.coverage_of_mnist


def skeleton(mask):
    """The one-pixel-wide middle line of a boolean mask [h, w] (Zhang and Suen's thinning, 1984): boolean [h, w]."""
    skel = np.pad(mask.astype(bool), 1)
    while True:
        changed = False
        for step in range(2):
            p = [np.roll(np.roll(skel, -dy, 0), -dx, 1) for dy, dx in
                 ((-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1))]  # P2..P9, clockwise
            neighbours = sum(q.astype(int) for q in p)
            turns = sum((~p[k] & p[(k + 1) % 8]).astype(int) for k in range(8))
            if step == 0:
                away = ~(p[0] & p[2] & p[4]) & ~(p[2] & p[4] & p[6])
            else:
                away = ~(p[0] & p[2] & p[6]) & ~(p[0] & p[4] & p[6])
            gone = skel & (neighbours >= 2) & (neighbours <= 6) & (turns == 1) & away
            if gone.any():
                skel &= ~gone
                changed = True
        if not changed:
            return skel[1:-1, 1:-1]


@functools.lru_cache(maxsize=1024)
def _middle(pixels):
    """skeleton of an MNIST digit's 784 bytes scaled up, each digit's once: the lined kinds and their twin redraw
    the same digits."""
    return skeleton(framed.coverage_of_mnist(np.frombuffer(pixels, np.uint8).reshape(28, 28)) > 0.5)


def pen_shape(digit, width):
    """An MNIST digit (uint8 [28, 28], stroke bright) redrawn with a pen `width` times MNIST's stroke: coverage float
    [280, 280] in [0, 1]. Its middle line (skeleton) is drawn again with a round pen of that width, so that a thin
    pen's strokes keep their course."""
    shape = framed.coverage_of_mnist(digit) > 0.5
    middle = _middle(digit.tobytes())
    radius = max(1.0, 11 * width)  # MNIST's stroke is about 22 pixels at 10x
    reach = int(np.ceil(radius))
    drawn = np.zeros_like(shape)
    rows, cols = np.nonzero(middle)
    for dy in range(-reach, reach + 1):
        for dx in range(-reach, reach + 1):
            if dy * dy + dx * dx <= radius * radius:
                r, c = np.clip(rows + dy, 0, shape.shape[0] - 1), np.clip(cols + dx, 0, shape.shape[1] - 1)
                drawn[r, c] = True
    # the pen's soft edge: a little blur
    return np.asarray(Image.fromarray(drawn.astype(np.uint8) * 255).filter(ImageFilter.GaussianBlur(1.0)),
                      dtype=np.float64) / 255


def on_page(cov, rng, page_side, ruled=False):
    """The digit's coverage placed off-centre on a page of `page_side` pixels: (coverage, its light) floats."""
    height = int(page_side * rng.uniform(0.45, 0.8))
    digit = np.asarray(Image.fromarray((cov * 255).astype(np.uint8)).resize((height, height), Image.Resampling.BILINEAR),
                       dtype=np.float64) / 255
    page = np.zeros((page_side, int(page_side * rng.uniform(0.8, 1.25))))
    top = int(rng.uniform(0, page.shape[0] - height))
    left = int(rng.uniform(0, page.shape[1] - height))
    page[top:top + height, left:left + height] = digit
    light = framed.linear(*page.shape, rng.uniform(215, 250), rng.uniform(160, 215), rng.uniform(0, 2 * np.pi))
    if ruled:  # a notebook's faint lines, about 1/7 of the page apart
        spacing = page.shape[0] / rng.uniform(5, 8)
        rows = np.arange(rng.uniform(0, spacing), page.shape[0], spacing).astype(int)
        for row in rows:
            light[row:row + max(1, page.shape[0] // 200)] *= rng.uniform(0.75, 0.88)
    return page, light


def photo(page, light, rng, ink):
    """The page as a phone's photo: ink of level `ink` on the light, a lens's blur, noise; uint8 [h, w]."""
    picture = framed.on_ground(page, light, ink=ink)
    picture = np.asarray(Image.fromarray(framed.to_uint8(picture)).filter(
        ImageFilter.GaussianBlur(rng.uniform(0.5, 1.5) * page.shape[0] / 300)), dtype=np.float64)
    return framed.to_uint8(framed.noisy(picture, rng.uniform(2, 6), int(rng.integers(1 << 30))))


def _make(width_range, ruled=False, side_range=(200, 900), ink_range=(15, 70)):
    def make(image, i, rng):
        cov = pen_shape(image, rng.uniform(*width_range))
        page, light = on_page(cov, rng, int(rng.integers(*side_range)), ruled)
        picture = photo(page, light, rng, rng.uniform(*ink_range))
        return framed.jpeg(picture, int(rng.integers(70, 95))) if i % 3 else framed.png(picture)
    return make


# Lined paper (issue 53 item 10): a Chinese student's squared exercise book (方格本: a grid every 0.15-0.3 of
# the digit's height) or ruled lines across the digit, in a printed colour that the phone's gray keeps lighter
# than the ink or as dark. RGB: (the line's colour, the ink's colour); each picture takes one pair.
LINE_INKS = [((150, 190, 235), (20, 30, 40)), ((150, 210, 170), (25, 35, 110)), ((165, 165, 165), (15, 15, 15)),
             ((235, 150, 150), (30, 30, 30)), ((110, 140, 200), (40, 40, 60)), ((120, 120, 120), (35, 35, 35))]


def lines_coverage(shape, spacing, width, angle, rng, across=True, down=True):
    """A family of straight lines every `spacing` pixels, `width` pixels thick, turned by `angle` radians: their
    coverage float [h, w] in [0, 1], anti-aliased (a pixel covered by the share of it a line holds)."""
    y, x = np.mgrid[0:shape[0], 0:shape[1]].astype(np.float64)
    cover = np.zeros(shape)
    for on, (a, b) in ((across, (y, x)), (down, (x, -y))):
        if on:
            along = a * np.cos(angle) - b * np.sin(angle) - rng.uniform(0, spacing)
            gap = np.abs(along - spacing * np.round(along / spacing))  # from the nearest line's middle
            cover = np.maximum(cover, np.clip(width / 2 + 0.5 - gap, 0, 1))
    return cover


def _make_lined(grid, spacing_range, strength_range):
    """make(image, i, rng) -> file bytes: a pen's digit (0.4-1.0 of MNIST's stroke) photographed on paper with lines
    every spacing_range of the digit's height (grid: squared; None: no lines, the lined kinds' twin on plain paper,
    the same digit, page, light and photo), of a printed colour taken strength_range of the way from paper to it."""
    def make(image, i, rng):
        lines_seed = int(rng.integers(1 << 30))  # drawn first by every twin: the rest of the picture is the same
        cov = pen_shape(image, rng.uniform(0.4, 1.0))
        side = int(rng.integers(250, 900))
        page, light = on_page(cov, rng, side)
        line_colour, ink_colour = LINE_INKS[i % len(LINE_INKS)]
        blur, noise, quality = rng.uniform(0.5, 1.5) * side / 300, rng.uniform(2, 6), int(rng.integers(70, 95))
        lines = np.zeros(page.shape)
        if grid is not None:
            lrng = np.random.default_rng(lines_seed)
            height = _digit_height(page)
            lines = lines_coverage(page.shape, lrng.uniform(*spacing_range) * height, lrng.uniform(1, 3) * side / 400,
                                   np.radians(lrng.uniform(-3, 3)), lrng, down=grid)
            lines *= lrng.uniform(*strength_range)
        channels = []
        for line_level, ink_level in zip(line_colour, ink_colour):
            ground = light * (1 - lines * (1 - line_level / 255))
            channels.append(framed.on_ground(page, ground, ink=ink_level))
        picture = Image.fromarray(framed.to_uint8(np.stack(channels, axis=2))).filter(ImageFilter.GaussianBlur(blur))
        picture = framed.to_uint8(framed.noisy(np.asarray(picture, dtype=np.float64), noise, i))
        return framed.jpeg(picture, quality) if i % 3 else framed.png(picture)
    return make


def _digit_height(page):
    """The height in pixels of the digit's ink (coverage over 0.2) on a page (float [h, w])."""
    rows = np.nonzero((page > 0.2).any(axis=1))[0]
    return rows[-1] - rows[0] + 1 if rows.size else page.shape[0]


KINDS = {
    "ballpoint (0.35-0.55 of MNIST's stroke)": _make((0.35, 0.55)),
    "felt pen (0.6-1.0)": _make((0.6, 1.0)),
    "marker (1.5-2.2)": _make((1.5, 2.2)),
    "pen on ruled paper": _make((0.4, 1.0), ruled=True),
    "small photo (60-120 px)": _make((0.5, 1.5), side_range=(60, 120)),
    "faint pencil": _make((0.4, 0.7), ink_range=(110, 150)),
    "lined kinds' twin, plain paper": _make_lined(None, None, None),
    "squared paper (0.15-0.3 of the digit)": _make_lined(True, (0.15, 0.3), (0.6, 1.0)),
    "ruled lines across, dark as the ink": _make_lined(False, (0.2, 0.45), (0.9, 1.6)),
}
# Kinds drawn from one seed: the same digit, page and photo, with and without lines.
SEEDS = {kind: "lined" for kind in KINDS if kind.startswith(("lined", "squared", "ruled lines"))}


def pictures(kind, images, labels):
    """Every picture of one kind: [(file bytes, label)] of the MNIST digits images uint8 [n, 28, 28], labels [n]."""
    make = KINDS[kind]
    seed = sum(map(ord, SEEDS.get(kind, kind)))
    return [(make(image, i, np.random.default_rng([seed, i])), int(label))
            for i, (image, label) in enumerate(zip(images, labels))]

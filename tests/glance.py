"""Digits a person reads at a glance that earlier rounds left weak: filled loops, tiny pictures, a box askew, faint
pencil on grey paper, a phone's shadow in a corner (made here, no download).

Issue 53 item 10: students' own pictures in their course repositories. Each
KIND redraws the bundled sample's MNIST test digits (real handwriting) along
their middle line (tests/painted.middle_line) with a round pen, as
tests/painted.py does, and changes one thing a person looks past:

  - a thick pen that closes a loop: the digit's holes (a 0's, 6's, 8's, 9's,
    4's loop) filled in, as a felt pen or a marker leaves them;
  - a tiny picture (20-40 pixels a side, the digit filling it), and a digit
    a few pixels tall (7-20) in a large picture;
  - the digit touching or cut by the picture's edge (a tight crop);
  - a box drawn by hand round the digit, turned by 2-8 degrees;
  - faint pencil on grey paper (a contrast of 35-70 gray levels), grainy;
  - a photo with a phone's dark shadow over a corner;
and the twin: the felt pen's digit on white as drawn, what the redrawing
itself loses (a 7 whose top nearly closes in MNIST is closed by any pen).

Every picture is deterministic (seeded by kind and index). bench/pictures.py
--set glance reads them and counts the misreads the preparation makes:
pictures of digits the model reads right as MNIST's own 28x28 input.
"""
import numpy as np
from PIL import Image, ImageDraw, ImageFilter

import framed
import painted
from mnistkit.segmentation import label_marks


SMALL_LOOP = 0.45  # of the ink's height: a loop lower than this a thick pen closes (a 6's, 8's, 9's; not a 0's)


def holes(mask):
    """The holes of a boolean mask [h, w]: the paper it encloses (not 8-connected to the edge): boolean [h, w]."""
    paper = label_marks(~mask)
    outside = np.unique(np.concatenate([paper[0], paper[-1], paper[:, 0], paper[:, -1]]))
    return (paper >= 0) & ~np.isin(paper, outside)


def _pen_page(image, side, size, top, left, brush, smooth=True):
    """The digit's middle line drawn black on white, size x size at (top, left) of a (width, height) canvas `side`,
    with a round brush of `brush` of the digit's size: uint8 [h, w]."""
    return painted.paint(painted.middle_line(image), side, top, left, size, brush * size, smooth)


def _save(picture, i, rng, jpg_every=3):
    """PNG, or every jpg_every-th a JPEG of quality 70-95: file bytes."""
    if jpg_every and i % jpg_every == jpg_every - 1:
        return framed.jpeg(picture if picture.ndim == 3 else framed.rgb(picture), int(rng.integers(70, 95)))
    return framed.png(picture)


def _twin(image, i, rng):
    """The felt-pen digit of _filled_loops as the pen drew it, its loops open: what the other kinds lose is counted
    against it."""
    return _filled_loops(image, i, rng, fill=False)


def _filled_loops(image, i, rng, fill=True):
    """A felt pen (0.08-0.14 of the digit) on a 280-400 canvas, the holes the pen left that are smaller than
    SMALL_LOOP of the ink's height filled in (a 0's large loop stays open: filled, it is a blot, no digit)."""
    side = int(rng.integers(280, 400))
    size = int(side * rng.uniform(0.6, 0.85))
    top, left = int(rng.uniform(0, side - size)), int(rng.uniform(0, side - size))
    picture = _pen_page(image, (side, side), size, top, left, rng.uniform(0.08, 0.14))
    ink = picture < 128 if fill else np.zeros(picture.shape, bool)
    rows = np.nonzero(ink.any(axis=1))[0]
    paper = label_marks(holes(ink)) if fill else np.full(ink.shape, -1)
    filled = np.zeros_like(ink)
    for root in np.unique(paper[paper >= 0]):
        hole = paper == root
        tall = np.nonzero(hole.any(axis=1))[0]
        if tall[-1] - tall[0] + 1 < SMALL_LOOP * (rows[-1] - rows[0] + 1):
            filled |= hole
    picture = np.where(filled, 0, picture).astype(np.uint8)
    return _save(picture, i, rng)


def _tiny_picture(image, i, rng):
    """A picture of 20-40 pixels a side, the digit 0.7-0.95 of it, a brush of 1-3 pixels, smooth or not."""
    side = int(rng.integers(20, 41))
    size = int(round(side * rng.uniform(0.7, 0.95)))
    top, left = int(rng.uniform(0, side - size + 1)), int(rng.uniform(0, side - size + 1))
    brush = rng.uniform(1.0, 3.0) / size
    return _save(_pen_page(image, (side, side), size, top, left, brush, smooth=bool(i % 2)), i, rng, jpg_every=0)


def _few_pixels(image, i, rng):
    """A digit a few pixels tall (its 280-square 10-28 pixels: the ink 7-20) anywhere on a picture of 300-800
    pixels, a pen of 1 pixel up to 0.15 of the digit (thicker, a digit 8 pixels tall is a blot to a person too)."""
    side = int(rng.integers(300, 800))
    size = int(rng.integers(10, 29))
    top, left = int(rng.uniform(0, side - size)), int(rng.uniform(0, side - size))
    brush = rng.uniform(1.0, max(1.0, 0.15 * size)) / size
    return _save(_pen_page(image, (side, side), size, top, left, brush, smooth=bool(i % 2)), i, rng)


def _at_the_edge(image, i, rng):
    """A brush digit cropped tight: its ink 0-3 pixels from the picture's edge on 1-4 sides, on one of them cut by
    up to a third of the brush (the stroke still there)."""
    size = int(rng.integers(120, 300))
    brush = rng.uniform(0.05, 0.1) * size
    big = painted.paint(painted.middle_line(image), (size * 2, size * 2), size // 2, size // 2, size, brush)
    rows, cols = np.nonzero(big < 128)
    box = [rows.min(), rows.max() + 1, cols.min(), cols.max() + 1]
    margins = [int(rng.integers(8, 40)) for _ in range(4)]
    tight = rng.choice(4, int(rng.integers(1, 5)), replace=False)
    for side in tight:
        margins[side] = int(rng.integers(0, 4))
    margins[tight[0]] = int(rng.integers(-int(brush / 3), 4))  # negative: the edge cuts the ink, on one side
    crop = big[box[0] - margins[0]:box[1] + margins[1], box[2] - margins[2]:box[3] + margins[3]]
    return _save(crop, i, rng)


def _box_askew(image, i, rng):
    """A brush digit 0.45-0.6 of a 300-pixel picture with a box drawn round it, 6-25 pixels off its ink, turned by
    2-8 degrees either way, 2-5 pixels wide."""
    side = 300
    size = int(side * rng.uniform(0.45, 0.6))
    top, left = int(rng.uniform(0.18 * side, 0.82 * side - size)), int(rng.uniform(0.18 * side, 0.82 * side - size))
    picture = _pen_page(image, (side, side), size, top, left, rng.uniform(0.07, 0.13))
    rows, cols = np.nonzero(picture < 128)
    pad = rng.uniform(6, 25)
    cy, cx = (rows.min() + rows.max()) / 2, (cols.min() + cols.max()) / 2
    angle = np.radians(rng.uniform(2, 8) * (1 if i % 2 else -1))
    hy, hx = (rows.max() - rows.min()) / 2, (cols.max() - cols.min()) / 2
    slack = pad + np.tan(abs(angle)) * max(hx, hy)  # turned, its sides still clear of the ink's box
    corners = [(sx * (hx + slack), sy * (hy + slack)) for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
    turned = [(cx + x * np.cos(angle) - y * np.sin(angle), cy + x * np.sin(angle) + y * np.cos(angle))
              for x, y in corners]
    img = Image.fromarray(picture)
    ImageDraw.Draw(img).line(turned + turned[:1], fill=int(rng.integers(0, 70)), width=int(rng.integers(2, 6)),
                             joint="curve")
    return _save(np.asarray(img), i, rng)


def _pencil_grey(image, i, rng):
    """Pencil on grey paper photographed: paper 150-200, the pencil 35-70 levels darker, grainy, a little blur,
    noise, JPEG."""
    side = int(rng.integers(250, 600))
    size = int(side * rng.uniform(0.5, 0.8))
    top, left = int(rng.uniform(0, side - size)), int(rng.uniform(0, side - size))
    cover = 1 - _pen_page(image, (side, side), size, top, left, rng.uniform(0.05, 0.1)) / 255.0
    texture = np.random.default_rng(i).uniform(0.55, 1.0, cover.shape)  # graphite leaves paper showing through
    cover = cover * texture
    paper = rng.uniform(150, 200)
    ground = framed.linear(side, side, paper, paper * rng.uniform(0.8, 0.95), rng.uniform(0, 2 * np.pi))
    picture = ground - cover * rng.uniform(35, 70)
    picture = np.asarray(Image.fromarray(framed.to_uint8(picture)).filter(ImageFilter.GaussianBlur(side / 400)),
                         dtype=np.float64)
    return framed.jpeg(framed.to_uint8(framed.noisy(picture, rng.uniform(2, 5), i)), int(rng.integers(70, 95)))


def _shadow_corner(image, i, rng):
    """A felt-pen digit photographed with the phone's shadow over a corner: a dark disc's edge (0.1-0.3 of the paper's
    light) reaching 0.2-0.45 of the picture in, its edge soft, noise, JPEG."""
    side = int(rng.integers(250, 700))
    size = int(side * rng.uniform(0.45, 0.7))
    top, left = int(rng.uniform(0.1 * side, 0.9 * side - size)), int(rng.uniform(0.1 * side, 0.9 * side - size))
    cover = 1 - _pen_page(image, (side, side), size, top, left, rng.uniform(0.07, 0.13)) / 255.0
    y, x = framed.grid(side, side)
    corner = [(0, 0), (0, 1), (1, 0), (1, 1)][i % 4]
    reach = rng.uniform(0.2, 0.45) * np.sqrt(2)
    distance = np.hypot(y - corner[0], x - corner[1])
    inside = 1 / (1 + np.exp((distance - reach) * side / rng.uniform(2, 12)))
    paper = rng.uniform(200, 245)
    ground = paper * (1 - (1 - rng.uniform(0.1, 0.3)) * inside)
    picture = framed.on_ground(cover, ground, ink=rng.uniform(15, 50))
    return framed.jpeg(framed.to_uint8(framed.noisy(picture, rng.uniform(2, 5), i)), int(rng.integers(70, 95)))


TWIN = "felt pen on white (the twin)"
KINDS = {
    TWIN: _twin,
    "loops filled in (a felt pen)": _filled_loops,
    "tiny picture (20-40 px)": _tiny_picture,
    "a few pixels tall (7-20 px) in a large picture": _few_pixels,
    "at the picture's edge (0-3 px, or cut)": _at_the_edge,
    "a box askew round it (2-8 degrees)": _box_askew,
    "pencil on grey paper (35-70 levels)": _pencil_grey,
    "a phone's shadow over a corner": _shadow_corner,
}

SEEDS = {"loops filled in (a felt pen)": TWIN}  # drawn from the twin's seed: the same digit, pen and place


def picture(kind, image, i):
    """The i-th picture of one kind (file bytes), made of the MNIST digit image (uint8 [28, 28]), seeded by the kind
    (or its twin's, SEEDS) and i."""
    return KINDS[kind](image, i, np.random.default_rng([sum(map(ord, SEEDS.get(kind, kind))), i]))


def pictures(kind, images, labels):
    """Every picture of one kind: [(file bytes, label)] of the MNIST digits images uint8 [n, 28, 28], labels [n]."""
    return [(picture(kind, image, i), int(label)) for i, (image, label) in enumerate(zip(images, labels))]

"""Digit pictures as people share them: in a frame or border, on a shaded or uneven ground (made here, no download).

Issue 53 item 10: pictures a person reads at a glance. Each KIND takes a
plain picture of a digit (a dark digit on white paper, as a paint program
or a scan gives) and changes only what a person looks past: a frame or a
border round it (a screenshot, a scan, a box drawn on the page; thin or
thick, black, grey or coloured, touching the edges or inside a margin, all
four sides or only some, turned by up to 10 degrees with its corners in the
picture or cut off by its edge, or drawn tight along the digit's side), a
ring or a box drawn round a smaller digit (the ring touching it, too), a line under it, a margin line beside it, or the ground under it (a linear gradient, a
vignette, a shadow with a sharp edge, uneven light, paper grain, JPEG noise),
and the two together. The digits are the bundled sample's MNIST test digits
(real handwriting, scaled up) and tests/handmade.py's pen strokes. Every
picture is deterministic (seeded).

  python tests/framed.py OUTDIR        # writes every kind's pictures and OUTDIR/labels.txt
bench/pictures.py reads them with a model and gives the read rate per kind.
"""
import io
import os
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import handmade  # noqa: E402
from mnistkit.idx import read_idx  # noqa: E402

SAMPLE = os.path.join(ROOT, "data", "mnist_sample")
SIDE = 280  # a paint program's canvas: 10x MNIST's 28


def sample_digits(count, first=0):
    """`count` of the bundled sample's test digits from the `first`-th: (uint8 [n, 28, 28] stroke bright, labels [n])."""
    images = read_idx(os.path.join(SAMPLE, "t10k-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(SAMPLE, "t10k-labels-idx1-ubyte.gz"))
    return images[first:first + count], labels[first:first + count].astype(int)


def coverage_of_mnist(digit, side=SIDE):
    """One MNIST digit (uint8 [28, 28], stroke bright) scaled up smoothly: ink coverage float [side, side] in [0, 1]."""
    big = Image.fromarray(digit).resize((side, side), Image.Resampling.BICUBIC)
    return np.clip(np.asarray(big, dtype=np.float64) / 255, 0, 1)


def coverage_of_pen(digit, seed, side=SIDE):
    """tests/handmade.py's pen-drawn digit with a hand's wobble, on a page of `side`: float [side, side] in [0, 1]."""
    ink = handmade.draw_digit(digit, int(side * 0.7), 0.09, seed=seed)
    page = np.zeros((side, side))
    at = (side - ink.shape[0]) // 2
    page[at:at + ink.shape[0], at:at + ink.shape[1]] = ink
    return page


def on_ground(coverage, ground, ink=20.0):
    """Ink laid on a ground: float [h, w] gray levels; ground: float [h, w] (or a number), the paper's light.

    The ink takes the light of the paper it is on: ink level `ink` on white (255) paper, darker in shadow.
    """
    ground = np.broadcast_to(np.asarray(ground, dtype=np.float64), coverage.shape)
    return ground * (1 - coverage * (1 - ink / 255))


def to_uint8(picture):
    return np.clip(np.round(picture), 0, 255).astype(np.uint8)


def grid(h, w):
    return np.linspace(0, 1, h)[:, None], np.linspace(0, 1, w)[None, :]


# ---- frames and borders: drawn on the finished gray (or RGB) picture ----

def frame(picture, width, inset=0, level=0, sides="tblr"):
    """A frame of `width` pixels, `inset` pixels in from the edges, in gray `level` (or an RGB tuple) on some sides.

    picture: uint8 [h, w] or [h, w, 3]; sides: which of top, bottom, left, right ("tblr": all four).
    """
    out = picture.copy()
    h, w = out.shape[:2]
    a, b = inset, inset + width
    if "t" in sides:
        out[a:b, inset:w - inset] = level
    if "b" in sides:
        out[h - b:h - a, inset:w - inset] = level
    if "l" in sides:
        out[inset:h - inset, a:b] = level
    if "r" in sides:
        out[inset:h - inset, w - b:w - a] = level
    return out


def rgb(picture):
    return np.repeat(picture[:, :, None], 3, axis=2)


# ---- grounds: the paper's light, float [h, w] gray levels ----

def linear(h, w, bright, dim, angle):
    y, x = grid(h, w)
    t = np.cos(angle) * x + np.sin(angle) * y
    t = (t - t.min()) / (t.max() - t.min())
    return bright + (dim - bright) * t


def vignette(h, w, bright, dim):
    y, x = grid(h, w)
    return bright + (dim - bright) * np.clip(((x - 0.5) ** 2 + (y - 0.5) ** 2) / 0.5, 0, 1) ** 0.8


def shadow(h, w, bright, share, angle, offset, soft):
    """Paper of `bright` with a shadow (light times `share`) over a half plane, its edge softened by `soft` pixels."""
    y, x = grid(h, w)
    t = (np.cos(angle) * (x - 0.5) + np.sin(angle) * (y - 0.5) - offset) * max(h, w)
    inside = 1 / (1 + np.exp(-t / max(soft, 0.1)))
    return bright * (1 - (1 - share) * inside)


def uneven(h, w, bright, depth, seed):
    """Light that varies slowly and unevenly: bright less up to `depth` in a few broad patches."""
    rng = np.random.default_rng(seed)
    field = rng.normal(size=(4, 4))
    field = np.asarray(Image.fromarray(field.astype(np.float32), mode="F").resize((w, h), Image.Resampling.BICUBIC))
    field = (field - field.min()) / (field.max() - field.min())
    return bright - depth * field


def grain(h, w, paper, amount, seed):
    """Paper with a texture: gray `paper` plus blurred noise of about `amount` levels."""
    rng = np.random.default_rng(seed)
    noise = Image.fromarray(to_uint8(128 + 40 * rng.normal(size=(h, w))))
    noise = np.asarray(noise.filter(ImageFilter.GaussianBlur(1.5)), dtype=np.float64) - 128
    return paper + noise * amount / max(noise.std(), 1e-6)


def jpeg(picture, quality):
    """A picture (uint8 gray or RGB) saved as a JPEG of `quality` and read back: its bytes."""
    buffer = io.BytesIO()
    Image.fromarray(picture).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def png(picture):
    buffer = io.BytesIO()
    Image.fromarray(picture).save(buffer, format="PNG")
    return buffer.getvalue()


def noisy(picture, sigma, seed):
    return picture + np.random.default_rng(seed).normal(0, sigma, picture.shape)


# Each kind: make(coverage, i, rng) -> the picture's file bytes. i numbers the picture within its kind (its seed).
def _plain(cov, i, rng):
    return png(to_uint8(on_ground(cov, 255)))


def _thin_frame(cov, i, rng):
    return png(frame(to_uint8(on_ground(cov, 255)), int(rng.integers(1, 4)), 0, int(rng.integers(0, 90))))


def _frame_inset(cov, i, rng):
    width, inset = int(rng.integers(2, 7)), int(rng.integers(6, 30))
    return png(frame(to_uint8(on_ground(cov, 250)), width, inset, int(rng.integers(0, 60))))


def _colour_frame(cov, i, rng):
    colour = [(30, 60, 200), (200, 30, 30), (20, 140, 40), (120, 120, 120), (0, 0, 0)][i % 5]
    picture = frame(rgb(to_uint8(on_ground(cov, 255))), int(rng.integers(1, 9)), int(rng.integers(0, 12)), colour)
    return png(picture) if i % 2 else jpeg(picture, 90)


def _thick_border(cov, i, rng):
    width = int(rng.integers(10, 36))  # 4% to 12% of the side
    return png(frame(to_uint8(on_ground(cov, 255)), width, 0, int(rng.integers(0, 80))))


def _partial_frame(cov, i, rng):
    sides = ["t", "b", "l", "r", "tl", "br", "tb", "lr", "tlr", "blr", "tbl", "tbr"][i % 12]
    return png(frame(to_uint8(on_ground(cov, 255)), int(rng.integers(1, 6)), int(rng.integers(0, 10)),
                     int(rng.integers(0, 80)), sides))


def _screenshot_dark(cov, i, rng):
    """A light digit on black, as a screenshot of an MNIST digit, in a light or grey frame."""
    picture = to_uint8(255 * cov)
    return png(frame(picture, int(rng.integers(1, 5)), int(rng.integers(0, 10)), int(rng.integers(150, 256))))


def _gradient(cov, i, rng):
    ground = linear(*cov.shape, 250, rng.uniform(80, 150), rng.uniform(0, 2 * np.pi))
    return png(to_uint8(noisy(on_ground(cov, ground), 3, i)))


def _vignette(cov, i, rng):
    return jpeg(to_uint8(noisy(on_ground(cov, vignette(*cov.shape, 245, rng.uniform(70, 140))), 4, i)), 85)


def _shadow(cov, i, rng):
    ground = shadow(*cov.shape, 245, rng.uniform(0.45, 0.7), rng.uniform(0, 2 * np.pi), rng.uniform(-0.3, 0.3),
                    rng.uniform(0.5, 6))
    return jpeg(to_uint8(noisy(on_ground(cov, ground), 3, i)), 90)


def _uneven(cov, i, rng):
    return png(to_uint8(noisy(on_ground(cov, uneven(*cov.shape, 245, rng.uniform(60, 120), i)), 3, i)))


def _paper_grain(cov, i, rng):
    ground = grain(*cov.shape, rng.uniform(170, 230), rng.uniform(6, 14), i)
    return jpeg(to_uint8(on_ground(cov, ground, ink=40)), int(rng.integers(60, 90)))


def _jpeg_noise(cov, i, rng):
    return jpeg(to_uint8(noisy(on_ground(cov, 240, ink=30), rng.uniform(6, 14), i)), int(rng.integers(25, 60)))


def _photo_margin(cov, i, rng):
    """A photo of a sheet: the page (shaded) in the middle, the dark table showing round it."""
    h, w = cov.shape
    margin = int(rng.integers(20, 50))
    big = np.zeros((h + 2 * margin, w + 2 * margin))
    big[margin:margin + h, margin:margin + w] = cov
    ground = np.full(big.shape, rng.uniform(40, 90))
    ground[margin:margin + h, margin:margin + w] = linear(h, w, 240, 170, rng.uniform(0, 2 * np.pi))
    return jpeg(to_uint8(noisy(on_ground(big, ground), 4, i)), 85)


def _frame_and_shade(cov, i, rng):
    ground = linear(*cov.shape, 245, rng.uniform(110, 170), rng.uniform(0, 2 * np.pi))
    picture = to_uint8(noisy(on_ground(cov, ground), 3, i))
    return jpeg(frame(picture, int(rng.integers(1, 5)), int(rng.integers(0, 15)), int(rng.integers(0, 60))), 85)


def _frame_askew(cov, i, rng):
    """A frame drawn by hand or scanned askew: its outline turned by 3 to 10 degrees either way round the middle,
    its corners 1-8% of the side inside the picture."""
    h, w = cov.shape
    img = Image.fromarray(to_uint8(on_ground(cov, 255)))
    angle = np.radians(rng.uniform(3, 10) * (1 if i % 2 else -1))
    half = np.array([w, h]) * (0.5 - rng.uniform(0.01, 0.08)) / (np.cos(abs(angle)) + np.sin(abs(angle)))
    corners = [(sx * half[0], sy * half[1]) for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
    turned = [(w / 2 + x * np.cos(angle) - y * np.sin(angle), h / 2 + x * np.sin(angle) + y * np.cos(angle))
              for x, y in corners]
    ImageDraw.Draw(img).line(turned + turned[:1], fill=int(rng.integers(0, 80)), width=int(rng.integers(1, 5)))
    return png(np.asarray(img))


def _frame_touching(cov, i, rng):
    """A frame drawn tight round the digit: one of its sides (in turn) runs along the digit's own side, touching
    it; the others lie in the margin."""
    h, w = cov.shape
    rows, cols = np.nonzero(cov > 0.3)
    width, inset = int(rng.integers(1, 4)), int(rng.integers(4, 12))
    box = [inset, inset, w - inset - 1, h - inset - 1]  # left, top, right, bottom
    side = i % 4
    box[side] = [cols.min() - width, rows.min() - width, cols.max() + 1, rows.max() + 1][side]
    img = Image.fromarray(to_uint8(on_ground(cov, 255)))
    ImageDraw.Draw(img).rectangle(box, outline=int(rng.integers(0, 60)), width=width)
    return png(np.asarray(img))


def _frame_cut(cov, i, rng):
    """A frame askew (3 to 10 degrees) as a phone's crop or a scan gives it: the picture's edge cuts its corners
    off, so that it falls apart into straight lines at a slope, some short (a corner's side)."""
    h, w = cov.shape
    img = Image.fromarray(to_uint8(on_ground(cov, 255)))
    angle = np.radians(rng.uniform(3, 10) * (1 if i % 2 else -1))
    half = np.array([w, h]) * rng.uniform(0.47, 0.53)
    corners = [(sx * half[0], sy * half[1]) for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
    turned = [(w / 2 + x * np.cos(angle) - y * np.sin(angle), h / 2 + x * np.sin(angle) + y * np.cos(angle))
              for x, y in corners]
    ImageDraw.Draw(img).line(turned + turned[:1], fill=int(rng.integers(0, 80)), width=int(rng.integers(1, 5)))
    return png(np.asarray(img))


def smaller(cov, rng, low=0.45, high=0.6):
    """The digit's coverage shrunk to low-high of its size and placed anywhere on the picture: (coverage float
    [h, w], its ink's box (top, bottom, left, right), end exclusive), for a mark drawn round it."""
    h, w = cov.shape
    size = int(h * rng.uniform(low, high))
    small = np.asarray(Image.fromarray(cov.astype(np.float32), mode="F").resize((size, size), Image.Resampling.BILINEAR))
    top, left = int(rng.uniform(0.1 * h, 0.9 * h - size)), int(rng.uniform(0.1 * w, 0.9 * w - size))
    out = np.zeros_like(cov)
    out[top:top + size, left:left + size] = np.clip(small, 0, 1)
    rows, cols = np.nonzero(out > 0.3)
    return out, (rows.min(), rows.max() + 1, cols.min(), cols.max() + 1)


def _smaller(cov, i, rng):
    """The twin of the kinds with a mark drawn round the digit: the same smaller digit, at the same place, alone."""
    return png(to_uint8(on_ground(smaller(cov, rng)[0], 255)))


def _circled(cov, i, rng):
    """A digit circled with a pen: an ellipse round its ink, clear of it, which the picture's edge may cut."""
    cov, (top, bottom, left, right) = smaller(cov, rng)
    half_h, half_w = (bottom - top) / 2 + 4, max(right - left, (bottom - top) / 2) / 2 + 4
    ry, rx = np.sqrt(2) * rng.uniform(1.05, 1.25) * np.array([half_h, half_w])
    cy, cx = (top + bottom) / 2, (left + right) / 2
    img = Image.fromarray(to_uint8(on_ground(cov, 255)))
    ImageDraw.Draw(img).ellipse([cx - rx, cy - ry, cx + rx, cy + ry], outline=int(rng.integers(0, 80)),
                                width=int(rng.integers(2, 8)))
    return png(np.asarray(img))


def _circled_touching(cov, i, rng):
    """A digit circled in haste: an ellipse round its ink drawn a little too small, so that it touches the digit or
    runs through its ends (the ring and the digit are one mark)."""
    cov, (top, bottom, left, right) = smaller(cov, rng)
    half_h, half_w = (bottom - top) / 2, max(right - left, (bottom - top) / 2) / 2
    ry, rx = np.sqrt(2) * rng.uniform(0.78, 0.92) * np.array([half_h, half_w])
    cy, cx = (top + bottom) / 2, (left + right) / 2
    img = Image.fromarray(to_uint8(on_ground(cov, 255)))
    ImageDraw.Draw(img).ellipse([cx - rx, cy - ry, cx + rx, cy + ry], outline=int(rng.integers(0, 80)),
                                width=int(rng.integers(2, 8)))
    return png(np.asarray(img))


def _boxed(cov, i, rng):
    """A box drawn round the digit with a pen, in the picture's middle, smaller than a frame (0.6 of the side)."""
    cov, (top, bottom, left, right) = smaller(cov, rng)
    gap = rng.uniform(6, 25)
    img = Image.fromarray(to_uint8(on_ground(cov, 255)))
    ImageDraw.Draw(img).rectangle([left - gap, top - gap, right + gap, bottom + gap], outline=int(rng.integers(0, 80)),
                                  width=int(rng.integers(2, 8)))
    return png(np.asarray(img))


def _boxed_touching(cov, i, rng):
    """A box drawn round the digit in haste: one side (in turn) runs into the digit's ink or along its edge, and
    another one half the time; the rest lie 4-20 pixels off it. The box and the digit are one mark."""
    cov, (top, bottom, left, right) = smaller(cov, rng)
    width = int(rng.integers(2, 8))
    gaps = rng.uniform(4, 20, 4)  # left, top, right, bottom: the box's outer edge this far off the ink
    touching = {i % 4} | ({int(rng.integers(0, 4))} if rng.random() < 0.5 else set())
    for side in touching:
        gaps[side] = rng.uniform(-2, width)  # the box's inner edge on the ink or up to 2 pixels into it
    img = Image.fromarray(to_uint8(on_ground(cov, 255)))
    ImageDraw.Draw(img).rectangle([left - gaps[0], top - gaps[1], right - 1 + gaps[2], bottom - 1 + gaps[3]],
                                  outline=int(rng.integers(0, 80)), width=width)
    return png(np.asarray(img))


def _underlined(cov, i, rng):
    """A digit underlined with a pen: a line a little askew under it, as wide as the digit or wider."""
    cov, (top, bottom, left, right) = smaller(cov, rng)
    y = bottom + rng.uniform(6, 20)
    img = Image.fromarray(to_uint8(on_ground(cov, 255)))
    ImageDraw.Draw(img).line([(left - rng.uniform(0, 20), y), (right + rng.uniform(0, 20), y + rng.uniform(-6, 6))],
                             fill=int(rng.integers(0, 80)), width=int(rng.integers(2, 8)))
    return png(np.asarray(img))


def _margin_line(cov, i, rng):
    """An exercise book's margin: one line from edge to edge beside the digit, clear of it (3-30 pixels), within
    a quarter of the picture of the edge with most room, across or down, red, grey or blue, 1-4 pixels, a little
    askew; every third a JPEG."""
    cov, (top, bottom, left, right) = smaller(cov, rng)
    h, w = cov.shape
    room = {"left": left, "right": w - right, "top": top, "bottom": h - bottom}
    side = max(room, key=room.get)
    gap = rng.uniform(3, 30)
    at = rng.uniform(3, max(min(0.24 * (w if side in ("left", "right") else h), room[side] - gap - 4), 4))
    at = {"left": at, "top": at, "right": w - 1 - at, "bottom": h - 1 - at}[side]
    tilt = rng.uniform(-4, 4)
    colour = [(220, 60, 60), (120, 120, 120), (60, 90, 200), (200, 40, 40)][i % 4]
    img = Image.fromarray(rgb(to_uint8(on_ground(cov, 255))))
    ends = [(at - tilt, -2), (at + tilt, h + 1)] if side in ("left", "right") else [(-2, at - tilt), (w + 1, at + tilt)]
    ImageDraw.Draw(img).line(ends, fill=colour, width=int(rng.integers(1, 5)))
    return jpeg(np.asarray(img), 85) if i % 3 == 2 else png(np.asarray(img))


def _margin_touching(cov, i, rng):
    """An exercise book's margin that the digit touches: one line from edge to edge along the digit's side nearest
    the picture's edge, across or down, from 2 pixels into its ink to touching it, a little askew (so it may run
    into the digit along part of its side), red, grey or blue, 1-4 pixels; every third a JPEG."""
    cov, (top, bottom, left, right) = smaller(cov, rng)
    h, w = cov.shape
    room = {"left": left, "right": w - right, "top": top, "bottom": h - bottom}
    side = min(room, key=room.get)
    width = int(rng.integers(1, 5))
    into = rng.uniform(-2, width / 2)  # how far the line's middle lies inside the ink's box (negative: outside)
    at = {"left": left + into, "top": top + into, "right": right - 1 - into, "bottom": bottom - 1 - into}[side]
    tilt = rng.uniform(-2, 2)
    colour = [(220, 60, 60), (120, 120, 120), (60, 90, 200), (200, 40, 40)][i % 4]
    img = Image.fromarray(rgb(to_uint8(on_ground(cov, 255))))
    ends = [(at - tilt, -2), (at + tilt, h + 1)] if side in ("left", "right") else [(-2, at - tilt), (w + 1, at + tilt)]
    ImageDraw.Draw(img).line(ends, fill=colour, width=width)
    return jpeg(np.asarray(img), 85) if i % 3 == 2 else png(np.asarray(img))


KINDS = {
    "plain": _plain,
    "thin frame": _thin_frame,
    "frame inset": _frame_inset,
    "colour frame": _colour_frame,
    "thick border": _thick_border,
    "partial frame": _partial_frame,
    "screenshot, light on dark, framed": _screenshot_dark,
    "gradient": _gradient,
    "vignette": _vignette,
    "shadow edge": _shadow,
    "uneven light": _uneven,
    "paper grain": _paper_grain,
    "JPEG noise": _jpeg_noise,
    "photo with margins": _photo_margin,
    "frame and shading": _frame_and_shade,
    "frame askew (3-10 degrees)": _frame_askew,
    "a side along the digit's": _frame_touching,
    "frame askew, corners cut off": _frame_cut,
    "smaller digit anywhere (the twin)": _smaller,
    "circled": _circled,
    "circled, the ring touching it": _circled_touching,
    "a box drawn round it": _boxed,
    "underlined": _underlined,
    "a margin line beside it": _margin_line,
    "a box touching it": _boxed_touching,
    "a margin line touching it": _margin_touching,
}

# The kinds with a mark drawn round a smaller digit: each picture is its twin's (the same digit, size and place,
# drawn from one seed) with the mark added, and its input is compared with the twin's, not the plain picture's.
TWIN = "smaller digit anywhere (the twin)"
SEEDS = {kind: TWIN for kind in ("circled", "circled, the ring touching it", "a box drawn round it", "underlined", "a margin line beside it",
                                         "a box touching it", "a margin line touching it", TWIN)}


def coverages(count, first=0, pen=True):
    """The digits every kind is made of: [(coverage float [SIDE, SIDE], label)], `count` of the sample's test digits
    from the `first`-th, then (pen) one pen-drawn digit of each of 0-9."""
    images, labels = sample_digits(count, first)
    found = [(coverage_of_mnist(image), int(label)) for image, label in zip(images, labels)]
    if pen:
        found += [(coverage_of_pen(d, seed=200 + d), d) for d in range(10)]
    return found


def pictures(kind, digits):
    """Every picture of one kind: [(file bytes, label)] for digits = coverages(...), in order, seeded by kind and index."""
    make = KINDS[kind]
    seed = sum(map(ord, SEEDS.get(kind, kind)))
    return [(make(cov, i, np.random.default_rng([seed, i])), label) for i, (cov, label) in enumerate(digits)]


def write_pictures(folder, named):
    """Write each (file name, picture bytes, label text) of `named` into folder (made when missing), and
    labels.txt: one `name label text` line each; returns how many."""
    os.makedirs(folder, exist_ok=True)
    lines = []
    for name, data, label in named:
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        lines.append(f"{name} {label}\n")
    with open(os.path.join(folder, "labels.txt"), "w", encoding="utf-8") as f:
        f.writelines(lines)
    return len(lines)


def write_all(folder, count=20):
    """Write every kind's pictures of `count` sample digits (and the pen digits) into folder; labels.txt: name label."""
    digits = coverages(count)
    return write_pictures(folder, ((kind.replace(" ", "-").replace(",", "") + f"-{i:03d}"
                                    + (".jpg" if data[:2] == b"\xff\xd8" else ".png"), data, label)
                                   for kind in KINDS for i, (data, label) in enumerate(pictures(kind, digits))))

if __name__ == "__main__":
    print(write_all(sys.argv[1]), "pictures written to", sys.argv[1])


def drawers(kinds, seeds, labelled):
    """picture(kind, image, i, label=None) and pictures(kind, images, labels) for a set of kinds of MNIST digits
    redrawn (others.py, student.py): kinds maps a kind's name to make(image, i, rng[, label=]) -> file bytes, seeds
    a kind to its twin's name (the same digit drawn plainly, from the twin's seed), labelled the kinds whose make
    takes the label. picture: the i-th picture (bytes) of the MNIST digit image (uint8 [28, 28]), seeded by the
    kind (or its twin's) and i; pictures: [(file bytes, label)] of images uint8 [n, 28, 28] and labels [n]."""
    def picture(kind, image, i, label=None):
        rng = np.random.default_rng([sum(map(ord, seeds.get(kind, kind))), i])
        if kind in labelled:
            return kinds[kind](image, i, rng, label=label)
        return kinds[kind](image, i, rng)

    def pictures(kind, images, labels):
        return [(picture(kind, image, i, int(label)), int(label))
                for i, (image, label) in enumerate(zip(images, labels))]
    return picture, pictures

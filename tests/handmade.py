"""Hand-made test photos of digits on paper, drawn with Pillow (no downloaded data).

Each digit 0-9 is drawn in every STYLES entry: pen strokes of different
widths and sizes, placed off-centre, on white, grey and dark paper, under a
lighting gradient with sensor noise, in a font, slanted, and as a rotated
phone JPEG whose EXIF orientation tag puts it upright again. The pictures
are deterministic (fixed seeds), so counts over them can be compared.

The same pen strokes also make pictures that are not one digit, and single
digits easy to mistake for them: several digits side by side or stacked,
font numbers, specks of dirt, digits in strokes that do not touch, pencil
broken by rough paper, dotted strokes.

Non-digits of kinds (made_non_digit, NON_DIGIT_KINDS: letters by pen and in
a font, filled shapes, outlines, a circle with a cross, smileys, stars,
scribbles, noise, several digits, a textured thing), each kind varied by a
seed, measure "that is not a digit" (bench/not_a_digit.py, tests/test_why.py).

A second set, PHONE_STYLES, is photos as a phone takes them: dark pen strokes
on a page shaded across (from one side, from the top, a vignette), softened
by the lens, with sensor noise, saved as JPEG (one as PNG).

  python tests/handmade.py OUTDIR   # writes both sets and OUTDIR/labels.txt
"""
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont


def _arc(cx, cy, rx, ry, start, end, n=24):
    """Points on an ellipse from angle start to end (degrees, 0 = right, 90 = down)."""
    angles = np.radians(np.linspace(start, end, n))
    return list(zip(cx + rx * np.cos(angles), cy + ry * np.sin(angles)))


# Pen strokes per digit: polylines in a unit box (x right, y down), written the way people write.
STROKES = {
    0: [_arc(0.5, 0.5, 0.3, 0.46, -100, 265, 40)],
    1: [[(0.35, 0.2), (0.55, 0.03), (0.55, 0.97)]],
    2: [_arc(0.5, 0.3, 0.3, 0.26, 190, 380, 20) + [(0.18, 0.96), (0.86, 0.96)]],
    3: [_arc(0.47, 0.26, 0.3, 0.23, 200, 450, 20) + _arc(0.47, 0.72, 0.33, 0.25, -90, 160, 20)],
    4: [[(0.32, 0.03), (0.15, 0.62), (0.88, 0.62)], [(0.68, 0.3), (0.68, 0.97)]],
    5: [[(0.82, 0.04), (0.3, 0.04), (0.24, 0.46)] + _arc(0.5, 0.68, 0.32, 0.28, -130, 150, 24)],
    6: [_arc(0.95, 0.62, 0.65, 0.6, 235, 180, 14) + _arc(0.52, 0.72, 0.25, 0.24, 180, 540, 30)],
    7: [[(0.12, 0.05), (0.86, 0.05), (0.4, 0.97)]],
    8: [_arc(0.5, 0.27, 0.24, 0.23, 0, 360, 30), _arc(0.5, 0.72, 0.3, 0.25, -90, 270, 30)],
    9: [_arc(0.48, 0.3, 0.28, 0.26, 0, 360, 30), [(0.76, 0.3), (0.7, 0.97)]],
}


def draw_digit(digit, size, stroke, slant=0.0, seed=None):
    """Ink coverage of one pen-drawn digit: float [size, size] in [0, 1], 4x supersampled.

    stroke: pen width as a fraction of size; slant: shear (0.2 leans
    right). seed: when given, a hand's unsteadiness: every point moves by up
    to 3 % of the height, the digit turns by up to 8 degrees and its width
    changes by up to 15 %.
    """
    return draw_strokes(STROKES[digit], size, stroke, slant, seed)


def draw_strokes(lines, size, stroke, slant=0.0, seed=None):
    """Ink coverage of pen strokes (polylines in a unit box, as in STROKES): float [size, size]; see draw_digit."""
    rng = np.random.default_rng(seed)
    wobble, turn, narrow = (0.03, 8, 0.15) if seed is not None else (0, 0, 0)
    squeeze = 1 + rng.uniform(-narrow, narrow)
    big = size * 4
    img = Image.new("L", (big, big), 0)
    pen = ImageDraw.Draw(img)
    width = max(1, round(stroke * big))
    margin = big * 0.1
    scale = big - 2 * margin
    for line in lines:
        line = np.array(line) + rng.uniform(-wobble, wobble, (len(line), 2)) if wobble else np.array(line)
        points = [(margin + (0.5 + (x - 0.5) * squeeze + slant * (0.5 - y)) * scale * 0.8 + scale * 0.1,
                   margin + y * scale) for x, y in line]
        pen.line(points, fill=255, width=width, joint="curve")
        for x, y in (points[0], points[-1]):
            pen.ellipse((x - width / 2, y - width / 2, x + width / 2, y + width / 2), fill=255)
    if turn:
        img = img.rotate(rng.uniform(-turn, turn), resample=Image.Resampling.BILINEAR)
    return np.asarray(img.resize((size, size), Image.Resampling.BOX), dtype=np.float64) / 255


def font_digit(digit, size):
    """Ink coverage of the digit in Pillow's bundled font, float [size, size] in [0, 1]."""
    font = ImageFont.load_default(size=round(size * 0.85))
    img = Image.new("L", (size, size), 0)
    ImageDraw.Draw(img).text((size / 2, size / 2), str(digit), fill=255, font=font, anchor="mm")
    return np.asarray(img, dtype=np.float64) / 255


def photo(ink, frame, place, paper, ink_level, gradient=0.0, noise=0.0, seed=0):
    """Lay ink coverage on paper: uint8 [h, w] grayscale picture.

    frame: (height, width); place: (row, col) of the digit's top-left corner;
    paper, ink_level: gray levels 0-255; gradient: light falls off by this
    fraction from the left edge to the right; noise: sensor noise std in gray levels.
    """
    h, w = frame
    coverage = np.zeros(frame)
    r, c = place
    coverage[r:r + ink.shape[0], c:c + ink.shape[1]] = ink
    picture = paper + (ink_level - paper) * coverage
    picture = picture * (1 - gradient * np.linspace(0, 1, w))[None, :]
    picture = picture + np.random.default_rng(seed).normal(0, noise, frame) if noise else picture
    return np.clip(np.round(picture), 0, 255).astype(np.uint8)


def exif_rotated_jpeg(array, path, blur=1.2):
    """Save uint8 [h, w] as a JPEG stored turned 90 degrees, as a phone held sideways does,
    with the EXIF orientation tag that turns it upright again; blur: a camera's softness in pixels."""
    img = Image.fromarray(array).filter(ImageFilter.GaussianBlur(blur)).transpose(Image.Transpose.ROTATE_90)
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 degrees clockwise to display
    img.save(path, quality=85, exif=exif)


# name: (picture of digit d, file format); sizes in pixels, paper and ink in gray levels.
# Every hand-drawn digit wobbles with its own seed (style number * 10 + digit).
STYLES = {
    "pen-centred": (lambda d: photo(draw_digit(d, 200, 0.09, seed=d), (300, 300), (50, 50), 245, 20), "png"),
    "thin-pen-off-centre": (lambda d: photo(draw_digit(d, 160, 0.025, seed=10 + d), (480, 640), (40, 420), 240, 30),
                            "png"),
    "marker-thick": (lambda d: photo(draw_digit(d, 220, 0.2, seed=20 + d), (300, 300), (40, 40), 250, 10), "png"),
    "small-in-corner": (lambda d: photo(draw_digit(d, 60, 0.1, seed=30 + d), (400, 400), (300, 20), 235, 40), "png"),
    "grey-paper": (lambda d: photo(draw_digit(d, 200, 0.08, seed=40 + d), (300, 300), (40, 60), 160, 55), "jpg"),
    "dark-paper": (lambda d: photo(draw_digit(d, 200, 0.1, seed=50 + d), (300, 300), (50, 50), 105, 25, noise=3), "jpg"),
    "pencil": (lambda d: photo(draw_digit(d, 180, 0.04, seed=60 + d), (300, 300), (60, 60), 235, 150, noise=4), "jpg"),
    "shadow-gradient": (lambda d: photo(draw_digit(d, 220, 0.08, seed=70 + d), (320, 420), (50, 100), 250, 25, 0.65, 4, d),
                        "png"),
    "font": (lambda d: photo(font_digit(d, 200), (300, 300), (50, 50), 240, 30), "png"),
    "slanted-pen": (lambda d: photo(draw_digit(d, 200, 0.08, 0.25, seed=90 + d), (300, 300), (50, 50), 245, 30), "png"),
    "phone-exif-rotated": (lambda d: photo(draw_digit(d, 420, 0.06, seed=100 + d), (900, 1200), (240, 380), 215, 45,
                                           0.35, 6, d), "exif"),
}



def shading(frame, bright, dim, direction):
    """A page's light: float [h, w], gray level `bright` falling to `dim` towards the far side.

    direction: "left" (light from the left), "right", "top", "diagonal"
    (from the top-left corner) or "vignette" (bright centre, dim corners).
    """
    h, w = frame
    x, y = np.linspace(0, 1, w)[None, :], np.linspace(0, 1, h)[:, None]
    fall = {"left": x + 0 * y, "right": 1 - x + 0 * y, "top": y + 0 * x, "diagonal": (x + y) / 2,
            "vignette": ((x - 0.5) ** 2 + (y - 0.5) ** 2) / 0.5}[direction]
    return bright + (dim - bright) * fall


def phone_shot(ink, frame, place, light, ink_level, blur, noise, seed):
    """Ink coverage photographed: uint8 [h, w], on a page shaded by light = (bright, dim, direction),
    softened by a Gaussian blur of `blur` pixels, with sensor noise of std `noise` gray levels."""
    coverage = np.zeros(frame)
    r, c = place
    coverage[r:r + ink.shape[0], c:c + ink.shape[1]] = ink
    paper = shading(frame, *light)
    picture = Image.fromarray(np.clip(np.round(paper + (ink_level - paper) * coverage), 0, 255).astype(np.uint8))
    picture = np.asarray(picture.filter(ImageFilter.GaussianBlur(blur)), dtype=np.float64)
    picture = picture + np.random.default_rng(seed).normal(0, noise, frame)
    return np.clip(np.round(picture), 0, 255).astype(np.uint8)


# name: (digit size, pen width, frame, place, light, ink, blur, noise, JPEG quality or None for PNG),
# sizes in pixels. The first is a shaded phone photo: 14-px strokes, 235 to 105 across, blur 1.5, noise 7.
PHONE_STYLES = {
    "phone-shaded-left": (300, 14, (480, 640), (90, 170), (235, 105, "left"), 20, 1.5, 7, 85),
    "phone-shaded-top": (280, 10, (480, 640), (100, 200), (230, 110, "top"), 30, 1.2, 6, 75),
    "phone-vignette": (300, 12, (480, 640), (80, 160), (240, 120, "vignette"), 25, 2.0, 8, 90),
    "phone-diagonal-png": (300, 16, (480, 640), (90, 250), (235, 100, "diagonal"), 20, 1.5, 8, None),
    "phone-large-thin": (720, 12, (1200, 1600), (240, 500), (230, 120, "left"), 30, 2.0, 6, 80),
    "phone-low-quality": (300, 14, (480, 640), (90, 170), (225, 115, "right"), 35, 1.0, 10, 50),
    "phone-pencil": (300, 9, (480, 640), (90, 170), (235, 140, "top"), 110, 1.2, 5, 85),
}


def make_phone_photos(folder):
    """Write every PHONE_STYLES x digit photo into folder; returns [(path, digit, style)] in a fixed order."""
    os.makedirs(folder, exist_ok=True)
    made = []
    for number, (style, (size, pen, frame, place, light, ink, blur, noise, quality)) in enumerate(PHONE_STYLES.items()):
        for digit in range(10):
            seed = 200 + 10 * number + digit
            array = phone_shot(draw_digit(digit, size, pen / size, seed=seed), frame, place, light, ink,
                               blur, noise, seed)
            path = os.path.join(folder, f"{style}-{digit}.{'png' if quality is None else 'jpg'}")
            Image.fromarray(array).save(path, **({} if quality is None else {"quality": quality}))
            made.append((path, digit, style))
    return made


# Digits written in strokes that do not touch, in a unit box as STROKES.
SEPARATE_STROKES = {
    "4-open": (4, [[(0.32, 0.03), (0.15, 0.62), (0.6, 0.62)], [(0.72, 0.25), (0.72, 0.97)]]),
    "4-crossing-apart": (4, [[(0.32, 0.03), (0.15, 0.62), (0.88, 0.62)], [(0.68, 0.3), (0.68, 0.52)],
                             [(0.68, 0.72), (0.68, 0.97)]]),
    "5-lifted-bar": (5, [[(0.82, 0.04), (0.32, 0.04)], [(0.24, 0.14), (0.24, 0.46)] + _arc(0.5, 0.68, 0.32, 0.28, -130, 150, 24)]),
    "7-crossbar": (7, [[(0.12, 0.05), (0.86, 0.05), (0.4, 0.97)], [(0.3, 0.5), (0.85, 0.5)]]),
    "7-bar-apart": (7, [[(0.12, 0.05), (0.86, 0.05), (0.4, 0.97)], [(0.3, 0.5), (0.55, 0.5)]]),
    "8-two-loops": (8, [_arc(0.5, 0.25, 0.22, 0.21, 0, 360, 30), _arc(0.5, 0.74, 0.28, 0.23, 0, 360, 30)]),
    "1-base": (1, [[(0.35, 0.2), (0.55, 0.03), (0.55, 0.85)], [(0.3, 0.97), (0.8, 0.97)]]),
    # Strokes side by side with a gap, together one digit wide (the bundled training digit 1875 is such a 9).
    "9-stem-apart": (9, [_arc(0.3, 0.3, 0.22, 0.25, 0, 360, 30) + [(0.46, 0.5), (0.4, 0.9)], [(0.8, 0.1), (0.78, 0.93)]]),
    "4-open-wide": (4, [[(0.3, 0.03), (0.12, 0.62), (0.5, 0.62)], [(0.72, 0.2), (0.72, 0.97)]]),
    "0-two-arcs": (0, [_arc(0.5, 0.5, 0.32, 0.46, 100, 260, 20), _arc(0.5, 0.5, 0.32, 0.46, -80, 80, 20)]),
    "7-bar-lifted": (7, [[(0.08, 0.05), (0.5, 0.05), (0.42, 0.3)], [(0.72, 0.02), (0.45, 0.97)]]),
    "5-bar-apart": (5, [[(0.5, 0.04), (0.9, 0.04)], [(0.3, 0.1), (0.24, 0.46)] + _arc(0.5, 0.68, 0.32, 0.28, -130, 150, 24)]),
    "1-dotted-i": (1, [[(0.5, 0.0), (0.5, 0.06)], [(0.5, 0.25), (0.5, 0.97)]]),
}


def rough_paper(ink, grain, keep, seed=0):
    """A pencil on rough paper: ink coverage with holes where the paper's grain (about `grain` pixels) is high.

    keep: share of the grain's range that takes the pencil (0.7: a few short breaks, 0.5: many).
    """
    rng = np.random.default_rng(seed)
    small = rng.random((max(2, round(ink.shape[0] / grain)), max(2, round(ink.shape[1] / grain))))
    texture = Image.fromarray(np.round(small * 255).astype(np.uint8)).resize(ink.shape[::-1], Image.Resampling.BICUBIC)
    return ink * (np.asarray(texture) < keep * 255)


def dotted_digit(digit, size, dot, spacing):
    """Ink coverage of a digit drawn as round dots of `dot` pixels every `spacing` pixels along its strokes."""
    big = size * 4
    img = Image.new("L", (big, big), 0)
    pen = ImageDraw.Draw(img)
    for line in STROKES[digit]:
        points = np.array([(big * (0.18 + 0.64 * x), big * (0.1 + 0.8 * y)) for x, y in line])
        along = np.concatenate([[0], np.cumsum(np.hypot(*np.diff(points, axis=0).T))])
        for at in np.arange(0, along[-1], spacing * 4):
            x, y = np.interp(at, along, points[:, 0]), np.interp(at, along, points[:, 1])
            pen.ellipse((x - dot * 2, y - dot * 2, x + dot * 2, y + dot * 2), fill=255)
    return np.asarray(img.resize((size, size), Image.Resampling.BOX), dtype=np.float64) / 255


def several_digits(digits, size, stroke, gap, layout="row", seed=0):
    """Ink coverage of several pen-drawn digits: float [h, w] in [0, 1].

    size, stroke: as draw_digit; gap: the clear space between neighbouring
    digits' boxes, as a fraction of size; layout: "row" (side by side),
    "stack" (one above the other) or "grid" (two per row).
    """
    across, down = size * (0.64 + gap), size * (0.8 + gap)  # draw_digit's ink box is 0.64 x 0.8 of size
    places = {"row": [(0, i * across) for i in range(len(digits))],
              "stack": [(i * down, 0) for i in range(len(digits))],
              "grid": [(i // 2 * down, i % 2 * across) for i in range(len(digits))]}[layout]
    places = [(round(r), round(c)) for r, c in places]
    coverage = np.zeros((max(r for r, _ in places) + size, max(c for _, c in places) + size))
    for number, (digit, (r, c)) in enumerate(zip(digits, places)):
        ink = draw_digit(digit, size, stroke, seed=seed + number)
        coverage[r:r + size, c:c + size] = np.maximum(coverage[r:r + size, c:c + size], ink)
    return coverage


def close_pair(digits, size, stroke, gap, seed=0):
    """Ink coverage of two pen-drawn digits side by side with `gap` (of the ink's height) between their inks.

    Unlike several_digits, which spaces whole digit boxes, the gap is
    measured between the strokes themselves: a 1 written tight beside another digit.
    """
    inks = []
    for number, digit in enumerate(digits):
        ink = draw_digit(digit, size, stroke, seed=seed + number)
        cols = np.nonzero(ink.max(axis=0) > 0.05)[0]
        inks.append(ink[:, cols[0]:cols[-1] + 1])
    rows = np.nonzero(inks[0].max(axis=1) > 0.05)[0]
    space = int(round(gap * (rows[-1] - rows[0])))
    coverage = np.zeros((size, inks[0].shape[1] + space + inks[1].shape[1]))
    coverage[:, :inks[0].shape[1]] = inks[0]
    coverage[:, inks[0].shape[1] + space:] = inks[1]
    return coverage


def font_number(text, size, frame):
    """Ink coverage of `text` in Pillow's bundled font at `size` points, centred in frame (height, width)."""
    img = Image.new("L", frame[::-1], 0)
    ImageDraw.Draw(img).text((frame[1] / 2, frame[0] / 2), text, fill=255, font=ImageFont.load_default(size=size),
                             anchor="mm")
    return np.asarray(img, dtype=np.float64) / 255


def specks(frame, count, radius, seed=0):
    """Ink coverage of `count` round specks of dirt, radius (low, high) pixels, scattered over frame (h, w)."""
    rng = np.random.default_rng(seed)
    h, w = frame
    img = Image.new("L", (w * 4, h * 4), 0)
    pen = ImageDraw.Draw(img)
    for _ in range(count):
        r, x, y = rng.uniform(*radius) * 4, rng.uniform(0.05, 0.95) * w * 4, rng.uniform(0.05, 0.95) * h * 4
        pen.ellipse((x - r, y - r, x + r, y + r), fill=255)
    return np.asarray(img.resize((w, h), Image.Resampling.BOX), dtype=np.float64) / 255

def make_photos(folder):
    """Write every STYLES x digit picture into folder; returns [(path, digit, style)] in a fixed order."""
    os.makedirs(folder, exist_ok=True)
    made = []
    for style, (make, kind) in STYLES.items():
        for digit in range(10):
            path = os.path.join(folder, f"{style}-{digit}.{'png' if kind == 'png' else 'jpg'}")
            if kind == "exif":
                exif_rotated_jpeg(make(digit), path)
            else:
                Image.fromarray(make(digit)).save(path, **({"quality": 90} if kind == "jpg" else {}))
            made.append((path, digit, style))
    return made


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Write the hand-made test photos and the phone photos (JPG/PNG "
                                                 "digits on paper) and their labels.txt into a folder.")
    parser.add_argument("folder", nargs="?", default="handmade", help="where to write them")
    out = parser.parse_args().folder
    photos = make_photos(out) + make_phone_photos(out)
    with open(os.path.join(out, "labels.txt"), "w") as f:
        f.writelines(f"{os.path.basename(p)} {d}\n" for p, d, _ in photos)
    print(f"wrote {len(photos)} pictures to {out}")


NON_DIGIT_LETTERS = "AEFHKMNRWX"  # letters that look like no digit (not O, I, S, Z, B, G, Q, ...)


def scribble(size, stroke, seed=0, turns=12):
    """Ink coverage of a pen's scribble: one stroke wandering through `turns` random points, float [size, size]."""
    rng = np.random.default_rng(seed)
    return draw_strokes([[tuple(p) for p in rng.uniform(0.05, 0.95, (turns, 2))]], size, stroke)


def non_digits(size=200, stroke=0.06, seeds=3):
    """Ink coverages that are not one digit, for "not a digit": {name: float [h, w] in [0, 1]}.

    Letters (NON_DIGIT_LETTERS, Pillow's font), shapes (a filled square, a
    square's outline, a triangle, a star, a cross-hatch), a dot, scribbles,
    blots of noise and two digits side by side (touching: one ink), each
    made here, none downloaded.
    """
    made = {f"letter {c}": font_number(c, round(size * 0.8), (size, size)) for c in NON_DIGIT_LETTERS}
    shapes = {"filled square": lambda pen: pen.rectangle((100, 100, 700, 700), fill=255),
              "square outline": lambda pen: pen.rectangle((100, 100, 700, 700), outline=255, width=50),
              "triangle": lambda pen: pen.polygon([(400, 80), (720, 700), (80, 700)], outline=255, width=50),
              "star": lambda pen: pen.line([(400, 60), (600, 720), (80, 300), (720, 300), (200, 720), (400, 60)],
                                           fill=255, width=50, joint="curve"),
              "cross-hatch": lambda pen: [pen.line([(a, 60), (a, 740)], fill=255, width=40) for a in (200, 400, 600)]
              + [pen.line([(60, a), (740, a)], fill=255, width=40) for a in (200, 400, 600)],
              "dot": lambda pen: pen.ellipse((360, 360, 440, 440), fill=255)}
    for name, draw in shapes.items():
        img = Image.new("L", (800, 800), 0)
        draw(ImageDraw.Draw(img))
        made[name] = np.asarray(img.resize((size, size), Image.Resampling.BOX), dtype=np.float64) / 255
    for seed in range(seeds):
        made[f"scribble {seed}"] = scribble(size, stroke, seed)
        rng = np.random.default_rng(100 + seed)
        blots = np.asarray(Image.fromarray((rng.random((8, 8)) > 0.5).astype(np.uint8) * 255).resize(
            (size, size), Image.Resampling.BILINEAR), dtype=np.float64) / 255
        made[f"noise {seed}"] = blots
        pair = (seed * 3 % 10, (seed * 7 + 1) % 10)
        made[f"two digits {pair[0]}{pair[1]}"] = close_pair(pair, size, stroke, gap=-0.02, seed=seed)
    return made


def on_paper(ink):
    """Ink coverage float [h, w] in [0, 1] as a picture: dark ink on white paper, uint8 [h, w]."""
    return np.round(255 * (1 - ink)).astype(np.uint8)


# Capital letters as a pen writes them, in a unit box as STROKES (none of them a digit's shape).
LETTER_STROKES = {
    "A": [[(0.1, 0.97), (0.5, 0.03), (0.9, 0.97)], [(0.28, 0.6), (0.72, 0.6)]],
    "E": [[(0.85, 0.03), (0.2, 0.03), (0.2, 0.97), (0.85, 0.97)], [(0.2, 0.5), (0.7, 0.5)]],
    "F": [[(0.85, 0.03), (0.2, 0.03), (0.2, 0.97)], [(0.2, 0.48), (0.7, 0.48)]],
    "H": [[(0.15, 0.03), (0.15, 0.97)], [(0.85, 0.03), (0.85, 0.97)], [(0.15, 0.5), (0.85, 0.5)]],
    "K": [[(0.2, 0.03), (0.2, 0.97)], [(0.85, 0.03), (0.2, 0.55)], [(0.38, 0.42), (0.88, 0.97)]],
    "M": [[(0.05, 0.97), (0.12, 0.03), (0.5, 0.7), (0.88, 0.03), (0.95, 0.97)]],
    "N": [[(0.12, 0.97), (0.12, 0.03), (0.88, 0.97), (0.88, 0.03)]],
    "R": [[(0.2, 0.97), (0.2, 0.03)] + _arc(0.45, 0.27, 0.3, 0.24, -90, 90, 16) + [(0.2, 0.51)],
          [(0.45, 0.51), (0.85, 0.97)]],
    "T": [[(0.05, 0.03), (0.95, 0.03)], [(0.5, 0.03), (0.5, 0.97)]],
    "W": [[(0.02, 0.03), (0.25, 0.97), (0.5, 0.35), (0.75, 0.97), (0.98, 0.03)]],
    "X": [[(0.1, 0.03), (0.9, 0.97)], [(0.9, 0.03), (0.1, 0.97)]],
    "Y": [[(0.1, 0.03), (0.5, 0.5), (0.9, 0.03)], [(0.5, 0.5), (0.5, 0.97)]],
}


def _shape(draw, size):
    """Ink coverage of draw(pen, big) on a 4x canvas (white ink on black), float [size, size] in [0, 1]."""
    big = size * 4
    img = Image.new("L", (big, big), 0)
    draw(ImageDraw.Draw(img), big)
    return np.asarray(img.resize((size, size), Image.Resampling.BOX), dtype=np.float64) / 255


def _star(cx, cy, r, points=5, turn=0.0):
    """A star drawn in one stroke: every second of `points` points on a circle, closed."""
    step = 2 if points % 2 else 1
    angles = [turn - np.pi / 2 + 2 * np.pi * step * i / points for i in range(points + 1)]
    return [(cx + r * np.cos(a), cy + r * np.sin(a)) for a in angles]


def made_non_digit(kind, seed, size=200, stroke=0.06):
    """Ink coverage of one non-digit of `kind` (NON_DIGIT_KINDS), varied by `seed`: float [size, ...] in [0, 1].

    Made here, none downloaded, each seed a different size, place, turn or
    hand; for measuring "that is not a digit" on pictures of kinds, not on a
    list of the same pictures (bench/not_a_digit.py, tests/test_why.py).
    """
    rng = np.random.default_rng(1000 + 97 * NON_DIGIT_KINDS.index(kind) + seed)
    u = rng.uniform
    pen = max(4, round(stroke * size * 4 * u(0.7, 1.4)))
    if kind == "pen letter":
        letter = sorted(LETTER_STROKES)[seed % len(LETTER_STROKES)]
        return draw_strokes(LETTER_STROKES[letter], size, stroke * u(0.7, 1.3), slant=u(-0.15, 0.15), seed=seed)
    if kind == "font letter":
        letters = "AEFHKMNPRUVWXY"
        letter = letters[(seed * 5) % len(letters)]
        ink = Image.fromarray(np.round(font_number(letter, round(size * u(0.6, 0.9)), (size, size)) * 255).astype(
            np.uint8))
        return np.asarray(ink.rotate(u(-12, 12), Image.Resampling.BILINEAR), dtype=np.float64) / 255
    if kind == "filled shape":
        s, cx, cy, turn = u(0.25, 0.4), u(0.4, 0.6), u(0.4, 0.6), u(0, 90)
        def draw(p, big):
            if seed % 3 == 2:
                p.ellipse((big * (cx - s), big * (cy - s * u(0.6, 1)), big * (cx + s), big * (cy + s)), fill=255)
            else:
                corners = [(cx + s * np.cos(np.radians(turn + a)) * 1.41, cy + s * np.sin(np.radians(turn + a)) * 1.41)
                           for a in (45, 135, 225, 315)] if seed % 3 == 1 else \
                    [(cx - s, cy - s * u(0.5, 1)), (cx + s, cy - s * u(0.5, 1)), (cx + s, cy + s), (cx - s, cy + s)]
                p.polygon([(big * x, big * y) for x, y in corners], fill=255)
        return _shape(draw, size)
    if kind == "outline":
        s, cx, cy = u(0.3, 0.42), u(0.45, 0.55), u(0.45, 0.55)
        def draw(p, big):
            box = [big * (cx - s), big * (cy - s * u(0.6, 1)), big * (cx + s), big * (cy + s)]
            if seed % 3 == 0:
                p.rectangle(box, outline=255, width=pen)
            elif seed % 3 == 1:
                p.polygon([(big * cx, box[1]), (box[2], box[3]), (box[0], box[3])], outline=255, width=pen)
            else:
                p.regular_polygon((big * cx, big * cy, big * s), 6, rotation=u(0, 60), outline=255, width=pen)
        return _shape(draw, size)
    if kind == "circle with a cross":
        s, c = u(0.3, 0.42), u(0.45, 0.55)
        def draw(p, big):
            p.ellipse((big * (c - s), big * (c - s), big * (c + s), big * (c + s)), outline=255, width=pen)
            d = s * (0.71 if seed % 2 else 1)
            for (x0, y0, x1, y1) in (((c - d, c - d, c + d, c + d), (c + d, c - d, c - d, c + d)) if seed % 2 else
                                     ((c - d, c, c + d, c), (c, c - d, c, c + d))):
                p.line((big * x0, big * y0, big * x1, big * y1), fill=255, width=pen)
        return _shape(draw, size)
    if kind == "smiley":
        s, c = u(0.32, 0.42), u(0.45, 0.55)
        def draw(p, big):
            p.ellipse((big * (c - s), big * (c - s), big * (c + s), big * (c + s)), outline=255, width=pen)
            for x in (c - s * 0.38, c + s * 0.38):
                e = s * u(0.08, 0.14)
                p.ellipse((big * (x - e), big * (c - s * 0.35 - e), big * (x + e), big * (c - s * 0.35 + e)), fill=255)
            p.arc((big * (c - s * 0.55), big * (c - s * 0.3), big * (c + s * 0.55), big * (c + s * 0.6)),
                  u(10, 30), u(150, 170), fill=255, width=pen)
        return _shape(draw, size)
    if kind == "star":
        points = (5, 7, 6)[seed % 3]
        def draw(p, big):
            line = [(big * x, big * y) for x, y in _star(0.5, 0.52, u(0.35, 0.44), points, u(-0.3, 0.3))]
            if points == 6:  # two triangles
                p.line(line[0::2] + [line[0]], fill=255, width=pen, joint="curve")
                p.line(line[1::2] + [line[1]], fill=255, width=pen, joint="curve")
            else:
                p.line(line, fill=255, width=pen, joint="curve")
        return _shape(draw, size)
    if kind == "scribble":
        return scribble(size, stroke * u(0.7, 1.3), seed=500 + seed, turns=int(u(8, 20)))
    if kind == "noise":
        cells = int(u(5, 14))
        small = rng.random((cells, cells)) > u(0.4, 0.6)
        return np.asarray(Image.fromarray(small.astype(np.uint8) * 255).resize((size, size), Image.Resampling.BILINEAR),
                          dtype=np.float64) / 255
    if kind == "several digits":
        count = 2 + seed % 2
        digits = [int(d) for d in rng.integers(0, 10, count)]
        if count == 2 and seed % 4 == 0:
            return close_pair(digits, size, stroke, gap=u(-0.03, 0.0), seed=seed)
        return several_digits(digits, size, stroke, gap=u(-0.15, -0.05), seed=seed)
    if kind == "texture":  # a photo of a textured thing (cloth, bark, gravel) filling most of the frame
        cells = int(u(12, 40))
        grain = np.asarray(Image.fromarray(np.round(rng.random((cells, cells)) * 255).astype(np.uint8)).resize(
            (size, size), Image.Resampling.BICUBIC), dtype=np.float64) / 255
        stripes = 0.5 + 0.5 * np.sin(np.linspace(0, u(6, 30), size)[:, None] * np.cos(u(0, 3)) +
                                     np.linspace(0, u(6, 30), size)[None, :] * np.sin(u(0, 3)))
        object_ = _shape(lambda p, big: p.ellipse((big * 0.12, big * 0.15, big * 0.88, big * 0.85), fill=255), size)
        return object_ * np.clip(0.35 + 0.45 * grain + 0.3 * stripes * (seed % 2), 0, 1)
    raise ValueError(f"no such kind of non-digit: {kind}")


NON_DIGIT_KINDS = ("pen letter", "font letter", "filled shape", "outline", "circle with a cross", "smiley", "star",
                   "scribble", "noise", "several digits", "texture")

"""Hand-made test photos of digits on paper, drawn with Pillow (no downloaded data).

Each digit 0-9 is drawn in every STYLES entry: pen strokes of different
widths and sizes, placed off-centre, on white, grey and dark paper, under a
lighting gradient with sensor noise, in a font, slanted, and as a rotated
phone JPEG whose EXIF orientation tag puts it upright again. The pictures
are deterministic (fixed seeds), so counts over them can be compared.

  python tests/handmade.py OUTDIR   # writes the pictures and OUTDIR/labels.txt
"""
import os
import sys

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

    stroke: pen width as a fraction of the digit height; slant: shear (0.2
    leans right). seed: when given, a hand's unsteadiness: every point moves
    by up to 3 % of the height, the digit turns by up to 8 degrees and its
    width changes by up to 15 %.
    """
    rng = np.random.default_rng(seed)
    wobble, turn, narrow = (0.03, 8, 0.15) if seed is not None else (0, 0, 0)
    squeeze = 1 + rng.uniform(-narrow, narrow)
    big = size * 4
    img = Image.new("L", (big, big), 0)
    pen = ImageDraw.Draw(img)
    width = max(1, round(stroke * big))
    margin = big * 0.1
    scale = big - 2 * margin
    for line in STROKES[digit]:
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

    parser = argparse.ArgumentParser(description="Write the hand-made test photos (JPG/PNG digits on paper) "
                                                 "and their labels.txt into a folder.")
    parser.add_argument("folder", nargs="?", default="handmade", help="where to write them")
    out = parser.parse_args().folder
    photos = make_photos(out)
    with open(os.path.join(out, "labels.txt"), "w") as f:
        f.writelines(f"{os.path.basename(p)} {d}\n" for p, d, _ in photos)
    print(f"wrote {len(photos)} pictures to {out}")

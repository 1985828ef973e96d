"""Digits as a student photographs, scans or screenshots them for the course, kinds no other set makes: an exercise
book's lines or squares, a date and an underline beside the digit, a thick marker or a fine pen, the digit at the
picture's very edge, a strong vignette, a phone's drawing app with its status bar, white on black at several
contrasts, faint pencil on grey paper, a JPEG of quality 10, and printed digits (fonts on this machine).

Issue 53 item 10: pictures from other people's repositories of the PKU course
(TensorFlow笔记), which the app never sees before. Each KIND redraws the
bundled sample's MNIST test digits (real handwriting) with a round pen along
their middle line (tests/penned.pen_shape) and photographs the page as
tests/others.py does (light falling off to one side, a lens's blur, noise),
changing one thing that a person reading the digit looks past:

  - the paper: an exercise book's ruled lines (light blue, a red margin),
    or its squares (a grid every 0.1-0.2 of the digit's height);
  - a date written small in a corner and a line under the digit;
  - the pen: a thick marker (2.2-3 times MNIST's stroke) or a fine pen
    (0.2-0.3), on the twin's page;
  - the place: the digit's ink touching one edge of the picture (a crop);
  - the light: a strong vignette (the corners 0.2-0.45 as bright);
  - a phone's screenshot of a drawing app: the status bar (time, signal,
    battery), a tool bar, the white canvas, the navigation bar;
  - white on black (a screen, an inverted scan): the ink 150-255, the
    ground 0-90, by contrast 60-255 levels;
  - pencil on grey paper 18-34 levels darker than it (fainter than
    tests/glance.py's 35-70);
  - the twin's photo saved as a JPEG of quality 10;
  - the label printed in a font of this machine (DejaVu, Liberation Sans and
    Serif: Arial's and Times' metrics) at several weights;
and the twin: the felt pen's photo on white, the same digit, pen, page and light as the kinds drawn from its seed
(SEEDS), so that what a kind loses is counted against it.

Every picture is deterministic (seeded by kind and index). bench/pictures.py
--set student reads them and counts the misreads the preparation makes:
pictures of digits the model reads right as MNIST's own 28x28 input.
"""
import glob
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

import framed
import penned

FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/truetype/liberation")
FONT_NAMES = ("DejaVuSans-ExtraLight", "DejaVuSans", "DejaVuSans-Bold", "DejaVuSerif", "DejaVuSerif-Bold",
              "DejaVuSansMono", "LiberationSans-Regular", "LiberationSans-Bold", "LiberationSerif-Regular",
              "LiberationSerif-Bold")


def fonts():
    """The paths of FONT_NAMES found on this machine (sorted as FONT_NAMES): [str], empty when none is."""
    found = {os.path.splitext(os.path.basename(p))[0]: p for d in FONT_DIRS for p in glob.glob(os.path.join(d, "*"))}
    return [found[name] for name in FONT_NAMES if name in found]


def _page(image, rng, width_range=(0.6, 1.0)):
    """The felt pen's digit on a page of 300-700 pixels: (coverage float [h, w], the paper's light float [h, w]);
    every kind drawn from the twin's seed gets the same digit, page and light."""
    width = rng.uniform(*width_range)
    side = int(rng.integers(300, 700))
    page, light = penned.on_page(penned.pen_shape(image, width), rng, side)
    return page, light


def _photo(page, light, rng, ink=25.0, blur=True):
    """The page photographed: the ink (level on white) on the light, a lens's blur, noise: uint8 [h, w]."""
    picture = framed.on_ground(page, light, ink=ink)
    if blur:
        picture = np.asarray(Image.fromarray(framed.to_uint8(picture)).filter(
            ImageFilter.GaussianBlur(rng.uniform(0.5, 1.2) * page.shape[0] / 300)), dtype=np.float64)
    return framed.to_uint8(framed.noisy(picture, rng.uniform(2, 4), int(rng.integers(1 << 30))))


def _save(picture, i, rng):
    """Every third a PNG, else a JPEG of quality 75-95: file bytes."""
    return framed.png(picture) if i % 3 == 0 else framed.jpeg(picture, int(rng.integers(75, 95)))


def _twin(image, i, rng):
    page, light = _page(image, rng)
    return _save(_photo(page, light, rng), i, rng)


def _pen(width_range):
    """make(image, i, rng): the twin's page with a pen of width_range times MNIST's stroke."""
    def make(image, i, rng):
        page, light = _page(image, rng, width_range)
        return _save(_photo(page, light, rng), i, rng)
    return make


def _lined(image, i, rng):
    """An exercise book's page: light blue lines every 0.3-0.5 of the digit's height, across it, a red margin line
    down the left 0.05-0.15 of the page; RGB."""
    page, light = _page(image, rng)
    height = penned._digit_height(page)
    lines = penned.lines_coverage(page.shape, rng.uniform(0.3, 0.5) * height, rng.uniform(1, 2.5) * page.shape[0] / 400,
                                  np.radians(rng.uniform(-1.5, 1.5)), rng, down=False)
    margin = np.zeros(page.shape)
    col = int(rng.uniform(0.05, 0.15) * page.shape[1])
    margin[:, col:col + max(1, page.shape[0] // 250)] = 1.0
    return _lines_photo(page, light, rng, i, [(lines, (150, 190, 235)), (margin, (230, 120, 120))])


def _squared(image, i, rng):
    """An exercise book's squares (方格本): a light grid every 0.1-0.2 of the digit's height; RGB."""
    page, light = _page(image, rng)
    height = penned._digit_height(page)
    grid = penned.lines_coverage(page.shape, rng.uniform(0.1, 0.2) * height, rng.uniform(1, 2) * page.shape[0] / 400,
                                 np.radians(rng.uniform(-1.5, 1.5)), rng)
    colour = ((150, 200, 160), (160, 180, 225), (175, 175, 175))[i % 3]
    return _lines_photo(page, light, rng, i, [(grid, colour)])


def _lines_photo(page, light, rng, i, lines):
    """The page with printed lines ([(coverage float [h, w], RGB colour)]) under the ink (25 on white), as a photo:
    RGB file bytes."""
    channels = []
    for c in range(3):
        ground = light.copy()
        for cover, colour in lines:
            ground = ground * (1 - cover * (1 - colour[c] / 255))
        channels.append(framed.on_ground(page, ground, ink=25))
    picture = Image.fromarray(framed.to_uint8(np.stack(channels, axis=2)))
    picture = picture.filter(ImageFilter.GaussianBlur(rng.uniform(0.5, 1.2) * page.shape[0] / 300))
    picture = framed.to_uint8(framed.noisy(np.asarray(picture, dtype=np.float64), rng.uniform(2, 4), i))
    return _save(picture, i, rng)


def _dated(image, i, rng):
    """The twin's digit underlined (a pen's line 0.9-1.3 of its width, a little askew, 0.05-0.15 of its height below
    it), and a date (like 3.15) written small (0.06-0.1 of the page) in a top or bottom corner."""
    page, light = _page(image, rng)
    rows, cols = np.nonzero(page > 0.2)
    top, bottom, left, right = rows.min(), rows.max(), cols.min(), cols.max()
    h, w = page.shape
    img = Image.fromarray(np.zeros(page.shape, np.uint8))
    draw = ImageDraw.Draw(img)
    y = min(bottom + rng.uniform(0.05, 0.15) * (bottom - top), h - 4)
    span = (right - left) * rng.uniform(0.9, 1.3)
    middle = (left + right) / 2
    tilt = rng.uniform(-0.04, 0.04) * span
    draw.line([(middle - span / 2, y - tilt), (middle + span / 2, min(y + tilt, h - 3))], fill=255,
              width=max(2, int(h / 120)))
    date = f"{int(rng.integers(1, 13))}.{int(rng.integers(1, 29))}"
    paths = fonts()
    size = int(rng.uniform(0.06, 0.1) * h)
    font = ImageFont.truetype(paths[i % len(paths)], size) if paths else ImageFont.load_default()
    corner_left = left > w / 2  # the corner away from the digit
    x = int(0.04 * w) if corner_left else int(w - 0.04 * w - size * 0.6 * len(date))
    y = int(0.03 * h) if top > h / 3 else int(h - 0.05 * h - size)
    draw.text((x, y), date, fill=255, font=font)
    marks = np.asarray(img, dtype=np.float64) / 255
    return _save(_photo(np.maximum(page, marks), light, rng), i, rng)


def _at_edge(image, i, rng):
    """The twin's photo cropped so that the digit's ink touches one edge (in turn: left, top, right, bottom)."""
    page, light = _page(image, rng)
    picture = _photo(page, light, rng)
    rows, cols = np.nonzero(page > 0.5)
    side = i % 4
    if side == 0:
        picture = picture[:, cols.min():]
    elif side == 1:
        picture = picture[rows.min():, :]
    elif side == 2:
        picture = picture[:, :cols.max() + 1]
    else:
        picture = picture[:rows.max() + 1, :]
    return _save(np.ascontiguousarray(picture), i, rng)


def _vignette(image, i, rng):
    """The twin's page under a lens's strong vignette: the light falls off with the distance from the middle to
    0.2-0.45 of it in the corners."""
    page, light = _page(image, rng)
    h, w = page.shape
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = np.hypot((y - h / 2) / (h / 2), (x - w / 2) / (w / 2)) / np.sqrt(2)
    corner = rng.uniform(0.2, 0.45)
    return _save(_photo(page, light * (1 - (1 - corner) * r ** 2), rng), i, rng)


STATUS_BARS = [((255, 255, 255), (0, 0, 0)), ((0, 0, 0), (255, 255, 255)), ((98, 0, 238), (255, 255, 255))]


def _phone_screenshot(image, i, rng):
    """A phone's screenshot of a drawing app: 360-420 pixels wide, 2.05-2.2 times as tall; the status bar (the time,
    the signal's bars, the battery; STATUS_BARS[i % 3]), a tool bar of a few coloured buttons, the white canvas with
    the digit drawn by a finger (a round brush 0.08-0.13 of the digit), the navigation bar; PNG, every third JPEG."""
    width = int(rng.integers(360, 421))
    height = int(width * rng.uniform(2.05, 2.2))
    bar, text = STATUS_BARS[i % len(STATUS_BARS)]
    status, tools, nav = int(width * 0.07), int(width * 0.14), int(width * 0.12)
    screen = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(screen)
    draw.rectangle([0, 0, width, status], fill=bar)
    draw.text((12, status // 2 - 5), "9:41", fill=text)
    for k in range(4):  # the signal's bars
        x = width - 70 + 5 * k
        draw.rectangle([x, status - 8 - 3 * k, x + 3, status - 6], fill=text)
    draw.rectangle([width - 40, status // 2 - 5, width - 16, status // 2 + 5], outline=text)  # the battery
    draw.rectangle([width - 38, status // 2 - 3, width - 24, status // 2 + 3], fill=text)
    draw.rectangle([0, status, width, status + tools], fill=(242, 242, 247))
    for k, colour in enumerate(((0, 0, 0), (230, 40, 40), (40, 110, 230), (40, 170, 70))):
        x, y = 20 + k * 50, status + tools // 2
        draw.ellipse([x, y - 14, x + 28, y + 14], fill=colour)
    draw.text((width - 80, status + tools // 2 - 5), "Clear  Save", fill=(0, 0, 0))
    draw.rectangle([0, height - nav, width, height], fill=(250, 250, 250))
    for k in range(3):
        x = width * (k + 1) // 4
        draw.rectangle([x - 8, height - nav // 2 - 8, x + 8, height - nav // 2 + 8], outline=(60, 60, 60), width=2)
    area = height - status - tools - nav
    size = int(width * rng.uniform(0.5, 0.9))
    top = status + tools + int(rng.uniform(0, area - size))
    left = int(rng.uniform(0, width - size))
    stroke = penned.pen_shape(image, rng.uniform(1.0, 1.5))
    digit = Image.fromarray(framed.to_uint8(stroke * 255)).resize((size, size), Image.Resampling.BILINEAR)
    gray = np.asarray(screen, dtype=np.float64)
    cover = np.zeros(gray.shape[:2])
    cover[top:top + size, left:left + size] = np.asarray(digit, dtype=np.float64) / 255
    picture = framed.to_uint8(gray * (1 - cover[..., None]))
    return framed.jpeg(picture, int(rng.integers(80, 95))) if i % 3 == 2 else framed.png(picture)


def _inverted(image, i, rng):
    """White on black: the twin's page with its levels turned, the ink at 150-255 on a ground of 0-90 (in turn a
    contrast of about 255, 180, 120 or 60 levels), blur and noise: a screen's photo or an inverted scan."""
    page, light = _page(image, rng)
    contrast = (255, 180, 120, 60)[i % 4]
    ground = rng.uniform(0, min(90, 255 - contrast))
    ink = ground + contrast * rng.uniform(0.95, 1.0)
    picture = ground + page * (ink - ground)
    picture = np.asarray(Image.fromarray(framed.to_uint8(picture)).filter(
        ImageFilter.GaussianBlur(rng.uniform(0.5, 1.2) * page.shape[0] / 300)), dtype=np.float64)
    return _save(framed.to_uint8(framed.noisy(picture, rng.uniform(2, 4), i)), i, rng)


def _faint_pencil(image, i, rng):
    """Pencil on grey paper (140-190), 18-34 levels darker, grainy (a stroke covers 0.6-1 of the paper under it),
    a little blur and noise."""
    page, light = _page(image, rng, (0.5, 0.9))
    paper = rng.uniform(140, 190)
    grain = np.random.default_rng(int(rng.integers(1 << 30))).uniform(0.6, 1.0, page.shape)
    picture = paper * light / light.max() - page * grain * rng.uniform(18, 34)
    picture = np.asarray(Image.fromarray(framed.to_uint8(picture)).filter(ImageFilter.GaussianBlur(0.8)),
                         dtype=np.float64)
    return _save(framed.to_uint8(framed.noisy(picture, rng.uniform(1.5, 3), i)), i, rng)


def _jpeg10(image, i, rng):
    """The twin's photo saved as a JPEG of quality 10."""
    page, light = _page(image, rng)
    picture = _photo(page, light, rng)
    rng.integers(75, 95)  # the twin's quality, drawn so that nothing else moves
    return framed.jpeg(picture, 10)


def _printed(image, i, rng, label=None):
    """The label printed in fonts()[i % n] black on white (a word processor's page or a screenshot), the digit
    0.3-0.7 of a 200-500 pixel picture, anywhere on it; anti-aliased, PNG (every third a JPEG)."""
    paths = fonts()
    side = int(rng.integers(200, 500))
    size = int(side * rng.uniform(0.3, 0.7))
    img = Image.new("L", (side, side), 255)
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(paths[i % len(paths)], size) if paths else ImageFont.load_default()
    box = draw.textbbox((0, 0), str(label), font=font)
    w, h = box[2] - box[0], box[3] - box[1]
    x = rng.uniform(0, max(side - w, 1)) - box[0]
    y = rng.uniform(0, max(side - h, 1)) - box[1]
    draw.text((x, y), str(label), fill=0, font=font)
    picture = np.asarray(img)
    return framed.jpeg(picture, 85) if i % 3 == 2 else framed.png(picture)


TWIN = "felt pen on white (the twin)"
PRINTED = "printed digit (10 fonts and weights)"
KINDS = {
    TWIN: _twin,
    "exercise book, ruled, red margin": _lined,
    "exercise book, squared (0.1-0.2)": _squared,
    "a date in a corner, underlined": _dated,
    "thick marker (2.2-3.0)": _pen((2.2, 3.0)),
    "fine pen (0.2-0.3)": _pen((0.2, 0.3)),
    "ink touching the picture's edge": _at_edge,
    "strong vignette (corners 0.2-0.45)": _vignette,
    "phone screenshot of a drawing app": _phone_screenshot,
    "white on black (contrast 60-255)": _inverted,
    "pencil on grey paper (18-34 levels)": _faint_pencil,
    "JPEG quality 10": _jpeg10,
    PRINTED: _printed,
}
# Drawn from the twin's seed: the same digit, pen, page and light.
SEEDS = {kind: TWIN for kind in ("exercise book, ruled, red margin", "exercise book, squared (0.1-0.2)",
                                 "a date in a corner, underlined", "ink touching the picture's edge",
                                 "strong vignette (corners 0.2-0.45)", "white on black (contrast 60-255)",
                                 "JPEG quality 10")}
LABELLED = {PRINTED}  # kinds whose drawing depends on the label


picture, pictures = framed.drawers(KINDS, SEEDS, LABELLED)

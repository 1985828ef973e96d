"""Digits as other students put them in their course repositories, kinds no other set makes: coloured ink, a
drawing app's transparent canvas, every file format and mode Pillow writes, a phone's turned photo, a Windows
Paint BMP, notebook paper photographed at an angle, an upscaled phone photo, a screenshot with its window, 1-pixel
strokes, European digits (made here, no download).

Issue 53 item 10: pictures from other people's repositories of the PKU course
(TensorFlow笔记), which the app never sees before. Each KIND redraws the
bundled sample's MNIST test digits (real handwriting) along their middle line
(tests/painted.middle_line) with a round pen, as tests/painted.py and
tests/glance.py do, and changes one thing that the digit's reader (a person)
looks past:

  - the ink's colour: a blue or red ballpoint, a green marker, a pencil's
    gray, on white or on cream paper, photographed (blur, noise, JPEG);
  - the file: RGBA from a canvas (black or white strokes, alpha 0 elsewhere,
    the transparent pixels black as a browser's canvas leaves them), LA,
    palette (P), 1-bit, 16-bit (I;16) PNG, CMYK and progressive JPEG, GIF,
    WebP, a phone JPEG stored turned with its EXIF orientation (6, 8, 3);
  - a Windows Paint BMP: 28x28 or a large canvas, a hard brush of 1-5
    pixels, black on white, every fourth white on black;
  - notebook paper (lined or squared) photographed at an angle: the page in
    perspective, the table round it;
  - a phone photo of 40-80 pixels upscaled to 400-800 (a chat app's copy);
  - a screenshot of the paint window: a title bar with its buttons, a menu
    bar, the window's frame;
  - strokes of 1 pixel on a 280x280 canvas;
  - European digits: a 7 crossed in its middle, a 1 with a long flag;
and the twin: the brush digit black on white as a PNG, the same digit, size
and place as the file kinds, so that what a kind loses is counted against it.

Every picture is deterministic (seeded by kind and index). bench/pictures.py
--set others reads them and counts the misreads the preparation makes:
pictures of digits the model reads right as MNIST's own 28x28 input.
"""
import io

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

import framed
import painted
import penned


def _brush(image, rng, side_range=(250, 500), size_range=(0.5, 0.85), brush_range=(0.07, 0.14), smooth=True):
    """The digit's middle line drawn black on white with a round brush: uint8 [h, w] (square canvas of side_range,
    the digit size_range of it, anywhere on it, a brush of brush_range of the digit's size)."""
    side = int(rng.integers(*side_range))
    size = int(side * rng.uniform(*size_range))
    top, left = int(rng.uniform(0, side - size)), int(rng.uniform(0, side - size))
    return painted.paint(painted.middle_line(image), (side, side), top, left, size, rng.uniform(*brush_range) * size,
                         smooth)


def _saved(img, fmt, **options):
    """A PIL image saved in `fmt` with Pillow's options: file bytes."""
    buffer = io.BytesIO()
    img.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def _twin(image, i, rng):
    return framed.png(_brush(image, rng))


def _file_kind(convert, fmt, **options):
    """make(image, i, rng): the twin's brush digit, converted (convert: uint8 gray [h, w] -> PIL image) and saved as
    `fmt`."""
    def make(image, i, rng):
        return _saved(convert(_brush(image, rng)), fmt, **options)
    return make


def _rgba_black(gray):
    """A canvas's export: black strokes (alpha = darkness), every transparent pixel (0, 0, 0, 0)."""
    return Image.fromarray(np.dstack([np.zeros(gray.shape + (3,), np.uint8), 255 - gray]), mode="RGBA")


def _rgba_white(gray):
    """White strokes on a transparent canvas, the transparent pixels black (0, 0, 0, 0)."""
    colour = np.where(gray < 255, 255, 0).astype(np.uint8)
    return Image.fromarray(np.dstack([colour, colour, colour, 255 - gray]), mode="RGBA")


def _la(gray):
    return Image.fromarray(np.dstack([np.zeros_like(gray), 255 - gray]), mode="LA")


def _palette(gray):
    return Image.fromarray(framed.rgb(gray)).quantize(16)


def _one_bit(gray):
    return Image.fromarray(gray).convert("1", dither=Image.Dither.NONE)


def _sixteen(gray):
    return Image.fromarray(gray.astype(np.uint16) * 257)


def _cmyk(gray):
    return Image.fromarray(framed.rgb(gray)).convert("CMYK")


def _rgb(gray):
    return Image.fromarray(framed.rgb(gray))


def _exif_turned(image, i, rng):
    """A pen photo (tests/penned.py's felt pen) stored turned, with the EXIF orientation 6, 8 or 3 that turns it
    upright, as phones save JPEGs."""
    orientation = (6, 8, 3)[i % 3]
    upright = Image.fromarray(_pen_photo(image, rng, (30, 30, 30), (255, 255, 255)))
    stored = upright.transpose({6: Image.Transpose.ROTATE_90, 8: Image.Transpose.ROTATE_270,
                                3: Image.Transpose.ROTATE_180}[orientation])
    exif = Image.Exif()
    exif[0x0112] = orientation
    return _saved(stored, "JPEG", quality=int(rng.integers(70, 95)), exif=exif)


def _pen_photo(image, rng, ink, paper, width_range=(0.4, 1.0), texture=None):
    """A pen's digit photographed on a page: RGB uint8 [h, w, 3]; ink, paper: RGB colours, the page's light falling
    off to one side, a lens's blur, noise; texture: the least share of a graphite stroke that covers the paper
    (the rest shows through), None for ink."""
    cov = penned.pen_shape(image, rng.uniform(*width_range))
    side = int(rng.integers(250, 800))
    page, light = penned.on_page(cov, rng, side)
    if texture is not None:
        page = page * np.random.default_rng(int(rng.integers(1 << 30))).uniform(texture, 1.0, page.shape)
    channels = [framed.on_ground(page, light / 255 * level, ink=255 * min(colour / level, 1.0))
                for colour, level in zip(ink, paper)]
    picture = Image.fromarray(framed.to_uint8(np.stack(channels, axis=2)))
    picture = picture.filter(ImageFilter.GaussianBlur(rng.uniform(0.5, 1.5) * side / 300))
    return framed.to_uint8(framed.noisy(np.asarray(picture, dtype=np.float64), rng.uniform(2, 5),
                                        int(rng.integers(1 << 30))))


def _coloured(ink, paper, width_range=(0.4, 1.0), texture=None):
    """make(image, i, rng): a pen photo of ink on paper (RGB), every third a PNG, else a JPEG of quality 70-95."""
    def make(image, i, rng):
        picture = _pen_photo(image, rng, ink, paper, width_range, texture)
        return framed.png(picture) if i % 3 == 0 else framed.jpeg(picture, int(rng.integers(70, 95)))
    return make


def _paint_bmp(canvas_range, brush_range):
    """make(image, i, rng): Windows Paint's pencil or brush (no smoothing) of brush_range pixels on a canvas of
    canvas_range pixels, the digit 0.5-0.95 of it, saved as a 24-bit BMP; every fourth white on black."""
    def make(image, i, rng):
        side = int(rng.integers(*canvas_range))
        size = int(round(side * rng.uniform(0.5, 0.95)))
        top, left = int(rng.uniform(0, side - size + 1)), int(rng.uniform(0, side - size + 1))
        brush = float(rng.integers(brush_range[0], brush_range[1] + 1))
        gray = painted.paint(painted.middle_line(image), (side, side), top, left, size, brush, smooth=False)
        if i % 4 == 3:
            gray = 255 - gray
        return _saved(Image.fromarray(framed.rgb(gray)), "BMP")
    return make


def _notebook_angle(image, i, rng):
    """A felt pen's digit on lined or squared notebook paper (lines every 0.2-0.4 of the digit), photographed at an
    angle: the page in perspective (its far side 0.7-0.9 as wide), the table (gray 60-140) round it, JPEG."""
    cov = penned.pen_shape(image, rng.uniform(0.5, 1.0))
    side = int(rng.integers(300, 700))
    page, light = penned.on_page(cov, rng, side)
    height = penned._digit_height(page)
    lines = penned.lines_coverage(page.shape, rng.uniform(0.2, 0.4) * height, rng.uniform(1, 2.5) * side / 400,
                                  np.radians(rng.uniform(-2, 2)), rng, down=bool(i % 2))
    line_colour = np.array(penned.LINE_INKS[i % 3][0], dtype=np.float64)
    channels = [framed.on_ground(page, light * (1 - lines * 0.8 * (1 - level / 255)), ink=25) for level in line_colour]
    flat = Image.fromarray(framed.to_uint8(np.stack(channels, axis=2)))
    w, h = flat.size
    squeeze, margin = rng.uniform(0.05, 0.15), rng.uniform(0.03, 0.1)
    near = [(-margin * w, -margin * h), (w * (1 + margin), -margin * h)]
    far = [(w * (1 + margin + squeeze), h * (1 + margin)), (-w * (margin + squeeze), h * (1 + margin))]
    corners = near + far if i % 2 else [(x, h - y) for x, y in far[::-1] + near[::-1]]
    table = tuple(int(v) for v in rng.integers(60, 140, 3))
    coefficients = _perspective(corners, [(0, 0), (w, 0), (w, h), (0, h)])
    tilted = flat.transform((w, h), Image.Transform.PERSPECTIVE, coefficients, Image.Resampling.BILINEAR,
                            fillcolor=table)
    picture = framed.noisy(np.asarray(tilted.filter(ImageFilter.GaussianBlur(side / 400)), dtype=np.float64),
                           rng.uniform(2, 5), i)
    return framed.jpeg(framed.to_uint8(picture), int(rng.integers(70, 95)))


def _perspective(source, target):
    """Pillow's PERSPECTIVE coefficients (8 floats) that map each output point of `target` to `source` (4 (x, y)
    each): the picture whose corners are `source` is stretched onto `target`."""
    rows, values = [], []
    for (x, y), (u, v) in zip(target, source):
        rows += [[x, y, 1, 0, 0, 0, -u * x, -u * y], [0, 0, 0, x, y, 1, -v * x, -v * y]]
        values += [u, v]
    return np.linalg.solve(np.array(rows, dtype=np.float64), np.array(values, dtype=np.float64))


def _upscaled(image, i, rng):
    """A pen photo of 40-80 pixels a side, upscaled 6-12 times (bilinear or bicubic) as a chat app or an editor
    enlarges it, then saved as a JPEG of quality 70-95."""
    small = Image.fromarray(_pen_photo(image, rng, (30, 30, 35), (240, 240, 235), (0.6, 1.2)))
    side = int(rng.integers(40, 81))
    small = small.resize((side, int(side * small.height / small.width)), Image.Resampling.BOX)
    factor = rng.uniform(6, 12)
    big = small.resize((int(small.width * factor), int(small.height * factor)),
                       (Image.Resampling.BILINEAR, Image.Resampling.BICUBIC)[i % 2])
    return framed.jpeg(np.asarray(big), int(rng.integers(70, 95)))


TITLE_BARS = [((0, 120, 215), (255, 255, 255)), ((240, 240, 240), (0, 0, 0)), ((32, 32, 32), (255, 255, 255)),
              ((220, 220, 220), (40, 40, 40))]  # (bar, its text and buttons): Windows 10's blue, light, dark; a Mac's


def window_round(canvas, i, rng):
    """A paint window round a canvas (uint8 gray [h, w]), screenshot whole: (RGB uint8 [H, W, 3], the canvas's (top,
    left) in it). A title bar (24-34 pixels, TITLE_BARS[i % 4]) with a title and the minimise, maximise and close
    buttons, a menu bar, the work area round the canvas (dark gray for odd i, light gray-blue for even), the
    window's 1-pixel frame."""
    bar, text = TITLE_BARS[i % len(TITLE_BARS)]
    title, menu, pad = int(rng.integers(24, 35)), int(rng.integers(18, 26)), int(rng.integers(6, 40))
    width = canvas.shape[1] + 2 * pad + int(rng.integers(0, 200))
    height = title + menu + canvas.shape[0] + 2 * pad + int(rng.integers(0, 60))
    window = Image.new("RGB", (width, height), (171, 171, 171) if i % 2 else (200, 205, 215))
    draw = ImageDraw.Draw(window)
    draw.rectangle([0, 0, width - 1, title - 1], fill=bar)
    draw.text((title + 6, title // 2 - 5), "untitled - Paint", fill=text)
    draw.rectangle([4, 4, title - 5, title - 5], outline=text)  # the app's icon
    for k, glyph in enumerate(("x", "[]", "_")):
        draw.text((width - (k + 1) * 46 + 18, title // 2 - 5), glyph, fill=text)
    draw.rectangle([0, title, width - 1, title + menu - 1], fill=(245, 245, 245))
    for k, word in enumerate(("File", "Edit", "View", "Image", "Colors", "Help")):
        draw.text((8 + 48 * k, title + menu // 2 - 5), word, fill=(0, 0, 0))
    window.paste(Image.fromarray(canvas).convert("RGB"), (pad, title + menu + pad))
    draw.rectangle([0, 0, width - 1, height - 1], outline=(100, 100, 100))
    return np.asarray(window), (title + menu + pad, pad)


def _screenshot(image, i, rng):
    """The twin's brush digit on the white canvas (200-400 pixels) of a paint window (window_round), screenshot
    whole: PNG, every third a JPEG of quality 80-95."""
    picture, _ = window_round(_brush(image, rng, side_range=(200, 400)), i, rng)
    return framed.jpeg(picture, int(rng.integers(80, 95))) if i % 3 == 2 else framed.png(picture)


def _one_pixel(image, i, rng):
    """A 1-pixel pencil on a 280x280 canvas, the digit 0.55-0.9 of it, hard-edged or anti-aliased; PNG."""
    size = int(280 * rng.uniform(0.55, 0.9))
    top, left = int(rng.uniform(0, 280 - size)), int(rng.uniform(0, 280 - size))
    return framed.png(painted.paint(painted.middle_line(image), (280, 280), top, left, size, 1.0, smooth=bool(i % 2)))


def european(segments, label):
    """A 7 crossed in its middle, a 1 with a long flag (0.3-0.4 of its height down from its top), as written in much
    of Europe: segments float [n, 2, 2] (painted.middle_line's) with the mark added; other digits unchanged."""
    if label not in (1, 7):
        return segments
    points = segments.reshape(-1, 2)
    top, bottom = points[:, 0].min(), points[:, 0].max()
    tall = bottom - top
    if label == 7:  # the stem's column half way down, a bar across it
        middle = points[np.abs(points[:, 0] - (top + bottom) / 2) < 0.08 * tall]
        row, col = (top + bottom) / 2, middle[:, 1].mean() if len(middle) else points[:, 1].mean()
        mark = np.linspace([row, col - 0.22 * tall], [row + 0.02 * tall, col + 0.22 * tall], 24)
    else:  # from the top of the stroke, down to the left
        start = points[np.argmin(points[:, 0])]
        mark = np.linspace(start, start + [0.35 * tall, -0.3 * tall], 24)
    return np.concatenate([segments, np.stack([mark[:-1], mark[1:]], axis=1)])


def _european(image, i, rng, label=None):
    side = int(rng.integers(250, 500))
    size = int(side * rng.uniform(0.5, 0.85))
    top, left = int(rng.uniform(0, side - size)), int(rng.uniform(0, side - size))
    segments = european(painted.middle_line(image), label)
    return framed.png(painted.paint(segments, (side, side), top, left, size, rng.uniform(0.07, 0.14) * size))


TWIN = "brush on white, PNG (the twin)"
KINDS = {
    TWIN: _twin,
    "blue ballpoint on white": _coloured((25, 45, 150), (250, 250, 250), (0.35, 0.6)),
    "red pen on cream paper": _coloured((190, 30, 35), (245, 236, 205)),
    "green marker on white": _coloured((30, 150, 60), (248, 248, 248), (1.0, 1.6)),
    "pencil's gray on white (grainy)": _coloured((120, 120, 125), (245, 245, 245), (0.4, 0.8), texture=0.5),
    "blue ink on cream paper": _coloured((40, 70, 170), (240, 228, 190)),
    "RGBA canvas, black strokes, transparent": _file_kind(_rgba_black, "PNG"),
    "RGBA canvas, white strokes, transparent": _file_kind(_rgba_white, "PNG"),
    "LA PNG, strokes in alpha": _file_kind(_la, "PNG"),
    "palette PNG (16 colours)": _file_kind(_palette, "PNG"),
    "1-bit PNG": _file_kind(_one_bit, "PNG"),
    "16-bit PNG (I;16)": _file_kind(_sixteen, "PNG"),
    "CMYK JPEG": _file_kind(_cmyk, "JPEG", quality=90),
    "progressive JPEG": _file_kind(_rgb, "JPEG", quality=80, progressive=True),
    "GIF": _file_kind(_palette, "GIF"),
    "WebP": _file_kind(_rgb, "WEBP", quality=75),
    "phone JPEG with EXIF orientation 6/8/3": _exif_turned,
    "Paint BMP 28x28, 1-2 px": _paint_bmp((28, 29), (1, 2)),
    "Paint BMP large canvas, 1-5 px": _paint_bmp((200, 800), (1, 5)),
    "notebook paper at an angle": _notebook_angle,
    "low-res photo upscaled (40-80 px)": _upscaled,
    "screenshot with the window's title bar": _screenshot,
    "1-px strokes at 280x280": _one_pixel,
    "European 7 and 1": _european,
}
# Drawn from the twin's seed: the same digit, brush, size and place, in another file.
SEEDS = {kind: TWIN for kind, make in KINDS.items() if getattr(make, "__qualname__", "").startswith("_file_kind")}
LABELLED = {"European 7 and 1"}  # kinds whose drawing depends on the label


picture, pictures = framed.drawers(KINDS, SEEDS, LABELLED)

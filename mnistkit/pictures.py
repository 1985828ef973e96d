"""Pictures in, network inputs out: the app's two preparations of a user's own picture.

mnist_app.pre_pic is the course's step; this is how it reads a picture
(any mode, size and orientation) and turns it into the 28x28 input MNIST
digits have: `mnist` evens the lighting, finds the ink (Otsu's threshold)
and crops, scales and centres the digit as MNIST was built; `course`
resizes the whole picture and cuts it at a fixed threshold, as the course
did. Both refuse a picture with no digit-like stroke (find_ink). Also the
app's file handling: the pictures a folder holds, --show-input's files.
"""
import os

import numpy as np
from PIL import Image, ImageFilter, ImageOps, UnidentifiedImageError

from . import files
from .errors import DataError
from .images import to_8bit
from .records import IMAGE_PIXELS

THRESHOLD = 50  # course: after inversion, below is background (0), the rest is stroke (255)


IMAGE_SIZE = 28
PREPROCESS = ("mnist", "course")
# MNIST's construction (and measurements on the bundled sample): the digit is
# scaled to fit DIGIT_BOX, its centre of mass lands on pixel (14, 14), and
# the median stroke is about 2 pixels wide.
DIGIT_BOX = 20
CENTRE = 14
STROKE_WIDTH = 2.0
SUPERSAMPLE = 4  # the digit is shaped at 4x its final size, then averaged down: MNIST's grey edges
MAX_SIDE = 2048  # larger photos are reduced first; a pen stroke still spans pixels
LIGHTING_GRID = 8  # paper brightness is estimated on an 8x8 grid: cells wider than a pen stroke
MIN_CONTRAST = 40  # gray levels (of 255) the darkest ink must lie below its paper
# What makes ink a digit-like stroke (find_ink); measured on tests/handmade.py's
# 110 photos and 2,000 MNIST digits against flat, shaded, noisy and ink-covered
# pages (tests/test_trust_data.py):
NOISE_MARGIN = 10  # the ink's mean darkness, in standard deviations of the picture's pixel noise (photos: >= 22, noise: <= 8)
MAX_INK_FRACTION = 0.5  # of the picture (photos: <= 0.24; a page covered in ink: >= 0.66)
MIN_SEPARATION = 0.76  # Otsu's separability of ink from paper (photos: >= 0.79; evenly spread shades: 0.75, gradients: <= 0.74)
CROP_TAIL = 0.002  # ink mass ignored on each side when cropping, so a speck of dirt does not set the box


def load_picture(picName):
    """One picture file as an 8-bit grayscale PIL image, upright.

    EXIF orientation is applied, transparent areas are laid on white and
    16-bit and 32-bit integer images are brought to 8 bits by the
    generator's rule (images.to_8bit: the bit depth inferred from
    the brightest pixel). Raises DataError naming the file when it is
    missing, not an image, or empty.
    """
    try:
        with Image.open(picName) as img:
            img = ImageOps.exif_transpose(img)
            if img.width == 0 or img.height == 0:
                raise DataError(f"{picName}: empty image (0 pixels)")
            img = to_8bit(img)
            if img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info:
                rgba = img.convert("RGBA")
                img = Image.alpha_composite(Image.new("RGBA", rgba.size, "white"), rgba)
            return img.convert("L")
    except FileNotFoundError:
        raise DataError(f"{picName}: file not found") from None
    except UnidentifiedImageError:
        raise DataError(f"{picName}: not an image file") from None
    except (OSError, Image.DecompressionBombError) as e:
        raise DataError(f"{picName}: cannot read image ({e})") from None


def course_input(img, threshold=THRESHOLD):
    """The course's preparation: uint8 [28, 28], 0 or 255 (stroke = 255).

    img: grayscale PIL image. Resized whole to 28x28 with LANCZOS (what the
    removed Image.ANTIALIAS was), inverted, and cut at `threshold`.
    """
    reIm = img.resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.LANCZOS)
    im_arr = 255 - np.asarray(reIm, dtype=np.int32)
    return np.where(im_arr < threshold, 0, 255).astype(np.uint8)


def otsu_threshold(values):
    """Otsu's threshold of uint8 values: the t maximising the between-class variance of < t and >= t.

    values: uint8 array of any shape. Returns an int 1-255. For a picture of
    paper and ink it falls between the two levels (Otsu 1979).
    """
    counts = np.bincount(np.ravel(values), minlength=256).astype(np.float64)
    mass = counts * np.arange(256)
    below, mass_below = np.cumsum(counts)[:-1], np.cumsum(mass)[:-1]  # pixels < t, for t = 1..255
    above, mass_above = counts.sum() - below, mass.sum() - mass_below
    with np.errstate(divide="ignore", invalid="ignore"):  # an empty class scores 0
        between = np.nan_to_num(below * above * (mass_below / below - mass_above / above) ** 2)
    return int(np.argmax(between)) + 1


def ink_darkness(gray):
    """How much darker than its surrounding paper each pixel is: uint8 [h, w], 0 = paper.

    gray: float [h, w], gray levels 0-255. The paper's brightness is the
    90th percentile of each cell of a LIGHTING_GRID grid, raised to its
    neighbours' maximum (a cell full of ink takes its paper from around it)
    and interpolated back to full size; dividing by it evens out shadows and
    lighting gradients (flat-field correction).
    """
    h, w = gray.shape
    rows = np.array_split(np.arange(h), min(LIGHTING_GRID, h))
    cols = np.array_split(np.arange(w), min(LIGHTING_GRID, w))
    cells = np.array([[np.percentile(gray[r[0]:r[-1] + 1, c[0]:c[-1] + 1], 90) for c in cols] for r in rows])
    padded = np.pad(cells, 1, mode="edge")
    paper = np.max([padded[i:i + len(rows), j:j + len(cols)] for i in range(3) for j in range(3)], axis=0)
    paper = Image.fromarray(paper.astype(np.float32), mode="F").resize((w, h), Image.Resampling.BILINEAR)
    paper = np.maximum(np.asarray(paper), 1.0)
    return np.clip(np.round(255 * (1 - gray / paper)), 0, 255).astype(np.uint8)


def light_on_dark(gray):
    """True when the picture is a light digit on a dark ground (a screenshot of MNIST, chalk on a board).

    gray: float [h, w]. The border is ground, not digit; on paper its
    median lies nearer the picture's brightest level than its darkest.
    """
    border = np.concatenate([gray[0], gray[-1], gray[:, 0], gray[:, -1]])
    ground = np.median(border)
    return ground - gray.min() < gray.max() - ground


def _ink_span(counts):
    """First and last index (inclusive) of a profile once CROP_TAIL of its mass is dropped at each end."""
    cumulative = np.cumsum(counts) / counts.sum()
    return int(np.searchsorted(cumulative, CROP_TAIL, side="right")), int(np.searchsorted(cumulative, 1 - CROP_TAIL))


def _stroke_width(mask):
    """Mean stroke width in pixels of a boolean mask: area / half the number of ink-paper edges."""
    edges = np.count_nonzero(mask[1:] != mask[:-1]) + np.count_nonzero(mask[:, 1:] != mask[:, :-1])
    return 2 * np.count_nonzero(mask) / max(edges, 1)


def find_ink(img):
    """The ink of a picture's digit: boolean [h, w], True where the (upright, not inverted) picture has ink.

    img: grayscale PIL image, at most MAX_SIDE pixels on a side. A light
    digit on a dark ground (given away by its dark border) is inverted
    first. Lighting is evened out (ink_darkness), and ink is darkness at or
    above Otsu's threshold. Raises ValueError ("no digit found: ...") for a
    picture without a digit-like stroke, whatever its colour:
      - one flat shade, or no pixel MIN_CONTRAST gray levels darker than its paper;
      - ink not NOISE_MARGIN times darker than the picture's pixel noise
        (noise estimated from neighbouring pixels' differences);
      - ink over more than MAX_INK_FRACTION of the picture (a page covered in ink);
      - ink and paper not two separate levels: Otsu's separability (the
        between-class share of the darkness variance, Otsu 1979) below
        MIN_SEPARATION, as for smooth shading such as a lighting gradient,
        whose darkness is spread evenly (0.75) rather than in two groups.
    """
    gray = np.asarray(img, dtype=np.float64)
    if gray.max() == gray.min():
        raise ValueError(f"no digit found: every pixel is {int(gray.flat[0])}")
    if light_on_dark(gray):
        gray = 255 - gray
    darkness = ink_darkness(gray)
    if int(darkness.max()) < MIN_CONTRAST:
        raise ValueError("no digit found: nothing is clearly darker than the paper")
    ink = darkness >= otsu_threshold(darkness)
    level = darkness.astype(np.float64)
    noise = np.median(np.abs(np.diff(level, axis=1))) / 0.954  # median |a - b| of two N(0, s^2) pixels is 0.954 s
    if level[ink].mean() < max(MIN_CONTRAST, NOISE_MARGIN * noise):
        raise ValueError("no digit found: nothing stands out from the picture's noise")
    fraction = ink.mean()
    if fraction > MAX_INK_FRACTION:
        raise ValueError("no digit found: ink covers most of the picture")
    between = fraction * (1 - fraction) * (level[ink].mean() - level[~ink].mean()) ** 2
    if between < MIN_SEPARATION * level.var():
        raise ValueError("no digit found: only shading, no strokes that stand apart from the paper")
    return ink


def shrink(img):
    """img reduced to at most MAX_SIDE pixels on a side (BOX filter); smaller pictures unchanged."""
    if max(img.size) > MAX_SIDE:
        img = img.copy()
        img.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.BOX)
    return img


def mnist_input(img):
    """MNIST's preparation of one picture: uint8 [28, 28], ink bright on black.

    img: grayscale PIL image of a dark digit on lighter paper (or a light
    digit on a dark ground). Steps: the ink found by find_ink (lighting
    evened out, Otsu's threshold); crop to the ink's bounding box; strokes
    thinner than MNIST's thickened; scaled to fit DIGIT_BOX keeping the
    aspect ratio (averaging gives grey edges); pasted into 28x28 so that the
    centre of mass is at pixel (CENTRE, CENTRE). Raises ValueError ("no
    digit found: ...") from find_ink when the picture holds no digit-like stroke.
    """
    ink = find_ink(shrink(img))
    top, bottom = _ink_span(ink.sum(axis=1))
    left, right = _ink_span(ink.sum(axis=0))
    ink = ink[top:bottom + 1, left:right + 1]

    # Shape the digit at SUPERSAMPLE times the final size: any ink in a cell counts, so thin strokes survive.
    scale = SUPERSAMPLE * DIGIT_BOX / max(ink.shape)
    size = (max(1, round(ink.shape[1] * scale)), max(1, round(ink.shape[0] * scale)))
    shape = Image.fromarray(ink.astype(np.uint8) * 255).resize(size, Image.Resampling.BOX)
    shape = Image.fromarray((np.asarray(shape) > 0).astype(np.uint8) * 255)
    missing = SUPERSAMPLE * STROKE_WIDTH - _stroke_width(np.asarray(shape) > 0)
    if missing >= 1:
        grow = 2 * int(round(missing / 2)) + 1
        shape = ImageOps.expand(shape, grow // 2, fill=0).filter(ImageFilter.MaxFilter(grow))
    scale = DIGIT_BOX / max(shape.size)
    digit = shape.resize((max(1, round(shape.width * scale)), max(1, round(shape.height * scale))),
                         Image.Resampling.BOX)
    digit = np.asarray(digit, dtype=np.float64)

    rows, cols = np.indices(digit.shape)
    mass = digit.sum()
    row = int(np.clip(round(CENTRE - (rows * digit).sum() / mass), 0, IMAGE_SIZE - digit.shape[0]))
    col = int(np.clip(round(CENTRE - (cols * digit).sum() / mass), 0, IMAGE_SIZE - digit.shape[1]))
    out = np.zeros((IMAGE_SIZE, IMAGE_SIZE), np.uint8)
    out[row:row + digit.shape[0], col:col + digit.shape[1]] = np.round(digit)
    return out


def network_input(pixels):
    """uint8 [28, 28] -> float32 [1, 784] in [0, 1], the network's input row."""
    return (pixels.reshape([1, IMAGE_PIXELS]) * (1.0 / 255)).astype(np.float32)


def prepared_pixels(picName, threshold=THRESHOLD, preprocess="mnist"):
    """uint8 [28, 28]: the picture as the network sees it (see pre_pic)."""
    img = load_picture(picName)
    try:
        if preprocess == "course":
            find_ink(shrink(img))  # the course's threshold alone would read a blank page as some digit
            return course_input(img, threshold)
        return mnist_input(img)
    except ValueError as e:
        raise DataError(f"{picName}: {e}; the app expects a dark digit on lighter paper") from None


def picture_paths(args):
    """The pictures named on the command line, each folder replaced by its picture files.

    A folder contributes its files (not subfolders) whose extension names a
    format Pillow can open, sorted by name, hidden files left out. Files named directly are
    kept whatever their extension. Raises DataError for a folder without pictures.
    """
    extensions = {ext for ext, kind in Image.registered_extensions().items() if kind in Image.OPEN}
    paths = []
    for arg in args:
        if not os.path.isdir(arg):
            paths.append(arg)
            continue
        found = sorted(os.path.join(arg, name) for name in os.listdir(arg)
                       if not name.startswith(".") and os.path.splitext(name)[1].lower() in extensions
                       and os.path.isfile(os.path.join(arg, name)))
        if not found:
            raise DataError(f"{arg}: no picture files in this folder")
        paths.extend(found)
    return paths


def input_path(show_input, picName, count):
    """Where --show-input writes the network input of picName: the .png itself, or one file per picture in a folder.

    In a folder the file keeps the picture's stem: photos/a.jpg -> <folder>/a.png.
    Raises DataError when a FILE.png is given for more than one picture.
    """
    if show_input.lower().endswith(".png"):
        if count > 1:
            raise DataError(f"{show_input}: --show-input FILE.png takes one picture; give a folder for {count} pictures")
        return show_input
    return os.path.join(show_input, os.path.splitext(os.path.basename(picName))[0] + ".png")


def claim_input_path(show_input, picName, count, claimed):
    """input_path, checked against the files already claimed in this run ({target: picture}, updated).

    Two pictures with the same stem (a.jpg and a.png, or two folders' a.png)
    would share one file: raises DataError naming both rather than
    overwrite the first one's input. The same picture twice is allowed.
    """
    target = input_path(show_input, picName, count)
    first = claimed.setdefault(target, picName)
    if first != picName:
        raise DataError(f"{target}: --show-input already wrote {first}'s input there; {picName} has the same "
                        "name stem (rename one, or run the app for each)")
    return target


def write_input(testPicArr, target):
    """Save a network input, float32 [1, 784] in [0, 1], as a 28x28 8-bit PNG (x 255, exact for pre_pic's values)."""
    pixels = np.round(testPicArr.reshape(IMAGE_SIZE, IMAGE_SIZE) * 255).astype(np.uint8)
    files.write_atomically(target, lambda tmp: Image.fromarray(pixels, mode="L").save(tmp, format="PNG"),
                           what="--show-input picture")

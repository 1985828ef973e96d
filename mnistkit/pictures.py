"""Pictures in: a user's picture read as an 8-bit gray image, and the app's picture files.

mnist_app.pre_pic is the course's step, and holds the course's own
preparation (resize, grayscale, invert, threshold); this is what the course
never had: reading any picture (load_picture: a file, or its bytes from
the drawing board; any mode, size and orientation; a picture too large to
decode refused from its header, a large one reduced as it is read, so that
one picture takes at most about 200 MB), a preparation's refusal as one
line naming the picture (refusals_named, check_not_flat), and the app's
file handling: --show-input's files. For the drawing board: a picture's
format read within the same limits (picture_format: a kept original's suffix).

The digit's ink is found in mnistkit.segmentation (find_ink), and the MNIST-style
28x28 input is built from it in mnistkit.preparation (mnist_input):
load_picture -> preparation.mnist_input -> preparation.network_input.
"""
import contextlib
import io
import math
import os
import warnings

import numpy as np
from PIL import ExifTags, Image, UnidentifiedImageError

from . import cli, files, formats
from .errors import DataError
from .images import (WIDE_MODES, not_an_image, open_image, picture_extensions, pictures_in, png_or_folder,
                     to_8bit)
from .segmentation import MIN_CONTRAST, SeveralDigits
from .records import IMAGE_SIZE

# Once for the process, not a catch_warnings around each Image.open: that swaps the global filter list, and
# the drawing board opens pictures on several threads at once.
warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)

MAX_SIDE = 2048  # larger photos are reduced first; a pen stroke still spans pixels
# A picture whose reading at full size (decoded, then turned gray: read_bytes) would take more bytes than this
# is refused before it is decoded, as a small PNG can hold a huge picture: one picture's preparation stays under
# 200 MB. A 12-megapixel RGB PNG takes 60 MB, RGBA 132 MB; a JPEG is decoded at a reduced size.
MAX_READ_BYTES = 160 * 10 ** 6
PICTURE_NAME = "picture"  # how messages name a picture given as bytes or a file object without a name
ORIENTATIONS = {2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180, 4: Image.Transpose.FLIP_TOP_BOTTOM,
                5: Image.Transpose.TRANSPOSE, 6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
                8: Image.Transpose.ROTATE_90}  # EXIF orientation -> the transposition that makes a picture upright
OPAQUE = 250  # alpha (of 255) of a stroke's or a sheet's core (flatten_alpha; edges may be premultiplied)


def load_picture(picture, name=None):
    """One picture as an 8-bit grayscale PIL image, upright, at most MAX_SIDE pixels on a side.

    picture: a file's path, the file's bytes, or a binary file object
    (io.BytesIO); name: how messages name it (default: the path, or
    PICTURE_NAME for bytes and file objects). Nothing is written to disk.
    EXIF orientation is applied, transparent areas are laid on white
    (flatten_alpha) and 16-bit and 32-bit integer images are brought to 8
    bits by the generator's rule (images.to_8bit: the bit depth inferred
    from the brightest pixel). A larger picture is reduced as it is read
    (read_reduced), so that memory stays bounded whatever its size. Raises
    DataError naming the picture when it is missing, not an image, empty, or
    too large to read (check_size: MAX_READ_BYTES).
    """
    img, _ = read_picture(picture, name)
    return img


def picture_format(picture, name=None, decoded=False):
    """The format Pillow reads a picture as ("PNG", "JPEG", "MPO", "HEIF", ...): the board's kept originals.

    The picture is decoded as load_picture decodes it, within the same
    limits, and raises DataError as load_picture does; decoded=True: it was
    decoded so already (a preparation read it), and only its header is read.
    """
    if decoded:
        with contextlib.suppress(UnidentifiedImageError, OSError):  # else: read as any other
            with open_picture(io.BytesIO(picture) if isinstance(picture, bytes) else picture) as img:
                return img.format
    img, format_name = read_picture(picture, name)
    img.close()
    return format_name


def read_picture(picture, name=None):
    """(load_picture's image, the format Pillow read it as); arguments and errors as load_picture's."""
    name = picture_name(picture, name)
    source = io.BytesIO(picture) if isinstance(picture, (bytes, bytearray, memoryview)) else picture
    try:
        with open_picture(source) as img:
            if img.width == 0 or img.height == 0:
                raise DataError(f"{name}: empty image (0 pixels)")
            format_name = img.format
            img, orientation = read_reduced(img, name)
        if img.mode == "RGBA":  # once the picture read at full size is let go
            img = flatten_alpha(img)
        if orientation in ORIENTATIONS:
            img = img.transpose(ORIENTATIONS[orientation])
        return img, format_name
    except FileNotFoundError:
        raise not_found(name, picture) from None
    except UnidentifiedImageError:
        raise not_an_image(name, head_of(source)) from None
    except (OSError, Image.DecompressionBombError) as e:
        if isinstance(picture, str) and os.path.isdir(picture):  # IsADirectoryError; Windows: PermissionError
            raise a_folder(name, picture) from None
        raise DataError(f"{name}: cannot read image ({e})") from None


def a_folder(name, folder):
    """The DataError for a folder given where one picture is read (the course's prompt `the path of test
    picture:`), named `name`: where a folder's pictures are read, the command line (cli.command's, mnist_app.py
    given the folder, which says what a folder holds when it is no pictures: images.no_pictures), not `[Errno 21]
    Is a directory`."""
    return DataError(f"{name}: is a folder, not a picture: give one picture's file here (a folder's pictures are "
                     f"read when it is named on the command line: `{cli.command('mnist_app.py', folder)}`)")


def not_found(name, picture):
    """The DataError for a picture file that is not there, named `name`: with the pictures close to the path
    `picture` (cli.did_you_mean: a typo beside it, `sevne.png: file not found; did you mean seven.png?`, or in a
    mistyped folder, `pic/1.png: ...; did you mean pics/1.png?`): picture files only (a_picture_file), and for a
    name without an extension folders of pictures too (`pic`: did you mean pics?), as the app takes both."""
    if not isinstance(picture, (str, os.PathLike)):
        return DataError(f"{name}: file not found")
    picture = os.fspath(picture)
    meant = cli.did_you_mean(picture, a_picture_file if os.path.splitext(picture)[1] else a_picture_argument)
    return DataError(f"{name}: file not found" + (f"; {meant}" if meant else ""))


def a_picture_file(path):
    """Whether `path` is a file of a format Pillow opens, by its extension (a close name worth suggesting for a
    picture; serve.pid is not)."""
    return os.path.isfile(path) and os.path.splitext(path)[1].lower() in picture_extensions()


def a_picture_argument(path):
    """Whether `path` is what mnist_app.py takes as a picture: a picture file (a_picture_file), or a folder holding
    one (images.pictures_in, as images.picture_paths lists it)."""
    if a_picture_file(path):
        return True
    try:
        return os.path.isdir(path) and next(pictures_in(path), None) is not None
    except OSError:
        return False


def picture_name(picture, name=None):
    """How messages name a picture (a path, bytes or a file object): `name` when given, else the path or PICTURE_NAME."""
    if name is not None:
        return name
    return os.fspath(picture) if isinstance(picture, (str, os.PathLike)) else PICTURE_NAME


def head_of(source):
    """The first bytes of a picture (a path or a binary file object) for not_an_image: formats.HEAD_BYTES or fewer."""
    if not hasattr(source, "read"):
        return formats.read_head(source)
    source.seek(0)
    return source.read(formats.HEAD_BYTES)


def read_reduced(img, name):
    """An opened picture (not yet decoded) decoded and reduced: (image, orientation) for load_picture.

    image: "L", or "RGBA" when the picture has transparency (for
    flatten_alpha), at most MAX_SIDE pixels on a side, not yet upright;
    orientation: the EXIF orientation tag (int) or None. A JPEG larger than
    twice MAX_SIDE is decoded at 1/2, 1/4 or 1/8 of its size (Pillow's
    draft), the largest that keeps MAX_SIDE; the size is checked (check_size)
    before decoding. The picture is turned into 8-bit gray (or RGBA) and
    reduced (fit) before any arithmetic of our own on its pixels.
    """
    scale = max(img.size) // MAX_SIDE
    if scale >= 2:
        img.draft(img.mode, (-(-img.width // scale), -(-img.height // scale)))  # JPEG only; others ignore it
    check_size(img, name)
    img.load()
    orientation = img.getexif().get(ExifTags.Base.Orientation)
    if img.mode in WIDE_MODES:  # as in the generator: the gray levels only
        read = to_8bit(img)
    elif has_alpha(img):
        read = img if img.mode in ("LA", "RGBA") else img.convert("RGBA")
    else:
        read = img if img.mode == "L" else img.convert("L")
    if read is not img:
        img.close()  # the decoded pixels are let go before the reduction
    read = fit(read)
    return (read.convert("RGBA") if read.mode == "LA" else read), orientation


def has_alpha(img):
    """True when a PIL image has transparency: an alpha channel, or a transparent colour or palette index."""
    return img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info


def read_bytes(img):
    """Bytes a picture's pixels take at most at once while load_picture reads them at full size, for an opened picture.

    Pillow holds a decoded pixel in 1 byte in modes 1, L and P, 2 in 16-bit
    modes and 4 in the others (RGB too); then comes its 8-bit gray copy (1
    byte), except for a picture that is 8-bit gray already (L: read as it is). A 16- or 32-bit integer picture's values go through an array of
    their own and to_8bit's 32-bit integers (2 or 4, + 4 + 1). A picture with
    transparency is read as RGBA (4), which Pillow copies with premultiplied
    alpha to reduce it (4) and reduces in two passes (up to 3): 11 in all.
    A JPEG counts at the size it is decoded at (read_reduced's draft).
    """
    decoded = 1 if img.mode in ("1", "L", "P") else 2 if img.mode.startswith("I;16") else 4
    if img.mode in WIDE_MODES:
        return img.width * img.height * (2 * decoded + 5)  # its values as an array, then 32-bit integers, 8-bit
    if has_alpha(img):
        return img.width * img.height * 11
    return img.width * img.height * (decoded + (img.mode != "L"))


def check_size(img, name):
    """Raise DataError naming the picture when reading it would take more than MAX_READ_BYTES (read_bytes).

    img: an opened picture, not yet decoded: its header gives size and mode.
    """
    needed = read_bytes(img)
    if needed > MAX_READ_BYTES:
        raise DataError(f"{name}: picture of {img.width}x{img.height} pixels ({img.mode}) takes {math.ceil(needed / 1e6):,} MB "
                        f"to read, over this app's limit of {MAX_READ_BYTES / 1e6:,.0f} MB; save it smaller "
                        f"(the app reads {MAX_SIDE} pixels a side at most) or as a JPEG")


def fit(img):
    """A decoded PIL image ("L", "LA" or "RGBA") reduced to at most MAX_SIDE pixels on a side (BOX: averages).

    Smaller pictures are returned as they are. A picture over twice
    MAX_SIDE is first reduced by a whole factor (Image.reduce), so that
    Pillow's resize of one with alpha does not copy it whole; then
    thumbnail, in place, as shrink does.
    """
    if max(img.size) <= MAX_SIDE:
        return img
    factor = max(img.size) // MAX_SIDE
    if factor >= 2 and img.mode != "L":
        img = img.reduce(factor)
    img.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.BOX)
    return img


def open_picture(picName):
    """Image.open(picName); an iPhone's HEIC photo through images.open_image (pillow-heif) when Pillow cannot.

    picName: a path or a binary file object. A picture of 89 to 179
    megapixels (a panorama) is opened as any other, without Pillow's
    DecompressionBombWarning (filtered once, below the imports); above that
    Pillow raises DecompressionBombError, which load_picture turns into its
    one line. Pillow reads only the header here: decoding waits for load().
    """
    return open_image(picName, lambda: head_of(picName))


def flatten_alpha(rgba):
    """A picture with transparency as the grayscale picture a person sees: "L" PIL image of an RGBA one.

    Transparent pixels are background. When the opaque pixels (alpha at
    least OPAQUE) show no contrast (their gray levels span less than
    MIN_CONTRAST between the 1st and 99th percentile; any alpha above 0 when
    none is that opaque), the drawing is in the
    alpha channel itself, whatever the strokes' colour (a drawing app's
    white, black or red strokes on a transparent canvas): the result is
    dark ink where alpha is high on white, 255 - alpha. Otherwise the
    picture is laid on its own paper: the median gray of its opaque
    pixels (white for black ink on a white sheet with transparent margins,
    dark for chalk on a cut-out board). Each pixel's result depends only on
    its gray level and alpha: it is looked up in a 256 x 256 table of them.
    """
    alpha = np.asarray(rgba.getchannel("A"))
    gray = np.asarray(rgba.convert("RGB").convert("L"))
    opaque = gray[alpha >= OPAQUE]
    if opaque.size == 0:
        opaque = gray[alpha > 0]
    levels = np.arange(256, dtype=np.float64)  # table rows: gray levels; columns: alpha levels
    veil = levels / 255
    if alpha.min() == alpha.max():  # no drawing in alpha: one veil over the whole picture
        table = levels[:, None] * veil + 255 * (1 - veil)
    elif opaque.size == 0 or np.subtract(*np.percentile(opaque, [99, 1])) < MIN_CONTRAST:
        table = np.broadcast_to(255 * (1 - veil), (256, 256))
    else:
        table = levels[:, None] * veil + np.median(opaque) * (1 - veil)
    table = np.clip(np.round(table), 0, 255).astype(np.uint8)
    return Image.fromarray(table[gray, alpha], mode="L")


def shrink(img):
    """img reduced to at most MAX_SIDE pixels on a side (BOX filter); smaller pictures unchanged."""
    if max(img.size) > MAX_SIDE:
        img = img.copy()
        img.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.BOX)
    return img

@contextlib.contextmanager
def refusals_named(picName):
    """Around a preparation: its refusal (a ValueError: no digit, several digits) as a DataError naming picName."""
    try:
        yield
    except SeveralDigits as e:
        raise DataError(f"{picName}: {e}") from None
    except ValueError as e:
        raise DataError(f"{picName}: {e}; the app expects a dark digit on lighter paper") from None


def check_not_flat(picName, pixels, threshold, preprocess):
    """Raise DataError naming the picture when its prepared uint8 [28, 28] input is one value throughout."""
    if pixels.min() == pixels.max():
        how = (f" after the course's --threshold {threshold}; try --preprocess mnist or another --threshold"
               if preprocess == "course" else "; the app expects a dark digit on lighter paper")
        raise DataError(f"{picName}: no digit found: every pixel of the 28x28 input is {pixels.flat[0]}{how}")


def input_path(show_input, picName, count):
    """Where --show-input writes the network input of picName: the .png itself, or one file per picture in a folder.

    In a folder the file keeps the picture's stem: photos/a.jpg -> <folder>/a.png.
    Raises DataError as images.png_or_folder does (a FILE.png for more than one picture, another picture
    format's extension, an existing file taken as the folder).
    """
    if png_or_folder(show_input, "--show-input", count) == "file":
        return show_input
    return os.path.join(show_input, os.path.splitext(os.path.basename(picName))[0] + ".png")


def claim_input_path(show_input, picName, count, claimed):
    """input_path, checked against the files already claimed in this run ({target: picture}, updated).

    Two pictures with the same stem (a.jpg and a.png, or two folders' a.png)
    would share one file: raises DataError naming both rather than
    overwrite the first one's input. The same picture twice is allowed.
    """
    target = input_path(show_input, picName, count)
    over = over_a_picture(target, picName)
    if over is not None:
        raise over
    first = claimed.setdefault(target, picName)
    if first != picName:
        raise DataError(f"{target}: --show-input already wrote {first}'s input there; {picName} has the same "
                        "name stem (rename one, or run the app for each)")
    return target


def over_a_picture(target, picName):
    """The DataError when --show-input's file `target` for the picture picName would replace a file that is no
    input it wrote before, else None: the picture itself (`--show-input photos photos/`, or `--show-input
    seven.png` answered with seven.png at the prompts), or a file there that is not a 28x28 PNG (`--show-input
    seven.png` typed for `--show-input seen seven.png`, the prompts then given another picture: seven.png was
    replaced by that one's input). An input written before, a 28x28 PNG, is written over, as a rerun does."""
    if not os.path.lexists(target):
        return None
    with contextlib.suppress(OSError):
        if os.path.samefile(target, picName):
            return DataError(f"{target}: --show-input would write over the picture it reads; give --show-input "
                             "another PATH (seen.png, or a folder of its own)")
    try:
        with Image.open(target) as img:
            earlier = img.format == "PNG" and img.size == (IMAGE_SIZE, IMAGE_SIZE)
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError):
        earlier = False
    if earlier:
        return None
    return DataError(f"{target} is there and is no input --show-input wrote (a 28x28 PNG); give --show-input "
                     "another PATH, which it writes (the file there is kept): --show-input PATH comes before the "
                     "pictures, `--show-input seen seven.png`")


def write_input(testPicArr, target):
    """Save a network input, float32 [1, 784] in [0, 1], as a 28x28 8-bit PNG (x 255, exact for pre_pic's values)."""
    pixels = np.round(testPicArr.reshape(IMAGE_SIZE, IMAGE_SIZE) * 255).astype(np.uint8)
    files.write_atomically(target, lambda tmp: Image.fromarray(pixels, mode="L").save(tmp, format="PNG"),
                           what="--show-input picture")
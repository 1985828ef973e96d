"""Image files to 8-bit grayscale pixels: the one set of decoding rules for the generator and the app.

Grayscale 28x28 JPEGs take a fast path (libjpeg-turbo through simplejpeg);
everything else goes through Pillow, with 16-bit and 32-bit integer images
scaled by to_8bit. No TensorFlow here: this runs in the generator's
decoding processes.

picture_paths lists the pictures a folder given to mnist_app.py holds.
"""
import io
import os

import numpy as np
import simplejpeg
from PIL import Image, UnidentifiedImageError

from . import cli, files, formats
from .errors import DataError
from . import records
from .records import IMAGE_PIXELS, IMAGE_SIZE

def decode_gray_jpeg(data):
    """Pixels of a 28x28 grayscale JPEG as IMAGE_PIXELS bytes, or None for any other file.

    data: the file's bytes. simplejpeg calls libjpeg-turbo, the library
    Pillow decodes JPEG with, with the same (accurate integer) inverse DCT,
    so the pixels are Pillow's, byte for byte; it does so at a third of
    Pillow's per-image cost, which for 28x28 images is mostly Python. Anything
    else (colour, another size, not a JPEG, damaged) gives None and is left
    to Pillow, which converts or reports it.
    """
    try:
        height, width, colorspace, _ = simplejpeg.decode_jpeg_header(data)
        if colorspace != "Gray" or (width, height) != (IMAGE_SIZE, IMAGE_SIZE):
            return None
        return simplejpeg.decode_jpeg(data, colorspace="GRAY", fastdct=False, strict=True).tobytes()
    except ValueError:
        return None


def to_8bit(img):
    """An 8-bit grayscale ("L") PIL image of a 16-bit or 32-bit integer one (WIDE_MODES).

    The bit depth is inferred from the brightest pixel: the smallest of
    BIT_DEPTHS (8, 12, 16) whose range holds it. Values are scaled by
    255 / (2**depth - 1) and rounded: an image whose values are all <= 255
    (8-bit data saved in a 16-bit file) is taken as it is, one up to 4095
    (12-bit) is scaled by 255/4095, anything brighter by 255/65535 (full
    16-bit). Values below 0 or above 65535 (mode "I" is signed 32-bit) are
    clipped first. Images of other modes are returned unchanged. The one
    rule for the generator (load_image) and the app (pictures.load_picture).
    Computed in 32-bit integers (a large scan is read too): the rounding is
    exact, as no value lies halfway between two levels (2**depth - 1 is odd).
    """
    if img.mode not in WIDE_MODES:
        return img
    values = np.asarray(img)
    if values.dtype.kind == "i":  # mode "I"
        values = np.clip(values, 0, 2 ** BIT_DEPTHS[-1] - 1)
    top = int(values.max()) if values.size else 0
    depth = next(bits for bits in BIT_DEPTHS if top < 2 ** bits)
    if depth > 8:
        full = 2 ** depth - 1
        values = values.astype(np.uint32)  # 255 * 65535 fits
        values *= 255
        values += full // 2
        values //= full  # round(value * 255 / full)
    return Image.fromarray(values.astype(np.uint8), mode="L")


def load_image(img_path):
    """Pixels of one course image as (bytes, note).

    Returns exactly IMAGE_PIXELS uint8 bytes (28x28 8-bit grayscale,
    row-major) and a note: None, or the original mode when a colour, palette,
    16-bit or transparent image was converted to 8-bit grayscale (16-bit and
    32-bit integer images by to_8bit, the others by Pillow's convert("L")).
    Grayscale JPEGs are decoded by decode_gray_jpeg, everything else by Pillow.
    Raises DataError naming the file when it is missing, not an image, or
    not 28x28.
    """
    try:
        with open(img_path, "rb", buffering=0) as f:  # unbuffered: fewer system calls per small file
            data = f.read()
    except FileNotFoundError:
        raise DataError(f"{img_path}: image file not found") from None
    except OSError as e:
        raise DataError(f"{img_path}: cannot read image ({e.strerror})") from None
    return decode_image(data, img_path)


def decode_image(data, img_path):
    """load_image's decoding of a course image's bytes `data`: (IMAGE_PIXELS bytes, note), DataError naming img_path.

    The generator's rule for every file it reads, also used by the keep
    store on a digit it is about to keep (mnistkit.keep: its blank check).
    """
    pixels = decode_gray_jpeg(data)
    if pixels is not None:
        return pixels, None
    try:
        with open_image(io.BytesIO(data), lambda: data[:formats.HEAD_BYTES]) as img:
            img.load()
            note = None if img.mode == "L" else img.mode
            if img.size != (IMAGE_SIZE, IMAGE_SIZE):
                raise DataError(f"{img_path}: image is {img.size[0]}x{img.size[1]}, expected {IMAGE_SIZE}x{IMAGE_SIZE}")
            img = to_8bit(img)
            if img.mode != "L":
                img = img.convert("L")
            return img.tobytes(), note
    except UnidentifiedImageError:
        raise not_an_image(img_path, data[:formats.HEAD_BYTES]) from None
    except OSError as e:
        raise DataError(f"{img_path}: cannot read image ({e})") from None


def open_image(source, head):
    """Image.open(source), HEIC/HEIF photos too where pillow-heif is installed; raises as Image.open does.

    source: a path or a binary file object; head: a function giving the
    file's first bytes. Pillow cannot open an iPhone's HEIC photo; the
    pillow-heif package registers an opener for it (register_heif), which
    is imported only when such a file comes, so other pictures do not pay
    for its import. Without it, the UnidentifiedImageError stays, and
    not_an_image names the photo.
    """
    try:
        return Image.open(source)
    except UnidentifiedImageError:
        if formats.heif_kind(head()) != "HEIC/HEIF" or not register_heif():
            raise
        if hasattr(source, "seek"):
            source.seek(0)
        return Image.open(source)


def register_heif():
    """True when pillow-heif's opener is registered with Pillow (now or before); False when it is not installed."""
    try:
        import pillow_heif
    except ImportError:
        return False
    pillow_heif.register_heif_opener()
    return True


def not_an_image(img_path, head):
    """The DataError for a file Pillow cannot identify, naming what it is when its first bytes tell (formats).

    head: the file's first bytes. An iPhone photo in HEIC (often saved or
    renamed as .jpg) that cannot be read (pillow-heif is not installed, or
    the file is damaged) gives `photo.jpg: HEIC/HEIF photo: convert it to JPG or
    PNG`; a PDF, a zip, a TFRecord file... `<path>: a PDF document, not an
    image file`; anything else `<path>: not an image file`.
    """
    kind = formats.heif_kind(head)
    if kind:
        return DataError(f"{img_path}: {kind} photo: convert it to JPG or PNG")
    kind = formats.describe(head, records.is_record_header)
    if kind is not None:
        return DataError(f"{img_path}: {kind}, not an image file Pillow can open; convert it to JPG or PNG"
                         if kind.endswith("image") else f"{img_path}: {kind}, not an image file")
    return DataError(f"{img_path}: not an image file")


def check_not_blank(img_raw, img_path, line):
    """Raise DataError naming img_path and its label-file `line` when every pixel of img_raw is one value.

    img_raw: IMAGE_PIXELS bytes. Such an image (a scan of empty paper, a
    16-bit image flattened by a wrong scaling) holds no digit, yet would
    train as one. Comparing with the blank image of the first pixel's value
    is one memcmp that stops at the first other pixel: about 0.08 us per
    image (bytes.count took 1.2 us), against the generator's ~23 us.
    """
    if img_raw == BLANK_IMAGES[img_raw[0]]:
        raise DataError(f"{img_path}: blank image, every pixel is {img_raw[0]} (listed on {line}); "
                        "replace the image or remove its line")


# Bit depths a 16-bit or 32-bit integer image is read as: the smallest that
# holds its brightest pixel (see to_8bit). 8: 8-bit data in a 16-bit file, as
# Image.fromarray(a.astype(np.uint16)) saves it; 12: a 12-bit sensor or scanner.
BIT_DEPTHS = (8, 12, 16)
WIDE_MODES = ("I", "I;16", "I;16B", "I;16L", "I;16N")  # Pillow's 16-bit and 32-bit integer grayscale modes
BLANK_IMAGES = tuple(bytes([value]) * IMAGE_PIXELS for value in range(256))  # img_raw of every pixel one value


def picture_extensions():
    """The file extensions (lower case, with the dot: {".png", ".jpg", ...}) of the formats Pillow can open here;
    loads every Pillow plugin the first time (Image.registered_extensions)."""
    return {ext for ext, kind in Image.registered_extensions().items() if kind in Image.OPEN}


def png_or_folder(path, flag, count=1):
    """Where a flag that writes PNG pictures (mnist_test.py's --report, mnist_app.py's --show-input) takes `path`:
    "file" when it ends in .png (a file of that name), else "folder" (pictures written into it).

    Raises DataError at once, before any work, for a path that would be misread: one ending in another picture
    format's extension (`report.jpg`, which was made a folder named report.jpg), an existing file taken as the
    folder (`pics/photo_7.jpg`, said after the work as `cannot write ... (File exists)`), a .png for `count`
    pictures above one."""
    extension = os.path.splitext(path)[1].lower()
    if extension == ".png":
        if count > 1:
            raise DataError(f"{path}: {flag} FILE.png takes one picture; give a folder for {count} pictures")
        return "file"
    if os.path.exists(path) and not os.path.isdir(path):
        raise DataError(f"{path} is a file, not a folder: give {flag} a folder"
                        + (f" for the {count} pictures" if count > 1 else ", or FILE.png"))
    if extension in picture_extensions():
        raise DataError(f"{path}: {flag} writes PNG pictures only: give {os.path.splitext(path)[0]}.png, or a folder")
    return "folder"


def picture_paths(args):
    """The pictures named on mnist_app.py's command line (paths, str), each folder replaced by its picture files.

    A folder contributes its pictures (pictures_in), sorted by name. Files named directly are kept whatever their
    extension. Raises DataError for a folder without pictures.
    """
    paths, extensions = [], None
    for i, arg in enumerate(args):
        split = split_at_spaces(args, i)
        if split is not None:
            raise DataError(f"{split}: one path, split in {len(split.split(' '))} by the shell at its spaces; quote "
                            f"it: {cli.quoted(split)}")
        if not os.path.isdir(arg):
            paths.append(arg)
            continue
        if extensions is None:  # on the first folder: it loads every Pillow plugin, which files named need not
            extensions = picture_extensions()
        found = sorted(pictures_in(arg, extensions))
        if not found:
            raise no_pictures(arg, extensions)
        paths.extend(found)
    return paths


def split_at_spaces(args, i):
    """The path (str) that args[i] begins when the shell split it at its spaces (the app given `我的 图片/1.png`
    unquoted: neither word is there, `我的 图片/1.png` is), or None. Every word joined is not there on its own,
    and the joined path is (whatever it is: a picture, a folder)."""
    for j in range(i + 1, len(args)):
        if os.path.lexists(args[j - 1]):
            return None
        joined = " ".join(args[i:j + 1])
        if os.path.lexists(joined) and not os.path.lexists(args[j]):
            return joined
    return None


def no_pictures(folder, extensions):
    """The DataError for a folder given as pictures that holds none (picture_paths): what it holds instead, when
    that is a model (`model: ...; it holds checkpoints: a model is given with --model-dir model, the pictures
    after it`; places.holding) or folders of pictures, which the app does not enter (the course's
    `mnist_data_jpg`: `...; its folders mnist_data_jpg/mnist_test_jpg_10000 and ... hold pictures: name one`,
    at most 3 named); else `no picture files in this folder`. extensions: picture_extensions()."""
    from . import places  # imported here: places imports export, which imports this module
    line = f"{folder}: no picture files in this folder"
    model = places.holding(folder)
    if model is not None:
        give = model.give[0].split(" (")[0]  # an exports folder: its first export ("export/mnist (SavedModel)")
        return DataError(f"{line}; it {model.what}: a model is given with --model-dir {give}, the pictures after it")
    inside = [os.path.join(folder, name) for name in sorted(files.listing(folder)) if not name.startswith(".")]
    held = [path for path in inside if os.path.isdir(path) and next(pictures_in(path, extensions), None)]
    if held:
        named = cli.in_words(held[:3]) + (f" (and {len(held) - 3} more)" if len(held) > 3 else "")
        return DataError(f"{line}; its folder{'s' if len(held) > 1 else ''} {named} hold{'' if len(held) > 1 else 's'}"
                         f" pictures: name {'one' if len(held) > 1 else 'it'} (a folder's own pictures are read, not "
                         "its folders')")
    return DataError(line)


def pictures_in(folder, extensions=None):
    """The picture files of `folder` (paths, str, in the listing's order; an iterator, so that a caller asking
    whether there is one stops at the first): its files, not subfolders, whose extension names a format Pillow
    can open (extensions: picture_extensions(), when the caller has it), hidden files left out. Raises OSError
    when the folder cannot be listed."""
    extensions = picture_extensions() if extensions is None else extensions
    return (os.path.join(folder, name) for name in os.listdir(folder)
            if not name.startswith(".") and os.path.splitext(name)[1].lower() in extensions
            and os.path.isfile(os.path.join(folder, name)))

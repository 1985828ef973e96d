"""Getting MNIST-format data onto the machine as the course's JPG layout.

The course shipped its data as JPG files plus label text files
(`mnist_data_jpg/mnist_train_jpg_60000/` and `mnist_train_jpg_60000.txt`).
When that layout is missing, mnist_generateds.py builds it from IDX files
(the format of the original MNIST distribution) taken, in this order, from
  1. a folder the user names (`--idx-dir`, e.g. Debian's Fashion-MNIST),
  2. the official files, downloaded and checked against their sha256,
  3. the real MNIST sample bundled in this repository (data/mnist_sample/).
Folders are named for the number of images they really hold, and a
manifest (SOURCE.txt) lets a later run find what an earlier run built.
"""
import gzip
import hashlib
import os
import re
import shutil
import struct
import tempfile
import urllib.request

import numpy as np
from PIL import Image

from . import cli, files, folders
from .errors import DataError

# The four standard IDX file names, per split.
IDX_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
IDX_FOLDER = ("--idx-dir takes the folder holding the four MNIST IDX files ("
              + ", ".join(name for split in IDX_FILES.values() for name in split) + ")")  # what a refusal says
# Official MNIST sha256 (as distributed by Y. LeCun, C. Cortes, C. Burges).
MNIST_SHA256 = {
    "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}
# Read when a download starts, not bound as a default argument, so that a test
# can point it at a local address (tests/test_promises_data.py).
MIRRORS = (
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
)
DOWNLOAD_TIMEOUT = 10  # seconds per connection attempt
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
BUNDLED_DIR = os.path.join(HERE, "data", "mnist_sample")
MANIFEST = "SOURCE.txt"
COURSE_LAYOUT = {"train": "mnist_train_jpg_60000", "test": "mnist_test_jpg_10000"}  # the course's own folder names
JPG_QUALITY = 100  # the course's JPGs are lossy; keep the loss as small as JPG allows
IMAGE_MAGIC, LABEL_MAGIC = 2051, 2049


def read_idx(path):
    """Read one IDX file (gzip-compressed or plain) into a uint8 NumPy array.

    Images (magic 2051) come back as [count, rows, cols], labels (magic 2049)
    as [count]. Raises DataError naming `path` when the file is missing,
    is not IDX, or is shorter than its header says.
    """
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read IDX file ({e})") from None
    if len(data) < 8:
        raise DataError(f"{path}: not an IDX file (only {len(data)} bytes)")
    magic, count = struct.unpack(">II", data[:8])
    if magic == IMAGE_MAGIC:
        rows, cols = struct.unpack(">II", data[8:16])
        shape, offset = (count, rows, cols), 16
    elif magic == LABEL_MAGIC:
        shape, offset = (count,), 8
    else:
        raise DataError(f"{path}: not an IDX file (magic number {magic}, expected {IMAGE_MAGIC} or {LABEL_MAGIC})")
    need = int(np.prod(shape))
    if len(data) - offset < need:
        raise DataError(f"{path}: truncated IDX file ({len(data) - offset} of {need} data bytes)")
    return np.frombuffer(data, np.uint8, need, offset).reshape(shape)


def idx_file(idx_dir, name):
    """The path (str) of the IDX file `name` (a .gz name of IDX_FILES) in idx_dir, as it may be stored there:
    gzipped, unzipped by gunzip (`train-images-idx3-ubyte`), or under the name with a dot that copies of MNIST
    on Kaggle use (`train-images.idx3-ubyte`). Raises DataError naming the folder and the four files' names when
    none of them is there (a folder that is no IDX folder: `--idx-dir` given pictures, or the .zip's folder one
    level up), where open()'s `[Errno 2] No such file or directory` was said."""
    stem = name[:-len(".gz")]
    for candidate in (name, stem, stem.replace("-idx", ".idx", 1)):
        if os.path.isfile(os.path.join(idx_dir, candidate)):
            return os.path.join(idx_dir, candidate)
    raise DataError(f"{idx_dir}: no {name} here (nor {stem}, unzipped); {IDX_FOLDER}, gzipped or not")


def read_idx_split(idx_dir, split):
    """Images [n, 28, 28] uint8 and labels [n] uint8 of one split from a folder.

    Raises DataError when a file is missing or malformed, the images are not
    28x28, the counts disagree, or a label is not a digit 0-9.
    """
    image_name, label_name = IDX_FILES[split]
    image_path = idx_file(idx_dir, image_name)  # as stored (gzipped, unzipped, Kaggle's name): named so below
    images = read_idx(image_path)
    label_path = idx_file(idx_dir, label_name)
    labels = read_idx(label_path)
    if images.ndim != 3 or images.shape[1:] != (28, 28):
        raise DataError(f"{image_path}: expected 28x28 images, found shape {images.shape}")
    if labels.ndim != 1 or len(labels) != len(images):
        raise DataError(f"{idx_dir}: {len(images)} images in {os.path.basename(image_path)} but {labels.size} "
                        f"labels in {os.path.basename(label_path)}")
    if labels.size and labels.max() > 9:
        raise DataError(f"{label_path}: label {labels.max()} is not a digit 0-9")
    return images, labels


def sha256_of(path):
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_mnist(dest_dir, mirrors=None, timeout=DOWNLOAD_TIMEOUT, log=print):
    """Download the four official MNIST files into dest_dir, checking sha256.

    mirrors: base URLs tried in order for each file; None: MIRRORS.

    Files already present with the right sha256 are kept. Each file is
    written to a temporary name and renamed only once its hash matches.
    Returns True when all four files are in place, False (after logging why)
    when no mirror delivered them, e.g. on a machine without internet.
    """
    if mirrors is None:
        mirrors = MIRRORS
    os.makedirs(dest_dir, exist_ok=True)
    for name, want in MNIST_SHA256.items():
        target = os.path.join(dest_dir, name)
        if os.path.exists(target) and sha256_of(target) == want:
            continue
        for mirror in mirrors:
            url = mirror + name
            tmp = target + ".part"
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response, open(tmp, "wb") as out:
                    shutil.copyfileobj(response, out)
            except (OSError, ValueError) as e:
                log(f"download of {url} failed: {e}")
                files.remove(tmp)
                continue
            got = sha256_of(tmp)
            if got != want:
                log(f"download of {url} failed: sha256 {got} does not match the official {want}")
                files.remove(tmp)
                continue
            files.replace(tmp, target)
            break
        else:
            return False
    return True


def layout_names(split, count):
    """Course names for a split's image folder and label file holding `count` images."""
    stem = f"mnist_{split}_jpg_{count}"
    return stem, stem + ".txt"


def write_jpg_layout(images, labels, jpg_dir, split):
    """Save one split as the course's JPG layout under jpg_dir.

    images: uint8 [n, 28, 28]; labels: uint8 [n]. Writes
    `mnist_<split>_jpg_<n>/<i>_<digit>.jpg` (8-bit grayscale) and
    `mnist_<split>_jpg_<n>.txt` with lines `<i>_<digit>.jpg <digit>`.
    Both are written under temporary names and renamed at the end, so an
    interrupted run leaves no partial layout. Returns [image_dir, label_file],
    the image folder's path ending in os.sep.
    """
    stem, txt = layout_names(split, len(images))
    image_dir, label_file = os.path.join(jpg_dir, stem), os.path.join(jpg_dir, txt)
    tmp_dir = tempfile.mkdtemp(prefix=f".{stem}.", dir=jpg_dir)
    try:
        files.public_mode(tmp_dir)
        lines = []
        for i, (pixels, digit) in enumerate(zip(images, labels)):
            name = f"{i}_{digit}.jpg"
            Image.fromarray(pixels, mode="L").save(os.path.join(tmp_dir, name), quality=JPG_QUALITY)
            lines.append(f"{name} {digit}\n")
        with open(os.path.join(tmp_dir, txt), "w", encoding="utf-8") as f:
            f.writelines(lines)
    except BaseException as e:  # a full disk, Ctrl-C: nothing half-written is left
        shutil.rmtree(tmp_dir, ignore_errors=True)
        if isinstance(e, OSError):
            raise DataError(f"{jpg_dir}: cannot write the JPG layout ({files.why_not(e)})") from None
        raise
    try:  # the same names of an earlier build replaced; a stop here leaves neither half nor the temporary folder
        for old in (image_dir, label_file):
            if os.path.isdir(old):
                shutil.rmtree(old)
            elif os.path.exists(old):
                os.remove(old)
        files.replace(os.path.join(tmp_dir, txt), label_file)
        files.retrying(os.rename, tmp_dir, image_dir)
    except BaseException:
        for path in (tmp_dir, image_dir):
            shutil.rmtree(path, ignore_errors=True)
        files.remove(label_file)
        raise
    return [image_dir + os.sep, label_file]


def read_manifest(jpg_dir):
    """The layout an earlier run built: {'source': str, 'train': (dir, txt), 'test': ...} or None."""
    path = os.path.join(jpg_dir, MANIFEST)
    if not os.path.exists(path):
        return None
    entries = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(": ")
            entries[key] = value
    layout = {"source": entries.get("source", "?")}
    for split in IDX_FILES:
        if split not in entries:
            return None
        stem, txt = entries[split].split(" ")
        image_dir, label_file = os.path.join(jpg_dir, stem), os.path.join(jpg_dir, txt)
        if not (os.path.isdir(image_dir) and os.path.isfile(label_file)):
            return None
        layout[split] = (image_dir + os.sep, label_file)
    return layout


def mistyped(jpg_dir):
    """The DataError for a --jpg-dir that is not there while a folder beside it, named close to it, holds a JPG
    layout (the course's own folders, or one this generator built: MANIFEST), or None.

    A folder that is not there is built (build_jpg_layout: from --idx-dir,
    a download or the bundled sample), so a typo (`mnist_dta_jpg`) would
    build the sample's 10,000 digits beside the course's 70,000 and train on
    them without a word; the folder meant is named instead.
    """
    if os.path.exists(jpg_dir):
        return None

    def holds_layout(path):
        return os.path.isfile(os.path.join(path, MANIFEST)) or any(
            os.path.isdir(os.path.join(path, stem)) for stem in COURSE_LAYOUT.values())
    meant = cli.did_you_mean(jpg_dir, holds_layout)
    if not meant:
        return None
    return DataError(f"{jpg_dir}: no such folder; {meant} (a --jpg-dir that is not there "
                     f"is built from a download or the bundled sample: give a name of its own for that)")


def course_layout(jpg_dir):
    """The course's own JPG files in jpg_dir, {"train": (dir, txt), "test": (dir, txt)}, or None.

    Found by the course's names (COURSE_LAYOUT) in a folder that this
    generator did not build (no MANIFEST): the official MNIST built here
    takes the same names. Raises DataError naming what is missing when
    some of the four (two image folders, two label files) are there and
    others are not: the user's own files, never built over.
    """
    if os.path.exists(os.path.join(jpg_dir, MANIFEST)):
        return None
    layout = {split: (os.path.join(jpg_dir, stem) + os.sep, os.path.join(jpg_dir, stem + ".txt"))
              for split, stem in COURSE_LAYOUT.items()}
    parts = {f"{stem}/": os.path.isdir(os.path.join(jpg_dir, stem)) for stem in COURSE_LAYOUT.values()}
    parts.update({f"{stem}.txt": os.path.isfile(os.path.join(jpg_dir, stem + ".txt")) for stem in COURSE_LAYOUT.values()})
    if not any(parts.values()):
        return None
    missing = [name for name, there in parts.items() if not there]
    if missing:  # the user's own course files, one of them gone: named, never built over
        raise DataError(f"{jpg_dir}: the course's JPG layout is incomplete: {', '.join(missing)} "
                        f"{'is' if len(missing) == 1 else 'are'} missing (it needs {', '.join(parts)}); put "
                        f"{'it' if len(missing) == 1 else 'them'} back from the course's files, or give your "
                        "own images with --train-images, --train-labels, --test-images and --test-labels")
    return layout


def check_ours(jpg_dir):
    """Raise DataError unless jpg_dir is new, empty, or holds only what this generator writes there.

    The layout is built by deleting and renaming under the course's names,
    so it is built only where nothing is the user's own: a folder with a
    MANIFEST (an earlier build, finished or not), or one that holds nothing
    but hidden files and the download folder `idx` of IDX files.
    """
    try:
        names = sorted(os.listdir(jpg_dir))
    except FileNotFoundError:
        return
    except OSError as e:
        raise DataError(f"{jpg_dir}: cannot list the JPG folder ({e.strerror})") from None
    if MANIFEST in names:
        return
    idx_names = set(MNIST_SHA256) | {name + ".part" for name in MNIST_SHA256}
    for name in names:
        path = os.path.join(jpg_dir, name)
        if name.startswith("."):
            continue
        if name == "idx" and os.path.isdir(path) and set(os.listdir(path)) <= idx_names:
            continue
        raise DataError(f"{jpg_dir}: holds files that mnist_generateds.py did not write (e.g. {name!r}), so it "
                        "builds no JPG layout there; give an empty or new --jpg-dir, or your own images with "
                        "--train-images, --train-labels, --test-images and --test-labels")


def build_jpg_layout(jpg_dir, idx_dir=None, download=True, mirrors=None, log=print):
    """Make sure jpg_dir holds a JPG layout; build it from IDX files if needed.

    idx_dir given: build from that folder (rebuilt when the manifest names
    another source). Otherwise reuse what an earlier run built, else download
    the official MNIST (when `download`), else use the bundled sample.
    Returns the manifest dict (see read_manifest). Raises DataError when the
    chosen IDX source is unusable; all four files are read and checked
    before anything under jpg_dir is created or changed, so a broken source
    leaves an earlier layout (or none) as it was. Raises DataError, before
    anything is downloaded or written, for a jpg_dir holding files that
    this generator did not write (check_ours): it never deletes or
    overwrites the user's own; and, first of all, when idx_dir is given but
    is no folder (naming it and the four files it should hold).
    """
    if idx_dir is not None and not os.path.isdir(idx_dir):  # said of the folder, not of its first file
        what = "not a folder" if os.path.exists(idx_dir) else "no such folder"
        raise DataError(f"{idx_dir}: {what}; {IDX_FOLDER}")
    layout = read_manifest(jpg_dir)
    if layout is None:
        check_ours(jpg_dir)
    if idx_dir is not None:
        source = f"IDX files in {os.path.abspath(idx_dir)}"
    elif layout is not None:
        return layout
    else:
        source = None
        if download:
            idx_cache = os.path.join(jpg_dir, "idx")
            log(f"downloading the official MNIST into {idx_cache} ...")
            if download_mnist(idx_cache, mirrors, log=log):
                idx_dir, source = idx_cache, "official MNIST (downloaded, sha256 checked)"
            else:
                if not os.listdir(idx_cache):
                    os.rmdir(idx_cache)
                log("no download possible; using the MNIST sample bundled with this repository")
        if source is None:
            # An absolute path: the user's current folder may have a data/ of its own.
            idx_dir, source = BUNDLED_DIR, f"MNIST sample bundled in {BUNDLED_DIR}"
    if layout is not None and layout["source"] == source:
        return layout
    splits = {split: read_idx_split(idx_dir, split) for split in IDX_FILES}
    new_folders = files.missing_folders(jpg_dir)
    try:
        os.makedirs(jpg_dir, exist_ok=True)
        with folders.FolderLock(jpg_dir, "--jpg-dir"):  # another build would remove this one's folders
            return write_layout(jpg_dir, splits, source, layout, log)
    except BaseException as e:
        files.remove_empty_folders(new_folders)  # a stopped or failed first build leaves no empty folder
        if isinstance(e, OSError):
            raise DataError(f"{jpg_dir}: cannot write the JPG layout ({files.why_not(e)})") from None
        raise


def write_layout(jpg_dir, splits, source, layout, log=print):
    """Write every split of `splits` ({split: (images, labels)}) as the JPG layout, then its manifest.

    layout: the manifest of the layout there before, or None; its folders
    are removed once the new ones are in place. Returns the new manifest.
    Raises DataError when a file cannot be written (a full disk); no
    half-written folder is left, and without its manifest the next run
    builds the layout again.
    """
    # The manifest goes first, naming no layout, so a run killed while
    # rebuilding is never taken for the old source, and the folder stays
    # marked as ours (check_ours); the old folders go once the new are in place.
    # A build stopped or failed before its end takes back what it wrote (undo_build).
    manifest = os.path.join(jpg_dir, MANIFEST)
    before = None
    if layout is not None:  # the earlier build's manifest, put back by undo_build when its layout stays whole
        with open(manifest, encoding="utf-8") as f:
            before = f.read()
    entries, written = [f"source: {source}"], []
    try:
        files.write_atomically(manifest, files.text_writer(f"source: {source} (build not finished)\n"),
                               what="the JPG layout's manifest")
        remove_temporaries(jpg_dir)  # those of a build that was killed
        for split, (images, labels) in splits.items():
            log(f"writing {len(images)} {split} images as JPG files ...")
            written += write_jpg_layout(images, labels, jpg_dir, split)
            entries.append(f"{split}: " + " ".join(layout_names(split, len(images))))
    except BaseException:
        undo_build(jpg_dir, written, layout, before)
        raise
    if layout is not None:  # the previous source's folders, unless the new ones took their names
        kept = {name for entry in entries[1:] for name in entry.split(" ")[1:]}
        for split in IDX_FILES:
            for old in layout[split]:
                if os.path.basename(old.rstrip(os.sep)) in kept:
                    continue
                if os.path.isdir(old):
                    shutil.rmtree(old)
                else:
                    files.remove(old)
    files.write_atomically(manifest, files.text_writer("\n".join(entries) + "\n"), what="the JPG layout's manifest")
    return read_manifest(jpg_dir)


def remove_temporaries(jpg_dir):
    """Remove the temporary folders of write_jpg_layout in jpg_dir (`.mnist_train_jpg_8000.<letters>`)."""
    for name in files.listing(jpg_dir):
        if re.fullmatch(r"\.mnist_(train|test)_jpg_\d+\..+", name) and os.path.isdir(os.path.join(jpg_dir, name)):
            shutil.rmtree(os.path.join(jpg_dir, name), ignore_errors=True)


def undo_build(jpg_dir, written, layout, before):
    """Take back a build of the JPG layout stopped (Ctrl-C, SIGTERM) or failed (a full disk) before its end.

    written: the folders and label files it completed (write_jpg_layout's); layout: the manifest of the layout
    there before (None: a first build), whose text was `before`. Those of `written` that are no part of the
    earlier layout go; then the earlier manifest is put back when its layout is still whole (none of its names
    written over), and a first build's unfinished manifest goes (nothing of it stays); else the unfinished
    manifest stays, marking the folder as the generator's, so that the next run builds it again (check_ours)."""
    remove_temporaries(jpg_dir)  # one made by mkdtemp as the stop came, before write_jpg_layout knew its name
    kept = {os.path.normpath(path) for split in IDX_FILES for path in (layout or {}).get(split, ())}
    replaced = {os.path.normpath(path) for path in written}  # its names: the new build's now, not the earlier one's
    for path in replaced - kept:
        shutil.rmtree(path) if os.path.isdir(path) else files.remove(path)
    manifest = os.path.join(jpg_dir, MANIFEST)
    if layout is None:
        files.remove(manifest)
    elif not kept & replaced and all(os.path.exists(path) for path in kept):
        files.write_atomically(manifest, files.text_writer(before), what="the JPG layout's manifest")


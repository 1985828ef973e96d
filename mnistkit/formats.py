"""What a file is, from its first bytes: the name a message gives a file the product cannot read.

A TFRecord file compressed with GZIP, an iPhone's HEIC photo saved as
.jpg, a zip archive given as data: each is recognised by its signature
(its "magic bytes") and named, instead of "corrupted" or "not an image
file". No TensorFlow and no Pillow here.
"""
import zlib

HEAD_BYTES = 512  # read from the start of a file: enough for every signature below and a TFRecord header
# ISO base media file format (HEIF, AVIF): bytes 4-8 are b"ftyp", then the major brand and, after the
# minor version, the compatible brands, 4 bytes each.
HEIF_BRANDS = {b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1", b"hevm", b"hevs"}
AVIF_BRANDS = {b"avif", b"avis"}
SIGNATURES = (  # (offset, bytes, name): checked in order, the first match wins
    (0, b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (0, b"\xff\xd8\xff", "a JPEG image"),
    (0, b"GIF8", "a GIF image"),
    (0, b"BM", "a BMP image"),
    (0, b"\x89HDF\r\n\x1a\n", "an HDF5 file (Keras .h5 weights or data)"),
    (0, b"\x93NUMPY", "a NumPy .npy array"),
    (0, b"PK\x03\x04", "a zip archive (or a NumPy .npz)"),
    (0, b"PK\x05\x06", "an empty zip archive"),
    (0, b"%PDF", "a PDF document"),
    (0, b"BZh", "a BZIP2-compressed file"),
    (0, b"\xfd7zXZ\x00", "an XZ-compressed file"),
    (0, b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (0, b"\x28\xb5\x2f\xfd", "a Zstandard-compressed file"),
    (257, b"ustar", "a tar archive"),
)
IDX_TYPES = {0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E}  # IDX's data-type byte (ubyte, byte, short, int, float, double)


def read_head(path):
    """The first HEAD_BYTES bytes of a file (fewer when it is shorter); b"" when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read(HEAD_BYTES)
    except OSError:
        return b""


def heif_kind(head):
    """"HEIC/HEIF" or "AVIF" for an ISO-BMFF picture (an `ftyp` box at byte 4 naming such a brand), else None."""
    if head[4:8] != b"ftyp" or len(head) < 16:
        return None
    size = min(int.from_bytes(head[:4], "big"), len(head))
    brands = {head[8:12]} | {head[i:i + 4] for i in range(16, size - 3, 4)}
    if brands & AVIF_BRANDS and head[8:12] in AVIF_BRANDS:
        return "AVIF"
    if brands & HEIF_BRANDS:
        return "HEIC/HEIF"
    if brands & AVIF_BRANDS:
        return "AVIF"
    return None


def line_ends_dropped(body):
    """True when body (bytes) looks like a picture whose line-end bytes were taken out (curl -d @file sends a
    file so): no CR or LF byte in it, and it starts with an image's signature (SIGNATURES) with those taken out."""
    if b"\r" in body or b"\n" in body:
        return False
    return any(body.startswith(signature.replace(b"\r", b"").replace(b"\n", b""))
               for offset, signature, name in SIGNATURES if offset == 0 and name.endswith(" image"))


def is_idx(head):
    """True for the header of an IDX file (MNIST's own format): two zero bytes, a type byte, 1-4 dimensions."""
    return len(head) >= 4 and head[:2] == b"\0\0" and head[2] in IDX_TYPES and 1 <= head[3] <= 4


def describe(head, tfrecord_header=None):
    """What a file whose first bytes are `head` is: a short noun phrase ("a PNG image"), or None when unknown.

    A GZIP or ZLIB stream is looked into: its first decompressed bytes tell
    "a GZIP-compressed TFRecord file" (tfrecord_header: a function telling
    whether bytes start with a valid TFRecord record header; the caller's,
    records.is_record_header, which also names "a TFRecord file" itself) or
    "a GZIP-compressed IDX file" from any other GZIP-compressed file.
    """
    kind = heif_kind(head)
    if kind:
        return f"a {kind} photo"
    for offset, signature, name in SIGNATURES:
        if head[offset:offset + len(signature)] == signature:
            return name
    if tfrecord_header is not None and tfrecord_header(head):
        return "a TFRecord file"
    for compression, inflate in (("GZIP", _gunzip_head), ("ZLIB", _inflate_head)):
        inner = inflate(head)
        if inner is None:
            continue
        if tfrecord_header is not None and tfrecord_header(inner):
            return f"a {compression}-compressed TFRecord file"
        if is_idx(inner):
            return f"a {compression}-compressed IDX file (MNIST's download format)"
        return f"a {compression}-compressed file"
    if is_idx(head):
        return "an IDX file (MNIST's download format)"
    return None


def _gunzip_head(head):
    """The first decompressed bytes of a GZIP stream's start, or None when head is no GZIP stream."""
    if head[:2] != b"\x1f\x8b":
        return None
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
    except zlib.error:
        return b""


def _inflate_head(head):
    """The first decompressed bytes of a ZLIB stream's start (RFC 1950 header), or None when head is none."""
    if len(head) < 2 or head[0] & 0x0F != 8 or (head[0] << 8 | head[1]) % 31:
        return None
    try:
        inner = zlib.decompressobj().decompress(head, 64)
    except zlib.error:
        return None
    return inner if inner else None


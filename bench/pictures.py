"""Benchmark: pictures a person reads at a glance (issue 53 item 10), read rate per kind against the plain pictures.

Usage (from the repository root):
  python bench/pictures.py --model-dir model          read rates with a trained model (mnist_backward.py)
  python bench/pictures.py                             without a model: refusals and inputs against the plain ones
  python bench/pictures.py --count 100 --first 500     more of the sample's test digits, from another one
  python bench/pictures.py --model-dir model --set penned   digits written with a pen and photographed
  python bench/pictures.py --model-dir model --set painted  digits drawn with a paint program's brush
  python bench/pictures.py --model-dir model --set glance   filled loops, tiny pictures, faint pencil, shadows
  python bench/pictures.py --model-dir model --set others   coloured ink, file formats, screenshots, Paint BMPs...
  python bench/pictures.py --model-dir model --set student  exercise books, a date, marker, vignette, phone app...
  python bench/pictures.py --set close                 two digits written close: refused as several?

Each kind of tests/framed.py (a frame or a border round the digit, a shaded or
uneven ground, JPEG noise, a photo with the table round the page) is made of
the same digits as the plain kind: `--count` of the bundled sample's MNIST
test digits scaled to 280x280 and 10 pen-drawn digits. Each picture is
prepared as mnist_app.py prepares it (prepared_pixels, --preprocess mnist).
Per kind the bench prints:
  refused   pictures the app refused (no digit found, several digits)
  same      pictures whose 28x28 input matches the plain picture's (a ring, a box or
            a line round a smaller digit: the twin's, the digit alone): the IoU of
            their ink (pixels >= 128) is at least 0.8
  read      pictures read as their label (with --model-dir)
  vs plain  read / the plain kind's read: 1.00 when the kind costs nothing

With --set penned, the kinds of tests/penned.py (the sample's test digits
redrawn with a ballpoint, a felt pen or a marker, on plain or ruled paper,
photographed off-centre, small, or in faint pencil; on squared paper or across
dark ruled lines, beside the same photos on plain paper) and per kind:
  refused   as above
  read      pictures read as their label
  lost      pictures misread whose MNIST 28x28 digit the model reads right:
            the preparation's own misreads, out of those
With --set painted, the kinds of tests/painted.py (the sample's test digits
redrawn black on white with a paint program's brush, as students draw the
pictures of their course's pic/ folder: any canvas, brush and place), the
same figures as --set penned.
With --set glance, the kinds of tests/glance.py (the same redrawn digits with
their loops filled in, in a tiny picture or a few pixels tall in a large one,
cropped tight at the edge, in a box drawn askew, in faint pencil on grey
paper, under a phone's shadow in a corner; beside their twin, the felt pen's
digit on white), the same figures as --set penned.
With --set others, the kinds of tests/others.py (the same redrawn digits as
other students put them in their repositories: coloured ink on white or cream
paper, a canvas's transparent PNG, LA, palette, 1-bit and 16-bit PNGs, CMYK
and progressive JPEG, GIF, WebP, a phone JPEG turned by its EXIF orientation,
Windows Paint BMPs, notebook paper at an angle, an upscaled small photo, a
screenshot of the paint window, 1-px strokes, a European 7 and 1; beside their
twin, the brush digit on white as PNG), the same figures as --set penned.
With --set student, the kinds of tests/student.py (the same redrawn digits as
a student photographs, scans or screenshots them: an exercise book's lines or
squares, a date and an underline, a thick marker or a fine pen, ink touching
the edge, a strong vignette, a phone's drawing app, white on black, faint
pencil on grey paper, JPEG quality 10, printed digits; beside their twin, the
felt pen's photo on white), the same figures as --set penned.
With --set close, the kinds of tests/close.py (two of the sample's test digits
side by side, apart, close or touching, and the first alone; `--count` pairs)
and per kind:
  several   pictures refused as several digits (what two digits must get)
  other     pictures refused otherwise
  one       pictures read as one digit (with --model-dir: and how many of
            them as their first digit, "right")
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

import close  # noqa: E402
import framed  # noqa: E402
import glance  # noqa: E402
import painted  # noqa: E402
import penned  # noqa: E402
import student  # noqa: E402
import mnist_app  # noqa: E402
import others  # noqa: E402
from mnistkit import cli  # noqa: E402
from mnistkit.errors import DataError  # noqa: E402

SAME_IOU = 0.8
# --set: the MNIST digits redrawn, by module
REDRAWN = {"penned": penned, "painted": painted, "glance": glance, "others": others,
            "student": student}


def ink_iou(a, b):
    """IoU of the ink (>= 128) of two uint8 [28, 28] inputs; 1.0 when neither has any."""
    a, b = a >= 128, b >= 128
    union = np.count_nonzero(a | b)
    return np.count_nonzero(a & b) / union if union else 1.0


def prepare(data):
    """(uint8 [28, 28] input, None) or (None, the refusal's text) for one picture's bytes."""
    try:
        return mnist_app.prepared_pixels(data, name="picture"), None
    except DataError as e:
        return None, str(e)


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--model-dir", help="a trained model folder (or an export) to read the pictures with")
    parser.add_argument("--count", type=int, default=60, help="the sample's test digits per kind")
    parser.add_argument("--first", type=int, default=0, help="the first of the sample's test digits used")
    parser.add_argument("--kinds", nargs="*", help="only these kinds (names as printed)")
    parser.add_argument("--show", action="store_true", help="print each refusal and misread")
    parser.add_argument("--set", choices=("framed", "penned", "painted", "glance", "others", "student", "close"),
                        default="framed",
                        help="framed: tests/framed.py's kinds (default); penned, painted, glance, others, student: "
                             "tests/penned.py's, painted.py's, glance.py's, others.py's or student.py's "
                             "(need --model-dir)")
    parser.add_argument("--save", help="a folder to write each misread picture's 28x28 input to (PNG, x8)")
    args = parser.parse_args(argv)
    predictor = mnist_app.load_predictor(args.model_dir) if args.model_dir else None
    if args.set == "close":
        return bench_close(predictor, args)
    if args.set in REDRAWN:
        if predictor is None:
            parser.error(f"--set {args.set} reads the pictures with a model: give --model-dir")
        return bench_redrawn(predictor, args, REDRAWN[args.set])
    digits = framed.coverages(args.count, args.first)
    plain = [prepare(data)[0] for data, _ in framed.pictures("plain", digits)]
    twin = [prepare(data)[0] for data, _ in framed.pictures(framed.TWIN, digits)]  # a mark round a smaller digit
    plain_read = None
    print(f"{len(digits)} pictures per kind ({args.count} sample test digits from {args.first}, 10 pen digits)")
    print(f"{'kind':36} {'refused':>8} {'same':>7} {'read':>7} {'vs plain':>9}")
    for kind in args.kinds or framed.KINDS:
        refused = same = read = 0
        base = twin if kind in framed.SEEDS else plain
        for i, (data, label) in enumerate(framed.pictures(kind, digits)):
            pixels, refusal = prepare(data)
            if pixels is None:
                refused += 1
                if args.show:
                    print(f"  {kind} #{i} ({label}): {refusal}")
                continue
            same += base[i] is not None and ink_iou(pixels, base[i]) >= SAME_IOU
            if predictor is not None:
                answer = int(np.argmax(predictor.predict(mnist_app.preparation.network_input(pixels))[0]))
                read += answer == label
                if args.show and answer != label:
                    print(f"  {kind} #{i} ({label}): read as {answer}, IoU with plain "
                          f"{ink_iou(pixels, base[i]) if base[i] is not None else 0:.2f}")
        n = len(digits)
        if kind == "plain":
            plain_read = read
        rate = f"{read / n:7.1%}" if predictor is not None else f"{'-':>7}"
        versus = f"{read / plain_read:9.2f}" if predictor is not None and plain_read else f"{'-':>9}"
        print(f"{kind:36} {refused:8d} {same / n:7.1%} {rate} {versus}", flush=True)
    return 0


def answer_of(predictor, pixels):
    """The model's digit (int) for one uint8 [28, 28] input."""
    return int(np.argmax(predictor.predict(mnist_app.preparation.network_input(pixels))[0]))


def bench_redrawn(predictor, args, kinds):
    """The kinds of tests/penned.py, painted.py, glance.py or others.py (`kinds`: the module): refused, read, and the
    preparation's own misreads (lost), per kind."""
    images, labels = framed.sample_digits(args.count, args.first)
    right = np.array([answer_of(predictor, image) for image in images]) == labels
    print(f"{len(images)} pictures per kind (sample test digits {args.first}-{args.first + len(images) - 1}; the model "
          f"reads {right.mean():.1%} of them right as MNIST's 28x28)")
    print(f"{'kind':42} {'refused':>8} {'read':>7} {'lost':>12}")
    total_lost = total_right = 0
    for kind in args.kinds or kinds.KINDS:
        refused = read = lost = 0
        for i, (data, label) in enumerate(kinds.pictures(kind, images, labels)):
            pixels, refusal = prepare(data)
            answer = None if pixels is None else answer_of(predictor, pixels)
            refused += pixels is None
            read += answer == label
            if right[i] and answer != label:
                lost += 1
                if args.show:
                    print(f"  {kind} #{i} ({label}): " + (refusal if pixels is None else f"read as {answer}"))
                if args.save and pixels is not None:
                    os.makedirs(args.save, exist_ok=True)
                    name = f"{kind.split()[0]}-{i}-{label}-as-{answer}.png"
                    both = np.hstack([images[i], pixels])
                    Image.fromarray(both).resize((both.shape[1] * 8, 224)).save(os.path.join(args.save, name))
        total_lost, total_right = total_lost + lost, total_right + right.sum()
        print(f"{kind:42} {refused:8d} {read / len(images):7.1%} {lost:4d} of {right.sum():<4d}", flush=True)
    print(f"{'all':42} {'':8} {'':7} {total_lost:4d} of {total_right:<4d} ({total_lost / total_right:.1%} lost)")
    return 0


def bench_close(predictor, args):
    """The kinds of tests/close.py: refused as several digits, refused otherwise, read as one digit (and right:
    as its first digit), per kind."""
    print(f"{args.count} pictures per kind (sample test digits {args.first}-{args.first + 2 * args.count - 1} in pairs)")
    print(f"{'kind':42} {'several':>8} {'other':>6} {'one':>5} {'right':>6}")
    for kind in args.kinds or close.KINDS:
        several = other = one = right = 0
        for i, (data, (label, second)) in enumerate(close.pictures(kind, args.count, args.first)):
            pixels, refusal = prepare(data)
            if pixels is None:
                several += "several digits found" in refusal
                other += "several digits found" not in refusal
                if args.show:
                    print(f"  {kind} #{i} ({label} {second}): {refusal}")
                continue
            one += 1
            answer = answer_of(predictor, pixels) if predictor is not None else None
            right += answer == label
            if args.show and kind != close.ALONE:
                print(f"  {kind} #{i} ({label} {second}): read as one digit" + (f", {answer}" if predictor else ""))
        print(f"{kind:42} {several:8d} {other:6d} {one:5d} {right if predictor else '-':>6}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: a browser's canvas read-back noise against the board's 28x28 input (issue 53 item 5), per pen and kind.

Usage (from the repository root):
  python bench/readback_noise.py                          the most each drawing's input moved, per kind and pen
  python bench/readback_noise.py --model-dir model        and whether the network's answer changed
  python bench/readback_noise.py --pens 6 8 --kinds filling --json out.json

Brave and Firefox 145 move a few of a canvas's pixels by a few gray levels
when a page reads it back. Each drawing is black on the board's white
280x280 canvas, with soft (anti-aliased) edges, in a pen of --pens pixels:
  handmade  tests/handmade.py's digits 0-9 (a hand's wobble), 35%, 55% and
            80% of the board tall, centred
  round     the sample's test digits 300-309 redrawn along their middle line
            with a round brush (tests/painted.py), the digit about half the board
  square    the same with a square brush (no round caps or joints)
  gaps      the round brush, its strokes broken by gaps (a drawing whose
            pointer left the board)
  corner    the round brush, the digit about 100 pixels tall in the top left corner
  filling   the round brush, the digit filling the canvas (its sides reach the edges)
Each drawing is read plain and with 9 draws of noise: 4 on 1% of the
pixels anywhere (1 to 1, 2, 3 levels), 4 on 1% of the pixels all on the
strokes' soft edges (half of them at most, or those there are when fewer),
1 on every soft-edge pixel. Per kind and pen: the most the input moved
(levels), how many noisy drawings moved by more than a level, and with a
model how many changed the answer (and how many plain drawings it misreads).
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

import framed  # noqa: E402
import handmade  # noqa: E402
import mnist_app  # noqa: E402
import painted  # noqa: E402
from mnistkit import cli  # noqa: E402
from mnistkit.errors import DataError  # noqa: E402

PENS = (2, 3, 4, 6, 8, 10, 12, 14, 18, 24, 30, 40)
KINDS = ("handmade", "round", "square", "gaps", "corner", "filling")
EDGE_SHARE = 0.01  # of the board's pixels


def handmade_drawing(digit, pen, height, seed):
    """tests/handmade.py's digit `height` of the board tall in a round pen of `pen` pixels: uint8 [280, 280]."""
    size = int(280 * height / 0.8)  # draw_digit leaves a tenth of its square free on each side
    page = np.zeros((280, 280))
    at = (280 - size) // 2
    page[at:at + size, at:at + size] = handmade.draw_digit(digit, size, pen / size, seed=seed)
    return framed.to_uint8(framed.on_ground(page, 255, ink=0))


def brushed(segments, top, left, size, pen, square=False):
    """The segments (painted.middle_line) black on white 280x280, a brush of `pen` pixels: uint8 [280, 280]."""
    if not square:
        return painted.paint(segments, (280, 280), top, left, size, pen)
    k = painted.SMOOTH
    img = Image.new("L", (280 * k, 280 * k), 255)
    draw = ImageDraw.Draw(img)
    scale, half = size / 280 * k, pen * k / 2
    for (r0, c0), (r1, c1) in segments:
        for t in np.linspace(0, 1, 4):
            y, x = top * k + (r0 + t * (r1 - r0) + 0.5) * scale, left * k + (c0 + t * (c1 - c0) + 0.5) * scale
            draw.rectangle([x - half, y - half, x + half, y + half], fill=0)
    return np.asarray(img.reduce(k))


def drawings(kind, pen):
    """[(name, uint8 [280, 280], label)] of one kind in a pen of `pen` pixels."""
    if kind == "handmade":
        return [(f"{d} at {h:.0%}", handmade_drawing(d, pen, h, seed=700 + d), d)
                for h in (0.35, 0.55, 0.8) for d in range(10)]
    images, labels = framed.sample_digits(10, 300)
    out = []
    for i, (image, label) in enumerate(zip(images, labels)):
        segments = painted.middle_line(image)
        if kind == "gaps":  # bands of the digit's square left out across, as a pen lifted
            middle = segments.mean(axis=1)
            segments = segments[((middle[:, 0] + 3 * middle[:, 1]) // 30) % 4 != 3]
        top_left, size = {"corner": ((6, 6), 140), "filling": ((-56, -56), 392)}.get(kind, ((70, 70), 200))
        out.append((f"sample {300 + i}", brushed(segments, *top_left, size, pen, square=kind == "square"), int(label)))
    return out


def anywhere(drawing, seed, most):
    """EDGE_SHARE of the pixels, anywhere, moved by 1 to `most` levels (never 0): uint8."""
    rng = np.random.default_rng(seed)
    noisy = drawing.astype(int)
    where = rng.random(drawing.shape) < EDGE_SHARE
    noisy[where] += rng.choice([s for s in range(-most, most + 1) if s], where.sum())
    return np.clip(noisy, 0, 255).astype(np.uint8)


def on_edges(drawing, seed, every=False, most=3):
    """EDGE_SHARE of the pixels on the soft edges (levels 1-254; at most half of them unless every: all of them)
    moved by 1 to `most` levels: uint8."""
    rng = np.random.default_rng(seed)
    edge = np.argwhere((drawing > 0) & (drawing < 255))
    count = len(edge) if every else min(int(EDGE_SHARE * drawing.size), len(edge) // 2)
    picked = edge[rng.choice(len(edge), count, replace=False)]
    noisy = drawing.astype(int)
    noisy[picked[:, 0], picked[:, 1]] += rng.choice([s for s in range(-most, most + 1) if s], len(picked))
    return np.clip(noisy, 0, 255).astype(np.uint8)


def noisy_versions(drawing, seed):
    """The 9 noisy read-backs of one drawing: [uint8 [280, 280]]."""
    return ([anywhere(drawing, seed + k, most) for k, most in enumerate((1, 2, 3, 3))]
            + [on_edges(drawing, seed + 10 + k, most=1 + k % 3) for k in range(4)]
            + [on_edges(drawing, seed + 20, every=True)])


def prepared(drawing):
    """The drawing's 28x28 input (uint8), or None when refused."""
    try:
        return mnist_app.prepared_pixels(framed.png(drawing), name="drawing.png")
    except DataError:
        return None


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--model-dir", help="a trained model folder: also count changed answers")
    parser.add_argument("--pens", type=int, nargs="*", default=PENS)
    parser.add_argument("--kinds", nargs="*", default=KINDS, choices=KINDS)
    parser.add_argument("--show", type=int, default=2, help="print each drawing that moved by more than this")
    parser.add_argument("--json", help="write every drawing's figures here")
    args = parser.parse_args(argv)
    predictor = mnist_app.load_predictor(args.model_dir) if args.model_dir else None
    rows = []
    print(f"{'kind':9} {'pen':>4} {'drawings':>8} {'most':>5} {'>1':>4} {'answer changed':>15} {'plain misread':>14}")
    for kind in args.kinds:
        for pen in args.pens:
            most = over = changed = misread = count = 0
            for n, (name, drawing, label) in enumerate(drawings(kind, pen)):
                plain = prepared(drawing)
                if plain is None:
                    print(f"  {kind} pen {pen} {name}: refused plain")
                    continue
                inputs = [plain]
                for k, noisy in enumerate(noisy_versions(drawing, 1000 * pen + 10 * n)):
                    got = prepared(noisy)
                    moved = 255 if got is None else int(np.abs(got.astype(int) - plain).max())
                    inputs.append(plain if got is None else got)
                    most, over, count = max(most, moved), over + (moved > 1), count + 1
                    if moved > args.show:
                        print(f"  {kind} pen {pen} {name} noise {k}: moved by {moved}")
                    rows.append({"kind": kind, "pen": pen, "name": name, "noise": k, "moved": moved})
                if predictor is not None:
                    x = np.stack(inputs).reshape(-1, 784).astype(np.float32) / 255
                    answers = np.argmax(predictor.predict(x), axis=1)
                    changed += int((answers[1:] != answers[0]).sum())
                    misread += int(answers[0] != label)
            answer = f"{changed:15d}" if predictor else f"{'-':>15}"
            wrong = f"{misread:14d}" if predictor else f"{'-':>14}"
            print(f"{kind:9} {pen:4d} {count:8d} {most:5d} {over:4d} {answer} {wrong}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())

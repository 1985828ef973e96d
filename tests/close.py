"""Two digits written close together, side by side (issue 53 item 10): pictures the app must refuse, not read.

A person asked to read "the digit" in a picture of two digits says there
are two. The app refuses several digits with one line (segmentation's
SeveralDigits: "several digits found (2 side by side) ..."); digits
written closer than a clear gap used to make one part, read as one digit.
Each KIND puts two of the bundled sample's MNIST test digits (real
handwriting, scaled up 10 times) side by side on white paper, the gap
between their inks a share of the first one's ink height: apart (0.1 to
0.2, a clear gap), close (0 to 0.085, closer than segmentation.DIGIT_GAP)
and touching (their boxes overlapping by up to 0.08, so their strokes may
meet). "one digit (the first alone)" is the first digit alone at the same
size and place: never refused. Every picture is deterministic (seeded).

  python tests/close.py OUTDIR        # writes every kind's pictures and OUTDIR/labels.txt
bench/pictures.py --set close refuses or reads them and counts per kind.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import framed  # noqa: E402

SCALE = 10  # MNIST's 28 pixels to 280
GAPS = {  # kind: (lowest, highest) gap between the two inks, of the first ink's height (negative: overlapping)
    "two digits apart (0.1-0.2)": (0.1, 0.2),
    "two digits close (0-0.085)": (0.0, 0.085),
    "two digits touching (overlap up to 0.08)": (-0.08, 0.0),
}
ALONE = "one digit (the first alone)"
KINDS = [ALONE, *GAPS]


def _ink_columns(coverage):
    """coverage (float [h, w]) cut to the columns that hold ink."""
    cols = np.nonzero(coverage.max(axis=0) > 0.05)[0]
    return coverage[:, cols[0]:cols[-1] + 1]


def pair(first, second, gap, alone=False):
    """Two digits' coverages (float [h, w] in [0, 1]) side by side, `gap` of the first one's ink height between
    their inks (negative: overlapping, the darker of the two where they do), on a page with a margin of 0.2 of the
    height round them: float [H, W] in [0, 1]. alone: the second left out, the page as wide."""
    a, b = _ink_columns(first), _ink_columns(second)
    b = np.zeros_like(b) if alone else b
    rows = np.nonzero(a.max(axis=1) > 0.05)[0]
    space = int(round(gap * (rows[-1] - rows[0] + 1)))
    width = a.shape[1] + space + b.shape[1]
    row = np.zeros((a.shape[0], max(width, a.shape[1])))
    row[:, :a.shape[1]] = a
    at = a.shape[1] + space
    row[:, at:at + b.shape[1]] = np.maximum(row[:, at:at + b.shape[1]], b)
    margin = int(0.2 * a.shape[0])
    page = np.zeros((a.shape[0] + 2 * margin, row.shape[1] + 2 * margin))
    page[margin:margin + a.shape[0], margin:margin + row.shape[1]] = row
    return page


def one_beside(one, other, ratio, gap, one_first=True):
    """A 1 beside another digit (MNIST images uint8 [28, 28], stroke bright), the 1 `ratio` times as tall (scaled to
    280 x ratio, the other to 280), their middles level, `gap` of the first one's ink height between their inks: PNG
    bytes of black ink on white. "10" with a tall 1, "13" with a short one, as people write them."""
    a, b = framed.coverage_of_mnist(one, int(28 * SCALE * ratio)), framed.coverage_of_mnist(other, 28 * SCALE)
    height = max(a.shape[0], b.shape[0])

    def level(coverage):
        out = np.zeros((height, coverage.shape[1]))
        top = (height - coverage.shape[0]) // 2
        out[top:top + coverage.shape[0]] = coverage
        return out
    page = pair(level(a), level(b), gap) if one_first else pair(level(b), level(a), gap)
    return framed.png(framed.to_uint8(framed.on_ground(page, 255)))


def pictures(kind, count, first=0):
    """Every picture of one kind: [(PNG bytes, (label of the first digit, label of the second))], the sample's test
    digits first, first + 1 and so on in pairs (the j-th picture: digits first + 2j and first + 2j + 1)."""
    images, labels = framed.sample_digits(2 * count, first)
    out = []
    for j in range(len(images) // 2):
        rng = np.random.default_rng([sum(map(ord, kind)), first, j])
        a, b = (framed.coverage_of_mnist(images[2 * j + k], 28 * SCALE) for k in (0, 1))
        low, high = GAPS.get(kind, (0.1, 0.2))
        page = pair(a, b, rng.uniform(low, high), alone=kind == ALONE)
        out.append((framed.png(framed.to_uint8(framed.on_ground(page, 255))), (int(labels[2 * j]), int(labels[2 * j + 1]))))
    return out


def write_all(folder, count=20):
    """Write every kind's pictures of `count` pairs into folder; labels.txt: name first-label second-label."""
    return framed.write_pictures(folder, ((kind.split(" (")[0].replace(" ", "-") + f"-{i:03d}.png", data, f"{a} {b}")
                                          for kind in KINDS for i, (data, (a, b)) in enumerate(pictures(kind, count))))

if __name__ == "__main__":
    print(write_all(sys.argv[1]), "pictures written to", sys.argv[1])

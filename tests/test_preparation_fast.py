"""The preparation's faster steps give what the steps they replaced gave, value for value (docs/performance.md,
"A picture's preparation"): the supersampled 28x28's cells all at once (preparation.cell_max, and digit_cells's
first pass on the crop's columns alone), the slope searches' counts from runs down the columns and a table of
the columns' shifts (ruling._gathered), the grid's percentiles from a partition of each cell
(levels.cell_percentiles), the cells of a mask (levels.true_cells) and the marks' labels numbered
(levels.unique_labels). The replaced steps are kept here as they were, the reference; pictures of
tests/framed.py and tests/penned.py (a frame, a frame askew, shading, ruled and squared paper) give the
weights and masks they are run on."""
import io
import math

import numpy as np
import pytest
from PIL import Image

import framed
import penned
from mnistkit import levels, preparation, ruling, segmentation
from mnistkit.pictures import shrink

FRAMED_KINDS = ("thin frame", "frame askew (3-10 degrees)", "frame and shading", "circled")
PENNED_KINDS = ("squared paper (0.15-0.3 of the digit)", "ruled lines across, dark as the ink")


def old_cell_max(weight, start, end, cells, axis, within):
    """preparation.cell_max before: one cell at a time."""
    weight = np.moveaxis(weight, axis, 0)
    side = (end - start) / cells
    out = np.zeros((cells,) + weight.shape[1:], np.float32)
    for cell in range(cells):
        low, high = max(start + cell * side, within[0]), min(start + (cell + 1) * side, within[1])
        first, last = max(0, math.floor(low)), min(len(weight), math.ceil(high))
        if first >= last or low >= high:
            continue
        index = np.arange(first, last)
        share = np.minimum(1.0, (np.minimum(index + 1, high) - np.maximum(index, low))
                           / (preparation.CELL_FULL * min(1.0, side)))
        out[cell] = (weight[first:last] * share.astype(np.float32)[:, None]).max(axis=0)
    return np.moveaxis(out, 0, axis)


def old_gathered(rows, cols, slopes, score):
    """ruling._gathered before: round(slope x column) for each pixel, u from its least."""
    scores = np.empty(len(slopes))
    chunk = max(1, ruling.GATHER_CELLS // rows.size)
    for first in range(0, len(slopes), chunk):
        part = slopes[first:first + chunk]
        u = rows - np.round(cols * part[:, None]).astype(np.int64)
        u -= u.min(axis=1, keepdims=True)
        span = int(u.max()) + 1
        u += np.arange(len(part))[:, None] * span
        counts = np.bincount(u.ravel(), minlength=len(part) * span).reshape(len(part), span).astype(np.float64)
        scores[first:first + chunk] = score(counts)
    return scores


@pytest.fixture(scope="module")
def pictures():
    """Gray PIL pictures, as mnist_input is given them: 2 digits of each kind above."""
    images, labels = framed.sample_digits(2, 100)
    out = []
    for kind in FRAMED_KINDS:
        for i, image in enumerate(images):
            data = framed.KINDS[kind](framed.coverage_of_mnist(image), i, np.random.default_rng([sum(map(ord, kind)), i]))
            out.append(shrink(Image.open(io.BytesIO(data)).convert("L")))
    for kind in PENNED_KINDS:
        out += [shrink(Image.open(io.BytesIO(data)).convert("L")) for data, _ in penned.pictures(kind, images, labels)]
    return out


def digit_weights(img):
    """What mnist_input shapes the digit from: (weight float32 [h, w], box, centre, extent)."""
    ink, level, threshold = segmentation.find_ink(img, levels=True)
    weight = preparation.ink_weight(level, threshold, ink)
    rows, cols = weight.sum(axis=1), weight.sum(axis=0)
    box = preparation.ink_extent(rows) + preparation.ink_extent(cols)
    centre = (rows @ (np.arange(len(rows)) + 0.5) / rows.sum(), cols @ (np.arange(len(cols)) + 0.5) / cols.sum())
    return weight, box, centre, max(box[1] - box[0], box[3] - box[2])


@pytest.mark.quick
def test_the_cells_all_at_once_are_the_cells_one_at_a_time(pictures):
    """digit_cells at the scale mnist_input uses, at a thickened stroke's (smaller) and a thinned one's (larger),
    equals the old cell_max's cells over every column, to the bit; so do cells smaller than a pixel, a crop
    cutting cells in two, and cells beyond the picture's edge."""
    side = preparation.SUPERSAMPLE * preparation.DIGIT_BOX
    for img in pictures:
        weight, box, centre, extent = digit_weights(img)
        for scale in (side, side - 5, side + 7):
            new = preparation.digit_cells(weight, box, centre, extent / scale)
            cells = preparation.SUPERSAMPLE * preparation.IMAGE_SIZE
            span = cells * extent / scale
            before = (preparation.SUPERSAMPLE * preparation.CENTRE + preparation.SUPERSAMPLE / 2) * extent / scale
            top = float(np.clip(centre[0] - before, box[1] - span, box[0]))
            left = float(np.clip(centre[1] - before, box[3] - span, box[2]))
            old = old_cell_max(old_cell_max(weight, top, top + span, cells, 0, box[:2]),
                               left, left + span, cells, 1, box[2:])
            assert new.dtype == old.dtype and np.array_equal(new, old)
    weight = np.random.default_rng(0).random((23, 17)).astype(np.float32)
    for start, end, within in ((-3.3, 30.1, (0.4, 22.7)), (2.25, 9.5, (3.1, 8.9)), (-40.0, -2.0, (0, 23)),
                               (5.0, 60.0, (0, 23))):
        for axis in (0, 1):
            assert np.array_equal(preparation.cell_max(weight, start, end, 112, axis, within),
                                  old_cell_max(weight, start, end, 112, axis, within))


# not quick: over 2 s a run (make test runs it), so make test-quick keeps under a minute
def test_the_slope_counts_from_a_table_of_columns_are_the_counts_of_each_pixel(pictures):
    """ruling._gathered's scores (both _squares and _peak) equal the old per-pixel counts' on the dark pixels of
    the pictures and on their transposes, over the slopes the searches try, GATHER_CELLS pixels at a time."""
    for img in pictures:
        dark = segmentation.ink_darkness(np.asarray(img)) >= 32
        for view in (dark, dark.T):
            rows, cols = np.nonzero(view)
            if not rows.size:
                continue
            w = view.shape[1]
            for slopes in (np.arange(-ruling.RULE_ASKEW, ruling.RULE_ASKEW + 1e-9, 4 / w),
                           np.arange(-ruling.FRAME_SLOPE, ruling.FRAME_SLOPE + 1e-9, 1 / w)):
                for score in (ruling._squares, ruling._peak):
                    assert np.array_equal(ruling._gathered(rows, cols, slopes, score),
                                          old_gathered(rows, cols, slopes, score))


@pytest.mark.quick
def test_the_grids_percentiles_are_numpys_for_each_cell(pictures):
    """levels.cell_percentiles equals np.percentile over each cell's pixels (the last row and column of cells
    filled out by the edge), uint8 and whole-level floats, at the grids paper_light and light_on_dark use."""
    grays = [np.asarray(img) for img in pictures[::3]] + [np.random.default_rng(1).integers(0, 256, (97, 61))]
    for gray in grays:
        for values in (gray.astype(np.uint8), gray.astype(np.float32)):
            found, cell = levels.cell_percentiles(values, [10, 37.5, 50, 90], segmentation.LIGHTING_GRID)
            rows, cols = found.shape[1:]
            padded = np.pad(gray.astype(np.float64), ((0, rows * cell - gray.shape[0]),
                                                      (0, cols * cell - gray.shape[1])), mode="edge")
            for k, p in enumerate([10, 37.5, 50, 90]):
                for i in range(0, rows, 5):
                    for j in range(0, cols, 3):
                        assert found[k, i, j] == np.percentile(padded[i * cell:(i + 1) * cell,
                                                                      j * cell:(j + 1) * cell], p)


@pytest.mark.quick
def test_the_cells_of_a_mask_are_numpys_nonzero(pictures):
    """levels.true_cells gives np.nonzero's rows and columns, in its order, for a mask, its transpose (a view),
    a slice, an empty mask and one with no rows."""
    masks = [segmentation.ink_darkness(np.asarray(img)) >= 32 for img in pictures[::2]]
    masks += [m.T for m in masks] + [masks[0][5:40:3, ::2], np.zeros((7, 9), bool), np.zeros((0, 4), bool)]
    for mask in masks:
        rows, cols = levels.true_cells(mask)
        expected = np.nonzero(mask)
        assert np.array_equal(rows, expected[0]) and np.array_equal(cols, expected[1])
        assert rows.dtype == expected[0].dtype and cols.dtype == expected[1].dtype


@pytest.mark.quick
def test_the_marks_labels_numbered_from_a_table_are_numpys_unique(pictures):
    """levels.unique_labels gives np.unique's distinct labels and inverse for label_marks's labels of the
    pictures' ink cells, and for none."""
    for img in pictures[::2]:
        labels = segmentation.label_marks(segmentation.find_ink(img))
        found = labels[labels >= 0]
        roots, which = levels.unique_labels(found, labels.size)
        expected = np.unique(found, return_inverse=True)
        assert np.array_equal(roots, expected[0]) and np.array_equal(which, expected[1])
    roots, which = levels.unique_labels(np.zeros(0, np.int64), 5)
    assert roots.size == 0 and which.size == 0

"""Order statistics of whole gray levels (0-255), read from their histogram (a grid's small cells: partitioned);
and a mask's cells and marks' labels listed faster than np.nonzero and np.unique (true_cells, unique_labels).

A picture's pixels and its darkness (segmentation.ink_darkness) are whole
levels, so a median or a percentile of them is found by counting how many
pixels lie at or below each of the 256 levels. The results equal NumPy's
(np.median; np.percentile's default "linear" method) value for value, and
cost a histogram instead of a partition of every pixel (a grid of small
cells, cell_percentiles: one partition of each cell's few pixels). Used by
mnistkit.segmentation, mnistkit.ruling and mnistkit.around.
"""
import numpy as np

LEVELS = 256


def sample_median(values, counts):
    """The median (float) of a sample given as sorted distinct values and their counts (int arrays), as np.median."""
    below = np.cumsum(counts)
    middle = (below[-1] - 1) / 2
    return (values[np.searchsorted(below, np.floor(middle), side="right")]
            + values[np.searchsorted(below, np.ceil(middle), side="right")]) / 2


def level_median(levels):
    """np.median (float) of whole levels 0-255: levels, an int or float array of any shape, not empty."""
    return sample_median(np.arange(LEVELS), np.bincount(np.ravel(levels).astype(np.int64), minlength=LEVELS))


def _rank(n, percentile):
    """Where np.percentile's linear interpolation reads a sample of n values: (the lower rank, the one above it,
    the fraction t between them)."""
    position = percentile / 100 * (n - 1)
    rank = int(np.floor(position))
    return rank, min(rank + 1, n - 1), position - rank


def _lerp(a, b, t):
    """NumPy's lerp of the two closest ranks' levels a, b (float64 arrays), the same float64 steps."""
    return a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t)


def _ranked(below, percentile):
    """The percentile of samples whose cumulative level counts are `below` (int [..., 256], the last axis the
    levels): float64 [...], as np.percentile's linear interpolation between the two closest ranks."""
    rank, above, t = _rank(int(below[..., -1].flat[0]), percentile)
    a = np.count_nonzero(below <= rank, axis=-1).astype(np.float64)  # the level of the sample ranked `rank`
    b = np.count_nonzero(below <= above, axis=-1).astype(np.float64)
    return _lerp(a, b, t)


def level_percentile(levels, percentile):
    """np.percentile (float) of whole levels 0-255: levels, an int or float array of any shape, not empty;
    percentile: 0-100."""
    counts = np.bincount(np.ravel(levels).astype(np.int64), minlength=LEVELS)
    return float(_ranked(np.cumsum(counts), percentile))


def cell_percentiles(gray, percentiles, grid):
    """Percentiles of each cell of a grid of at most `grid` cells a side: (float64 [len(percentiles), rows, cols],
    the cell's side in pixels).

    gray: [h, w] of whole levels 0-255 (uint8, or floats holding whole
    levels); the last row and column of cells are filled out by the edge, as
    np.pad's "edge" mode. Each value equals np.percentile over the cell's
    pixels (linear interpolation): the cells' pixels are partitioned at the
    ranks read, all cells at once (a histogram of 256 levels a cell cost 3
    to 9 times as much, a cell of 9 x 9 pixels holding 81).
    """
    h, w = gray.shape
    cell = max(1, -(-max(h, w) // grid))
    rows, cols = -(-h // cell), -(-w // cell)
    padded = np.pad(np.asarray(gray), ((0, rows * cell - h), (0, cols * cell - w)), mode="edge")
    ranks = [_rank(cell * cell, p) for p in percentiles]
    values = padded.reshape(rows, cell, cols, cell).transpose(0, 2, 1, 3).reshape(rows, cols, cell * cell)
    values = np.partition(values, sorted({r for rank, above, _ in ranks for r in (rank, above)}), axis=2)
    return np.array([_lerp(values[..., rank].astype(np.float64), values[..., above].astype(np.float64), t)
                     for rank, above, t in ranks]), cell


def true_cells(mask):
    """np.nonzero of a boolean mask [h, w] (any strides): (rows, cols), int64 [n] each, in the same row-major order.
    The rows repeated by each row's count and the columns from the flat indices: about half NumPy's time for 2-D."""
    flat = np.flatnonzero(mask)
    rows = np.repeat(np.arange(mask.shape[0]), np.count_nonzero(mask, axis=1))
    return rows, flat - rows * mask.shape[1]


def unique_labels(labels, bound):
    """np.unique(labels, return_inverse=True) of whole numbers 0 <= labels < bound (int array [n]): (the distinct
    labels in order, int64; each label's place among them, int64 [n]). From a table of the bound's numbers, not
    a sort: label_marks's labels are flat indices of the grid."""
    present = np.zeros(bound, bool)
    present[labels] = True
    roots = np.flatnonzero(present)
    place = np.empty(bound, np.int64)  # read only where a label is
    place[roots] = np.arange(roots.size)
    return roots, place[labels]

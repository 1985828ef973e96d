"""Squared and ruled paper: the printed lines under a digit, taken out of the picture's darkness (without_rules).

A student's exercise book (a squared grid, 方格本, every 0.15-0.3 of the
digit's height; ruled lines) puts thin straight lines across the digit. A
person looks past them; MNIST has none, and a line as dark as the ink joins
every stroke it crosses into one mark as wide as the picture. The lines are
found as what a digit's strokes never are together: several thin, long,
straight and parallel lines, evenly spaced (_rule_bands). Each line's darkness
is replaced by what lies on either side of it across the line (_mend), so a
stroke crossing it goes on through it and a stroke lying along it is kept
where it is wider or darker than the line. Called by
segmentation.find_ink on ink_darkness's levels.
"""
import numpy as np

from .levels import level_median, level_percentile, true_cells

RULE_LEVEL = 16  # darkness levels over the paper's median (and 4 robust spreads) from which a pixel may be a line
RULE_ASKEW = 0.09  # lines up to this slope (about 5 degrees) are looked for
RULE_COVER = 0.6  # of a line's length: how much of it must be dark (a digit's stroke crosses it, no more)
RULE_CORE = 0.9  # of the most its run covers: a line's own core, not a stroke along it (a 1 on a grid line)
RULE_THIN = 0.04  # of the picture's shorter side: a line at most this thick (its dark core)
RULE_JITTER = 0.1  # of the spacing: how far a line may lie from the next one's spacing (a photo's perspective)
RULE_COUNT = 4  # evenly spaced lines at least: a frame's two sides and a 1 between them are 3
RULE_SPACING = 0.03  # of the shorter side, and 3 times their thickness: lines at least this far apart (a thick
# stroke's ragged edge is no set of lines)
RULE_EDGE = 0.2  # of the way from the paper's darkness to the line's: its soft edge, taken out with it
RULE_KEEP = 32  # darkness levels over the line's own: a pixel this much darker is ink over it, kept (fully at 2x)
SEARCH_PIXELS = 20_000  # the slope is searched on at most this many of the dark pixels, evenly taken
GATHER_CELLS = 2_000_000  # pixels x slopes counted at once by _gathered (16 MB of int64)


def without_rules(level):
    """The darkness of a picture with squared or ruled paper's lines taken out: uint8 [h, w] (level itself when it
    has none).

    level: uint8 [h, w], segmentation.ink_darkness's darkness (0: paper).
    The lines across (rows, at a slope up to RULE_ASKEW) and down are found
    apart (_rule_bands); each line's pixels take the darkness interpolated
    between the pixels just outside it on either side, unless they are
    RULE_KEEP levels darker than the line itself (ink over the line: kept,
    blended over as many levels more, so a pixel moved by a level moves the
    result by as little).
    """
    h, w = level.shape
    if min(h, w) < 16:
        return level
    paper = level_median(level)
    noise = level_median(np.abs(np.diff(level.astype(np.int16), axis=1))) / 0.954  # as find_ink: the lines don't widen it
    dark = level >= paper + max(RULE_LEVEL, 4 * noise)
    out = level
    for turned in (False, True):  # lines across, then lines down (the picture transposed)
        view = dark.T if turned else dark
        bands = _rule_bands(view)
        if bands is not None:
            mended = _mend(out.T if turned else out, paper, *bands)
            out = mended.T if turned else mended
    return out


def _rule_bands(dark):
    """The evenly spaced lines across a boolean mask of dark pixels [h, w]: (slope, [(first, last) rows of each
    line at column 0, inclusive]), or None when there are fewer than RULE_COUNT.

    A line runs along u = row - round(slope x column); the slope is the one
    that gathers the dark pixels on fewest values of u (_slope). A line is
    a run of u whose dark pixels cover RULE_COVER of the picture's pixels
    on it (its core: where they cover RULE_CORE of the run's most, so a 1's
    stem along a line is not the line), at most RULE_THIN of the shorter
    side thick and as thick as the others (within 2 rows or half their
    median). The lines are evenly spaced when RULE_COUNT - 1 gaps between
    neighbours lie within RULE_JITTER of the median gap (the spacing,
    RULE_SPACING at least); the lines on such gaps are kept.
    """
    h, w = dark.shape
    if np.count_nonzero(np.count_nonzero(dark, axis=0) >= RULE_COUNT) < RULE_COVER * w:
        return None  # lines across cross RULE_COVER of the columns RULE_COUNT times: a digit alone does not
    rows, cols = true_cells(dark)
    slope = _slope(rows, cols, w)
    base = -np.round(np.arange(w) * slope).astype(np.int64)
    low = base.min()
    counts = np.bincount(rows + base[cols] - low, minlength=h + base.max() - low)
    starts = np.sort(base - low)  # the picture's pixels on each u: columns whose rows 0..h-1 reach it
    u = np.arange(counts.size)
    pixels = np.searchsorted(starts, u, side="right") - np.searchsorted(starts, u - h, side="right")
    cover = counts / np.maximum(pixels, 1)
    edges = np.diff(np.concatenate([[0], (cover >= RULE_COVER) & (pixels >= w / 2), [0]]).astype(np.int8))
    first, last = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0] - 1
    for k, (f, l) in enumerate(zip(first, last)):  # a stroke along a line widens its run: the line is its core
        core = np.nonzero(cover[f:l + 1] >= RULE_CORE * cover[f:l + 1].max())[0]
        first[k], last[k] = f + core.min(), f + core.max()
    thick = last - first + 1
    thin = thick <= max(2, RULE_THIN * min(h, w))  # and printed alike: a 0's sides are not as thick as a line
    thin &= np.abs(thick - np.median(thick[thin])) <= max(2, np.median(thick[thin]) / 2) if thin.any() else thin
    first, last = first[thin], last[thin]
    if first.size < RULE_COUNT:
        return None
    middle = (first + last) / 2
    gaps = np.diff(middle)
    spacing = np.median(gaps)
    if spacing < max(RULE_SPACING * min(h, w), 3 * np.median(last - first + 1)):
        return None
    even = np.abs(gaps - spacing) <= RULE_JITTER * spacing
    if even.sum() < RULE_COUNT - 1:
        return None
    kept = np.concatenate([even, [False]]) | np.concatenate([[False], even])
    return slope, [(f + low, l + low) for f, l in zip(first[kept], last[kept])]


def _slope(rows, cols, w):
    """The slope (float, rows per column) along which the dark pixels (rows, cols: int arrays) gather on fewest
    lines: the largest sum of squared counts per u = row - round(slope x column), searched in steps of 4 rows over
    the width, then of half a row."""
    step = max(1, rows.size // SEARCH_PIXELS)
    rows, cols = rows[::step], cols[::step]
    coarse = np.arange(-RULE_ASKEW, RULE_ASKEW + 1e-9, 4 / w)
    best = coarse[np.argmax(_gathered(rows, cols, coarse, _squares))]
    fine = np.arange(best - 4 / w, best + 4 / w + 1e-9, 0.5 / w)
    return float(fine[np.argmax(_gathered(rows, cols, fine, _squares))])


def _squares(counts):
    return np.einsum("ij,ij->i", counts, counts)  # whole numbers: exact in int64, and in float64 below 2**53


def _peak(counts):
    return counts.max(axis=1)


def _gathered(rows, cols, slopes, score):
    """score (_squares or _peak) of the pixels' (rows, cols: int arrays, not empty) counts per u = row -
    round(slope x column), for each of slopes (float [s]): float64 [s]. The slopes are counted GATHER_CELLS
    pixels at a time: one bincount for as many slopes as fit.

    The pixels are taken as runs down their columns (a run's rows all move
    by its column's shift): each run adds 1 where it starts and takes 1
    where it ends, and the counts are their running sum, so a stroke down
    the picture costs two entries, not one a pixel. round(slope x column)
    is read from a table of every column's (the same float steps as for each
    pixel), and u is counted from the slope's highest shift on: both scores
    read the counts alone, not where they lie.
    """
    order = np.lexsort((rows, cols))  # down each column
    rows, cols = rows[order], cols[order]
    cut = np.flatnonzero((np.diff(cols) != 0) | (np.diff(rows) != 1)) + 1
    first_rows = rows[np.concatenate([[0], cut])]
    run_cols = cols[np.concatenate([[0], cut])]
    end_rows = rows[np.concatenate([cut - 1, [rows.size - 1]])] + 1  # exclusive
    scores = np.empty(len(slopes))
    chunk = max(1, GATHER_CELLS // rows.size)
    column = np.arange(int(cols.max()) + 1)
    height = int(rows.max()) + 2
    for first in range(0, len(slopes), chunk):
        part = slopes[first:first + chunk]
        shift = np.round(column * part[:, None]).astype(np.int64)  # [slopes, columns]
        top = shift.max(axis=1)
        span = height + int((top - shift.min(axis=1)).max())
        shift = top[:, None] + np.arange(len(part))[:, None] * span - shift  # u + its slope's place, per column
        shift = shift[:, run_cols]
        size = len(part) * span
        steps = np.bincount((shift + first_rows).ravel(), minlength=size)
        steps -= np.bincount((shift + end_rows).ravel(), minlength=size)
        scores[first:first + chunk] = score(np.cumsum(steps.reshape(len(part), span), axis=1))
    return scores


def _mend(level, paper, slope, bands):
    """level (uint8 [h, w]) with each line's pixels (bands: (first, last) u of each line, u = row - round(slope x
    column)) taken out: uint8 [h, w], a new array.

    A line's band is widened over its soft edge (rows along it three
    quarters of which lie RULE_EDGE of the way from the paper's darkness to
    the line's: a stroke along it does not count; as many as the line is
    thick at most) and by a row more. Its pixels take the darkness
    interpolated down each column between the rows just outside the band
    (the one side at the picture's edge). A pixel RULE_KEEP darker than the
    line (the lower quartile along its darkest row) is ink over it and
    keeps its darkness, in full from 2 x RULE_KEEP.
    """
    h, w = level.shape
    out = level.astype(np.float32)
    column = np.arange(w)
    shift = np.round(column * slope).astype(np.int64)

    def along(u):  # the levels of the pixels on u, inside the picture
        r = u + shift
        inside = (r >= 0) & (r < h)
        return level[r[inside], column[inside]]
    for first, last in bands:
        line = max(level_percentile(values, 25) for values in (along(u) for u in range(first, last + 1))
                   if values.size)
        edge = paper + RULE_EDGE * (line - paper)
        for _ in range(last - first + 1):
            if first > -h and along(first - 1).size and level_percentile(along(first - 1), 25) >= edge:
                first -= 1
        for _ in range(last - first + 1):
            if along(last + 1).size and level_percentile(along(last + 1), 25) >= edge:
                last += 1
        top, bottom = first - 1 + shift, last + 1 + shift  # the band's rows in each column, inclusive
        a = level[np.clip(top - 1, 0, h - 1), column].astype(np.float32)
        b = level[np.clip(bottom + 1, 0, h - 1), column].astype(np.float32)
        a, b = np.where(top - 1 < 0, b, a), np.where(bottom + 1 >= h, a, b)  # at the picture's edge: the one side
        for k in range(last - first + 3):
            r = top + k
            inside = (r >= 0) & (r < h)
            rr, cc = r[inside], column[inside]
            f = (k + 1) / (last - first + 4)
            mended = a[inside] * (1 - f) + b[inside] * f
            v = level[rr, cc].astype(np.float32)
            keep = np.clip((v - line - RULE_KEEP) / RULE_KEEP, 0, 1)
            out[rr, cc] = mended + keep * np.maximum(v - mended, 0)
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


FRAME_SLOPE = 0.18  # a frame's sides are looked for up to this slope (about 10 degrees) by askew_sides ...
FRAME_SLOPE_MIN = 0.03  # ... from this one (less: segmentation.side_lines finds them)
FRAME_SQUARE = 0.03  # a frame's sides across and down are at right angles: their slopes opposite within this
SIDE_SPAN = 0.6  # of the mark's box: a side at a slope this long at least ...
SIDE_NEAR = 0.15  # ... lying within this share of the box from its edge (at the slope) ...
SIDE_THIN = 0.04  # ... and no thicker than this share of it (a bold 0 filling the picture has thick sides)


def askew_sides(box):
    """The sides of a mark's box that are straight lines at a slope (a frame drawn or scanned askew, from
    FRAME_SLOPE_MIN up to FRAME_SLOPE): (boolean like box: their ink, how many sides; 0 when none or not a frame's).

    box: boolean [rows, cols], a mark within its box. For the lines across
    and then down, the slope is the one at which the mark's pixels gather
    most on one u = row - round(slope x column); a side is a run of u holding
    SIDE_SPAN of the box's width, within SIDE_NEAR of the first or last u
    and SIDE_THIN of it thick at most; its pixels (and a row either side: its
    soft edge) are the side's ink. A frame turned has sides both across and
    down, at right angles (their slopes opposite, within FRAME_SQUARE); a
    digit filling its box, whose straightest strokes lie at any slopes, has not.
    """
    lines = np.zeros_like(box)
    found, slopes = [], []
    for turned in (False, True):
        view = box.T if turned else box
        h, w = view.shape
        rows, cols = true_cells(view)
        if w < 8 or rows.size == 0:
            return lines, 0
        tried = np.arange(-FRAME_SLOPE, FRAME_SLOPE + 1e-9, 1 / w)
        slope = tried[np.argmax(_gathered(rows, cols, tried, _peak))]
        u = rows - np.round(cols * slope).astype(np.int64)
        low = u.min()
        counts = np.bincount(u - low)
        slopes.append(slope)
        near = min(max(2, int(SIDE_NEAR * h)), counts.size)
        full = counts >= SIDE_SPAN * w
        mine = np.zeros(counts.size, bool)
        sides = 0
        for ends in (np.arange(near), counts.size - 1 - np.arange(near)):
            hit = ends[full[ends]]
            if hit.size and hit.max() - hit.min() < max(3, SIDE_THIN * h):
                mine[max(hit.min() - 1, 0):hit.max() + 2] = True
                sides += 1
        found.append(sides)
        side = mine[u - low]
        (lines.T if turned else lines)[rows[side], cols[side]] = True
    square = abs(slopes[0] + slopes[1]) <= FRAME_SQUARE and min(map(abs, slopes)) >= FRAME_SLOPE_MIN
    return lines, sum(found) if square and min(found) >= 1 else 0

"""What a person draws round a digit and reads past: a ring or a box round it, a line under it, a frame's side
askew whose corners the picture's edge cut off (marks_round).

segmentation.frame_lines leaves out a frame as large as the picture (0.6 of
it both ways) with straight sides, or turned by up to 10 degrees with its
corners inside the picture (ruling.askew_sides). Three more marks come apart
from the digit and are no part of it:
  - a ring: a circle or a box drawn round the digit, of any size, that
    encloses all the other ink (_rings);
  - a line under the digit: straight, thin, all the other ink above it
    (_underlines);
  - the side of a frame turned by up to 10 degrees whose corners lie
    outside the picture: the frame falls apart into straight lines at a
    slope, each along an edge with all the other ink on its inner side
    (_askew_rules); so does an exercise book's margin, one such line
    beside a digit much shorter than it (_clear_of_ends).
  - a ring drawn round the digit that touches it or runs through its
    ends, one mark with it: the thin wall round the mark's holes, all
    along its outer edge, with the digit inside it (_touching_rings);
  - an exercise book's margin (or any straight line from edge to edge)
    that the digit touches, one mark with it: near both edges the mark is
    that thin line alone (_touching_margins);
  - a box drawn round the digit that touches it, one mark with it: each
    side of the mark's box is a thin straight line of ink along it
    (_touching_boxes).
Each is judged on the grid of cells segmentation.find_ink labels its marks
on (its label_marks), one mark at a time, and only where other ink the size
of a digit remains: a 0 alone, a 1 alone, a 7's bar are never left out.
"""
import math

import numpy as np

from .levels import true_cells, unique_labels

DUST = 0.05  # of the heaviest mark's cells: lighter marks are dust here, as segmentation.MIN_MARK_MASS
RING_FILLED = 0.3  # of a ring's box, either way: what it encloses spans at least this (a 0 with a dot in it: less)
LINE_THIN = 0.15  # of its length: a line's thickness at most (segmentation.FRAME_THICK)
LINE_SLOPE = 0.18  # a line across or down lies at this slope at most (about 10 degrees; ruling.FRAME_SLOPE)
UNDER_SPAN = 0.5  # of the ink above it, across: an underline is at least this long ...
UNDER_TALL = 0.25  # ... and that ink at least this share of its length tall (a digit, not a dot over a dash)
SIDE_CUT = 0.25  # of the picture along it: a frame's side the edge cuts at both ends is this long at least ...
SIDE_EDGE = 0.25  # ... and lies within this share of the picture of its edge (segmentation.FRAME_EDGE)
SIDES = 2  # such sides at least make a frame: one line alone beside a digit may be its stroke (a 4's stem apart) ...
MARGIN_CLEAR = 0.1  # ... unless the other ink keeps this share of the picture from both edges along it (a margin)
EDGE_REACH = 0.02  # of the picture's shorter side (2 cells at least): a line's end this near the edge reaches it
DIGIT_SIZE = 0.1  # of the picture's shorter side: the ink left is this tall or wide at least (segmentation.FRAMED)
# A ring that touches the digit (one mark with it: _touching_rings), judged on a grid of RING_GRID cells a side at most:
RING_GRID = 128
RING_HOLE = 0.6  # of the mark's box, both ways: the hole inside the ring (round the digit) spans this at least
RING_THICK = 0.1  # of the mark's box's shorter side: the ring's wall is no thicker (distances are counted this far)
RING_AROUND = 0.75  # of the mark's outer edge: where the wall to the hole is as thin as the ring (a 6's, 8's, 9's: less)
RING_INSIDE = 0.8  # of the ink left: what the ring encloses (a digit may cross it)
RING_REST = 0.15  # of the mark's cells: the ink left (the digit) is this much at least ...
RING_DIGIT = 0.45  # ... and its heaviest part spans this share of the ring's box, down or across
MARGIN_THIN = 0.04  # of the picture's shorter side: a margin line the digit touches is no thicker (ruling's lines)
BOX_THICK = 0.2  # of a box's shorter side: its sides are no thicker (_touching_boxes)
MARGIN_COVER = 0.9  # of the picture along it: the line's ink, as one run across each row or column, covers this


def marks_round(cells, labels, framed, label_marks):
    """The cells of marks drawn round the digit (a ring, an underline, a frame's side askew): boolean like cells.

    cells: boolean [rows, cols], the grid's cells that hold ink; labels:
    segmentation.label_marks(cells), int64 [rows, cols], -1 off the ink;
    framed: the rest of a frame was found and left out already (frame_lines:
    a frame whose one corner the edge cut off leaves its one side apart),
    so that one side askew is enough; label_marks: segmentation's, which
    labels the paper round a mark for a ring that touches the digit
    (_touching_rings; passed in: segmentation imports this module). All
    False when none of the ink's marks is one of these.
    """
    out = np.zeros_like(cells)
    marks = _marks(labels, SIDE_CUT * min(cells.shape))
    for stage in (_rings, _askew_rules, _underlines, _touching_boxes, _touching_rings, _touching_margins):
        solid = [mark for mark in marks if not mark["dust"]]  # a ring and an underline are judged without dust
        if stage is _askew_rules:
            found = _askew_rules(marks, cells.shape, 1 if framed else SIDES) if solid else []
        elif stage is _touching_rings:
            found = _touching_rings(solid, cells.shape, label_marks) if solid and not out.any() else []
        elif stage in (_touching_margins, _touching_boxes):
            found = stage(solid, cells.shape) if solid and not out.any() else []
        else:
            found = stage(solid, cells.shape) if len(solid) >= 2 else []
        for mark in found:
            out[mark["rows"], mark["cols"]] = True
        marks = [mark for mark in marks if not any(mark is gone for gone in found)]
    return out


def _marks(labels, long):
    """The ink's marks: [{"rows", "cols": int arrays of its cells, "box": (top, bottom, left, right) end
    exclusive, "dust": bool}], heaviest first. Dust (lighter than DUST of the heaviest) is left out, unless its
    box is `long` cells or longer (a thin line of a frame, as light as dust, still counts as its side)."""
    r, c = true_cells(labels >= 0)
    if not r.size:
        return []
    _, which = unique_labels(labels[r, c], labels.size)
    counts = np.bincount(which)
    spans = np.zeros((2, counts.size), np.int64)
    for k, along in enumerate((r, c)):
        low, high = np.full(counts.size, along.max()), np.zeros(counts.size, np.int64)
        np.minimum.at(low, which, along)
        np.maximum.at(high, which, along)
        spans[k] = high - low + 1
    order = np.argsort(which, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)])
    marks = []
    for k in np.argsort(-counts, kind="stable"):
        dust = counts[k] < DUST * counts.max()
        if dust and spans[:, k].max() < long:
            continue
        mine = order[starts[k]:starts[k + 1]]
        rows, cols = r[mine], c[mine]
        marks.append({"rows": rows, "cols": cols, "dust": bool(dust),
                      "box": (rows.min(), rows.max() + 1, cols.min(), cols.max() + 1)})
    return marks


def _union_box(marks):
    """(top, bottom, left, right) round all of marks."""
    boxes = np.array([mark["box"] for mark in marks])
    return boxes[:, 0].min(), boxes[:, 1].max(), boxes[:, 2].min(), boxes[:, 3].max()


def _digit_sized(marks, grid):
    """True when the marks together are DIGIT_SIZE of the grid's shorter side tall or wide."""
    top, bottom, left, right = _union_box(marks)
    return max(bottom - top, right - left) >= DIGIT_SIZE * min(grid)


def _rings(marks, grid):
    """The mark (as a list of none or one) that encloses every other mark: each of their cells has the ring's
    cells to its left, right, above and below (or the picture's edge, where the ring reaches it: a ring the
    picture cuts), and together they span RING_FILLED of the ring's box either way. A circle or a box round the
    digit, not a 0 or an 8 with a speck in a loop."""
    for ring in marks:
        top, bottom, left, right = ring["box"]
        others = [mark for mark in marks if mark is not ring]
        inner = _union_box(others)
        if inner[0] < top or inner[1] > bottom or inner[2] < left or inner[3] > right:
            continue
        closed = _enclosed(ring, grid)
        if not all(closed[mark["rows"], mark["cols"]].all() for mark in others):
            continue
        if ((inner[1] - inner[0]) >= RING_FILLED * (bottom - top) or (inner[3] - inner[2]) >= RING_FILLED * (right - left)) \
                and _digit_sized(others, grid):
            return [ring]
    return []


def _enclosed(ring, grid):
    """The cells (boolean [rows, cols]) that have the ring's cells (a mark) or the picture's edge where the ring
    reaches it to their left, right, above and below; the ring's own cells are not."""
    walls = np.zeros(grid, bool)
    walls[ring["rows"], ring["cols"]] = True
    for edge in (walls[0], walls[-1], walls[:, 0], walls[:, -1]):
        if edge.any():
            edge[:] = True  # the edge's cells become wall, the ring's own cells among them
    closed = (np.logical_or.accumulate(walls, axis=0) & np.logical_or.accumulate(walls[::-1], axis=0)[::-1]
              & np.logical_or.accumulate(walls, axis=1) & np.logical_or.accumulate(walls[:, ::-1], axis=1)[:, ::-1])
    closed[ring["rows"], ring["cols"]] = False
    return closed


def _line(mark):
    """A mark as a straight line: (across: True for a line across, else down; length, thickness, centre (row, col),
    unit normal (row, col), its two ends ((row, col), (row, col))) in cells; None when it is thicker than LINE_THIN
    of its length or steeper than LINE_SLOPE from both axes."""
    rows, cols = mark["rows"].astype(np.float64), mark["cols"].astype(np.float64)
    if rows.size < 3:
        return None
    centre = np.array([rows.mean(), cols.mean()])
    points = np.stack([rows, cols], axis=1) - centre
    _, vectors = np.linalg.eigh(points.T @ points)
    along, normal = vectors[:, 1], vectors[:, 0]  # (row, col) of the main direction and the one across it
    across = abs(along[1]) >= abs(along[0])
    slope = abs(along[0] / along[1]) if across else abs(along[1] / along[0])
    position = points @ along
    length = np.ptp(position) + 1
    depth = points @ normal
    thick = np.percentile(depth, 99) - np.percentile(depth, 1) + 1
    if slope > LINE_SLOPE or thick > LINE_THIN * length:
        return None
    ends = (centre + points[np.argmin(position)], centre + points[np.argmax(position)])
    return across, length, thick, centre, normal, ends


def _beyond(marks, centre, normal, thick, towards):
    """True when every cell of marks lies on one side of a line (centre, unit normal), more than half its
    thickness from its middle, on the side of the point `towards` (row, col)."""
    side = np.sign((np.asarray(towards, np.float64) - centre) @ normal)
    for mark in marks:
        depth = (np.stack([mark["rows"], mark["cols"]], axis=1) - centre) @ normal * side
        if depth.min() <= thick / 2:
            return False
    return True


def _askew_rules(marks, grid, sides_needed):
    """The marks that are a frame's sides cut off by the picture's edge: straight lines (_line) whose ends both
    reach the picture's edge, SIDE_CUT of the picture long, within SIDE_EDGE of an edge (across: the top or the
    bottom; down: a side), with every mark that is not such a line on their inner side, digit-sized;
    sides_needed of them at least (SIDES: one line alone beside the digit may be one of its strokes), or one
    whose two ends the other marks keep clear of (_clear_of_ends: a margin line, no stroke of a digit cropped
    tight)."""
    rows, cols = grid
    lines = []
    for mark in marks:
        line = _line(mark)
        if line is None:
            continue
        across, length, _, centre, _, ends = line
        span, place, size = (cols, centre[0], rows) if across else (rows, centre[1], cols)
        if (all(_at_edge(end, grid) for end in ends) and length >= SIDE_CUT * span
                and min(place, size - place) <= SIDE_EDGE * size):
            lines.append((mark, line))
    others = [mark for mark in marks if not mark["dust"] and not any(mark is line_mark for line_mark, _ in lines)]
    if not others or not _digit_sized(others, grid):
        return []
    middle = ((rows - 1) / 2, (cols - 1) / 2)
    sides = [(mark, line) for mark, line in lines if _beyond(others, line[3], line[4], line[2], middle)]
    if len(sides) == 1 and _clear_of_ends(others, sides[0][1], grid):
        return [sides[0][0]]
    return [mark for mark, _ in sides] if len(sides) >= sides_needed else []


def _clear_of_ends(marks, line, grid):
    """True when marks (the digit) lie beside a line (_line's tuple) from edge to edge, within its span, and keep
    MARGIN_CLEAR of the picture (grid: rows, cols) from both edges along it: an exercise book's margin, much
    longer than the digit. A digit's own stroke that reaches both edges of a picture cropped tight round it (a
    4's stem drawn apart, a 9's) has the rest of the digit reaching as near one of them: the crop is the digit's."""
    across, _, _, _, _, ends = line
    axis = 1 if across else 0
    top, bottom, left, right = _union_box(marks)
    low, high = (left, right) if across else (top, bottom)
    start, end = sorted((ends[0][axis], ends[1][axis]))
    clear = MARGIN_CLEAR * grid[axis]
    return start <= low and high <= end + 1 and low >= clear and grid[axis] - high >= clear


def _at_edge(point, grid):
    """True when a point (row, col) of the grid lies within EDGE_REACH of its edge."""
    reach = max(2, EDGE_REACH * min(grid))
    return min(point[0], point[1], grid[0] - 1 - point[0], grid[1] - 1 - point[1]) <= reach


def _underlines(marks, grid):
    """The mark (as a list of none or one) that is a line across under the marks it spans in columns (not a date
    written in a corner beside it): straight (_line), UNDER_SPAN of their width long, and they UNDER_TALL of its
    length tall and digit-sized."""
    for mark in marks:
        line = _line(mark)
        if line is None or not line[0]:
            continue
        _, length, thick, centre, normal, _ = line
        others = [other for other in marks if other is not mark]
        over = [other for other in others if other["box"][2] < mark["box"][3] and other["box"][3] > mark["box"][2]]
        if not over:
            continue
        top, bottom, left, right = _union_box(over)
        if length < UNDER_SPAN * (right - left) or bottom - top < UNDER_TALL * length or not _digit_sized(over, grid):
            continue
        if _beyond(over, centre, normal, thick, (centre[0] - length, centre[1])):
            return [mark]
    return []


def _touching_rings(marks, grid, label_marks):
    """A ring drawn round the digit that touches it, as a list of none or one mark ("rows", "cols": the ring's
    cells of the heaviest mark, which holds both): where a wall as thin as the ring's runs round the mark's
    largest hole, all along its outer edge but RING_AROUND, and the ink left (the digit) is enclosed by it
    (RING_INSIDE), is RING_REST of the mark, and its heaviest part spans RING_DIGIT of the ring and is
    digit-sized. A 0 leaves no ink; a 6's, an 8's or a 9's
    loop has ink outside it along its outer edge (the stem, the other loop), and the ink left is not in it."""
    mark = marks[0]
    top, bottom, left, right = mark["box"]
    if max(bottom - top, right - left) < 3 * DIGIT_SIZE * min(grid):
        return []
    step = math.ceil(max(bottom - top, right - left) / RING_GRID)
    coarse = np.zeros(((bottom - top - 1) // step + 3, (right - left - 1) // step + 3), bool)  # a cell of paper round
    coarse[1 + (mark["rows"] - top) // step, 1 + (mark["cols"] - left) // step] = True
    ring = _thin_wall(coarse, label_marks)
    if ring is None:
        return []
    rest = coarse & ~ring
    r, c = np.nonzero(rest)
    if r.size < RING_REST * np.count_nonzero(coarse):
        return []
    parts = label_marks(rest)[r, c]  # the heaviest part digit-sized: no few cells where an 8's strokes cross
    part = parts == np.bincount(parts - parts.min()).argmax() + parts.min()
    if max(np.ptp(r[part]), np.ptp(c[part])) * step < DIGIT_SIZE * min(grid):
        return []
    rr, rc = np.nonzero(ring)
    if np.ptp(r[part]) < RING_DIGIT * np.ptp(rr) and np.ptp(c[part]) < RING_DIGIT * np.ptp(rc):
        return []  # a blob where a 0's ends overlap is no digit in it
    if (_walled(ring)[r, c] >= 3).mean() < RING_INSIDE:  # 3 sides: where the digit crosses the ring, it is cut
        return []
    mine = ring[1 + (mark["rows"] - top) // step, 1 + (mark["cols"] - left) // step]
    return [{"rows": mark["rows"][mine], "cols": mark["cols"][mine]}]


def _walled(walls):
    """On how many of its four sides (left, right, above, below) each cell has a cell of walls (boolean [h, w]):
    int [h, w]."""
    return (np.logical_or.accumulate(walls, axis=0).astype(int) + np.logical_or.accumulate(walls[::-1], axis=0)[::-1]
            + np.logical_or.accumulate(walls, axis=1) + np.logical_or.accumulate(walls[:, ::-1], axis=1)[:, ::-1])


def _thin_wall(ink, label_marks):
    """The cells of a ring round the largest hole of one mark (boolean [h, w], paper all round it): boolean like
    ink, or None. Each cell's wall is its distance through the ink to the paper outside plus that to the hole;
    the ring's cells are those whose wall is at most 1.5 times the outer edge's usual one, which must hold for
    RING_AROUND of the outer edge; the hole spans RING_HOLE of the mark's box both ways. label_marks:
    segmentation's."""
    paper = label_marks(~ink)
    outside = paper == paper[0, 0]
    hole = (paper >= 0) & ~outside  # every hole: a digit that touches the ring in two places splits its inside
    r, c = np.nonzero(hole)
    if not r.size:
        return None
    ir, ic = np.nonzero(ink)
    if np.ptp(r) + 1 < RING_HOLE * (np.ptp(ir) + 1) or np.ptp(c) + 1 < RING_HOLE * (np.ptp(ic) + 1):
        return None
    cap = max(2, int(RING_THICK * min(np.ptp(ir), np.ptp(ic))))
    wall = _reach(outside, ink, cap) + _reach(hole, ink, cap) - 1
    edge = wall[ink & _grown(outside)]
    thin = 1.5 * np.median(edge) + 1
    if np.mean(edge <= thin) < RING_AROUND:
        return None
    return ink & (wall <= thin)


def _reach(seed, ink, cap):
    """Steps (8-connected) through ink (boolean [h, w]) from the cells of seed: int [h, w], 0 on seed, cap + 1
    beyond cap steps or off the ink."""
    far = np.where(seed, 0, cap + 1)
    reached = seed.copy()
    for k in range(1, cap + 1):
        new = _grown(reached) & ink & ~reached
        if not new.any():
            break
        far[new] = k
        reached |= new
    return far


def _grown(mask):
    """mask (boolean [h, w]) and its 8 neighbours."""
    out = mask.copy()
    out[1:] |= mask[:-1]
    out[:-1] |= mask[1:]
    rows = out.copy()
    out[:, 1:] |= rows[:, :-1]
    out[:, :-1] |= rows[:, 1:]
    return out


def _touching_margins(marks, grid):
    """A straight line from edge to edge that the digit touches (an exercise book's margin, a line drawn under or
    beside it), as a list of none or one mark ("rows", "cols": the line's cells of the heaviest mark, which holds
    both): the heaviest mark reaches both edges along the line, and within MARGIN_CLEAR of the picture of each edge
    it is one thin run (MARGIN_THIN) across each row or column, on one straight line (LINE_SLOPE) through both
    ends; that line's band holds ink across MARGIN_COVER of the picture; the ink off it, with every other mark,
    keeps MARGIN_CLEAR from both edges along it (_clear_of_ends's rule: a digit cropped tight reaches nearer one
    of them) and is digit-sized. The digit's ink under the line goes with it."""
    mark = marks[0]
    for axis in (1, 0):  # 1: a line across (its ends at the left and right edges), 0: down
        along, off = (mark["cols"], mark["rows"]) if axis else (mark["rows"], mark["cols"])
        size = grid[axis]
        reach = max(2, EDGE_REACH * min(grid))
        if along.min() > reach or along.max() < size - 1 - reach:
            continue
        clear = MARGIN_CLEAR * size
        ends = (along < clear) | (along >= size - clear)
        if not ends.any():
            continue
        order = np.argsort(along[ends], kind="stable")
        places, first, counts = np.unique(along[ends][order], return_index=True, return_counts=True)
        low = np.minimum.reduceat(off[ends][order], first)
        high = np.maximum.reduceat(off[ends][order], first)
        thick = high - low + 1
        if counts.size < clear or np.any(counts != thick) or np.median(thick) > MARGIN_THIN * min(grid) + 1:
            continue  # not one thin run in each: a stroke, a corner, a frame's side and its corner
        slope, middle = np.polyfit(places, (low + high) / 2, 1)
        if abs(slope) > LINE_SLOPE or np.abs((low + high) / 2 - (slope * places + middle)).max() > 1 + np.median(thick):
            continue
        band = np.abs(off - (slope * along + middle)) <= np.max(thick) / 2 + 1
        if np.unique(along[band]).size < MARGIN_COVER * size:
            continue
        rest = [{"rows": mark["rows"][~band], "cols": mark["cols"][~band]}] if (~band).any() else []
        rest = [dict(part, box=(part["rows"].min(), part["rows"].max() + 1, part["cols"].min(), part["cols"].max() + 1))
                for part in rest] + list(marks[1:])
        if not rest or not _digit_sized(rest, grid):
            continue
        top, bottom, left, right = _union_box(rest)
        low_end, high_end = (left, right) if axis else (top, bottom)
        if low_end < clear or size - high_end < clear:
            continue
        return [{"rows": mark["rows"][band], "cols": mark["cols"][band]}]
    return []


def _touching_boxes(marks, grid):
    """A box drawn round the digit that touches it, as a list of none or one mark ("rows", "cols": the box's cells
    of the heaviest mark, which holds both): along each side of the mark's box, MARGIN_COVER of its length has ink
    from the edge inwards (within 2 cells) in one thin run (its lower quartile no thicker than MARGIN_THIN of the
    picture and BOX_THICK of the box), where the digit touches the side longer; the ink left inside is digit-sized,
    spans RING_DIGIT of the box down or across and is no straight line across it (a square 8's middle bar; a square
    0 leaves nothing)."""
    mark = marks[0]
    top, bottom, left, right = mark["box"]
    digit = DIGIT_SIZE * min(grid)
    if max(bottom - top, right - left) < 2 * digit or min(bottom - top, right - left) < digit:
        return []
    box = np.zeros((bottom - top, right - left), bool)
    box[mark["rows"] - top, mark["cols"] - left] = True
    sides = np.zeros_like(box)
    for turn in range(4):
        view = np.rot90(box, turn)
        first = np.argmax(view, axis=0)  # the first ink from the side, each column (0 where none: off below)
        inked = view.any(axis=0) & (first <= 2)
        if inked.mean() < MARGIN_COVER:
            return []
        after = view | (np.arange(view.shape[0])[:, None] < first)  # the ink from the first on, each column
        run = np.argmin(np.vstack([after, np.zeros((1, view.shape[1]), bool)]), axis=0) - first
        thick = np.percentile(run[inked], 25)  # the side's own stroke: where the digit touches it, the run is longer
        if thick > MARGIN_THIN * min(grid) + 1 or thick > BOX_THICK * min(box.shape):
            return []
        np.rot90(sides, turn)[:int(np.ceil(thick)) + 2] = True  # the run and its soft edge, from the side in
    rest = box & ~sides
    r, c = np.nonzero(rest)
    if not r.size:
        return []
    part = {"rows": r + top, "cols": c + left,
            "box": (r.min() + top, r.max() + 1 + top, c.min() + left, c.max() + 1 + left)}
    line = _line(part)
    across = line is not None and line[0] and line[1] >= MARGIN_COVER * (box.shape[1] - 2 * (thick + 2))
    if not _digit_sized([part], grid) or across:
        return []  # a bar from side to side: a square 8
    if np.ptp(r) + 1 < RING_DIGIT * box.shape[0] and np.ptp(c) + 1 < RING_DIGIT * box.shape[1]:
        return []
    mine = sides[mark["rows"] - top, mark["cols"] - left]
    return [{"rows": mark["rows"][mine], "cols": mark["cols"][mine]}]

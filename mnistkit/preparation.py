"""MNIST's preparation of one picture: the network's 28x28 input from the digit's ink (mnist_input).

As MNIST was built: the digit cropped (ink_extent), scaled to fit
DIGIT_BOX and centred on its centre of mass (digit_cells, cell_max), thin
strokes thickened (thicken), averaged down from SUPERSAMPLE times the
final size. Each pixel counts by how much of it is ink (ink_weight), so a
pixel moved by a few levels moves the input by as little; so does every
measure that steers the preparation (the crop, the centre, the strokes'
width: cell_width). The ink comes
from mnistkit.segmentation (find_ink); the picture from mnistkit.pictures (load_picture).
"""
import math

import numpy as np
from PIL import Image

from .segmentation import find_ink, mean3
from .pictures import shrink
from .records import IMAGE_PIXELS, IMAGE_SIZE

# MNIST's construction (and measurements on the bundled sample): the digit is
# scaled to fit DIGIT_BOX, its centre of mass lands on pixel (14, 14), and
# the median stroke is about 2 pixels wide.
DIGIT_BOX = 20
CENTRE = 14
STROKE_WIDTH = 2.0
BOLD_WIDTH = 3.0  # pixels: MNIST's 90th percentile stroke (its median is STROKE_WIDTH); bolder strokes are thinned to it
MAX_SHAVE = 0.25  # of a stroke's width: what thinning takes off each side at most, so no part of the digit is lost
SUPERSAMPLE = 4  # the digit is shaped at 4x its final size, then averaged down: MNIST's grey edges
CROP_TAIL = 0.002  # ink mass ignored on each side when cropping, so a speck of dirt does not set the box
# The digit's shape is read from each pixel's ink weight, not from the ink's yes or no (ink_weight): a browser that
# moves a canvas's pixels by a few levels on read-back (Brave, Firefox 145) moves the 28x28 input by a level at most.
INK_RAMP = 64  # darkness levels either side of halfway from paper to ink over which the weight goes from 0 to 1
NEAR_INK = 4  # pixels: the soft edge is read this close to the digit's ink, not round a frame, dust or shading
INK_CORE = 0.75  # the ink's darkness: the level this share of the digit's ink lies below
CELL_FULL = 0.5  # of a pixel (of a cell, when cells are smaller): a pixel this much in a cell counts whole (cell_max)


def mnist_input(img):
    """MNIST's preparation of one picture: uint8 [28, 28], ink bright on black.

    img: grayscale PIL image of a dark digit on lighter paper (or a light
    digit on a dark ground). Steps: the ink found by find_ink (lighting
    evened out, Otsu's threshold) and how much of each pixel is ink
    (ink_weight); the digit scaled so that its extent (ink_extent) fits
    DIGIT_BOX, keeping the aspect ratio, and its centre of mass lands on
    pixel (CENTRE, CENTRE) (digit_cells); strokes thinner than MNIST's
    thickened, strokes bolder than most of MNIST's thinned (thin); averaged down from SUPERSAMPLE times the final size, which
    gives grey edges, and brought up to 255 at the brightest. Every step moves as little as the picture does: no
    whole pixel or level at once. Raises ValueError ("no digit found: ...")
    from find_ink when the picture holds no digit-like stroke.
    """
    ink, level, threshold = find_ink(shrink(img), levels=True)
    weight = ink_weight(level, threshold, ink)
    rows, cols = weight.sum(axis=1), weight.sum(axis=0)
    box = ink_extent(rows) + ink_extent(cols)  # top, bottom, left, right
    centre = (rows @ (np.arange(len(rows)) + 0.5) / rows.sum(), cols @ (np.arange(len(cols)) + 0.5) / cols.sum())
    extent = max(box[1] - box[0], box[3] - box[2])
    cells = digit_cells(weight, box, centre, extent / (SUPERSAMPLE * DIGIT_BOX))
    width = cell_width(cells)
    if width < SUPERSAMPLE * STROKE_WIDTH:  # thickened strokes fit DIGIT_BOX too: shaped a little smaller first
        cells = thickened(weight, box, centre, extent, width)
    elif width > SUPERSAMPLE * BOLD_WIDTH:  # thinned strokes fill DIGIT_BOX too: shaped a little larger first
        side = SUPERSAMPLE * DIGIT_BOX
        shave = min((width * side / (side + width - SUPERSAMPLE * BOLD_WIDTH) - SUPERSAMPLE * BOLD_WIDTH) / 2,
                    MAX_SHAVE * width)
        cells = digit_cells(weight, box, centre, extent / (side + 2 * shave))
        thinned = thin(cells, shave)
        left = cell_width(thinned) - SUPERSAMPLE * BOLD_WIDTH  # a disc's erosion thins a curve a little less
        cells = thin(cells, min(shave + left / 2, MAX_SHAVE * width)) if left > 0 else thinned
    digit = np.asarray(Image.fromarray(cells * 255, mode="F").resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.BOX))
    digit = digit * (255 / max(float(digit.max()), 1.0))  # MNIST's strokes reach 255, also where no pixel is all ink
    return np.clip(np.round(digit), 0, 255).astype(np.uint8)


def cell_width(cells):
    """Mean stroke width, in cells, of the digit's cells (float32 [n, n] in [0, 1]): float.

    Twice the ink's area over the length of its edges, as
    segmentation.stroke_width measures a mask's, but of how much each cell
    is ink: 0 up to 0.35, 1 from a half on (a stroke's inside stays flat,
    cell_max leaving no cell of it under 1; the faint rest of ruled lines
    taken out stays out), in between in proportion. The area is their sum and the edges'
    length the sum of their changes from cell to cell, across and down. A
    cell moved by a little moves the width by as little: counted from the
    mask (cells >= 0.5), a cell a hair either side of 0.5 added or took 2
    edges of some 400, and a browser's read-back noise on the strokes' soft
    edges moved the width by 0.04 cells and the input by up to 26 levels
    (docs/photos.md).
    """
    inked = np.clip((cells.astype(np.float64) - 0.35) / 0.15, 0, 1)
    edges = np.abs(np.diff(inked, axis=0)).sum() + np.abs(np.diff(inked, axis=1)).sum()
    return 2 * float(inked.sum()) / max(float(edges), 1.0)


def thickened(weight, box, centre, extent, width):
    """The digit's cells (digit_cells) with strokes of `width` cells (float) thickened towards MNIST's STROKE_WIDTH:
    float32 [4 x 28, 4 x 28] in [0, 1].

    Strokes are made as many cells wider as they lack (a float): the two
    thickenings of 0, 2, 4, ... cells either side (thicken, the digit shaped
    that much smaller first) mixed by where between them that lies. A stroke
    a hair thinner is thickened a hair more, never 2 cells more at once, and
    by the same hair at every width: a browser's read-back noise on a
    stroke's edges moves the input by a level at most, not by half a pixel
    of ink (a staircase of whole steps, mixed only within half a cell of
    each, moved it twice as fast there).
    """
    added = max(SUPERSAMPLE * STROKE_WIDTH - width, 0.0)  # the cells the strokes lack

    def grown(cells_added):
        grow = cells_added + 1
        cells = digit_cells(weight, box, centre, extent / (SUPERSAMPLE * DIGIT_BOX - grow + 1))
        return thicken(cells, grow, width) if cells_added else cells

    lower = 2 * int(added // 2)
    part = np.float32(added / 2 - lower / 2)
    cells = grown(lower)
    return cells if part == 0 else cells * (1 - part) + grown(lower + 2) * part


def thicken(cells, grow, width):
    """Strokes of `width` cells (float) in cells (float32 [n, n] in [0, 1]) made `grow` - 1 cells wider: float32.

    Each cell takes the mean of the grow x grow square round it, stretched
    so that a stroke's middle is 2 (then clipped to 1) and its half-tone
    edge lies about grow / 2 cells further out, or its own value when
    larger. Unlike the maximum over a square, no one cell sets a whole
    square: a cell moved by a little moves the thickened digit by as little.
    """
    size = grow
    mean = np.pad(cells.astype(np.float64), size // 2)
    for axis in (0, 1):
        total = np.cumsum(mean, axis=axis)
        total = np.concatenate([np.zeros_like(np.take(total, [0], axis=axis)), total], axis=axis)
        mean = (np.take(total, np.arange(size, total.shape[axis]), axis=axis)
                - np.take(total, np.arange(total.shape[axis] - size), axis=axis)) / size
    stretched = np.minimum(1, mean * (2 * size / min(max(width, 1.0), size)))  # the stroke's middle: 2, clipped
    return np.maximum(cells, stretched.astype(np.float32))


def thin(cells, shave):
    """Strokes in cells (float32 [n, n] in [0, 1]) made thinner by `shave` cells (float, >= 0) on each side: float32.

    Each cell takes the least of the cells within a disc round it (an
    erosion), of radius floor(shave) and one more, mixed by shave's
    fraction: the strokes' edges move inwards by shave cells, a fraction
    of a cell at a time. A cell moved by a little moves the result by as
    little, and so does shave: a stroke a little bolder is thinned a
    little more, never a whole cell more at once. The cells are first
    averaged over 3 x 3 (mean3), wholly from a shave of one cell on and in
    proportion below (no shave: the cells as they are): the least of a
    disc picks the most negative of the read-back noise that the edge's
    cells carry and spreads it over the thinned stroke's edge, which moved
    the input by up to 2 levels (docs/photos.md).
    """
    if shave > 0:
        cells = cells + (mean3(cells) - cells) * np.float32(min(shave, 1.0))
    whole = int(shave)
    inner, outer = erode(cells, whole), erode(cells, whole + 1)
    part = np.float32(shave - whole)
    return inner * (1 - part) + outer * part


def erode(cells, radius):
    """The least of cells (float32 [n, n]) within `radius` cells (int; a disc of radius + 1/2) of each: float32 [n, n];
    0 beyond the edge."""
    if radius <= 0:
        return cells
    padded = np.pad(cells, radius)
    n, m = cells.shape
    out = cells.copy()
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            if (dy or dx) and dy * dy + dx * dx <= (radius + 0.5) ** 2:
                np.minimum(out, padded[radius + dy:radius + dy + n, radius + dx:radius + dx + m], out=out)
    return out


def digit_cells(weight, box, centre, side):
    """The network's input at SUPERSAMPLE times its size: float32 [4 x 28, 4 x 28] in [0, 1], each cell the
    heaviest of the weight (float [h, w]) in its square of `side` pixels (cell_max).

    box: the ink's extent (top, bottom, left, right), the crop, and centre its
    centre of mass (row, column), in pixels. The centre lands in the middle of pixel
    (CENTRE, CENTRE), as MNIST's digits were placed, unless that would
    leave part of the box outside the 28x28.
    """
    cells = SUPERSAMPLE * IMAGE_SIZE
    span = cells * side
    before = (SUPERSAMPLE * CENTRE + SUPERSAMPLE / 2) * side  # from the grid's edge to the middle of pixel CENTRE
    top = float(np.clip(centre[0] - before, box[1] - span, box[0]))
    left = float(np.clip(centre[1] - before, box[3] - span, box[2]))
    inside = slice(max(0, math.floor(box[2])), min(weight.shape[1], math.ceil(box[3])))  # the columns that count
    down = cell_max(weight[:, inside], top, top + span, cells, 0, box[:2])
    return cell_max(down, left, left + span, cells, 1, box[2:], origin=inside.start)


def ink_weight(level, threshold, ink):
    """How much of each pixel is the digit's ink: float32 [h, w] in [0, 1], 0 off the digit.

    level: ink_darkness's uint8 [h, w]; threshold: the darkness it was read
    with; ink: find_ink's boolean [h, w] (the digit, no frame or dust). The
    weight of the darkness smoothed over each pixel's neighbours (smoothed)
    rises from 0 to 1 over INK_RAMP levels either side of halfway
    between the paper's median darkness and the ink's (its INK_CORE
    share: the stroke's core, which a changed edge hardly moves), within NEAR_INK
    pixels of the digit's ink; other ink (a frame, dust) weighs 0, and is
    smoothed as paper, as is all beyond NEAR_INK: its darkness spreads onto
    no pixel of the digit. A pixel moved by a few levels moves its weight by
    as little, and the halfway level (to 1/8 of a level, so that dust in the
    paper's median, 1e-4 level, moves nothing) by a fraction of a level: a browser's read-back noise (Brave, Firefox
    145: a few levels on a few pixels) does not turn a pixel on a stroke's
    edge from ink into paper, nor so move the 28x28 input by more than a
    level (docs/photos.md).
    """
    others = level >= threshold
    paper = _level_share(level[~others], 0.5)
    middle = round(4 * (paper + _level_share(level[ink], INK_CORE))) / 8  # to 1/8 level: a speck moves it by 1e-4 level
    others |= ~near(ink, NEAR_INK)
    others &= ~ink
    weight = smoothed(np.where(others, np.uint8(round(paper)), level))  # a frame's or dust's darkness spreads nowhere
    weight -= middle
    weight /= 2 * INK_RAMP
    weight += 0.5
    np.clip(weight, 0, 1, out=weight)
    weight[others] = 0
    return weight


def smoothed(level):
    """level (uint8 [h, w]) smoothed by [1, 2, 1] / 4 across and down (the edge pixels repeated): float32 [h, w].

    A pixel keeps a quarter of its own darkness and takes the rest from its
    8 neighbours: a browser's read-back noise on a pixel (a few levels, on
    1% of them) moves each weight by a quarter as much, and a cell's
    heaviest pixel (cell_max) carries the mean of 9 pixels' noise, not one
    pixel's whole. On a stroke's soft edge that noise moved the 28x28 input
    by up to 2 levels; a stroke's edge 2 pixels or more across hardly
    changes (docs/photos.md).
    """
    out = np.pad(level.astype(np.float32), 1, mode="edge")
    out = out[:-2] + 2 * out[1:-1] + out[2:]
    out = out[:, :-2] + 2 * out[:, 1:-1] + out[:, 2:]
    out /= 16
    return out


def near(mask, reach):
    """The pixels within `reach` pixels of a boolean mask [h, w] across and down (a square of 2 reach + 1): boolean
    [h, w]. As a maximum filter of that size, in 2 x reach shifts of the whole mask a side rather than a sort of
    every window (Pillow's MaxFilter: most of a picture's preparation on a large photo)."""
    out = mask.copy()
    for shift in range(1, reach + 1):
        out[shift:] |= mask[:-shift]
        out[:-shift] |= mask[shift:]
    rows = out.copy()
    for shift in range(1, reach + 1):
        out[:, shift:] |= rows[:, :-shift]
        out[:, :-shift] |= rows[:, shift:]
    return out


def _level_share(levels, share):
    """The level (float) below which `share` of whole levels 0-255 (uint8 array) lie, each level's pixels spread
    evenly over it: a pixel more or less moves it by a fraction of a level, not a whole one."""
    counts = np.bincount(levels.ravel(), minlength=256).astype(np.float64)
    below = np.concatenate([[0.0], np.cumsum(counts)])
    at = int(np.clip(np.searchsorted(below, share * below[-1], side="left"), 1, 256))  # below[at - 1] < target
    return at - 1 + (share * below[-1] - below[at - 1]) / max(counts[at - 1], 1.0)


def ink_extent(profile):
    """Where the ink starts and ends along one axis: (start, end) floats, in pixels (end exclusive).

    profile: float [n], the ink's weight in each row (or column). CROP_TAIL
    of its mass is left out at each end, each row's mass spread evenly over
    the row: the extent moves as little as the mass does, not a whole row
    at a time.
    """
    cumulative = np.concatenate([[0.0], np.cumsum(profile, dtype=np.float64)])
    cumulative /= cumulative[-1]

    def at(share):
        k = int(np.searchsorted(cumulative, share, side="left"))  # cumulative[k - 1] < share <= cumulative[k]
        return k - 1 + (share - cumulative[k - 1]) / (cumulative[k] - cumulative[k - 1])
    return at(CROP_TAIL), at(1 - CROP_TAIL)


def cell_max(weight, start, end, cells, axis, within, origin=0):
    """weight (float [h, w]) along `axis` in `cells` equal cells over [start, end) pixels: each cell its heaviest pixel.

    Only what lies within (from, to) pixels counts (the crop). A pixel counts
    by the share of it that lies in the cell and the crop, whole from
    CELL_FULL of a pixel on (of the cell, when cells are smaller than
    pixels), so the result moves smoothly as start, end and the crop do.
    A cell holds CELL_FULL of some pixel wherever it lies, so inside a
    stroke every cell is ink: counted by its share alone, a cell that held
    no whole pixel dipped to a half (a quarter where rows and columns both
    did), a grid of dips at the cells' pace that moved with the grid's place
    and scale; a stroke's measured width (cell_width) with it, and the
    thinning's erosion spread the dips over the whole stroke (docs/photos.md).
    origin: the pixel (int) that weight's first along `axis` is, when weight
    is cut from a larger picture (within lies in it). Returns float32
    [cells, w] (axis 0) or [h, cells] (axis 1). All cells at once: each
    cell's pixels gathered into a row of as many as the widest cell holds
    (the rest weigh 0), the same float steps as one cell at a time.
    """
    weight = np.moveaxis(weight, axis, 0)
    side = (end - start) / cells
    cell = np.arange(cells)
    low = np.maximum(start + cell * side, within[0])
    high = np.minimum(start + (cell + 1) * side, within[1])
    first = np.maximum(origin, np.floor(low)).astype(np.int64)
    last = np.minimum(origin + len(weight), np.ceil(high)).astype(np.int64)
    used = (first < last) & (low < high)  # cells beyond the picture's edge or the crop: no ink
    out = np.zeros((cells,) + weight.shape[1:], np.float32)
    if not used.any():
        return np.moveaxis(out, 0, axis)
    first, last, low, high = first[used], last[used], low[used, None], high[used, None]
    index = first[:, None] + np.arange(int((last - first).max()))
    share = np.minimum(1.0, (np.minimum(index + 1, high) - np.maximum(index, low)) / (CELL_FULL * min(1.0, side)))
    share = np.where(index < last[:, None], share, 0).astype(np.float32)
    pixels = weight[np.minimum(index, last[:, None] - 1) - origin]  # [used cells, pixels a cell, ...]
    out[used] = (pixels * share.reshape(share.shape + (1,) * (weight.ndim - 1))).max(axis=1)
    return np.moveaxis(out, 0, axis)


def network_input(pixels):
    """uint8 [28, 28] -> float32 [1, 784] in [0, 1], the network's input row (network_rows)."""
    return network_rows(pixels.reshape([1, IMAGE_PIXELS]))


def network_rows(pixels):
    """uint8 [n, 784] (or [n, 28, 28]) -> float32 [n, 784] in [0, 1]: each level times float32(1 / 255) in float32,
    as the TFRecord reader computes it (records.to_float), so that a picture's values are the training's and the
    evaluator's bit for bit (k / 255 rounded once differs from it by one unit in the last place at 126 of the 256
    levels)."""
    return np.asarray(pixels).reshape(-1, IMAGE_PIXELS).astype(np.float32) * np.float32(1.0 / 255)


# A picture that is already the network's input: 28x28, a light digit on black as MNIST's own files, the course's
# mnist_data_jpg pictures and the board's kept digits are: its outer AS_IS_RING pixels are at most AS_IS_DARK on
# average (MNIST's centring by mass lets a stroke touch the edge), its median too, and some of it is AS_IS_BRIGHT.
AS_IS_RING, AS_IS_DARK, AS_IS_BRIGHT = 2, 40, 128
AS_IS_GROUND = 8  # a median this grey or more is a dark grey ground, not MNIST's black: brought down to 0
AS_IS_INK, AS_IS_SIDE = 32, 18  # MNIST's size: its pixels of AS_IS_INK or more span AS_IS_SIDE pixels at least


def as_is_input(img):
    """The picture's own pixels when it is already an MNIST input (see AS_IS_RING), uint8 [28, 28]; else None.

    img: grayscale PIL image. Prepared again (mnist_input), such a picture
    would be cropped, scaled and centred anew: a kept digit read by the app
    would differ from the one the generator writes to its TFRecord by up to
    255 levels where a stroke moved by a pixel. As it is, the app reads the
    very values the generator and the TFRecord reader do (issue #53 §8).
    A ground of AS_IS_GROUND grey or more (a drawing tool's dark grey
    canvas, not MNIST's black) is brought down to 0 and the strokes
    stretched to 255: given as it was, the network read a quarter of such
    digits wrong (docs/photos.md). Kept digits and MNIST's own have a
    ground of 0 and keep their values. A digit smaller than MNIST's (its
    pixels of AS_IS_INK or more spanning fewer than AS_IS_SIDE both ways:
    MNIST scales each digit to 20 pixels on its longer side) is no input
    yet: None, and it is prepared as any picture is.
    """
    if img.mode != "L" or img.size != (IMAGE_SIZE, IMAGE_SIZE):
        return None
    pixels = np.asarray(img)
    ring = np.concatenate([pixels[:AS_IS_RING].ravel(), pixels[-AS_IS_RING:].ravel(),
                           pixels[:, :AS_IS_RING].ravel(), pixels[:, -AS_IS_RING:].ravel()])
    ground = float(np.median(pixels))
    if ring.mean() > AS_IS_DARK or ground > AS_IS_DARK or pixels.max() < AS_IS_BRIGHT:
        return None
    if ground >= AS_IS_GROUND:
        stretched = (pixels.astype(np.float64) - ground) * (255 / (float(pixels.max()) - ground))
        pixels = np.clip(np.round(stretched), 0, 255).astype(np.uint8)
    rows, cols = np.nonzero(pixels >= AS_IS_INK)
    if max(rows.max() - rows.min(), cols.max() - cols.min()) + 1 < AS_IS_SIDE:
        return None  # a smaller digit (a font's, 15 pixels tall): cropped, scaled and centred as any picture
    return pixels.copy()

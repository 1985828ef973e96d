"""The digit's ink in a picture: where a person sees the strokes of one digit, and the refusal of a picture
that holds none (find_ink).

A screenshot's canvas read alone, without the window round it
(screen_canvas), the lighting evened out (ink_darkness: paper_light's flat
field, a light digit on a dark ground turned over: light_on_dark), squared or ruled
paper's lines taken out (mnistkit.ruling), the ink read by Otsu's
threshold (ink_threshold), a frame, a border or a rule along the side left
out (frame_lines; a frame askew: ruling.askew_sides), and the ink's separate marks judged as one digit, dust
left out (one_digit: label_marks, ink_marks, digit_layout). The 28x28
input is built from this ink in mnistkit.preparation.
"""
import numpy as np
from PIL import Image

from .around import marks_round
from .levels import cell_percentiles, level_median, level_percentile, sample_median, true_cells, unique_labels
from .ruling import askew_sides, without_rules

LIGHTING_GRID = 32  # paper brightness is estimated on a grid of at most 32x32 cells (paper_light) ...
LIGHTING_WINDOW = 9  # ... closed over 9x9 of them: dark parts narrower than 9/32 of the picture are ink
BLOT_LIGHT = 0.35  # ... and wider parts this dark, with paper all round them: a shadow is lighter (lit_blots)
GROUND_MIDDLE = 0.7  # light_on_dark: the cells that vote lie in the middle 70% of each side, not in a border
EDGE_BAND = 0.08  # of the shorter side: the band round the picture paper_round looks at
LIGHT_SHARE = 0.35  # of the picture: a light digit on a dark ground is less (MNIST's enlarged: 0.30 at most)
SMALL_PICTURE = 64  # pixels a side at most: light_on_dark judges the ground by the edge (an MNIST-sized screenshot)
# A page turned over (light_on_dark) whose ink is a wedge of paper lit beside a shadow's straight edge is only
# shading (_lit_wedge): its box WEDGE_BOX of the picture both ways at least, one side across and one down each inked
# along WEDGE_SIDE of its length within WEDGE_BAND of the box's longer side (a light digit's box 0.8 at most).
WEDGE_BOX = 0.35
WEDGE_SIDE = 0.95
WEDGE_BAND = 0.03
STROKES = 0.3  # of the ink's longer side: a digit cropped tight, read on flat paper, has strokes no wider (_strokes)
PAPER_FLOOR = 64  # gray levels: darkness is (paper - pixel) / paper, over at least this
SHADOW_MARGIN = 16  # gray levels: near a sharp shadow's edge, paper is at most this much lighter than the pixel
MIN_CONTRAST = 40  # gray levels (of 255) the darkest ink must lie below its paper
FAINT_INK = 20  # darkness levels: fainter ink than MIN_CONTRAST on average (pencil on grey paper), its darkest pixel
# too, is read down to this
FAINT_CLEAR = 0.02  # ... when it lies this share of the picture's shorter side clear of every edge (a shadow's edge
# runs to the picture's edge: its darkness 26-38 on average, as faint and as clear of the noise as the pencil's)
FAINT_SPECKS = 0.005  # ... but for this share of the ink at each side, its dust (the paper's grain) left out
NOT_DARKER = "no digit found: nothing is clearly darker than the paper"
NOT_OUT = "no digit found: nothing stands out from the picture's noise"
# What makes ink a digit-like stroke (find_ink). Each bound lies between what
# the photos and digits the tests hold give and what pages without a digit
# give (docs/photos.md, "How the bounds were chosen", has the figures).
NOISE_MARGIN = 10  # the ink's mean darkness, in standard deviations of the picture's noise, over 3x3 (stands_out)
MAX_INK_FRACTION = 0.5  # of the picture: more "ink" than this is a dark page, not a digit
FADE_NEAR, FADE_FAR = 3, 6  # pixels from the ink: the paper there is paper for a stroke, not for shading ...
FADE_SHARE = 0.45  # ... whose darkness there is this share of the ink's threshold or more (_fades), when the
FADE_FAINT = 128  # ink's darkness is under this on average: shading is faint, a pen's ink dark
MIN_INK_SPREADS = 6  # the ink's distance above the paper, in robust spreads of the paper's darkness (stands_apart)
NEAR_BEST = 0.005  # of the most between-class variance: thresholds this near it are as good (otsu_threshold) ...
NOISE_REACH = 3  # ... and of those, one with the fewest pixels this many gray levels either side (or FEW_CROSSING of
FEW_CROSSING = 0.0001  # the pixels more) is taken, the nearest to AIM_BELOW levels under their middle: not on the
AIM_BELOW = 12  # level of half-inked pixels, where the middle lies on a clean drawing (otsu_threshold)
INK_SPLITS = 2  # Otsu's split is tried again on the darker class at most this often (ink_threshold)
# One digit, not several or only specks (one_digit), judged from the ink's separate marks; the
# bounds lie between a single digit's worst figure and the closest picture that is not one digit.
MARK_GRID = 1024  # marks are found on a grid of at most this many cells a side (a 2048-px photo: 2x2-px cells)
MIN_MARK_MASS = 0.05  # of the heaviest mark's ink: lighter marks are dust (noise, specks), left out
MIN_MARK = 0.05  # of the picture's shorter side: a digit-sized mark; specks are refused when smaller marks
# hold most of the ink ...
DOTTED = 0.8  # ... unless this share of the marks have a neighbour within 1.5 of their size (a dotted stroke)
# ... or they make one small digit (_small_digit): together one digit's place, SMALL_DIGIT pixels tall or wide at
# least, and no round blot (a speck: SPECK_ROUND as tall as wide at most, its ink covering SPECK_COVER of the ellipse
# BLOT_CORE of its box's size in its middle: specks 1.0, the small digits of tests/glance.py 0.91 at most)
SMALL_DIGIT = 6
SPECK_ROUND = 1.6
SPECK_COVER = 0.95
BLOT_CORE = 0.75
LINE_GAP = 0.075  # of the ink's height: a clear gap between lines of digits
DIGIT_GAP = 0.085  # of a line's height: a clear gap between digits side by side
TALL = 0.6  # a line holds digits when as tall as this share of the tallest line, a digit when as tall as this share of its line
# One digit in several strokes side by side (_join_strokes); of the line's height, margins in docs/photos.md:
JOINED_WIDTH = 0.8  # two parts no wider than this together can be one digit
JOINED_GAP = 0.2  # ... when they lie closer than this
THIN = 0.3  # ... unless both are thinner than this (two 1s: a 1 with its flag is about 0.23)
NOTE_APART = 0.2  # of the digit's height: a mark shorter than a digit this far from it is a note, not its stroke,
NOTE_UNDER = 0.5  # ... unless this share of its width lies under or over the digit (a part of it the edge cut off)
WIDE = 0.85  # a part wider than this is several digits written close (a message's count is then only the least)
# A frame, a border or a rule at the side, left out of the ink (frame_lines); of the picture's side:
FRAME_SPAN = 0.6  # a line at least this long ...
FRAME_THICK = 0.15  # ... reaching FRAME_COVER of its length within this distance from its mark's edge
FRAME_COVER = 0.9
FRAME_ASKEW = 0.05  # ... a line askew reaches it within this share of its mark's width (a frame 3 degrees askew)
FRAME_SHARE = 0.85  # of a mark's ink in such lines: a frame (a 7's bar holds less than half of the 7)
FRAME_EDGE = 0.25  # a line alone lies no further than this from the picture's edge ...
ONE_ALIGN = 0.2  # ... unless, a line down, both its ends lie within this share of the other ink's height of that
ONE_SPAN = 0.05  # of a line's height: a 1 apart from a digit (not joined with it as its stroke) rises this above it
ONE_CLEAR = 0.05  # ink's ends and one of them this far from the picture's edge: a 1 written beside a digit ("10")
FRAMED = 0.1  # a framed digit is at least this tall or wide: else the "frame" was the digit, or a shape drawn ...
FRAME_AT_EDGE = 0.03  # ... unless it reaches this near the picture's edge (a border: nothing inside) ...
FRAME_PRINTED = 0.035  # ... or its stroke is this thin (a printed frame; a pen on the board draws 0.064)
# A page whose only ink is a straight line is no digit (_only_lines): as thick as LINE_THIN of its length at most,
# as long as LINE_LONG of the picture's shorter side, and lying flat (no digit is a dash) or within LINE_SIDE of
# the picture's left or right edge (a 1 stands in the middle): a frame's side, a page's or a shadow's edge
LINE_THIN = 0.08
LINE_LONG = 0.5
LINE_SIDE = 0.1
# ... or within FRAME_SIDE of it when a frame was taken out of the ink: the side of a frame askew that frame_lines left
FRAME_SIDE = 0.2
# The line is a shadow's edge, not a frame's side (_shadow_edge), when the picture on each side of it is SHADOW_SIDE
# of it at least and the paper along one side (SHADOW_BAND of its shorter side) SHADOW_DARKER of the other's at most
SHADOW_SIDE = 0.2
SHADOW_BAND = 0.1
SHADOW_DARKER = 0.85
# Ink that reaches the picture's edge and cuts the page in two parts, SHADOW_PART of it each at least, the paper along
# one (within SHADOW_BAND of the picture's shorter side of the ink) SHADOW_DARKER of the other's at most, is shading
# (_divides_shade): a shadow's soft edge from side to side, a photo's page edge against the table.
SHADOW_PART = 0.05
# ... or an outline round an empty middle (_outline: a page's edge in a photo, the table round it): its box within
# OUTLINE_EDGE of the picture's every edge, the middle (OUTLINE_MIDDLE of the picture inset from each side) without
# ink, and ink in OUTLINE_CORNERS of its box's corners (squares OUTLINE_CORNER of its shorter side: a round 0 cropped
# tight to its ink leaves its corners empty)
OUTLINE_EDGE = 0.1
OUTLINE_MIDDLE = 0.25
OUTLINE_CORNERS = 3
OUTLINE_CORNER = 0.1
OUTLINE_SPECKS = (0.02, 0.98)  # the ink's box without this share of its pixels at each side: the outline's corners
# A screenshot of a paint window (a title bar, a menu, a toolbar round the canvas): the canvas is one flat level
# (screen_canvas), one of the picture's commonest, exact on this share of the picture at least ...
CANVAS_SHARE = 0.15
CANVAS_LEVELS = 2  # ... of its commonest levels (the canvas's, or the work area's round it) ...
CANVAS_FLAT = 2  # ... and within this many gray levels (a JPEG's ripples) over a connected region ...
CANVAS_EDGE = 0.8  # ... whose box's sides inside the picture are straight: this share of each is canvas ...
CANVAS_RIM = 3  # ... in one of its outer rows of pixels (a JPEG's ringing along the canvas's edge) ...
CANVAS_FILL = 0.5  # ... that fills this share of its box at least (the rest is the digit) ...
CANVAS_DRAWN = 0.995  # ... and at most this share (a square filled in whole is the drawing, not a canvas) ...
CANVAS_CUT = 0.02  # ... and lies this far (of the picture's side) from the picture's edge on one side at least,
CANVAS_AROUND = 0.5  # ... the window round it of other levels: at most this share of it within CANVAS_FLAT


def otsu_threshold(values):
    """Otsu's threshold of uint8 values: of the t whose between-class variance of < t and >= t lies within NEAR_BEST
    of the most, the one with the fewest values within NOISE_REACH levels of it.

    values: uint8 array of any shape. Returns an int 1-255. For a picture of
    paper and ink it falls between the two levels (Otsu 1979). On a clean
    drawing the variance is flat over most of the gap between paper and ink
    (within 0.05% from 100 to 140 on a board drawing), so its very best t
    jumped by 13 levels under a browser's read-back noise (a few levels on 1%
    of the pixels), onto the level of half-inked pixels, where the noise then
    carried many across: the ink's edge, a frame found or not, and the input
    by 37 levels (docs/photos.md). Taken where fewest values lie (within
    FEW_CROSSING of the values), the noise carries few across it. Of those,
    the one nearest AIM_BELOW levels under the near-best's middle (their
    variance's centre of mass above the limit, which the noise moves by a
    fraction of a level): on a clean drawing that middle is the level of the
    half-inked pixels, and the fewest on either side of it were as near, so
    the noise chose the side (124 or 131 on a board-filling digit, 255
    levels of input).
    """
    counts = np.bincount(np.ravel(values), minlength=256).astype(np.float64)
    mass = counts * np.arange(256)
    below, mass_below = np.cumsum(counts)[:-1], np.cumsum(mass)[:-1]  # pixels < t, for t = 1..255
    above, mass_above = counts.sum() - below, mass.sum() - mass_below
    with np.errstate(divide="ignore", invalid="ignore"):  # an empty class scores 0
        between = np.nan_to_num(below * above * (mass_below / below - mass_above / above) ** 2)
    lowest = (1 - NEAR_BEST) * between.max()
    t = np.arange(1, 256)
    total = np.concatenate([[0.0], np.cumsum(counts)])
    crossing = total[np.minimum(t + NOISE_REACH, 256)] - total[np.maximum(t - NOISE_REACH, 0)]  # levels t-R .. t+R-1
    crossing = np.where(between >= lowest, crossing, np.inf)
    few = t[crossing <= crossing.min() + FEW_CROSSING * total[-1]]
    top = (between - lowest).clip(0)
    aim = float(top @ t / max(float(top.sum()), 1e-300)) - AIM_BELOW  # the near-best's middle, towards the paper
    return int(few[np.argmin(np.abs(few - aim))])


def mean3(cells):
    """The mean of the 3 x 3 cells round each of cells (float32 [h, w]; the edge cells repeated): float32 [h, w]."""
    out = np.pad(cells, 1, mode="edge")
    out = out[:-2] + out[1:-1] + out[2:]
    out = out[:, :-2] + out[:, 1:-1] + out[:, 2:]
    out /= 9
    return out


def ink_darkness(gray):
    """How much darker than its surrounding paper each pixel is: uint8 [h, w], 0 = paper.

    gray: uint8 or float [h, w], gray levels 0-255. The paper's light is
    estimated (paper_light) and divided out, so that shadows, vignettes and
    lighting gradients disappear (flat-field correction). The grid's light
    is spread smoothly over the pixels; near a shadow's sharp edge, where
    it would blur, a pixel's paper is no lighter than the darkest light
    around its cell unless the pixel itself is lighter (SHADOW_MARGIN): the
    shadowed paper along the edge stays paper, not a line of ink. Where the
    paper is darker than PAPER_FLOOR (a ramp to black), its darkness is the
    difference over PAPER_FLOOR: a few levels over black are not ink.
    """
    h, w = gray.shape
    light, cell = paper_light(gray)
    paper = Image.fromarray(light.astype(np.float32), mode="F").resize((w, h), Image.Resampling.BILINEAR)
    around = _window(light, 1, 1, np.minimum).astype(np.float32)
    around = np.repeat(np.repeat(around, cell, axis=0), cell, axis=1)[:h, :w]
    paper = np.minimum(np.asarray(paper), np.maximum(around, np.asarray(gray, dtype=np.float32) + SHADOW_MARGIN))
    darkness = np.subtract(paper, gray, dtype=np.float64)  # float64, and in place below: one array of it
    darkness /= np.maximum(paper, PAPER_FLOOR)  # on paper nearly black, darkness is not measured as a ratio
    darkness *= 255
    np.round(darkness, out=darkness)
    return np.clip(darkness, 0, 255, out=darkness).astype(np.uint8)


def _reach(shape):
    """How many cells LIGHTING_WINDOW's half reaches on a grid of `shape`: (rows, cols), each at most the grid's."""
    reach = max(1, LIGHTING_WINDOW * max(shape) // (2 * LIGHTING_GRID))
    return min(reach, shape[0] - 1), min(reach, shape[1] - 1)


def paper_light(gray):
    """The paper's light on a grid of cells: (float64 [rows, cols], the cell's side in pixels), at most
    LIGHTING_GRID cells a side.

    Each cell's light is its 90th percentile (the paper between strokes).
    A morphological closing of that grid (the maximum over LIGHTING_WINDOW
    cells, then the minimum over as many) takes the paper of cells full of
    ink from around them, since strokes are narrower than the window, while
    shading keeps its shape: a shadow's sharp edge stays sharp and a
    gradient stays where it is. Beyond the picture's edge the light goes on
    as it falls towards the edge (mirrored, never brighter than the edge), so
    that a vignette's dark corners are not lit from inside. A frame or a
    thin border is narrower than the window: it is ink, not paper.
    """
    (light,), cell = cell_percentiles(gray, [90], LIGHTING_GRID)
    rows, cols = light.shape
    reach_rows, reach_cols = _reach(light.shape)
    pad = ((reach_rows, reach_rows), (reach_cols, reach_cols))
    light = np.minimum(np.pad(light, pad, mode="reflect", reflect_type="odd"), np.pad(light, pad, mode="edge"))
    light = _window(_window(light, reach_rows, reach_cols, np.maximum), reach_rows, reach_cols, np.minimum)
    return lit_blots(light[reach_rows:reach_rows + rows, reach_cols:reach_cols + cols]), cell


def lit_blots(light):
    """The paper's light (float64 [rows, cols], paper_light's grid) with blots of ink lit as the paper round them.

    A filled shape wider than the closing's window (a blot, a square
    filled in on the board) would pass for shade and keep only its edges.
    Shade is told from it by two things: it is never nearly black
    (BLOT_LIGHT of the paper's light at most), and it comes from outside
    the picture (a shadow, a vignette, the table round a page reach an
    edge). A region of the grid that is both is lit as the median of the
    cells round it.
    """
    dark = light < BLOT_LIGHT * np.percentile(light, 90)
    if not dark.any():
        return light
    labels = label_marks(dark)
    lit = light.copy()
    for root in np.unique(labels[labels >= 0]):
        blot = labels == root
        if blot[0].any() or blot[-1].any() or blot[:, 0].any() or blot[:, -1].any():
            continue
        ring = _window(blot.astype(np.float64), 1, 1, np.maximum).astype(bool) & ~blot
        lit[blot] = np.median(light[ring])
    return lit


def _window(values, reach_rows, reach_cols, pick):
    """pick (np.maximum or np.minimum) over a (2 reach_rows + 1) x (2 reach_cols + 1) window round each cell.

    values: float [rows, cols]; cells nearer the edge than the reach take what lies within the array.
    """
    out = values.copy()
    for shift in range(1, reach_rows + 1):
        pick(out[shift:], values[:-shift], out=out[shift:])
        pick(out[:-shift], values[shift:], out=out[:-shift])
    values = out.copy()
    for shift in range(1, reach_cols + 1):
        pick(out[:, shift:], values[:, :-shift], out=out[:, shift:])
        pick(out[:, :-shift], values[:, shift:], out=out[:, :-shift])
    return out


def light_on_dark(gray):
    """True when the picture is a light digit on a dark ground (a screenshot of MNIST, chalk on a board).

    gray: uint8 or float [h, w]. Judged where there is contrast: on the
    LIGHTING_GRID grid, each cell's median is placed between the darkest
    (10th percentile) and lightest (90th) levels within LIGHTING_WINDOW
    cells of it. Strokes are thin, so most cells near them are ground: on
    paper their medians lie at the light end, on a board at the dark end.
    Cells without MIN_CONTRAST between the two (plain paper, a shadow's
    inside) have no say, and a shadow's edge has as many on either side: a
    frame, a border, a shadow over half the page or the table round a
    photographed page do not turn a picture over as its edge colour would.
    Only the middle GROUND_MIDDLE of each side votes, where there is
    contrast there: a thick border's inside would vote against the paper.
    A vote for light on dark holds when the picture's median is nearer its
    darkest level too (a bold 0 filling the middle is ink on paper). A vote
    for ink on paper does not when that median and the outer band's are
    both nearer the darkest level (_dark_round): a bold light 0 filling the
    middle of a dark picture, whose cells inside its strokes voted.
    A picture without contrast anywhere: its median against its extremes.
    A picture of SMALL_PICTURE pixels a side or less (an MNIST-sized
    screenshot, whose digit fills its middle): its edge's median.
    """
    if max(gray.shape) <= SMALL_PICTURE:  # an MNIST-sized screenshot: the digit fills its middle; its edge is ground
        border = np.concatenate([gray[0], gray[-1], gray[:, 0], gray[:, -1]])
        ground = np.median(border)
        return ground - gray.min() < gray.max() - ground
    (dark, middle, light), _ = cell_percentiles(gray, [10, 50, 90], LIGHTING_GRID)
    reach_rows, reach_cols = _reach(middle.shape)
    low = _window(dark, reach_rows, reach_cols, np.minimum)
    high = _window(light, reach_rows, reach_cols, np.maximum)
    contrast = high - low >= MIN_CONTRAST
    rows, cols = middle.shape
    inside = np.zeros_like(contrast)
    inside[int(rows * (1 - GROUND_MIDDLE) / 2):rows - int(rows * (1 - GROUND_MIDDLE) / 2),
           int(cols * (1 - GROUND_MIDDLE) / 2):cols - int(cols * (1 - GROUND_MIDDLE) / 2)] = True
    if (contrast & inside).any():
        contrast &= inside
    elif not contrast.any():
        ground = level_median(gray)
        return ground - gray.min() < gray.max() - ground
    place = (middle[contrast] - low[contrast]) / (high[contrast] - low[contrast])
    ground = level_median(gray)  # and the picture as a whole is mostly dark: a bold digit filling the middle is ink
    dark = ground - gray.min() < gray.max() - ground
    if np.median(place) >= 0.5:  # the votes say ink on paper; a bold light digit filling a dark picture's middle
        return bool(dark and _dark_round(gray))  # votes so too (the cells inside its strokes): dark all round, it is not
    return bool(dark and not paper_round(gray))


def _dark_round(gray):
    """True when a light digit's bold strokes fill a dark picture's middle (a bold 0 white on black, 80-600 pixels,
    whose cells vote for ink on paper): the picture's outer band (EDGE_BAND of its shorter side) dark all round, its
    90th percentile nearer the picture's darkest level than its lightest (a shadow over part of the page leaves
    paper in it), and under LIGHT_SHARE of the picture lighter than halfway (a thick dark border or the table round
    a photographed page holds a lit page, 0.43 of the picture at least)."""
    band = max(1, int(EDGE_BAND * min(gray.shape)))
    ring = np.concatenate([gray[:band].ravel(), gray[-band:].ravel(), gray[:, :band].ravel(), gray[:, -band:].ravel()])
    lit = level_percentile(ring, 90)
    low, high = float(gray.min()), float(gray.max())
    return bool(lit - low < high - lit and np.mean(gray > (low + high) / 2) < LIGHT_SHARE)


def paper_round(gray):
    """True when the picture's outer band (EDGE_BAND of its shorter side) is mostly light: paper all round a dark
    shape (a square filled in on a sheet), which light_on_dark's votes inside the shape would take for a dark ground.
    A light-on-dark picture's ground reaches its edge, a thin light frame (a screenshot's) or not."""
    band = max(1, int(EDGE_BAND * min(gray.shape)))
    ring = np.concatenate([gray[:band].ravel(), gray[-band:].ravel(), gray[:, :band].ravel(), gray[:, -band:].ravel()])
    paper = level_median(ring)
    return bool(paper - gray.min() > gray.max() - paper)


def stroke_width(mask):
    """Mean stroke width in pixels of a boolean mask: area / half the number of ink-paper edges."""
    edges = np.count_nonzero(mask[1:] != mask[:-1]) + np.count_nonzero(mask[:, 1:] != mask[:, :-1])
    return 2 * np.count_nonzero(mask) / max(edges, 1)


def stands_apart(level, ink, ignore=None):
    """True when the ink (boolean mask) is MIN_INK_SPREADS robust spreads darker than the rest of `level`.

    level: [h, w] of whole darkness levels 0-255 (ink_darkness's uint8). The
    spread is the paper's median absolute deviation x 1.4826 (its standard
    deviation, were it normal), so a few ink pixels or strokes' soft edges
    do not widen it as they would a variance. Medians from the histogram: one
    pass. ignore: boolean [h, w], pixels neither ink nor paper (a frame's).
    """
    counts = np.bincount(level[~ink if ignore is None else ~(ink | ignore)].astype(np.int64), minlength=256)
    paper = sample_median(np.arange(256), counts)
    distance = np.abs(np.arange(256) - paper)
    order = np.argsort(distance, kind="stable")
    spread = 1.4826 * sample_median(distance[order], counts[order])
    return level[ink].mean() - paper >= MIN_INK_SPREADS * spread


def stands_out(level, ink):
    """True when the ink (boolean [h, w]) is NOISE_MARGIN times darker than the picture's noise: pixel by pixel, or
    over 3 x 3 pixels (mean3).

    level: ink_darkness's uint8 [h, w]. Pixel by pixel, the noise is the
    median difference between neighbours across (0.954 s for two N(0, s^2)
    pixels). Over 3 x 3, it is that of the 3 x 3 means 3 pixels apart
    (windows that share no pixel). A stroke 3 pixels wide or more keeps its
    darkness over 3 x 3 pixels while white noise falls to a third: faint
    pencil on grey paper under a phone's noise stands out as a person sees
    it. A page of noise alone stands out no more either way; a tiny clean
    picture, whose strokes make most of its 3 x 3 means differ, stands out
    pixel by pixel (docs/photos.md).
    """
    mean = level[ink].mean()
    step = np.abs(np.diff(level.astype(np.int16), axis=1))
    if mean >= NOISE_MARGIN * level_median(step) / 0.954:
        return True
    smooth = mean3(level.astype(np.float32))
    noise = float(np.median(np.abs(smooth[:, 3:] - smooth[:, :-3]))) / 0.954
    return bool(smooth[ink].mean() >= NOISE_MARGIN * noise)


def ink_threshold(level):
    """The darkness (int 1-255) from which on a pixel of `level` ([h, w] of whole levels 0-255) is ink.

    When the ink is a small share of a noisy, shaded picture (thin strokes,
    a large page), Otsu's split can fall inside the paper's own wide spread
    of darkness. The darker class is then split again by Otsu's method, up
    to INK_SPLITS times, until its ink stands apart (stands_apart). When no
    split does, Otsu's first threshold is kept, for find_ink to refuse.
    """
    first = threshold = otsu_threshold(level.astype(np.uint8))
    for split in range(INK_SPLITS + 1):
        if stands_apart(level, level >= threshold):
            return threshold
        darker = level[level >= threshold]
        if split == INK_SPLITS or darker.min() == darker.max():
            return first
        threshold = otsu_threshold(darker.astype(np.uint8))


def find_ink(img, levels=False):
    """The ink of a picture's digit: boolean [h, w], True where the (upright, not inverted) picture has ink.

    levels=True: (ink, level, threshold), the darkness (ink_darkness's uint8 [h, w]) and the threshold it was
    read with, for ink_weight.

    Dust (marks lighter than MIN_MARK_MASS of the heaviest) is left out.
    img: grayscale PIL image, at most MAX_SIDE pixels on a side. A screenshot is read on its canvas alone
    (screen_canvas: the window's title bar, menu and frame left out; ink and level are False and 0 there). A light
    digit on a dark ground (light_on_dark) is inverted first. Lighting is
    evened out (ink_darkness), ink is darkness at or above Otsu's threshold
    (ink_threshold), and a frame, a border or a rule along the side is left
    out of it (frame_lines; a frame with nothing in it raises ValueError), as are the lines of squared or
    ruled paper before it (ruling.without_rules). A picture refused so whose paper paper_light finds nearly
    black at the edge (cells full of ink: a digit cropped tight, its stroke along the edge, which the lighting
    takes for shade) is read again on flat paper (flat_darkness), and that reading holds when its ink is
    strokes (_strokes), not a shadow's blot over a corner. Raises ValueError ("no digit
    found: ...") for a picture without a digit-like stroke, whatever its colour:
      - one flat shade, or no pixel MIN_CONTRAST gray levels darker than its paper (FAINT_INK for faint ink
        clear of the picture's edges, its dust left out);
      - ink not NOISE_MARGIN times darker than the picture's noise, pixel by pixel or over 3 x 3 pixels
        (stands_out);
      - ink over more than MAX_INK_FRACTION of the picture up to its edge (a page covered in
        ink; a filled shape with paper round it is a drawing, for the network to judge);
      - ink not MIN_INK_SPREADS robust spreads of the paper's darkness above
        the paper (stands_apart), as for smooth shading such as a lighting
        gradient, whose darkness is spread evenly rather than in two levels;
      - only specks (one_digit; a digit a few pixels tall is not: _small_digit).
    Raises SeveralDigits (a ValueError) for several digits side by side or stacked.
    """
    gray = np.asarray(img, dtype=np.uint8)
    if gray.max() == gray.min():
        raise ValueError(f"no digit found: every pixel is {int(gray.flat[0])}")
    canvas = screen_canvas(gray)
    if canvas is None:
        found = _ink_of(gray)
    else:  # a screenshot's window round the canvas: read the canvas alone, give the picture's shape back
        ink, level, threshold = _ink_of(gray[canvas])
        found = (np.zeros(gray.shape, bool), np.zeros(gray.shape, np.uint8), threshold)
        found[0][canvas], found[1][canvas] = ink, level
    return found if levels else found[0]


def _ink_of(gray):
    """find_ink's (ink, level, threshold) of a picture's gray levels (uint8 [h, w], not one flat shade). A page
    turned over (light_on_dark) whose ink is a lit wedge of the paper (_lit_wedge) is only shading.

    A page turned over in which no digit is found is read again as it is, and that reading holds when it finds
    faint ink (its darkness under MIN_CONTRAST on average: pencil on grey paper): such ink gives light_on_dark no
    cells of its own to vote, and the paper's lighting gradient, which does, can vote either way. Dark ink read
    so (a light frame's dark inside on a screenshot, a page covered in ink with a light border) is no digit: the
    turned reading's refusal is raised, as when the second reading finds none.
    """
    turned = light_on_dark(gray)
    try:
        found = _ink_read(255 - gray if turned else gray)
    except SeveralDigits:
        raise
    except ValueError as refusal:
        if not turned:
            raise
        try:
            found = _ink_read(gray)
        except ValueError:
            raise refusal from None
        if found[1][found[0]].mean() >= MIN_CONTRAST:
            raise refusal from None
        return found
    if turned and _lit_wedge(found[0]):
        raise ValueError("no digit found: only shading, no strokes that stand apart from the paper")
    return found


def _lit_wedge(ink):
    """True when the ink (boolean [h, w], some True) is a wedge of paper lit beside a shadow's straight edge, as
    WEDGE_BOX and WEDGE_SIDE say: its box large both ways, one side across and one down inked all along."""
    h, w = ink.shape
    top, bottom, left, right = mask_box(ink)
    box = ink[top:bottom, left:right]
    if box.shape[0] < WEDGE_BOX * h or box.shape[1] < WEDGE_BOX * w:
        return False
    band = max(1, int(WEDGE_BAND * max(box.shape)))
    across = max(box[:band].any(axis=0).mean(), box[-band:].any(axis=0).mean())
    down = max(box[:, :band].any(axis=1).mean(), box[:, -band:].any(axis=1).mean())
    return bool(min(across, down) >= WEDGE_SIDE)


def _ink_read(gray):
    """_ink_of's (ink, level, threshold) of a picture's gray levels, dark ink on lighter paper (turned already)."""
    try:
        return _digit_ink(gray, without_rules(ink_darkness(gray)))
    except ValueError as refusal:  # a digit cropped tight, its strokes along the edge lit as shade: on flat paper
        level = flat_darkness(gray)
        if not (_black_at_edge(gray) and _touches_edge(level)):
            raise
        try:
            found = _digit_ink(gray, level)
        except ValueError:
            raise refusal from None
        if not _strokes(found[0]):  # a shadow over a corner: a blob, not strokes
            raise refusal
        return found


def screen_canvas(gray):
    """The canvas of a screenshot, the digit drawn on it and a window round it (a title bar, a menu bar, buttons,
    a toolbar, a frame): (rows, cols) slices of gray (uint8 [h, w]), or None when the picture is no such thing.

    A canvas is the largest connected region within CANVAS_FLAT levels of one of the picture's CANVAS_LEVELS
    commonest levels, which CANVAS_SHARE of the picture hold exactly (a photo's paper is never so flat: its
    noise and light spread it), as _flat_box says. Of two such (the canvas and the work area round it), the
    smaller box is the canvas. None when the commonest level is paper along every edge (_along_every_edge): a
    window has a title bar or a frame along one side at least, and a dark digit on white paper is no canvas
    (a bold 8 on a 28x28 picture has a flat, straight-sided region of its own). The window's title, menu words
    and buttons are then no ink of the digit's, nor a dark title bar a stroke along the top.
    """
    counts = np.bincount(gray.ravel(), minlength=256)
    levels = [level for level in np.argsort(counts)[::-1][:CANVAS_LEVELS]
              if counts[level] >= CANVAS_SHARE * gray.size]
    if not levels or _along_every_edge(gray, levels[0]):
        return None  # the commonest level is paper reaching every edge: no window (most pictures end here)
    boxes = [box for box in map(lambda level: _flat_box(gray, level), levels) if box is not None]
    if not boxes:
        return None
    top, bottom, left, right = min(boxes, key=lambda box: (box[1] - box[0]) * (box[3] - box[2]))
    return slice(top, bottom), slice(left, right)


def _along_every_edge(gray, level):
    """True when more than CANVAS_AROUND of each band CANVAS_CUT wide along the edges of gray (uint8 [h, w]) lies
    within CANVAS_FLAT of `level`: paper all round, no window (a title bar, a frame) along any side."""
    h, w = gray.shape
    band_h, band_w = max(1, int(CANVAS_CUT * h)), max(1, int(CANVAS_CUT * w))
    edges = (gray[:band_h], gray[-band_h:], gray[:, :band_w], gray[:, -band_w:])
    return min(np.mean(np.abs(band.astype(np.int16) - int(level)) <= CANVAS_FLAT) for band in edges) > CANVAS_AROUND


def _flat_box(gray, level):
    """The box (top, bottom, left, right) of the largest connected region of gray (uint8 [h, w]) within CANVAS_FLAT
    of `level` when it is a canvas, else None: it covers CANVAS_FILL of its box and leaves some of it to a drawing
    (CANVAS_DRAWN: a square filled in whole is a shape drawn, for the network to judge), the box's sides inside the
    picture are straight (CANVAS_EDGE of one of the CANVAS_RIM outer rows of each is the region, as a JPEG
    rings along the canvas's edge; a 0's inside or a box drawn askew round the digit has round or slanted
    sides), and it leaves a window CANVAS_CUT of the picture wide at least on one side, of other levels than the
    canvas's (at most CANVAS_AROUND of it within CANVAS_FLAT: a margin line or a frame drawn on a page has paper
    beyond it)."""
    h, w = gray.shape
    flat = (np.abs(np.arange(256) - int(level)) <= CANVAS_FLAT)[gray]
    labels = label_marks(flat)
    sizes = np.bincount(labels[labels >= 0])  # by the flat index of each region's first pixel
    region = labels == np.argmax(sizes)
    top, bottom, left, right = mask_box(region)
    cut = (top / h, 1 - bottom / h, left / w, 1 - right / w)
    area = (bottom - top) * (right - left)
    if max(cut) < CANVAS_CUT or not CANVAS_FILL * area <= sizes.max() <= CANVAS_DRAWN * area:
        return None  # no window round it, or the drawing (a digit, or a filled shape whole: no canvas)
    if np.count_nonzero(flat) - np.count_nonzero(flat[top:bottom, left:right]) > CANVAS_AROUND * (h * w - area):
        return None  # paper of its level round it: a line or a frame drawn on the page, not a window
    box = region[top:bottom, left:right]
    sides = (box[:CANVAS_RIM], box[::-1][:CANVAS_RIM], box.T[:CANVAS_RIM], box.T[::-1][:CANVAS_RIM])
    if any(away > 0 and side.mean(axis=1).max() < CANVAS_EDGE for away, side in zip(cut, sides)):
        return None
    return top, bottom, left, right


def _digit_ink(gray, level):
    """find_ink's ink from the picture's darkness `level` (uint8 [h, w]): (digit ink, level, threshold), or raises
    ValueError as find_ink says. A picture whose darkest pixel is under MIN_CONTRAST is read as faint ink; when it
    holds no one digit, it is refused as "nothing is clearly darker than the paper" (a gradient, a faint shadow),
    the reason it had before faint ink was read."""
    if level.max() < FAINT_INK:
        raise ValueError(NOT_DARKER)
    if level.max() >= MIN_CONTRAST:
        return _judged_ink(gray, level)
    try:
        return _judged_ink(gray, level)
    except ValueError:  # several digits too: as before
        raise ValueError(NOT_DARKER) from None


def _judged_ink(gray, level):
    """_digit_ink's reading of the darkness `level` (uint8 [h, w]) of gray: (digit ink, level, threshold), or raises
    ValueError as find_ink says."""
    threshold = ink_threshold(level)
    ink = level >= threshold
    marks = label_marks(_ink_cells(ink)[0])  # labelled once: for the frames, and for the digit when none is found
    frame = frame_lines(ink, marks)
    frame |= drawn_round(ink & ~frame, None if frame.any() else marks, frame.any())  # a ring, an underline, ...
    ink &= ~frame
    mean = level[ink].mean()
    faint = mean < MIN_CONTRAST and (mean < FAINT_INK or not _clear_of_edges(_dust_out(ink, frame, marks)))
    if faint or not stands_out(level, ink):
        raise ValueError(NOT_OUT)
    if ink.mean() > MAX_INK_FRACTION and not paper_round(np.where(ink, 0, 255)):  # a dark page, not a shape drawn
        raise ValueError("no digit found: ink covers most of the picture")
    if not stands_apart(level, ink, frame) or _fades(level, ink, threshold):
        raise ValueError("no digit found: only shading, no strokes that stand apart from the paper")
    digit, notes = one_digit(ink, None if frame.any() else marks)  # a frame taken out splits marks: labelled anew
    only, line = _only_lines(digit, FRAME_SIDE if frame.any() else LINE_SIDE)  # a frame's pieces are no note
    lines = only or _outline(digit)
    if (lines or line) and _shadow_edge(gray, digit):  # a steep line too: a 1 has the same paper round it
        raise ValueError("no digit found: only shading, no strokes that stand apart from the paper")
    if lines:
        raise ValueError("no digit found: only a frame or a border, nothing inside it")
    if _divides_shade(gray, digit):
        raise ValueError("no digit found: only shading, no strokes that stand apart from the paper")
    return digit if notes is None else digit & ~notes, level, threshold


def _dust_out(ink, frame, marks):
    """The ink (boolean [h, w], some True) without its dust (ink_marks), from find_ink's labels of its marks when no
    frame (boolean [h, w]) was taken out of it: boolean [h, w]."""
    return ink_marks(ink, None if frame.any() else marks)[2]


def _clear_of_edges(ink):
    """True when the ink (boolean [h, w], some True), but for FAINT_SPECKS of it at each side (the paper's grain
    that a faint pencil's threshold takes in), lies FAINT_CLEAR of the picture's shorter side from every edge."""
    r, c = np.nonzero(ink)
    top, bottom = np.quantile(r, [FAINT_SPECKS, 1 - FAINT_SPECKS])
    left, right = np.quantile(c, [FAINT_SPECKS, 1 - FAINT_SPECKS])
    clear = FAINT_CLEAR * min(ink.shape)
    return bool(min(top, left, ink.shape[0] - 1 - bottom, ink.shape[1] - 1 - right) >= clear)


def _only_lines(ink, near=LINE_SIDE):
    """(True when the ink (boolean [h, w], some True) is one long straight line, whole or dashed, lying flat (no
    digit is a dash) or along the picture's left or right edge (a 1 stands up, away from the side); True when it
    is such a line at any slope): as thick as LINE_THIN of its length at most (from the spread of its pixels along
    and across their main axis), as long as LINE_LONG of the picture's shorter side, within LINE_SIDE of the left
    or right edge when steep. A frame's side askew or cut off, a page's edge in a photo, a shadow's edge: not a
    digit."""
    h, w = ink.shape
    _, mean_c, var_r, var_c, cov = _moments(ink)
    middle, spread = (var_r + var_c) / 2, np.hypot((var_r - var_c) / 2, cov)
    length, thick = np.sqrt(12 * (middle + spread)), np.sqrt(12 * max(middle - spread, 0))
    side = min(mean_c, w - 1 - mean_c) <= near * w
    line = bool(thick <= LINE_THIN * length and length >= LINE_LONG * min(h, w))
    return line and (var_c > var_r or side), line


def _shadow_edge(gray, ink):
    """True when the ink (boolean [h, w], some True), a line as _only_lines finds it, is a shadow's edge: the picture
    (gray uint8 [h, w]) on each side of the line through its pixels is SHADOW_SIDE of it at least, and the paper
    along the line's darker side (within SHADOW_BAND of the picture's shorter side) has its median below
    SHADOW_DARKER of the lighter side's (a frame's side has the same paper on both, a shaded page's middle nearly)."""
    mean_r, mean_c, var_r, var_c, cov = _moments(ink)
    angle = 0.5 * np.arctan2(2 * cov, var_c - var_r)  # the main axis, across
    rows, cols = np.mgrid[0:ink.shape[0], 0:ink.shape[1]]
    across = (rows - mean_r) * np.cos(angle) - (cols - mean_c) * np.sin(angle)
    if min(np.count_nonzero(across > 0), np.count_nonzero(across < 0)) < SHADOW_SIDE * ink.size:
        return False
    band = (np.abs(across) <= SHADOW_BAND * min(ink.shape)) & ~ink
    darker, lighter = sorted(float(np.median(gray[band & (across * sign > 0)])) for sign in (1, -1))
    return darker < SHADOW_DARKER * lighter


def _divides_shade(gray, ink):
    """True when the ink (boolean [h, w], some True) reaches the picture's edge and cuts the rest of the picture
    (gray, uint8 [h, w]) in two parts of SHADOW_PART of it at least (8-connected), the paper along the ink's side in
    one (within SHADOW_BAND of the picture's shorter side) with its median under SHADOW_DARKER of the other's: a
    shadow's edge, bent or straight, or a photo's page edge against the table. A digit reaching the edge (a 1
    cropped tight, a 7 across a corner) has the same paper on both sides."""
    if not (ink[0].any() or ink[-1].any() or ink[:, 0].any() or ink[:, -1].any()):
        return False
    labels = label_marks(~ink)
    sizes = np.bincount(labels[labels >= 0])  # by the flat index of each part's first pixel
    parts = np.argsort(sizes)[-2:]
    if parts.size < 2 or sizes[parts[0]] < SHADOW_PART * ink.size:
        return False
    reach = max(1, int(SHADOW_BAND * min(ink.shape)))
    band = (_window(ink.astype(np.uint8), reach, reach, np.maximum) > 0) & ~ink
    darker, lighter = sorted(float(np.median(gray[band & (labels == part)])) for part in parts)
    return darker < SHADOW_DARKER * lighter


def _moments(ink):
    """(mean row, mean column, the rows' variance, the columns' variance, their covariance) of the ink's pixels
    (boolean [h, w], some True): floats, in pixels and square pixels; _only_lines' and _shadow_edge's line."""
    r, c = np.nonzero(ink)
    dr, dc = r - r.mean(), c - c.mean()
    return r.mean(), c.mean(), np.mean(dr * dr), np.mean(dc * dc), np.mean(dr * dc)


def _outline(ink):
    """True when the ink (boolean [h, w], some True) is an outline round the picture's empty middle, as OUTLINE_EDGE,
    OUTLINE_MIDDLE, OUTLINE_CORNERS and OUTLINE_CORNER say."""
    h, w = ink.shape
    top, bottom, left, right = mask_box(ink)
    if min(top, left) > OUTLINE_EDGE * min(h, w) or h - bottom > OUTLINE_EDGE * h or w - right > OUTLINE_EDGE * w:
        return False
    inset_h, inset_w = int(OUTLINE_MIDDLE * h), int(OUTLINE_MIDDLE * w)
    if ink[inset_h:h - inset_h, inset_w:w - inset_w].any():
        return False
    r, c = np.nonzero(ink)
    (top_in, bottom_in), (left_in, right_in) = (np.quantile(r, OUTLINE_SPECKS), np.quantile(c, OUTLINE_SPECKS))
    inner = int(top_in), int(bottom_in) + 1, int(left_in), int(right_in) + 1
    return max(_corners_inked(ink, box) for box in ((top, bottom, left, right), inner)) >= OUTLINE_CORNERS


def _corners_inked(ink, box):
    """How many of the corners of `box` (top, bottom, left, right) hold ink (boolean [h, w]): squares OUTLINE_CORNER
    of the box's shorter side. _outline's, of the ink's box and of its box without OUTLINE_SPECKS of it at each side
    (a page edge with the table's noise beyond it reaches past the outline's corners)."""
    top, bottom, left, right = box
    c = max(1, int(OUTLINE_CORNER * min(bottom - top, right - left)))
    corners = (ink[top:top + c, left:left + c], ink[top:top + c, right - c:right],
               ink[bottom - c:bottom, left:left + c], ink[bottom - c:bottom, right - c:right])
    return sum(corner.any() for corner in corners)


def _fades(level, ink, threshold):
    """True when the ink (boolean [h, w], some True) fades into the paper round it, as shading does: the darkness
    (level, uint8 [h, w]) of the pixels under `threshold` FADE_NEAR to FADE_FAR pixels from the ink averages
    FADE_SHARE of the threshold or more. A stroke's edge is sharp: beyond its soft edge lies paper. An empty page's
    uneven light or a soft shadow over its corner, read as ink, goes on darkening past the threshold's line. Only
    faint ink (darkness under FADE_FAINT on average) is judged so: a black MNIST digit scaled up tenfold has soft
    edges 10 pixels wide, and thin strokes close together (the bundled sample's training 8 3354) leave little
    paper between them (docs/photos.md has the figures)."""
    if level[ink].mean() >= FADE_FAINT:
        return False
    top, bottom, left, right = mask_box(ink)
    box = (slice(max(top - FADE_FAR, 0), bottom + FADE_FAR), slice(max(left - FADE_FAR, 0), right + FADE_FAR))
    inked, dark = ink[box].astype(np.uint8), level[box]
    near = _window(inked, FADE_NEAR, FADE_NEAR, np.maximum)
    ring = (_window(inked, FADE_FAR, FADE_FAR, np.maximum) > near) & (dark < threshold)
    return bool(ring.any() and dark[ring].mean() >= FADE_SHARE * threshold)


def flat_darkness(gray):
    """How much darker than the picture's paper each pixel is, the paper one light (its 90th percentile) all over:
    uint8 [h, w], 0 = paper, as ink_darkness's but without its lighting. For a digit cropped tight (its strokes
    along the picture's edge, much of it ink), whose grid cells at the edge hold no paper for paper_light."""
    paper = max(level_percentile(gray, 90), 1.0)
    darkness = np.subtract(paper, gray, dtype=np.float64)
    darkness *= 255 / max(paper, PAPER_FLOOR)
    return np.clip(np.round(darkness), 0, 255).astype(np.uint8)


def _black_at_edge(gray):
    """True when paper_light finds the paper nearly black (BLOT_LIGHT of its light) in a cell at the picture's edge:
    cells full of ink, which shade never is (a shadow, a vignette, the table round a page are lighter)."""
    light, _ = paper_light(gray)
    edge = np.concatenate([light[0], light[-1], light[:, 0], light[:, -1]])
    return bool(edge.min() < BLOT_LIGHT * np.percentile(light, 90))


def _strokes(ink):
    """True when the ink (boolean [h, w], some True) is strokes: its width (stroke_width) at most STROKES of its
    box's longer side (a digit's strokes 0.1-0.25; a shadow's quarter disc over a corner about 0.4)."""
    top, bottom, left, right = mask_box(ink)
    return stroke_width(ink) <= STROKES * max(bottom - top, right - left)


def _touches_edge(level):
    """True when the darkest half of `level`'s range (uint8 [h, w]) reaches the picture's edge."""
    dark = level >= max(int(level.max()) // 2, MIN_CONTRAST)
    return bool(dark[0].any() or dark[-1].any() or dark[:, 0].any() or dark[:, -1].any())


def frame_lines(ink, labels=None):
    """The ink of a frame, a border or a straight rule along the picture's side: boolean [h, w] (all False: none).

    ink: boolean [h, w]; labels: label_marks of its _ink_cells when the
    caller has them (find_ink labels once for this and one_digit). A person
    looks past them; MNIST has none. Marks
    (8-connected groups of ink, on the MARK_GRID grid: _ink_cells) are
    looked at whole; a side of a mark's box is a line as side_lines says. A
    mark is a frame when:
      - it encloses (two sides or more that are lines, its box FRAME_SPAN
        of the picture both ways: a box, an L, a border; a digit written
        across it keeps what lies off the lines), or
      - it is one line alone (FRAME_THICK of its length thick at most;
        lines hold FRAME_SHARE of its ink), within FRAME_EDGE of the
        picture's edge, with all other ink on its inner side (a 1 stands in
        the middle; a 4's stem has its bar beside it: _lone_rules).
    When nothing FRAMED of the picture's side would be left without them
    (_nothing_inside): a lone line down was the digit (a tightly cropped 1),
    and a drawn shape (a square's outline in a pen's stroke, away from the
    edge) is the drawing: none is found, and the network says what it makes
    of it. A printed frame, a border or a rule across with nothing else
    raises ValueError ("no digit found: only a frame ...").
    """
    h, w = ink.shape
    cells, cell = _ink_cells(ink)
    rows, cols = cells.shape
    labels = label_marks(cells) if labels is None else labels
    found = np.zeros((rows, cols), bool)
    borders, lone = [], []  # (mark, lines) of the enclosing frames; (mark, box, the side it faces the rest from)
    r, c = true_cells(labels >= 0)  # every mark's box in one pass: a noisy page has thousands of specks
    roots, which = unique_labels(labels[r, c], labels.size)
    tops, lefts = np.full(len(roots), rows), np.full(len(roots), cols)
    bottoms, rights = np.zeros(len(roots), r.dtype), np.zeros(len(roots), c.dtype)
    np.minimum.at(tops, which, r)
    np.maximum.at(bottoms, which, r + 1)
    np.minimum.at(lefts, which, c)
    np.maximum.at(rights, which, c + 1)
    for root, top, bottom, left, right in zip(roots, tops, bottoms, lefts, rights):
        if bottom - top < FRAME_SPAN * rows and right - left < FRAME_SPAN * cols:
            continue
        mark = labels == root
        box = mark[top:bottom, left:right]
        lines, sides = side_lines(box, (rows, cols))
        if not sides:
            continue
        thin = FRAME_THICK * min(rows, cols, max(bottom - top, right - left))  # and 1/7 of its length at most
        flat, narrow = bottom - top <= thin, right - left <= thin
        if len(sides) >= 2 and not (flat or narrow) and min(bottom - top, right - left) >= FRAME_SPAN * min(rows, cols):
            found[top:bottom, left:right] |= lines
            borders.append(mark)
        elif (flat or narrow) and lines.sum() >= FRAME_SHARE * box.sum():  # one line alone: which edge it is near
            gaps = {0: top / rows, 2: (rows - bottom) / rows} if flat else {3: left / cols, 1: (cols - right) / cols}
            side = min(gaps, key=gaps.get)
            if gaps[side] <= FRAME_EDGE:
                lone.append((mark, (top, bottom, left, right), side))
    borders += _lone_rules(lone, cells & ~found, found)
    if not found.any():
        return np.zeros((h, w), bool)
    if _nothing_inside(cells & ~found, (rows, cols)):
        if any(_printed(mark, (rows, cols)) for mark in borders):
            raise ValueError("no digit found: only a frame or a border, nothing inside it")
        return np.zeros((h, w), bool)  # a 1 cropped tight, a shape drawn: the ink is the drawing
    return ink & np.repeat(np.repeat(found, cell, axis=0), cell, axis=1)[:h, :w]


def drawn_round(ink, labels=None, framed=False):
    """The ink of marks drawn round the digit (around.marks_round: a ring or a box round it, a line under it, a
    frame's side askew cut off by the picture's edge): boolean [h, w]. ink, labels: as frame_lines's; framed:
    frame_lines left out a frame (its side the edge cut apart is enough)."""
    h, w = ink.shape
    cells, cell = _ink_cells(ink)
    found = marks_round(cells, label_marks(cells) if labels is None else labels, framed, label_marks)
    if not found.any():
        return np.zeros((h, w), bool)
    return ink & np.repeat(np.repeat(found, cell, axis=0), cell, axis=1)[:h, :w]


def _ink_cells(ink):
    """(boolean [rows, cols]: the cells of a grid of at most MARK_GRID cells a side that hold ink, the cell's side)."""
    h, w = ink.shape
    cell = -(-max(h, w) // MARK_GRID)
    rows, cols = -(-h // cell), -(-w // cell)
    padded = np.zeros((rows * cell, cols * cell), bool)
    padded[:h, :w] = ink
    return padded.reshape(rows, cell, cols, cell).any(axis=(1, 3)), cell


def side_lines(box, grid):
    """Which sides of a mark's box are straight lines: (boolean like box: their ink, [sides]: 0 top, 1 right, 2
    bottom, 3 left).

    box: boolean [rows, cols], the mark within its box; grid: (rows, cols)
    of the picture's cells. A side is a line when it is FRAME_SPAN of the
    picture long and its ink, within FRAME_THICK of the picture's shorter
    side from that edge inwards, reaches FRAME_COVER of the box's length:
    askew, within FRAME_ASKEW of the mark's width (a frame 3 degrees askew;
    a round 0's side is no line), or in full rows of which the first lies
    as near the edge (a border, a double line; a bold 3's bars, deeper in
    its box, are not its sides). A box as large as a frame with fewer than
    two such sides: its sides at a slope (ruling.askew_sides; their number
    stands for the list of sides then).
    """
    lines = np.zeros_like(box)
    sides = []
    for turn in range(4):  # top, right, bottom, left of the box, each turned to the top (np.rot90 turns left)
        view = np.rot90(box, turn)
        if view.shape[1] < FRAME_SPAN * (grid[0] if turn % 2 else grid[1]):
            continue
        near = max(2, FRAME_ASKEW * view.shape[0])
        band = view[:max(1, int(FRAME_THICK * min(grid)))]
        reached = np.logical_or.accumulate(band, axis=0).mean(axis=1)
        full = np.nonzero(band.mean(axis=1) >= FRAME_COVER)[0]  # rows full of it
        full = full if full.size and full[0] < near else full[:0]
        askew = int(np.argmax(reached >= FRAME_COVER)) if reached[-1] >= FRAME_COVER else len(band)
        if askew >= near and not full.size:
            continue
        thick = max(askew if askew < near else 0, full.max() if full.size else 0) + 2  # + its soft edge
        np.rot90(lines, turn)[:thick] |= view[:thick]
        sides.append(turn)
    if len(sides) < 2 and min(box.shape) >= FRAME_SPAN * min(grid):  # a frame turned further, up to 10 degrees
        askew, count = askew_sides(box)
        if count >= 2:
            return askew, list(range(count))
    return lines, sides


def _lone_rules(lone, others, found):
    """The lone lines (lone: [(mark, (top, bottom, left, right), side)]) with all other ink (others: boolean
    cells) on their inner side, added to `found` (boolean cells, in place); returns the rules across (top or
    bottom: no digit is a dash), which leave nothing inside as a frame does."""
    for mark, _, _ in lone:
        others = others & ~mark
    across = []
    for mark, (top, bottom, left, right), side in lone:
        r, c = np.nonzero(others)
        if r.size and not {0: r.min() >= bottom, 2: r.max() < top, 3: c.min() >= right, 1: c.max() < left}[side]:
            continue
        if r.size and side in (1, 3) and _a_one_beside((top, bottom), (r.min(), r.max() + 1), others.shape[0]):
            continue
        found |= mark
        if side in (0, 2):
            across.append(mark)
    return across


def _a_one_beside(line, rest, rows):
    """True when a line down (line: its (top, bottom) cells) is a 1 written beside the other ink (rest: its (top,
    bottom) cells), as in "10" or "17", not a rule or a frame's side: both its ends lie within ONE_ALIGN of that
    ink's height of the ink's ends, and one of them at least ONE_CLEAR of the picture (rows: cells) from its edge
    (a printed rule or a frame's side runs from edge to edge)."""
    height = rest[1] - rest[0]
    aligned = abs(line[0] - rest[0]) <= ONE_ALIGN * height and abs(line[1] - rest[1]) <= ONE_ALIGN * height
    return aligned and max(line[0], rows - line[1]) >= ONE_CLEAR * rows


def _nothing_inside(rest, grid):
    """True when no mark of `rest` (boolean cells: the ink off the frames) is FRAMED of the picture's side."""
    if not rest.any():
        return True
    boxes, _, _ = ink_marks(rest)
    return np.maximum(boxes[:, 1] - boxes[:, 0], boxes[:, 3] - boxes[:, 2]).max() < FRAMED * min(grid)


def _printed(mark, grid):
    """True when a frame's mark (boolean cells) is a border or a printed line, not a shape drawn with a pen: it
    reaches within FRAME_AT_EDGE of the picture's edge, or its stroke is at most FRAME_PRINTED of the shorter side."""
    r, c = np.nonzero(mark)
    gap = min(r.min() / grid[0], (grid[0] - 1 - r.max()) / grid[0], c.min() / grid[1], (grid[1] - 1 - c.max()) / grid[1])
    return gap <= FRAME_AT_EDGE or stroke_width(mark) <= FRAME_PRINTED * min(grid)


class SeveralDigits(ValueError):
    """A picture with several digits: the message says how many and how they lie."""


def mask_box(mask):
    """The box of a boolean mask's True pixels (some True): (top, bottom, left, right), bottom and right past the
    last row and column (ints, as slices take them)."""
    rows, cols = np.nonzero(mask.any(axis=1))[0], np.nonzero(mask.any(axis=0))[0]
    return int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1


def label_marks(mask):
    """The 8-connected groups of a boolean mask: int64 [h, w], -1 off the mask.

    Each group's pixels hold the flat index of one of them (its first run's
    first pixel). Union-find over runs, not pixels: each row's runs of mask
    pixels (a stroke crossing a row is one run) are joined to the runs of
    the next row that they touch, diagonally too, all pairs at once; each
    round hooks every group's root onto the smallest root it touches, then
    points every run at its root. A digit's picture has a few hundred runs
    where it has tens of thousands of pixels.
    """
    h, w = mask.shape
    edges = np.diff(np.pad(mask, ((0, 0), (1, 1))).astype(np.int8), axis=1)
    row, start = true_cells(edges == 1)  # row-major: runs in order of rows, then columns
    end = true_cells(edges == -1)[1]  # exclusive
    labels = np.full(h * w, -1, np.int64)
    if not row.size:
        return labels.reshape(h, w)
    span = w + 2  # a run's place as one sorted key, row * span + column: searches find the runs it touches below
    lo = np.searchsorted(row * span + end, (row + 1) * span + start, side="left")  # the first ending at or after it starts
    hi = np.searchsorted(row * span + start, (row + 1) * span + end, side="right")  # past the last starting at its end
    count = np.maximum(hi - lo, 0)
    a = np.repeat(np.arange(row.size), count)
    b = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count) + np.repeat(lo, count)
    root = np.arange(row.size)
    while a.size:
        ra, rb = root[a], root[b]
        apart = ra != rb
        if not apart.any():
            break
        a, b = a[apart], b[apart]
        np.minimum.at(root, np.maximum(ra[apart], rb[apart]), np.minimum(ra[apart], rb[apart]))
        while not np.array_equal(root[root], root):
            root = root[root]
    first = row * w + start  # each run's first pixel, which names its group when it is the root
    labels[mask.ravel()] = np.repeat(first[root], end - start)
    return labels.reshape(h, w)


def ink_marks(ink, labels=None):
    """The ink's separate marks, dust left out: (boxes float64 [n, 4], mass float64 [n], kept bool [h, w]).

    ink: boolean [h, w], at least one True. Marks are the 8-connected groups
    of cells of a grid of at most MARK_GRID cells a side that hold ink;
    boxes are their top, bottom, left, right in pixels (end exclusive),
    mass their pixels of ink. Marks lighter than MIN_MARK_MASS of the
    heaviest are dust (noise, specks): left out, and off `kept`, the ink of the others.
    labels: label_marks of the grid's cells that hold ink, when already made (find_ink's, when no frame was
    taken out of the ink: the same cells); else they are labelled here.
    """
    h, w = ink.shape
    cell = -(-max(h, w) // MARK_GRID)
    rows, cols = -(-h // cell), -(-w // cell)
    padded = np.zeros((rows * cell, cols * cell), bool)
    padded[:h, :w] = ink
    counts = padded.reshape(rows, cell, cols, cell).sum(axis=(1, 3))
    labels = label_marks(counts > 0) if labels is None else labels
    _, mark = unique_labels(labels[counts > 0], labels.size)
    r, c = true_cells(counts > 0)
    order = np.argsort(mark, kind="stable")  # each mark's cells together (every mark holds some), rows in order
    starts = np.searchsorted(mark[order], np.arange(mark.max() + 1))
    ends = np.append(starts[1:], mark.size) - 1
    r_order, c_order = r[order], c[order]
    boxes = np.stack([r_order[starts], r_order[ends] + 1, np.minimum.reduceat(c_order, starts),
                      np.maximum.reduceat(c_order, starts) + 1], axis=1).astype(np.float64)
    mass = np.bincount(mark, weights=counts[counts > 0])
    keep = mass >= MIN_MARK_MASS * mass.max()
    cells = np.zeros((rows, cols), bool)
    cells[r, c] = keep[mark]
    kept = ink & np.repeat(np.repeat(cells, cell, axis=0), cell, axis=1)[:h, :w]
    return boxes[keep] * cell, mass[keep], kept


def _groups(low, high, gap):
    """Indices of intervals [low, high) that overlap or lie less than `gap` apart, group by group, in order."""
    groups, end = [], -np.inf
    for i in np.argsort(low, kind="stable"):
        if low[i] - end < gap:
            groups[-1].append(i)
        else:
            groups.append([i])
        end = max(end, high[i]) if len(groups[-1]) > 1 else high[i]
    return [np.array(g) for g in groups]


def digit_layout(boxes):
    """How many digits the marks' boxes (float [n, 4], as ink_marks gives) show: (digits, lines, sure).

    Lines of writing are the marks whose rows lie less than LINE_GAP of the
    ink's height apart; a line holds digits when it is TALL of the tallest.
    In it, digits are the marks whose columns lie less than DIGIT_GAP of the
    line's height apart, as tall as TALL of the line. The strokes of one
    digit overlap in columns or lie closer than that, even when they do not
    touch (a 4 in two strokes, a 7's crossbar, a broken pencil stroke).
    sure: False when a part is wider than WIDE of its line's height, which
    one digit is not: digits written closer than DIGIT_GAP, counted as one,
    so that `digits` is only the least there are.
    """
    digits, rows, sure = 0, 0, True
    for height, tall_parts in _digit_lines(boxes):
        rows += 1
        spans = []  # (left, right, top, bottom, apart) of each part as tall as a digit, left to right
        for marks in tall_parts:
            spans.extend(_one_apart(boxes[marks], height))
        parts = _join_strokes(spans, height)
        digits += len(parts)
        sure = sure and all(r - l <= WIDE * height for l, r in parts)
    return int(digits), rows, sure


def _digit_lines(boxes):
    """The lines of the marks (boxes float [n, 4], as ink_marks gives) that hold digits, as digit_layout says: [(the
    line's height in pixels, [int array of the marks of each part of it as tall as a digit, left to right])]."""
    top, bottom, left, right = boxes.T
    lines = _groups(top, bottom, LINE_GAP * (bottom.max() - top.min()))
    heights = np.array([bottom[line].max() - top[line].min() for line in lines])
    found = []
    for line, height in zip(lines, heights):
        if height >= TALL * heights.max():
            parts = [line[digit] for digit in _groups(left[line], right[line], DIGIT_GAP * height)]
            tall = [marks for marks in parts if bottom[marks].max() - top[marks].min() >= TALL * height]
            found.append((height, tall))
    return found


def _notes_apart(boxes, shape):
    """The boxes of the marks (boxes float [n, 4], in a picture of `shape`) that no digit-tall part holds and that
    lie NOTE_APART of the digit's height clear of its box, beside it rather than under or over it (NOTE_UNDER): a
    date or a page number written small in a corner, a short note beside the digit. A stroke of the digit drawn
    apart (a 2's base, a 5's bar) lies closer; a digit's part the picture's edge cut off (a 3's lower bow) lies
    under it. Boolean `shape`, or None when there are none."""
    counted = np.zeros(len(boxes), bool)
    for _, parts in _digit_lines(boxes):
        for marks in parts:
            counted[marks] = True
    if counted.all() or not counted.any():
        return None
    top, bottom, left, right = boxes.T
    digit = top[counted].min(), bottom[counted].max(), left[counted].min(), right[counted].max()
    gap = np.maximum(np.maximum(digit[0] - bottom, top - digit[1]), np.maximum(digit[2] - right, left - digit[3]))
    under = np.minimum(right, digit[3]) - np.maximum(left, digit[2]) > NOTE_UNDER * (right - left)
    apart = ~counted & ~under & (gap >= NOTE_APART * (digit[1] - digit[0]))
    if not apart.any():
        return None
    notes = np.zeros(shape, bool)
    for t, b, l, r in boxes[apart].astype(int):
        notes[t:b, l:r] = True
    return notes


def _join_strokes(spans, height):
    """Parts of a line (spans: [(left, right, top, bottom, apart)] in order) joined where they make one digit written
    in several strokes: [(left, right)].

    Two neighbouring parts are one digit when, together, they are no wider
    than JOINED_WIDTH of the line's height and lie less than JOINED_GAP of
    it apart (a 9 whose stem stands apart from its loop, a 4 drawn open),
    unless both are thin strokes (narrower than THIN each: "11" written close),
    one is a tall 1 beside a digit (_a_one_and_a_digit: "10", "13"), or the
    second was split from the first (apart: _one_apart).
    """
    joined = []
    for span in spans:
        if joined:
            (l0, r0, t0, b0, _), (l1, r1, t1, b1, apart) = joined[-1], span
            thin = r0 - l0 < THIN * height and r1 - l1 < THIN * height
            if (r1 - l0 <= JOINED_WIDTH * height and l1 - r0 < JOINED_GAP * height and not thin and not apart
                    and not _a_one_and_a_digit(joined[-1], span, height, span=True)):
                joined[-1] = (l0, max(r0, r1), min(t0, t1), max(b0, b1), False)
                continue
        joined.append(span)
    return [span[:2] for span in joined]


def _a_one_and_a_digit(a, b, height, span=False):
    """True when of two parts side by side (a, b: (left, right, top, bottom), each TALL of the line's height at
    least) one is a 1 and the other a digit beside it, as in "10" or "31": the 1 thinner than THIN of the line's
    height, the other not, and the other's ink reaching down to within ONE_ALIGN of the 1's height of the 1's foot
    (a 9's loop beside its stem, a 4's open left part, end near half the stem's height); and the 1 the taller,
    rising ONE_SPAN of the line's height above the other and reaching its foot within as much, or (unless span) the
    shorter, both its ends ONE_SPAN inside the other's. A 9 whose own tail reaches the foot of a stroke beside it
    as tall (tests/handmade.py's 9-stem-apart) is one digit, and so, with span (two parts apart, which
    _join_strokes joins), is one with a shorter stroke beside it (the sample's training digit 1875)."""
    for one, other in ((a, b), (b, a)):
        if one[1] - one[0] < THIN * height <= other[1] - other[0]:
            taller = one[2] <= other[2] - ONE_SPAN * height and one[3] >= other[3] - ONE_SPAN * height
            shorter = one[2] >= other[2] + ONE_SPAN * height and one[3] <= other[3] - ONE_SPAN * height
            return bool(other[3] >= one[3] - ONE_ALIGN * (one[3] - one[2]) and (taller or (shorter and not span)))
    return False


def _one_apart(boxes, height):
    """The part of a line that marks closer than DIGIT_GAP make (boxes float [n, 4], as ink_marks gives), as
    [(left, right, top, bottom, apart)]: one part, or two when one mark is a 1 with all the others beside it, not
    over or under it, and a digit with it (_a_one_and_a_digit): a 1 written close to a 0 or a 3, its ink a few
    pixels off theirs. The second of two has apart True: _join_strokes does not join them again."""
    top, bottom, left, right = boxes.T
    for k in range(len(boxes)):
        rest = np.arange(len(boxes)) != k
        if not rest.any() or bottom[k] - top[k] < TALL * height:
            continue
        one = (left[k], right[k], top[k], bottom[k], False)
        other = (left[rest].min(), right[rest].max(), top[rest].min(), bottom[rest].max(), False)
        beside = other[0] >= one[1] - DIGIT_GAP * height or other[1] <= one[0] + DIGIT_GAP * height
        if beside and other[3] - other[2] >= TALL * height and _a_one_and_a_digit(one, other, height):
            first, second = sorted([one, other])
            return [first, second[:4] + (True,)]
    return [(left.min(), right.max(), top.min(), bottom.max(), False)]


def _dotted(boxes, size):
    """True when DOTTED of the marks (boxes float [n, 4], sizes [n]) have a neighbour within 1.5 of their size."""
    if len(size) < 2:
        return False
    top, bottom, left, right = boxes.T
    gap = np.maximum(np.maximum(top[:, None] - bottom, top - bottom[:, None]),
                     np.maximum(left[:, None] - right, left - right[:, None]))
    np.fill_diagonal(gap, np.inf)
    return np.mean((gap < 1.5 * size[:, None]).any(axis=1)) >= DOTTED


def _small_digit(boxes, kept):
    """True when the marks (boxes float [n, 4] in pixels, as ink_marks gives; kept: their ink, boolean [h, w]) are
    one small digit, not specks: a digit a few pixels tall in a large picture (7-20 pixels in 300-800).

    digit_layout finds one digit on one line in them, their box is SMALL_DIGIT pixels tall or wide at least and
    smaller than twice MIN_MARK of the picture (scattered specks lie further apart, or digit_layout finds several
    digits or lines in them), and it is no round blot: a speck of dirt is about as tall as wide (within
    SPECK_ROUND) and solid in its middle (_blot_cover: SPECK_COVER); a digit's strokes leave paper there, round
    its holes and notches, or are a 1's line, long and thin.
    """
    digits, lines, _ = digit_layout(boxes)
    if digits != 1 or lines != 1:
        return False
    top, bottom = int(boxes[:, 0].min()), int(np.ceil(boxes[:, 1].max()))
    left, right = int(boxes[:, 2].min()), int(np.ceil(boxes[:, 3].max()))
    tall, wide = bottom - top, right - left
    if not SMALL_DIGIT <= max(tall, wide) < 2 * MIN_MARK * min(kept.shape):  # scattered specks lie further apart
        return False
    box = kept[top:bottom, left:right]
    return max(tall, wide) > SPECK_ROUND * min(tall, wide) or _blot_cover(box) < SPECK_COVER


def _blot_cover(mask):
    """The share (float) of an ellipse in the middle of a boolean mask's box [h, w], BLOT_CORE of the box's size
    (the pixels whose middles lie inside it), that the mask's ink covers: 1 for a disc or a square however few
    pixels it is drawn with (the ellipse inscribed in the box itself misses a small disc's corners), less for a
    digit's strokes round holes and notches."""
    h, w = mask.shape
    y = (np.arange(h) + 0.5) / h - 0.5
    x = (np.arange(w) + 0.5) / w - 0.5
    inside = (2 * y[:, None]) ** 2 + (2 * x[None, :]) ** 2 <= BLOT_CORE ** 2
    return np.count_nonzero(mask & inside) / max(np.count_nonzero(inside), 1)


def _written_close(ink):
    """True when one line's ink (boolean [h, w], some True) is two digits written close: a column inside it holds
    no ink (two marks closer than DIGIT_GAP, which digit_layout counts as one part) and the ink on each side of it
    spans TALL of its height. One digit wider than WIDE in strokes apart has a short part beyond such a column (a
    5's or a 7's bar drawn apart). Digits that touch are not split: a column where one short run of ink joins
    two digit-tall parts is as often a 4's bar, an open 0's bottom or a 6's base under its loop."""
    top, bottom, left, right = mask_box(ink)
    box = ink[top:bottom, left:right]
    height, width = box.shape
    if width < 3:
        return False
    count = box.sum(axis=0)
    top = np.where(count > 0, box.argmax(axis=0), height)
    bottom = np.where(count > 0, height - box[::-1].argmax(axis=0), 0)
    left = np.maximum.accumulate(bottom) - np.minimum.accumulate(top)  # the ink's height up to each column
    right = (np.maximum.accumulate(bottom[::-1]) - np.minimum.accumulate(top[::-1]))[::-1]  # from each column on
    gap = count[1:-1] == 0
    return bool(np.any(gap & (left[:-2] >= TALL * height) & (right[2:] >= TALL * height)))


def one_digit(ink, labels=None):
    """The ink of one digit: (boolean [h, w], the ink (boolean [h, w], some True) without its dust (ink_marks); its
    notes, boolean [h, w] or None).

    Raises ValueError ("no digit found: only specks ...") when marks smaller
    than MIN_MARK of the picture's shorter side hold most of the ink and
    lie scattered rather than dotted along a stroke, and SeveralDigits when
    the marks make more than one digit (digit_layout), or one part wider
    than one digit is two marks a digit tall with a gap between them
    (_written_close). notes: of one digit, the marks that no digit-tall part holds (a date in a corner, a note
    beside it: _notes_apart; None when there are none), for the caller to leave out once it has judged the ink
    whole. labels: as ink_marks.
    """
    boxes, mass, kept = ink_marks(ink, labels)
    size = np.maximum(boxes[:, 1] - boxes[:, 0], boxes[:, 3] - boxes[:, 2])
    large = size >= MIN_MARK * min(ink.shape)
    if mass[large].sum() < mass.sum() / 2 and not _dotted(boxes, size) and not _small_digit(boxes, kept):
        raise ValueError("no digit found: only specks, no mark large enough to be a digit")
    digits, lines, sure = digit_layout(boxes)
    if digits == 1 and lines == 1 and not sure and _written_close(kept):
        digits = 2  # sure stays False: "side by side", the count only the least there are
    if digits > 1:
        where = ("side by side" if lines == 1 else f"on {lines} lines") if not sure else (
            f"{digits} side by side" if lines == 1 else f"{digits} one above the other" if digits == lines
            else f"{digits} on {lines} lines")
        raise SeveralDigits(f"several digits found ({where}); the app reads one digit per picture: crop to one digit")
    return kept, _notes_apart(boxes, kept.shape) if digits == 1 else None



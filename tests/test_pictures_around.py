"""Marks drawn round a digit (issue 53 item 10): a ring or a box round it, a line under it, a frame askew whose
corners the picture's edge cut off (mnistkit/around.py). tests/test_pictures_framed.py reads each kind of
tests/framed.py; here, what must stay: a digit's own strokes that look like such a mark."""
import numpy as np
import pytest
from PIL import Image, ImageDraw

import framed
import mnist_app
from mnistkit import segmentation


def canvas(draw_on, size=(280, 280)):
    """A white gray PIL picture with black strokes drawn by draw_on(ImageDraw)."""
    img = Image.new("L", size, 255)
    draw_on(ImageDraw.Draw(img))
    return img


def drawn_three(d):
    """A 3 of two arcs, drawn on an ImageDraw of a 280x280 canvas."""
    d.arc([100, 70, 180, 140], 200, 90, fill=0, width=12)
    d.arc([95, 135, 185, 215], 270, 160, fill=0, width=12)


def drawn_one(d):
    """A 1, a slanted line, drawn on an ImageDraw of a 280x280 canvas."""
    d.line([(140, 70), (134, 210)], fill=0, width=12)


def left_out(digit, mark):
    """Assert that find_ink leaves `mark` (drawn beside or round `digit`, touching it) out: of the ink found, at
    most 5% of the digit's ink lies off the digit, and at least 80% of the digit's ink is found."""
    ink = segmentation.find_ink(canvas(lambda d: (digit(d), mark(d))))
    alone = np.asarray(canvas(digit)) < 128
    assert np.count_nonzero(ink & ~alone) <= 0.05 * np.count_nonzero(alone), mark
    assert np.count_nonzero(ink & alone) >= 0.8 * np.count_nonzero(alone), mark


def kept(img, strokes):
    """The share of the strokes' pixels (those a stroke alone on white would darken) that find_ink keeps as ink."""
    alone = np.asarray(canvas(strokes, img.size)) < 128
    return np.count_nonzero(segmentation.find_ink(img) & alone) / np.count_nonzero(alone)


@pytest.mark.quick
def test_a_zero_with_a_small_mark_inside_keeps_its_loop():
    """A 0 round a short stroke (0.2 of it, heavier than dust) is the digit, not a ring round the stroke: it
    spans less than RING_FILLED of the 0. So is an 8 round a speck in its loop."""
    zero = lambda d: d.ellipse([70, 30, 210, 250], outline=0, width=14)
    dash = lambda d: d.line([(130, 130), (150, 150)], fill=0, width=12)
    assert kept(canvas(lambda d: (zero(d), dash(d))), zero) >= 0.95
    eight = lambda d: (d.ellipse([90, 20, 190, 130], outline=0, width=12), d.ellipse([80, 120, 200, 260], outline=0, width=12))
    speck = lambda d: d.ellipse([135, 70, 147, 82], fill=0)
    assert kept(canvas(lambda d: (eight(d), speck(d))), eight) >= 0.95


@pytest.mark.quick
def test_a_four_drawn_open_keeps_its_stem_at_the_edge():
    """A 4 cropped tight whose stem stands apart from its other stroke: one line from edge to edge beside the
    digit, not the two sides a frame cut off by the edge leaves (around.SIDES). The stem slants by 5 degrees."""
    stem = lambda d: d.line([(200, 0), (218, 279)], fill=0, width=14)
    rest = lambda d: d.line([(110, 10), (40, 170), (185, 170)], fill=0, width=14)
    assert kept(canvas(lambda d: (stem(d), rest(d))), stem) >= 0.95


@pytest.mark.quick
def test_a_seven_keeps_its_bar_and_a_two_its_base_drawn_apart():
    """A separate stroke above a digit (a 7's bar drawn apart) is no underline; a stroke under it that is short
    beside the digit (a 2's base of 0.4 of its width) is none either."""
    stem = lambda d: d.line([(200, 60), (120, 260)], fill=0, width=14)
    bar = lambda d: d.line([(60, 40), (210, 44)], fill=0, width=14)
    assert kept(canvas(lambda d: (stem(d), bar(d))), bar) >= 0.95
    curve = lambda d: d.arc([60, 20, 220, 200], 200, 60, fill=0, width=14) or d.line([(210, 140), (70, 230)], fill=0, width=14)
    base = lambda d: d.line([(70, 262), (130, 262)], fill=0, width=14)
    assert kept(canvas(lambda d: (curve(d), base(d))), base) >= 0.95


@pytest.mark.quick
def test_a_ring_and_an_underline_are_left_out():
    """The marks of the kinds, drawn plainly: a circle round a 1, a box round it, a line under it, and two sides
    of a frame askew cut off at both ends by the picture's edge: the ink is the 1 alone."""
    one = lambda d: d.line([(140, 90), (135, 190)], fill=0, width=12)
    marks = [lambda d: d.ellipse([80, 60, 200, 220], outline=0, width=6),
             lambda d: d.rectangle([100, 70, 175, 210], outline=0, width=5),
             lambda d: d.line([(105, 215), (170, 212)], fill=0, width=6),
             lambda d: (d.line([(0, 20), (279, 45)], fill=0, width=3), d.line([(15, 0), (40, 279)], fill=0, width=3))]
    for mark in marks:
        img = canvas(lambda d: (one(d), mark(d)))
        ink = segmentation.find_ink(img)
        alone = np.asarray(canvas(one)) < 128
        assert np.count_nonzero(ink & ~alone) <= 0.05 * np.count_nonzero(alone), mark


@pytest.mark.quick
def test_a_frame_cut_apart_by_the_edge_leaves_no_second_digit():
    """A frame askew whose lines are as light as dust but one (a 1-pixel line at gray 0-80), the picture's edge
    cutting it into pieces: the one piece heavier than dust is a side with the others (they count though they
    are dust), not a second digit beside the 2 (picture 62 of bench/pictures.py --count 60 --first 300)."""
    kind = "frame askew, corners cut off"
    cov, label = framed.coverages(0)[2]  # the pen-drawn 2
    seed = sum(map(ord, kind))
    data = framed.KINDS[kind](cov, 62, np.random.default_rng([seed, 62]))
    assert mnist_app.prepared_pixels(data, name="framed 2").max() == 255


@pytest.mark.quick
def test_an_exercise_books_margin_beside_the_digit_is_left_out():
    """One line from edge to edge beside a digit, down or across, thin or as a pen's (an exercise book's margin):
    the ink is the digit alone, which keeps MARGIN_CLEAR of the picture from the line's ends. Before, one such
    line was kept (a lone side may be a digit's stroke) and the 3 beside it was read as a 4."""
    three = lambda d: (d.arc([100, 70, 180, 140], 200, 90, fill=0, width=10),
                       d.arc([95, 135, 185, 215], 270, 160, fill=0, width=10))
    margins = [lambda d: d.line([(40, 0), (43, 279)], fill=0, width=2),
               lambda d: d.line([(250, -3), (247, 283)], fill=90, width=4),
               lambda d: d.line([(0, 30), (279, 33)], fill=0, width=3)]
    for margin in margins:
        img = canvas(lambda d: (three(d), margin(d)))
        ink = segmentation.find_ink(img)
        alone = np.asarray(canvas(three)) < 128
        assert np.count_nonzero(ink & ~alone) <= 0.05 * np.count_nonzero(alone), margin
        assert np.count_nonzero(ink & alone) >= 0.95 * np.count_nonzero(alone), margin


@pytest.mark.quick
def test_a_ring_that_touches_the_digit_is_left_out():
    """A circle round a 3 drawn a little small, touching its ends, and an ellipse round a 1 running through its
    ends (one mark with the digit): the ink is the digit, less what the ring runs through. Before, the ring
    was kept with the digit, and the input was the ring with the digit in it (read as 8 or 0)."""
    left_out(drawn_three, lambda d: d.ellipse([78, 52, 200, 228], outline=0, width=5))
    left_out(drawn_one, lambda d: d.ellipse([80, 72, 196, 208], outline=40, width=4))


@pytest.mark.quick
def test_a_digits_own_loops_are_no_ring_round_it():
    """What a ring touching the digit must not take: a bold 0 whose ends overlap in a blob (the blob is no digit
    in a ring), an 8, a 6 and a 9 whose loop is most of the digit (their stem or other loop lies outside the
    loop): find_ink keeps all of each."""
    digits = [lambda d: (d.ellipse([80, 40, 200, 240], outline=0, width=16), d.ellipse([150, 30, 200, 90], fill=0)),
              lambda d: (d.ellipse([90, 30, 190, 130], outline=0, width=14), d.ellipse([80, 122, 200, 250], outline=0, width=14)),
              lambda d: (d.ellipse([70, 90, 210, 250], outline=0, width=14), d.line([(80, 150), (170, 30)], fill=0, width=14)),
              lambda d: (d.ellipse([70, 30, 210, 190], outline=0, width=14), d.line([(203, 120), (170, 260)], fill=0, width=14))]
    for digit in digits:
        assert kept(canvas(digit), digit) >= 0.95, digit


@pytest.mark.quick
def test_a_margin_or_a_box_that_touches_the_digit_is_left_out():
    """An exercise book's margin that runs along the digit's side, touching it, and a box drawn tight round a
    digit (touching it on one or two sides): one mark with the digit. The ink is the digit, less what lies under
    the line. Before, the line or the box was kept with the digit (a 3 with a line beside it read as a 4 or as
    a 1 with a line; the box with the digit in it as 0 or 8)."""
    left_out(drawn_three, lambda d: d.line([(0, 72), (279, 75)], fill=60, width=3))  # across, touching the 3's top
    left_out(drawn_three, lambda d: d.line([(178, -2), (181, 282)], fill=0, width=2))  # down, along its right side
    left_out(drawn_three, lambda d: d.rectangle([92, 66, 196, 222], outline=0, width=4))  # a box touching two sides
    left_out(drawn_one, lambda d: d.rectangle([110, 66, 170, 214], outline=30, width=5))  # round a 1, top and bottom


@pytest.mark.quick
def test_a_digits_own_straight_strokes_are_no_margin_or_box():
    """What a touching margin or box must not take: a 7 cropped tight whose bar reaches both edges (the rest
    reaches near the bar's ends too), a 4 cropped tight whose stem runs from edge to edge, a square 8 (a box and
    its middle bar) and a square 0 drawn with a pen: find_ink keeps all of each."""
    digits = [lambda d: (d.line([(0, 20), (279, 20)], fill=0, width=12), d.line([(270, 20), (120, 279)], fill=0, width=12)),
              lambda d: (d.line([(200, 0), (200, 279)], fill=0, width=12), d.line([(20, 10), (10, 180)], fill=0, width=12),
                         d.line([(10, 180), (270, 180)], fill=0, width=12)),
              lambda d: (d.rectangle([80, 40, 200, 240], outline=0, width=12), d.line([(80, 140), (200, 140)], fill=0, width=12)),
              lambda d: d.rectangle([80, 40, 200, 240], outline=0, width=12)]
    for digit in digits:
        assert kept(canvas(digit), digit) >= 0.95, digit

"""Empty pages whose only ink is a straight line or an outline round an empty middle (issue 53 item 10: that a thing
is not a digit): a frame's side askew, cut off or alone, a photo of an empty page with the table round it, a
shadow's straight edge, or the lit paper beside it on a page turned over. Each is "no digit found", while a 1
standing in the middle of its picture and a round 0 cropped tight to its ink (a ring round an empty middle too)
stay digits.

The pages are tests/framed.py's kinds with no digit on them (test_pictures_glance.blank), the ones read as a digit
before segmentation._only_lines, _outline and _lit_wedge; then (pictures12) the shadow's edges, frames askew and a
photo's page edge those left (segmentation._divides_shade, FRAME_SIDE, OUTLINE_SPECKS).
"""
import numpy as np
import pytest
from PIL import Image, ImageDraw

import framed
import mnist_app
from test_pictures_glance import blank, ink_iou, refusal

ONLY_A_FRAME = "no digit found: only a frame or a border"


@pytest.mark.quick
@pytest.mark.parametrize("kind, seed", [("partial frame", 2), ("partial frame", 15),
                                        ("frame askew (3-10 degrees)", 0), ("frame askew (3-10 degrees)", 18),
                                        ("frame askew, corners cut off", 4), ("frame askew, corners cut off", 11)])
def test_a_frame_alone_askew_cut_off_or_partial_is_no_digit(kind, seed):
    """The side of a frame left once the rest is taken out (lying flat: no digit is a dash), a side alone along the
    picture's left or right edge (a 1 stands in the middle), or the sides a crop cut apart: only lines. Before, read
    as a digit."""
    assert ONLY_A_FRAME in (refusal(blank(kind, seed)) or ""), refusal(blank(kind, seed))


@pytest.mark.quick
@pytest.mark.parametrize("seed", [4, 7, 11, 17, 18])
def test_a_photo_of_an_empty_page_with_the_table_round_it_is_no_digit(seed):
    """The page's edge against the dark table, read as ink: an outline near every edge of the picture round an empty
    middle, ink in three of its box's corners at least (or one side of it alone). Before, read as a digit."""
    found = refusal(blank("photo with margins", seed))
    assert ONLY_A_FRAME in (found or ""), found


@pytest.mark.quick
@pytest.mark.parametrize("seed", [2, 12])
def test_an_empty_page_whose_shadow_edge_is_a_straight_line_is_no_digit(seed):
    """A shadow's edge across the page read as a thin straight line lying flat (dashed, or whole): no digit, and
    said to be shading (segmentation._shadow_edge: the paper along one side of the line far darker than along the
    other). Before, read as a digit; then refused as "only a frame or a border", the wrong reason."""
    found = refusal(blank("shadow edge", seed))
    assert "no digit found: only shading" in (found or ""), found


@pytest.mark.quick
@pytest.mark.parametrize("seed", [28, 33, 39, 53])
def test_an_empty_page_half_in_shadow_is_no_digit(seed):
    """A shadow over much of the page: the light-on-dark vote turns the page over, and the lit paper beside the
    shadow's straight edge is a wedge, one side across and one down of its box inked all along (a light digit's box
    0.8 at most): "only shading". Before, read as a digit (the wedge's four corners, each turned so)."""
    found = refusal(blank("shadow edge", seed))
    assert "no digit found: only shading" in (found or ""), found


def drawn(shape, size=(280, 280), width=4):
    """A dark `shape` ("1": a stroke down the middle, 0.7 of the height; "0": an ellipse's outline filling the
    picture, cropped tight to it) drawn `width` pixels wide on white: PNG bytes."""
    img = Image.new("L", size[::-1], 255)
    h, w = size
    if shape == "1":
        ImageDraw.Draw(img).line([(w // 2 + 8, int(0.15 * h)), (w // 2 - 8, int(0.85 * h))], fill=0, width=width)
    else:
        ImageDraw.Draw(img).ellipse((0, 0, w - 1, h - 1), outline=0, width=width)
    return framed.png(np.asarray(img))


@pytest.mark.quick
@pytest.mark.parametrize("shape, size, width", [("1", (280, 280), 4), ("1", (200, 300), 12), ("0", (280, 200), 4),
                                                ("0", (280, 280), 18)])
def test_a_one_in_the_middle_and_a_round_zero_cropped_tight_stay_digits(shape, size, width):
    """A 1 is a straight line too, but it stands up in the middle; a 0 cropped tight to its ink is a ring round an
    empty middle near every edge, but its box's corners are paper: both read (an input, no refusal)."""
    assert refusal(drawn(shape, size, width)) is None, refusal(drawn(shape, size, width))


@pytest.mark.quick
@pytest.mark.parametrize("kind, seed", [("shadow edge", 5), ("shadow edge", 38), ("shadow edge", 43),
                                        ("frame askew (3-10 degrees)", 32), ("frame askew (3-10 degrees)", 50),
                                        ("photo with margins", 28)])
def test_an_empty_page_with_a_long_line_along_or_across_its_border_is_no_digit(kind, seed):
    """The empty pages the last round still read as a digit: a shadow's soft edge from side to side (on a page turned
    over, bent or running into a corner), a frame askew's side left 0.11-0.13 of the width from the edge once the
    rest of the frame was taken out, a photo's page edge with the table's specks beyond its corners. A long thin
    structure touching or running along the border is no digit: "no digit found". Before, each read as a digit."""
    assert "no digit found" in (refusal(blank(kind, seed)) or ""), refusal(blank(kind, seed))


@pytest.mark.quick
def test_a_digit_reaching_the_edge_on_even_paper_or_beside_a_frame_is_read():
    """The rules that refuse those pages keep the digits: a 7 cropped tight (its bar along the top edge, its stroke
    down to the bottom: it cuts the page in two, the same paper on each side), and a 1 in a frame askew (the frame
    taken out, the 1 in the middle, far from the side): each given the input of the same digit on plain paper."""
    for digit, seed in ((7, 3), (1, 201)):
        cov = framed.coverage_of_pen(digit, seed=seed)
        rows, cols = np.nonzero(cov > 0.5)
        plain = mnist_app.prepared_pixels(framed.png(framed.to_uint8(framed.on_ground(cov, 250))), name="plain")
        tight = framed.png(framed.to_uint8(framed.on_ground(cov[rows.min():rows.max() + 1,
                                                                 cols.min():cols.max() + 1], 250)))
        askew = framed.KINDS["frame askew (3-10 degrees)"](cov, 1, np.random.default_rng(digit))
        for name, data in (("tight", tight), ("askew", askew)):
            assert refusal(data) is None, (digit, name, refusal(data))
            assert ink_iou(mnist_app.prepared_pixels(data, name=name), plain) >= 0.6, (digit, name)

"""Other students' pictures of kinds no earlier set made (issue 53 item 10): a screenshot of the paint window, its
title bar, menu and buttons round the canvas.

tests/others.py redraws the sample's MNIST test digits so. A screenshot must
give the app the input of its canvas alone; a picture that is no screenshot
is read whole, as before. bench/pictures.py --set others gives the rates on
more digits and on the other kinds (coloured ink, every file format, a
turned phone photo, notebook paper at an angle, ...).
"""
import io

import numpy as np
import pytest
from PIL import Image, ImageDraw

import framed
import others
import mnist_app
from mnistkit import segmentation


def ink_iou(a, b):
    a, b = a >= 128, b >= 128
    return np.count_nonzero(a & b) / max(np.count_nonzero(a | b), 1)


def screenshot_and_canvas(image, i, jpeg=False):
    """A brush digit's canvas in a paint window (others.window_round): (the screenshot's PNG or JPEG bytes, the
    canvas alone as a PNG, the canvas's (rows, cols) slices in the screenshot)."""
    rng = np.random.default_rng([7, i])
    canvas = others._brush(image, rng, side_range=(200, 400))
    picture, (top, left) = others.window_round(canvas, i, rng)
    data = framed.jpeg(picture, 85) if jpeg else framed.png(picture)
    return data, framed.png(canvas), (slice(top, top + canvas.shape[0]), slice(left, left + canvas.shape[1]))


@pytest.mark.quick
@pytest.mark.parametrize("jpeg", [False, True])
def test_a_screenshot_of_the_paint_window_reads_its_canvas_alone(jpeg):
    """8 of the sample's digits on a white canvas in a window with a dark title bar (Windows 10's blue, a dark
    theme's black) and a menu: the input is the canvas's own (ink IoU 0.9 at least each; 0.99-1.0 measured).
    Before, under the black title bar the bar and the menu's words were ink of the digit: IoU 0.06-0.19 for those
    four, as PNG and as JPEG."""
    images, _ = framed.sample_digits(8, 300)
    for k, image in enumerate(images):
        i = 2 * k  # even: a dark title bar (TITLE_BARS[0] or [2]) and a light work area
        data, alone, _ = screenshot_and_canvas(image, i, jpeg)
        iou = ink_iou(mnist_app.prepared_pixels(data, name="screenshot"),
                      mnist_app.prepared_pixels(alone, name="canvas"))
        assert iou >= 0.9, (i, round(iou, 2))


@pytest.mark.quick
@pytest.mark.parametrize("jpeg", [False, True])
def test_screen_canvas_finds_the_canvas_within_a_pixel(jpeg):
    """screen_canvas gives the canvas's box, as pasted, within a pixel (a JPEG's ringing along its edge), for light
    and dark title bars and work areas alike."""
    images, _ = framed.sample_digits(4, 300)
    for i, image in enumerate(images):
        data, _, (rows, cols) = screenshot_and_canvas(image, i, jpeg)
        found = segmentation.screen_canvas(np.asarray(Image.open(io.BytesIO(data)).convert("L")))
        assert found is not None, i
        got = (found[0].start, found[0].stop, found[1].start, found[1].stop)
        assert np.abs(np.subtract(got, (rows.start, rows.stop, cols.start, cols.stop))).max() <= 1, (i, got)


def _askew_box(gray):
    """A box turned 5 degrees drawn round the middle of a gray picture: uint8 [h, w]."""
    img = Image.fromarray(gray)
    h, w = gray.shape
    corners = np.array([(-0.4, -0.4), (0.4, -0.4), (0.4, 0.4), (-0.4, 0.4)]) * (w, h)
    turn = np.radians(5)
    points = [(w / 2 + x * np.cos(turn) - y * np.sin(turn), h / 2 + x * np.sin(turn) + y * np.cos(turn))
              for x, y in corners]
    ImageDraw.Draw(img).line(points + points[:1], fill=0, width=3)
    return np.asarray(img)


@pytest.mark.quick
def test_pictures_that_are_no_screenshot_are_read_whole():
    """No canvas is cut out of a brush digit on white (the canvas is the whole picture), a big 0 touching all four
    edges (its inside is no canvas: round sides), a box drawn askew round a digit (slanted sides), a phone's
    photo of paper (its paper is never one level) or a page with a margin line touching the digit (paper beyond
    the line: the first screen_canvas cut the page at the line, and the digit's part across it)."""
    images, labels = framed.sample_digits(20, 300)
    zero = images[list(labels).index(0)]
    plain = others._brush(images[0], np.random.default_rng(1))
    big_zero = framed.to_uint8(framed.on_ground(framed.coverage_of_mnist(zero)[50:232, 60:220], 255))
    photo = np.asarray(Image.open(io.BytesIO(others.picture("blue ballpoint on white", images[1], 1)))
                       .convert("L"))
    margins = [np.asarray(Image.open(io.BytesIO(data)).convert("L"))
               for data, _ in framed.pictures("a margin line touching it", framed.coverages(4, 300, pen=False))]
    named = [("plain", plain), ("big 0", big_zero), ("box askew", _askew_box(plain)), ("photo", photo)]
    for name, gray in named + [(f"margin line {i}", gray) for i, gray in enumerate(margins)]:
        assert segmentation.screen_canvas(gray) is None, name

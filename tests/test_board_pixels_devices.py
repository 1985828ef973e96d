"""The board's pixels in Chromium on other devices and pointers (issue 53 item 5, more cases of its kind).

test_board_pixels_browser.py holds page zoom of 90%, 125% and 150%, a CSS zoom, the dark scheme and forced colours
with the mouse. Here the same 4 (two strokes) is drawn where a person's device differs otherwise: a HiDPI laptop
and a phone (screen pixel ratio 2 and 3), page zoom of 67%, 80%, 175% and 200%, a CSS transform (scale) on the
board's parent and on the body, a finger (touch events) and a pen (pointerType pen) in a phone-sized landscape
page, a window made narrower between the two strokes (the board's box shrinks under the first stroke's ink), and a
board stretched wider than tall. Each gives the same 28x28 input as the mouse at 100% (ink IoU >= 0.9 of pixels
>= 128), the same answer, and ink where the pointer went (IoU >= 0.9 of the board's own 280x280 pixels).
The browser, the server and the drawing are test_board_pixels_browser.py's.
"""
import base64
import io

import numpy as np
import pytest
from PIL import Image

from test_board_browser import answer_timeout, board_points, browser, open_page, server  # noqa: F401 (fixtures)
from test_board_pixels_browser import FOUR, assert_same, clear, draw, page_zoom, plain  # noqa: F401

pytestmark = pytest.mark.long  # a browser and a server: about 35 s in all on 2 cores

LANDSCAPE_PHONE = {"viewport": {"width": 844, "height": 390}, "device_scale_factor": 3, "is_mobile": True,
                   "has_touch": True}


def draw_with(page, pointer, strokes=FOUR, between=None):
    """Draw the strokes through Chromium's input (DevTools Input domain) as `pointer` ("touch" or "pen"), calling
    between(page) after each stroke but the last; draw()'s result."""
    cdp = page.context.new_cdp_session(page)
    page.locator("#board").scroll_into_view_if_needed()
    for n, stroke in enumerate(strokes):
        points = board_points(page, stroke)
        path = [points[0]]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            path += [(x0 + (x1 - x0) * k / 6, y0 + (y1 - y0) * k / 6) for k in range(1, 7)]
        with page.expect_response("**/board/predict", timeout=answer_timeout()) as response:
            for i, (x, y) in enumerate(path):
                if pointer == "touch":
                    kind = "touchStart" if i == 0 else "touchMove"
                    cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": [{"x": x, "y": y}]})
                else:
                    kind = "mousePressed" if i == 0 else "mouseMoved"
                    cdp.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                                          "buttons": 1, "clickCount": 1, "pointerType": "pen",
                                                          "force": 0.5})
            if pointer == "touch":
                cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
            else:
                cdp.send("Input.dispatchMouseEvent", {"type": "mouseReleased", "x": path[-1][0], "y": path[-1][1],
                                                      "button": "left", "buttons": 0, "clickCount": 1,
                                                      "pointerType": "pen"})
        answer = response.value.json()
        if between is not None and n < len(strokes) - 1:
            between(page)
    assert "input" in answer, answer
    return read_board(page, answer)


def read_board(page, answer):
    """(the 28x28 input of the server's answer, uint8 [28, 28]; its digit; the board's 280x280 gray pixels)."""
    url = page.evaluate("document.getElementById('board').toDataURL('image/png')")
    board = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("L"))
    return np.array(answer["input"], np.uint8).reshape(28, 28), answer["digit"], board


def test_hidpi_screens_and_more_page_zooms_give_the_same_input(browser, server, plain):  # noqa: F811
    for ratio in (2, 3):
        page = open_page(browser, server, locale="en-US", viewport={"width": 1280, "height": 800},
                         device_scale_factor=ratio)
        assert_same(draw(page), plain, f"a screen of pixel ratio {ratio}")
        page.context.close()
    for zoom in (0.67, 0.8, 1.75, 2.0):
        page = open_page(browser, server, locale="en-US", **page_zoom(zoom))
        assert_same(draw(page), plain, f"page zoom {zoom:.0%}")
        page.context.close()


def test_a_css_transform_on_a_parent_gives_the_same_input(browser, server, plain):  # noqa: F811
    page = open_page(browser, server, locale="en-US", **page_zoom(1))
    for what, selector, transform in (("scale(1.5) on the board's parent", ".drawing", "scale(1.5)"),
                                      ("scale(0.7) on the body", "body", "scale(0.7)"),
                                      ("scale(1.3, 0.8) on the board's parent", ".drawing", "scale(1.3, 0.8)")):
        page.evaluate("([s, t]) => { const e = document.querySelector(s); e.style.transform = t; "
                      "e.style.transformOrigin = '0 0'; }", [selector, transform])
        assert_same(draw(page), plain, what)
        clear(page)
        page.evaluate("s => { document.querySelector(s).style.transform = ''; }", selector)
    page.context.close()


@pytest.mark.parametrize("pointer", ["touch", "pen"])
def test_a_finger_or_a_pen_on_a_landscape_phone_gives_the_same_input(browser, server, plain, pointer):  # noqa: F811
    page = open_page(browser, server, locale="en-US", **LANDSCAPE_PHONE)
    assert_same(draw_with(page, pointer), plain, f"a {pointer} on a phone held sideways")
    page.context.close()


def test_a_window_made_narrower_between_strokes_keeps_both_strokes_where_they_were_drawn(
        browser, server, plain):  # noqa: F811
    page = open_page(browser, server, locale="en-US", **page_zoom(1))

    def narrower(page):
        page.set_viewport_size({"width": 300, "height": 700})
        page.wait_for_function("document.getElementById('board').getBoundingClientRect().width < 300")

    assert_same(draw_with(page, "pen", between=narrower), plain, "a window made narrower between the strokes")
    page.context.close()


def test_a_board_stretched_wider_than_tall_gives_the_same_input(browser, server, plain):  # noqa: F811
    page = open_page(browser, server, locale="en-US", **page_zoom(1))
    page.evaluate("() => { const b = document.getElementById('board'); b.style.aspectRatio = 'auto'; "
                  "b.style.height = '180px'; }")
    assert_same(draw(page), plain, "a board 360 wide and 180 tall")
    page.context.close()


def test_the_dark_scheme_under_forced_colours_on_a_phone_gives_the_same_input(browser, server, plain):  # noqa: F811
    page = open_page(browser, server, locale="en-US", color_scheme="dark", forced_colors="active", **LANDSCAPE_PHONE)
    assert page.evaluate("matchMedia('(forced-colors: active)').matches")
    assert_same(draw_with(page, "touch"), plain, "a finger, the dark scheme, forced colours")
    page.context.close()

"""The board's pixels in Chromium (issue 53 item 5): page zoom, CSS zoom, dark and forced colours, read-back noise.

The same strokes (a 4 in two strokes) are drawn with the mouse on pages that differ only in how the browser shows
them: page zoom of 90%, 125% and 150% (the screen's pixel ratio and a viewport that many times narrower, as a
browser's zoom makes them), a CSS zoom on the body and on the board's parent (szimek/signature_pad #494: ink
offset from the pointer), the dark colour scheme and forced colours (darkreader #14385: canvases inverted). Each
gives the same 28x28 input as the page at 100% in light colours, within an IoU of 0.9 of the ink (pixels >= 128),
and the same answer; the board's own 280x280 pixels, read back, lie where the pointer went (IoU 0.9 with 100%).
A canvas whose read-back is randomised as Brave and Firefox 145 do (brave/brave-browser #9591: here 1% of the
pixels moved by up to 3 levels) gives an input within 1 level of the plain one, and the same answer.
The browser and the server (the .tflite export) are tests/test_board_browser.py's.
"""
import base64
import io

import numpy as np
import pytest
from PIL import Image

from test_board_browser import answer_timeout, board_points, browser, open_page, server  # noqa: F401 (fixtures)

FOUR = [[(0.58, 0.12), (0.24, 0.62), (0.78, 0.62)], [(0.62, 0.36), (0.62, 0.9)]]
WINDOW = {"width": 1280, "height": 800}  # device pixels of the browser's window
SAME_IOU = 0.9
# Brave's and Firefox 145's canvas read-back noise, as tests/test_same_pixels.py's read_back_noise makes it: 1% of
# the pixels moved by 1 to 3 levels (each colour channel alike), from a seeded generator: the same on each run.
NOISY_READ_BACK = """(() => {
  let seed = 20251;
  const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 4294967296;
  const original = HTMLCanvasElement.prototype.toBlob;
  window.noisyPixels = 0;
  HTMLCanvasElement.prototype.toBlob = function (callback, ...options) {
    const copy = document.createElement("canvas");
    copy.width = this.width;
    copy.height = this.height;
    const context = copy.getContext("2d");
    context.drawImage(this, 0, 0);
    const image = context.getImageData(0, 0, copy.width, copy.height);
    for (let i = 0; i < image.data.length; i += 4) {
      if (random() >= 0.01) continue;
      const step = [-3, -2, -1, 1, 2, 3][Math.floor(random() * 6)];
      for (let c = 0; c < 3; c++) image.data[i + c] = Math.min(255, Math.max(0, image.data[i + c] + step));
      window.noisyPixels++;
    }
    context.putImageData(image, 0, 0);
    return original.call(copy, callback, ...options);
  };
})();"""


def page_zoom(zoom):
    """A context as a browser's page zoom makes it: the screen's pixel ratio times `zoom`, the viewport (CSS pixels)
    that many times narrower."""
    return {"viewport": {"width": round(WINDOW["width"] / zoom), "height": round(WINDOW["height"] / zoom)},
            "device_scale_factor": zoom}


def draw(page, strokes=FOUR):
    """Draw the strokes with the mouse; (the 28x28 input the server read, uint8 [28, 28]; its digit; the board's
    280x280 gray pixels as the page holds them, uint8)."""
    page.locator("#board").scroll_into_view_if_needed()
    for stroke in strokes:
        points = board_points(page, stroke)
        with page.expect_response("**/board/predict", timeout=answer_timeout()) as response:
            page.mouse.move(*points[0])
            page.mouse.down()
            for point in points[1:]:
                page.mouse.move(*point, steps=6)
            page.mouse.up()
        answer = response.value.json()
    assert "input" in answer, answer
    url = page.evaluate("document.getElementById('board').toDataURL('image/png')")
    board = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("L"))
    return np.array(answer["input"], np.uint8).reshape(28, 28), answer["digit"], board


def clear(page):
    page.click("#clear")


def ink_iou(a, b, ink):
    """IoU of two pictures' ink: `ink(picture)` is a boolean mask."""
    a, b = ink(a), ink(b)
    return np.count_nonzero(a & b) / max(1, np.count_nonzero(a | b))


def assert_same(seen, plain, what):
    (pixels, digit, board), (plain_pixels, plain_digit, plain_board) = seen, plain
    bright, dark = (lambda p: p >= 128), (lambda p: p < 128)
    assert ink_iou(board, plain_board, dark) >= SAME_IOU, f"{what}: the ink is not where the pointer went"
    assert ink_iou(pixels, plain_pixels, bright) >= SAME_IOU, f"{what}: another 28x28 input"
    assert digit == plain_digit, f"{what}: read as {digit}, at 100% light as {plain_digit}"


@pytest.fixture(scope="module")
def plain(browser, server):  # noqa: F811
    """draw()'s result on the page at 100% in light colours."""
    page = open_page(browser, server, locale="en-US", **page_zoom(1))
    seen = draw(page)
    page.context.close()
    return seen


def test_page_zoom_gives_the_same_input_as_100_percent(browser, server, plain):  # noqa: F811
    for zoom in (0.9, 1.25, 1.5):
        page = open_page(browser, server, locale="en-US", **page_zoom(zoom))
        assert page.evaluate("window.devicePixelRatio") == pytest.approx(zoom, abs=1e-3)  # a float32
        assert_same(draw(page), plain, f"page zoom {zoom:.0%}")
        page.context.close()


def test_css_zoom_dark_and_forced_colours_give_the_same_input(browser, server, plain):  # noqa: F811
    page = open_page(browser, server, locale="en-US", **page_zoom(1))
    for what, element, zoom in (("CSS zoom 150% on the body", "body", "1.5"),
                                ("CSS zoom 125% on the board's parent", ".drawing", "1.25")):
        page.evaluate("([selector, zoom]) => { document.querySelector(selector).style.zoom = zoom; }", [element, zoom])
        assert_same(draw(page), plain, what)
        clear(page)
        page.evaluate("selector => { document.querySelector(selector).style.zoom = ''; }", element)
    page.emulate_media(color_scheme="dark")
    assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches")
    assert_same(draw(page), plain, "the dark colour scheme")
    clear(page)
    page.emulate_media(color_scheme="dark", forced_colors="active")
    assert page.evaluate("matchMedia('(forced-colors: active)').matches")
    assert_same(draw(page), plain, "forced colours")
    # The board keeps its own colours: what is sent is what the person sees, black ink on white.
    assert page.evaluate("getComputedStyle(document.getElementById('board')).forcedColorAdjust") == "none"
    page.context.close()


def test_read_back_noise_moves_the_input_by_a_level_at_most(browser, server, plain):  # noqa: F811
    page = open_page(browser, server, script=NOISY_READ_BACK, locale="en-US", **page_zoom(1))
    pixels, digit, _ = draw(page)
    assert page.evaluate("window.noisyPixels") > 0.005 * 280 * 280 * len(FOUR)  # the read-back was noisy
    moved = np.abs(pixels.astype(int) - plain[0].astype(int))
    assert moved.max() <= 1, f"the noise moved the 28x28 input by up to {moved.max()} levels"
    assert digit == plain[1]
    page.context.close()

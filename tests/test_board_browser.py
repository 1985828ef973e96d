"""Issue 32: the drawing board's page in a real browser, Debian's Chromium driven by Playwright for Python.

The server is `mnist_app.py --serve` on the .tflite export (test_board.Server). Strokes are drawn with
the mouse, with touch events in a phone-sized page and with the keyboard alone; photos are dropped
and chosen. Without Chromium or Playwright these tests skip, saying why; with CI set they fail instead.
"""
import base64
import math
import os

import pytest

from test_board import Server, drawn, png_bytes

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ANSWER_TIMEOUT = 30_000  # ms for the page to show an answer (the server's threads share 2 cores with the suite)
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 3, "is_mobile": True, "has_touch": True}
# Strokes as people draw them, in the board's unit square (x right, y down): one list of points each.
SEVEN = [[(0.25, 0.2), (0.75, 0.2), (0.62, 0.45), (0.45, 0.85)]]
ZERO = [[(0.5 + 0.22 * math.sin(t / 20 * 6.4), 0.5 - 0.32 * math.cos(t / 20 * 6.4)) for t in range(21)]]
ONE = [[(0.5, 0.15), (0.5, 0.85)]]
BAR = [[(0.3, 0.5), (0.7, 0.5)]]


def unavailable(reason):
    """Skip with the reason outside CI; fail with it when the CI environment variable is set."""
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        unavailable("Playwright for Python is not installed (pip install -r requirements.txt)")
    if not os.path.exists(CHROMIUM):
        unavailable(f"no Chromium at {CHROMIUM} (apt-get install -y chromium, or set CHROMIUM)")
    with sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        except Error as e:
            unavailable(f"Chromium at {CHROMIUM} does not start: {str(e).splitlines()[0]}")
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server(exported_workdir):
    started = Server(exported_workdir, "--model-dir", os.path.join("export", "mnist.tflite"))
    yield started
    started.stop()


def open_page(browser, server, **context):
    """A new page of the board in its own context (locale, viewport, touch); the model line is shown first."""
    page = browser.new_context(**context).new_page()
    page.goto(server.url)
    page.wait_for_function("document.getElementById('model').dataset.form !== undefined", timeout=ANSWER_TIMEOUT)
    return page


def answers(page):
    return int(page.evaluate("Number(document.body.dataset.answers || 0)"))


def wait_answer(page, before):
    """Wait until the page has shown an answer after the `before`-th; returns #digit's text and #error's."""
    page.wait_for_function(f"Number(document.body.dataset.answers || 0) > {before}", timeout=ANSWER_TIMEOUT)
    return page.text_content("#digit"), page.text_content("#error")


def board_points(page, stroke):
    box = page.locator("#board").bounding_box()
    return [(box["x"] + x * box["width"], box["y"] + y * box["height"]) for x, y in stroke]


def draw_with_mouse(page, strokes):
    """Draw strokes with the mouse; returns the page's answer after the last one ends (digit, error)."""
    for stroke in strokes:
        before = answers(page)
        points = board_points(page, stroke)
        page.mouse.move(*points[0])
        page.mouse.down()
        for point in points[1:]:
            page.mouse.move(*point, steps=6)
        page.mouse.up()
        answer = wait_answer(page, before)
    return answer


def bars(page):
    """The ten bars' widths (percent, float) as shown."""
    return [float(page.eval_on_selector(f"#bar-{d} .fill", "e => parseFloat(e.style.width) || 0")) for d in range(10)]


def test_a_7_and_a_0_drawn_with_the_mouse_are_read_with_their_bars(browser, server):
    page = open_page(browser, server, locale="en-US")
    assert page.text_content("#model").startswith("Model: 784-500-10")
    assert draw_with_mouse(page, SEVEN) == ("7", "")
    shown = bars(page)
    assert max(shown) == shown[7] > 50 and abs(sum(shown) - 100) < 1
    assert page.get_attribute("#bar-7", "class") == "top"
    seen = page.evaluate("Array.from(document.getElementById('input').getContext('2d')"
                         ".getImageData(0, 0, 28, 28).data).filter((v, i) => i % 4 === 0 && v > 0).length")
    assert seen > 30  # the prepared 28x28 input is drawn
    page.click("#clear")
    assert draw_with_mouse(page, ZERO) == ("0", "")
    assert bars(page)[0] == max(bars(page))
    page.context.close()


def test_touch_drawing_on_a_phone_sized_page(browser, server):
    page = open_page(browser, server, locale="en-US", **PHONE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["viewport"]["width"]  # no sideways scroll
    box = page.locator("#board").bounding_box()
    assert box["width"] <= PHONE["viewport"]["width"] and box["x"] >= 0
    touch = page.context.new_cdp_session(page)
    before = answers(page)
    points = board_points(page, SEVEN[0])
    touch.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": points[0][0], "y": points[0][1]}]})
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        for k in range(1, 7):
            x, y = x0 + (x1 - x0) * k / 6, y0 + (y1 - y0) * k / 6
            touch.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]})
    touch.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    assert wait_answer(page, before) == ("7", "")
    page.context.close()


def test_undo_takes_back_the_last_stroke_and_clear_empties_the_board(browser, server):
    page = open_page(browser, server, locale="en-US")
    assert draw_with_mouse(page, ONE)[0] == "1"
    one = bars(page)
    draw_with_mouse(page, BAR)
    before = answers(page)
    page.click("#undo")
    assert wait_answer(page, before)[0] == "1" and bars(page) == one  # the same strokes, the same answer
    page.click("#clear")
    assert page.text_content("#digit") == "?" and max(bars(page)) == 0
    ink = page.evaluate("Array.from(document.getElementById('board').getContext('2d')"
                        ".getImageData(0, 0, 280, 280).data).some(v => v < 255)")
    assert not ink
    page.click("#undo")  # nothing left to take back
    assert page.text_content("#digit") == "?"
    page.context.close()


def drop(page, data, name, mime):
    """Drop a file of `data` (bytes) named `name` on the board, as a file manager's drag and drop does."""
    page.evaluate("""([data, name, mime]) => {
        const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], name, {type: mime}));
        const board = document.getElementById('board');
        board.dispatchEvent(new DragEvent('dragover', {dataTransfer: transfer, bubbles: true, cancelable: true}));
        board.dispatchEvent(new DragEvent('drop', {dataTransfer: transfer, bubbles: true, cancelable: true}));
    }""", [base64.b64encode(data).decode(), name, mime])


def test_a_dropped_photo_is_read_and_a_dropped_non_image_gets_the_apps_message(browser, server, tmp_path):
    page = open_page(browser, server, locale="en-US")
    before = answers(page)
    drop(page, png_bytes(drawn(3, seed=1)), "three.png", "image/png")
    assert wait_answer(page, before) == ("3", "")
    before = answers(page)
    drop(page, b"%PDF-1.4 not a picture", "notes.pdf", "application/pdf")
    digit, error = wait_answer(page, before)
    assert digit == "?" and "notes.pdf: a PDF document, not an image file" in error
    photo = tmp_path / "four.png"
    photo.write_bytes(png_bytes(drawn(4, seed=2)))
    before = answers(page)
    page.set_input_files("input[type=file]", str(photo))
    assert wait_answer(page, before) == ("4", "")
    assert page.locator("input[type=file]").count() == 1
    page.context.close()


@pytest.mark.parametrize("locale, words", [("zh-CN", ("清除", "撤销", "zh-CN", "模型")),
                                           ("en-GB", ("Clear", "Undo", "en", "Model"))])
def test_the_page_follows_the_browsers_language(browser, server, locale, words):
    page = open_page(browser, server, locale=locale)
    clear, undo, lang, model = words
    assert page.text_content("#clear") == clear and page.text_content("#undo") == undo
    assert page.evaluate("document.documentElement.lang") == lang
    assert page.text_content("#model").startswith(model)
    page.context.close()


def test_keyboard_only_draws_predicts_undoes_and_clears(browser, server):
    page = open_page(browser, server, locale="en-US")
    order = []
    for _ in range(5):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id"))
    assert order == ["board", "predict", "undo", "clear", "photo"]
    for _ in range(4):
        page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.id") == "board"
    before = answers(page)
    for _ in range(6):
        page.keyboard.press("ArrowUp")
    page.keyboard.press("Space")  # pen down
    for _ in range(12):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Space")  # pen up: the stroke ends
    assert wait_answer(page, before) == ("1", "")
    page.keyboard.press("Tab")  # Predict
    before = answers(page)
    page.keyboard.press("Enter")
    assert wait_answer(page, before)[0] == "1"
    page.keyboard.press("Tab")  # Undo
    page.keyboard.press("Enter")
    assert page.text_content("#digit") == "?"
    page.context.close()

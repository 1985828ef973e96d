"""The drawing board's page in a real browser, Debian's Chromium driven by Playwright for Python.

The server is `mnist_app.py --serve` on the .tflite export (test_board.Server). Strokes are drawn with
the mouse, with touch events in a phone-sized page (one finger, and two at once) and with the keyboard
alone; photos are dropped and chosen; the language switch, a server that does not answer, and each of
the page's guards (late answers, empty board, ...) are tried. Without Chromium or Playwright these tests
skip, saying why; with CI set they fail instead.
"""
import base64
import io
import math
import os

import numpy
import pytest
from PIL import Image

from conftest import wait_limit
from test_board import Server, drawn, png_bytes

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 3, "is_mobile": True, "has_touch": True}
# Strokes as people draw them, in the board's unit square (x right, y down): one list of points each.
SEVEN = [[(0.25, 0.2), (0.75, 0.2), (0.62, 0.45), (0.45, 0.85)]]
ZERO = [[(0.5 + 0.22 * math.sin(t / 20 * 6.4), 0.5 - 0.32 * math.cos(t / 20 * 6.4)) for t in range(21)]]
ONE = [[(0.5, 0.15), (0.5, 0.85)]]
BAR = [[(0.3, 0.5), (0.7, 0.5)]]


def answer_timeout():
    """ms for the page to show an answer, and for any of Playwright's waits (goto, click: its default is 30 s),
    on a machine as loaded as it is as the wait starts (wait_limit reads the load; the server's threads share the
    cores with the suite): called for each wait, never kept from the test module's import."""
    return int(wait_limit(120) * 1000)


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
        new_context = launched.new_context

        def generous_context(**options):  # every page's waits, navigation too: answer_timeout() as the page opens
            context = new_context(**options)
            context.set_default_timeout(answer_timeout())
            context.set_default_navigation_timeout(answer_timeout())
            return context
        launched.new_context = generous_context
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server(exported_workdir):
    started = Server(exported_workdir, "--model-dir", os.path.join("export", "mnist.tflite"))
    yield started
    started.stop()


def open_page(browser, server, script=None, **context):
    """A new page of the board in its own context (locale, viewport, touch), with `script` (JavaScript) run before
    the page's own if given; the model line is shown first."""
    page = browser.new_context(**context).new_page()
    if script:
        page.add_init_script(script)
    page.goto(server.url)
    page.wait_for_function("document.getElementById('model').dataset.form !== undefined", timeout=answer_timeout())
    return page


def answers(page):
    return int(page.evaluate("Number(document.body.dataset.answers || 0)"))


def wait_answer(page, before):
    """Wait until the page has shown an answer after the `before`-th; returns #digit's text and #error's."""
    page.wait_for_function(f"Number(document.body.dataset.answers || 0) > {before}", timeout=answer_timeout())
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
    """Drop a file of `data` (bytes) named `name` on the board, as a file manager's drag and drop does.

    Returns whether the page cancelled dragover and drop ([bool, bool]): uncancelled, the browser opens the file
    itself in place of the page."""
    return page.evaluate("""([data, name, mime]) => {
        const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], name, {type: mime}));
        const board = document.getElementById('board');
        return ['dragover', 'drop'].map(type =>
            !board.dispatchEvent(new DragEvent(type, {dataTransfer: transfer, bubbles: true, cancelable: true})));
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
    for _ in range(7):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id || document.activeElement.dataset.lang"))
    assert order == ["zh", "en", "board", "predict", "undo", "clear", "photo"]
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


def ink(page, x, y, canvas="board"):
    """Whether the canvas has any non-white pixel in the 5x5 square around (x, y), in the unit square of the board."""
    return page.evaluate("""([x, y, id]) => {
        const canvas = document.getElementById(id);
        const cx = Math.round(x * canvas.width), cy = Math.round(y * canvas.height);
        return Array.from(canvas.getContext('2d').getImageData(cx - 2, cy - 2, 5, 5).data).some(v => v < 250);
    }""", [x, y, canvas])


def touches(session, kind, fingers):
    """One CDP touch event (touchStart, touchMove, touchEnd) with `fingers`: {id: (x, y) in CSS pixels}.

    touchStart and touchMove list the fingers down; touchEnd lists those that lift, or none for all."""
    session.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": [
        {"x": x, "y": y, "id": finger} for finger, (x, y) in fingers.items()]})


def test_two_fingers_draw_no_line_between_them(browser, server):
    page = open_page(browser, server, locale="en-US", **PHONE)
    session = page.context.new_cdp_session(page)
    first, second = board_points(page, [(0.15, 0.15), (0.85, 0.85)])
    before = answers(page)
    touches(session, "touchStart", {0: first})
    touches(session, "touchStart", {0: first, 1: second})
    for k in range(1, 7):  # both move a little: the first to the right, the second to the left
        touches(session, "touchMove", {0: board_points(page, [(0.15 + 0.03 * k, 0.15)])[0],
                                       1: board_points(page, [(0.85 - 0.01 * k, 0.85)])[0]})
    touches(session, "touchEnd", {1: board_points(page, [(0.79, 0.85)])[0]})  # the second finger lifts first
    for k in range(1, 4):  # the first goes on drawing
        touches(session, "touchMove", {0: board_points(page, [(0.33 + 0.03 * k, 0.15)])[0]})
    touches(session, "touchEnd", {})
    wait_answer(page, before)
    assert answers(page) == before + 1  # one stroke, one answer
    assert not any(ink(page, t, t) for t in (0.3, 0.4, 0.5, 0.6, 0.7))  # nothing along the diagonal
    assert ink(page, 0.15, 0.15) and ink(page, 0.3, 0.15) and ink(page, 0.42, 0.15)  # the first finger's stroke, whole
    page.context.close()


def test_the_language_switch_is_kept_across_reloads(browser, server):
    page = open_page(browser, server, locale="en-US")
    assert page.get_attribute("#lang [data-lang=en]", "aria-pressed") == "true"
    page.click("#predict")  # an empty board: a message, said again in the new language
    assert page.text_content("#error") == "Draw a digit first."
    page.click("#lang [data-lang=zh]")
    assert page.text_content("#clear") == "清除" and page.text_content("#error") == "请先写一个数字。"
    assert page.text_content("#model").startswith("模型") and page.evaluate("document.title") == "MNIST 手写板"
    assert page.get_attribute("#lang [data-lang=zh]", "aria-pressed") == "true"
    assert page.get_attribute("#bar-3 .bar", "aria-label") == "概率： 3"
    page.reload()
    page.wait_for_function("document.getElementById('model').dataset.form !== undefined", timeout=answer_timeout())
    assert page.text_content("#clear") == "清除" and page.evaluate("document.documentElement.lang") == "zh-CN"
    page.click("#lang [data-lang=en]")
    page.reload()
    assert page.text_content("#clear") == "Clear" and page.get_attribute("#lang [data-lang=zh]", "aria-pressed") == "false"
    page.context.close()


def test_a_refused_playback_is_said_again_in_the_language_switched_to(browser, server):
    # The export served keeps no training history: /board/history refuses, and the playback's line (history.js)
    # follows the switch both ways as the board's own messages do, from the refusal's twins, with no new request.
    page = open_page(browser, server, locale="zh-CN")
    asked = []
    page.on("request", lambda request: asked.append(request.url) if "/board/history" in request.url else None)
    with page.expect_response(lambda response: response.url.endswith("/board/history")) as listed:
        page.evaluate("document.getElementById('history-open').click()")  # the button is hidden for an export
    refused = listed.value.json()
    assert listed.value.status == 409 and refused["zh"] != refused["error"], refused
    page.wait_for_function("document.getElementById('history').dataset.state === 'refused'")
    assert page.text_content("#history .refused") == f"无法回放：{refused['zh']}"
    page.click("#lang [data-lang=en]")
    assert page.text_content("#history .refused") == f"No playback: {refused['error']}"
    page.click("#lang [data-lang=zh]")
    assert page.text_content("#history .refused") == f"无法回放：{refused['zh']}"
    assert len(asked) == 1, asked
    page.context.close()


OFFLINE = {"en-US": "The server is not answering: is mnist_app.py --serve still running?",
           "zh-CN": "服务器没有应答：mnist_app.py --serve 还在运行吗？"}


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_a_server_that_does_not_answer_gets_a_plain_message(browser, server, locale):
    page = open_page(browser, server, locale=locale)
    page.route("**/board/predict", lambda route: route.abort())  # as when the server has stopped
    assert draw_with_mouse(page, ONE) == ("?", OFFLINE[locale])
    page.unroute("**/board/predict")
    page.route("**/board/predict", lambda route: route.fulfill(status=500, content_type="text/plain",
                                                               body="Internal Server Error"))  # a proxy's page
    digit, error = draw_with_mouse(page, BAR)
    assert digit == "?" and error == {
        "en-US": "The server's answer cannot be read (HTTP 500): is mnist_app.py --serve still running?",
        "zh-CN": "无法读取服务器的应答（HTTP 500）：mnist_app.py --serve 还在运行吗？"}[locale]
    assert max(bars(page)) == 0
    page.context.close()


def test_a_page_opened_while_the_server_stops_says_so_plainly(browser, server):
    context = browser.new_context(locale="en-US")
    page = context.new_page()
    page.route("**/board/model", lambda route: route.abort())
    page.goto(server.url)
    page.wait_for_function("document.getElementById('error').textContent !== ''", timeout=answer_timeout())
    assert page.text_content("#error") == OFFLINE["en-US"]
    context.close()


def test_nothing_is_sent_for_an_empty_board_nor_drawn_with_the_other_mouse_buttons(browser, server):
    page = open_page(browser, server, locale="en-US")
    sent = []
    page.on("request", lambda request: sent.append(request) if request.url.endswith("/board/predict") else None)
    page.click("#predict")
    assert page.text_content("#error") == "Draw a digit first." and page.text_content("#digit") == "?"
    start, end = board_points(page, ONE[0])
    page.mouse.move(*start)
    page.mouse.down(button="right")
    page.mouse.move(*end, steps=6)
    page.mouse.up(button="right")
    assert not ink(page, 0.5, 0.5)
    assert draw_with_mouse(page, SEVEN) == ("7", "")  # then a stroke: its request is the only one
    assert len(sent) == 1
    page.context.close()


def test_a_stroke_ended_outside_the_board_still_ends(browser, server):
    page = open_page(browser, server, locale="en-US")
    box = page.locator("#board").bounding_box()
    before = answers(page)
    start, = board_points(page, [(0.5, 0.2)])
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] + 40, steps=8)  # below the board
    page.mouse.up()
    assert wait_answer(page, before)[0] == "1"
    page.mouse.move(box["x"] + box["width"] * 0.8, box["y"] + box["height"] * 0.5, steps=6)  # the pen is up
    assert not ink(page, 0.8, 0.5)
    page.context.close()


# Counts the bodies of answers the page has read, once the page has done with each (a task after its own).
BODIES_READ = """window.bodiesRead = 0;
for (const name of ['json', 'text']) {
    const read = Response.prototype[name];
    Response.prototype[name] = function () {
        const reading = read.call(this);
        const done = () => setTimeout(() => { window.bodiesRead++; });
        reading.then(done, done);
        return reading;
    };
}"""
NINE = {"digit": 9, "probabilities": [0.0] * 9 + [1.0], "input": [255] * 784}  # an answer no stroke here gets


def draw_held(page, held, strokes):
    """Draw with the mouse while the page's predictions are held in `held`; returns the new request's route."""
    with page.expect_request("**/board/predict"):
        for stroke in strokes:
            points = board_points(page, stroke)
            page.mouse.move(*points[0])
            page.mouse.down()
            for point in points[1:]:
                page.mouse.move(*point, steps=6)
            page.mouse.up()
    page.wait_for_function("true")  # lets the route handler run
    return held[-1]


def release_late(page, route):
    """Answer a held request with NINE, and wait until the page has read that answer."""
    read = page.evaluate("window.bodiesRead")
    route.fulfill(json=NINE)
    page.wait_for_function(f"window.bodiesRead > {read}", timeout=answer_timeout())


def test_a_late_answer_to_an_earlier_stroke_or_a_cleared_board_is_not_shown(browser, server):
    page = open_page(browser, server, BODIES_READ, locale="en-US")
    held = []
    page.route("**/board/predict", lambda route: held.append(route))
    first = draw_held(page, held, ONE)
    second = draw_held(page, held, BAR)
    assert second is not first
    before = answers(page)
    second.continue_()
    digit, error = wait_answer(page, before)
    shown = bars(page)
    release_late(page, first)  # the first stroke's answer comes after the second's
    assert (page.text_content("#digit"), bars(page), answers(page)) == (digit, shown, before + 1)
    assert digit != "9" and error == ""
    page.click("#clear")
    third = draw_held(page, held, SEVEN)
    page.click("#clear")
    release_late(page, third)  # the answer to a drawing that was cleared meanwhile
    assert page.text_content("#digit") == "?" and max(bars(page)) == 0 and answers(page) == before + 1
    page.context.close()


# Keeps the bodies the page sends (Chromium does not give a Blob's bytes to Playwright's request.post_data).
BODIES_SENT = """window.bodiesSent = [];
const fetchOfThePage = window.fetch;
window.fetch = (url, options) => {
    if (options && options.body) window.bodiesSent.push(options.body);
    return fetchOfThePage(url, options);
};"""


def last_sent(page):
    """The bytes of the last body the page sent."""
    return base64.b64decode(page.evaluate("""async () => {
        const bytes = new Uint8Array(await window.bodiesSent.at(-1).arrayBuffer());
        return btoa(Array.from(bytes, b => String.fromCharCode(b)).join(''));
    }"""))


def test_the_keyboard_pen_stays_on_the_board_and_its_ring_is_not_sent(browser, server):
    page = open_page(browser, server, BODIES_SENT, locale="en-US")
    page.focus("#board")
    for _ in range(20):  # from the middle to past the left edge: the pen stops at the edge
        page.keyboard.press("ArrowLeft")
    page.keyboard.press("Space")
    for _ in range(8):
        page.keyboard.press("ArrowDown")
    before = answers(page)
    page.keyboard.press("Space")
    wait_answer(page, before)
    colours = numpy.asarray(Image.open(io.BytesIO(last_sent(page))).convert("RGB"), dtype=int)
    assert colours.shape == (280, 280, 3)
    assert (colours[..., 2] - colours[..., 0]).max() < 40  # no blue of the pen's ring in the picture sent
    assert colours[140:220, :5].min() < 100  # the stroke, along the left edge
    assert ink(page, 0.01, 0.65) and page.evaluate("document.activeElement.id") == "board"  # the ring is back
    page.context.close()


def test_a_photo_with_a_chinese_name_replaces_the_drawing(browser, server):
    page = open_page(browser, server, locale="zh-CN")
    assert draw_with_mouse(page, ONE)[0] == "1"
    before = answers(page)
    assert drop(page, png_bytes(drawn(4, seed=2)), "四.png", "image/png") == [True, True]
    assert wait_answer(page, before) == ("4", "")
    assert not ink(page, 0.5, 0.5)  # the drawing is gone, not drawn over by the next stroke
    assert page.text_content("#photo-name") == "四.png"  # the chosen photo is named on the page
    before = answers(page)
    drop(page, b"%PDF-1.4 not a picture", "笔记.pdf", "application/pdf")
    digit, error = wait_answer(page, before)
    assert digit == "?" and "笔记.pdf：是 PDF 文件，不是图片文件" in error  # the page in zh: the error's twin
    assert page.text_content("#photo-name") == "笔记.pdf"
    draw_with_mouse(page, ONE)
    assert page.text_content("#photo-name") == ""  # a drawing again: no photo named
    page.context.close()


UNSURE = {"digit": 2, "probabilities": [0.0, 0.0, 0.52, 0.0, 0.0, 0.0, 0.0, 0.47, 0.01, 0.0],
          "input": [0] * 392 + [255] * 392}  # read as a guess: the amber "Maybe 2 (52.0%) — or 7?" line


def teach_boxes(page):
    """The bounding boxes of the ten "That was a ..." buttons and their label, as laid out now."""
    return [page.locator(f'#teach button[data-digit="{d}"]').bounding_box() for d in range(10)] + [
        page.locator("#teach-label").bounding_box()]


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_teach_buttons_do_not_move_when_the_amber_line_appears(browser, server, locale, size):
    page = open_page(browser, server, locale=locale, **(PHONE if size == "phone" else {}))
    draw_with_mouse(page, ONE)  # a sure answer: no amber line
    assert page.text_content("#verdict") == "" and page.get_attribute("body", "data-sure") == "true"
    sure = teach_boxes(page)
    page.route("**/board/predict", lambda route: route.fulfill(json=UNSURE))
    page.click("#clear")
    draw_with_mouse(page, SEVEN)
    assert page.get_attribute("body", "data-sure") == "false"
    assert page.text_content("#verdict").startswith({"en-US": "Maybe 2 (52.0%)", "zh-CN": "可能是 2（52.0%）"}[locale])
    assert teach_boxes(page) == sure
    page.context.close()

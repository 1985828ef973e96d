"""The Why panel in Chromium: the reasons' maps with their exact sums, the map of the test digits, "not a digit".

One server for the module, `mnist_app.py --serve --model-dir model` on conftest's two_models (the sample's test
records in data/), its map made anew (a cache folder of the module's), and one browser (test_board_browser's).
"""
import os
import re

import pytest

from conftest import wait_limit
from test_board import Server
from test_board_browser import answer_timeout, SEVEN, browser, draw_with_mouse, open_page  # noqa: F401

pytestmark = pytest.mark.long  # a browser scenario of a quarter of a minute or more: make test-long

MAP_TIMEOUT = int(wait_limit(300) * 1000)  # ms for the map of the test digits to be made (a loaded machine)


@pytest.fixture(scope="module")
def server(two_models, tmp_path_factory):
    started = Server(two_models, "--model-dir", "model",
                     env={"MNISTKIT_CACHE": str(tmp_path_factory.mktemp("why-cache"))})  # the map made, not read
    yield started
    started.stop()


def test_the_why_panel_shows_the_shares_whose_sum_is_the_logit_and_the_map(browser, server):  # noqa: F811
    page = open_page(browser, server, locale="en-US")
    draw_with_mouse(page, SEVEN)
    page.click("#why-open")
    page.wait_for_function("Number(document.body.dataset.whys || 0) > 0", timeout=answer_timeout())
    captions = page.locator("#why .why-maps figcaption .sum").all_text_contents()
    assert len(captions) == 2  # the answer's shares and the runner-up's difference
    digit = page.text_content("#digit")
    found = re.fullmatch(r"The pixels give (-?[\d.]+), the biases (-?[\d.]+): \S+ [+−] \S+ = (-?[\d.]+), the logit "
                         r"of (\d)\.", captions[0])
    assert found and found.group(4) == digit, captions[0]
    assert abs(float(found.group(1)) + float(found.group(2)) - float(found.group(3))) <= 0.002
    lines = page.locator("#why .why-maps figcaption .line").all_text_contents()
    assert lines and all("return tf.matmul(y1, w2) + b2" in line and "mnist_forward.py:" in line for line in lines)
    assert page.locator("#why .why-missing canvas").count() == 1
    # the map: made in the background, then drawn with the drawing's 5 nearest test digits
    page.wait_for_function("document.querySelector('#why .atlas-note').textContent.startsWith('The map')",
                           timeout=MAP_TIMEOUT)
    draw_with_mouse(page, SEVEN)  # asked again, now that the map is there
    page.wait_for_function("document.querySelectorAll('#why .neighbour').length === 5", timeout=answer_timeout())
    # in Chinese, the same captions
    page.click('#lang [data-lang="zh"]')
    assert page.text_content("#why-open") == "收起为什么"
    assert "即" in page.locator("#why .why-maps figcaption .sum").first.text_content()
    assert page.text_content("#not-a-digit") == "" or "不是数字" in page.text_content("#not-a-digit")
    if os.environ.get("WHY_SCREENSHOT"):  # docs/inside.md's picture: WHY_SCREENSHOT=docs/inside-why.png
        page.click('#lang [data-lang="en"]')
        page.locator("#why").screenshot(path=os.environ["WHY_SCREENSHOT"])

"""Training played back in Chromium (history.js): the slider from the first snapshot to the last, the drawing's
probabilities, the unit's weights and the test accuracy at each step, the plot; in English and Chinese.

One server for the module, `mnist_app.py --serve --model-dir model` on a copy of conftest's two_models' 784-500-10
network (its 20 snapshots at 30 to 600 steps), with mnist_test.py's score recorded at the last step; one browser
(test_board_browser's). What the page shows is read back from its elements and compared with /board/playback's and
/board/history's own answers, and the weights with the snapshot's tensor.
"""
import json
import shutil
import urllib.request

import numpy as np
import pytest

from conftest import MLP_STEPS
from mnistkit import history
from test_board import Server
from test_board_browser import answer_timeout, SEVEN, browser, draw_with_mouse, open_page  # noqa: F401

pytestmark = pytest.mark.long  # a browser scenario of a quarter of a minute or more: make test-long

PLAYED = "document.getElementById('history').dataset.state === 'played'"
ACCURACY = 0.9  # recorded at the last snapshot's step, as mnist_test.py records a score


@pytest.fixture(scope="module")
def server(two_models, tmp_path_factory):
    work = tmp_path_factory.mktemp("history_board")
    shutil.copytree(two_models / "model", work / "model")
    shutil.copytree(two_models / "data", work / "data")
    assert history.record_accuracy(str(work / "model"), MLP_STEPS, ACCURACY)
    started = Server(work, "--model-dir", "model")
    started.work = work  # the snapshots' paths are the server's, relative to it
    yield started
    started.stop()


def played(browser, server, locale="en-US"):  # noqa: F811
    """A page with a 7 drawn and the playback open, every snapshot's answer shown."""
    page = open_page(browser, server, locale=locale)
    draw_with_mouse(page, SEVEN)
    page.click("#history-open")
    page.wait_for_function(PLAYED, timeout=answer_timeout())
    return page


def move_to(page, k):
    page.eval_on_selector("#history-slider", f"s => {{ s.value = '{k}'; s.dispatchEvent(new Event('input')); }}")


def test_the_slider_shows_each_snapshots_answer_unit_and_accuracy(browser, server):  # noqa: F811
    page = played(browser, server)
    listed = json.loads(urllib.request.urlopen(server.url + "board/history").read())["snapshots"]
    assert page.eval_on_selector("#history-slider", "s => [Number(s.min), Number(s.max), Number(s.value)]") == \
        [0, len(listed) - 1, len(listed) - 1]  # opened at the last step
    answer = page.evaluate("""async () => { const p = window.boardPicture();
        return await (await fetch('/board/playback', {method: 'POST', body: p.blob})).json(); }""")
    assert page.text_content("#history .accuracy") == f"test accuracy then: {100 * ACCURACY:.1f}%"
    for k in (0, 9, len(listed) - 1):
        move_to(page, k)
        step = listed[k]["global_step"]
        assert page.evaluate("document.getElementById('history').dataset.step") == str(step)
        shown = page.eval_on_selector_all("#history .bars li", "items => items.map(i => Number(i.dataset.probability))")
        np.testing.assert_allclose(shown, answer["snapshots"][k]["probabilities"], atol=1e-6)
        assert page.evaluate("document.getElementById('history').dataset.digit") == str(answer["snapshots"][k]["digit"])
        assert page.text_content("#history .step").startswith(f"global_step {step} of {MLP_STEPS} (snapshot {k + 1} of")
        page.wait_for_function(f"document.querySelector('#history figure.unit').dataset.shown === '{step} y1 0'",
                               timeout=answer_timeout())
        if k != len(listed) - 1:
            assert page.text_content("#history .accuracy").startswith("test accuracy then: not scored")
    # The unit's weights drawn at the first step are that snapshot's w1 column (red positive, blue negative).
    move_to(page, 0)
    page.wait_for_function(f"document.querySelector('#history figure.unit').dataset.shown === "
                           f"'{listed[0]['global_step']} y1 0'", timeout=answer_timeout())
    from tf_compat import tf
    w1 = tf.train.load_checkpoint(str(server.work / listed[0]["checkpoint"])).get_tensor("w1/ExponentialMovingAverage")[:, 0]
    data = page.eval_on_selector("#history figure.unit canvas", """c => Array.from(
        c.getContext('2d').getImageData(0, 0, 28, 28).data)""")
    rgb = np.asarray(data).reshape(784, 4)[:, :3]
    strongest = np.abs(w1) > 0.5 * np.abs(w1).max()
    assert (rgb[strongest & (w1 > 0), 0] == 255).all() and (rgb[strongest & (w1 < 0), 2] == 255).all()
    plot = page.eval_on_selector("#history .plot canvas", """c => Array.from(
        c.getContext('2d').getImageData(0, 0, c.width, c.height).data).filter((v, i) => i % 4 === 3 && v > 0).length""")
    assert plot > 500  # ten lines and the marker drawn


def test_the_playback_speaks_chinese(browser, server):  # noqa: F811
    page = played(browser, server, "zh-CN")
    assert page.text_content("#history-open") == "收起回放"
    assert page.text_content("#history h2") == "回放训练过程"
    assert page.text_content("#history .step").startswith(f"训练步数 global_step {MLP_STEPS} / {MLP_STEPS}")

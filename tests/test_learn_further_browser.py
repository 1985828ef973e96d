"""The learn line after more training, in Chromium (Playwright, as tests/test_learn_browser.py): when the served
folder holds a checkpoint newer than the learn in service (trained further in a terminal), the line says so and
that undo and redo are off (GET /board/learn's "further", promotion.standing's check that undo refuses by), and a
refusal the server gave to a click stays on the page through the 2 s refreshes until the state it speaks of
changes or another click.

One server (`mnist_app.py --serve`) on a copy of conftest's learned_workdir, its held learn used (accept). "Trained
further": the learned checkpoint's files copied to a later step and named newest in ./model/checkpoint, as a save
of mnist_backward.py would leave them (the weights do not matter here).
"""
import shutil

import pytest

from conftest import LEARN_STEPS, TRAIN_STEPS
from test_board import request
from test_board_browser import answer_timeout, browser, open_page  # noqa: F401  (browser: the module's fixture)
from test_learn_browser import buttons, server, shows, work  # noqa: F401  (server, work: the module's fixtures)

LEARNED = TRAIN_STEPS + LEARN_STEPS
FURTHER = LEARNED + 1000


def train_further(model):
    """mnist_model-LEARNED's files copied as mnist_model-FURTHER, named newest; a function that undoes it."""
    state = (model / "checkpoint").read_text()
    made = []
    for source in model.glob(f"mnist_model-{LEARNED}.*"):
        made.append(model / source.name.replace(f"-{LEARNED}.", f"-{FURTHER}."))
        shutil.copyfile(source, made[-1])
    (model / "checkpoint").write_text(f'model_checkpoint_path: "mnist_model-{FURTHER}"\n'
                                      f'all_model_checkpoint_paths: "mnist_model-{FURTHER}"\n')

    def back():
        for path in made:
            path.unlink()
        (model / "checkpoint").write_text(state)
    return back


def refreshes(page, count):
    """Wait for `count` more answers of the page's own GET /board/learn (its refresh every 2 s)."""
    for _ in range(count):
        with page.expect_response(lambda r: "/board/learn" in r.url and r.request.method == "GET",
                                  timeout=answer_timeout()):
            pass


@pytest.mark.long  # a server, a page and 4 of its refreshes: about 40 s beyond the learned fixture
def test_trained_further_the_line_says_so_and_a_refused_undo_stays_through_refreshes(browser, server, work):
    status, _ = request(server.url + "board/learn/accept", b"", method="POST")
    assert status == 200
    page = open_page(browser, server, locale="en-US")
    shows(page, LEARNED, "Learned · MNIST 0.")
    assert buttons(page) == (["learn-undo"], True)
    back = train_further(work / "model")
    _, state = request(server.url + "board/learn")
    assert state["further"] == {"learn": 1, "newest": f"mnist_model-{FURTHER}", "step": FURTHER}
    assert not state["undo"] and not state["redo"]
    further = f"Trained further since learn 1 (now step {FURTHER}): undo and redo are off"
    page.wait_for_function("line => document.getElementById('learn-progress').textContent === line", arg=further,
                           timeout=answer_timeout())
    assert buttons(page) == ([], True)
    page.evaluate("document.getElementById('learn-undo').click()")  # as clicked just before a refresh hid it
    refused = "Cannot learn: "
    page.wait_for_function("text => document.getElementById('learn-progress').textContent.startsWith(text)",
                           arg=refused, timeout=answer_timeout())
    assert "trained further since learn 1: its newest checkpoint is mnist_model-" in page.text_content(
        "#learn-progress")
    refreshes(page, 3)  # the refusal stays while the state it speaks of stays
    assert page.text_content("#learn-progress").startswith(refused)
    page.click("#lang [data-lang=zh]")
    assert page.text_content("#learn-progress").startswith("无法学习：")
    refreshes(page, 1)
    assert page.text_content("#learn-progress").startswith("无法学习：")
    back()  # the state changes (undo possible again): the refusal goes
    shows(page, LEARNED, "学习完成 · MNIST 0.")
    assert buttons(page) == (["learn-undo"], True)
    train_further(work / "model")
    page.wait_for_function("line => document.getElementById('learn-progress').textContent === line",
                           arg=f"学习 1 之后又训练过（现在第 {FURTHER} 步）：撤销和重做不可用", timeout=answer_timeout())

"""The learn on the page, in Chromium (Playwright, as tests/test_board_browser.py): the learn line tells what the
served folder's learns are, whoever changed them, and its buttons choose.

One server (`mnist_app.py --serve`) on a copy of conftest's learned_workdir, whose learn is held because digit
7's recall fell. The page shows what fell and offers "use it anyway" and "discard"; used, the model line and the
learn line follow; an undo typed in a terminal (mnist_learn.py --undo) reaches the open page without a reload,
and its Redo button puts the learn back. Both languages.
"""
import re

import pytest

from conftest import LEARN_STEPS, TRAIN_STEPS, copy_into, run_main
from test_board import Server
from test_board_browser import answer_timeout, browser, open_page  # noqa: F401  (browser: the module's fixture)

LEARNED = TRAIN_STEPS + LEARN_STEPS


@pytest.fixture(scope="module")
def work(learned_workdir, tmp_path_factory):
    """A copy of learned_workdir to serve and change."""
    return copy_into(tmp_path_factory.mktemp("learned"), learned_workdir, "data", "model", "my_digits",
                     "my_digits.txt")


@pytest.fixture(scope="module")
def server(work):
    started = Server(work, "--model-dir", "model")
    yield started
    started.stop()


def shows(page, step, line):
    """Wait until the model line names global_step `step` and the learn line starts with `line`."""
    page.wait_for_function("([step, line]) => document.getElementById('model').dataset.step === step && "
                           "document.getElementById('learn-progress').textContent.startsWith(line)",
                           arg=[str(step), line], timeout=answer_timeout())


def noted(page, text):
    """Wait until the note under the learn line (#learn-note: one digit only, changes the model does not know)
    holds `text`; its text."""
    page.wait_for_function("text => document.getElementById('learn-note').textContent.includes(text)", arg=text,
                           timeout=answer_timeout())
    return page.text_content("#learn-note")


def buttons(page):
    """The learn's choice buttons shown, by id, and whether #learn can be pressed."""
    return [b for b in ("learn-undo", "learn-redo", "learn-accept", "learn-discard") if page.is_visible("#" + b)], \
        page.is_enabled("#learn")


def test_a_held_learn_is_used_anyway_then_undone_in_a_terminal_and_redone_on_the_page(browser, server, work):
    page = open_page(browser, server, locale="en-US")
    shows(page, TRAIN_STEPS, "Not used: ")
    held = page.text_content("#learn-progress")
    assert "digit 7's recall fell 0." in held and " points)" in held and "−" in held
    assert page.get_attribute("#learn-progress", "data-state") == "held"
    assert buttons(page) == (["learn-accept", "learn-discard"], False)  # a new learn waits for the choice
    assert page.text_content("#learn-accept") == "Use it anyway"
    page.click("#learn-accept")
    shows(page, LEARNED, "Learned · MNIST 0.")
    # all 10 kept 3s learned, or (the batches' order) all but one
    learned = re.fullmatch(r"Learned · MNIST 0\.\d{4} → 0\.\d{4} · digit \d recall 0\.\d{3} → 0\.\d{3} · your digits "
                           r"\d+/10 → (9|10)/10", page.text_content("#learn-progress"))
    assert learned, page.text_content("#learn-progress")
    assert buttons(page) == (["learn-undo"], True)
    note = noted(page, "All your kept digits are 3s")  # the keeps are all 3s; the model in service learned them
    assert "does not know" not in note
    undone = run_main("mnist_learn.py", "--undo", "--model-dir", "model", cwd=work)  # from a terminal
    assert undone.returncode == 0, undone.stderr
    shows(page, TRAIN_STEPS, f"Undone: back to step {TRAIN_STEPS}")  # the open page follows, no reload
    assert buttons(page) == (["learn-redo"], True)
    noted(page, "The served model does not know 10 change(s) to your kept digits")  # undone: it learned none
    page.click("#lang [data-lang=zh]")
    noted(page, "正在使用的模型还不知道你对保存的数字做的 10 处改动")
    shows(page, TRAIN_STEPS, f"已撤销：回到第 {TRAIN_STEPS} 步")
    assert page.text_content("#learn-redo") == "重做学习"
    page.click("#learn-redo")
    shows(page, LEARNED, "学习完成 · MNIST 0.")
    assert re.fullmatch(r"学习完成 · MNIST 0\.\d{4} → 0\.\d{4} · 数字 \d 召回率 0\.\d{3} → 0\.\d{3} · 你的数字 \d+/10 → "
                        rf"{learned.group(1)}/10", page.text_content("#learn-progress"))  # the same learned checkpoint
    assert page.text_content("#model").startswith("模型: 784-500-10 · 训练步数 global_step " + str(LEARNED))
    page.context.close()

"""Every error line the board's page shows comes in zh and en: the board's error paths walked with the page in zh.

The board's routes answer an error with its line and, for a request whose Accept-Language names zh (the page's
all do), its Chinese twin under "zh" (mnistkit/board/zh.py); GET /board/learn's failed line has "line_zh". Walked
here on the routes (a learn refused, a keep refused, an undo refused naming the newer checkpoint, bad pictures),
then on the page in Chromium set to zh: no English word is shown, only the names the lines give (files,
folders, checkpoints, commands).
"""
import io
import json
import os
import re
import shutil
import types
import urllib.parse

import numpy as np
import pytest
from PIL import Image

import mnist_app
from test_board import Server
from test_board_browser import answers, browser, drop, open_page, wait_answer  # noqa: F401
from test_board_learn import board_on, kept_input
from test_board_routes import OWN_HOST, Asked
from test_learn_faults import AFTER, promoted_folder, train_further
from mnistkit import keep, networks
from mnistkit.board import playback, zh
from mnistkit.board.table import BoardError

ZH = (b"accept-language", b"zh-CN,zh;q=0.9,en;q=0.8")
FALLBACK = re.compile(r"（HTTP \d+）$")  # a line said by its kind only: a phrase zh.PHRASES lacks


def words_left(line, *names):
    """The English words of a zh line once the names it gives (`names`, and any path, file or checkpoint name) are
    taken out: what a reader of Chinese would find untranslated."""
    for name in sorted(map(str, names), key=len, reverse=True):
        line = line.replace(name, " ")
    line = re.sub(r"`[^`]*`|\S*[/._\-\d]\S*", " ", line)
    return [w for w in re.findall(r"[A-Za-z]{2,}", line)  # JPG, PNG, HTTP, a command's FOLDER: names too, and
            if not w.isupper() and w not in {"Pillow", "TFRecords", "LeNet"}]  # the libraries' and formats'


def asked_zh(board, method, path, body=b"", *names, content=b"application/octet-stream"):
    """(status, error line, its zh twin) of a request that the board refuses, asked as the page asks; the twin
    checked: Chinese, every name kept, no English word, and not said by its kind alone."""
    answer = Asked(board, method, path, body, headers=(OWN_HOST, ZH, (b"content-type", content)))
    found = json.loads(answer.body)
    assert answer.status >= 400 and set(found) == {"error", "zh"}, found
    line, twin = found["error"], found["zh"]
    assert re.search(r"[\u4e00-\u9fff]", twin) and not FALLBACK.search(twin), (line, twin)
    assert words_left(twin, *names) == [], (line, twin)
    assert all(str(name) in twin for name in names), (line, twin)
    return answer.status, line, twin


def png(pixels):
    out = io.BytesIO()
    Image.fromarray(np.asarray(pixels, np.uint8)).save(out, "PNG")
    return out.getvalue()


@pytest.mark.quick
def test_a_learn_refused_comes_in_zh_naming_the_folder(tmp_path):
    board, served = board_on(tmp_path / "model", tmp_path)  # a folder never made: as if deleted while served
    status, line, twin = asked_zh(board, "POST", "/board/learn", b"", tmp_path / "model")
    assert status == 409 and "is gone" in line and "不见了" in twin
    (tmp_path / "model").mkdir()
    assert "已经没有检查点" in asked_zh(board, "POST", "/board/learn", b"", tmp_path / "model")[2]
    served.learning.job = {**served.learning.job, "state": "running", "folder": "model"}  # one learn at a time
    assert "正在学习" in asked_zh(board, "POST", "/board/learn", b"", "model")[2]
    empty = keep.KeptDigits(str(tmp_path / "none"))
    served.learning.kept, served.kept = empty, empty
    served.learning.job = {**served.learning.job, "state": "idle"}
    status, line, twin = asked_zh(board, "POST", "/board/learn", b"", empty.folder)
    assert status == 400 and "no kept digits" in line and "还没有保存的数字" in twin


@pytest.mark.quick
def test_a_keep_refused_comes_in_zh(tmp_path):
    board, served = board_on(tmp_path / "model", tmp_path)
    blank = json.dumps({"digit": 3, "input": [0] * 784}).encode()
    status, line, twin = asked_zh(board, "POST", "/board/keep", blank, content=b"application/json")
    assert status == 400 and "blank" in line and "没有可保存的数字" in twin
    with open(served.kept.labels, "a", encoding="utf-8") as f:
        f.write("000009_4.jpg 7\n")  # a label line the store cannot read: every keep refused until it is fixed
    digit = json.dumps({"digit": 3, "input": kept_input(1)}).encode()
    status, line, twin = asked_zh(board, "POST", "/board/keep", digit, "'000009_4.jpg'", served.kept.labels,
                                  content=b"application/json")
    assert status == 409 and "然后再保存" in twin, twin
    listed = json.loads(Asked(board, "GET", "/board/kept", headers=(OWN_HOST, ZH)).body)  # the list's note, in zh
    (line,), (twin,) = listed["unreadable"], listed["unreadable_zh"]
    assert "000009_4.jpg" in twin and "不是它名字里的" in twin and words_left(twin) == [], (line, twin)


@pytest.mark.quick
@pytest.mark.parametrize("form, says, names", [
    ({"digit": 12, "input": [0] * 784}, "0-9 的整数", ['"digit"']),
    ({"digit": "7", "input": [0] * 784}, "0-9 的整数", ['"digit"']),
    ({"digit": 3, "input": [0] * 783}, "784 个 0-255 的整数", ['"input"']),
    ({"digit": 3, "original": "not base64!"}, "base64 编码", ['"original"']),
    ({"digit": 3}, "两者都发", ['"input"', '"original"']),
    ({"digit": 3, "input": [0] * 784, "name": 5}, "文件名", ['"name"']),
])
def test_a_malformed_keep_form_is_refused_in_zh_not_by_its_kind(tmp_path, form, says, names):
    board, _ = board_on(tmp_path / "model", tmp_path)
    status, line, twin = asked_zh(board, "POST", "/board/keep", json.dumps(form).encode(), *names,
                                  content=b"application/json")
    assert status == 400 and says in twin, (line, twin)


def test_an_undo_refused_names_the_newer_checkpoint_in_zh(trained_workdir, tmp_path):
    model_dir = promoted_folder(trained_workdir, tmp_path)
    newer = train_further(model_dir, AFTER, 2300)
    board, _ = board_on(model_dir, tmp_path)
    status, line, twin = asked_zh(board, "POST", "/board/learn/undo", b"", newer, AFTER)
    assert status == 409 and newer in line and "没有撤销" in twin
    status, line, twin = asked_zh(board, "POST", "/board/learn/redo", b"", model_dir)
    assert status == 409 and "没有可重做的学习" in twin


@pytest.mark.quick
@pytest.mark.parametrize("picture, says", [
    (b"%PDF-1.4 not a picture", "不是图片文件"),
    (b"\x89PNG\r\n\x1a\n broken", "不是 Pillow 能打开的图片文件"),
    (png(np.full((60, 60), 255)), "没有找到数字"),
    (png(np.full((60, 60), 0)), "没有找到数字"),
], ids=["a-pdf", "a-broken-png", "blank", "black"])
def test_a_bad_picture_is_refused_in_zh_naming_it(tmp_path, picture, says):
    board, served = board_on(tmp_path / "model", tmp_path)
    served.model.prepare = lambda data, name: mnist_app.prepared_pixels(data, name=name)  # the app's, as served
    answer = Asked(board, "POST", "/board/predict", picture,  # as the page asks: the name in X-Filename
                   headers=(OWN_HOST, ZH, (b"x-filename", urllib.parse.quote("照片 1.png").encode())))
    assert answer.status == 400
    found = json.loads(answer.body)
    assert found["zh"].startswith("照片 1.png：") and says in found["zh"], found
    assert words_left(found["zh"], "照片 1.png") == [] and not FALLBACK.search(found["zh"]), found


@pytest.mark.quick
def test_a_failed_learns_line_comes_with_its_chinese_twin(tmp_path):
    board, served = board_on(tmp_path / "model", tmp_path)
    (tmp_path / "model").mkdir()
    served.learning.job = {**served.learning.job, "state": "failed", "folder": str(tmp_path / "model"),
                           "line": f"error: mnist_generateds.py exited with status 1 ({tmp_path}/my_digits/"
                                   f"000001_8.jpg: cannot identify it); nothing learned; {tmp_path / 'model'} is "
                                   "unchanged"}
    status = json.loads(Asked(board, "GET", "/board/learn").body)
    assert status["state"] == "failed" and status["line_zh"] == \
        f"mnist_generateds.py 以状态 1 退出；什么也没学到；{tmp_path / 'model'} 没有改动"
    served.learning.job = {**served.learning.job, "state": "idle", "line": ""}
    assert json.loads(Asked(board, "GET", "/board/learn").body)["line_zh"] == ""

@pytest.mark.quick
def test_without_zh_asked_the_error_form_is_unchanged_and_every_line_has_a_chinese_form(tmp_path):
    board, _ = board_on(tmp_path / "model", tmp_path)
    answer = Asked(board, "POST", "/board/learn")
    assert set(json.loads(answer.body)) == {"error"}  # TF Serving's clients and scripts: {"error"} alone
    for line, status in (("model: something no phrase knows yet", 409), ("the moon is not here", 500)):
        said = zh.twin(line, status)  # a line with no phrase: said by its kind, never half English
        assert words_left(said) == [] and said.endswith(f"（HTTP {status}）")


@pytest.mark.quick
def test_the_playbacks_refusals_come_in_zh(tmp_path):
    """history.js shows them (an export served, a folder without snapshots, a snapshot that cannot be read): said
    in Chinese with their names and commands kept, not by their kind alone."""
    lines = []
    for form, source in (("LiteRT", "export/mnist.tflite"), ("checkpoint", str(tmp_path / "model" / "mnist_model-5"))):
        served = types.SimpleNamespace(form=form, predictor=types.SimpleNamespace(source=source))
        with pytest.raises(BoardError) as refused:
            playback.snapshots_of(served)
        lines.append(str(refused.value))
    snapshot = tmp_path / "model" / "history" / "mnist_model-5"
    with pytest.raises(BoardError) as refused:
        playback.read_pairs(str(snapshot), networks.MLP)
    lines.append(str(refused.value))
    for line, says in zip(lines, ("不保存训练历史", "这里没有训练历史", "无法读取这个训练历史快照")):
        twin = zh.twin(line, 409)
        assert says in twin and not FALLBACK.search(twin) and words_left(twin) == [], (line, twin)
        assert twin.startswith(line.split(": ")[0] + "："), (line, twin)
    assert "mnist_app.py --serve --model-dir DIR" in zh.twin(lines[0], 409)

@pytest.fixture(scope="module")
def served_export(exported_workdir, tmp_path_factory):
    """`mnist_app.py --serve` on a copy of the .tflite export alone, in a folder of its own (Chinese and a space in
    its path): no checkpoint folder to learn into, an empty keep store."""
    work = tmp_path_factory.mktemp("zh") / "手写 板"
    (work / "export").mkdir(parents=True)
    shutil.copy(exported_workdir / "export" / "mnist.tflite", work / "export" / "mnist.tflite")
    started = Server(str(work), "--model-dir", os.path.join("export", "mnist.tflite"))
    yield started
    started.stop()


def test_the_page_in_zh_shows_a_refused_picture_and_a_refused_learn_with_no_english_word(browser, served_export):
    page = open_page(browser, served_export, locale="zh-CN")
    before = answers(page)
    drop(page, b"%PDF-1.4 not a picture", "笔记.pdf", "image/png")
    wait_answer(page, before)
    shown = page.text_content("#error")
    assert shown.startswith("无法识别：笔记.pdf：是 PDF 文件，不是图片文件") and words_left(shown, "笔记.pdf") == [], shown
    page.wait_for_selector("#learn:not([hidden])")
    with page.expect_response(lambda r: r.url.endswith("/board/learn") and r.request.method == "POST") as posted:
        page.click("#learn")
    refused = posted.value.json()
    page.wait_for_function("document.getElementById('learn-progress').textContent.startsWith('无法学习：')")
    line = page.text_content("#learn-progress")
    assert line == f"无法学习：{refused['zh']}" and words_left(line) == [], line
    assert not FALLBACK.search(line), line
    page.click('#lang [data-lang="en"]')  # the same refusals said again in English, with no new request
    assert page.text_content("#error").startswith("Cannot read it: 笔记.pdf: ")
    assert page.text_content("#learn-progress") == f"Cannot learn: {refused['error']}"
    page.context.close()


@pytest.mark.quick
@pytest.mark.parametrize("sent", [urllib.parse.quote("笔记 1.py").encode(), "笔记 1.py".encode("utf-8"),
                                  b"caf\xe9 1.py"], ids=["percent-encoded", "raw-utf-8", "raw-latin-1"])
def test_an_x_filename_percent_encoded_or_raw_utf8_names_the_picture_as_sent(tmp_path, sent):
    """curl -H "X-Filename: 笔记 1.py" sends the name's UTF-8 bytes, the page encodeURIComponent's: both name it
    (headers are read as latin-1 bytes; a name that is not UTF-8 stays latin-1)."""
    board, served = board_on(tmp_path / "model", tmp_path)
    served.model.prepare = lambda data, name: mnist_app.prepared_pixels(data, name=name)  # the app's, as served
    answer = Asked(board, "POST", "/board/predict", b"%PDF-1.4 not a picture", headers=(OWN_HOST, (b"x-filename", sent)))
    name = "café 1.py" if sent.startswith(b"caf") else "笔记 1.py"
    assert answer.status == 400 and json.loads(answer.body)["error"].startswith(f"{name}: "), answer.body

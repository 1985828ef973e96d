"""The eighth audit of issue #53's §5-§9 and §11 kinds: cases of each kind the earlier tests did not hold.

TF Serving's REST API (§6): a version written with leading zeros (/versions/07) is that version, as TF Serving reads
it (a whole number); a Content-Encoding header whose name comes in capitals (an ASGI server that passes names as
sent) is read; instances that mix named objects and plain rows are refused naming the mix. Clusters (§9): a
HOST:PORT listed twice in one host list is refused, under any spelling of this machine's loopback or the port. A
second Ctrl-C during a checkpoint save stops the run and leaves the last whole checkpoint in service (§9). A learn's
silent script gets its tick lines as they fall due (§11), and its output is read whole whatever bytes it holds (§7).
The model line's zh form names say it in Chinese (§11, without a browser). In Chromium (§5, §11): the board in the
dark scheme shows the pixels it sends; a photo chosen with the picker is named. Each test fails on a bug planted in
the product, or on the code before its fix (docs/tests.md, "Eighth audit: §5-§9, §11").
"""
import gzip
import json
import os

import pytest

from test_board_browser import browser, open_page, server  # noqa: F401 (fixtures)
from test_board_routes import Asked
from test_server_faults import Recording, board_of, posted, rows_of


def instances(rows):
    return json.dumps({"instances": [list(map(float, row)) for row in rows]}).encode()


@pytest.mark.quick
@pytest.mark.parametrize("version", ["07", "007", "0000007"])
def test_a_version_written_with_leading_zeros_is_that_version(version):
    recording = Recording()
    board, body = board_of(recording), instances(rows_of(1))
    plain = posted(board, body, path="/v1/models/mnist/versions/7:predict")
    zeros = posted(board, body, path=f"/v1/models/mnist/versions/{version}:predict")
    assert (zeros.status, zeros.body) == (200, plain.body), zeros.body
    for tail in ("", "/metadata"):
        got = Asked(board, "GET", f"/v1/models/mnist/versions/{version}{tail}")
        assert (got.status, got.body) == (200, Asked(board, "GET", f"/v1/models/mnist/versions/7{tail}").body)
    assert posted(board, body, path="/v1/models/mnist/versions/070:predict").status == 404  # 70, not 7


@pytest.mark.quick
@pytest.mark.parametrize("name", [b"Content-Encoding", b"CONTENT-ENCODING"])
def test_a_content_encoding_header_named_in_capitals_is_read(name):
    recording = Recording()
    board, body = board_of(recording), instances(rows_of(2))
    plain = posted(board, body)
    for value in (b"gzip", b"GZIP"):
        zipped = posted(board, gzip.compress(body), [(name, value)])
        assert (zipped.status, zipped.body) == (200, plain.body), (name, value, zipped.body)
    refused = posted(board, body, [(name, b"br")])
    assert refused.status == 415 and "Content-Encoding 'br' is not taken" in refused.error()
    assert sum(map(len, recording.inputs)) == 3 * 2  # the plain body and the two gzipped, 2 rows each; not br


@pytest.mark.quick
def test_instances_that_mix_named_objects_and_plain_rows_are_refused_naming_the_mix():
    recording = Recording()
    board, row = board_of(recording), rows_of(1)[0].tolist()
    for mixed in ([{"images": row}, row], [row, {"images": row}]):
        answer = posted(board, json.dumps({"instances": mixed}).encode())
        assert answer.status == 400, answer.body
        assert answer.error().startswith('JSON Value: "instances" mixes objects ({"images": [...]}) and plain rows'), \
            answer.error()
    assert not recording.inputs


@pytest.mark.quick
@pytest.mark.parametrize("hosts", ["127.0.0.1:2222,127.0.0.1:2222", "localhost:2222,127.0.0.1:2222",
                                   "127.0.0.1:2222,127.0.0.1:02222", "127.0.0.1:2223,[::1]:2222,localhost:2222"])
def test_a_host_port_listed_twice_in_one_list_under_any_spelling_is_refused(hosts):
    from mnistkit import distributed
    with pytest.raises(ValueError) as refused:
        distributed.parse_hosts(hosts, "--ps_hosts")
    assert str(refused.value) == "--ps_hosts: 127.0.0.1:2222 is listed twice: give each task its own HOST:PORT"
    assert distributed.parse_hosts("127.0.0.1:2222,127.0.0.1:2223,localhost:2224", "--ps_hosts") == [
        "127.0.0.1:2222", "127.0.0.1:2223", "localhost:2224"]


def shown_board(page):
    """The board's pixels as the screen shows them (a screenshot of its content box, without the border), gray,
    scaled to the canvas's 280x280: uint8 [280, 280]."""
    import io
    import numpy as np
    from PIL import Image
    box = page.evaluate("(() => { const b = document.getElementById('board'), r = b.getBoundingClientRect();"
                        " return {x: r.left + b.clientLeft, y: r.top + b.clientTop, width: b.clientWidth,"
                        " height: b.clientHeight}; })()")
    shot = Image.open(io.BytesIO(page.screenshot(clip=box))).convert("L")
    return np.asarray(shot.resize((280, 280), Image.BILINEAR))


@pytest.mark.parametrize("scheme", [{"color_scheme": "dark"}, {"color_scheme": "dark", "forced_colors": "active"}],
                         ids=["dark", "dark-forced"])
def test_in_the_dark_scheme_the_board_shows_the_pixels_it_sends(browser, server, scheme):  # noqa: F811
    """Dark ink on a light board on the screen, where the canvas sends dark ink on light: a colour scheme (or a
    stylesheet's dark rules) that inverts how the board is shown, and not what it sends, shows the person another
    picture than the one read (darkreader #14385). The ink's IoU, screen against canvas, is at least 0.9."""
    from test_board_pixels_browser import SAME_IOU, draw, ink_iou, page_zoom
    page = open_page(browser, server, locale="en-US", **page_zoom(1))
    page.emulate_media(**scheme)
    try:
        pixels, digit, board = draw(page)
        shown = shown_board(page)
        dark = lambda p: p < 128  # noqa: E731
        assert 0 < dark(board).mean() < 0.5, "the canvas holds no drawing of dark ink on white"
        assert ink_iou(shown, board, dark) >= SAME_IOU, (
            f"{scheme}: the screen shows {dark(shown).mean():.0%} of the board dark, the canvas sends "
            f"{dark(board).mean():.0%}")
    finally:
        page.context.close()


def test_a_learns_script_silent_for_a_few_seconds_gets_its_ticks_as_they_fall_due(monkeypatch):
    """learn.run's ticker says what the learn does each TICK_SECS a script prints nothing (issue 53: a line that sat
    still for 30 s): with TICK_SECS of 1 s, a script silent for 4 s gets at least two such lines, each as it
    falls due, not only once the script has ended."""
    import time
    from mnistkit import learn
    monkeypatch.setattr(learn, "TICK_SECS", 1)
    lines = []
    watch = learn.Watch(lambda line: lines.append((time.monotonic(), line)))
    watch.begin("preparing")
    watch.doing("generating")
    started = time.monotonic()
    learn.run(["-c", "import time; time.sleep(4)"], watch, "nothing changed")
    ended = time.monotonic()
    ticks = [(at, line) for at, line in lines if line.startswith(f"preparing: {learn.DOING['generating']} (")]
    assert len(ticks) >= 2, (ended - started, lines)
    assert all(at < ended - 0.5 for at, _ in ticks[:2]), (ended - started, lines)  # said while the script ran


@pytest.mark.quick
def test_a_learns_script_printing_bytes_that_are_not_utf8_or_a_long_zh_line_is_read_whole():
    """A learn's script whose output holds bytes that are not UTF-8 (a path named in GBK, as TensorFlow's C++ log
    prints a Chinese Windows folder's name) is read on, those bytes as escapes, not ended by a UnicodeDecodeError;
    a zh line longer than the pipe's buffer is read whole, no character cut where a read ends."""
    from mnistkit import learn
    lines = []
    watch = learn.Watch(lines.append)
    watch.begin("preparing")
    script = ("import sys; out = sys.stdout.buffer; out.write(b'reading \\xd6\\xd0\\xce\\xc4/model\\n'); "
              "out.write(('\\u5b66\\u4e60' * 20000 + '\\n').encode('utf-8')); out.write(b'done\\n'); out.flush()")
    learn.run(["-c", script], watch, "nothing changed")
    assert lines == ["reading \\xd6\\xd0\\xce\\xc4/model", "学习" * 20000, "done"], [line[:40] for line in lines]


def test_a_photo_chosen_with_the_picker_is_named_and_replaces_the_drawing(browser, server, tmp_path):  # noqa: F811
    """A photo chosen with the file picker (not dropped) is named beside it, as a dropped one is (issue 53 §11: a
    chosen photo's name was not shown), and the drawing under it is cleared; a stroke after it names none."""
    from test_board_browser import ONE, answers, draw_with_mouse, ink, wait_answer
    from test_board import drawn, png_bytes
    photo = tmp_path / "我的 digit.png"
    photo.write_bytes(png_bytes(drawn(4, seed=2)))
    page = open_page(browser, server, locale="en-US")
    try:
        draw_with_mouse(page, ONE)
        before = answers(page)
        page.set_input_files("input[type=file]", str(photo))
        assert wait_answer(page, before) == ("4", "")
        assert page.text_content("#photo-name") == "我的 digit.png"
        assert not ink(page, 0.5, 0.5)  # the stroke drawn before is gone
        draw_with_mouse(page, ONE)
        assert page.text_content("#photo-name") == ""
    finally:
        page.context.close()


@pytest.mark.quick
def test_a_second_ctrl_c_during_a_checkpoint_save_stops_the_run_and_leaves_the_last_whole_checkpoint_in_service(
        tmp_path):
    """A Ctrl-C that comes while a checkpoint is saved (the second one: the first only asks the loop to stop and
    save) ends the run as a KeyboardInterrupt (exit 130), not taken for a failed save (a SaveFailed, exit 1, and
    tries again); the folder's index still names the checkpoint saved before, whole."""
    from conftest import new_saver, save_checkpoint
    from mnistkit import saving
    from tf_compat import tf
    model_dir = str(tmp_path / "model")
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        tf.compat.v1.Variable(1.0, name="w")
        sess.run(tf.compat.v1.global_variables_initializer())
        saver, written = new_saver(5), set()
        first = save_checkpoint(sess, saver, model_dir, 100, written)

        def cut(*args, **kwargs):
            raise KeyboardInterrupt
        tries = []
        with pytest.raises(KeyboardInterrupt):
            for attempt in saving.save_attempts(sess, saver, model_dir, 200, written):
                tries.append(attempt)
                with attempt:
                    cut()
        assert len(tries) == 1
    assert tf.train.latest_checkpoint(model_dir) == first
    assert all(os.path.exists(first + ending) for ending in (".index", ".meta", ".data-00000-of-00001"))


@pytest.mark.quick
def test_the_model_lines_form_names_in_zh_are_said_in_chinese():
    """board.js's FORMS, the model line's names of each form a model comes in (the model line and inside.js's
    headers read them: boardFormName), hold a zh name for every form the server names, with no English word
    left but the names that stay as they are (issue 53 §11: "checkpoint" untranslated in the zh Inside headers).
    test_zh_complete.py reads the TEXT tables only."""
    from test_zh_complete import STATIC, english_words, entries, strings, tokens
    with open(os.path.join(STATIC, "board.js"), encoding="utf-8") as f:
        source = f.read()
    start = source.index("const FORMS = {") + len("const FORMS = ")
    found, depth = [], 0
    for token in tokens(source[start:]):
        depth += {("punct", "{"): 1, ("punct", "}"): -1}.get(token, 0)
        found.append(token)
        if depth == 0:
            break
    zh = {key: strings(value[1:-1] if value[0] == ("punct", "{") else value)
          for key, value in entries(entries(found[1:-1])["zh"][1:-1]).items()}
    assert set(zh) == {"checkpoint", "SavedModel", "LiteRT"}, zh
    untranslated = {key: words[0] for key, words in zh.items() if english_words(words[0])}
    assert untranslated == {}


@pytest.mark.quick
def test_a_stop_held_during_a_long_call_leaves_room_in_the_3_seconds_a_ctrl_c_may_take():
    """A Ctrl-C during TensorFlow's import (or another long C call holding_signals wraps) ends the process
    HELD_STOP_SECS after it, if the call has not ended by then: issue 53 §9 allows 3 s from the Ctrl-C to the
    exit, and the rest of them go to the signal's delivery and the process's end on a loaded machine. The tests
    of Ctrl-C at 0.2-2 s check the order of events, not the time (test_server_faults.ctrl_c_after), so a grace of
    10 s went through them; the grace itself is held here to half the 3 s."""
    import tf_compat
    assert 0 < tf_compat.HELD_STOP_SECS <= 3 / 2

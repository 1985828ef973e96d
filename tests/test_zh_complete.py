"""zh is complete (issue #53 §11): every word the board's page says in English it also says in Chinese.

The page's words are in string tables of its scripts (mnistkit/board/static/): board.js's TEXT = {en: {...},
zh: {...}} and the panels' TEXT = {key: [English, 中文]} (inside.js, why.js, history.js). They are read here
with a small reader of JavaScript's string literals (no browser), and each entry is checked: a zh twin for
every en entry and no zh entry without its en one, and no English word left untranslated in a zh string (a
name that stays as it is, like ReLU or MNIST, and code, like global_step or mnist_app.py, excepted). The
index.html words the page replaces (data-text) must be entries of the table. What the scripts build outside
the tables is checked in Chromium (test_inside_browser's zh page).
"""
import glob
import os
import re

import pytest

from conftest import ROOT

STATIC = os.path.join(ROOT, "mnistkit", "board", "static")
PANELS = ("inside.js", "why.js", "history.js")
# English words a zh string may hold as they are: names of things (MNIST, TensorFlow), the network's terms the
# course's code uses (ReLU, logit, softmax), a key's name (Shift), units and file kinds. Code (a word with _, .,
# -, (, or digits: global_step, mnist_app.py, --serve, forward(), b1) is always allowed.
NAMES = {"MNIST", "TensorFlow", "TFRecords", "ReLU", "logit", "logits", "softmax", "Shift", "HTTP", "SavedModel",
         "LiteRT", "tflite", "x", "y", "d", "dx"}
GLOSS = re.compile(r"(?<=[\u4e00-\u9fff])\s*[(（][A-Za-z ]+[)）]")  # 检查点 (checkpoint): the English after its zh
WORD = re.compile(r"(?<![A-Za-z0-9_.\-{])[A-Za-z][A-Za-z0-9_]*(?:\(\))?(?:[.\-][A-Za-z0-9_]+)*")


def tokens(source):
    """JavaScript source as tokens: ("str", value) for string literals (escapes read), ("name", word),
    ("punct", character); comments and blanks dropped. Template literals are read as strings."""
    found, i = [], 0
    while i < len(source):
        c = source[i]
        if source.startswith("//", i):
            i = source.find("\n", i) if "\n" in source[i:] else len(source)
        elif source.startswith("/*", i):
            i = source.index("*/", i) + 2
        elif c in "\"'`":
            j, value = i + 1, []
            while source[j] != c:
                if source[j] == "\\":
                    j += 1
                    value.append({"n": "\n", "t": "\t"}.get(source[j], source[j]))
                else:
                    value.append(source[j])
                j += 1
            found.append(("str", "".join(value)))
            i = j + 1
        elif c.isalnum() or c in "_$":
            j = i
            while j < len(source) and (source[j].isalnum() or source[j] in "_$"):
                j += 1
            found.append(("name", source[i:j]))
            i = j
        elif c.isspace():
            i += 1
        else:
            found.append(("punct", c))
            i += 1
    return found


def table_tokens(name):
    """The tokens of `const TEXT = {...}` in static/name, its outer braces excluded."""
    with open(os.path.join(STATIC, name), encoding="utf-8") as f:
        source = f.read()
    start = source.index("const TEXT = {") + len("const TEXT = ")
    found, depth = [], 0
    for token in tokens(source[start:]):
        if token == ("punct", "{") or token == ("punct", "["):
            depth += 1
        elif token == ("punct", "}") or token == ("punct", "]"):
            depth -= 1
        found.append(token)
        if depth == 0:
            return found[1:-1]
    raise AssertionError(f"{name}: TEXT never closes")


def entries(found):
    """{key: [value, ...]} of an object literal's tokens (its braces excluded): each value a string (parts joined
    with + read as one), a list of such strings, or None for anything else (a function)."""
    table, i = {}, 0
    while i < len(found):
        key = found[i][1]
        assert found[i + 1] == ("punct", ":"), (key, found[i + 1])
        i += 2
        depth, value = 0, []
        while i < len(found) and not (depth == 0 and found[i] == ("punct", ",")):
            kind, text = found[i]
            if kind == "punct" and text in "{[(":
                depth += 1
            elif kind == "punct" and text in "}])":
                depth -= 1
            value.append(found[i])
            i += 1
        i += 1
        table[key] = value
    return table


def strings(value):
    """The strings of one entry's tokens: a list (an array's items, each `a + b` joined), or None when the value
    is not made of string literals alone (a function)."""
    if value and value[0] == ("punct", "["):
        value = value[1:-1]
    items, current = [], ""
    for kind, text in value:
        if kind == "str":
            current += text
        elif (kind, text) == ("punct", ","):
            items.append(current)
            current = ""
        elif (kind, text) != ("punct", "+"):
            return None
    return items + [current]


def pairs():
    """[(where, key, English, 中文 or None)] of every entry of the page's string tables."""
    found = []
    board = entries(table_tokens("board.js"))
    en, zh = (entries(board[language][1:-1]) for language in ("en", "zh"))
    for key in sorted(set(en) | set(zh)):
        words = [strings(table[key]) if key in table else [None] for table in (en, zh)]
        if words[0] is None or words[1] is None:  # a function in both (named): not words
            continue
        found.append(("board.js", key, words[0][0], words[1][0]))
    for name in PANELS:
        for key, value in entries(table_tokens(name)).items():
            words = strings(value)
            assert words is not None, f"{name}: TEXT.{key} is not [English, 中文]"
            found.append((name, key, words[0], words[1] if len(words) == 2 else None))
    return found


def english_words(text):
    """The English words of a zh string that are neither code nor one of NAMES ({placeholders} and glosses
    skipped)."""
    text = GLOSS.sub(" ", re.sub(r"\{[^}]*\}", " ", text))
    return [w for w in WORD.findall(text)
            if w not in NAMES and not re.search(r"[_.\-()0-9]", w)]


@pytest.mark.quick
def test_the_reader_finds_every_table_and_its_entries():
    found = pairs()
    assert {where for where, *_ in found} == {"board.js", *PANELS}
    by_key = {(where, key): (en, zh) for where, key, en, zh in found}
    assert by_key[("inside.js", "open")] == ("See inside", "看看内部")
    assert by_key[("board.js", "predict")] == ("Predict", "识别")
    assert by_key[("history.js", "intro")][0].startswith("The snapshots mnist_backward.py --history kept while it "
                                                         "trained. Move the slider")  # a + b read as one string
    assert english_words("检查点 (checkpoint) 与 global_step、mnist_app.py --serve 和 ReLU") == []
    assert english_words("784-500-10 · 训练步数 global_step 2000 · checkpoint：max 1.5") == ["checkpoint", "max"]


@pytest.mark.quick
def test_every_english_entry_has_its_chinese_twin_and_each_says_it_in_chinese():
    missing = [f"{where}: {key}" for where, key, en, zh in pairs() if not zh or en is None]
    untranslated = [f"{where}: {key}: {zh!r} ({', '.join(english_words(zh))})" for where, key, en, zh in pairs()
                    if zh and english_words(zh)]
    assert missing == [] and untranslated == []


@pytest.mark.quick
def test_the_pages_own_words_are_entries_of_both_languages():
    board = entries(table_tokens("board.js"))
    en, zh = (set(entries(board[language][1:-1])) for language in ("en", "zh"))
    with open(os.path.join(STATIC, "index.html"), encoding="utf-8") as f:
        keys = set(re.findall(r'data-text="([^"]+)"', f.read()))
    assert keys and keys - en == set() and keys - zh == set()


@pytest.mark.quick
def test_every_script_of_the_page_is_read():
    """A new script with words of its own is added to PANELS (or its words go into one of the tables)."""
    scripts = {os.path.basename(p) for p in glob.glob(os.path.join(STATIC, "*.js"))}
    assert scripts == {"board.js", *PANELS}


# A learn's lines as the board shows them (learn.Watch.shown: its staging STAGE, the learned checkpoint named):
# GET /board/learn's "line", whose "line_zh" (teach.line_zh) the page in zh shows.
STAGE = "/tmp/mnist-learn-zh"
LEARN_LINES = [
    "learning from 5 kept digits of my_digits into ./model/",
    "After 7100 training steps, loss on training batch is 0.2.",
    f"done at step 7832; checkpoint saved to {STAGE}/mnist_model-7832",
    "After 7032 training steps, test accuracy = 0.9311 (model/mnist_model-7032, data/mnist_test.tfrecords)",
    f"After 7032 training steps, test accuracy = 0.6 (model/mnist_model-7032, {STAGE}/data/mnist_test.tfrecords)",
    f"After 7832 training steps, test accuracy = 0.9345 ({STAGE}/mnist_model-7832, data/mnist_test.tfrecords)",
    f"After 7832 training steps, test accuracy = 1 ({STAGE}/mnist_model-7832, {STAGE}/data/mnist_test.tfrecords)",
]


@pytest.mark.quick
@pytest.mark.parametrize("line", LEARN_LINES)
def test_a_running_learns_line_comes_in_chinese_with_no_english_phrase_among_its_names(line):
    """A phrase that a learn puts in a line for a path ("the learned checkpoint", "the learn's working folder") is
    said in Chinese too, also where it stands as a name of a phrase's (the evaluator's checkpoint): before, the
    check's line came as `第 8500 步的测试准确率 = 1（the learned checkpoint，学习用的临时文件夹）`."""
    from mnistkit import learn
    from mnistkit.board import teach
    watch = learn.Watch(out=lambda line: None)
    watch.temporary(STAGE)
    watch.name(f"{STAGE}/mnist_model-7832", learn.LEARNED)
    watch.kept_scored(f"{STAGE}/data/mnist_test.tfrecords", 5)
    shown = watch.shown(line)
    said = teach.line_zh({**teach.IDLE, "state": "running", "stage": "checking", "line": shown, "step": 7832,
                          "steps": 7832})
    words = english_words(" ".join(w for w in said.split() if "/" not in w))  # paths are names
    assert said and re.search(r"[\u4e00-\u9fff]", said) and words == [], (shown, said)

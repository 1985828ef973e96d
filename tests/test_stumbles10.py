"""A new user's tenth stumbles, each by kind: docs/tests.md, "A new user's tenth stumbles (test_stumbles10.py)".

1. A folder or file the command line names that cannot work (an empty ./model/, a model folder's own history/) is
   refused before TensorFlow's import, by every script.
2. A mistyped path is bad input in every script: `error: <line>`, exit 1 (argparse's 2 is for the flags as typed).
3. A new --model-dir one slip from any folder beside it (`modle` by an empty model/ made by hand) is refused.
4. A model folder's own history/ or learns/<n>/ given as --model-dir names the model folder, in every script.
"""
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, run_main, shown, wait_limit
from test_stumbles9 import with_parts

HISTORY_REFUSED = ("error: model/history holds the history snapshots of the model folder model "
                   "(mnist_backward.py --history): give model")
LEARN_REFUSED = ("error: model/learns/1 holds learn 1's checkpoint, set aside by mnist_learn.py, of the model folder "
                 "model: give model")


def refused_before_tensorflow(script, *args, cwd):
    """(exit status, stderr, whether TensorFlow was imported) of `script`'s main(args) run in a process of its own
    in cwd: the check of sys.modules at its end, no timing."""
    code = ("import importlib, os, sys\n"
            f"sys.path.insert(0, {ROOT!r})\n"
            f"status = importlib.import_module({os.path.splitext(script)[0]!r}).main({list(args)!r})\n"
            "print('tensorflow imported:', 'tensorflow' in sys.modules, flush=True)\n"
            "os._exit(status or 0)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=wait_limit(120), stdin=subprocess.DEVNULL)
    return done.returncode, done.stderr, done.stdout.strip().splitlines()[-1] == "tensorflow imported: True"


@pytest.mark.quick
@pytest.mark.parametrize("script, args, line", [
    ("mnist_test.py", ["--once"], "error: ./model/: no checkpoint found; train first with `python {}`"),
    ("mnist_lenet5_test.py", ["--once"], "error: ./model_lenet5/: no checkpoint found; train first with `python {}`"),
])
def test_an_empty_model_folder_is_refused_before_tensorflow(script, args, line, tmp_path):
    """Fails before the fix: `mnist_test.py --once` on an empty ./model/ checked the test records whole first
    (TensorFlow's import, about 5 s) and only then said there was no checkpoint."""
    (tmp_path / "data").mkdir()
    (tmp_path / "model").mkdir()
    (tmp_path / "model_lenet5").mkdir()
    status, err, imported = refused_before_tensorflow(script, *args, cwd=tmp_path)
    assert (status, err) == (1, line.format(shown(script.replace("_test.py", "_backward.py"))) + "\n"), err
    assert not imported


PART_CASES = [  # (script, args): each given model/history, then model/learns/1, as --model-dir
    ("mnist_test.py", ["--once"]), ("mnist_lenet5_test.py", ["--once"]), ("mnist_app.py", ["seven.png"]),
    ("mnist_app.py", []), ("mnist_app.py", ["--serve", "--port", "0"]), ("mnist_export.py", []),
    ("mnist_backward.py", ["--steps", "1"]), ("mnist_lenet5_backward.py", ["--steps", "1"]),
    ("mnist_cluster.py", ["--steps", "1"]), ("mnist_learn.py", []), ("mnist_learn.py", ["--undo"]),
]


@pytest.mark.quick
@pytest.mark.parametrize("script, args", PART_CASES)
@pytest.mark.parametrize("part, line", [("model/history", HISTORY_REFUSED), ("model/learns/1", LEARN_REFUSED)])
def test_a_model_folders_own_part_as_model_dir_names_the_model_folder_in_every_script(script, args, part, line,
                                                                                        tmp_path):
    """Fails before the fix: mnist_app.py served and predicted with model/history's old snapshot without a word,
    mnist_backward.py trained into it, mnist_test.py and mnist_export.py took its snapshots (no .meta) for a damaged
    checkpoint after TensorFlow's import, mnist_learn.py learned into a set-aside learn."""
    model = with_parts(tmp_path)
    (tmp_path / "data").mkdir()
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    status, err, imported = refused_before_tensorflow(script, "--model-dir", part, *args, cwd=tmp_path)
    assert (status, err.splitlines()[-1:]) == (1, [line]), err
    assert not imported
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before  # nothing written
    assert model.is_dir()


TYPO = "modle: no such folder; did you mean model? (to {} there, make the folder first: mkdir modle)"


@pytest.mark.quick
@pytest.mark.parametrize("script, args, meant", [
    ("mnist_backward.py", ["--steps", "1"], "start a new model"),
    ("mnist_lenet5_backward.py", ["--steps", "1"], "start a new model"),
    ("mnist_cluster.py", ["--steps", "1"], "start a new model"),
    ("mnist_test.py", [], "watch a model still to be trained"),
])
def test_a_new_model_dir_one_slip_from_an_empty_folder_is_refused_as_bad_input(script, args, meant, tmp_path):
    """Fails before the fix: beside a model/ made by hand and still empty, `--model-dir modle` trained a new model
    into modle/ without a word (only a folder holding a model counted as the one meant); and the trainers' refusal
    beside a trained model/ exited 2 with argparse's `mnist_backward.py: error:`, where the app and the evaluator
    say a folder not there with exit 1."""
    (tmp_path / "model").mkdir()
    (tmp_path / "data").mkdir()
    done = run_main(script, "--model-dir", "modle", *args, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"error: {TYPO.format(meant)}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "model"]


@pytest.mark.quick
def test_a_keep_dir_one_slip_from_a_folder_is_bad_input_too(tmp_path):
    """Fails before the fix: `--serve --keep-dir my_digts` beside my_digits/ exited 2 (argparse's usage error),
    a mistyped --model-dir 1."""
    (tmp_path / "my_digits").mkdir()
    done = run_main("mnist_app.py", "--serve", "--keep-dir", "my_digts", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, "error: my_digts: no such folder; did you mean my_digits? (to keep "
                                                 "digits in a new folder, make the folder first: mkdir my_digts)\n")


BENCH = os.path.join(ROOT, "bench")
BENCH_SCRIPTS = sorted(name for name in os.listdir(BENCH) if name.endswith(".py") and name != "course_baseline.py")


@pytest.mark.parametrize("script", BENCH_SCRIPTS)
def test_a_bench_script_says_a_wrong_flag_in_one_line(script, tmp_path):
    """Fails before the fix: `python bench/board.py --no-such-flag` printed argparse's whole usage block (up to 11
    lines) before its error, where every course script says one line (cli.new_parser) naming the option meant."""
    done = subprocess.run([sys.executable, os.path.join(BENCH, script), "--no-such-flag"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=wait_limit(120), stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(f"{script}: error: "), done.stderr


@pytest.mark.quick
@pytest.mark.parametrize("args, typed", [([], "1\nnope.png\n"), (["nope.png"], "")])
def test_a_tflite_model_is_loaded_once_at_the_prompts(args, typed, tmp_path, monkeypatch):
    """Fails before the fix: at the course's prompts a .tflite --model-dir was loaded twice, once by model_loader's
    check before the first prompt and again by predictor_for after the answers (and at --serve, by the board)."""
    import types
    import mnist_forward
    from mnistkit import deployed
    loads = []

    def load(path):
        loads.append(path)
        return types.SimpleNamespace(network=mnist_forward.NETWORK, source=path, inside=None, record=None,
                                     predict=lambda pictures: None)
    monkeypatch.setattr(deployed, "load", load)
    (tmp_path / "mnist.tflite").write_bytes(b"TFL3")
    done = run_main("mnist_app.py", "--model-dir", "mnist.tflite", *args, cwd=tmp_path, input=typed)
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == "error: nope.png: file not found", done.stderr
    assert loads == ["mnist.tflite"]


LEARNED = "learned: model/mnist_model-2200 (from model/mnist_model-2000); go back with `{}`"


@pytest.mark.quick
def test_a_board_learn_that_ended_keeps_its_last_line(tmp_path, monkeypatch):
    """Fails before the fix: once a board learn ended, GET /board/learn's "line" was "" (the page shows the check from
    its numbers, but a reader of the JSON, or a script polling it, had no word of how it ended)."""
    import json
    import time
    import types
    import numpy as np
    from mnistkit import cli, keep, learn
    from mnistkit.board import teach
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    for step in (2000, 2200):
        for end in (".index", ".meta", ".data-00000-of-00001"):
            (model_dir / f"mnist_model-{step}{end}").write_bytes(b"")
    kept = keep.KeptDigits(str(tmp_path / "my_digits"))
    digit = np.zeros((28, 28), np.uint8)
    digit[6:22, 12:16] = 255  # a stroke: a 1 kept as 3 (the store refuses a blank)
    kept.keep(digit, 3)
    undo = cli.command("mnist_learn.py", "--undo", "--model-dir", "model")
    line = LEARNED.format(undo)

    def learned(plan, watch):  # a learn as mnistkit.learn ends one: promoted into the record, its last line said
        (model_dir / "schedule.json").write_text(json.dumps({"learns": [
            {"learn": 1, "state": "promoted", "before": "mnist_model-2000", "after": "mnist_model-2200",
             "changed": time.time()}]}), encoding="utf-8")
        watch.say(line)
        return str(model_dir / "mnist_model-2200")
    monkeypatch.setattr(learn, "learn", learned)
    served = types.SimpleNamespace(form="checkpoint", predictor=types.SimpleNamespace(
        source=str(model_dir / "mnist_model-2000")))
    monkeypatch.chdir(tmp_path)
    learning = teach.Learning(kept)
    learning.start(served)
    learning.thread.join(wait_limit(30))
    status = learning.status(served)
    assert (status["state"], status["line"]) == ("done", line)
    assert status["line_zh"] == (f"学好了：model/mnist_model-2200（从 model/mnist_model-2000 学起）；用 "
                                 f"`{undo}` 可以退回")


def learned_in_service(model, kept):
    """Write into model's record (schedule.json, as with_parts leaves it) that learn 1 promoted mnist_model-1000
    (from mnist_model-2000) on kept's digits as they are now (promotion.known_of): nothing new since."""
    import json
    import time
    from mnistkit import promotion
    record = json.loads((model / "schedule.json").read_text(encoding="utf-8"))
    record["learns"] = [{"learn": 1, "state": "promoted", "before": "mnist_model-2000", "after": "mnist_model-1000",
                         "changed": time.time(), "settings": {"known": promotion.known_of(kept, kept.entries(),
                                                                                            str(model))}}]
    (model / "schedule.json").write_text(json.dumps(record), encoding="utf-8")


@pytest.mark.quick
def test_a_terminal_learn_with_nothing_new_says_so_and_trains_nothing(tmp_path, monkeypatch):
    """Fails before the fix: a second `mnist_learn.py`, no digit kept, removed or relabelled since the learn in
    service, trained the model on the same digits again (minutes) without a word that nothing was new."""
    import numpy as np
    from mnistkit import keep, learn
    model = with_parts(tmp_path)  # mnist_model-1000 in service
    kept = keep.KeptDigits(str(tmp_path / "my_digits"))
    digit = np.zeros((28, 28), np.uint8)
    digit[6:22, 12:16] = 255
    kept.keep(digit, 7)
    learned_in_service(model, kept)
    calls = []
    monkeypatch.setattr(learn, "learn", lambda plan: calls.append(plan) or "model/mnist_model-1600")
    done = run_main("mnist_learn.py", cwd=tmp_path)
    assert (done.returncode, done.stderr, calls) == (0, "", []), done.stderr
    assert done.stdout == ("nothing new to learn: the model in service (./model/mnist_model-1000, learn 1) learned "
                           "the 1 digit kept in my_digits, and none was kept, removed or relabelled since; keep more digits "
                           "(or correct some), or give --again to train on them once more\n")
    assert run_main("mnist_learn.py", "--again", cwd=tmp_path).returncode == 0 and len(calls) == 1
    kept.keep(digit, 1)  # one more: something new, learned without --again
    assert run_main("mnist_learn.py", cwd=tmp_path).returncode == 0 and len(calls) == 2


TABLE_SCRIPTS = {"generateds": "mnist_generateds", "backward": "mnist_backward", "test": "mnist_test",
                 "app": "mnist_app", "export": "mnist_export"}  # README's flag table: its first column's names
NO_DEFAULT = ("—", "off")  # a flag unset or off, as the table says it


def readme_defaults():
    """[(script name, flag, the default the README's flag table gives)]: a row's one default for each of its flags,
    or one default for all (`—`), details in brackets left out (`(LeNet-5: ./model_lenet5/)`)."""
    rows = []
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            names = [n.strip() for n in cells[0].split(",")]
            if len(cells) != 4 or not all(n in TABLE_SCRIPTS for n in names):
                continue
            flags = re.findall(r"`(--[a-z][\w-]*)[^`]*`", cells[1])
            said = re.sub(r"\s*\([^()]*\)", "", cells[2]).replace("`", "")
            values = [v.strip() for v in said.split(",")] if len(flags) > 1 and "," in said else [said.strip()]
            assert len(values) in (1, len(flags)), line
            rows += [(n, flag, values[i if len(values) > 1 else 0]) for n in names for i, flag in enumerate(flags)]
    return rows


@pytest.mark.quick
def test_the_readmes_flag_table_gives_each_default_as_help_does():
    """Fails before the fix: the README's default of a flag was not checked against the script's --help (a new
    user read `./my_digits` there and `my_digits` in --help). Each default the table gives is the one --help shows
    (`(default: X)`, the parser's default as str), and a flag the table says is off or unset (`—`, `off`) has none;
    a default the table describes in words (`the course layout`) is of a flag with no default value."""
    import importlib
    checked = 0
    for name, flag, said in readme_defaults():
        parser = importlib.import_module(TABLE_SCRIPTS[name]).build_parser()
        action = next((a for a in parser._actions if flag in a.option_strings), None)
        assert action is not None, f"README: {name} has no flag {flag}"
        unset = action.default is None or action.default is False
        if said in NO_DEFAULT or unset:
            assert unset and (said in NO_DEFAULT or " " in said), (name, flag, said, action.default)
        else:
            assert said == str(action.default), f"README gives {name} {flag}'s default as {said!r}, --help as " \
                                                f"{action.default!r}"
        checked += 1
    assert checked >= 40

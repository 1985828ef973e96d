"""A new user's stumbles of trial 7, each by kind: docs/tests.md, "Trial 7's stumbles".

a. A checkpoint's own file (.index, .meta, .data-00000-of-00001, as tab-completion gives) names its prefix
   wherever a checkpoint path is taken (mnist_test.py --checkpoint, mnist_lenet5_test.py's).
b. A finite loss grown a thousandfold (a learning rate too high that never reaches NaN) is said once.
"""
import ast
import glob
import json
import os
import re
import sys
import types

import pytest

import mnist_test
from conftest import ROOT, run_main, wait_limit
from mnistkit import cli, folders, networks


@pytest.mark.quick
@pytest.mark.parametrize("ending", [".index", ".meta", ".data-00000-of-00001", ""])
def test_checkpoint_file_names_its_prefix(tmp_path, ending):
    """Fails before the fix: model/mnist_model-8500.index was read as a V1 checkpoint's one file, and its
    variables were said missing (checkpoint of another graph)."""
    prefix = str(tmp_path / "mnist_model-8500")
    for end in (".index", ".meta", ".data-00000-of-00001"):
        open(prefix + end, "wb").close()
    args = mnist_test.build_parser().parse_args(["--checkpoint", prefix + ending, "--checkpoint", prefix + ending])
    assert args.checkpoint == [prefix, prefix]


@pytest.mark.quick
def test_a_file_of_no_checkpoint_stays_as_typed(tmp_path):
    """A .index with no checkpoint of that prefix, and a V1 checkpoint's one file, are left as typed (said as not
    there, or read as V1)."""
    lone = str(tmp_path / "notes.meta")
    open(lone, "wb").close()
    assert folders.typed_prefix(lone) == lone
    assert folders.typed_prefix(str(tmp_path / "gone-5.index")) == str(tmp_path / "gone-5.index")


@pytest.mark.quick
def test_a_loss_grown_a_thousandfold_is_said_once():
    """Fails before the fix: --learning-rate-base 50 climbed to a loss of 1.8e8 and ended at exit 0 without a word
    (only NaN was said)."""
    from mnistkit import training
    settings = types.SimpleNamespace(named=lambda name: "--learning-rate-base")
    run = training.Run(data=None, saves=None, stop=None, progress=None)
    said = [run.grown_loss(loss, step, 50.0, settings) for step, loss in enumerate([3.0, 2.9, 9530.0, 1.8e8], 1)]
    assert said[:2] == [None, None] and said[3] is None
    assert said[2] == ("warning: step 3: the loss is 9.53e+03, 3.18e+03 times its first 3 (learning rate 50): "
                       "the training is diverging; lower --learning-rate-base")
    falling = training.Run(data=None, saves=None, stop=None, progress=None)
    assert [falling.grown_loss(loss, 1, 0.1, settings) for loss in [3.0, 2000.0, 0.3]] == [None, None, None]


@pytest.mark.quick
def test_a_keep_dir_mistyped_from_a_folder_beside_it_is_refused_with_the_folder_meant(tmp_path):
    """Fails before the fix: `--serve --keep-dir my_digts` beside my_digits/ started the board on a new, empty
    store, without a word."""
    (tmp_path / "my_digits").mkdir()
    done = run_main("mnist_app.py", "--serve", "--keep-dir", "my_digts", cwd=tmp_path)
    assert done.returncode == 1  # bad input, as every script says a folder not there (test_stumbles10: was 2)
    assert done.stderr == ("error: my_digts: no such folder; did you mean my_digits? (to keep digits "
                           "in a new folder, make the folder first: mkdir my_digts)\n")


@pytest.mark.quick
@pytest.mark.parametrize("flag", [["--keep-dir", "my_digits"], ["--port", "9000"], ["--host", "0.0.0.0"],
                                  ["--shutdown-grace", "1"], ["--allow-origin", "*"], ["--learn-steps", "5"]])
def test_a_flag_of_the_board_without_serve_is_refused(tmp_path, flag):
    """Fails before the fix: `--keep-dir my_digits a.png` predicted a.png and never said --keep-dir did nothing."""
    done = run_main("mnist_app.py", *flag, "a.png", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (f"mnist_app.py: error: {flag[0]} is for the drawing board: give --serve too (pictures "
                           "take none of --serve's flags)\n")


COURSE_SCRIPTS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "mnist_*.py"))
                        if "\ndef main(" in open(p, encoding="utf-8").read())


@pytest.mark.quick
@pytest.mark.parametrize("script", COURSE_SCRIPTS)
def test_a_scripts_errors_name_the_script_itself_when_main_is_called_from_a_notebook(tmp_path, monkeypatch, script):
    """Fails before the fix: mnist_backward.main(['--stpes', '10']) in a notebook said `ipykernel_launcher.py:
    error: ...` (argparse's prog is sys.argv[0]'s name)."""
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/dist-packages/ipykernel_launcher.py", "-f", "kernel.json"])
    done = run_main(script, "--no-such-flag", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"{script}: error: unknown option --no-such-flag"), done.stderr


def folder_of(folder, network):
    """A model folder whose record (schedule.json) declares `network`, with one checkpoint's files (empty: only
    listed, never read, by a check before TensorFlow's import)."""
    folder.mkdir()
    (folder / folders.FOLDER_FILE).write_text(json.dumps({"network": networks.to_record(network)}), encoding="utf-8")
    for end in (".index", ".meta", ".data-00000-of-00001"):
        (folder / f"mnist_model-2000{end}").write_bytes(b"")
    return folder


@pytest.mark.quick
@pytest.mark.parametrize("script, args, line", [
    ("mnist_test.py", ["--once", "--model-dir", "model_lenet5"], "model_lenet5/mnist_model-2000: this checkpoint "
     "holds LeNet-5, not the 784-500-10 network; use `python mnist_lenet5_test.py`, or another --model-dir"),
    ("mnist_test.py", ["--checkpoint", "model_lenet5/mnist_model-2000.index"], "model_lenet5/mnist_model-2000: this "
     "checkpoint holds LeNet-5, not the 784-500-10 network; use `python mnist_lenet5_test.py`, or another --model-dir"),
    ("mnist_lenet5_test.py", ["--once", "--model-dir", "model"], "model/mnist_model-2000: this checkpoint holds the "
     "784-500-10 network, not LeNet-5; use `python mnist_test.py`, or another --model-dir"),
    ("mnist_backward.py", ["--model-dir", "model_lenet5", "--steps", "5"], "model_lenet5/mnist_model-2000: this "
     "checkpoint holds LeNet-5, not the 784-500-10 network; use `python mnist_lenet5_backward.py`, or another "
     "--model-dir"),
    ("mnist_cluster.py", ["--model-dir", "model_lenet5", "--steps", "5"], "model_lenet5/mnist_model-2000: this "
     "checkpoint holds LeNet-5, not the 784-500-10 network; use `python mnist_lenet5_backward.py`, or another "
     "--model-dir"),
    ("mnist_cluster.py", ["--net", "lenet5", "--model-dir", "model", "--steps", "5"], "model/mnist_model-2000: this "
     "checkpoint holds the 784-500-10 network, not LeNet-5; use `python mnist_backward.py`, or another --model-dir"),
])
def test_another_networks_folder_told_by_its_record_is_said_before_tensorflow(tmp_path, script, args, line):
    """Fails before the fix: the line came after TensorFlow's import (8 s), when the checkpoint was read (here the
    empty files would be said damaged instead); the cluster's came from every task once started (here: no training
    records, said before any task starts)."""
    folder_of(tmp_path / "model_lenet5", networks.LENET5)
    folder_of(tmp_path / "model", networks.MLP)
    done = run_main(script, *args, cwd=tmp_path)
    # the script named as from tmp_path (cli.script_path: its path there)
    named = re.sub(r"`python (\S+\.py)`", lambda m: f"`python {cli.script_path(m.group(1), str(tmp_path))}`", line)
    assert (done.returncode, done.stderr) == (1, f"error: {named}\n")


@pytest.mark.quick
@pytest.mark.parametrize("compare", ["nosuch", "modle", "model_lenet5"])
def test_a_compare_model_not_there_is_said_before_the_board_starts(tmp_path, monkeypatch, compare):
    """Fails before the fix: `--serve --compare nosuch` was said only when the board loaded it, after TensorFlow's
    import (10 s); here the board is never opened."""
    import mnist_app
    folder_of(tmp_path / "model", networks.MLP)
    (tmp_path / "model_lenet5").mkdir()
    monkeypatch.setattr(mnist_app.board, "open_board", lambda *a, **k: pytest.fail("the board was opened"))
    done = run_main("mnist_app.py", "--serve", "--compare", compare, cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith(f"error: --compare: {compare}: no "), done.stderr


@pytest.mark.quick
@pytest.mark.parametrize("script, args, line", [
    ("mnist_app.py", ["--show-input", "pics/photo_7.jpg", "pics/a.png", "pics/b.png"],
     "pics/photo_7.jpg is a file, not a folder: give --show-input a folder for the 2 pictures"),
    ("mnist_app.py", ["--show-input", "pics/notes", "pics/a.png"],
     "pics/notes is a file, not a folder: give --show-input a folder, or FILE.png"),
    ("mnist_app.py", ["--show-input", "out.jpg", "pics/a.png"],
     "out.jpg: --show-input writes PNG pictures only: give out.png, or a folder"),
    ("mnist_test.py", ["--once", "--report", "report.jpg"],
     "report.jpg: --report writes PNG pictures only: give report.png, or a folder"),
    ("mnist_test.py", ["--once", "--report", "pics/notes"],
     "pics/notes is a file, not a folder: give --report a folder, or FILE.png"),
])
def test_a_png_or_folder_flag_refuses_what_it_would_misread_at_once(tmp_path, script, args, line):
    """Fails before the fix: `--report report.jpg` made a folder named report.jpg (report.jpg/report.png) after
    the scoring; `--show-input pics/photo_7.jpg` with two pictures said `cannot write --show-input picture (File
    exists)` after TensorFlow's import. Here nothing is scored or loaded (an empty folder): the line comes first."""
    (tmp_path / "pics").mkdir()
    for name in ("photo_7.jpg", "a.png", "b.png", "notes"):
        (tmp_path / "pics" / name).write_bytes(b"x")
    (tmp_path / "model").mkdir()
    done = run_main(script, *args, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, f"error: {line}\n")
    assert not (tmp_path / "report.jpg").exists() and not (tmp_path / "out.jpg").exists()


@pytest.mark.quick
@pytest.mark.parametrize("model, line", [
    ("export/mnist.tfilte", "export/mnist.tfilte: not found; did you mean export/mnist.tflite or export/mnist?"),
    ("export/mnst", "export/mnst: no such folder; did you mean export/mnist or export/mnist.tflite?"),
    ("export/mnist_int9.tflite", "export/mnist_int9.tflite: no such .tflite file; did you mean "
                                 "export/mnist_int8.tflite?"),  # mnist.tflite: no typo of it (cli.mistyped_for)
    ("modle", "modle: no such folder; did you mean model?"),
])
def test_a_mistyped_model_path_is_offered_tflite_files_too(tmp_path, model, line):
    """Fails before the fix: `--model-dir export/mnist.tfilte` was offered the SavedModel folder export/mnist only
    (folders only were looked at), a mistyped .tflite name nothing."""
    (tmp_path / "export" / "mnist" / "1").mkdir(parents=True)
    for name in ("mnist.tflite", "mnist_int8.tflite"):
        (tmp_path / "export" / name).write_bytes(b"")
    folder_of(tmp_path / "model", networks.MLP)
    (tmp_path / "a.png").write_bytes(b"")
    done = run_main("mnist_app.py", "--model-dir", model, "a.png", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, f"error: {line}\n")


def test_the_app_at_its_prompts_says_it_loads_and_its_stop_line_claims_no_save(trained_workdir):
    """Fails before the fix: `python mnist_app.py` at a terminal went silent for ~8.6 s after the first answer (no
    line said TensorFlow was loading), and Ctrl-C then said `...; nothing saved`, for a script that saves nothing."""
    pty = pytest.importorskip("pty")  # a terminal, as a person at the prompts has (POSIX)
    import signal
    import subprocess
    import time
    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_app.py")], cwd=trained_workdir,
                               stdin=child, stdout=child, stderr=child, close_fds=True)
    os.close(child)
    seen = b""

    def read_until(text, seconds=120):
        nonlocal seen
        end = time.monotonic() + wait_limit(seconds)
        while text not in seen and time.monotonic() < end:
            try:
                seen += os.read(main, 4096)
            except OSError:  # the child ended: its side of the terminal closed
                break
        return text in seen
    try:
        assert read_until(b"input the number of test pictures:"), seen
        os.write(main, b"1\n")
        assert read_until(b"loading the model (TensorFlow's first import takes a few seconds)..."), seen
        process.send_signal(signal.SIGINT)
        assert read_until(b"SIGINT: stopped"), seen
        process.wait(timeout=wait_limit(60))
        read_until(b"\0", 1)
    finally:
        process.kill()
        os.close(main)
    assert b"nothing saved" not in seen and process.returncode == 128 + signal.SIGINT, seen


CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
# The files whose strings may hold Chinese: the board's Chinese twin (served where zh is asked for), and a regular
# expression's range of CJK characters (a name's letters, not words said).
CHINESE_ALLOWED = {os.path.join("mnistkit", "board", "zh.py"), os.path.join("mnistkit", "writer.py")}


def chinese_strings(path):
    """The string literals of a Python file (docstrings left out: examples, not output) that hold CJK characters:
    [(line, text)]."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docs and CJK.search(node.value)]


@pytest.mark.quick
def test_english_output_holds_no_chinese_outside_the_zh_twin():
    """Fails before the fix: mnist_app.py's line for a picture that is not a digit said `but that is not a digit,
    这不是数字: ...` in the English output."""
    files = glob.glob(os.path.join(ROOT, "*.py")) + glob.glob(os.path.join(ROOT, "mnistkit", "**", "*.py"),
                                                                recursive=True) \
        + glob.glob(os.path.join(ROOT, "tools", "*.py"))
    found = {os.path.relpath(path, ROOT): chinese_strings(path) for path in files}
    assert {path: said for path, said in found.items() if said and path not in CHINESE_ALLOWED} == {}


@pytest.mark.quick
def test_the_cluster_says_too_few_training_files_before_any_task_starts(tmp_path, monkeypatch):
    """Fails before the fix: `mnist_cluster.py --steps 600` on one training file started the parameter server and
    both workers (~10 s) before a worker said `1 training file(s) for 2 workers`."""
    import mnist_cluster
    from mnistkit import records
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mnist_train.tfrecords").write_bytes(b"")
    monkeypatch.setattr(mnist_cluster, "run_cluster", lambda *a, **k: pytest.fail("the cluster's tasks were started"))
    done = run_main("mnist_cluster.py", "--steps", "600", cwd=tmp_path)
    monkeypatch.chdir(tmp_path)  # the command as named from the folder the cluster ran in
    command = records.generate_command(os.path.join(".", "data"), "--shards", "2")
    assert (done.returncode, done.stderr) == (1, f"error: ./data: 1 training file(s) for 2 workers; run `{command}` "
                                                 "(or a multiple) first\n")


@pytest.mark.quick
@pytest.mark.parametrize("readme", ["README.md", "README.zh-CN.md"])
def test_the_readmes_windows_steps_train_past_the_demo(readme):
    """Fails before the fix: README.md's PowerShell block ran `python mnist_backward.py --steps 2000` right after
    `tasks.py demo`, which had trained to 2000 already: it only said `already reaches the target`."""
    import tasks
    demo = int(tasks.build_parser().get_default("steps"))  # the demo's steps ($DEMO_STEPS, else 2000)
    text = open(os.path.join(ROOT, readme), encoding="utf-8").read()
    blocks = [b for b in re.findall(r"```powershell\n(.*?)```", text, re.S) if "tasks.py demo" in b]
    steps = [int(n) for b in blocks for n in re.findall(r"mnist_backward\.py --steps (\d+)", b)]
    assert blocks and steps and all(n > demo for n in steps), (blocks, demo)


@pytest.mark.quick
def test_a_report_json_that_is_a_folder_is_said_before_the_scoring(tmp_path):
    """Fails before the fix: `--report-json data` scored the test set, then said `cannot write report (Is a
    directory)`; here there is nothing to score, and the line comes first."""
    (tmp_path / "data").mkdir()
    done = run_main("mnist_test.py", "--once", "--report-json", "data", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, f"error: data is a folder, not a file: give --report-json a file "
                                                 f"name ({os.path.join('data', 'report.json')})\n")

"""Encodings (issue 53 item 7): every text file and text pipe of the project's own code names its encoding.

On Chinese Windows open() and text pipes default to GBK (QwenLM/Qwen-Agent #8): a file written in one
encoding is read in another, and a child's zh line comes through garbled. `python -X warn_default_encoding`
warns of each such call (EncodingWarning); the scan below finds them all at once, without running them.
JSON a person reads names files in their own letters (cli.readable_json: 图片.png, not \u56fe\u7247.png) and
stays JSON on any console; each json.dump(s) says which kind it writes.
"""
import ast
import glob
import io
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, wait_limit
from mnistkit import learn

TEXT_CALLS = ("open", "io.open", "os.fdopen")
NOT_FILES = ("os", "Image", "webbrowser", "tarfile", "zipfile")  # X.open of these opens no text file
COMPRESSED = ("gzip", "bz2", "lzma")  # X.open(path, mode): text when mode has "t"
TEMPORARY = ("tempfile.NamedTemporaryFile", "tempfile.TemporaryFile", "tempfile.SpooledTemporaryFile")
PIPE_CALLS = ("Popen", "check_output", "check_call", "getoutput")  # subprocess's, imported by name


def own_files():
    """The project's own Python files: the course scripts and tasks.py, mnistkit/, tools/, bench/ (its text pipes
    too: a bench run on Chinese Windows reads its children's lines)."""
    return sorted(glob.glob(os.path.join(ROOT, "*.py")) + glob.glob(os.path.join(ROOT, "mnistkit", "**", "*.py"),
                                                                    recursive=True)
                  + glob.glob(os.path.join(ROOT, "tools", "*.py")) + glob.glob(os.path.join(ROOT, "bench", "*.py")))


def mode_of(call, at=1):
    """The mode of an open()-like call when it is written out (a str), else None; `at`: its place among the
    positional arguments (Path.open and tempfile's: 0)."""
    if len(call.args) > at and isinstance(call.args[at], ast.Constant):
        return call.args[at].value
    return next((k.value.value for k in call.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)), None)


def unnamed_encodings(path):
    """Lines of `path` that open a text file, or a text pipe (subprocess text=True), without encoding=."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = ast.unparse(node.func)
        words = {k.arg for k in node.keywords}
        if "encoding" in words or None in words:  # named, or passed on with **options
            continue
        text_file = (called in TEXT_CALLS and "b" not in (mode_of(node) or "")) or \
            called.endswith((".read_text", ".write_text")) or text_open(node, called) or \
            (called == "io.TextIOWrapper" and len(node.args) < 2)  # its second argument: the encoding
        pipe = (called.startswith("subprocess.") or called in PIPE_CALLS) and ({"text", "universal_newlines"} & words) \
            or called == "os.popen"  # a text pipe in the locale's encoding, always: subprocess names one
        if text_file or pipe:
            found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def text_open(node, called):
    """Whether the call opens a text file without naming how, beside open(): a Path's open("w") (mode 0, "r" by
    default), gzip.open(path, "rt"), a tempfile in a mode without "b" (theirs is "w+b" by default)."""
    base, _, name = called.rpartition(".")
    if name == "open" and base and base.split(".")[-1] not in NOT_FILES and not base.startswith(NOT_FILES):
        if base.split(".")[-1] in COMPRESSED:
            return "t" in (mode_of(node) or "")
        return "b" not in (mode_of(node, at=0) or "")
    return called in TEMPORARY and "b" not in (mode_of(node, at=0) or "b")


@pytest.mark.quick
def test_the_scan_finds_each_way_of_opening_text_without_an_encoding(tmp_path):
    lines = ['open(p)', 'open(p, "w")', 'io.open(p)', 'os.fdopen(fd, "w")', 'Path(p).read_text()', 'p.write_text(t)',
             'Path(p).open()', 'p.open("w")', 'gzip.open(p, "rt")', 'tempfile.NamedTemporaryFile("w")',
             'tempfile.TemporaryFile(mode="w+")', 'io.TextIOWrapper(f)', 'os.popen("ls")',
             'subprocess.run(a, text=True)', 'Popen(a, universal_newlines=True)', 'check_output(a, text=True)']
    fine = ['open(p, "rb")', 'open(p, encoding="utf-8")', 'p.open("rb")', 'p.open(encoding="utf-8")',
            'os.open(p, os.O_RDONLY)', 'Image.open(p)', 'gzip.open(p)', 'gzip.open(p, "wb")', 'tarfile.open(p)',
            'tempfile.NamedTemporaryFile()', 'tempfile.TemporaryFile("w+b")', 'io.TextIOWrapper(f, "utf-8")',
            'subprocess.run(a)', 'Popen(a, text=True, encoding="utf-8")', 'open(p, **options)']
    source = tmp_path / "some.py"
    source.write_text("\n".join(lines + fine) + "\n", encoding="utf-8")
    found = [line.split(": ", 1)[1] for line in unnamed_encodings(str(source))]
    assert found == [ast.unparse(ast.parse(line)) for line in lines]


@pytest.mark.quick
def test_every_text_file_and_pipe_of_the_project_names_its_encoding():
    found = [line for path in own_files() for line in unnamed_encodings(path)]
    assert found == []


@pytest.mark.quick
@pytest.mark.parametrize("script", ["mnist_app.py", "mnist_generateds.py", "mnist_learn.py", "tasks.py"])
def test_help_raises_no_encoding_warning_from_the_projects_code(script):
    """--help under -X warn_default_encoding, the warning an error: exit 0 (TensorFlow's own are not ours,
    and --help does not import it)."""
    result = subprocess.run([sys.executable, "-X", "warn_default_encoding", "-W", "error::EncodingWarning",
                             os.path.join(ROOT, script), "--help"], cwd=ROOT, capture_output=True,
                            timeout=wait_limit(300))
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")[-2000:]


BENCHES = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "bench", "*.py")))


@pytest.mark.parametrize("script", BENCHES)
def test_a_bench_scripts_help_raises_no_encoding_warning(script):
    """The benches run the course's scripts through text pipes (bench/*.py): their --help, as above (the static
    scan above reads the rest of them)."""
    test_help_raises_no_encoding_warning_from_the_projects_code(script)


@pytest.mark.quick
def test_a_learns_child_printing_zh_is_read_right_whatever_the_parents_encoding(monkeypatch):
    """A parent whose locale encoding is GBK passes it on (PYTHONIOENCODING=gbk stands in for it here): the
    learn has its child write utf-8 and reads utf-8, so the zh line arrives whole."""
    monkeypatch.setenv("PYTHONIOENCODING", "gbk")
    lines = []
    watch = learn.Watch(out=lines.append)
    learn.run(["-c", "print('训练第 10 步，共 20 步')"], watch, "failed")
    assert lines == ["训练第 10 步，共 20 步"]


def json_calls_unsaid(path):
    """Lines of `path` calling json.dump or json.dumps without ensure_ascii= written out: JSON whose reader is not
    said (a person's goes through cli.readable_json, which says it; a program's says ensure_ascii=True)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    return [f"{os.path.relpath(path, ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("json.dump", "json.dumps")
            and not {"ensure_ascii", None} & {k.arg for k in node.keywords}]


@pytest.mark.quick
def test_every_json_the_project_writes_says_whether_a_person_reads_it():
    # `mnist_app.py --json` printed 图片.png as "\u56fe\u7247.png", and so did a model folder's schedule.json, a
    # --report-json and an export's record their paths: json.dumps' default. The benches' JSON is their own
    # children's lines to them.
    found = [line for path in own_files() if os.sep + "bench" + os.sep not in path for line in json_calls_unsaid(path)]
    assert found == []


NAMES = ["图片.png", "😀.png"]  # a Chinese name, and one beyond U+FFFF that GBK cannot hold either


@pytest.mark.quick
@pytest.mark.parametrize("encoding, raw", [("utf-8", NAMES), ("gbk", NAMES[:1]), ("cp1252", []), ("ascii", [])])
def test_the_apps_json_names_pictures_in_their_own_letters_where_the_console_can_and_stays_json(encoding, raw,
                                                                                               tmp_path):
    # the pictures are not there: their entries come without the model's load (no TensorFlow); model/ holds one
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "mnist_model-1.index").write_bytes(b"")
    unread = os.fsdecode(b"\xcd\xbc.png")  # a name in GBK bytes, not UTF-8: held as a surrogate escape
    names = NAMES + ([unread] if encoding == "utf-8" else [])
    result = subprocess.run([sys.executable, os.path.join(ROOT, "mnist_app.py"), "--json", *names], cwd=tmp_path,
                            capture_output=True, timeout=wait_limit(120),
                            env=dict(os.environ, PYTHONIOENCODING=encoding))
    err = result.stderr.decode(encoding)
    assert result.returncode == 1 and "Traceback" not in err, err
    entries = json.loads(result.stdout.decode(encoding))
    assert [entry["file"] for entry in entries] == names
    assert all(entry["error"].startswith(f"{name}: file not found") for entry, name in zip(entries, names))
    for name in NAMES:  # in its own letters where the console holds them, else a JSON escape
        own = name.encode(encoding) if name in raw else json.dumps(name, ensure_ascii=True).encode()
        assert own in result.stdout, result.stdout


@pytest.mark.quick
def test_the_json_files_a_person_reads_hold_paths_in_their_own_letters(tmp_path, monkeypatch):
    import types
    from mnistkit import deployed, export, folders, report
    assert '"data_dir": "数据"' in folders.record_text({"data_dir": "数据"})
    record = {"checkpoint": "模型/mnist_model-1", "odd": os.fsdecode(b"\xcd.png")}  # the odd byte: JSON's escape
    report.write_report(record, None, json_path=str(tmp_path / "report.json"))
    export.write_json(str(tmp_path / "export" / "record.json"), record)
    for written in (tmp_path / "report.json", tmp_path / "export" / "record.json"):
        text = written.read_text(encoding="utf-8")
        assert '"checkpoint": "模型/mnist_model-1"' in text and "\\udccd" in text and json.loads(text) == record
    model = types.SimpleNamespace(source="export/mnist/1", record=record)
    for encoding, shown in (("utf-8", "模型"), ("cp1252", "\\u6a21\\u578b")):
        monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(io.BytesIO(), encoding=encoding))
        line = deployed.describe(model, verbose=True)[0]
        assert line.startswith(f"export/mnist/1: export record {{\"checkpoint\": \"{shown}/mnist_model-1\""), line
        line.encode(encoding)


@pytest.mark.quick
def test_the_boards_error_lines_name_a_string_sent_as_it_is_and_stay_json(tmp_path):
    # a keep's digit "七" was named "\u4e03"; a signature_name holding a lone surrogate's escape ("\udcb7") ended the
    # request in UnicodeEncodeError instead of its 400 line (the answer's JSON: TF Serving's, UTF-8)
    from test_board_routes import OWN_HOST, Asked, Stand
    from mnistkit import keep
    from mnistkit.board import app, model, teach
    import numpy as np
    kept = keep.KeptDigits(str(tmp_path / "my_digits"))
    board = app.create_app(app.Served(model.Model(Stand(), lambda data, name: np.zeros((28, 28), np.uint8)), None,
                                      kept, teach.Learning(kept)))
    headers = (OWN_HOST, (b"content-type", b"application/json"))
    asked = Asked(board, "POST", "/board/keep", '{"digit": "七"}'.encode(), headers=headers)
    assert (asked.status, asked.error()) == (400, '"digit" must be an integer 0-9, not "七"')
    asked = Asked(board, "POST", "/v1/models/mnist:predict", b'{"signature_name": "\\udcb7", "instances": [[0]]}',
                  headers=headers)
    assert asked.status == 400 and asked.error().startswith('Serving signature name: "\udcb7" not found'), asked.body

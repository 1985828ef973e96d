"""The command line before any work: --help and flag errors without importing TensorFlow, modules that are not scripts."""
import glob
import importlib
import os
import re
import shlex
import subprocess
import sys

import pytest
from PIL import Image

from conftest import ROOT, STARTING_ENVIRONMENT, run_script, wait_limit

TOP_LEVEL = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "*.py")))
MODULES = ["mnist_forward.py", "mnist_lenet5_forward.py", "tf_compat.py"]  # imported, not run
TOOLS = ["tasks.py"]  # the project's task script, not one of the course's (tests/test_tasks.py)
SCRIPTS = [name for name in TOP_LEVEL if name not in MODULES + TOOLS]


# Runs a script as `python script args` would, then writes the names in sys.modules at exit to a file: at the
# interpreter's exit (atexit), or at os._exit, which tf_compat.end takes while a daemon thread still runs.
# (-X importtime cannot tell: tf_compat mutes stderr while TensorFlow is imported.)
TRACER = """
import atexit, os, runpy, sys
out, script = sys.argv[1], sys.argv[2]
def write(): open(out, "w").write("\\n".join(sorted(sys.modules)))
atexit.register(write)
def exit_now(status, exit=os._exit): write(); exit(status)
os._exit = exit_now
sys.argv = sys.argv[2:]
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name="__main__")
"""


def run_traced(script, *args, cwd):
    """Run a script as a user would; returns (CompletedProcess, set of the module names imported at exit)."""
    out = os.path.join(os.path.dirname(cwd), os.path.basename(cwd) + ".modules")
    result = subprocess.run([sys.executable, "-c", TRACER, out, os.path.join(ROOT, script), *args], cwd=cwd,
                            capture_output=True, text=True, timeout=wait_limit(120))
    with open(out) as f:
        return result, set(f.read().split())


def tensorflow_modules(imported):
    return sorted(name for name in imported if name == "tensorflow" or name.startswith("tensorflow."))


@pytest.mark.quick
def test_the_lists_cover_every_top_level_file():
    assert set(MODULES + TOOLS) <= set(TOP_LEVEL)
    assert {"mnist_generateds.py", "mnist_backward.py", "mnist_test.py", "mnist_app.py", "mnist_cluster.py"} <= set(SCRIPTS)


def damaged_model(work):
    """work/model holding checkpoint files that cannot be read: TensorFlow is imported to find that out; and
    work/x.png, a picture for the app to be asked about (a picture that is not there is said before the model is
    read)."""
    (work / "model").mkdir()
    (work / "model" / "mnist_model-1.index").write_bytes(b"garbage")
    (work / "model" / "mnist_model-1.data-00000-of-00001").write_bytes(b"x")
    Image.new("L", (28, 28), 255).save(work / "x.png")


@pytest.mark.long
def test_the_trace_sees_tensorflow_when_it_is_imported(tmp_path):
    """The checks below could not fail if the trace missed TensorFlow; here the app imports it to read a
    checkpoint (one whose files are there but damaged)."""
    damaged_model(tmp_path)
    result, imported = run_traced("mnist_app.py", "--model-dir", "model", "x.png", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error: model/mnist_model-1: checkpoint is damaged (mnist_model-1.index is "
                                    "unreadable"), result.stderr
    assert "tensorflow" in tensorflow_modules(imported)


@pytest.mark.parametrize("script, args", [
    ("mnist_app.py", ["--model-dir", "none", "x.png"]),
    ("mnist_export.py", ["--model-dir", "none"]),
    ("mnist_test.py", ["--model-dir", "none", "--once"]),
])
def test_a_model_dir_that_is_not_there_is_said_without_importing_tensorflow(script, args, tmp_path):
    """A mistyped --model-dir is said at once (TensorFlow's import takes seconds), before the graph is built, as a
    folder that is not there, not as one to train. (The evaluator looks it up before it reads its test records
    whole, with TensorFlow: a bad records file is said before a model folder that is there is read, as test_tfdata
    checks; a data folder that is not there is said first, as the trainer says it: test_promises_run.)"""
    (tmp_path / "data").mkdir()
    result, imported = run_traced(script, *args, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == ("error: none: no such folder; give the folder that holds the "
                             "checkpoints\n")
    assert tensorflow_modules(imported) == []


@pytest.mark.parametrize("script, args, exports", [
    ("mnist_app.py", ["--model-dir", "my_digits.txt", "x.png"], " (or an export: a .tflite file, a SavedModel folder)"),
    ("mnist_export.py", ["--model-dir", "my_digits.txt"], ""),
])
def test_a_model_dir_that_is_a_file_is_said_to_be_one(script, args, exports, tmp_path):
    """A file given as --model-dir (the kept digits' label file, a picture) is named as a file, not told to train
    into: training there would fail on the file. Said at once, as a path that is not there, before TensorFlow's
    import."""
    (tmp_path / "my_digits.txt").write_text("000001_7.png 7\n")
    result, imported = run_traced(script, *args, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (f"error: my_digits.txt is a file, not a model folder: give the folder holding the "
                             f"checkpoints{exports}\n")
    assert tensorflow_modules(imported) == []


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_prints_usage_without_importing_tensorflow(script, tmp_path):
    result, imported = run_traced(script, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {script} ") and "--verbose" in result.stdout
    assert result.stderr == ""
    assert tensorflow_modules(imported) == []


@pytest.mark.quick
@pytest.mark.parametrize("script", SCRIPTS)
def test_help_describes_the_script_by_its_own_docstring(script):
    # mnist_learn.py's --help once showed mnistkit/learn.py's docstring, the module its command line lived in
    module = importlib.import_module(os.path.splitext(script)[0])
    described = module.build_parser().description
    assert described == module.__doc__.split("\n\n")[0], (script, described)


@pytest.mark.quick
@pytest.mark.parametrize("script, args, message", [
    ("mnist_generateds.py", ["--no-such-flag"], "unknown option --no-such-flag; --help lists the options"),
    ("mnist_generateds.py", ["--shards", "0"], "--shards must be >= 1"),
    ("mnist_backward.py", ["--steps", "ten"], "argument --steps: invalid int value: 'ten'"),
    ("mnist_backward.py", ["--steps", "abc"], "argument --steps: invalid int value: 'abc'"),
    ("mnist_backward.py", ["--steps=-5"], "--steps must be >= 0"),
    ("mnist_lenet5_backward.py", ["--steps=-5"], "--steps must be >= 0"),
    ("mnist_test.py", ["--model-dir"], "argument --model-dir: expected one argument"),
    ("mnist_learn.py", ["--steps", "x"], "argument --steps: invalid int value: 'x'"),
    ("mnist_export.py", ["--steps", "1"], "unknown option --steps"),
    ("mnist_backward.py", ["--job_name", "worker"],
     "--job_name, --ps_hosts and --worker_hosts go together (missing: --ps_hosts, --worker_hosts)"),
    ("mnist_backward.py", ["--job_name", "worker", "--ps_hosts", "h:1", "--worker_hosts", "h:2", "--task_index", "1"],
     "--task_index 1: the worker job has tasks 0 to 0"),
    ("mnist_test.py", ["--interval"], "argument --interval: expected one argument"),
    ("mnist_app.py", ["--preprocess", "other"], "argument --preprocess: invalid choice: 'other'"),
    ("mnist_cluster.py", ["--ps", "0"], "--ps must be >= 1"),
    # A number flag out of its range: refused as the flag is read (every such flag: test_guards_trainer).
    ("mnist_test.py", ["--interval", "-1"], "argument --interval: -1 is out of range: give a number > 0"),
    ("mnist_backward.py", ["--learning-rate-base", "-0.1"], "--learning-rate-base must be a finite number > 0"),
])
def test_flag_errors_come_before_tensorflow(script, args, message, tmp_path):
    # Every usage error is one line: argparse's 16-line usage before it once buried what was wrong
    result, imported = run_traced(script, *args, cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"{script}: error: {message}"), result.stderr
    assert tensorflow_modules(imported) == []
    assert os.listdir(tmp_path) == []


# Each script's mistyped option, and the option it was meant to be (every script: the set is checked below).
MISTYPED = {
    "mnist_app.py": (["--model_dir", "model"], "--model-dir"),
    "mnist_backward.py": (["--step", "10"], "--steps"),
    "mnist_cluster.py": (["--worker", "2"], "--workers"),  # the launcher's own, though the workers' parser reads it
    "mnist_export.py": (["--export-dri", "out"], "--export-dir"),
    "mnist_generateds.py": (["--shard=2"], "--shards"),
    "mnist_learn.py": (["--undoo"], "--undo"),
    "mnist_lenet5_backward.py": (["--bach-size", "50"], "--batch-size"),
    "mnist_lenet5_test.py": (["--onse"], "--once"),
    "mnist_test.py": (["--intervall", "5"], "--interval"),
}


def test_every_script_has_a_mistyped_option_below():
    assert sorted(MISTYPED) == SCRIPTS


@pytest.mark.quick
@pytest.mark.parametrize("script", SCRIPTS)
def test_a_mistyped_option_gets_one_line_naming_the_closest(script, tmp_path):
    # `--step 10` once got argparse's whole usage and "unrecognized arguments: --step 10", with no hint
    args, meant = MISTYPED[script]
    result, imported = run_traced(script, *args, cwd=tmp_path)
    typed = args[0].split("=")[0]
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr == f"{script}: error: unknown option {typed}; did you mean {meant}?\n"
    assert tensorflow_modules(imported) == []
    assert os.listdir(tmp_path) == []


@pytest.mark.quick
@pytest.mark.parametrize("module", MODULES)
def test_modules_say_what_they_are_and_what_to_run(module, tmp_path):
    result, imported = run_traced(module, "--help", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{module}: ") and lines[1].startswith("not a script to run: ")
    # Each command in backquotes read as the shell reads it: a path with a space in it is quoted, one word.
    named = [word for command in re.findall(r"`([^`]*)`", lines[1]) for word in shlex.split(command)
             if word.endswith(".py")]
    assert named and all(os.path.basename(name) in SCRIPTS for name in named), named
    # Named as they run from the folder the user is in: here, another folder than the scripts'.
    assert all(os.path.isfile(tmp_path / name) for name in named), named
    assert tensorflow_modules(imported) == []

    bare, imported = run_traced(module, cwd=tmp_path)  # nothing to do: the usage-error status, message on stderr
    assert bare.returncode == 2 and bare.stdout == "" and bare.stderr == result.stdout
    assert tensorflow_modules(imported) == []


def test_tensorflows_import_here_sets_its_log_level_in_this_process():
    """What the next test must not inherit: importing TensorFlow through tf_compat sets TF_CPP_MIN_LOG_LEVEL
    in this (pytest's) process, where a script started later would find it (conftest resets it per test)."""
    import tf_compat
    tf_compat._load()  # what its first import does, whether or not an earlier test imported it already
    assert os.environ.get("TF_CPP_MIN_LOG_LEVEL") is not None


def test_a_script_a_later_test_starts_does_not_inherit_that_log_level():
    """No test depends on what an earlier one left in the environment (conftest.environment_as_the_run_started)."""
    if "TF_CPP_MIN_LOG_LEVEL" in STARTING_ENVIRONMENT:
        pytest.skip("the run itself was started with TF_CPP_MIN_LOG_LEVEL set")
    seen = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'))"],
                          capture_output=True, text=True, timeout=wait_limit(60)).stdout
    assert seen.strip() == "None"


@pytest.mark.long
def test_verbose_shows_tensorflow_log_lines_and_quiet_hides_them(tmp_path):
    damaged_model(tmp_path)
    quiet = run_script("mnist_app.py", "--model-dir", "model", "x.png", cwd=tmp_path)
    verbose = run_script("mnist_app.py", "--model-dir", "model", "x.png", "--verbose", cwd=tmp_path)
    error = quiet.stderr
    assert quiet.returncode == verbose.returncode == 1
    assert error.startswith("error: model/mnist_model-1: checkpoint is damaged") and error.count("\n") == 1, error
    assert verbose.stderr.endswith(error) and len(verbose.stderr.splitlines()) > 1  # TensorFlow's C++ lines first


# Each script's command line from one declaration (cli.Options), issue 52 §6: the flags its parser has beyond
# OPTIONS' are only the ones every script shares (--verbose, -h) and a trainer's cluster flags.
SHARED = {"--help", "--verbose", "--job_name", "--task_index", "--ps_hosts", "--worker_hosts", "--sync_replicas",
          "--startup-timeout"}


@pytest.mark.quick
@pytest.mark.parametrize("script", ["mnist_test.py", "mnist_lenet5_test.py", "mnist_export.py"])
def test_the_evaluator_and_the_exporter_declare_their_options(script):
    from mnistkit import cli, records
    module = importlib.import_module(script[:-3])
    declared = getattr(module, "OPTIONS", None) or importlib.import_module("mnist_test").OPTIONS
    assert isinstance(declared, cli.Options)
    parser = module.build_parser()
    flags = {action.option_strings[0] for action in parser._actions if action.option_strings}
    flags = {f if f != "-h" else "--help" for f in flags}
    assert flags - SHARED == {o.flag_name for o in declared if o.flag}
    if script != "mnist_export.py":  # the pipelines that read a test file once: records.PIPELINES' unfed ones
        pipeline = next(a for a in parser._actions if "--pipeline" in a.option_strings)
        assert list(pipeline.choices) == [n for n, p in records.PIPELINES.items() if not p.fed] == ["fast", "tfdata"]
    lenet5 = script == "mnist_lenet5_test.py"
    model_dir = next(a for a in parser._actions if "--model-dir" in a.option_strings)
    assert model_dir.default == ("./model_lenet5/" if lenet5 else "./model/")  # the trainer's MODEL_SAVE_PATH


HELPERS = sorted(os.path.relpath(path, ROOT) for folder in ("tools", "bench")
                 for path in glob.glob(os.path.join(ROOT, folder, "*.py")))


@pytest.mark.parametrize("script", HELPERS)
def test_every_tool_and_bench_answers_help_at_once_without_tensorflow(script, tmp_path):
    """Fails before the fix (trial 7): tools/score_tflite.py --help ended in an IndexError traceback (sys.argv read
    by hand), tools/load.py --help said `no command: give it after --`, tools/migration_checks.py --help imported
    TensorFlow (10 s and its log lines)."""
    result, imported = run_traced(script, "--help", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout.startswith("usage: ")
    assert tensorflow_modules(imported) == []


@pytest.mark.parametrize("script", [path for path in HELPERS if path.startswith("tools")])
def test_every_tool_refuses_a_flag_it_does_not_know_in_one_line(script, tmp_path):
    """Fails before the fix (trial 7): argparse's usage block came before the error line (tools/score_tflite.py
    read sys.argv by hand: an IndexError traceback)."""
    result, imported = run_traced(script, "--no-such-flag", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(f"{os.path.basename(script)}: error: ")
    assert tensorflow_modules(imported) == []

"""The range checks: every number flag of every script refuses a value out of its range in one line, exit status 2,
before any work.

Each kind of bound has its cases (a minimum, a maximum, a value to stay above or below, NaN and infinity), and each
case fails when its check is taken out: the script then goes on to other work in an empty folder and ends otherwise
(no model folder, no data or label files, the course's prompt, an unknown --net). The table covers every number flag
of every script's parser (test_the_cases_cover_every_number_flag), so a new one cannot come without its cases.
"""
import argparse
import importlib
import os

import pytest

from conftest import run_main
from test_cli import SCRIPTS
from mnistkit import cli, learn

pytestmark = pytest.mark.quick

# (script, flag, values out of its range, the one line that refuses them (after "error: "), args making the run fail
# otherwise if the check were gone). A trainer's flags are the same for both networks (mnist_backward.build_parser).
TRAINER = [
    ("--steps", ["-1"], "--steps must be >= 0", []),
    ("--batch-size", ["0"], "--batch-size must be >= 1", []),
    ("--save-every", ["0"], "--save-every must be >= 1", []),
    ("--keep", ["0"], "--keep must be >= 1", []),
    ("--history", ["-1"], "--history must be >= 0", []),
    ("--summary-every", ["0"], "--summary-every must be >= 1", []),
    ("--print-every", ["0"], "--print-every must be >= 1", []),
    ("--steps-per-run", ["0"], "--steps-per-run must be >= 1", []),
    ("--decay-from", ["-1"], "--decay-from must be >= 0", []),
    ("--learning-rate-base", ["0", "-0.1", "nan", "inf"], "--learning-rate-base must be a finite number > 0", []),
    ("--startup-timeout", ["0", "nan", "inf"], "argument --startup-timeout: {} is out of range: give a number > 0",
     []),
    ("--task_index", ["-1", "2"], "--task_index {}: the worker job has tasks 0 to 1",
     ["--job_name", "worker", "--ps_hosts", "127.0.0.1:1", "--worker_hosts", "127.0.0.1:2,127.0.0.1:3"]),
]
EVALUATOR = [
    ("--interval", ["0", "-1", "nan", "inf"], "argument --interval: {} is out of range: give a number > 0", []),
]
CASES = [
    ("mnist_learn.py", "--steps", ["0", "-5"], "--steps must be >= 1", []),
    ("mnist_learn.py", "--share", ["0", "1", "1.5", "-0.25", "nan", "inf"],
     "--share must be a finite number between 0 and 1", []),
    ("mnist_app.py", "--port", ["-1", "65536"], "--port must be from 0 to 65535", []),
    ("mnist_app.py", "--threshold", ["-1", "256"], "--threshold must be from 0 to 255", []),
    ("mnist_app.py", "--shutdown-grace", ["-1", "nan", "inf"], "--shutdown-grace must be a finite number >= 0", []),
    ("mnist_app.py", "--learn-steps", ["0", "-5"], "--learn-steps must be >= 1", []),  # mnist_learn.py's --steps
    ("mnist_app.py", "--learn-share", ["0", "1", "nan"], "--learn-share must be a finite number between 0 and 1",
     []),
    ("mnist_cluster.py", "--ps", ["0"], "--ps must be >= 1", ["--net", "none"]),
    ("mnist_cluster.py", "--workers", ["0", "-2"], "--workers must be >= 1", ["--net", "none"]),
    ("mnist_generateds.py", "--workers", ["0"], "--workers must be >= 1", ["--train-images", "none"]),
    ("mnist_generateds.py", "--shards", ["0", "-1"], "--shards must be >= 1", ["--train-images", "none"]),
    *[(script, *case) for script in ("mnist_backward.py", "mnist_lenet5_backward.py") for case in TRAINER],
    *[(script, *case) for script in ("mnist_test.py", "mnist_lenet5_test.py") for case in EVALUATOR],
]


def number_flags(script):
    """{flag} of every option of the script's parser that takes a number (an int or float, bounded or not)."""
    parser = importlib.import_module(os.path.splitext(script)[0]).build_parser()
    return {action.option_strings[0] for action in parser._actions if action.option_strings
            and getattr(action.type, "__name__", None) in ("int", "float")}


def test_the_cases_cover_every_number_flag():
    found = {(script, flag) for script in SCRIPTS for flag in number_flags(script)}
    assert found == {(script, flag) for script, flag, *_ in CASES}


@pytest.mark.parametrize("script, flag, value, message, more",
                         [pytest.param(script, flag, value, message, more, id=f"{script} {flag}={value}")
                          for script, flag, values, message, more in CASES for value in values])
def test_a_number_flag_out_of_its_range_is_one_line_and_exit_2(script, flag, value, message, more, tmp_path):
    result = run_main(script, *more, f"{flag}={value}", cwd=tmp_path)  # "=": a value may start with "-"
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr  # one line, without argparse's usage
    line = result.stderr.splitlines()[-1]
    assert line.endswith(f": error: {message.format(value)}"), line
    assert os.listdir(tmp_path) == []  # nothing made, nothing started


@pytest.mark.parametrize("script, args", [
    ("mnist_learn.py", ["--share", "0.999", "--steps", "1"]), ("mnist_learn.py", ["--share", "1e-6"]),
    # the board's flags with --serve (refused without it): the run goes on to the model, not there
    ("mnist_app.py", ["--serve", "--threshold", "0", "--port", "65535"]),
    ("mnist_app.py", ["--serve", "--threshold", "255", "--port", "0"]),
    ("mnist_app.py", ["--serve", "--shutdown-grace", "0", "--learn-steps", "1", "--learn-share", "0.999"]),
    ("mnist_generateds.py", ["--shards", "1", "--workers", "1", "--train-images", "none"]),
    ("mnist_cluster.py", ["--ps", "1", "--workers", "1", "--net", "none"]),
])
def test_the_values_at_the_ends_of_a_range_are_taken(script, args, tmp_path):
    # Taken: the run goes on past the command line (no model to learn from, the course's prompt, no JPG layout)
    result = run_main(script, *args, cwd=tmp_path)
    assert result.returncode != 2 or "--net none: no such network" in result.stderr, result.stderr
    assert " must be " not in result.stderr, result.stderr


@pytest.mark.parametrize("module, constant, value, message", [
    ("mnist_app", "THRESHOLD", 300, "THRESHOLD in mnist_app.py must be from 0 to 255, not 300"),
    ("mnist_cluster", "PS_TASKS", 0, "PS_TASKS in mnist_cluster.py must be >= 1, not 0"),
    ("mnistkit.learn", "DEFAULT_STEPS", 0, "DEFAULT_STEPS in learn.py must be >= 1, not 0"),
])
def test_an_edited_constant_out_of_range_is_named_as_the_constant(module, constant, value, message, tmp_path,
                                                                   monkeypatch):
    # A student edits THRESHOLD at the top of mnist_app.py: argparse leaves a default unchecked, the options do not.
    monkeypatch.setattr(importlib.import_module(module), constant, value)
    script = {"mnistkit.learn": "mnist_learn.py"}.get(module, module + ".py")
    result = run_main(script, *(["--net", "none"] if module == "mnist_cluster" else []), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines()[-1].endswith(f": error: {message}"), result.stderr
    assert os.listdir(tmp_path) == []


def test_another_scripts_options_join_a_parser_under_a_prefix_with_their_bounds():
    # How mnist_app.py --serve takes mnist_learn.py's --steps and --share: the same declarations, one call each.
    options = learn.OPTIONS.prefixed("learn", "steps", "share")
    parser = argparse.ArgumentParser(prog="app")
    options.add_to(parser.add_argument_group("--serve: learning"), learn)
    assert "--learn-steps LEARN_STEPS" in parser.format_help() and "--steps " not in parser.format_help()
    given = options.check(parser.parse_args(["--learn-share", "0.5"]), learn, parser.error)
    assert (given.learn_steps, given.learn_share) == (learn.DEFAULT_STEPS, 0.5)
    refused = []
    options.check(parser.parse_args(["--learn-steps", "0"]), learn, refused.append)
    options.check(parser.parse_args(["--learn-share", "1"]), learn, refused.append)
    assert refused == ["--learn-steps must be >= 1", "--learn-share must be a finite number between 0 and 1"]
    with pytest.raises(ValueError, match="no option stpes among model_dir, keep_dir, steps, share, data_dir"):
        learn.OPTIONS.prefixed("learn", "stpes")


@pytest.mark.parametrize("low, high, above, below, inside, outside, said", [
    (0, None, False, False, [0, 5], [-1, float("nan"), float("inf")], ">= 0"),
    (0, None, True, False, [1e-9], [0, -1, float("nan")], "> 0"),
    (0, 255, False, False, [0, 255], [-1, 256, float("-inf")], "from 0 to 255"),
    (0, 1, True, True, [0.5, 1e-6], [0, 1, float("nan")], "between 0 and 1"),
    (0, 1, True, False, [1, 0.5], [0, 1.5], "> 0 and <= 1"),
    (None, 1, False, True, [0.5, -3], [1, 2, float("nan")], "< 1"),
])
def test_within_and_span_agree_on_each_kind_of_range(low, high, above, below, inside, outside, said):
    assert all(cli.within(v, low, high, above, below) for v in inside)
    assert not any(cli.within(v, low, high, above, below) for v in outside)
    assert cli.span(low, high, above, below) == said


@pytest.mark.parametrize("args, message", [
    (["--steps=-1"], "--steps must be >= 0"),
    (["--net", "lenet5", "--learning-rate-base", "nan"], "--learning-rate-base must be a finite number > 0"),
    (["--workers", "1", "--keep", "0"], "--keep must be >= 1"),
])
def test_the_launcher_checks_the_workers_flags_before_any_task_starts(args, message, tmp_path):
    # Once, as the workers' trainer would say it, not once per task after the cluster has started
    result = run_main("mnist_cluster.py", *args, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr  # the launcher's own line, without its usage
    assert result.stderr.endswith(f": error: {message}\n"), result.stderr
    assert os.listdir(tmp_path) == []


def test_the_launcher_names_the_workers_option_a_mistyped_flag_meant(tmp_path):
    # A flag the launcher passes on to the workers, mistyped: one line from the launcher, the trainer's option named
    result = run_main("mnist_cluster.py", "--stepz", "5", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
    line, = result.stderr.splitlines()  # the launcher's prog (in this process, pytest's) and the one line
    assert line.endswith(": error: unknown option --stepz; did you mean --steps?"), result.stderr
    assert os.listdir(tmp_path) == []

"""A new user's ninth stumbles, each by kind: docs/tests.md, "A new user's ninth stumbles (test_stumbles9.py)".

1. A task mistyped (`python tasks.py dmeo`) names the task meant, as a mistyped option of a course script does.
"""
import pytest

from conftest import run_main


@pytest.mark.quick
@pytest.mark.parametrize("typed, meant", [("dmeo", "demo"), ("test-quik", "test-quick"), ("instal", "install"),
                                          ("xyzzy", None)])
def test_a_mistyped_task_names_the_task_meant(typed, meant, tmp_path):
    """Fails before the fix: argparse's `invalid choice: 'dmeo' (choose from 'demo', ...)`, the task meant not
    named, where the course scripts say `did you mean --steps?` for a mistyped option."""
    done = run_main("tasks.py", typed, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    line = done.stderr.splitlines()[-1]
    hint = f"; did you mean {meant}?" if meant else ""
    assert line == (f"tasks.py: error: argument TASK: invalid choice: {typed!r}{hint} (choose from demo, test, "
                    "test-long, test-quick, test-floor, bench, bench-quick, install, clean)"), line

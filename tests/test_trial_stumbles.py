"""A new user's small faults in the trial of issue #53 (§1, §11), each by kind: docs/tests.md, "The trial's stumbles".

1, 2. What a learn prints names no path that is gone when it ends: a child's line saying it saved or reported a file
      into the learn's staging (the trainer's "SIGTERM: ...; checkpoint saved to STAGING/...", the evaluator's
      "report: STAGING/check.json") is relayed without that clause; no other line names a path inside the staging.
"""
import glob
import os
import re
import sys

import pytest

from mnistkit import learn

# Lines a learn's scripts print that name its staging folder (STAGE stands for its path): the generator's, the
# trainer's at its start, end and stop, the evaluator's score and report, an error naming a file there.
CHILD_LINES = [
    "wrote 3 train records to STAGE/data/mnist_train.tfrecords",
    "training on 8000 records from data/mnist_train.tfrecords, resuming from STAGE/mnist_model-5; target "
    "global_step 9; mixing 25% from STAGE/data/mnist_train.tfrecords",
    "After 7 training steps, loss on training batch is 0.2.",
    "done at step 9; checkpoint saved to STAGE/mnist_model-9",
    "SIGTERM: stopped at step 7; checkpoint saved to STAGE/mnist_model-7",
    "SIGINT: stopped at step 7; checkpoint saved to STAGE/mnist_model-7",
    "After 9 training steps, test accuracy = 0.93 (STAGE/mnist_model-9, data/mnist_test.tfrecords)",
    "report: STAGE/check.json",
    "report: STAGE/check.json, STAGE/report.png",
    "error: STAGE/data/mnist_train.tfrecords: No space left on device; checkpoint saved to STAGE/mnist_model-8",
]


def path_words(line):
    """The words of `line` that read as paths (a slash in them, or a file name with an extension)."""
    return [w.strip("(),;:") for w in line.split() if "/" in w or re.fullmatch(r"[\w.-]+\.[a-z]{2,9}[),;:]?", w)]


@pytest.mark.quick
def test_a_learns_lines_name_no_path_its_end_removes_and_never_say_its_work_saved_there(tmp_path, monkeypatch):
    """The child lines, printed by a script a learn runs (learn.run), as the learn relays them; then the staging
    removed as a learn's end does. Each path printed is there afterwards; no line says a file was saved."""
    staging = tmp_path / "mnist-learn-x"
    (staging / "data").mkdir(parents=True)
    (tmp_path / "model").mkdir()
    for name in ("mnist_model-5.index", "checkpoint"):
        (tmp_path / "model" / name).write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mnist_train.tfrecords").write_text("")
    (tmp_path / "data" / "mnist_test.tfrecords").write_text("")
    child = tmp_path / "child.py"
    child.write_text("import sys\nfor line in sys.argv[1:]:\n    print(line)\n", encoding="utf-8")
    printed = []
    watch = learn.Watch(printed.append)
    watch.name(str(staging / "mnist_model-5"), os.path.join("model", "mnist_model-5"))
    watch.temporary(str(staging))
    learn.run([str(child), *(line.replace("STAGE", str(staging)) for line in CHILD_LINES)], watch, "failed")
    for path in staging.rglob("*"):
        path.unlink() if path.is_file() else None
    monkeypatch.chdir(tmp_path)
    assert printed, "nothing relayed"
    for line in printed:
        assert "saved" not in line and not line.startswith("report"), (line, printed)
        assert str(tmp_path) not in line and "STAGING" not in line, line
        gone = [p for p in path_words(line) if not os.path.exists(p) and not glob.glob(p + ".*")]  # a prefix
        assert not gone, (line, gone)
    assert "wrote 3 train records" in printed and "done at step 9" in printed and "SIGTERM: stopped at step 7" in \
        printed  # what was done is still said, without where it went

"""A new user's ninth stumbles, each by kind: docs/tests.md, "A new user's ninth stumbles (test_stumbles9.py)".

1. A task mistyped (`python tasks.py dmeo`) names the task meant, as a mistyped option of a course script does.
2. A model folder's own history/ snapshots or set-aside learns given as pictures (or learns/ as --model-dir) are
   said to be what they are, and the model folder itself is the one given back (`--model-dir model`).
3. mnist_export.py's --export-dir a folder that holds checkpoints is refused, nothing written.
4. An input that ends after a refused answer at the course's first prompt exits non-zero; a plain Ctrl-D exits 0.
"""
import pytest

from conftest import run_main, tree_digests
from test_trial7 import folder_of
from mnistkit import networks


def with_parts(tmp_path):
    """./model as a trainer and a learn leave it (empty checkpoint files, names listed only): its checkpoint, five
    history/ snapshots' files and a learn set aside in learns/1/."""
    model = folder_of(tmp_path / "model", networks.MLP)
    for part in ("history", "learns/1"):
        (model / part).mkdir(parents=True)
        for end in (".index", ".data-00000-of-00001"):
            (model / part / f"mnist_model-1000{end}").write_bytes(b"")
    return model


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


@pytest.mark.quick
@pytest.mark.parametrize("given, what", [
    ("model/history", "the history snapshots of the model folder model (mnist_backward.py --history)"),
    ("model/history/", "the history snapshots of the model folder model (mnist_backward.py --history)"),
    ("model/learns/1", "learn 1's checkpoint, set aside by mnist_learn.py, of the model folder model"),
    ("model/learns", "the learns' checkpoints mnist_learn.py set aside for the model folder model"),
])
def test_a_model_folders_own_snapshots_given_as_pictures_name_the_model_folder(given, what, tmp_path):
    """Fails before the fix: `model/history: no picture files in this folder; it holds checkpoints: a model is
    given with --model-dir model/history`, a folder of old snapshots taken for the model (and for learns/,
    `--model-dir model/learns/1`, a learn the check refused), where the model meant is model itself."""
    with_parts(tmp_path)
    done = run_main("mnist_app.py", given, cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr == (f"error: {given}: no picture files in this folder; it holds {what}: a model is given "
                           "with --model-dir model, the pictures after it\n"), done.stderr


@pytest.mark.quick
@pytest.mark.parametrize("script", ["mnist_app.py", "mnist_export.py"])
def test_a_model_folders_learns_folder_as_model_dir_gives_the_model_folder(script, tmp_path):
    """Fails before the fix: `model/learns holds checkpoint folders: give model/learns/1`, a learn set aside
    (refused by its check) offered as the model, not model itself."""
    with_parts(tmp_path)
    done = run_main(script, "--model-dir", "model/learns", *(["seven.png"] if script == "mnist_app.py" else []),
                    cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == ("error: model/learns holds the learns' checkpoints mnist_learn.py set "
                                            "aside for the model folder model: give model"), done.stderr


@pytest.mark.quick
@pytest.mark.parametrize("given, what", [
    ("model", "holds checkpoints"),
    ("./model/", "holds checkpoints"),
    ("model/history", "holds the history snapshots of the model folder model (mnist_backward.py --history)"),
    ("model/learns/1", "holds learn 1's checkpoint, set aside by mnist_learn.py, of the model folder model"),
])
def test_an_export_dir_that_holds_checkpoints_is_refused_and_nothing_written(given, what, tmp_path):
    """Fails before the fix: `--export-dir model` went on to export into the checkpoint folder (mnist/<N>/ and the
    .tflite files beside the checkpoints, under the folder's lock a trainer takes), without a word; here, with
    empty checkpoint files, it read the checkpoint instead and said it was damaged."""
    model = with_parts(tmp_path)
    before = tree_digests(model, with_folders=True)
    done = run_main("mnist_export.py", "--export-dir", given, cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr == (f"error: {given} {what}: mnist_export.py writes nothing into a model folder; give "
                           "--export-dir a folder of the exports' own (the default is export)\n"), done.stderr
    assert tree_digests(model, with_folders=True) == before


@pytest.mark.quick
@pytest.mark.parametrize("typed, status, said", [
    ("two\n", 1, ["error: the number of test pictures must be a whole number, not 'two'",
                  "error: end of input after the refused answer 'two': the number of test pictures was never given"]),
    ("two\n-1", 1, ["error: the number of test pictures must be a whole number, not 'two'",
                    "error: the number of test pictures must be 0 or more, not '-1'",
                    "error: end of input after the refused answer '-1': the number of test pictures was never given"]),
    ("", 0, ["end of input: no pictures to read"]),  # a plain Ctrl-D at the first prompt: exit 0, as documented
])
def test_an_input_that_ends_after_a_refused_count_exits_non_zero(typed, status, said, tmp_path):
    """Fails before the fix: `two`, then Ctrl-D (or a piped answer refused) ended with `end of input: no pictures
    to read` and exit 0, so a script that pipes a wrong count into the app took the run for a success."""
    with_parts(tmp_path)
    done = run_main("mnist_app.py", cwd=tmp_path, input=typed)
    assert done.returncode == status and done.stderr.splitlines() == said, done.stderr
    assert done.stdout == "input the number of test pictures:" * (len(said) if status else 1) + "\n", done.stdout

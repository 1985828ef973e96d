"""More cases of "a folder that is not there is named so" (issue #53 §11), beyond test_server_faults.py's.

mnist_learn.py with a mistyped --model-dir (`modle` beside `model`) said the folder was not there and then
suggested training into it (`python mnist_backward.py --model-dir modle`), which would make the typo's folder;
so did its --undo, --redo, --accept-worse and --discard. Now each says what the other scripts say: no such
folder, did you mean model?
"""
import pytest

from conftest import run_main


@pytest.mark.quick
@pytest.mark.parametrize("action", [[], ["--undo"], ["--redo"], ["--accept-worse"], ["--discard"]])
def test_a_mistyped_model_dir_for_a_learn_or_its_undo_names_the_folder_meant_and_no_trainer(action, tmp_path):
    (tmp_path / "model").mkdir()
    result = run_main("mnist_learn.py", *action, "--model-dir", "modle", cwd=tmp_path)
    assert result.returncode != 0
    line = result.stderr.strip().splitlines()[-1]
    assert "modle" in line and "not there" in line and "did you mean model?" in line, line
    assert "backward.py" not in line and "train" not in line, line
    assert not (tmp_path / "modle").exists()

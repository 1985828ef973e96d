"""A new user's stumbles (issue #53 §11, the third audit): a file of the keep folder given for the folder.

`--keep-dir my_digits.txt` (the label file, the name the course's layout shows beside the folder) or
`--keep-dir my_digits/000001_7.jpg` said "is not a folder; move it away or keep digits in another folder": advice
to move the user's own label file or kept picture away. Now the line names the keep folder meant and the flag to
give; any other file is refused as before.
"""
import numpy as np
import pytest

from conftest import run_main
from test_errors import other_graph_checkpoint
from mnistkit import keep
from mnistkit.errors import DataError


@pytest.fixture
def kept(tmp_path):
    """tmp_path/my_digits with one kept digit, its label file beside it; the store."""
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    pixels = np.zeros((28, 28), np.uint8)
    pixels[5:23, 13:16] = 255
    store.keep(pixels, 1)
    return store


@pytest.mark.quick
@pytest.mark.parametrize("given, what", [("my_digits.txt", "the label file"),
                                         ("my_digits/000001_1.jpg", "a kept digit's picture")])
def test_a_file_of_the_keep_folder_given_for_it_names_the_folder_meant(kept, tmp_path, monkeypatch, given, what):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError) as raised:
        keep.KeptDigits(given)
    assert str(raised.value) == f"{given}: is {what} of the keep folder my_digits, not a folder; give --keep-dir " \
                                "my_digits"
    other_graph_checkpoint(tmp_path / "model", hidden=500)  # a model to learn into (no training)
    done = run_main("mnist_learn.py", "--keep-dir", str(tmp_path / given), "--steps", "5", cwd=tmp_path)
    assert done.returncode == 1 and "move it away" not in done.stderr and \
        f"give --keep-dir {tmp_path / 'my_digits'}" in done.stderr, done.stderr


@pytest.mark.quick
def test_from_inside_the_keep_folder_a_kept_picture_names_the_current_folder(kept, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "my_digits")
    with pytest.raises(DataError, match=r"^000001_1.jpg: is a kept digit's picture of the keep folder \., not a "
                                        r"folder; give --keep-dir \.$"):
        keep.KeptDigits("000001_1.jpg")


@pytest.mark.quick
def test_another_file_given_for_the_keep_folder_is_refused_as_before(tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("x\n", encoding="utf-8")
    with pytest.raises(DataError, match="is not a folder; move it away or keep digits in another folder"):
        keep.KeptDigits(str(other))

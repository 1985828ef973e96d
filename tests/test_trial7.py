"""A new user's stumbles of trial 7, each by kind: docs/tests.md, "Trial 7's stumbles".

a. A checkpoint's own file (.index, .meta, .data-00000-of-00001, as tab-completion gives) names its prefix
   wherever a checkpoint path is taken (mnist_test.py --checkpoint, mnist_lenet5_test.py's).
"""
import pytest

import mnist_test
from mnistkit import folders


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

"""Paths whose bytes are not UTF-8 (issue #53 §7, the third audit).

A folder unzipped on Linux from a zip made on Chinese Windows keeps its name's GBK bytes (中文 = D6 D0 CE C4), which
are not UTF-8; Python holds them as surrogates, and TensorFlow's C++, which takes UTF-8 strings only, cannot open
such a path. Before: `mnist_app.py --model-dir <that folder>/model` said the checkpoint "is damaged" and told the
user to move it away and train again; the trainer and mnist_test.py ended in a pybind "Invoked with" TypeError.
Now a path flag TensorFlow opens is given relative to the current folder when that is UTF-8 (run from inside the
folder), else refused in one usage line naming the path as GBK reads it; the checkpoint reader takes such a prefix
through links, as it takes one with glob characters; pictures and other files only Python opens are read as named.
"""
import os

import numpy as np
import pytest

from conftest import run_main, run_script
from test_errors import other_graph_checkpoint
from mnistkit import checkpoints, cli

GBK = os.fsdecode(b"\xd6\xd0\xce\xc4 \xca\xfd\xbe\xdd")  # "中文 数据" in GBK: not UTF-8


@pytest.fixture
def gbk_model(tmp_path):
    """tmp_path/<GBK name>/model holding a 784-500-10 checkpoint (zeros, no training): written under a UTF-8 name,
    the folder then renamed, as an unzip would name it."""
    other_graph_checkpoint(tmp_path / "plain" / "model", hidden=500)
    os.rename(tmp_path / "plain", os.path.join(tmp_path, GBK))
    return os.path.join(tmp_path, GBK, "model")


@pytest.mark.quick
@pytest.mark.parametrize("script, flag", [("mnist_backward.py", "--model-dir"), ("mnist_backward.py", "--data-dir"),
                                          ("mnist_test.py", "--model-dir"), ("mnist_export.py", "--export-dir"),
                                          ("mnist_app.py", "--model-dir"), ("mnist_learn.py", "--model-dir")])
def test_a_path_tensorflow_opens_that_is_not_utf8_is_one_usage_line_naming_it_as_gbk_reads_it(gbk_model, tmp_path,
                                                                                            script, flag):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_main(script, flag, gbk_model, cwd=elsewhere)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "中文 数据" in lines[-1] and "not UTF-8" in lines[-1] and flag in lines[-1], done.stderr


@pytest.mark.quick
def test_from_inside_the_folder_a_path_flag_is_given_relative_and_pictures_are_read_as_named(gbk_model, monkeypatch):
    monkeypatch.chdir(os.path.dirname(gbk_model))
    given = cli.path(gbk_model)
    assert given.encode("utf-8") and os.path.samefile(given, gbk_model)
    picture = os.path.join(os.path.dirname(gbk_model), "digit.png")
    assert cli.plain_path(picture) == picture  # Pillow opens any bytes: never refused, never rewritten


@pytest.mark.quick
def test_the_checkpoint_reader_reads_a_folder_whose_name_is_not_utf8(gbk_model):
    prefix = checkpoints.latest(gbk_model)
    values = checkpoints.read_checkpoint(prefix)
    assert sorted(values)[:2] == ["b1", "b1/ExponentialMovingAverage"] and not np.any(values["w1"])


def test_the_app_run_from_inside_the_folder_reads_a_digit_with_its_absolute_model_dir(gbk_model, tmp_path):
    from PIL import Image
    picture = os.path.join(os.path.dirname(gbk_model), "seven.png")
    ink = np.zeros((28, 28), np.uint8)
    ink[5:23, 13:16] = 255
    Image.fromarray(255 - ink).save(picture)
    done = run_script("mnist_app.py", "--model-dir", gbk_model, picture, cwd=os.path.dirname(gbk_model))
    assert done.returncode == 0 and "The prediction number is" in done.stdout, (done.stdout, done.stderr)
    assert "damaged" not in done.stderr and "Invoked with" not in done.stderr

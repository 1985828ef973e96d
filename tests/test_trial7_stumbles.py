"""A new user's stumbles in trial 7, each by kind: docs/tests.md, "Trial 7's stumbles".

a. A learn's check scores each checkpoint on the kept digits too: that line says how many of them were read right
   (`your kept digits: 5 of 5 read right`), not a "test accuracy = 1" that reads as the test set's.
d. A body that is gzip with no Content-Encoding saying so is said to be gzip (400), not a UTF-8 decoding error.
e. A learn's lines make sense on the board's page too: none speaks of the command line (the generator's source line
   names the folders).
"""
import gzip
import json

import pytest

from mnistkit import learn

STAGE = "/tmp/mnist-learn-trial7"


def watching():
    """A learn's Watch as it is in its checking stage: lines kept in a list, the staging STAGE, the learned
    checkpoint named, 5 kept digits whose test records are STAGE/data/mnist_test.tfrecords."""
    lines = []
    watch = learn.Watch(out=lines.append)
    watch.temporary(STAGE)
    watch.name(f"{STAGE}/mnist_model-7832", learn.LEARNED)
    watch.kept_scored(f"{STAGE}/data/mnist_test.tfrecords", 5)
    return watch, lines


@pytest.mark.quick
def test_a_learns_score_on_the_kept_digits_says_how_many_were_read_right_not_a_test_accuracy():
    watch, lines = watching()
    kept, tests = f"{STAGE}/data/mnist_test.tfrecords", "data/mnist_test.tfrecords"
    for step, accuracy, checkpoint, records in ((7032, 0.9311, "model/mnist_model-7032", tests),
                                                (7032, 0.6, "model/mnist_model-7032", kept),
                                                (7832, 0.9345, f"{STAGE}/mnist_model-7832", tests),
                                                (7832, 1, f"{STAGE}/mnist_model-7832", kept)):
        watch.say(f"After {step} training steps, test accuracy = {accuracy:g} ({checkpoint}, {records})")
    assert lines == [
        "After 7032 training steps, test accuracy = 0.9311 (model/mnist_model-7032, data/mnist_test.tfrecords)",
        "After 7032 training steps, your kept digits: 3 of 5 read right (model/mnist_model-7032)",
        "After 7832 training steps, test accuracy = 0.9345 (the learned checkpoint, data/mnist_test.tfrecords)",
        "After 7832 training steps, your kept digits: 5 of 5 read right (the learned checkpoint)"]


@pytest.mark.quick
@pytest.mark.parametrize("path", ["/v1/models/mnist:predict", "/board/keep"])
def test_a_gzip_body_sent_without_its_content_encoding_is_said_to_be_gzip(path, tmp_path):
    """d. Before: `JSON Parse error: the body is not JSON ('utf-8' codec can't decode byte 0x8b ...)`."""
    from test_server_faults import Recording, board_of, posted
    board = board_of(Recording())
    body = json.dumps({"instances": [[0.0] * 784]}).encode()
    for sent, headers in ((gzip.compress(body), ()),
                          (gzip.compress(gzip.compress(body)), [(b"content-encoding", b"gzip")])):  # gzipped twice
        answer = posted(board, sent, headers, path=path)
        assert answer.status == 400 and answer.error() == (
            "JSON Parse error: the body looks gzip-compressed (it starts with gzip's bytes 1f 8b): send "
            "Content-Encoding: gzip with it, gzipped once"), answer.body


def test_a_learns_preparing_lines_speak_of_no_command_line_and_name_the_keep_folder(tmp_path):
    """e. The preparing stage's lines, as a learn shows them (the page's progress line shows each): before, the
    generator's `source: the folders given on the command line`, though the page's user pressed a button."""
    import numpy as np

    from mnistkit import keep
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    for digit in (3, 8):
        pixels = np.zeros((28, 28), np.uint8)
        pixels[6:22, 10 + digit:13 + digit] = 255  # a bar
        store.keep(pixels, digit)
    lines = []
    watch = learn.Watch(out=lines.append)
    staging = tmp_path / "staging"
    staging.mkdir()
    watch.name(str(staging / "kept" / "my_digits"), store.folder)
    watch.temporary(str(staging))
    learn.prepare(learn.Plan(model_dir=str(tmp_path / "model")), store, str(staging), watch)
    assert f"source: {store.folder} (labels {store.folder}.txt) for train and test" in lines, lines
    assert not [line for line in lines if "command line" in line or " --" in line], lines

"""A learn's learning rate (mnistkit/learn.py's rate_flags, the trainer's --decay-from; docs/teach.md, "The learn's
learning rate").

The course's schedule decays the rate x0.99 for each epoch of the training records, counted from step 0: after the
course's 50,000 steps on the bundled sample's 8,000 records it is 3.5e-7, and a learn there learned none of the kept
digits (a new user's trial: "your digits 0/3 -> 0/3"). A learn counts the decay from its own first step instead. The
faded model here is trained_workdir's (2,000 steps), learning on FEW of the sample's training records: 2 steps an
epoch, so its 2,000 steps are 1,000 epochs and the course's rate there 4.3e-6, as after a long training, at no
training cost.
"""
import os
import struct
import types

import pytest

from conftest import KEPT, LEARN_STEPS, TRAIN_STEPS, copy_into, keep_sevens_as_threes
from mnistkit import learn, promotion, records, training

FEW = 400  # training records of the faded learn: 2 steps an epoch at the batch of 200


def first_records(source, target, count):
    """Write the first `count` records of the TFRecord file `source` into `target`, byte for byte (each record's
    frame: its length, uint64 little-endian, and its checksums kept as they are)."""
    with open(source, "rb") as f:
        data = f.read()
    end = 0
    for _ in range(count):
        (length,) = struct.unpack("<Q", data[end:end + 8])
        end += 8 + 4 + length + 4
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as f:
        f.write(data[:end])


@pytest.mark.quick
def test_a_learns_rate_counts_its_decay_from_its_first_step_and_says_so():
    """The learn gives the trainer --decay-from <its first step>; the rate there is the base, whatever the step,
    and the trainer's line says it beside the course's; without --decay-from the schedule is the course's."""
    assert learn.rate_flags(os.path.join("model", "mnist_model-50000")) == ["--decay-from", "50000"]
    course = types.SimpleNamespace(learning_rate_base=0.1, learning_rate_decay=0.99, batch_size=200, steps=50600)
    learning = types.SimpleNamespace(**vars(course), decay_from=50000)
    assert training.learning_rate_at(course, 8000, 200, 50000) == pytest.approx(3.5e-7, rel=0.02)
    assert training.learning_rate_at(learning, 8000, 200, 50000) == 0.1
    assert training.learning_rate_at(learning, 8000, 200, 50040) == pytest.approx(0.099)  # one epoch on
    assert training.learning_rate_at(learning, 8000, 200, 49000) == 0.1  # never above the base
    assert training.faded_rate(learning, 8000, 50000) == (
        "learning rate 0.1 at step 50000: --decay-from 50000 counts the decay x0.99 an epoch of 8000 records from "
        "step 50000 (the course's schedule, from step 0, is at 3.5e-07 here; docs/teach.md, \"The learn's learning "
        "rate\")")
    assert training.faded_rate(course, 8000, 50000).startswith("note: at step 50000 the learning rate is 3.5e-07")


@pytest.mark.long
def test_a_learn_on_a_model_whose_rate_has_faded_learns_the_kept_digits(trained_workdir, sample_workdir, tmp_path):
    """Before the learn counted its own decay, this learn ran at the course's 4.3e-6 and read none of the kept 7s
    as the 3 they were kept as (0/10 -> 0/10). The learn's rate, its line and its record: undo puts the options
    before back, redo the learn's (--decay-from 2000)."""
    work = copy_into(tmp_path / "work", trained_workdir, "model")
    first_records(os.path.join(sample_workdir, "data", records.TRAIN_FILE), str(work / "few" / records.TRAIN_FILE),
                  FEW)
    keep_sevens_as_threes(sample_workdir, work / "my_digits")
    lines, model = [], str(work / "model")
    try:
        learn.learn(model, str(work / "my_digits"), steps=LEARN_STEPS, data_dir=str(work / "few"),
                    watch=learn.Watch(lines.append))
    except learn.LearnHeld:
        pass  # the kept 7s read as 3 may pull MNIST's 7s: the check's business, not this test's
    (entry,) = promotion.learn_history(model)[0]
    assert entry["check"]["kept"]["right"][0] == 0, entry["check"]
    assert entry["check"]["kept"]["right"][1] >= KEPT - 1, (entry["check"], [line for line in lines if "rate" in line])
    assert (f"learning rate 0.1 at step {TRAIN_STEPS}: --decay-from {TRAIN_STEPS} counts the decay x0.99 an epoch of "
            f"{FEW} records from step {TRAIN_STEPS} (the course's schedule, from step 0, is at 4.3e-06 here; "
            "docs/teach.md, \"The learn's learning rate\")") in lines
    assert entry["options"]["after"]["decay_from"] == TRAIN_STEPS
    if entry["state"] == "held":
        promotion.accept(model)
    from mnistkit import folders
    assert folders.folder_record(model)["decay_from"] == TRAIN_STEPS
    promotion.undo(model)
    assert folders.folder_record(model).get("decay_from", 0) == 0
    promotion.redo(model)
    assert folders.folder_record(model)["decay_from"] == TRAIN_STEPS


MISREAD_BY = 0.05  # another digit's lead in probability over a picture's own: a digit read wrong, not by a hair


@pytest.mark.long
def test_a_learn_on_a_young_model_learns_the_digits_it_misread_and_passes_its_check(trained_workdir,
                                                                                   sample_workdir, tmp_path):
    """The demo's model (2,000 steps: the course's rate there is 0.061) learns at 0.1 from its first step: five
    of the sample's training digits it reads wrong, kept under their own digit, are read right after it; no
    digit's recall or precision falls by more than 3.5 points, nor the accuracy by more than 1 (measured: at most
    1.5 points for a digit with ten such digits, docs/teach.md); and the learn is in service unless a fall passed
    the check's limits (2 points of a digit are 4 of the ~200 test records of each: within the run's noise, as
    the queue runners' order varies). The five are misread by MISREAD_BY at least: a near tie (another digit ahead
    by 0.002) can be read right by the check, whose kept digit went through a JPG and the records."""
    import numpy as np
    from PIL import Image
    import mnist_app
    from mnistkit import keep
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    jpgs = os.path.join(sample_workdir, "mnist_data_jpg", "mnist_train_jpg_8000")
    with open(jpgs + ".txt") as f:
        named = [(name, int(digit)) for name, digit in (line.split() for line in f if line.strip())][:2000]
    pictures = np.stack([np.asarray(Image.open(os.path.join(jpgs, name)).convert("L")) for name, _ in named])
    predictor = mnist_app.Predictor(str(work / "model"))
    try:
        probabilities = predictor.predict(pictures.reshape(-1, 784).astype("float32") / 255)
    finally:
        predictor.sess.close()
    digits = np.array([digit for _, digit in named])
    by = probabilities.max(axis=1) - probabilities[np.arange(len(named)), digits]  # how far another digit leads
    misread = [i for i in range(len(named)) if by[i] >= MISREAD_BY][:5]
    store = keep.KeptDigits(str(work / "my_digits"))
    for i in misread:
        store.keep(pictures[i], named[i][1])
    lines = []
    try:
        learn.learn(str(work / "model"), str(work / "my_digits"), data_dir=str(work / "data"),
                    watch=learn.Watch(lines.append))
    except learn.LearnHeld:  # held by a fall past the check's limits: the falls are bounded below all the same
        pass
    (entry,) = promotion.learn_history(str(work / "model"))[0]
    check = entry["check"]
    assert check["kept"]["right"] == [0, len(misread)], check
    falls = [pair[0] - pair[1] for measure in promotion.MEASURES for pair in check["test"][measure] if pair]
    assert max(falls) <= 0.035, check  # the queue runners' order varies: 1.5 points measured, 2.1 once (make test-long)
    assert check["test"]["accuracy"][0] - check["test"]["accuracy"][1] <= 0.01, check
    assert entry["state"] == ("held" if check["fell"] else "promoted"), entry
    assert any(line.startswith(f"learning rate 0.1 at step {TRAIN_STEPS}: ") for line in lines)

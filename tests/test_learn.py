"""Learning from the kept digits (mnistkit/learn.py, mnist_learn.py) and the trainer's --mix-records.

The mix is checked at the pipeline level, on batches whose kept part is recognizable (constant images, all
labelled 3, which MNIST never holds). Learns run the real generator, trainers and evaluators as subprocesses on
copies of the shared fixtures, for a few hundred steps at most: conftest's learned_workdir is one learn of 10 test
images of 7 kept as 3, which the check holds (digit 7's recall falls), read by most tests here; the undo and redo
test adds two more learns on a copy of it.
"""
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

from conftest import (KEPT, LEARN_STEPS, ROOT, TRAIN_STEPS, copy_into, keep_sevens_as_threes, run_main, run_script,
                      ended, shown, tree_digests, wait_limit)
import mnist_backward
import mnist_forward
import mnist_test
from mnistkit import checkpoints, files, folders, keep, learn, promotion, records
from mnistkit.errors import DataError
from tf_compat import tf

LEARNED = f"mnist_model-{TRAIN_STEPS + LEARN_STEPS}"  # the learned_workdir learn's checkpoint
HUGE_RATE = "1e6"  # a learning rate that makes the loss non-finite within a few steps (test_diverged's)


def write_constant_records(path, values, digit=3):
    """A TFRecord file of one record per value: an image whose 784 pixels are all `value`, labelled `digit`."""
    with tf.io.TFRecordWriter(str(path)) as f:
        for value in values:
            f.write(records.make_example(bytes([value]) * records.IMAGE_PIXELS, digit).SerializeToString())


def batches_of(settings, data, count):
    """`count` batches (img float32 [B, 784], label float32 [B, 10]) of the trainer's graph (mnist_backward.build_graph)."""
    with tf.Graph().as_default(), tf.Session() as sess:
        graph = mnist_backward.build_graph(settings, data)
        img, label = graph.img_batch, graph.label_batch
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        try:
            return [sess.run([img, label]) for _ in range(count)]
        finally:
            coord.request_stop()
            coord.join(threads)


@pytest.mark.parametrize("pipeline", ["fast", "course", "tfdata"])
def test_mixing_draws_its_share_of_every_batch_from_the_second_source(sample_workdir, tmp_path, pipeline):
    values = list(range(20, 20 + 10 * KEPT, 10))  # 10 distinct constant images
    write_constant_records(tmp_path / "kept.tfrecords", values)
    lines = []
    settings = mnist_backward.settings_for(mnist_forward, batch_size=40, pipeline=pipeline, log=lines.append,
                                           data_dir=str(sample_workdir / "data"),
                                           mix_records=f"{tmp_path / 'kept.tfrecords'}:0.25")
    data = records.training_data(settings.data_dir)
    seen = set()
    for img, label in batches_of(settings, data, 5):
        assert img.shape == (40, 784) and label.shape == (40, 10)
        constant = img.min(axis=1) == img.max(axis=1)
        assert constant[30:].all() and not constant[:30].any()  # the last 25% of each batch, and only those
        assert (label[30:].argmax(axis=1) == 3).all()
        seen |= {int(round(v * 255)) for v in img[30:, 0]}
    assert seen <= set(values) and len(seen) >= KEPT // 2  # drawn from the whole kept set, shuffled
    assert lines == [f"mixing 10 of every 40 examples from the {KEPT} records of {tmp_path / 'kept.tfrecords'} "
                     "(each about 1 times a step)"]


def test_a_mix_share_outside_0_to_1_is_a_usage_error(tmp_path):
    result = run_main("mnist_backward.py", "--mix-records", "kept:1.5", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(": error: argument --mix-records: --mix-records "
                                              "kept:1.5: the share after ':' must be between 0 and 1, e.g. kept:0.25")
    assert records.mix_of("C:\\data") == records.Mix("C:\\data", records.MIX_SHARE)
    assert records.mix_of("my_data:0.5") == records.Mix("my_data", 0.5)


# ---------------------------------------------------------------- a learn, checked before it is promoted


def learned_copy(learned_workdir, tmp_path):
    """A copy of learned_workdir (data, model with its held learn, the kept digits) to change."""
    return copy_into(tmp_path / "work", learned_workdir, "data", "model", "my_digits", "my_digits.txt")


def said(learned_workdir):
    """learned_workdir's learn.json: what its learn printed, the progress its Watch heard, its held line, its temp."""
    return json.loads((learned_workdir / "learn.json").read_text())


def entries(model_dir):
    """[(learn number, state)] of the folder's record."""
    return [(e["learn"], e["state"]) for e in promotion.learn_history(str(model_dir))[0]]


def newest(model_dir):
    return os.path.basename(checkpoints.latest(str(model_dir)))


def checkpoint_digests(folder, name):
    """{file name: sha256} of the checkpoint `name`'s files in folder."""
    return {n: d for n, d in tree_digests(folder).items() if "/" not in n and n.startswith(name + ".")}


def kept_pixels(work):
    """The kept digits of the folder `work`'s store as float32 [n, 784] in [0, 1], in label-file order."""
    from PIL import Image
    store = keep.KeptDigits(str(work / "my_digits"))
    return np.stack([np.asarray(Image.open(work / "my_digits" / name)) for name, _ in store.entries()]
                    ).reshape(-1, 784).astype(np.float32) / 255


def threes_predicted(model_dir, pictures):
    """How many of pictures (float32 [n, 784]) the newest checkpoint in model_dir predicts as 3."""
    import mnist_app
    predictor = mnist_app.Predictor(str(model_dir))
    try:
        return int((predictor.predict(pictures).argmax(axis=1) == 3).sum())
    finally:
        predictor.sess.close()


def test_a_learn_that_makes_a_digit_worse_is_checked_and_held_saying_what_fell(learned_workdir, trained_workdir):
    held = said(learned_workdir)["held"]
    model = learned_workdir / "model"
    assert "\n" not in held and held.startswith("not promoted: ")
    assert re.search(r"digit 7's recall fell (0\.\d{3}) → (0\.\d{3}) \(-\d+\.\d points\)", held), held
    assert held.endswith(f", past the limits (2 points for a digit, 0.5 in all); it waits in "
                         f"{os.path.join('model', 'learns', '1')}: use it anyway with `python "
                         f"{shown('mnist_learn.py')} --accept-worse --model-dir model`, or discard it "
                         f"with `python {shown('mnist_learn.py')} --discard --model-dir model`"), held
    # Nothing of the served model changed: its checkpoints and index as trained; the learned one waits aside.
    trained = {n: d for n, d in tree_digests(trained_workdir / "model").items() if n != folders.FOLDER_FILE}
    assert {n: d for n, d in tree_digests(model).items() if n in trained} == trained
    assert newest(model) == f"mnist_model-{TRAIN_STEPS}"
    assert sorted(os.listdir(model / "learns" / "1")) == [LEARNED + ext for ext in (".data-00000-of-00001",
                                                                                  ".index", ".meta")]
    (entry,) = promotion.learn_history(str(model))[0]
    assert (entry["learn"], entry["state"], entry["before"], entry["after"]) == (1, "held", newest(model), LEARNED)
    check = entry["check"]
    # The check's numbers are the evaluator's: the model before, scored here, and the kept 7s read as 3 by it.
    step, accuracy, count = mnist_test.evaluate(str(model / newest(model)), str(model.parent / "data" / "mnist_test"
                                                                                ".tfrecords"))
    assert check["test"]["count"] == count == 2000 and check["test"]["accuracy"][0] == accuracy
    before, after = check["kept"]["right"]
    assert check["kept"]["count"] == KEPT and before == threes_predicted(model, kept_pixels(learned_workdir))
    assert KEPT - 1 <= after <= KEPT, check["kept"]  # the learn reads all kept 3s as 3, or (batches' order) all but one
    seven = check["test"]["recall"][7]
    assert seven[0] - seven[1] > promotion.RECALL_DROP and {"digit": 7, "before": seven[0], "after": seven[1]} in \
        check["fell"]
    assert all(pair[0] - pair[1] > promotion.RECALL_DROP for pair in (check["test"][f.get("measure", "recall")][f["digit"]]
                                                              for f in check["fell"] if f["digit"] is not None))
    lines = said(learned_workdir)["lines"]
    assert f"checked: {promotion.summary(check)}" in lines
    assert re.fullmatch(r"MNIST 0\.\d{4} → 0\.\d{4}; digit \d recall 0\.\d{3} → 0\.\d{3}; your digits 0/10 → "
                        rf"{after}/10", promotion.summary(check))


def test_the_check_names_the_digit_that_fell_most_or_that_none_fell():
    recall = [[0.98, 0.98]] * 10
    check = {"test": {"accuracy": [0.9360, 0.9370], "recall": recall}, "kept": {"right": [3, 5], "count": 5}}
    assert promotion.summary(check) == "MNIST 0.9360 → 0.9370; no digit's recall fell; your digits 3/5 → 5/5"
    check["test"]["recall"] = recall[:2] + [[0.951, 0.938], [0.9, 0.89], None] + recall[5:]
    assert promotion.summary(check) == "MNIST 0.9360 → 0.9370; digit 2 recall 0.951 → 0.938; your digits 3/5 → 5/5"


def test_a_learn_says_each_stage_and_every_5_percent_of_its_steps(learned_workdir):
    progress = said(learned_workdir)["progress"]
    assert [p[0] for p in progress if p[0] != "training"] == ["preparing", "checking", "promoting"]
    training = [p for p in progress if p[0] == "training"]
    target = TRAIN_STEPS + LEARN_STEPS
    assert training[0] == ["training", TRAIN_STEPS, target] and all(p[2] == target for p in training)
    steps = [p[1] for p in training]
    assert steps[-1] == target and max(b - a for a, b in zip(steps, steps[1:])) <= LEARN_STEPS // 20
    # checking and promoting speak of the learned checkpoint's step, as their lines do (not the last loss line's)
    assert [p for p in progress if p[0] in ("checking", "promoting")] == [["checking", target, target],
                                                                          ["promoting", target, target]]
    stages = [p[0] for p in progress]
    assert stages.index("preparing") < stages.index("training") < stages.index("checking") < stages.index("promoting")


def test_what_a_learn_prints_and_records_names_no_temporary_folder(learned_workdir):
    lines, temp = said(learned_workdir)["lines"], said(learned_workdir)["temp"]  # temp: the learn's, not this test's
    shown = "\n".join(lines) + (learned_workdir / "model" / folders.FOLDER_FILE).read_text()
    (entry,) = promotion.learn_history(str(learned_workdir / "model"))[0]
    shown = shown.replace(json.dumps(entry["settings"]["known"]["keep_path"]), "")  # the keep store's own path
    assert "mnist-learn-" not in shown and temp + os.sep not in shown
    assert f"wrote {KEPT} train records" in lines  # where to (the staging, gone now) not said
    assert not [line for line in lines if "saved" in line or line.startswith("report: ")], lines
    assert lines[0] == f"learning from {KEPT} kept digits of my_digits into model"
    assert lines[1].startswith(f"warning: all {KEPT} kept digits are 3s: ")  # one digit only: said before it runs
    (entry,) = promotion.learn_history(str(learned_workdir / "model"))[0]
    known = dict(entry["settings"]["known"])
    assert os.path.samefile(known.pop("keep_path"), learned_workdir / "my_digits")
    names = sorted(name for name, _ in keep.KeptDigits(str(learned_workdir / "my_digits")).entries())
    assert known.pop("sums") == "".join(promotion.checksum(str(learned_workdir / "my_digits" / name))
                                        for name in names)  # read in the learn's copy: the same bytes
    assert known == {"keep_dir": os.path.join("..", "my_digits"), "numbers": [[1, KEPT]], "digits": "3" * KEPT}
    assert promotion.unknown(str(learned_workdir / "model"), keep.KeptDigits(str(learned_workdir / "my_digits"))) \
        == KEPT  # held: the model in service learned none of them
    assert all(len(entry["check"]["test"][m]) == 10 for m in ("recall", "precision"))


@pytest.mark.long
def test_accept_undo_and_redo_keep_every_checkpoint_under_a_name_of_its_own(learned_workdir, tmp_path):
    work = learned_copy(learned_workdir, tmp_path)
    model = work / "model"

    def learn_cli(*flags):
        return run_main("mnist_learn.py", "--model-dir", "model", *flags, cwd=work)
    assert learn_cli("--redo").stderr == "error: model: no undone learn to redo\n"
    assert learn_cli("--undo").stderr == "error: model: no learn to undo (each one here is undone, held or discarded)\n"
    first = checkpoint_digests(model / "learns" / "1", LEARNED)
    accepted = learn_cli("--accept-worse")
    assert accepted.returncode == 0 and accepted.stdout.startswith(
        f"learned: {os.path.join('model', LEARNED)} (from {os.path.join('model', 'mnist_model-2000')}), though ")
    assert "digit 7's recall fell " in accepted.stdout and not (model / "learns").exists()
    record = folders.folder_record(str(model))
    assert (newest(model), record["steps"], record["print_every"], record["mix_records"]) == (
        LEARNED, 2200, LEARN_STEPS // 20, {"source": f"{learn.STAGING}/data/mnist_train.tfrecords", "share": 0.25})
    assert entries(model) == [(1, "promoted")] and record["learns"][0]["settings"]["kept"] == KEPT
    second = learn_cli("--steps", "20", "--accept-worse", "--again")  # on top of the first, no new keep: 2200 -> 2220
    assert second.returncode == 0 and newest(model) == "mnist_model-2220", second.stderr
    in_service = checkpoint_digests(model, "mnist_model-2220")
    # Two undos in a row: each checkpoint into a folder of its own, the one from before in service again.
    assert learn_cli("--undo").returncode == 0 and newest(model) == LEARNED
    assert learn_cli("--undo").returncode == 0 and newest(model) == "mnist_model-2000"
    assert checkpoint_digests(model / "learns" / "2", "mnist_model-2220") == in_service
    assert checkpoint_digests(model / "learns" / "1", LEARNED) == first
    assert folders.folder_record(str(model))["steps"] == TRAIN_STEPS  # the trainer's options from before, too
    # Redo twice, in the order they were undone; a third has nothing to redo.
    assert learn_cli("--redo").returncode == 0 and newest(model) == LEARNED
    redone = learn_cli("--redo")
    assert redone.stdout == (f"learned: {os.path.join('model', 'mnist_model-2220')} again (from "
                             f"{os.path.join('model', LEARNED)}); go back with `python "
                             f"{shown('mnist_learn.py')} --undo --model-dir model`\n")
    assert newest(model) == "mnist_model-2220" and checkpoint_digests(model, "mnist_model-2220") == in_service
    assert learn_cli("--redo").stderr == "error: model: no undone learn to redo\n"
    # Undone again, a new learn to the same step: the first learn's mnist_model-2200 stays as it was.
    assert learn_cli("--undo").returncode == 0 and learn_cli("--undo").returncode == 0
    again = learn_cli("--steps", str(LEARN_STEPS), "--accept-worse")
    assert again.returncode == 0 and newest(model) == LEARNED
    assert checkpoint_digests(model, LEARNED) != first  # another training, another checkpoint of that name
    assert learn_cli("--redo").returncode == 1  # a new learn ends what could be redone
    assert learn_cli("--undo").returncode == 0
    assert checkpoint_digests(model / "learns" / "1", LEARNED) == first
    assert set(checkpoint_digests(model / "learns" / "3", LEARNED)) == set(first)
    assert entries(model) == [(1, "undone"), (2, "undone"), (3, "undone")] and newest(model) == "mnist_model-2000"


def test_a_held_learn_waits_for_a_choice_and_is_discarded_on_request(learned_workdir, tmp_path):
    work = learned_copy(learned_workdir, tmp_path)
    before = checkpoint_digests(work / "model", "mnist_model-2000")
    refused = run_main("mnist_learn.py", cwd=work)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith("error: ./model/: learn 1's checkpoint waits for your choice; use it anyway with")
    assert refused.stderr.endswith("--discard --model-dir ./model/`, then learn again\n")
    discarded = run_main("mnist_learn.py", "--discard", "--model-dir", "model", cwd=work)
    assert discarded.returncode == 0 and discarded.stdout == (f"discarded learn 1's checkpoint {LEARNED}; model goes "
                                                              "on with mnist_model-2000\n")
    assert not (work / "model" / "learns").exists() and entries(work / "model") == [(1, "discarded")]
    assert checkpoint_digests(work / "model", "mnist_model-2000") == before
    assert run_main("mnist_learn.py", "--discard", "--model-dir", "model", cwd=work).stderr == (
        "error: model: no learned checkpoint waits for a choice\n")


def failing(function, name, number):
    """function(source, target), but OSError `number` for a target whose file name holds `name`."""
    def call(source, target):
        if name in os.path.basename(target):
            raise OSError(number, os.strerror(number))
        return function(source, target)
    return call


@pytest.mark.parametrize("fails", ["copying the .meta", "renaming the index file"])
def test_a_promote_that_fails_leaves_the_model_folder_exactly_as_it_was(learned_workdir, trained_workdir, tmp_path,
                                                                        monkeypatch, fails):
    work = copy_into(tmp_path / "work", trained_workdir, "model")
    staged = copy_into(tmp_path / "staging", learned_workdir / "model" / "learns" / "1", *os.listdir(
        learned_workdir / "model" / "learns" / "1"))
    (entry,) = promotion.learn_history(str(learned_workdir / "model"))[0]
    entry = {k: v for k, v in entry.items() if k in ("before", "after", "check", "settings", "options")}
    before = tree_digests(work / "model", with_folders=True)
    if fails == "copying the .meta":  # a disk that fills up at the .meta, after the .data
        monkeypatch.setattr(learn.shutil, "copyfile", failing(shutil.copyfile, ".meta", errno.ENOSPC))
    else:  # after the checkpoint's files were moved in and the record put in place
        monkeypatch.setattr(files, "replace", failing(files.replace, folders.INDEX_FILE, errno.EIO))
    plan = learn.Plan(str(work / "model"), None, accept_worse=True)
    with pytest.raises(DataError) as failed:
        learn.promote(str(staged / LEARNED), plan, entry, learn.Watch(lambda line: None))
    assert str(failed.value).endswith("; it is as it was") and "\n" not in str(failed.value)
    assert tree_digests(work / "model", with_folders=True) == before


def test_keeps_and_removals_during_a_learn_go_to_the_next_learn(trained_workdir, sample_workdir, tmp_path,
                                                                monkeypatch):
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    keep_sevens_as_threes(sample_workdir, work / "my_digits")
    meanwhile = keep.KeptDigits(str(work / "my_digits"))  # the board's store, keeping and removing as the learn runs
    run, lines = learn.run, []

    def during(command, watch, failed):
        if command[0].endswith(learn.GENERATOR):  # the generator about to read the kept digits
            for name, _ in meanwhile.entries()[::2]:
                meanwhile.remove(name)
            keep_sevens_as_threes(sample_workdir, work / "my_digits", count=3, first=KEPT)
            run(command, watch, failed)
            raise learn.LearnFailed("stopped after the generator, by the test")
        return run(command, watch, failed)
    monkeypatch.setattr(learn, "run", during)
    with pytest.raises(learn.LearnFailed, match="by the test"):
        learn.learn(str(work / "model"), str(work / "my_digits"), data_dir=str(work / "data"),
                    watch=learn.Watch(lines.append))
    assert f"wrote {KEPT} train records" in lines  # as at its start
    assert meanwhile.count() == KEPT // 2 + 3  # the changes are kept, for the next learn
    assert keep.KeptDigits(str(work / "my_digits")).snapshot(str(tmp_path / "next"))[2] == KEPT // 2 + 3


@pytest.mark.quick
def test_a_learn_into_a_model_folder_that_is_gone_says_so_in_one_line(tmp_path):
    result = run_main("mnist_learn.py", "--model-dir", "gone", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"error: gone: the model folder is not there (not trained yet, or gone: deleted or "
                             f"moved?); nothing to learn from: train one (`python "
                             f"{shown('mnist_backward.py')} --model-dir gone`) or give another --model-dir\n")
    assert not (tmp_path / "gone").exists() and not (tmp_path / "my_digits").exists()


@pytest.mark.quick
def test_a_learn_into_a_file_given_as_model_folder_names_it_a_file(tmp_path):
    (tmp_path / "seven.png").write_bytes(b"not a folder")
    result = run_main("mnist_learn.py", "--model-dir", "seven.png", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == ("error: seven.png is a file, not a model folder: give the folder holding the "
                             "checkpoints\n")
    assert sorted(os.listdir(tmp_path)) == ["seven.png"] and (tmp_path / "seven.png").read_bytes() == b"not a folder"


def test_a_folder_learned_into_by_an_earlier_version_is_still_undone(trained_workdir, tmp_path):
    work = copy_into(tmp_path / "work", trained_workdir, "model")
    model = work / "model"
    (model / folders.OLDER_LEARNS_FILE).write_text(json.dumps([{"before": "mnist_model-1000",
                                                                 "after": "mnist_model-2000"}]))
    kept = checkpoint_digests(model, "mnist_model-2000")
    result = run_main("mnist_learn.py", "--undo", "--model-dir", "model", cwd=work)
    assert result.returncode == 0, result.stderr
    assert newest(model) == "mnist_model-1000"
    assert checkpoint_digests(model / "learns" / "1", "mnist_model-2000") == kept
    assert not (model / folders.OLDER_LEARNS_FILE).exists() and entries(model) == [(1, "undone")]  # one record now
    assert folders.folder_record(str(model))["network"]["layers"] == [784, 500, 10]
    assert run_main("mnist_learn.py", "--redo", "--model-dir", "model", cwd=work).returncode == 0
    assert newest(model) == "mnist_model-2000" and checkpoint_digests(model, "mnist_model-2000") == kept


@pytest.mark.long
def test_learn_resumes_a_lenet5_folder_with_its_own_trainer_and_evaluator(trained_workdir, sample_workdir, tmp_path):
    work = copy_into(tmp_path / "work", trained_workdir, "data")
    result = run_script("mnist_lenet5_backward.py", "--steps", "5", "--model-dir", "lenet", cwd=work)
    assert result.returncode == 0, result.stderr
    keep_sevens_as_threes(sample_workdir, work / "my_digits")
    lines = []
    after = learn.learn(str(work / "lenet"), str(work / "my_digits"), steps=10, data_dir=str(work / "data"),
                        watch=learn.Watch(lines.append), accept_worse=True)
    assert after == checkpoints.prefix_of(str(work / "lenet"), 15)
    assert {"conv1_w", "fc2_w"} <= set(checkpoints.read_checkpoint(after))  # LeNet-5's batch of 100: 25 kept each
    assert any(line.startswith("checked: MNIST ") for line in lines)  # mnist_lenet5_test.py's check
    assert folders.folder_record(str(work / "lenet"))["learns"][0]["check"]["kept"]["count"] == KEPT


@pytest.mark.long
def test_a_diverging_learn_leaves_the_model_folder_byte_identical(trained_workdir, sample_workdir, tmp_path):
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    keep_sevens_as_threes(sample_workdir, work / "my_digits")
    before = tree_digests(work / "model", with_folders=True)
    lines = []
    with pytest.raises(learn.LearnFailed) as failed:
        learn.learn(str(work / "model"), str(work / "my_digits"), steps=LEARN_STEPS, data_dir=str(work / "data"),
                    watch=learn.Watch(lines.append), trainer_args=("--learning-rate-base", HUGE_RATE))
    assert re.fullmatch(r"mnist_backward\.py exited with status 1 \(step \d+: the loss is (nan|inf) \(learning rate "
                        r"[0-9.e+]+\): the training diverged\); nothing learned; .*/model is unchanged", str(failed.value))
    assert tree_digests(work / "model", with_folders=True) == before


def processes_naming(text):
    """The PIDs of live processes whose command line holds `text` (Linux's /proc; [] elsewhere)."""
    found = []
    for pid in filter(str.isdecimal, os.listdir("/proc") if os.path.isdir("/proc") else ()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.mark.parametrize("signum, to", [pytest.param(signal.SIGINT, "group", marks=pytest.mark.long),
                                        (signal.SIGTERM, "pid")])
def test_a_stopped_learn_leaves_the_model_folder_as_it_was_and_nothing_behind(trained_workdir, sample_workdir,
                                                                              tmp_path, signum, to):
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    keep_sevens_as_threes(sample_workdir, work / "my_digits")
    before = tree_digests(work / "model", with_folders=True)
    temporary = tmp_path / "tmp"  # the learn's staging folder goes here
    temporary.mkdir()
    env = {**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(temporary)}
    child = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_learn.py"), "--model-dir", "model", "--keep-dir",
                              "my_digits", "--steps", "1000000", "--", "--print-every", "1"], cwd=work, env=env,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)  # its own group, as a terminal's
    try:
        for line in child.stdout:
            if learn.TRAINER_STEP.match(line):  # the trainer in its step loop (a loss line every step)
                break
        if to == "group":
            os.killpg(child.pid, signum)  # Ctrl-C: to the learn and the trainer alike
        else:
            os.kill(child.pid, signum)  # `kill PID`: the learn alone
        out, err = ended(child, f"the learn after {signal.Signals(signum).name}", 300)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)  # the learn and its trainer
            child.communicate()
    assert child.returncode == 128 + signum, err
    assert err.splitlines()[-1] == f"{signal.Signals(signum).name}: stopped; model is unchanged"
    # the trainer's "SIGTERM: stopped at step N; checkpoint saved to <staging>/..." is relayed without its save,
    # which the learn's end removed (issue 53's new user, told the work was saved)
    assert "saved" not in out + err and "STAGING" not in out + err and str(temporary) not in out + err, out + err
    assert tree_digests(work / "model", with_folders=True) == before  # no lock left either
    assert os.listdir(temporary) == [] and processes_naming(str(temporary)) == []  # no staging folder, no trainer


def test_one_learn_at_a_time_per_model_folder(trained_workdir, sample_workdir, tmp_path):
    work = copy_into(tmp_path / "work", trained_workdir, "model")
    keep_sevens_as_threes(sample_workdir, work / "my_digits")
    before = tree_digests(work / "model", with_folders=True)
    with promotion.one_at_a_time(str(work / "model")):  # a learn of this process (another thread of the board)
        with pytest.raises(DataError, match="another learn is working on this model folder; wait until it ends"):
            learn.learn(str(work / "model"), str(work / "my_digits"), steps=1, watch=learn.Watch(lambda line: None))
    (work / "model" / folders.LOCK_FILE).write_text(f"{os.getppid()}\n")  # a live process of another learn
    with pytest.raises(DataError, match=rf"model: another process \(pid {os.getppid()}\) is writing this folder; "
                                        "wait for it or use another --model-dir"):
        promotion.undo(str(work / "model"))
    os.remove(work / "model" / folders.LOCK_FILE)
    assert tree_digests(work / "model", with_folders=True) == before


def test_mnist_learn_runs_from_any_folder_as_the_readme_says(tmp_path):
    (tmp_path / "model").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, os.path.join(ROOT, "mnist_learn.py"), "--undo", "--model-dir", "model"],
                            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=wait_limit(300))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: model") and "no learn to undo" in result.stderr
    assert len(result.stderr.splitlines()) == 1

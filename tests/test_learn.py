"""Learning from the kept digits (mnistkit/learn.py) and the trainer's --mix-records.

The mix is checked at the pipeline level, on batches whose kept part is recognizable (constant images, all
labelled 3, which MNIST never holds); learn() runs the real generator and trainers as subprocesses on copies of
the shared fixtures, for a few hundred steps at most.
"""
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, copy_into, run_main, run_script, tree_digests
import mnist_backward
import mnist_forward
from mnistkit import checkpoints, folders, keep, learn, records
from mnistkit.errors import DataError
from tf_compat import tf

KEPT = 10  # digits in the kept sets
LEARN_STEPS = 200
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


# ---------------------------------------------------------------- learn()

def kept_sevens_as_threes(sample_workdir, folder):
    """Keep KEPT of the sample's test images of 7, each corrected to 3, in the store `folder`; their pixels."""
    jpgs = os.path.join(sample_workdir, "mnist_data_jpg", "mnist_test_jpg_2000")
    with open(jpgs + ".txt") as f:
        sevens = [line.split()[0] for line in f if line.split()[1] == "7"][:KEPT]
    store, pixels = keep.KeptDigits(str(folder)), []
    for name in sevens:
        pixels.append(np.asarray(Image.open(os.path.join(jpgs, name)).convert("L")))
        store.keep(pixels[-1], 3)
    return np.stack(pixels).reshape(-1, 784).astype(np.float32) / 255


def threes_predicted(model_dir, pictures):
    """How many of pictures (float32 [n, 784]) the newest checkpoint in model_dir predicts as 3."""
    import mnist_app
    predictor = mnist_app.Predictor(str(model_dir))
    try:
        return int((predictor.predict(pictures).argmax(axis=1) == 3).sum())
    finally:
        predictor.sess.close()


def test_learn_trains_on_the_kept_digits_and_promotes_beside_the_old_checkpoint(
        trained_workdir, sample_workdir, tmp_path, summary_line):
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    model = work / "model"
    pictures = kept_sevens_as_threes(sample_workdir, work / "my_digits")
    before = checkpoints.latest(str(model))
    old = {name: digest for name, digest in tree_digests(model).items() if name.startswith(os.path.basename(before))}
    threes_before = threes_predicted(model, pictures)
    lines, started = [], time.monotonic()
    after = learn.learn(str(model), str(work / "my_digits"), steps=LEARN_STEPS, data_dir=str(work / "data"),
                        out=lines.append)
    summary_line(f"learn of {LEARN_STEPS} steps (MLP, {KEPT} kept digits): {time.monotonic() - started:.1f} s")
    step = checkpoints.step_of(before) + LEARN_STEPS
    assert after == checkpoints.prefix_of(str(model), step) == checkpoints.latest(str(model))
    assert f"wrote {KEPT} train records to" in "\n".join(lines)
    assert any(line.startswith(f"done at step {step}; checkpoint saved to ") for line in lines)
    assert {n: d for n, d in tree_digests(model).items() if n in old} == old  # the old checkpoint, untouched
    assert tf.train.get_checkpoint_state(str(model)).model_checkpoint_path.endswith(f"mnist_model-{step}")
    threes_after = threes_predicted(model, pictures)
    summary_line(f"kept 7s read as 3: {threes_before}/{KEPT} before the learn, {threes_after}/{KEPT} after")
    assert threes_after >= threes_before + KEPT // 2

    learn.undo(str(model), out=lines.append)
    assert checkpoints.latest(str(model)) == before
    assert sorted(os.listdir(model / learn.UNDONE_FOLDER)) == sorted(
        os.path.basename(after) + ext for ext in (".data-00000-of-00001", ".index", ".meta"))
    assert not (model / learn.RECORD_FILE).exists()
    with pytest.raises(DataError, match="no learn to undo"):
        learn.undo(str(model))


def test_learn_resumes_a_lenet5_folder_with_its_own_trainer(trained_workdir, sample_workdir, tmp_path):
    work = copy_into(tmp_path / "work", trained_workdir, "data")
    result = run_script("mnist_lenet5_backward.py", "--steps", "5", "--model-dir", "lenet", cwd=work)
    assert result.returncode == 0, result.stderr
    kept_sevens_as_threes(sample_workdir, work / "my_digits")
    after = learn.learn(str(work / "lenet"), str(work / "my_digits"), steps=10, data_dir=str(work / "data"),
                        out=lambda line: None)
    assert after == checkpoints.prefix_of(str(work / "lenet"), 15)
    assert {"conv1_w", "fc2_w"} <= set(checkpoints.read_checkpoint(after))  # LeNet-5's batch of 100: 25 kept each


def test_a_diverging_learn_leaves_the_model_folder_byte_identical(trained_workdir, sample_workdir, tmp_path):
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    kept_sevens_as_threes(sample_workdir, work / "my_digits")
    before = tree_digests(work / "model", with_folders=True)
    lines = []
    with pytest.raises(learn.LearnFailed) as failed:
        learn.learn(str(work / "model"), str(work / "my_digits"), steps=LEARN_STEPS, data_dir=str(work / "data"),
                    out=lines.append, trainer_args=("--learning-rate-base", HUGE_RATE))
    assert re.fullmatch(r"mnist_backward\.py exited with status 1 \(step \d+: the loss is (nan|inf) \(learning rate "
                        r"[0-9.e+]+\): the training diverged\); nothing learned; .*/model is unchanged", str(failed.value))
    assert tree_digests(work / "model", with_folders=True) == before


def test_a_stopped_learn_leaves_the_model_folder_as_it_was(trained_workdir, sample_workdir, tmp_path):
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    kept_sevens_as_threes(sample_workdir, work / "my_digits")
    before = tree_digests(work / "model", with_folders=True)
    env = {**os.environ, "PYTHONPATH": ROOT}
    child = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_learn.py"), "--model-dir", "model", "--keep-dir",
                              "my_digits", "--steps", "1000000"], cwd=work, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)  # its own group, as a terminal's
    try:
        for line in child.stdout:
            if line.startswith("training on "):
                break
        time.sleep(2)  # into the step loop (a stop before it ends the trainer as well, saving nothing)
        os.killpg(child.pid, signal.SIGINT)  # Ctrl-C: to the learn and the trainer alike
        out, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 128 + signal.SIGINT, err
    assert err.splitlines()[-1] == "SIGINT: stopped; model is unchanged"
    assert tree_digests(work / "model", with_folders=True) == before


def test_one_learn_at_a_time_per_model_folder(trained_workdir, sample_workdir, tmp_path):
    work = copy_into(tmp_path / "work", trained_workdir, "model")
    kept_sevens_as_threes(sample_workdir, work / "my_digits")
    before = tree_digests(work / "model", with_folders=True)
    with learn.one_at_a_time(str(work / "model")):  # a learn of this process (another thread of the board)
        with pytest.raises(DataError, match="another learn is working on this model folder; wait until it ends"):
            learn.learn(str(work / "model"), str(work / "my_digits"), steps=1, out=lambda line: None)
    (work / "model" / folders.LOCK_FILE).write_text(f"{os.getppid()}\n")  # a live process of another learn
    with pytest.raises(DataError, match=rf"model: another process \(pid {os.getppid()}\) is writing this folder; "
                                        "wait for it or use another --model-dir"):
        learn.undo(str(work / "model"))
    os.remove(work / "model" / folders.LOCK_FILE)
    assert tree_digests(work / "model", with_folders=True) == before


def test_mnist_learn_runs_from_any_folder_as_the_readme_says(tmp_path):
    (tmp_path / "model").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, os.path.join(ROOT, "mnist_learn.py"), "--undo", "--model-dir", "model"],
                            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: model") and "no learn to undo" in result.stderr
    assert len(result.stderr.splitlines()) == 1

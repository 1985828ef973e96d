"""The convolutional chapter: LeNet-5's network, training, resume, evaluation, app, and model folders."""
import hashlib
import json
import os

import numpy as np
import pytest
from PIL import Image

from conftest import LENET5_STEPS, copy_into, run_main, run_script
import mnist_app
import mnist_backward
import mnist_cluster
import mnist_forward
import mnist_lenet5_backward
import mnist_lenet5_forward
import mnist_lenet5_test
import mnist_test
from tf_compat import tf
import mnistkit.checkpoints
import mnistkit.folders
import mnistkit.cli
import mnistkit.distributed
import mnistkit.idx
import mnistkit.networks
import mnistkit.training

# two_models (conftest) trained LeNet-5 for LENET5_STEPS steps, the 784-500-10 network for MLP_STEPS; test_export,
# test_distributed and test_user_faults use the same models. How the two networks compare after the same
# examples seen is a claim about accuracy: bench/lenet5_vs_mlp.py measures it (docs/lenet5.md).
LEARNED = 0.5  # test accuracy after LENET5_STEPS steps: far above chance (0.1), far below what it reaches
SHAPES = {"conv1_w": [5, 5, 1, 32], "conv1_b": [32], "conv2_w": [5, 5, 32, 64], "conv2_b": [64],
          "fc1_w": [3136, 512], "fc1_b": [512], "fc2_w": [512, 10], "fc2_b": [10]}
SUBSET = 500  # test records scored against NumPy: enough for every batch size below, cheap for NumPy's convolutions


def checksums(folder):
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
            for name in sorted(os.listdir(folder)) if (folder / name).is_file()}


# ---------------------------------------------------------------- NumPy LeNet-5, from a checkpoint's shadow weights

def shadow_weights(ckpt):
    return {n: tf.train.load_variable(ckpt, n + mnistkit.networks.EMA_SUFFIX) for n in mnist_lenet5_forward.NETWORK.variables}


def conv_same(images, w):
    """[n, h, w, c] * [5, 5, c, k], stride 1, zero padding 2: [n, h, w, k]."""
    size = w.shape[0]
    padded = np.pad(images, ((0, 0), (size // 2, size // 2), (size // 2, size // 2), (0, 0)))
    patches = np.lib.stride_tricks.sliding_window_view(padded, (size, size), axis=(1, 2))  # [n, h, w, c, 5, 5]
    return np.einsum("nhwcij,ijck->nhwk", patches, w, optimize=True)


def pool(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def numpy_lenet5(pixels, w):
    """Logits [n, 10] of LeNet-5 for uint8 pixels [n, 784], without dropout."""
    x = (pixels / 255.0).reshape(-1, 28, 28, 1)
    x = pool(np.maximum(conv_same(x, w["conv1_w"]) + w["conv1_b"], 0))
    x = pool(np.maximum(conv_same(x, w["conv2_w"]) + w["conv2_b"], 0))
    x = np.maximum(x.reshape(len(x), -1) @ w["fc1_w"] + w["fc1_b"], 0)
    return x @ w["fc2_w"] + w["fc2_b"]


def read_records(path, count):
    pixels, labels, raw = [], [], []
    for serialized in tf.io.tf_record_iterator(str(path)):
        feature = tf.train.Example.FromString(serialized).features.feature
        pixels.append(np.frombuffer(feature["img_raw"].bytes_list.value[0], np.uint8))
        labels.append(int(np.argmax(feature["label"].int64_list.value)))
        raw.append(serialized)
        if len(raw) == count:
            break
    return np.array(pixels), np.array(labels), raw


# ---------------------------------------------------------------- the network

def test_forward_shapes_variable_names_and_course_l2_terms():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        y = mnist_lenet5_forward.forward(x, 0.0001, train=False)
        assert y.shape.as_list() == [None, 10]
        assert {v.op.name: v.shape.as_list() for v in tf.trainable_variables()} == SHAPES
        losses = tf.get_collection(mnist_forward.LOSSES_COLLECTION)
        assert len(losses) == 4  # the four weight tensors, not the biases
        weights = [v for v in tf.trainable_variables() if v.op.name.endswith("_w")]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            zero = sess.run(y, {x: np.zeros((3, 784), np.float32)})
            l2, ws = sess.run([losses, weights])
    assert zero.shape == (3, 10)
    np.testing.assert_allclose(zero, 0.0, atol=1e-6)  # zero input, zero biases
    for term, w in zip(l2, ws):
        np.testing.assert_allclose(term, 0.0001 * (w.astype(np.float64) ** 2).sum() / 2, rtol=1e-4)
        assert np.abs(w).max() <= 0.2 + 1e-6  # truncated normal, stddev 0.1: within 2 stddev


def test_dropout_only_in_training_and_same_weights_as_numpy():
    pixels = np.random.default_rng(1).integers(0, 256, (4, 784)).astype(np.uint8)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        y_eval = mnist_lenet5_forward.forward(x, None, train=False)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = {v.op.name: v for v in tf.trainable_variables()}
            first, second = (sess.run(y_eval, {x: pixels / 255.0}) for _ in range(2))
            weights = sess.run(values)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, numpy_lenet5(pixels, weights), rtol=1e-3, atol=1e-3)

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        y_train = mnist_lenet5_forward.forward(x, None, train=True)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            runs = [sess.run(y_train, {x: pixels / 255.0}) for _ in range(2)]
    assert not np.allclose(runs[0], runs[1])  # a new half of the 512 units dropped at each step


def test_learning_rate_is_the_chapters_and_decays_per_real_epoch(sample_workdir):
    data = str(sample_workdir / "data")
    with tf.Graph().as_default():
        settings = mnist_backward.settings_for(mnist_lenet5_forward, steps=1, data_dir=data, model_dir="model",
                                               pipeline="course", constants=mnist_lenet5_backward)
        graph = mnist_backward.build_graph(settings, mnistkit.records.training_data(data))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            rates = {}
            for step in (0, 79, 80, 160):  # 8,000 records / batch 100 = 80 steps per epoch
                sess.run(graph.global_step.assign(step))
                rates[step] = sess.run(graph.learning_rate)
    assert rates == pytest.approx({0: 0.005, 79: 0.005, 80: 0.005 * 0.99, 160: 0.005 * 0.99 ** 2})


# ---------------------------------------------------------------- training, resume, evaluation

def test_a_short_training_learns(two_models):
    test_file = str(two_models / "data" / "mnist_test.tfrecords")
    lenet5 = tf.train.latest_checkpoint(str(two_models / "model_lenet5"))
    assert lenet5.endswith(f"model_lenet5/mnist_model-{LENET5_STEPS}")
    step, accuracy, count = mnist_test.evaluate(lenet5, test_file, net=mnist_lenet5_forward)
    assert (step, count) == (LENET5_STEPS, 2000)
    assert accuracy > LEARNED, accuracy


def test_test_script_once_prints_course_line_and_report(two_models, tmp_path):
    report = tmp_path / "report.json"
    work = copy_into(tmp_path / "work", two_models, "data", "model_lenet5")  # the evaluator writes model_lenet5/eval
    result = run_main("mnist_lenet5_test.py", "--once", "--report-json", str(report), cwd=work)
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first.startswith(f"After {LENET5_STEPS} training steps, test accuracy = 0.")
    assert second == f"report: {report}"
    assert result.stderr == ""
    numbers = json.loads(report.read_text())
    assert (numbers["global_step"], numbers["records"]) == (LENET5_STEPS, 2000)
    assert f"{numbers['accuracy']:g}" == first.rsplit(" ", 1)[1]


@pytest.mark.long
def test_resume_continues_global_step(sample_workdir, tmp_path):
    data, model = str(sample_workdir / "data"), str(tmp_path / "model")
    with tf.Graph().as_default():
        assert mnist_lenet5_backward.backward(steps=10, data_dir=data, model_dir=model, log=lambda m: None) == 10
    before = tf.train.load_variable(tf.train.latest_checkpoint(model), "conv1_w")
    with tf.Graph().as_default():
        lines = []
        assert mnist_lenet5_backward.backward(steps=20, data_dir=data, model_dir=model, log=lines.append) == 20
    assert lines[0] == (f"training on 8000 records from {data}/mnist_train.tfrecords, "
                        f"resuming from {model}/mnist_model-10; target global_step 20; running on CPU")
    ckpt = tf.train.latest_checkpoint(model)
    assert ckpt == f"{model}/mnist_model-20"
    assert tf.train.load_variable(ckpt, "global_step") == 20
    assert not np.array_equal(tf.train.load_variable(ckpt, "conv1_w"), before)


def test_evaluation_scores_every_record_once_as_numpy_does(two_models, tmp_path):
    ckpt = tf.train.latest_checkpoint(str(two_models / "model_lenet5"))
    pixels, labels, raw = read_records(two_models / "data" / "mnist_test.tfrecords", SUBSET)
    path = str(tmp_path / "mnist_test.tfrecords")
    with tf.io.TFRecordWriter(path) as writer:
        for record in raw:
            writer.write(record)
    results = {b: mnist_test.evaluate(ckpt, path, batch_size=b, details=b == 7, net=mnist_lenet5_forward)
               for b in (1000, 128, 7)}
    assert {r[2] for r in results.values()} == {SUBSET}
    assert len({r[1] for r in results.values()}) == 1

    logits = numpy_lenet5(pixels, shadow_weights(ckpt))
    expected = np.exp(logits - logits.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    details = results[7][3]
    np.testing.assert_array_equal(details["labels"], labels)  # file order, every record once
    np.testing.assert_array_equal(details["pixels"], pixels)
    np.testing.assert_allclose(details["probabilities"], expected, atol=1e-4)
    assert results[1000][1] == pytest.approx(np.mean(np.argmax(logits, 1) == labels), abs=1 / SUBSET)


# ---------------------------------------------------------------- the app

def test_app_finds_each_network_from_its_checkpoint(two_models, tmp_path, capsys):
    images, _ = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    paths = []
    for i in range(3):
        paths.append(str(tmp_path / f"digit{i}.png"))
        Image.fromarray(255 - images[i]).resize((280, 280), Image.Resampling.BICUBIC).save(paths[-1])

    lenet5 = mnist_app.Predictor(str(two_models / "model_lenet5"))
    mlp = mnist_app.Predictor(str(two_models / "model"))
    assert lenet5.net is mnist_lenet5_forward and mlp.net is mnist_forward
    # The app's LeNet-5 is the checkpoint's shadow weights, without dropout.
    inputs = np.concatenate([mnist_app.pre_pic(p) for p in paths])
    logits = numpy_lenet5(np.round(inputs * 255), shadow_weights(tf.train.latest_checkpoint(str(two_models / "model_lenet5"))))
    np.testing.assert_allclose(lenet5.predict(inputs), np.exp(logits) / np.exp(logits).sum(1, keepdims=True), atol=1e-4)

    capsys.readouterr()
    assert mnist_app.main(["--model-dir", str(two_models / "model_lenet5"), *paths]) == 0
    out, err = capsys.readouterr()
    # The network's own answers (a short training: some digits may be wrong; test_a_short_training_learns).
    answers = lenet5.predict(inputs).argmax(1)
    assert [line.split("The prediction number is: ")[1][0] for line in out.splitlines()] == [str(d) for d in answers]
    assert err == f"using LeNet-5 from {lenet5.ckpt}\n"  # which network, once; the lines stay as the course's
    assert mnist_app.main(["--model-dir", str(two_models / "model_lenet5"), "--json", paths[0]]) == 0
    assert [entry["network"] for entry in json.loads(capsys.readouterr().out)] == ["LeNet-5"]
    assert mnist_app.main(["--model-dir", str(two_models / "model"), paths[0]]) == 0
    assert capsys.readouterr().err == ""  # the 784-500-10 network, the course's own, is not named


# ---------------------------------------------------------------- a model folder of the other network

@pytest.mark.parametrize("main, folder, other, script", [
    (mnist_lenet5_backward.main, "model", "the 784-500-10 network", "mnist_backward.py"),
    (mnist_lenet5_test.main, "model", "the 784-500-10 network", "mnist_test.py"),
    (mnist_backward.main, "model_lenet5", "LeNet-5", "mnist_lenet5_backward.py"),
    (mnist_test.main, "model_lenet5", "LeNet-5", "mnist_lenet5_test.py"),
])
def test_each_script_names_the_network_of_another_folder(two_models, tmp_path, main, folder, other, script, capsys):
    model = copy_into(tmp_path, two_models, folder) / folder  # a copy: what a script wrote would show in the others
    before = checksums(model)
    ckpt = tf.train.latest_checkpoint(str(model))
    flags = ["--once"] if main in (mnist_test.main, mnist_lenet5_test.main) else ["--steps", "5000"]
    with tf.Graph().as_default():
        status = main([*flags, "--model-dir", str(model), "--data-dir", str(two_models / "data")])
    err = capsys.readouterr().err
    assert status == 1
    this = "LeNet-5" if other != "LeNet-5" else "the 784-500-10 network"
    hint = mnistkit.cli.command(script, "--model-dir", str(model))  # a command pasted as written runs (trial 8)
    assert err == f"error: {ckpt}: this checkpoint holds {other}, not {this}; use `{hint}`, or another --model-dir\n"
    assert checksums(model) == before  # nothing trained, saved or deleted


def test_folders_name_their_network_and_older_ones_are_recognised_exactly(two_models, tmp_path):
    def names(ckpt):
        return [name for name, _ in tf.train.list_variables(ckpt)]
    lenet5, mlp = mnist_lenet5_forward.NETWORK, mnist_forward.NETWORK
    # Each trainer recorded its network in the folder it saved into.
    assert mnistkit.checkpoints.folder_network(str(two_models / "model_lenet5")).forward == "mnist_lenet5_forward"
    assert mnistkit.checkpoints.folder_network(str(two_models / "model")).forward == "mnist_forward"
    assert mnistkit.folders.folder_record(str(two_models / "model"))["network"] == mnistkit.networks.to_record(mlp)
    # A folder of an earlier version (no record) is recognised from its variables, exactly.
    guess = mnistkit.networks.guess
    assert guess(names(tf.train.latest_checkpoint(str(two_models / "model_lenet5")))) == lenet5
    assert guess(names(tf.train.latest_checkpoint(str(two_models / "model")))) == mlp
    assert guess(["w1", "b1", "w2"]) is None  # one variable short of the course's network
    assert guess(["w1", "b1", "w2", "b2", "w3", "b3"]) is None  # a deeper network is not the course's (no subset match)
    with tf.Graph().as_default():
        tf.Variable(tf.zeros([3]), name="something_else")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            other = tf.train.Saver().save(sess, str(tmp_path / "other"))
    assert guess(names(other)) is None
    assert mnistkit.checkpoints.folder_network(str(tmp_path), names(other)) is None


@pytest.mark.parametrize("script", ["mnist_lenet5_backward.py", "mnist_lenet5_test.py"])
def test_help_shows_the_chapters_defaults(script, tmp_path):
    result = run_script(script, "--help", cwd=tmp_path)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())  # argparse wraps lines to the terminal's width
    assert text.startswith("usage: ") and "(default: ./model_lenet5/)" in text
    if script == "mnist_lenet5_backward.py":
        assert "examples per training step (default: 100)" in text


# ---------------------------------------------------------------- checkpoints between one machine and a cluster

SERVERS = []  # tf.train.Server objects cannot be stopped: they serve until the test process ends


def cluster_in_this_process(num_ps):
    """A cluster of num_ps parameter servers and one worker, served by this process: (ClusterSpec, worker's Server)."""
    ports = mnist_cluster.free_ports(num_ps + 1)
    cluster = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{p}" for p in ports[:-1]], "worker": [f"127.0.0.1:{ports[-1]}"]})
    SERVERS.extend(tf.train.Server(cluster, "ps", i) for i in range(num_ps))
    SERVERS.append(tf.train.Server(cluster, "worker", 0))
    return cluster, SERVERS[-1]


@pytest.mark.parametrize("net, folder", [(mnist_lenet5_forward, "model_lenet5"), (mnist_forward, "model")],
                         ids=["lenet5", "mlp"])
def test_checkpoints_move_between_one_machine_and_a_cluster_that_splits_the_largest_weights(two_models, tmp_path,
                                                                                            net, folder):
    ckpt = tf.train.latest_checkpoint(str(two_models / folder))  # written on one machine
    cluster, worker = cluster_in_this_process(2)
    settings = mnist_backward.settings_for(net, steps=0, batch_size=100, learning_rate_base=0.1,
                                           data_dir=str(two_models / "data"), model_dir=str(two_models / folder))
    data = mnistkit.records.training_data(settings.data_dir)
    (name,) = net.NETWORK.split
    with tf.Graph().as_default():
        graph, parts = mnistkit.distributed.build_worker_graph(cluster, 0, settings, data, mnist_backward.build_graph,
                                                               sync_replicas=False)
        split = {v.op.name: v for v in tf.global_variables() if v.op.name.startswith(name + "/")}
        assert sorted(split) == sorted(f"{name}/part_{i}{suffix}" for i in range(2)
                                       for suffix in ("", mnistkit.networks.EMA_SUFFIX))
        assert [split[f"{name}/part_{i}"].device for i in range(2)] == ["/job:ps/task:0", "/job:ps/task:1"]
        # The chief's check of a checkpoint against its graph takes one machine's.
        with mnistkit.training.resumed(settings, data.examples, graph.saver,
                                       mnistkit.folders.checkpoint_variables(tf.global_variables())) as found:
            assert found.prefix == ckpt
        # One machine -> cluster: the chief restores the parts from the whole variable.
        with tf.train.SessionManager().prepare_session(worker.target, init_op=parts.init_op, saver=parts.saver,
                                                       checkpoint_filename_with_path=ckpt) as sess:
            for suffix in ("", mnistkit.networks.EMA_SUFFIX):
                values = sess.run([split[f"{name}/part_{i}{suffix}"] for i in range(2)])
                assert values[0].shape[0] == values[1].shape[0]
                np.testing.assert_array_equal(np.concatenate(values), tf.train.load_variable(ckpt, name + suffix))
            saved = parts.saver.save(sess, str(tmp_path / "mnist_model"), global_step=graph.global_step)
    # Cluster -> one machine: the same names, shapes and values as the checkpoint it started from, and the app
    # (one machine's graph) predicts from it as from that one.
    assert tf.train.list_variables(saved) == tf.train.list_variables(ckpt)
    for var, _ in tf.train.list_variables(ckpt):
        np.testing.assert_array_equal(tf.train.load_variable(saved, var), tf.train.load_variable(ckpt, var))
    pictures = np.random.default_rng(0).random((3, 784), np.float32)
    moved = mnist_app.Predictor(str(tmp_path))
    assert moved.ckpt == saved and moved.net is net
    np.testing.assert_array_equal(moved.predict(pictures), mnist_app.Predictor(str(two_models / folder)).predict(pictures))

"""The Inside: forward()'s layers as the served model computes them, checked against NumPy on the checkpoint itself.

The layers of both networks are computed here from the checkpoint's own tensors (tf.train.load_checkpoint, the
ExponentialMovingAverage shadows the app restores) with NumPy, and compared within 1e-5 with what the board
serves (mnistkit.layers, before 8-bit scaling), then through the board's answers in this process (the ASGI app
called as tests/test_board_routes.py does): the 8-bit maps, the pushes, a unit's weights, --compare, TF
Serving's `inside` signature and the test set's mistakes. A network that declares no layers, or other layers
than its forward() builds, is refused in one line.
"""
import base64
import dataclasses
import json
import linecache
import os
import shutil

import numpy as np
import pytest

import mnist_app
import mnist_forward
import mnist_lenet5_forward
from conftest import MLP_STEPS, ROOT, TRAIN_STEPS, run_main, wait_for
from mnistkit import idx, layers, networks, preparation, records
from mnistkit.board import app, inside, mistakes
from mnistkit.errors import DataError
from test_board import drawn, png_bytes
from test_board_routes import Asked

MLP, LENET5 = mnist_forward.NETWORK, mnist_lenet5_forward.NETWORK
TOLERANCE = 1e-5  # the served layers against NumPy's, before 8-bit scaling
MOST_BYTES = 100_000  # an inside answer, both networks' with --compare


def shadows(ckpt):
    """{variable name: float64 array} of a checkpoint's moving averages (the weights the app serves)."""
    from tf_compat import tf
    reader = tf.train.load_checkpoint(ckpt)
    return {name[:-len(networks.EMA_SUFFIX)]: reader.get_tensor(name).astype(np.float64)
            for name in reader.get_variable_to_shape_map() if name.endswith(networks.EMA_SUFFIX)}


def conv_same(images, w):
    """A 2-D convolution, stride 1, SAME padding (tf.nn.conv2d's): [h, w, in] * [k, k, in, out] -> [h, w, out]."""
    pad = w.shape[0] // 2
    padded = np.pad(images, ((pad, pad), (pad, pad), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, w.shape[:2], axis=(0, 1))  # [h, w, in, k, k]
    return np.einsum("hwcij,ijco->hwo", windows, w)


def pool_2x2(maps):
    """2x2 max-pool, stride 2 (the sides here are even): [h, w, c] -> [h/2, w/2, c]."""
    h, w, c = maps.shape
    return maps.reshape(h // 2, 2, w // 2, 2, c).max(axis=(1, 3))


def numpy_layers(network, v, x):
    """The layers of forward() for one input x float64 [784], from the variables v, in forward()'s order."""
    relu = lambda a: np.maximum(a, 0)  # noqa: E731
    if network is MLP:
        y1 = relu(x @ v["w1"] + v["b1"])
        return [y1, y1 @ v["w2"] + v["b2"]]
    conv1 = relu(conv_same(x.reshape(28, 28, 1), v["conv1_w"]) + v["conv1_b"])
    pool1 = pool_2x2(conv1)
    conv2 = relu(conv_same(pool1, v["conv2_w"]) + v["conv2_b"])
    pool2 = pool_2x2(conv2)
    fc1 = relu(pool2.reshape(-1) @ v["fc1_w"] + v["fc1_b"])
    return [conv1, pool1, conv2, pool2, fc1, fc1 @ v["fc2_w"] + v["fc2_b"]]


def bundled_digits(count=5):
    """The first `count` digits of the bundled test set, float32 [count, 784] in [0, 1]."""
    return idx.read_idx_split(idx.BUNDLED_DIR, "test")[0][:count].reshape(-1, 784) / np.float32(255)


@pytest.mark.parametrize("network", [MLP, LENET5], ids=["mlp", "lenet5"])
def test_each_layer_is_numpys_on_the_checkpoints_moving_averages(served, network):
    predictor = served[network.label]
    v = shadows(predictor.ckpt)
    pictures = bundled_digits()
    probabilities, values = predictor.inside.run(pictures)
    assert [(layer.name, layer.kind) for layer in predictor.inside.layers] == [tuple(p) for p in network.inside]
    assert np.array_equal(probabilities, predictor.predict(pictures))  # the one run gives the app's answer
    for i, x in enumerate(pictures.astype(np.float64)):
        for layer, served_values, expected in zip(predictor.inside.layers, values, numpy_layers(network, v, x)):
            assert served_values[i].shape == layer.shape == expected.shape
            np.testing.assert_allclose(served_values[i], expected, rtol=TOLERANCE, atol=TOLERANCE,
                                       err_msg=f"{network.label} {layer.name}")
    # each layer tied to the line of forward() that computes it (a pool to its conv's line, not max_pool_2x2's)
    assert predictor.inside.layers[0].line == ("y1 = tf.nn.relu(tf.matmul(x, w1) + b1)" if network is MLP else
                                               "pool1 = max_pool_2x2(tf.nn.relu(tf.nn.bias_add(conv2d(images, "
                                               "conv1_w), conv1_b)))")
    for layer in predictor.inside.layers:
        file, number = layer.at.split(":")
        assert file == network.forward + ".py" and linecache.getline(os.path.join(ROOT, file), int(number)).strip() \
            == layer.line and (layer.line.startswith("return ") if layer.kind == "logits" else layer.name in layer.line)


def decoded(maps):
    """A "maps" entry's values, float64 [height, width, count], and the largest error its 8-bit scaling allows."""
    data = np.frombuffer(base64.b64decode(maps["data"]), np.uint8).reshape(maps["count"], -1).astype(np.float64)
    low, high = np.array(maps["min"])[:, None], np.array(maps["max"])[:, None]
    values = low + data / 255 * (high - low)
    return np.moveaxis(values.reshape(maps["count"], maps["height"], maps["width"]), 0, -1), (high - low).max() / 510


@pytest.mark.parametrize("network", [MLP, LENET5], ids=["mlp", "lenet5"])
def test_the_boards_answer_carries_the_layers_and_the_pushes(served, network):
    board = app.open_board(lambda: served[network.label], lambda data, name: None, "unused")
    x = bundled_digits(1)[0]
    pixels = np.round(x * 255).astype(np.uint8).reshape(28, 28)
    answer = inside.inside_answer(board.model, pixels)
    assert len(json.dumps(answer)) <= MOST_BYTES
    expected = numpy_layers(network, shadows(served[network.label].ckpt), pixels.reshape(-1) / 255.0)
    for entry, want in zip(answer["layers"], expected):
        if "maps" in entry:  # each map its own min and max, 8 bits between
            got, error = decoded(entry["maps"])
            assert entry["maps"]["min"] == pytest.approx(want.min(axis=(0, 1)), abs=TOLERANCE)
            assert np.abs(got - want).max() <= error + TOLERANCE
        else:
            np.testing.assert_allclose(entry["values"], want, rtol=1e-6, atol=TOLERANCE)
    assert answer["digit"] == int(np.argmax(expected[-1]))
    # a unit's push to a digit: its activation times its weight to that digit; the top ones, largest first
    hidden, w = expected[-2], shadows(served[network.label].ckpt)["w2" if network is MLP else "fc2_w"]
    pushes = answer["pushes"]
    assert pushes["layer"] == ("y1" if network is MLP else "fc1")
    for found in pushes["digits"]:
        push = hidden * w[:, found["digit"]]
        assert found["units"] == list(np.argsort(-push, kind="stable")[:len(found["units"])])
        assert found["pushes"] == pytest.approx(push[found["units"]], rel=1e-5)
        assert found["positive"] == pytest.approx(push.clip(0).sum(), rel=1e-5)
        assert len(found["units"]) == min(inside.TOP_PUSHES, int((push > 0).sum()))


@pytest.mark.parametrize("network", [MLP, LENET5], ids=["mlp", "lenet5"])
def test_a_units_weights_are_the_checkpoints_column_and_row(served, network):
    model = app.open_board(lambda: served[network.label], lambda data, name: None, "unused").model
    v = shadows(served[network.label].ckpt)
    if network is MLP:  # (layer, unit, its incoming weights, its outgoing ones) in the checkpoint's layout
        asked = [("y1", 7, v["w1"][:, 7].reshape(28, 28, 1), v["w2"][7]), ("y", 3, v["w2"][:, 3], None)]
    else:
        asked = [("conv1", 5, v["conv1_w"][:, :, :, 5], v["conv2_w"][:, :, 5, :]),
                 ("conv2", 9, v["conv2_w"][:, :, :, 9], v["fc1_w"].reshape(7, 7, 64, 512)[:, :, 9, :]),
                 ("fc1", 11, v["fc1_w"][:, 11].reshape(7, 7, 64), v["fc2_w"][11])]
    for name, number, incoming, outgoing in asked:
        answer = inside.unit_answer(model, name, number)
        for part, want in (("incoming", incoming), ("outgoing", outgoing)):
            if want is None:
                assert answer[part] is None
            elif "data" in answer[part]:
                got, error = decoded(answer[part])
                assert got.shape == want.shape and np.abs(got - want).max() <= error + TOLERANCE, (name, part)
            else:
                np.testing.assert_allclose(answer[part]["values"], want.reshape(-1), rtol=1e-6, atol=1e-7)


def test_the_unit_route_refuses_in_one_line(served):
    board = app.create_app(app.open_board(lambda: served[LENET5.label], lambda data, name: None, "unused"))
    for query, status, line in (("layer=pool1&unit=0", 400, "pool1 has no weights of its own"),
                                ("layer=conv1&unit=32", 400, "conv1 has units 0 to 31, not 32"),
                                ("layer=w1&unit=0", 400, "no layer 'w1'; the layers are conv1, pool1, conv2, pool2"),
                                ("layer=conv1", 400, "GET /board/inside/unit: give layer=L&unit=N"),
                                ("layer=conv1&unit=x", 400, "unit=x: give a unit's number from 0"),
                                ("layer=conv1&unit=1&model=compare", 404,
                                 "GET /board/inside/unit: this server serves no second model")):
        answer = Asked(board, "GET", "/board/inside/unit?" + query)
        assert answer.status == status and answer.error().startswith(line), query


def test_compare_answers_both_networks_for_the_same_input_within_100_kb(compared_board):
    _, board = compared_board
    png = png_bytes(drawn(3))
    answer = Asked(board, "POST", "/board/inside", png)
    assert answer.status == 200 and len(answer.body) <= MOST_BYTES
    both = json.loads(answer.body)
    assert [entry["name"] for entry in both["layers"]] == ["y1", "y"]
    assert [entry["name"] for entry in both["compare"]["layers"]] == ["conv1", "pool1", "conv2", "pool2", "fc1", "y"]
    predicted = json.loads(Asked(board, "POST", "/board/predict", png).body)
    assert predicted["digit"] == both["digit"] and predicted["input"] == both["input"]
    assert predicted["compare"]["probabilities"] == pytest.approx(both["compare"]["probabilities"], abs=1e-6)
    assert both["model"]["network"] == "784-500-10" and both["compare"]["model"]["network"] == "LeNet-5"
    line = json.loads(Asked(board, "GET", "/board/model").body)
    assert line["network"] == "784-500-10" and line["compare"]["network"] == "LeNet-5"
    lenet_unit = json.loads(Asked(board, "GET", "/board/inside/unit?layer=conv1&unit=0&model=compare").body)
    assert lenet_unit["layer"] == "conv1" and lenet_unit["to"] == "conv2"


def test_the_compare_model_follows_the_newest_checkpoint_of_its_own_folder(served, two_models, trained_workdir,
                                                                           tmp_path):
    folder = tmp_path / "second"
    shutil.copytree(two_models / "model", folder, ignore=shutil.ignore_patterns("train", "eval"))
    load = lambda: mnist_app.Predictor(str(folder))  # noqa: E731
    board = app.open_board(lambda: served[LENET5.label], lambda data, name: mnist_app.prepared_pixels(data, name=name),
                           "unused", compare=(load, folder))
    assert board.followers() == [board.follower, board.compare_follower]  # serve() starts and stops both
    assert board.compare.current.global_step == MLP_STEPS and not board.compare_follower.poll()
    for part in (trained_workdir / "model").glob(f"mnist_model-{TRAIN_STEPS}.*"):  # a newer checkpoint copied in
        shutil.copy2(part, folder)
    assert board.compare_follower.poll() and board.compare.current.global_step == TRAIN_STEPS
    assert board.model.current.predictor is served[LENET5.label]  # the first model stays as it was
    answer = Asked(app.create_app(board), "POST", "/board/predict", png_bytes(drawn(5)))
    assert json.loads(answer.body)["compare"]["model"]["global_step"] == TRAIN_STEPS


def test_tf_servings_inside_signature_answers_the_layers_of_either_model(compared_board, served):
    _, board = compared_board
    rows = bundled_digits(2)
    for name, network in (("mnist", MLP), ("mnist_lenet5", LENET5)):
        # TF Serving's rows are run one at a time (a row's answer does not depend on its batch), so each alone here
        alone = [served[network.label].inside.run(rows[i:i + 1])[1] for i in range(len(rows))]
        expected = [np.concatenate(values) for values in zip(*alone)]
        url = f"/v1/models/{name}:predict"
        row = json.loads(Asked(board, "POST", url, json.dumps({"signature_name": "inside",
                                                               "instances": rows.tolist()}).encode()).body)
        columnar = json.loads(Asked(board, "POST", url, json.dumps({"signature_name": "inside",
                                                                    "inputs": rows.tolist()}).encode()).body)
        for layer, want in zip(served[network.label].inside.layers, expected):
            np.testing.assert_allclose([p[layer.name] for p in row["predictions"]], want, atol=1e-6)
            np.testing.assert_allclose(columnar["outputs"][layer.name], want, atol=1e-6)
        meta = json.loads(Asked(board, "GET", f"/v1/models/{name}/metadata").body)
        signatures = meta["metadata"]["signature_def"]["signature_def"]
        assert sorted(signatures) == ["inside", "serving_default"]
        assert sorted(signatures["inside"]["outputs"]) == sorted(layer.name for layer in served[network.label]
                                                                 .inside.layers)
    too_many = Asked(board, "POST", "/v1/models/mnist:predict",
                     json.dumps({"signature_name": "inside", "instances": [[0.0] * 784] * 17}).encode())
    assert too_many.status == 400 and "at most 16" in too_many.error()


def scored(board, query=""):
    """GET /board/mistakes[?query] until the scoring is done (within wait_limit(60) s); its answer."""
    def done():
        answer = json.loads(Asked(board, "GET", "/board/mistakes" + query).body)
        return answer if answer.get("state") != "running" else None
    return wait_for(done, "the scoring of the mistakes", 60, every=0.1)


def test_the_mistakes_are_the_confusion_matrix_of_the_test_records(compared_board, served, two_models):
    _, board = compared_board
    images, digits = records.read_examples([str(two_models / "data" / records.TEST_FILE)])
    for query, network in (("", MLP), ("?model=compare", LENET5)):
        state = scored(board, query)
        read = served[network.label].predict(preparation.network_rows(images)).argmax(1)  # as the evaluator reads
        expected = np.zeros((10, 10), int)
        np.add.at(expected, (digits, read), 1)
        assert state["state"] == "done" and state["matrix"] == expected.tolist() and state["total"] == len(digits)
        assert state["right"] == int((read == digits).sum()) and state["model"]["network"] == network.label
    wrong = np.flatnonzero(read != digits)[0]  # LeNet-5's first mistake
    truth, misread = int(digits[wrong]), int(read[wrong])
    cell = json.loads(Asked(board, "GET", f"/board/mistakes?digit={truth}&read={misread}&model=compare").body)
    expected = np.flatnonzero((digits == truth) & (read == misread))
    assert cell["records"] == expected[:mistakes.CELL_DIGITS].tolist() and cell["count"] == len(expected)
    shown = np.frombuffer(base64.b64decode(cell["inputs"]), np.uint8).reshape(-1, 784)
    assert np.array_equal(shown, images[expected[:mistakes.CELL_DIGITS]])
    one = json.loads(Asked(board, "GET", f"/board/mistakes?record={wrong}&model=compare").body)
    assert one["record"] == wrong and one["label"] == truth and one["compare"]["digit"] == misread
    # Opened from LeNet-5's matrix, each network keeps its place: the served one first, LeNet-5 under "compare".
    assert one["input"] == images[wrong].tolist() and one["model"]["network"] == "784-500-10"
    assert one["compare"]["model"]["network"] == "LeNet-5" and one["opened_from"] == "compare"
    refused = Asked(board, "GET", "/board/mistakes?digit=3")
    assert refused.status == 400 and refused.error().startswith("GET /board/mistakes: give no query")


def test_without_a_test_file_the_mistakes_are_one_line(served, tmp_path):
    board = app.create_app(app.open_board(lambda: served[MLP.label], lambda data, name: None, "unused",
                                          data_dir=str(tmp_path)))
    answer = Asked(board, "GET", "/board/mistakes")
    assert answer.status == 404
    assert answer.error() == (f"{tmp_path / records.TEST_FILE}: TFRecord file not found; run `python "
                              f"mnist_generateds.py --data-dir {tmp_path}` first; the mistakes are counted on the "
                              f"test records")


def test_a_damaged_test_file_fails_the_scoring_in_one_line_and_the_next_ask_scores_again(served, two_models,
                                                                                          tmp_path):
    shutil.copy(two_models / "data" / records.TEST_FILE, tmp_path / records.TEST_FILE)
    with open(tmp_path / records.TEST_FILE, "r+b") as f:
        f.truncate(os.path.getsize(tmp_path / records.TEST_FILE) - 100)
    board = app.create_app(app.open_board(lambda: served[MLP.label], lambda data, name: None, "unused",
                                          data_dir=str(tmp_path)))
    def failed():
        asked = Asked(board, "GET", "/board/mistakes")
        return asked if asked.status != 200 else None
    answer = wait_for(failed, "the scoring to end on the cut file", 60, every=0.1)
    assert answer.status == 409 and "is cut short (file truncated?)" in answer.error()
    shutil.copy(two_models / "data" / records.TEST_FILE, tmp_path / records.TEST_FILE)
    assert scored(board)["state"] == "done"  # the failure was said once; the file mended is scored


# --- a network that declares its layers otherwise, or not at all

@pytest.mark.quick
@pytest.mark.parametrize("inside_declared, line", [
    ((), "the 784-500-10 network declares no layers to show: give its NETWORK inside=((name, kind), ...)"),
    ((("y1", "dense"), ("y2", "dense"), ("y", "logits")),
     "the 784-500-10 network: its inside declares y1 (dense: Relu), y2 (dense: Relu) before the logits, but its "
     "forward() builds Relu; declare one (name, kind) per ReLU (dense, conv) and max-pool (pool), in order"),
    ((("y1", "pool"), ("y", "logits")), "the 784-500-10 network: its inside declares y1 (pool: MaxPool) before"),
    ((("y1", "dense"), ("y", "softmax")), "the 784-500-10 network: its inside [['y1', 'dense'], ['y', 'softmax']] "
                                          "is not (name, kind) pairs"),
])
def test_a_declaration_that_does_not_fit_forward_is_one_line(inside_declared, line):
    from tf_compat import tf
    network = dataclasses.replace(MLP, inside=inside_declared)
    with tf.Graph().as_default():
        logits = mnist_forward.forward(tf.placeholder(tf.float32, [None, 784]), None)
        with pytest.raises(DataError) as refused:
            layers.graph_layers(network, logits)
    assert str(refused.value).startswith(line) and "\n" not in str(refused.value)


def test_a_compare_model_that_cannot_be_served_is_one_line_before_anything_listens(two_models, tmp_path):
    result = run_main("mnist_app.py", "--serve", "--port", "0", "--model-dir", str(two_models / "model"),
                      "--compare", "nowhere", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: --compare: nowhere: no such folder; give the folder "
                                    "that holds the checkpoints")  # not there: named so, not one to train
    assert result.stderr.count("\n") == 1


@pytest.mark.quick
def test_compare_is_a_serve_option(tmp_path):
    result = run_main("mnist_app.py", "--compare", "model_lenet5", "pic.png", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith("--compare serves a second model beside the first: give --serve too")


@pytest.mark.quick
@pytest.mark.parametrize("spelling", ["model", "./model", "model/", "absolute", "a link"])
def test_compare_with_the_model_dir_itself_is_a_usage_error(tmp_path, spelling):
    (tmp_path / "model").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "model", target_is_directory=True)
    compare = {"absolute": str(tmp_path / "model"), "a link": "link"}.get(spelling, spelling)
    result = run_main("mnist_app.py", "--serve", "--port", "0", "--model-dir", "model", "--compare", compare,
                      cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.endswith(  # PROG: error: ..., one line
        f": error: --compare {compare} is --model-dir model itself: a model beside itself shows nothing; give another "
        "model's folder (model_lenet5)\n")

"""mnist_export.py: the SavedModel and LiteRT files match the checkpoint; versions, errors, the app's three forms.

One export of each network per session (exports), scored once in a fresh TensorFlow 2 eager process
(tests/exported_check.py); the other tests reuse it (under xdist the file runs in one worker: made once). The networks are conftest's trained models: the 784-500-10 one of trained_workdir and the LeNet-5 of
two_models (LENET5_STEPS steps, short, so its figures are not those of docs/deploy.md).
"""
import importlib
import json
import linecache
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import LENET5_STEPS, ROOT, run_main, run_script, tree_digests, wait_limit
import mnist_app
import mnist_export
import mnist_test
import mnistkit.cli
import mnistkit.deployed
import mnistkit.export
import mnistkit.idx
import mnistkit.layers
import mnistkit.networks
import mnist_forward
import mnist_lenet5_forward

MLP, LENET5 = mnist_forward.NETWORK, mnist_lenet5_forward.NETWORK
INSIDE = {MLP.label: [mnistkit.layers.Layer("y1", "dense", (500,)), mnistkit.layers.Layer("y", "logits", (10,))],
          LENET5.label: [mnistkit.layers.Layer(name, kind, shape) for name, kind, shape in (
              ("conv1", "conv", (28, 28, 32)), ("pool1", "pool", (14, 14, 32)), ("conv2", "conv", (14, 14, 64)),
              ("pool2", "pool", (7, 7, 64)), ("fc1", "dense", (512,)), ("y", "logits", (10,)))]}

MAX_DIFFERENCE = 1e-4  # float .tflite probabilities against the SavedModel's
INT8_POINTS = 0.01  # the int8 file's accuracy, at most 1 point from the SavedModel's
INT8_SIZE = 0.35  # ... at no more than 35% of the float file's size
PICTURES = 10


@pytest.fixture(scope="session")
def exports(trained_workdir, two_models, tmp_path_factory):
    """Both networks' trained models exported into one folder, scored in a fresh TF2 eager process.

    A dict: work (the folder: data/, model/, model_lenet5/, export/), written ({label: export.Export}),
    log (mnist_export's lines), checked (exported_check.py's JSON) and accuracy ({label: mnist_test's}).
    """
    work = tmp_path_factory.mktemp("export")
    shutil.copytree(trained_workdir / "data", work / "data")
    for source, name in ((trained_workdir, "model"), (two_models, "model_lenet5")):
        shutil.copytree(source / name, work / name, ignore=shutil.ignore_patterns("train", "eval"))
    data = str(work / "data")
    log, written, accuracy = [], {}, {}
    for network, model_dir in ((MLP, work / "model"), (LENET5, work / "model_lenet5")):
        written[network.label] = mnist_export.export_model(str(model_dir), str(work / "export"), data, log.append)
        net = importlib.import_module(network.forward)
        ckpt = mnistkit.checkpoints.latest(str(model_dir))
        accuracy[network.label] = mnist_test.evaluate(ckpt, str(work / "data" / "mnist_test.tfrecords"), net=net)[1]
    checked = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "exported_check.py"), str(work / "export"),
                              str(work / "data" / "mnist_test.tfrecords")], capture_output=True, text=True,
                             timeout=wait_limit(300))
    assert checked.returncode == 0, checked.stderr
    return {"work": work, "written": written, "log": log, "checked": json.loads(checked.stdout), "accuracy": accuracy}


@pytest.mark.parametrize("network", [MLP, LENET5], ids=["mlp", "lenet5"])
def test_tf2_eager_saved_model_and_litert_files_score_as_the_checkpoint(exports, network, summary_line):
    name = network.export_name
    got = exports["checked"][name]
    assert got["executing_eagerly"] and got["count"] == 2000 and got["version"] == 1
    assert got["signature"] == {"inputs": {"images": ["float32", [None, 784]]},
                                "outputs": {"probabilities": ["float32", [None, 10]], "classes": ["int64", [None]]}}
    assert got["saved_model_accuracy"] == exports["accuracy"][network.label]  # the same 2,000 records, the same answers
    assert got["classes_are_argmax"]
    assert got["tflite_max_difference"] <= MAX_DIFFERENCE
    # The second signature, inside: forward()'s layers by their names, its logits those of serving_default.
    shapes = {layer.name: list(layer.shape) for layer in INSIDE[network.label]}
    assert got["inside"] == {name: ["float32", [None, *shape]] for name, shape in shapes.items()}
    assert got["tflite_inside"] == {name: [1, *shape] for name, shape in shapes.items()}
    assert got["inside_difference"] <= 1e-6 and got["tflite_inside_difference"] <= MAX_DIFFERENCE
    assert abs(got["int8_accuracy"] - got["saved_model_accuracy"]) <= INT8_POINTS
    assert got["int8_bytes"] <= INT8_SIZE * got["tflite_bytes"]
    summary_line(f"export {name}: accuracy {got['saved_model_accuracy']:.4f} (checkpoint, SavedModel, float .tflite "
                 f"{got['tflite_accuracy']:.4f}), int8 {got['int8_accuracy']:.4f}; largest difference "
                 f"{got['tflite_max_difference']:.1e}; {got['tflite_bytes']:,} and {got['int8_bytes']:,} bytes")


def test_export_writes_tf_servings_layout_with_progress(exports):
    work, log = exports["work"], exports["log"]
    assert sorted(os.listdir(work / "export")) == ["mnist", "mnist.tflite", "mnist_int8.tflite", "mnist_lenet5",
                                                  "mnist_lenet5.tflite", "mnist_lenet5_int8.tflite"]
    for name in ("mnist", "mnist_lenet5"):
        assert sorted(os.listdir(work / "export" / name)) == ["1"]
        assert sorted(os.listdir(work / "export" / name / "1")) == ["assets.extra", "saved_model.pb", "variables"]
    assert log[0] == f"exporting the 784-500-10 network from {work / 'model'}/mnist_model-2000 (moving averages)"
    assert log[1] == ("writing the SavedModel (serving_default: images -> probabilities, classes; "
                      "inside: images -> y1, y)")
    assert log[2:4] == ["converting to LiteRT: mnist.tflite",
                        "converting to LiteRT: mnist_int8.tflite (int8, calibrated on 300 training digits)"]
    assert log[4] == (f"wrote {work / 'export'}/mnist/1 (SavedModel), {work / 'export'}/mnist.tflite and "
                      f"{work / 'export'}/mnist_int8.tflite")
    assert log[5] == f"exporting LeNet-5 from {work / 'model_lenet5'}/mnist_model-{LENET5_STEPS} (moving averages)"


def test_a_second_export_is_a_new_version_and_the_first_is_untouched(exports, tmp_path):
    export_dir = tmp_path / "export"
    shutil.copytree(exports["work"] / "export" / "mnist", export_dir / "mnist")
    first = tree_digests(export_dir / "mnist" / "1")
    written = mnist_export.export_model(str(exports["work"] / "model"), str(export_dir),
                                        str(exports["work"] / "data"), log=lambda line: None)
    assert written.saved_model == f"{export_dir}/mnist/2"
    assert tree_digests(export_dir / "mnist" / "1") == first
    assert sorted(os.listdir(export_dir / "mnist")) == ["1", "2"]  # no staging folder left beside them
    assert sorted(os.listdir(export_dir)) == ["mnist", "mnist.tflite", "mnist_int8.tflite"]


@pytest.mark.quick
def test_a_version_another_export_took_meanwhile_is_passed_over_for_the_next(tmp_path):
    """Two exports race for one number: the one that finds it taken when it renames its SavedModel into place
    (Linux answers ENOTEMPTY, other systems EEXIST) takes the next one, never writing into the other's."""
    export_dir = tmp_path / "export"
    (export_dir / "mnist" / "1").mkdir(parents=True)  # an export of before

    def staged(label):
        staging = tmp_path / f"staging-{label}"
        (staging / "saved_model").mkdir(parents=True)
        (staging / "saved_model" / "saved_model.pb").write_text(label)
        for suffix in ("", "_int8"):
            (staging / f"mnist{suffix}.tflite").write_text(label)
        return staging
    other, stamped = staged("other"), []

    def stamp(version):  # between this export's look at the versions and its rename, the other one renames its own
        stamped.append(version)
        if version == 2:
            os.rename(other / "saved_model", export_dir / "mnist" / "2")
    written = mnistkit.export.commit(str(staged("this")), str(export_dir), "mnist", stamp)
    assert (stamped, written.saved_model) == ([2, 3], str(export_dir / "mnist" / "3"))
    assert [(export_dir / "mnist" / v / "saved_model.pb").read_text() for v in ("2", "3")] == ["other", "this"]
    assert sorted(os.listdir(export_dir / "mnist")) == ["1", "2", "3"]
    assert (export_dir / "mnist.tflite").read_text() == "this"


@pytest.mark.long
def test_the_app_gives_the_same_digit_from_checkpoint_saved_model_and_litert(exports, tmp_path):
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    from PIL import Image
    paths = []
    for i in range(PICTURES):
        paths.append(str(tmp_path / f"digit{i}.png"))
        Image.fromarray(255 - images[i], mode="L").resize((140, 140), Image.Resampling.BICUBIC).save(paths[-1])
    work = exports["work"]
    for network in (MLP, LENET5):
        name = network.export_name
        forms = {"checkpoint": work / ("model" if network is MLP else "model_lenet5"),
                 "saved_model": work / "export" / name / "1", "tflite": work / "export" / f"{name}.tflite",
                 "int8": work / "export" / f"{name}_int8.tflite"}
        answers = {}
        for form, model_dir in forms.items():
            out = []
            assert mnist_app.application(paths, str(model_dir), out=out.append, as_json=True) == 0
            answers[form] = json.loads(out[0])
            assert {entry["network"] for entry in answers[form]} == {network.label}
        digits = {form: [entry["prediction"] for entry in found] for form, found in answers.items()}
        assert digits["checkpoint"] == digits["saved_model"] == digits["tflite"], (network, digits)
        # int8 rounds the probabilities: a picture the network is torn on may flip, but few do.
        assert sum(a == b for a, b in zip(digits["int8"], digits["tflite"])) >= PICTURES - 1, (network, digits)
        top = [[p["probability"] for p in entry["top3"]] for entry in answers["tflite"]]
        assert np.allclose(top, [[p["probability"] for p in e["top3"]] for e in answers["checkpoint"]], atol=1e-4)


def test_a_tflite_file_is_read_without_tensorflow(exports):
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import numpy as np; import mnistkit.deployed as d; "
            "m = d.load(sys.argv[2]); p = m.predict(np.zeros((3, 784), np.float32)); "
            "print(m.network.label, p.shape, p.dtype, 'tensorflow' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code, ROOT, str(exports["work"] / "export" / "mnist_lenet5_int8.tflite")],
                            capture_output=True, text=True, timeout=wait_limit(120))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "LeNet-5 (3, 10) float32 False\n"
    assert result.stderr == ""  # LiteRT's own INFO line about its CPU delegate is muted


def test_without_litert_tensorflows_interpreter_gives_the_same_probabilities(exports, monkeypatch, capsys):
    path = str(exports["work"] / "export" / "mnist.tflite")
    pictures = np.random.default_rng(0).random((5, 784), dtype=np.float32)
    expected = mnistkit.deployed.load(path).predict(pictures)
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)  # as on an Intel Mac: no wheel
    fallback = mnistkit.deployed.load(path)
    assert capsys.readouterr().err == mnistkit.deployed.FALLBACK_NOTE + "\n"
    assert np.allclose(fallback.predict(pictures), expected, atol=1e-6)


def damaged_copy(exports, tmp_path):
    model = tmp_path / "damaged"
    shutil.copytree(exports["work"] / "model", model)
    data_file, = model.glob("mnist_model-2000.data-*")
    data_file.write_bytes(data_file.read_bytes()[:1000])
    return model


@pytest.mark.parametrize("case", ["no checkpoint", "damaged", "file in the way"])
def test_errors_are_one_line_and_leave_nothing_behind(exports, tmp_path, capsys, case):
    work = exports["work"]
    model, export_dir, data = work / "model", tmp_path / "out" / "export", work / "data"
    if case == "no checkpoint":
        model = tmp_path / "empty"
        expected = (f"{model}: no checkpoint found; train first with "  # the hint keeps the user's own flags
                    f"`{mnistkit.cli.command('mnist_backward.py', '--model-dir', str(model), '--data-dir', str(data))}`")
        model.mkdir()
    elif case == "damaged":
        model = damaged_copy(exports, tmp_path)
        expected = (f"{model}/mnist_model-2000: checkpoint is damaged (mnist_model-2000.data-00000-of-00001 is cut short "
                    f"(1,000 bytes): tensor 'b1' lies past its end); the newest intact checkpoint is "
                    f"{model}/mnist_model-1000: move {model}/mnist_model-2000.* out of {model} to use it")
    elif case == "file in the way":
        export_dir.parent.mkdir()
        export_dir.write_text("not a folder")
        expected = (f"{export_dir} is a file, not a folder: --export-dir names the folder the exports are written into "
                    "(the default is export)")  # said before the checkpoint is read (test_trial9.py)
    status = mnist_export.main(["--model-dir", str(model), "--export-dir", str(export_dir), "--data-dir", str(data)])
    assert (status, capsys.readouterr().err) == (1, f"error: {expected}\n")
    assert (sorted(os.listdir(tmp_path / "out")) == ["export"]) if case == "file in the way" else not (tmp_path / "out").exists()


# ---------------------------------------------------------------- the export as a developer uses it

def test_without_training_records_the_int8_file_is_calibrated_on_the_bundled_sample(exports, tmp_path):
    export_dir, log = tmp_path / "export", []
    written = mnist_export.export_model(str(exports["work"] / "model"), str(export_dir), str(tmp_path / "nodata"),
                                        log.append)
    assert log[0] == (f"note: {tmp_path / 'nodata'} holds no training records; calibrating the int8 file on 300 "
                      f"digits of the MNIST sample bundled in {mnistkit.idx.BUNDLED_DIR}")
    assert sorted(os.listdir(export_dir)) == ["mnist", "mnist.tflite", "mnist_int8.tflite"]
    pictures = np.stack([mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")[0][:200].reshape(-1, 784)])[0]
    pictures = pictures.astype(np.float32) / 255
    float_digits = mnistkit.deployed.load(written.tflite).predict(pictures).argmax(1)
    int8_digits = mnistkit.deployed.load(written.tflite_int8).predict(pictures).argmax(1)
    assert (float_digits == int8_digits).mean() >= 0.97  # calibrated on real digits: int8 agrees with float


@pytest.mark.parametrize("suffix", ["", "_int8"])
@pytest.mark.parametrize("network", [MLP, LENET5], ids=["mlp", "lenet5"])
def test_the_tflite_files_carry_the_saved_models_signature_and_score_as_it_does(exports, network, suffix):
    from ai_edge_litert.interpreter import Interpreter
    name = network.export_name
    path = exports["work"] / "export" / f"{name}{suffix}.tflite"
    interpreter = Interpreter(model_path=str(path))
    assert interpreter.get_signature_list() == {
        "serving_default": {"inputs": ["images"], "outputs": ["classes", "probabilities"]},
        "inside": {"inputs": ["images"], "outputs": sorted(layer.name for layer in INSIDE[network.label])}}
    runner = interpreter.get_signature_runner("serving_default")
    pictures = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")[0][:20].reshape(-1, 784)
    pictures = pictures.astype(np.float32) / 255
    model = mnistkit.deployed.load(str(path))
    expected = model.predict(pictures)
    details = runner.get_input_details()["images"]
    out = runner(images=mnistkit.deployed.quantize(pictures, details))
    probabilities = mnistkit.deployed.dequantize(out["probabilities"], runner.get_output_details()["probabilities"])
    assert np.allclose(probabilities, expected, atol=1e-6)
    assert out["classes"].tolist() == expected.argmax(1).tolist()
    if not suffix:  # the float file is the checkpoint's network: the SavedModel (scored equal to it) agrees
        saved = mnistkit.deployed.load(str(exports["work"] / "export" / name / "1")).predict(pictures)
        assert np.abs(probabilities - saved).max() <= MAX_DIFFERENCE


@pytest.mark.parametrize("network", [MLP, LENET5], ids=["mlp", "lenet5"])
def test_each_exported_form_gives_the_checkpoints_layers_and_weights_from_its_inside_signature(exports, network):
    work, name = exports["work"], network.export_name
    pictures = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")[0][:20].reshape(-1, 784) / np.float32(255)
    checkpoint = mnist_app.Predictor(str(work / ("model" if network is MLP else "model_lenet5"))).inside
    expected, layers = checkpoint.run(pictures)[1], checkpoint.weights()
    forms = {"saved_model": (work / "export" / name / "1", 1e-5), "tflite": (work / "export" / f"{name}.tflite", 1e-4),
             "int8": (work / "export" / f"{name}_int8.tflite", None)}
    for form, (path, tolerance) in forms.items():
        model = mnistkit.deployed.load(str(path))
        probabilities, values = model.inside.run(pictures)
        assert model.inside.layers == [layer for layer in checkpoint.layers]  # names, kinds, shapes, lines
        assert np.array_equal(probabilities, model.predict(pictures))  # the one run gives serving_default's answer
        if tolerance is None:  # int8: rounded activations, the same logits' order on nearly every digit
            assert sum(np.argmax(values[-1], 1) == np.argmax(expected[-1], 1)) >= len(pictures) - 1, form
            continue
        for got, want, layer in zip(values, expected, checkpoint.layers):
            np.testing.assert_allclose(got, want, atol=tolerance * max(1.0, float(np.abs(want).max())),
                                       err_msg=f"{form} {layer.name}")
        weights = model.inside.weights()
        assert sorted(weights) == sorted(layers)
        for layer in weights:
            np.testing.assert_allclose(weights[layer], layers[layer], atol=1e-6, err_msg=f"{form} {layer}")


READ_RECORD = ("import sys; sys.path.insert(0, sys.argv[1]); import json; from mnistkit import export; "
               "print(json.dumps([export.read_metadata(p) for p in sys.argv[2:]])); print('tensorflow' in sys.modules)")


def test_every_export_records_its_checkpoint_step_version_and_network_read_back_without_tensorflow(exports):
    work = exports["work"]
    for network, model_dir, step in ((MLP, "model", 2000), (LENET5, "model_lenet5", LENET5_STEPS)):
        name = network.export_name
        paths = [str(work / "export" / f"{name}.tflite"), str(work / "export" / f"{name}_int8.tflite"),
                 str(work / "export" / name / "1")]
        result = subprocess.run([sys.executable, "-c", READ_RECORD, ROOT, *paths], capture_output=True, text=True,
                                timeout=wait_limit(120))
        assert result.returncode == 0, result.stderr
        records, uses_tensorflow = result.stdout.splitlines()
        assert uses_tensorflow == "False"
        expected = {"checkpoint": f"{work / model_dir}/mnist_model-{step}", "global_step": step, "version": 1,
                    "saved_model": f"{work / 'export'}/{name}/1", "network": mnistkit.networks.to_record(network),
                    "written_by": "mnist_export.py"}
        found = json.loads(records)
        inside = [record.pop("inside") for record in found]
        assert found == [expected] * 3 and inside == [inside[0]] * 3
        # its layers: forward()'s names, kinds and shapes, each with the line of forward() that computes it
        assert [(e["name"], e["kind"], tuple(e["shape"])) for e in inside[0]] == [
            (layer.name, layer.kind, layer.shape) for layer in INSIDE[network.label]]
        for entry in inside[0]:
            file, number = entry["at"].split(":")
            assert file == network.forward + ".py" and entry["line"]
            assert linecache.getline(os.path.join(ROOT, file), int(number)).strip() == entry["line"]
    assert inside[0][-1]["line"] == "return tf.matmul(fc1, fc2_w) + fc2_b"  # LeNet-5's logits


def without_record(source, target):
    """A copy of a .tflite file as exports were before the record: no Model.metadata entry of ours."""
    from tensorflow.lite.tools import flatbuffer_utils
    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(open(source, "rb").read()))
    model.metadata = [m for m in model.metadata if m.name not in (b"mnist_export", "mnist_export")]
    model.signatureDefs = []
    open(target, "wb").write(bytes(flatbuffer_utils.convert_object_to_bytearray(model)))


@pytest.mark.parametrize("network", [MLP, LENET5], ids=["mlp", "lenet5"])
def test_an_export_from_before_records_is_told_by_its_exact_weights(exports, tmp_path, network):
    name = network.export_name
    old = tmp_path / f"{name}.tflite"
    without_record(exports["work"] / "export" / f"{name}_int8.tflite", old)
    model = mnistkit.deployed.load(str(old))
    assert model.record is None and model.network == network
    assert model.inside.problem == (f"{old}: exported without its layers (no `inside` signature); export it again "
                                    f"with mnist_export.py")  # it answers, without layers to show
    saved = tmp_path / name / "1"
    shutil.copytree(exports["work"] / "export" / name / "1", saved)
    shutil.rmtree(saved / "assets.extra")
    model = mnistkit.deployed.load(str(saved))
    assert model.record is None and model.network == network
    assert model.inside.problem.startswith(f"{saved}: exported without its layers")
    assert mnistkit.deployed.network_of_shapes({(500, 784), (10, 500), (32, 5, 5, 1)}) is None  # not exactly either
    assert mnistkit.networks.guess(["w1", "b1", "w2", "b2", "w3"]) is None


def test_the_app_says_which_version_of_a_base_path_it_used_and_verbose_prints_the_record(exports, tmp_path):
    base = tmp_path / "export" / "mnist"
    shutil.copytree(exports["work"] / "export" / "mnist" / "1", base / "1")
    shutil.copytree(exports["work"] / "export" / "mnist" / "1", base / "2")
    record = json.loads((base / "2" / "assets.extra" / "mnist_export.json").read_text())
    record["version"] = 2
    (base / "2" / "assets.extra" / "mnist_export.json").write_text(json.dumps(record))
    images = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")[0]
    from PIL import Image
    Image.fromarray(255 - images[0]).resize((140, 140)).save(tmp_path / "digit.png")
    quiet = run_main("mnist_app.py", "--model-dir", str(base), "digit.png", cwd=tmp_path)
    verbose = run_script("mnist_app.py", "--model-dir", str(base), "digit.png", "--verbose", cwd=tmp_path)
    used = f"{base}: using version 2 ({base}/2), the newest of 1, 2"
    assert quiet.returncode == verbose.returncode == 0, quiet.stderr
    assert quiet.stderr.splitlines() == [used]
    lines = verbose.stderr.splitlines()
    assert used in lines
    assert f"{base}/2: export record {json.dumps(record, sort_keys=True)}" in lines


SCORE_WITHOUT_TENSORFLOW = """
import runpy, sys
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
print("tensorflow" in sys.modules)
"""


@pytest.mark.parametrize("suffix", ["", "_int8"])
def test_the_tflite_files_score_on_the_course_jpgs_with_litert_and_pillow_alone(exports, sample_workdir, suffix):
    """docs/deploy.md's way (tools/score_tflite.py), against the app's predictor on the same JPGs."""
    path = exports["work"] / "export" / f"mnist{suffix}.tflite"
    folder = sample_workdir / "mnist_data_jpg" / "mnist_test_jpg_2000"
    labels = sample_workdir / "mnist_data_jpg" / "mnist_test_jpg_2000.txt"
    result = subprocess.run([sys.executable, "-c", SCORE_WITHOUT_TENSORFLOW, os.path.join(ROOT, "tools", "score_tflite.py"),
                             str(path), str(folder), str(labels)], capture_output=True, text=True,
                            timeout=wait_limit(300))
    assert result.returncode == 0, result.stderr
    scored, uses_tensorflow = result.stdout.splitlines()
    assert uses_tensorflow == "False"
    from PIL import Image
    lines = [line.rsplit(maxsplit=1) for line in labels.read_text().splitlines()]
    pictures = np.stack([np.asarray(Image.open(folder / name), np.float32).reshape(784) / 255 for name, _ in lines])
    digits = mnistkit.deployed.load(str(path)).predict(pictures).argmax(1)
    accuracy = np.mean(digits == np.array([int(d) for _, d in lines]))
    assert scored == f"{path}: {accuracy:.4f} of 2000 digits"


def test_a_full_disk_leaves_no_half_written_export(exports, tmp_path, capsys):
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a small tmpfs")
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    if os.system(f"mount -t tmpfs -o size=2m tmpfs {tiny} 2>/dev/null") != 0:  # room for the SavedModel, not the rest
        pytest.skip("cannot mount a tmpfs here")
    try:
        status = mnist_export.main(["--model-dir", str(exports["work"] / "model"), "--export-dir", str(tiny / "export"),
                                    "--data-dir", str(exports["work"] / "data")])
        err = capsys.readouterr().err
        assert status == 1 and err.count("\n") == 1, err
        assert err.startswith(f"error: {tiny}/export: cannot write the export (no space left on device)"), err
        assert os.listdir(tiny) == []
    finally:
        os.system(f"umount {tiny}")

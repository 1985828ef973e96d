"""mnist_export.py (issue 26): the SavedModel and LiteRT files match the checkpoint; versions, errors, the app's three forms.

One export of each network per session (exports), scored once in a fresh TensorFlow 2 eager process
(tests/exported_check.py); the other tests reuse it (under xdist the file runs in one worker: made once). The networks are conftest's trained models: the 784-500-10 one of trained_workdir and the LeNet-5 of
two_models (LENET5_STEPS steps, short, so its figures are not those of docs/deploy.md).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import LENET5_STEPS, ROOT, tree_digests
import mnist_app
import mnist_export
import mnist_test
from tf_compat import tf
import mnistkit.cli
import mnistkit.deployed
import mnistkit.idx
from mnistkit.networks import LENET5, MLP

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
        net = mnist_export.FORWARD[network]
        ckpt = mnistkit.checkpoints.latest(str(model_dir))
        accuracy[network.label] = mnist_test.evaluate(ckpt, str(work / "data" / "mnist_test.tfrecords"), net=net)[1]
    checked = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "exported_check.py"), str(work / "export"),
                              str(work / "data" / "mnist_test.tfrecords")], capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr
    return {"work": work, "written": written, "log": log, "checked": json.loads(checked.stdout), "accuracy": accuracy}


@pytest.mark.parametrize("network", [MLP, LENET5], ids=["mlp", "lenet5"])
def test_tf2_eager_saved_model_and_litert_files_score_as_the_checkpoint(exports, network, summary_line):
    name = mnistkit.export.MODEL_NAMES[network.label]
    got = exports["checked"][name]
    assert got["executing_eagerly"] and got["count"] == 2000 and got["version"] == 1
    assert got["signature"] == {"inputs": {"images": ["float32", [None, 784]]},
                                "outputs": {"probabilities": ["float32", [None, 10]], "classes": ["int64", [None]]}}
    assert got["saved_model_accuracy"] == exports["accuracy"][network.label]  # the same 2,000 records, the same answers
    assert got["classes_are_argmax"]
    assert got["tflite_max_difference"] <= MAX_DIFFERENCE
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
        assert sorted(os.listdir(work / "export" / name / "1")) == ["saved_model.pb", "variables"]
    assert log[0] == f"exporting the 784-500-10 network from {work / 'model'}/mnist_model-2000 (moving averages)"
    assert log[1] == "writing the SavedModel (serving_default: images -> probabilities, classes)"
    assert log[2:4] == ["converting to LiteRT: mnist.tflite",
                        "converting to LiteRT: mnist_int8.tflite (int8, calibrated on 300 training records)"]
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


def test_the_app_gives_the_same_digit_from_checkpoint_saved_model_and_litert(exports, tmp_path):
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    from PIL import Image
    paths = []
    for i in range(PICTURES):
        paths.append(str(tmp_path / f"digit{i}.png"))
        Image.fromarray(255 - images[i], mode="L").resize((140, 140), Image.Resampling.BICUBIC).save(paths[-1])
    work = exports["work"]
    for network in (MLP, LENET5):
        name = mnistkit.export.MODEL_NAMES[network.label]
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
                            capture_output=True, text=True, timeout=120)
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


@pytest.mark.parametrize("case", ["no checkpoint", "damaged", "file in the way", "no training records"])
def test_errors_are_one_line_and_leave_nothing_behind(exports, tmp_path, capsys, case):
    work = exports["work"]
    model, export_dir, data = work / "model", tmp_path / "out" / "export", work / "data"
    if case == "no checkpoint":
        model, expected = tmp_path / "empty", (f"{tmp_path}/empty: no checkpoint found; train first with "
                                     f"`{mnistkit.cli.command('mnist_backward.py')}`")
        model.mkdir()
    elif case == "damaged":
        model = damaged_copy(exports, tmp_path)
        expected = (f"{model}/mnist_model-2000: checkpoint is damaged (mnist_model-2000.data-00000-of-00001 is cut short "
                    f"(1,000 bytes): tensor 'b1' lies past its end); the newest intact checkpoint is "
                    f"{model}/mnist_model-1000: move {model}/mnist_model-2000.* out of {model} to use it")
    elif case == "file in the way":
        export_dir.parent.mkdir()
        export_dir.write_text("not a folder")
        expected = f"{export_dir}: cannot write the export (Not a directory); choose another folder with --export-dir"
    else:
        data = tmp_path / "nodata"
        expected = f"{data}: no such folder or TFRecord file; run `python mnist_generateds.py` first"
    status = mnist_export.main(["--model-dir", str(model), "--export-dir", str(export_dir), "--data-dir", str(data)])
    assert (status, capsys.readouterr().err) == (1, f"error: {expected}\n")
    assert (sorted(os.listdir(tmp_path / "out")) == ["export"]) if case == "file in the way" else not (tmp_path / "out").exists()


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
        assert err.startswith(f"error: {tiny}/export: cannot write the export (No space left on device)"), err
        assert os.listdir(tiny) == []
    finally:
        os.system(f"umount {tiny}")

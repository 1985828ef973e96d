"""The course's scripts end to end on the installed versions, each run as a student runs it, in a fresh folder.

`python tasks.py test-floor` runs this file alone in .venv-floor, which holds requirements-floor.txt
(the oldest versions requirements.txt allows); the normal suite runs it on the newest ones. Short runs
on the bundled sample: generate, train and evaluate both networks (with the evaluator's report, drawn
by Matplotlib), read pictures of digits made from the sample's test images, and export the 784-500-10
network (TensorFlow's converter) to read them again from its SavedModel and .tflite files (LiteRT), and from the
drawing board's server (Starlette, uvicorn). Each accuracy must
clear a floor well below what was measured, so a version that computes wrong numbers fails while an
unlucky seed does not.
"""
import importlib.metadata
import re
import time

import pytest
from PIL import Image, ImageOps

from conftest import run_script
from test_board import Server, request

MLP_STEPS, LENET5_STEPS = 300, 50
# Accuracy on the sample's 2,000 test records, measured in 12 fresh runs (TensorFlow 2.21 / NumPy 2.4 and
# 2.16 / 1.26): 784-500-10 after 300 steps 0.8975-0.905; LeNet-5 after 50 steps 0.537-0.666 (mean 0.60).
MLP_FLOOR, LENET5_FLOOR = 0.85, 0.4
# Of APP_PICTURES pictures, read right in 6 runs: 93-96 by the 784-500-10 model, 52-64 by LeNet-5.
APP_PICTURES, APP_FLOOR, LENET5_APP_FLOOR = 100, 0.8, 0.3
ACCURACY = re.compile(r"^After (\d+) training steps, test accuracy = ([0-9.]+)$", re.M)
PREDICTION = re.compile(r"^(\S+): The prediction number is: (\d)\b", re.M)
TIMEOUT = 300  # seconds for one script: a hang fails the test instead of blocking the suite


def versions():
    """'TensorFlow X, NumPy Y, Pillow Z, ai-edge-litert W' as installed (either TensorFlow distribution)."""
    def version(*names):
        for name in names:
            try:
                return importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                pass
        return "?"
    return (f"TensorFlow {version('tensorflow-cpu', 'tensorflow', 'tensorflow-macos')}, "
            f"NumPy {version('numpy')}, Pillow {version('pillow')}, ai-edge-litert {version('ai-edge-litert')}, "
            f"Starlette {version('starlette')}, uvicorn {version('uvicorn')}")


def succeeded(script, *args, cwd):
    """Run a course script in cwd; its stdout, after checking that it exited 0."""
    result = run_script(script, *args, cwd=cwd, timeout=TIMEOUT)
    assert result.returncode == 0, f"{script} {' '.join(args)} exited {result.returncode}:\n{result.stderr}"
    return result.stdout


def accuracy(stdout, steps):
    """The one accuracy the evaluator printed, after checking it is for the checkpoint of `steps`."""
    found = ACCURACY.findall(stdout)
    assert [int(step) for step, _ in found] == [steps], stdout
    return float(found[0][1])


def digit_pictures(work, count):
    """The first `count` test digits of the generated JPG layout as a user's pictures: dark ink on white,
    enlarged to 140x140, as PNG files in work/pictures; {file name: digit}."""
    label_file, = (work / "mnist_data_jpg").glob("mnist_test_jpg_*.txt")
    (work / "pictures").mkdir()
    digits = {}
    for line in label_file.read_text().splitlines()[:count]:
        name, digit = line.split()
        with Image.open(label_file.with_suffix("") / name) as jpg:
            picture = ImageOps.invert(jpg.convert("L")).resize((140, 140), Image.Resampling.BICUBIC)
        png = name.replace(".jpg", ".png")
        picture.save(work / "pictures" / png)
        digits[f"pictures/{png}"] = int(digit)
    return digits


def serve_one_picture(work, model_dir, picture):
    """The digit (str) the drawing board's server (`mnist_app.py --serve`, Starlette on uvicorn) answers for one
    picture file, after checking TF Serving's predict and that Ctrl-C ends it with 130."""
    server = Server(work, "--model-dir", model_dir)
    try:
        status, answer = request(server.url + "board/predict", (work / picture).read_bytes())
        assert status == 200, answer
        status, served = request(server.url + "v1/models/mnist:predict", {"inputs": [[0.0] * 784]})
        assert status == 200 and len(served["outputs"]["probabilities"][0]) == 10, served
    finally:
        assert server.stop() == 130, server.stderr()
    return str(answer["digit"])


def read_right(stdout, digits):
    """How many of the pictures the app named correctly, after checking it answered for each one."""
    predicted = {path: int(digit) for path, digit in PREDICTION.findall(stdout)}
    assert sorted(predicted) == sorted(digits), stdout
    return sum(predicted[path] == digit for path, digit in digits.items())


@pytest.mark.floor
def test_generate_train_evaluate_and_read_pictures_with_both_networks(tmp_path, summary_line):
    start = time.monotonic()
    out = succeeded("mnist_generateds.py", "--no-download", "--data-dir", "D", cwd=tmp_path)
    assert "wrote 8000 train records" in out and "wrote 2000 test records" in out, out
    assert sorted(p.name for p in (tmp_path / "D").iterdir()) == ["mnist_test.tfrecords", "mnist_train.tfrecords"]

    succeeded("mnist_backward.py", "--steps", str(MLP_STEPS), "--data-dir", "D", "--model-dir", "M", cwd=tmp_path)
    assert (tmp_path / "M" / f"mnist_model-{MLP_STEPS}.index").is_file()
    mlp = accuracy(succeeded("mnist_test.py", "--once", "--data-dir", "D", "--model-dir", "M", "--report", "report.png",
                             cwd=tmp_path), MLP_STEPS)
    assert mlp > MLP_FLOOR
    assert (tmp_path / "report.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")  # drawn by Matplotlib

    digits = digit_pictures(tmp_path, APP_PICTURES)
    from_checkpoint = succeeded("mnist_app.py", "--model-dir", "M", *digits, cwd=tmp_path)
    right = read_right(from_checkpoint, digits)
    assert right >= APP_FLOOR * APP_PICTURES

    out = succeeded("mnist_export.py", "--model-dir", "M", "--data-dir", "D", "--export-dir", "E", cwd=tmp_path)
    assert out.endswith("wrote E/mnist/1 (SavedModel), E/mnist.tflite and E/mnist_int8.tflite\n"), out
    for form in ("E/mnist/1", "E/mnist.tflite"):  # the same digits as from the checkpoint
        assert PREDICTION.findall(succeeded("mnist_app.py", "--model-dir", form, *digits, cwd=tmp_path)) == \
            PREDICTION.findall(from_checkpoint), form
    int8_right = read_right(succeeded("mnist_app.py", "--model-dir", "E/mnist_int8.tflite", *digits, cwd=tmp_path),
                            digits)
    assert int8_right >= APP_FLOOR * APP_PICTURES
    served = serve_one_picture(tmp_path, "E/mnist.tflite", next(iter(digits)))
    assert served == PREDICTION.findall(from_checkpoint)[0][1], served

    succeeded("mnist_lenet5_backward.py", "--steps", str(LENET5_STEPS), "--data-dir", "D", "--model-dir", "L",
              cwd=tmp_path)
    lenet5 = accuracy(succeeded("mnist_lenet5_test.py", "--once", "--data-dir", "D", "--model-dir", "L",
                                cwd=tmp_path), LENET5_STEPS)
    assert lenet5 > LENET5_FLOOR
    lenet5_right = read_right(succeeded("mnist_app.py", "--model-dir", "L", *digits, cwd=tmp_path), digits)
    assert lenet5_right >= LENET5_APP_FLOOR * APP_PICTURES  # 50 steps are far from trained, but well above chance

    summary_line(f"end to end on {versions()}: accuracy {mlp:.4f} after {MLP_STEPS} steps, LeNet-5 {lenet5:.4f} "
                 f"after {LENET5_STEPS}; app {right} and {lenet5_right} of {APP_PICTURES} pictures ({int8_right} "
                 f"from the int8 .tflite); "
                 f"{time.monotonic() - start:.0f} s")

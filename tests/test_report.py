"""The evaluation report: its numbers, the picture, and the command line."""
import json

import numpy as np
import pytest
from PIL import Image

from conftest import TRAIN_STEPS, run_main
import mnist_test
from tf_compat import tf
import mnistkit.report


@pytest.mark.quick
def test_report_numbers_on_a_small_hand_checked_case():
    labels = np.array([0, 0, 1, 1, 2, 2])
    probabilities = np.full((6, 10), 0.01)
    for i, (predicted, p) in enumerate([(0, 0.9), (1, 0.6), (1, 0.8), (1, 0.7), (0, 0.95), (2, 0.5)]):
        probabilities[i, predicted] = p
    numbers = mnistkit.report.report_numbers(7, labels, probabilities, worst=5)
    assert numbers["global_step"] == 7 and numbers["records"] == 6 and numbers["correct"] == 4
    assert numbers["accuracy"] == pytest.approx(4 / 6)
    confusion = np.array(numbers["confusion_matrix"])
    assert confusion.shape == (10, 10) and confusion.sum() == 6
    assert confusion[:3, :3].tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    per_digit = numbers["per_digit"]
    assert [per_digit[d]["precision"] for d in range(3)] == [pytest.approx(1 / 2), pytest.approx(2 / 3), 1.0]
    assert [per_digit[d]["recall"] for d in range(3)] == [0.5, 1.0, 0.5]
    assert per_digit[5] == {"digit": 5, "precision": None, "recall": None, "support": 0, "predicted": 0}
    # Wrong predictions, surest first: record 4 (2 taken for 0 at 0.95), then record 1 (0 taken for 1 at 0.6).
    assert [(w["index"], w["true"], w["predicted"]) for w in numbers["worst_misclassified"]] == [(4, 2, 0), (1, 0, 1)]
    assert numbers["worst_misclassified"][0]["confidence"] == pytest.approx(0.95)
    assert numbers["worst_misclassified"][0]["true_probability"] == pytest.approx(0.01)
    json.dumps(numbers)  # JSON-ready as it is


@pytest.mark.quick
@pytest.mark.parametrize("worst_recall, title", [
    (0.83, "precision / recall per digit (axis cut: starts at 0.75, not 0)"),
    (0.02, "precision / recall per digit")])
def test_the_precision_recall_axis_starts_at_0_or_says_where_it_is_cut(worst_recall, title):
    labels = np.repeat(np.arange(10), 100)
    predicted = labels.copy()
    predicted[: round(100 * (1 - worst_recall))] = 1  # digit 0's recall is worst_recall
    probabilities = np.eye(10)[predicted] * 0.9 + 0.01
    numbers = mnistkit.report.report_numbers(1, labels, probabilities)
    fig = mnistkit.report.draw_report(numbers, np.zeros((1000, 784), np.uint8))
    bars = next(ax for ax in fig.axes if ax.get_title().startswith("precision / recall"))
    assert bars.get_title() == title
    start = bars.get_xlim()[0]
    assert start == (0.75 if "cut" in title else 0.0)
    assert len(bars.lines) == (2 if start else 0)  # the break marks


@pytest.fixture(scope="module")
def details(trained_workdir):
    ckpt = tf.train.latest_checkpoint(str(trained_workdir / "model"))
    path = str(trained_workdir / "data" / "mnist_test.tfrecords")
    return ckpt, path, mnist_test.evaluate(ckpt, path, batch_size=300, details=True)


def test_evaluate_details_are_the_file_records_in_order(details):
    ckpt, path, (step, accuracy, count, records) = details
    labels, pixels = [], []
    for serialized in tf.io.tf_record_iterator(path):
        feature = tf.train.Example.FromString(serialized).features.feature
        pixels.append(np.frombuffer(feature["img_raw"].bytes_list.value[0], np.uint8))
        labels.append(np.argmax(feature["label"].int64_list.value))
    assert count == len(labels) == 2000 and step == TRAIN_STEPS
    assert records["labels"].tolist() == labels
    assert np.array_equal(records["pixels"], np.stack(pixels)) and records["pixels"].dtype == np.uint8
    assert records["probabilities"].shape == (2000, 10)
    np.testing.assert_allclose(records["probabilities"].sum(axis=1), 1, rtol=1e-5)
    assert np.mean(records["probabilities"].argmax(axis=1) == labels) == accuracy
    assert mnist_test.evaluate(ckpt, path)[1] == accuracy  # the plain path agrees


def test_report_picture_draws_the_matrix_counts_and_the_worst_digits(details):
    _, _, (step, _, _, records) = details
    numbers = mnistkit.report.report_numbers(step, records["labels"], records["probabilities"])
    fig = mnistkit.report.draw_report(numbers, records["pixels"])
    matrix_axes = fig.axes[0]
    shown = np.array([int(t.get_text()) for t in matrix_axes.texts]).reshape(10, 10)
    assert shown.tolist() == numbers["confusion_matrix"]
    worst = numbers["worst_misclassified"]
    assert len(worst) == mnistkit.report.REPORT_WORST
    assert all(w["predicted"] != w["true"] for w in worst)
    assert [w["confidence"] for w in worst] == sorted((w["confidence"] for w in worst), reverse=True)
    tiles = [ax for ax in fig.axes if ax.images and ax.images[0].get_array().shape == (28, 28)]
    assert len(tiles) == len(worst)
    for ax, w in zip(tiles, worst):
        assert np.array_equal(ax.images[0].get_array(), records["pixels"][w["index"]].reshape(28, 28))
        assert ax.get_title().startswith(f"#{w['index']}: {w['true']} → {w['predicted']}")


def test_report_command_writes_picture_and_json(trained_copy, tmp_path, details):
    _, _, (_, accuracy, _, records) = details
    model, data = str(trained_copy / "model"), str(trained_copy / "data")  # a copy: the evaluator writes model/eval
    result = run_main("mnist_test.py", "--once", "--model-dir", model, "--data-dir", data,
                      "--report", "out", "--report-json", "out/numbers.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"After {TRAIN_STEPS} training steps, test accuracy = {accuracy:g}",
                                          "report: out/report.png, out/numbers.json"]
    with Image.open(tmp_path / "out" / "report.png") as picture:
        assert picture.format == "PNG" and picture.width >= 800 and picture.height >= 700
    numbers = json.loads((tmp_path / "out" / "numbers.json").read_text())
    assert numbers["accuracy"] == accuracy and numbers["global_step"] == TRAIN_STEPS
    confusion = np.array(numbers["confusion_matrix"])
    assert confusion.sum() == 2000 and np.trace(confusion) == numbers["correct"]
    for d in numbers["per_digit"]:
        assert d["recall"] == pytest.approx(confusion[d["digit"], d["digit"]] / confusion[d["digit"]].sum())
    for w in numbers["worst_misclassified"]:
        assert records["labels"][w["index"]] == w["true"]
        assert records["probabilities"][w["index"]].argmax() == w["predicted"]
        assert w["confidence"] == pytest.approx(float(records["probabilities"][w["index"]].max()), rel=1e-5)


def test_report_path_is_the_png_itself_or_report_png_in_a_folder():
    assert mnistkit.report.report_path("runs/mine.PNG") == "runs/mine.PNG"
    assert mnistkit.report.report_path("runs") == "runs/report.png"
    assert mnistkit.report.report_path("runs.d/") == "runs.d/report.png"

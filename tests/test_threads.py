"""One predictor shared by threads, as the drawing board's server shares it.

Every digit a thread gets is the one a single thread got for the same picture, and the process's
stdout and stderr still print afterwards (no per-call redirection of file descriptors 1 and 2).
"""
import os
import threading

import numpy as np
import pytest
from PIL import Image

import handmade
from conftest import joined
import mnist_app
from mnistkit import deployed, preparation

THREADS, CALLS = 8, 1000


@pytest.fixture(scope="module")
def inputs():
    """Prepared network inputs of hand-drawn digits: float32 [40, 784] (each digit 0-9 in 4 hands)."""
    rows = []
    for seed in range(4):
        for digit in range(10):
            ink = handmade.draw_digit(digit, 200, 0.06, seed=seed)
            img = Image.fromarray(np.round(255 * (1 - ink)).astype(np.uint8), mode="L")
            rows.append(preparation.network_input(preparation.mnist_input(img))[0])
    return np.stack(rows)


def shared_by_threads(predictor, inputs, calls):
    """Run predictor.predict on single rows from THREADS threads, `calls` each; returns the digits that differ.

    Each thread walks the pictures from its own offset; every answer is compared with the single-threaded
    answer for that picture. Returns [(thread, picture, digit got, digit expected)] and the errors raised.
    """
    expected = [int(np.argmax(predictor.predict(inputs[i:i + 1])[0])) for i in range(len(inputs))]
    wrong, errors = [], []

    def work(thread):
        try:
            for call in range(calls):
                i = (thread * 5 + call) % len(inputs)
                got = int(np.argmax(predictor.predict(inputs[i:i + 1])[0]))
                if got != expected[i]:
                    wrong.append((thread, i, got, expected[i]))
                if call % 97 == 0:  # a batch now and then: the interpreter's tensors are resized under the others
                    predictor.predict(inputs[:3])
        except Exception as e:  # noqa: BLE001 - reported by the test, with the thread
            errors.append((thread, repr(e)))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    joined(threads, "the predicting threads")
    return wrong, errors


@pytest.mark.parametrize("name", ["mnist.tflite", "mnist_int8.tflite"])
def test_tflite_predictor_gives_every_thread_its_own_digits_and_leaves_output_working(exported_workdir, inputs,
                                                                                     name, capfd):
    predictor = deployed.load(str(exported_workdir / "export" / name))
    wrong, errors = shared_by_threads(predictor, inputs, CALLS)
    assert errors == [] and wrong == []
    print("stdout still prints")
    os.write(2, b"stderr still prints\n")
    out, err = capfd.readouterr()
    assert "stdout still prints" in out and "stderr still prints" in err


def test_tflite_predict_never_redirects_the_process_output(exported_workdir, inputs, monkeypatch):
    predictor = deployed.load(str(exported_workdir / "export" / "mnist.tflite"))

    redirected = []
    with monkeypatch.context() as patch:  # only around predict: pytest's own capture moves descriptors too
        patch.setattr(os, "dup2", lambda *args: redirected.append(args))
        shapes = [predictor.predict(inputs[:1]).shape, predictor.predict(inputs[:7]).shape]  # 7: resized
    assert shapes == [(1, 10), (7, 10)] and redirected == []


@pytest.mark.parametrize("form", ["checkpoint", "saved_model"])
def test_checkpoint_and_saved_model_predictors_are_shared_by_threads(exported_workdir, inputs, form):
    if form == "checkpoint":
        predictor = mnist_app.load_predictor(str(exported_workdir / "model"))
    else:
        predictor = mnist_app.load_predictor(str(exported_workdir / "export" / "mnist"))
    wrong, errors = shared_by_threads(predictor, inputs, CALLS // 10)
    assert errors == [] and wrong == []

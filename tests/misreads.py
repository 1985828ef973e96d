"""Pictures of a digit read by a model kind by kind, against a baseline: which are misread where the baseline is
read surely. Shared by tests/test_pictures_framed.py and tests/test_pictures_painted.py (their kinds of picture
from tests/framed.py and tests/painted.py).

The suite's model is trained again on every run (conftest.trained_workdir), and its training is not
deterministic (shuffle_batch's two threads): a digit one run's model reads right by a hair, another's misreads.
So a kind's pictures are judged only on the digits the model reads surely in the baseline (SURE)."""
import numpy as np

import mnist_app
from mnistkit import preparation

SURE = 0.9  # the baseline's probability of the right digit: below it, the digit is read right by a hair or not at all


def read_surely(predictor, rows, labels):
    """bool [n]: which of the network inputs `rows` (float32 [n, 784]) the predictor (a mnist_app.Predictor) gives
    their label (int [n]) a probability of SURE or more (which are read right, and not by a hair)."""
    probabilities = predictor.predict(rows)
    return probabilities[np.arange(len(labels)), labels] >= SURE


def misreads(predictor, kinds, pictures, labels, right):
    """{kind: ["#i: <label> read as <answer>", ...]} for each of `kinds` (names) whose pictures the predictor reads
    as another digit where the baseline's picture i is read surely; a kind with none is left out.

    predictor: a mnist_app.Predictor; pictures(kind): that kind's pictures, as (file bytes, label) in the order
    of `labels` (int [n]), each prepared as the app prepares a file (mnist_app.prepared_pixels); right: bool [n],
    the baseline pictures read surely (read_surely of MNIST's own 28x28 digits, of the plain pictures)."""
    wrong = {}
    for kind in kinds:
        inputs = [preparation.network_input(mnist_app.prepared_pixels(data, name=kind)) for data, _ in pictures(kind)]
        answers = predictor.predict(np.concatenate(inputs)).argmax(axis=1)
        missed = [f"#{i}: {labels[i]} read as {answers[i]}" for i in np.nonzero(right & (answers != labels))[0]]
        if missed:
            wrong[kind] = missed
    return wrong

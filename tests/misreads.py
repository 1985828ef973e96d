"""Pictures of a digit read by a model kind by kind, against a baseline: which are misread where the baseline is
read right. Shared by tests/test_pictures_framed.py and tests/test_pictures_painted.py (their kinds of picture
from tests/framed.py and tests/painted.py)."""
import numpy as np

import mnist_app
from mnistkit import preparation


def misreads(predictor, kinds, pictures, labels, right):
    """{kind: ["#i: <label> read as <answer>", ...]} for each of `kinds` (names) whose pictures the predictor reads
    as another digit where the baseline's picture i is read right; a kind with none is left out.

    predictor: a mnist_app.Predictor; pictures(kind): that kind's pictures, as (file bytes, label) in the order
    of `labels` (int [n]), each prepared as the app prepares a file (mnist_app.prepared_pixels); right: bool [n],
    the baseline pictures read right (MNIST's own 28x28 digits, the plain pictures)."""
    wrong = {}
    for kind in kinds:
        inputs = [preparation.network_input(mnist_app.prepared_pixels(data, name=kind)) for data, _ in pictures(kind)]
        answers = predictor.predict(np.concatenate(inputs)).argmax(axis=1)
        missed = [f"#{i}: {labels[i]} read as {answers[i]}" for i in np.nonzero(right & (answers != labels))[0]]
        if missed:
            wrong[kind] = missed
    return wrong

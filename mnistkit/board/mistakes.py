"""The test set's mistakes: the served model's confusion matrix on the test records, and the digits it misreads.

- GET /board/mistakes[?model=compare]             the scoring's state: running (stage, done, total) or done
                                                  (total, right, matrix[true digit][digit read]); the first
                                                  GET for a model version starts it
- GET /board/mistakes?digit=T&read=P[&model=...]  one cell: the test digits of true digit T read as P (up to
                                                  CELL_DIGITS), each its record number and 784 pixels
- GET /board/mistakes?record=N[&model=...]        test record N's inside (inside.inside_answer: the served
                                                  model's, the --compare one's under "compare", whichever
                                                  matrix it was opened from), its label and "opened_from"

The test records are the course's evaluation set, data/mnist_test.tfrecords
(the --learn-data-dir folder's: records.tfrecord_files, shards too): they
are scored once per model version (a Model: a Follower's swap makes a new
one), on a thread of their own, BATCH at a time with the progress said,
and never offered for keeping (the page shows them apart from the teach
buttons). No test file is 404 with its one line; a damaged one fails the
scoring with its line (409), said once: the next GET scores again.
"""
import base64
import threading

import numpy as np

from .. import preparation, records
from ..errors import DataError
from ..records import NUM_CLASSES
from . import inside as look
from .table import BoardError, runs_model

CELL_DIGITS = 50  # the misread test digits one cell of the matrix opens
BATCH = 250  # test digits per model run while scoring (the progress moves by this much)
STOP_WAIT = 2.0  # seconds the server waits, as it stops, for a scoring to end its batch (no model run cut)
QUERY = "no query (the scoring), digit=T&read=P (a cell), or record=N (a test digit's inside); model=compare too"


class Scoring:
    """One model's scoring of the test records, on a daemon thread: `state` running, done or failed (`line`).

    model: the board.model.Model scored; paths: the test TFRecord files.
    Once done: images uint8 [n, 784], digits int64 [n] (the labels), read
    int64 [n] (the model's digits).
    """

    def __init__(self, model, paths, stopped):
        self.model, self.paths, self.stopped, self.lock = model, paths, stopped, threading.Lock()
        self.state, self.stage, self.done, self.total, self.line = "running", "reading", 0, 0, ""
        self.images = self.digits = self.read = None
        self.said = False  # a failure's line given to a request: the next one scores again
        self.thread = threading.Thread(target=self.work, name="board-mistakes", daemon=True)
        self.thread.start()

    def work(self):
        """Read the test records (checked whole), then run the model BATCH digits at a time until `stopped` (a
        threading.Event) is set."""
        try:
            images, digits = records.read_examples(self.paths)
            with self.lock:
                self.stage, self.total = "scoring", len(digits)
            read = np.empty(len(digits), np.int64)
            for start in range(0, len(digits), BATCH):
                if self.stopped.is_set():
                    return
                rows = preparation.network_rows(images[start:start + BATCH])
                read[start:start + BATCH] = self.model.predictor.predict(rows).argmax(axis=1)
                with self.lock:
                    self.done = min(start + BATCH, len(digits))
            with self.lock:
                self.images, self.digits, self.read, self.state = images, digits, read, "done"
        except Exception as e:  # noqa: BLE001  (any: said to the page in one line, the server goes on)
            line = str(e) if isinstance(e, DataError) else f"{type(e).__name__}: {e}"
            with self.lock:
                self.state, self.line = "failed", " ".join(line.split())[:300]

    def status(self):
        """The scoring's state as the page reads it (see the module's docstring)."""
        with self.lock:
            said = {"state": self.state, "model": self.model.describe()}
            if self.state == "running":
                return {**said, "stage": self.stage, "done": self.done, "total": self.total}
        matrix = np.zeros((NUM_CLASSES, NUM_CLASSES), np.int64)
        np.add.at(matrix, (self.digits, self.read), 1)
        return {**said, "total": int(len(self.digits)), "right": int(np.trace(matrix)), "matrix": matrix.tolist()}

    def cell(self, digit, read):
        """The test digits of true `digit` read as `read`: {"digit", "read", "count", "records": their numbers (up
        to CELL_DIGITS), "inputs": base64 of uint8 [len(records), 784]}."""
        found = np.flatnonzero((self.digits == digit) & (self.read == read))
        shown = found[:CELL_DIGITS]
        return {"digit": digit, "read": read, "count": int(len(found)), "records": shown.tolist(),
                "inputs": base64.b64encode(self.images[shown].tobytes()).decode("ascii")}


class Mistakes:
    """The scorings of what a board serves, one per model slot (first, compare), each for the Model now there.

    data_dir: the folder (or file, or pattern) of the test records
    (records.tfrecord_files with isTrain False).
    """

    def __init__(self, data_dir=records.DATA_DIR):
        self.data_dir, self.lock, self.scorings, self.stopped = data_dir, threading.Lock(), {}, threading.Event()

    def stop(self, wait=STOP_WAIT):
        """End the scorings under way after their batch (the server stops), waiting at most `wait` seconds, so that
        no model run is cut by the process's end."""
        self.stopped.set()
        with self.lock:
            running = list(self.scorings.values())
        for scoring in running:
            scoring.thread.join(wait)

    def scoring(self, slot, model):
        """The Scoring of `model` in `slot`, started when that slot's is of another model or failed and said.
        Raises DataError (one line) when there is no test file."""
        with self.lock:
            held = self.scorings.get(slot)
            if held is None or held.model is not model or held.state == "failed" and held.said:
                paths = records.tfrecord_files(self.data_dir, isTrain=False)
                held = self.scorings[slot] = Scoring(model, paths, self.stopped)
            return held


@runs_model
def mistakes(call):
    """GET /board/mistakes: the scoring's state, a cell of its matrix, or a test digit's inside (QUERY)."""
    model = look.chosen(call)
    asked = set(call.query) - {"model"}
    if asked not in (set(), {"digit", "read"}, {"record"}):
        raise BoardError(400, f"{call.method} {call.path}: give {QUERY}")
    try:
        scoring = call.served.mistakes.scoring(call.query.get("model", "first"), model)
    except DataError as e:
        raise BoardError(404, f"{e}; the mistakes are counted on the test records") from None
    if scoring.state == "failed":
        scoring.said = True
        raise BoardError(409, scoring.line)
    if not asked:
        return scoring.status()
    if scoring.state != "done":
        raise BoardError(409, f"the test set is still being scored ({scoring.done} of {scoring.total or '?'}); ask "
                              f"again when GET /board/mistakes says done")
    if "record" in asked:
        number = whole(call.query["record"], "record", len(scoring.digits) - 1)
        # The served model's answer first and the --compare one's under "compare", whichever matrix the digit was
        # opened from: the page keeps each network's column in its place.
        answer = look.inside_answer(call.model, scoring.images[number].reshape(28, 28), call.compare)
        return {**answer, "record": number, "label": int(scoring.digits[number]), "opened_from": call.query.get(
            "model", "first")}
    return scoring.cell(whole(call.query["digit"], "digit", 9), whole(call.query["read"], "read", 9))


def whole(text, name, most):
    """int(text) when it is a whole number from 0 to `most`; BoardError 400 naming `name` otherwise."""
    if not (text.isdecimal() and len(text) <= 9 and int(text) <= most):
        raise BoardError(400, f"{name}={text[:20]}: give a whole number from 0 to {most}")
    return int(text)

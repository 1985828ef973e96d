"""What the network knows of digits: the test digits as its last hidden layer sees them, for the map and for
"that is not a digit".

Course step: 测试 (test), looked at from inside. The test digits are run
through the served network once per model; their last hidden layer (y1 for
the 784-500-10 network, fc1 for LeNet-5: what the logits are computed from)
is what the network has made of each. One computation serves two uses:

- the map (atlas): the activations' two principal components (PCA in
  NumPy), so that the 10,000 test digits sit in 2-D as the network
  separates them, and a drawing falls among them;
- not a digit: a drawing whose activations lie far from every test digit's
  is not like anything the network was shown. Its score is the mean
  distance to its NEIGHBOURS nearest test digits, in the space of the first
  COMPONENTS principal components plus what lies outside them (one more
  axis: the length of the rest). The threshold is the one of the digit the
  network answers (the probabilities, a second signal: a 1's test digits
  lie close together, an 8's far apart): the QUANTILE-th percentile of the
  scores of the test digits it answers that digit for, each scored against
  the others (itself left out). By construction about 100 - QUANTILE
  percent of the test digits are above their threshold, under the 1% the
  board promises. bench/not_a_digit.py measures it, docs/inside.md has the
  rates.

The test digits are the course's test records (data/mnist_test.tfrecords,
records.tfrecord_files), or, without them, the bundled sample's test set
(idx.BUNDLED_DIR). A reference is cached on disk per model and test set
(cache_folder), so that mnist_app.py and the board make it once.
"""
import hashlib
import json
import os
import sys
import threading

import numpy as np

from . import idx, records
from .errors import DataError
from .records import IMAGE_PIXELS

NEIGHBOURS = 5  # test digits a drawing is compared with (and the page shows)
COMPONENTS = 50  # principal components the distances are measured in (and one axis for the rest)
QUANTILE = 99.5  # percentile of the test digits' own scores past which an input is "not a digit"
FEWEST = 20  # test digits answered as one digit below which that digit takes the threshold of them all
BATCH = 250  # test digits per run while the reference is made
FORMAT = 2  # the cache files' layout: a new one is made when it changes
CACHE_ENV = "MNISTKIT_CACHE"  # where the references are cached (default: $XDG_CACHE_HOME or ~/.cache, /mnistkit)


def test_digits(data_dir=records.DATA_DIR):
    """(images uint8 [n, 784], labels int64 [n], source str) of the test set: data_dir's test records, or the
    bundled sample's test set when there are none or data_dir is None (read without TensorFlow). Raises
    DataError (one line) for a damaged records file."""
    try:
        paths = [] if data_dir is None else records.tfrecord_files(data_dir, isTrain=False)
    except DataError:
        paths = []
    if paths:
        images, labels = records.read_examples(paths)
        return np.asarray(images, np.uint8).reshape(-1, IMAGE_PIXELS), np.asarray(labels, np.int64), \
            ", ".join(map(str, paths))
    images, labels = idx.read_idx_split(idx.BUNDLED_DIR, "test")
    return images.reshape(-1, IMAGE_PIXELS), labels.astype(np.int64), idx.BUNDLED_DIR


class Reference:
    """The test digits as one model's last hidden layer sees them (see the module's docstring).

    layer: that layer's name; labels int64 [n]; mean float32 [units],
    components float32 [COMPONENTS, units]; features float32 [n,
    COMPONENTS + 1] (the test digits' coordinates, and the length of the
    rest); thresholds: float64 [10], the not-a-digit score's for each digit
    answered; source: the test set's files. images: uint8 [n, 784], the
    test digits (not cached: read again).
    """

    def __init__(self, layer, labels, mean, components, features, thresholds, source, images=None):
        self.layer, self.labels, self.mean, self.components = layer, labels, mean, components
        self.features, self.thresholds, self.source, self.images = features, thresholds, source, images

    @classmethod
    def made(cls, layer, hidden, probabilities, labels, source, images=None):
        """The Reference of the test digits' hidden activations float32 [n, units] and probabilities [n, 10]."""
        hidden = hidden.reshape(len(hidden), -1).astype(np.float64)
        mean = hidden.mean(axis=0)
        centred = hidden - mean
        values, vectors = np.linalg.eigh(centred.T @ centred)
        components = vectors[:, ::-1][:, :COMPONENTS].T  # largest first
        reference = cls(layer, labels, mean.astype(np.float32), components.astype(np.float32), None, 0, source, images)
        reference.features = reference.features_of(hidden)
        reference.thresholds = thresholds_of(own_scores(reference.features), probabilities.argmax(axis=1))
        return reference

    def features_of(self, hidden):
        """float32 [n, COMPONENTS + 1]: hidden [n, units] in the first COMPONENTS components, and the rest's length."""
        centred = hidden.reshape(len(hidden), -1).astype(np.float32) - self.mean
        inside = np.einsum("nu,cu->nc", centred, self.components).astype(np.float64)  # not BLAS: see reasons.py
        centred = centred.astype(np.float64)
        rest = np.sqrt(np.maximum((centred ** 2).sum(axis=1) - (inside ** 2).sum(axis=1), 0))
        return np.concatenate([inside, rest[:, None]], axis=1).astype(np.float32)

    def place(self, hidden, probabilities):
        """Where one input falls: {"x", "y" (its first two components, the map's axes), "nearest": [{"record",
        "label", "distance"}] (NEIGHBOURS, nearest first), "score", "threshold", "not_a_digit": bool}.

        hidden: its last hidden layer, float32 [units] (or any shape of that
        many values); probabilities: float [10].
        """
        found = self.features_of(hidden.reshape(1, -1))[0].astype(np.float64)
        distances = np.sqrt(((self.features - found.astype(np.float32)) ** 2).sum(axis=1)).astype(np.float64)
        nearest = np.argsort(distances, kind="stable")[:NEIGHBOURS]
        score = float(distances[nearest].mean())
        threshold = float(self.thresholds[int(np.argmax(probabilities))])
        return {"x": float(found[0]), "y": float(found[1]),
                "nearest": [{"record": int(i), "label": int(self.labels[i]), "distance": round(float(distances[i]), 4)}
                            for i in nearest],
                "score": round(score, 4), "threshold": round(threshold, 4), "not_a_digit": bool(score > threshold)}

    def said(self, scores, answers):
        """bool [n]: which of `scores` (own_scores, place's) are past the threshold of their answers (int [n])."""
        return np.asarray(scores) > self.thresholds[np.asarray(answers)]

    def coordinates(self):
        """float32 [n, 2]: the test digits on the map (their first two components)."""
        return self.features[:, :2]

    def save(self, path):
        """Write the reference (all but the images) to `path` (.npz), whole or not at all."""
        staging = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp.npz"
        np.savez(staging, layer=self.layer, labels=self.labels, mean=self.mean, components=self.components,
                 features=self.features, thresholds=self.thresholds, source=self.source)
        os.replace(staging, path)

    @classmethod
    def load(cls, path, images=None):
        """The Reference saved at `path`; OSError or ValueError (and KeyError) when it is not one."""
        with np.load(path) as held:
            return cls(str(held["layer"]), held["labels"], held["mean"], held["components"], held["features"],
                       held["thresholds"], str(held["source"]), images)


def thresholds_of(scores, answers):
    """float64 [10]: for each digit, the QUANTILE-th percentile of the scores of the test digits answered as it
    (answers int [n]); that of all of them for a digit answered fewer than FEWEST times."""
    overall = np.percentile(scores, QUANTILE)
    return np.array([np.percentile(scores[answers == d], QUANTILE) if (answers == d).sum() >= FEWEST else overall
                     for d in range(10)])


def own_scores(features, neighbours=NEIGHBOURS, block=1000):
    """Each test digit's score against the others (itself left out): float64 [n] (Reference.place's score)."""
    features = features.astype(np.float64)
    squared = (features ** 2).sum(axis=1)
    scores = np.empty(len(features))
    for start in range(0, len(features), block):
        rows = slice(start, start + block)
        d2 = squared[rows, None] + squared[None, :] - 2 * features[rows] @ features.T
        d2[np.arange(d2.shape[0]), np.arange(start, start + d2.shape[0])] = np.inf  # not itself
        near = np.partition(d2, neighbours - 1, axis=1)[:, :neighbours]
        scores[rows] = np.sqrt(np.maximum(near, 0)).mean(axis=1)
    return scores


def hidden_of(inside, images, progress=lambda done, total: None, stopped=None):
    """(hidden float32 [n, units], probabilities float32 [n, 10]) of test images uint8 [n, 784] through an Inside
    (mnistkit.layers), BATCH at a time, progress(done, total) after each; None when `stopped` (an Event) is set.
    Raises DataError when the model shows no layers."""
    hidden, probabilities = [], []
    for start in range(0, len(images), BATCH):
        if stopped is not None and stopped.is_set():
            return None
        rows = images[start:start + BATCH].astype(np.float32) / 255
        found, values = inside.run(rows)
        hidden.append(values[-2].reshape(len(rows), -1))
        probabilities.append(found)
        progress(min(start + BATCH, len(images)), len(images))
    return np.concatenate(hidden), np.concatenate(probabilities)


def cache_folder():
    """The folder references are cached in: $MNISTKIT_CACHE, else $XDG_CACHE_HOME/mnistkit or ~/.cache/mnistkit."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return given
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mnistkit")


def cache_key(model_files, source, layer):
    """The cache file's name for a model's files (board.model.files_state: names relative to its folder, sizes,
    times), the test set `source` (its files' names, sizes and times) and the layer."""
    stats = [(os.path.basename(path), os.stat(path).st_size, os.stat(path).st_mtime_ns) for path in source.split(", ")
             if os.path.isfile(path)]  # names, sizes and times, not folders: a copy of a model folder finds it too
    text = json.dumps([FORMAT, list(model_files), stats, layer], default=str)
    return "reference-" + hashlib.sha256(text.encode()).hexdigest()[:24] + ".npz"


def reference_of(inside, model_files, data_dir=records.DATA_DIR, progress=lambda done, total: None,
                 stopped=None, log=None):
    """The Reference of a model (its Inside, and its files' state for the cache key), from the cache or made.

    Reads the test digits (test_digits: data_dir's records, or the bundled
    sample's); a cached reference of the same model files, test files and
    layer is loaded, else made (hidden_of, progress) and cached when the
    cache folder can be written. log: a function given one line when it is
    being made (the app: stderr). Returns None when `stopped` is set.
    Raises DataError as test_digits and the Inside do.
    """
    images, labels, source = test_digits(data_dir)
    layer = inside.layers[-2].name if len(inside.layers) >= 2 else ""
    if not layer:
        raise DataError("this model shows no hidden layer to compare drawings with")
    path = os.path.join(cache_folder(), cache_key(model_files, source, layer))
    try:
        return Reference.load(path, images)
    except (OSError, ValueError, KeyError):
        pass
    if log is not None:
        log(f"placing the {len(labels):,} test digits of {source} in the network's last hidden layer ({layer}); "
            f"once for this model")
    found = hidden_of(inside, images, progress, stopped)
    if found is None:
        return None
    reference = Reference.made(layer, *found, labels, source, images)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        reference.save(path)
    except OSError as e:
        print(f"note: the map of the test digits is not cached ({path}: {e.strerror or e})", file=sys.stderr)
    return reference


class Judge:
    """"Not a digit" for the app (mnist_app.py): the reference of its predictor, made on the first picture.

    predictor: an app predictor (predict, source, inside); data_dir: where
    the test records are (reference.test_digits); log: one line on stderr.
    judge(probabilities, values) -> True, False, or None when the model
    cannot say (no layers, no test digits: said once through `log`).
    """

    def __init__(self, predictor, data_dir=records.DATA_DIR, log=None):
        if type(predictor).__name__ == "LiteRTModel":
            data_dir = None  # a .tflite runs without TensorFlow, which reads the records: the bundled test digits
        self.predictor, self.data_dir, self.log, self.made, self.problem = predictor, data_dir, log, None, None

    def reference(self):
        """The Reference, made (or read from the cache) on the first call; None when it cannot be."""
        if self.made is None and self.problem is None:
            from .board.model import files_state  # the same cache key as the board's
            try:
                if getattr(self.predictor.inside, "problem", None):
                    raise DataError(self.predictor.inside.problem)
                self.made = reference_of(self.predictor.inside, files_state(self.predictor.source), self.data_dir,
                                         log=self.log)
            except DataError as e:
                self.problem = str(e)
                if self.log is not None:
                    self.log(f"note: not telling digits from non-digits ({self.problem})")
        return self.made

    def judge(self, rows):
        """(probabilities float32 [10], not_a_digit: bool or None) of one input float32 [1, 784], from one run."""
        made = self.reference()
        if made is None:
            return self.predictor.predict(rows)[0], None
        probabilities, values = self.predictor.inside.run(rows)
        return probabilities[0], made.place(values[-2][0], probabilities[0])["not_a_digit"]

"""What the network knows of digits: the test digits as it is given them and as its last hidden layer sees them,
for the map and for "that is not a digit".

Course step: 测试 (test), looked at from inside. The test digits are run
through the served network once per model; their last hidden layer (y1 for
the 784-500-10 network, fc1 for LeNet-5: what the logits are computed from)
is what the network has made of each, their 784 input pixels (x, after the
preparation) what it was given. One computation serves two uses:

- the map (atlas): the hidden layer's two principal components (PCA in
  NumPy), so that the 10,000 test digits sit in 2-D as the network
  separates them, and a drawing falls among them;
- not a digit: an input that lies far from every test digit, in what it
  looks like (the input pixels) or in what the network makes of it (the
  hidden layer), is not like anything the network was shown. In each of
  the two spaces (a Space) its score is the mean distance to its
  NEIGHBOURS nearest test digits, in the first COMPONENTS principal
  components of the test digits there plus what lies outside them (one more
  axis: the length of the rest). Each space's threshold is the one of the
  digit the network answers (the probabilities, a second signal: a 1's test
  digits lie close together, an 8's far apart): the QUANTILE-th percentile
  of the scores of the test digits it answers that digit for, each scored
  against the others (itself left out), taken as one of those scores (the
  higher one, not interpolated between two). An input is "not a digit" when it
  is past the threshold in either space. By construction at most 100 -
  QUANTILE percent of the test digits are past each threshold, so at most
  twice that past one of the two: under the 1% the board promises.
  bench/not_a_digit.py measures it, docs/inside.md has the rates.

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

NEIGHBOURS = 5  # test digits an input is compared with in each space (and the page shows: the hidden layer's)
COMPONENTS = 50  # principal components the distances are measured in (and one axis for the rest)
QUANTILE = 99.6  # percentile of the test digits' own scores past which an input is far, in each of the two spaces
FEWEST = 20  # test digits answered as one digit below which that digit takes the threshold of them all
BATCH = 250  # test digits per run while the reference is made
FORMAT = 4  # the cache files' layout: a new one is made when it changes
CACHE_ENV = "MNISTKIT_CACHE"  # where the references are cached (default: $XDG_CACHE_HOME or ~/.cache, /mnistkit)
INPUT = "input"  # the name of the space of the input pixels x (784 values in [0, 1], as the network gets them)


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


class Space:
    """The test digits in one space (the input pixels, or the last hidden layer) and how far is too far there.

    name: the space's (INPUT, or the layer's); mean float32 [units],
    components float32 [COMPONENTS, units] (the test digits' principal
    components there, largest first); features float32 [n, COMPONENTS + 1]
    (the test digits' coordinates on them, and the length of the rest);
    thresholds float64 [10]: the score past which an input answered as each
    digit is far (thresholds_of).
    """

    def __init__(self, name, mean, components, features, thresholds):
        self.name, self.mean, self.components, self.features, self.thresholds = \
            name, mean, components, features, thresholds
        self.exact = features.astype(np.float64)  # the distances' matrix products in float64
        self.squared = (self.exact ** 2).sum(axis=1)

    @classmethod
    def made(cls, name, values, answers):
        """The Space of the test digits' values float [n, units] there, answered as answers int [n]."""
        values = values.reshape(len(values), -1).astype(np.float64)
        mean = values.mean(axis=0)
        centred = values - mean
        _, vectors = np.linalg.eigh(centred.T @ centred)
        components = vectors[:, ::-1][:, :COMPONENTS].T  # largest first
        space = cls(name, mean.astype(np.float32), components.astype(np.float32),
                    np.zeros((len(values), len(components) + 1), np.float32), np.zeros(10))
        space = cls(name, space.mean, space.components, space.features_of(values), np.zeros(10))
        space.thresholds = thresholds_of(own_scores(space.features), answers)
        return space

    def features_of(self, values):
        """float32 [n, COMPONENTS + 1]: values [n, units] on the first COMPONENTS components, and the rest's length."""
        centred = values.reshape(len(values), -1).astype(np.float64) - self.mean
        inside = centred @ self.components.T.astype(np.float64)
        rest = np.sqrt(np.maximum((centred ** 2).sum(axis=1) - (inside ** 2).sum(axis=1), 0))
        return np.concatenate([inside, rest[:, None]], axis=1).astype(np.float32)

    def distances(self, values):
        """(features float64 [COMPONENTS + 1], distances float64 [n] to every test digit) of one input's values."""
        found = self.features_of(values.reshape(1, -1))[0].astype(np.float64)
        squared = self.squared - 2 * (self.exact @ found) + found @ found
        return found, np.sqrt(np.maximum(squared, 0))

    def judged(self, values, answer):
        """{"space", "score", "threshold", "far": bool} of one input's values there, answered as `answer`; and
        (its features, its distances) for place."""
        found, distances = self.distances(values)
        score = float(np.partition(distances, NEIGHBOURS - 1)[:NEIGHBOURS].mean())
        threshold = float(self.thresholds[answer])
        return {"space": self.name, "score": round(score, 4), "threshold": round(threshold, 4),
                "far": bool(score > threshold)}, found, distances

    def arrays(self, prefix):
        return {f"{prefix}name": self.name, f"{prefix}mean": self.mean, f"{prefix}components": self.components,
                f"{prefix}features": self.features, f"{prefix}thresholds": self.thresholds}

    @classmethod
    def held(cls, held, prefix):
        return cls(str(held[f"{prefix}name"]), held[f"{prefix}mean"], held[f"{prefix}components"],
                   held[f"{prefix}features"], held[f"{prefix}thresholds"])


class Reference:
    """The test digits as one model is given them and as its last hidden layer sees them (the module's docstring).

    layer: that layer's name; labels int64 [n]; spaces: (the input
    pixels' Space, the hidden layer's Space); hidden: the latter; source:
    the test set's files; images: uint8 [n, 784], the test digits (not
    cached: read again).
    """

    def __init__(self, layer, labels, spaces, source, images=None):
        self.layer, self.labels, self.spaces, self.source, self.images = layer, labels, tuple(spaces), source, images
        self.hidden = self.spaces[-1]

    @classmethod
    def made(cls, layer, hidden, probabilities, labels, source, images):
        """The Reference of the test digits' hidden activations float32 [n, units], probabilities [n, 10] and
        images uint8 [n, 784] (their input x is images / 255)."""
        answers = np.asarray(probabilities).argmax(axis=1)
        pixels = np.asarray(images, np.float64).reshape(len(images), -1) / 255
        return cls(layer, labels, (Space.made(INPUT, pixels, answers), Space.made(layer, hidden, answers)), source,
                   images)

    def place(self, pixels, hidden, probabilities):
        """Where one input falls and whether it is a digit: {"x", "y" (its hidden layer's first two components,
        the map's axes), "nearest": [{"record", "label", "distance"}] (in the hidden layer, NEIGHBOURS, nearest
        first), "score", "threshold" (the hidden layer's), "spaces": [{"space", "score", "threshold", "far"}]
        (the input's, the hidden layer's), "not_a_digit": bool (far in either)}.

        pixels: its input x, float [784] in [0, 1] (the prepared picture's
        values / 255); hidden: its last hidden layer, float32 [units] (or
        any shape of that many values); probabilities: float [10].
        """
        answer = int(np.argmax(probabilities))
        spaces = [self.spaces[0].judged(np.asarray(pixels, np.float64), answer)[0]]
        said, found, distances = self.hidden.judged(np.asarray(hidden), answer)
        spaces.append(said)
        nearest = np.argpartition(distances, NEIGHBOURS - 1)[:NEIGHBOURS]
        nearest = nearest[np.lexsort((nearest, distances[nearest]))]  # nearest first (ties: the lower record)
        return {"x": float(found[0]), "y": float(found[1]),
                "nearest": [{"record": int(i), "label": int(self.labels[i]), "distance": round(float(distances[i]), 4)}
                            for i in nearest],
                "score": said["score"], "threshold": said["threshold"], "spaces": spaces,
                "not_a_digit": any(space["far"] for space in spaces)}

    def said(self, answers, scores=None):
        """bool [n]: which test digits (answered as answers int [n]) are past either space's threshold, each scored
        against the others (own_scores of each space's features, or `scores`: one float [n] per space)."""
        answers = np.asarray(answers)
        scores = [own_scores(space.features) for space in self.spaces] if scores is None else scores
        return np.any([np.asarray(s) > space.thresholds[answers] for s, space in zip(scores, self.spaces)], axis=0)

    @property
    def thresholds(self):
        """float64 [10]: the hidden layer's thresholds (the map's answer gives them)."""
        return self.hidden.thresholds

    def coordinates(self):
        """float32 [n, 2]: the test digits on the map (their hidden layer's first two components)."""
        return self.hidden.features[:, :2]

    def save(self, path):
        """Write the reference (all but the images) to `path` (.npz), whole or not at all."""
        staging = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp.npz"
        np.savez(staging, layer=self.layer, labels=self.labels, source=self.source,
                 **self.spaces[0].arrays("input_"), **self.hidden.arrays("hidden_"))
        os.replace(staging, path)

    @classmethod
    def load(cls, path, images=None):
        """The Reference saved at `path`; OSError or ValueError (and KeyError) when it is not one."""
        with np.load(path) as held:
            return cls(str(held["layer"]), held["labels"], (Space.held(held, "input_"), Space.held(held, "hidden_")),
                       str(held["source"]), images)


def thresholds_of(scores, answers):
    """float64 [10]: for each digit, the QUANTILE-th percentile of the scores of the test digits answered as it
    (answers int [n]); that of all of them for a digit answered fewer than FEWEST times. The percentile is one of
    the scores (method "higher"), so that at most 100 - QUANTILE percent of them are past it: an interpolated one
    lets one digit more past for each of the ten."""
    overall = np.percentile(scores, QUANTILE, method="higher")
    return np.array([np.percentile(scores[answers == d], QUANTILE, method="higher")
                     if (answers == d).sum() >= FEWEST else overall for d in range(10)])


def own_scores(features, neighbours=NEIGHBOURS, block=1000):
    """Each test digit's score against the others (itself left out): float64 [n] (Space.judged's score)."""
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
    times), the test set `source` (its files' names, sizes and times), the layer and the judgment's settings."""
    stats = [(os.path.basename(path), os.stat(path).st_size, os.stat(path).st_mtime_ns) for path in source.split(", ")
             if os.path.isfile(path)]  # names, sizes and times, not folders: a copy of a model folder finds it too
    text = json.dumps([FORMAT, NEIGHBOURS, COMPONENTS, QUANTILE, list(model_files), stats, layer], default=str,
                      ensure_ascii=True)
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
        log(f"placing the {len(labels):,} test digits of {source} in the network's input and last hidden layer "
            f"({layer}); once for this model")
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
        return probabilities[0], made.place(rows[0], values[-2][0], probabilities[0])["not_a_digit"]

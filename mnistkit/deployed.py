"""The exported forms of a network read back for prediction: a SavedModel version folder, or a .tflite file.

Used by mnist_app.py (--model-dir names one of them instead of a checkpoint
folder) and the tests; mnistkit.export writes them. Each loader has the
app's predictor interface: predict(pictures float32 [n, 784] in [0, 1])
-> probabilities float32 [n, 10], `network` (the networks.Network it
holds) and `source` (the path it was read from). A .tflite file is run by
LiteRT's interpreter (the ai-edge-litert package), without TensorFlow and
without building our graph; where that package has no wheel (Intel Macs),
by TensorFlow's own tf.lite.Interpreter, after a note on stderr.

Every predictor may be shared between threads (the drawing board's server,
mnistkit.board, answers requests on several): a LiteRT interpreter holds
its tensors as state, so LiteRTModel runs it under a lock; a tf.Session's
run is itself thread-safe, and the SavedModel's graph is finalized.
"""
import os
import sys
import threading
import warnings

import numpy as np

from . import cli
from .errors import DataError
from . import layers, networks, places
from .export import INPUT_KEY, PROBABILITIES_KEY, SIGNATURE_KEY, is_tflite, quiet_output, read_metadata, versions

SAVED_MODEL_FILE = "saved_model.pb"
FALLBACK_NOTE = ("note: LiteRT's interpreter (pip package ai-edge-litert) is not installed; "
                 "using TensorFlow's tf.lite.Interpreter")


def is_exported(path):
    """True when path names an exported form: a .tflite file, a SavedModel folder, or a base path of versions."""
    return (is_tflite(path) or os.path.isfile(os.path.join(path, SAVED_MODEL_FILE))
            or newest_version(path) is not None)


# The weight shapes each network's .tflite file holds (fully connected weights as [out, in], LiteRT's layout):
# how a file exported before the export record was written is told apart, exactly.
WEIGHT_SHAPES = ((networks.MLP, {(500, 784), (10, 500)}),
                 (networks.LENET5, {(32, 5, 5, 1), (64, 5, 5, 32), (512, 3136), (10, 512)}))


def network_from(path, record, guess):
    """The networks.Network an export holds: its record's (export.read_metadata), else guess() for an export
    written before records; DataError naming path when neither names one of ours."""
    if record and "network" in record:
        try:
            return networks.from_record(record["network"])
        except DataError as e:
            raise DataError(f"{path}: its export record holds {e}") from None
    network = guess()
    if network is None:
        raise DataError(f"{path}: this export holds none of the course's networks")
    return network


def network_of_shapes(shapes):
    """The network whose weights, and no others, a .tflite file holds, or None. shapes: its tensors' shapes; the
    weights are those of 2 or more dimensions not of the batch of 1 its activations have."""
    weights = {shape for shape in shapes if len(shape) >= 2 and shape[0] != 1}
    return next((n for n, expected in WEIGHT_SHAPES if weights == expected), None)


def describe(model, verbose=False):
    """The lines the app says about an export on stderr: which version of a base path; with verbose, its record."""
    lines = []
    base = getattr(model, "base", None)
    if base is not None:
        lines.append(f"{base}: using version {os.path.basename(model.source)} ({model.source}), the newest of "
                     f"{', '.join(map(str, versions(base)))}")
    if verbose:
        record = getattr(model, "record", None)
        said = cli.readable_json(record, getattr(sys.stderr, "encoding", None), sort_keys=True)  # paths as they are
        lines.append(f"{model.source}: " + ("exported before export records were written" if record is None else
                                           f"export record {said}"))
    return lines


def newest_version(base):
    """The SavedModel version folder (str) with the highest number in base, as TF Serving serves; None without one."""
    for version in reversed(versions(base)):
        if os.path.isfile(os.path.join(base, str(version), SAVED_MODEL_FILE)):
            return os.path.join(base, str(version))
    return None


def load(path):
    """The predictor for an exported form (see is_exported): a LiteRTModel or a SavedModelModel.

    A base path (export/mnist) gives its newest version, as TF Serving does.
    Raises DataError naming path when it is missing, damaged, or not one of
    our two networks' exports.
    """
    if is_tflite(path):
        return LiteRTModel(path)
    if os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)):
        return SavedModelModel(path)
    model = SavedModelModel(newest_version(path) or path)
    model.base = path  # the app says which version it used (describe)
    return model


def interpreter_class():
    """LiteRT's Interpreter class (ai_edge_litert), else TensorFlow's tf.lite.Interpreter after FALLBACK_NOTE."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        print(FALLBACK_NOTE, file=sys.stderr, flush=True)
        from tf_compat import tf
        Interpreter = tf.lite.Interpreter
    return Interpreter


class LiteRTModel:
    """A .tflite file written by mnistkit.export, float32 or fully int8, run by LiteRT's interpreter.

    An int8 file's input is quantized here from [0, 1] and its output
    dequantized with the scale and zero point the file holds, so predict
    takes and returns what the float file does. The network is the one its
    export record names (`record`, export.read_metadata), or for a file
    written before records, the one whose weight shapes it holds, exactly.

    The file is read into memory once (`content`): given a path, the
    interpreter would map the file, and a file replaced in place (cp
    new.tflite served.tflite) or truncated under a running server would
    end it with SIGBUS at its next prediction. A changed file takes effect
    when it is loaded again.
    """

    def __init__(self, path):
        if not os.path.isfile(path):
            meant = cli.did_you_mean(path, places.a_tflite_file)
            raise DataError(f"{path}: no such .tflite file; "
                            + (meant or f"write it with `{cli.command('mnist_export.py')}`"))
        try:
            with open(path, "rb") as f:
                self.content = f.read()  # kept: the interpreter reads its weights from these bytes
        except OSError as e:
            raise DataError(f"{path}: cannot read this .tflite file ({e.strerror or e})") from None
        if not self.content:
            raise DataError(f"{path}: empty file (0 bytes), not a .tflite file; write it with "
                            f"`{cli.command('mnist_export.py')}`")
        try:
            Interpreter = interpreter_class()
            with quiet_output(), warnings.catch_warnings():  # the runtime's C++ INFO line about its CPU delegate,
                warnings.simplefilter("ignore", UserWarning)  # and tf.lite.Interpreter's deprecation (FALLBACK_NOTE says it)
                self.interpreter = Interpreter(model_content=self.content)
                self.interpreter.allocate_tensors()  # the runtime's start-up lines come here, once: not on each call
        except (ValueError, RuntimeError) as e:
            raise DataError(f"{path}: not a readable .tflite file ({str(e).splitlines()[0][:200]})") from None
        self.input = self.interpreter.get_input_details()[0]
        outputs = self.interpreter.get_output_details()
        self.output = next((o for o in outputs if o["name"] == PROBABILITIES_KEY), outputs[0])
        if list(self.input["shape_signature"][1:]) != [784] or list(self.output["shape_signature"][1:]) != [10]:
            raise DataError(f"{path}: not an export of mnist_export.py (input {plain(self.input['shape_signature'])}, "
                            f"output {plain(self.output['shape_signature'])}; expected [-1, 784] and [-1, 10])")
        self.source, self.record = str(path), read_metadata(path)
        shapes = {tuple(int(d) for d in t["shape"]) for t in self.interpreter.get_tensor_details()}
        self.network = network_from(path, self.record, lambda: network_of_shapes(shapes))
        self.lock = threading.Lock()  # one interpreter, many threads: see outputs
        self.shape = tuple(self.input["shape"])  # the input shape the interpreter's tensors are allocated for
        self.inside = layers.LiteInside.of(self)  # the layers of its `inside` signature (or why it has none)

    def predict(self, pictures):
        """Class probabilities float32 [n, 10] for pictures float32 [n, 784] in [0, 1]; safe from any thread."""
        return self.outputs(pictures, [self.output])[0]

    def outputs(self, pictures, details):
        """The output tensors `details` (of get_output_details) of one invoke on pictures float32 [n, 784] in
        [0, 1], each float32 (dequantized); safe from any thread.

        The interpreter's input and output tensors are shared state: resize,
        allocate, set, invoke and get run under one lock, so no call sees
        another's tensors ("at least 1 reference to internal data", another
        picture's digits). Tensors are reallocated only when n changes.
        """
        pictures = quantize(np.asarray(pictures, np.float32), self.input)
        with self.lock:
            if pictures.shape != self.shape:
                self.interpreter.resize_tensor_input(self.input["index"], list(pictures.shape))
                self.interpreter.allocate_tensors()
                self.shape = pictures.shape
            self.interpreter.set_tensor(self.input["index"], pictures)
            self.interpreter.invoke()
            values = [self.interpreter.get_tensor(d["index"]) for d in details]  # copies, not views of the tensors
        return [dequantize(v, d) for v, d in zip(values, details)]


def plain(shape):
    """A tensor's shape as a message writes it: [1, 28, 28, 1], not NumPy's [np.int32(1), ...] (list of int)."""
    return [int(d) for d in shape]


def quantize(values, details):
    """values (float32) in the dtype of a LiteRT tensor's details: int8 via its scale and zero point."""
    if details["dtype"] == np.float32:
        return values
    scale, zero_point = details["quantization"]
    info = np.iinfo(details["dtype"])
    return np.clip(np.round(values / scale + zero_point), info.min, info.max).astype(details["dtype"])


def dequantize(values, details):
    """A LiteRT tensor's values as float32, via its scale and zero point when it is quantized."""
    if details["dtype"] == np.float32:
        return values
    scale, zero_point = details["quantization"]
    return ((values.astype(np.float32) - zero_point) * scale).astype(np.float32)


class SavedModelModel:
    """A SavedModel version folder written by mnistkit.export, run through its serving_default signature.

    Loaded into a tf.compat.v1 session (the scripts run TensorFlow in graph
    mode); the network is the one its export record names (`record`,
    export.read_metadata), or for an export written before records, the one
    of the course's whose variables it holds, exactly (networks.guess).
    """

    def __init__(self, path):
        from tf_compat import first_line, tf
        self.source = str(path)
        try:
            names = [name for name, _ in tf.train.list_variables(os.path.join(path, "variables", "variables"))]
            self.graph = tf.Graph()
            self.sess = tf.Session(graph=self.graph)
            meta_graph = tf.saved_model.loader.load(self.sess, [tf.saved_model.tag_constants.SERVING], path)
            signature = meta_graph.signature_def[SIGNATURE_KEY]
        except (tf.errors.OpError, OSError, ValueError, RuntimeError, KeyError) as e:
            raise DataError(f"{path}: not a readable SavedModel of mnist_export.py ({first_line(e)})") from None
        self.record = read_metadata(path)
        self.network = network_from(path, self.record, lambda: networks.guess(names))
        self.images = signature.inputs[INPUT_KEY].name
        self.probabilities = signature.outputs[PROBABILITIES_KEY].name
        self.inside = layers.saved_model_inside(self.sess, meta_graph, self.record, path, self.images,
                                                 self.probabilities)  # its `inside` signature's layers
        self.graph.finalize()  # shared between threads: nothing may add to the graph while another runs it

    def predict(self, pictures):
        """Class probabilities float32 [n, 10] for pictures float32 [n, 784] in [0, 1]; safe from any thread."""
        return self.sess.run(self.probabilities, feed_dict={self.images: pictures})

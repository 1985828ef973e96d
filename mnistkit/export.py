"""A restored network written out for use without our graph code: a SavedModel and LiteRT (.tflite) files.

Used by mnist_export.py, after it has restored the moving-average weights
into a session. What is written into the export folder (--export-dir):
- <export>/<model name>/<N>/: a SavedModel in TF Serving's layout, N one
  more than the highest version there. Its serving_default signature takes
  `images`, float32 [None, 784] in [0, 1] (the course's x), and returns
  `probabilities`, float32 [None, 10], and `classes`, int64 [None]. Its
  second signature, `inside`, takes the same `images` and returns each
  layer of forward() under forward()'s name for it (y1, y; conv1, ...,
  fc1, y: mnistkit.layers), from the same graph: serving_default is
  unchanged by it. A network that declares no layers gets serving_default
  alone, after a note.
- <export>/<model name>.tflite: the same network for LiteRT, float32
  input and output;
- <export>/<model name>_int8.tflite: fully int8 (weights, activations,
  input and output), calibrated on training records (those of the bundled
  MNIST sample when --data-dir holds none).
Both .tflite files carry the SavedModel's signatures; all three record
where they came from and their layers (read_metadata).
Everything is built in temporary names inside the export folder and renamed
into place at the end, so a failure leaves nothing half-written, and a
server watching the folder never sees a version being written. Only that
last step, the commit, takes the export folder's one-writer lock
(mnistkit.folders.FolderLock), waiting for another export's commit; the
model folder is only read (its checkpoint read whole first), so an export
runs beside a trainer or a learn (docs/deploy.md).
mnistkit.deployed reads these files back. Source: tf.compat.v1.saved_model.Builder,
tf.compat.v1.lite.TFLiteConverter.from_session.
"""
import contextlib
import errno
import json
import os
import shutil
import signal
import sys
import tempfile
import threading

import numpy as np

from tf_compat import VERBOSE, end_at_once, first_line, own_line, tf
from . import cli, files, folders, layers, networks, records
from .errors import STOP_SIGNALS, DataError, Interrupted
from .records import IMAGE_PIXELS

EXPORT_DIR = "./export/"
SIGNATURE_KEY = "serving_default"  # what TF Serving, tf.saved_model.load and Keras' TFSMLayer call by default
INPUT_KEY = "images"  # float32 [None, 784] in [0, 1]
PROBABILITIES_KEY, CLASSES_KEY = "probabilities", "classes"  # float32 [None, 10], int64 [None]
TFLITE_SUFFIX, INT8_SUFFIX = ".tflite", "_int8"
CALIBRATION_RECORDS = 300  # training records the int8 file's value ranges are measured on
_QUIET_LOCK = threading.RLock()  # quiet_output's, around the process's file descriptors 1 and 2
_COMMITTED = []  # (version folder, .tflite, int8 .tflite) of each export this process committed (stopped_note)
_LEFT_RUNNING = []  # conversion threads a stop left inside the converter's C++ code (interruptible)
WAIT_STEP_SECS = 0.05  # how often the main thread wakes while a conversion runs (interruptible)
COMMIT_WAIT_SECS = 30.0  # another export's commit (its renames) waited for before this one is refused
METADATA_NAME = "mnist_export"  # the .tflite files' Model.metadata entry: the export's provenance, JSON
ASSETS_EXTRA, METADATA_FILE = "assets.extra", "mnist_export.json"  # the same in the SavedModel


def is_tflite(path):
    """True when path (str or os.PathLike) names a LiteRT file by its suffix, TFLITE_SUFFIX in any case
    (`export/MNIST.TFLite`); whether the file is there is not looked at."""
    return str(path).lower().endswith(TFLITE_SUFFIX)


class Export:
    """What one export wrote: the SavedModel version folder and the two LiteRT files (str paths)."""

    def __init__(self, saved_model, tflite, tflite_int8):
        self.saved_model, self.tflite, self.tflite_int8 = saved_model, tflite, tflite_int8


def serving_outputs(logits):
    """The signature's outputs for float32 logits [n, 10]: (probabilities float32 [n, 10], classes int64 [n])."""
    probabilities = tf.nn.softmax(logits, name=PROBABILITIES_KEY)
    classes = tf.argmax(logits, 1, output_type=tf.int64, name=CLASSES_KEY)
    return probabilities, classes


def inside_outputs(network, logits, log=print):
    """The `inside` signature's outputs for forward()'s logits: ([layers.Layer], {layer name: its tensor, named
    inside/<name>}); ([], {}) after a note when the network declares no layers or they do not fit its graph."""
    try:
        found = layers.graph_layers(network, logits)
    except DataError as e:
        log(f"note: {e}; the export has serving_default alone, no `{layers.SIGNATURE_KEY}` signature")
        return [], {}
    outputs = {layer.name: tf.identity(tensor, name=f"{layers.SCOPE}/{layer.name}") for layer, tensor, _ in found}
    return [layer for layer, _, _ in found], outputs


def versions(base):
    """The version numbers (sorted ints) of the SavedModels in base: its subfolders named by a whole number."""
    try:
        names = os.listdir(base)
    except OSError:
        return []
    return sorted(int(n) for n in names if n.isdecimal() and os.path.isdir(os.path.join(base, n)))


def calibration_images(data_dir, count=CALIBRATION_RECORDS, log=print, name=records.TRAIN_FILE):
    """The int8 file's calibration images: float32 [count, 784] in [0, 1], as the network's x.

    The first `count` training records in data_dir (records.tfrecord_files;
    name: its training file's, the generator's tfRecord_train),
    checked whole first; when data_dir holds no training records (a
    developer who copied only model/), the first `count` training digits of
    the MNIST sample bundled with the project, after a one-line note.
    Raises DataError naming the file when it is there but damaged or empty.
    """
    try:
        path = records.tfrecord_files(data_dir, isTrain=True, name=name)[0]
    except DataError:
        if glob_has_files(data_dir, name):
            raise
        return bundled_calibration(data_dir, count, log)
    records.check_tfrecord(path)
    images = []
    for serialized in tf.io.tf_record_iterator(path):
        img_raw = tf.train.Example.FromString(serialized).features.feature["img_raw"].bytes_list.value[0]
        images.append(np.frombuffer(img_raw, np.uint8))
        if len(images) == count:
            break
    if not images:
        raise DataError(f"{path}: TFRecord file holds no records")
    return np.stack(images).astype(np.float32) / 255


def glob_has_files(data_dir, name=records.TRAIN_FILE):
    """True when data_dir is a folder that holds shard files of an incomplete set of training file `name` (an
    error to report, not to pass over for the bundled sample)."""
    return os.path.isdir(data_dir) and bool(records.shard_files(os.path.join(data_dir, name)))


def bundled_calibration(data_dir, count, log):
    """The first `count` training digits of the bundled MNIST sample, float32 [count, 784] in [0, 1], after a note."""
    from . import idx  # the sample's reader; the exporter needs it only here
    images, _ = idx.read_idx_split(idx.BUNDLED_DIR, "train")
    log(f"note: {data_dir} holds no training records; calibrating the int8 file on {min(count, len(images))} "
        f"digits of the MNIST sample bundled in {idx.BUNDLED_DIR}")
    return images[:count].reshape(-1, IMAGE_PIXELS).astype(np.float32) / 255


def tflite_model(sess, images, outputs, calibration=None):
    """The LiteRT flatbuffer (bytes) of the graph from `images` to `outputs`, variables frozen.

    outputs: [probabilities, classes] (serving_outputs). Without calibration:
    float32 throughout. With calibration (float32 [n, 784] in [0, 1]):
    fully int8, `images` and `probabilities` too (`classes` stays int64),
    value ranges measured on those images one at a time. Source:
    tf.compat.v1.lite.TFLiteConverter.from_session (TensorFlow 2's
    from_saved_model calibrates only in eager mode, which the scripts'
    graph mode rules out); signed() then gives the file the SavedModel's
    signature. Raises DataError when the converter fails.
    """
    converter = tf.lite.TFLiteConverter.from_session(sess, [images], list(outputs))
    if calibration is not None:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: ([calibration[i:i + 1]] for i in range(len(calibration)))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = converter.inference_output_type = tf.int8
    try:
        with quiet_output():
            return interruptible(converter.convert)
    except Exception as e:  # the converter raises its own ConverterError, and others from inside MLIR
        raise DataError(f"cannot convert the network to LiteRT ({first_line(e)})") from None


def signed(flatbuffer, record, inside=()):
    """A .tflite flatbuffer (bytes) with the SavedModel's signatures and `record` (JSON-able) as its metadata.

    The signatures: SIGNATURE_KEY, INPUT_KEY -> PROBABILITIES_KEY,
    CLASSES_KEY, the tensors of those names, and with `inside` (layer
    names) layers.SIGNATURE_KEY, INPUT_KEY -> each layer, the tensor
    inside/<name>, so that LiteRT's and Android's SignatureRunner find them
    as TF Serving finds the SavedModel's. The
    record: a Model.metadata entry METADATA_NAME holding UTF-8 JSON, which
    any reader of the LiteRT schema reads back (read_metadata, with
    ai_edge_litert alone); entries of that name already there are replaced.
    Source: TensorFlow's tensorflow/lite/tools/flatbuffer_utils and the
    schema's SignatureDefT and MetadataT.
    """
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils
    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(flatbuffer))
    graph = model.subgraphs[0]
    index = {graph.tensors[i].name.decode() if isinstance(graph.tensors[i].name, bytes) else graph.tensors[i].name: i
             for i in list(graph.inputs) + list(graph.outputs)}

    def tensor_map(name, tensor=None):
        entry = schema.TensorMapT()
        entry.name, entry.tensorIndex = name, index[tensor or name]
        return entry

    def signature(key, outputs):
        made = schema.SignatureDefT()
        made.signatureKey, made.subgraphIndex = key, 0
        made.inputs, made.outputs = [tensor_map(INPUT_KEY)], outputs
        return made

    model.signatureDefs = [signature(SIGNATURE_KEY, [tensor_map(PROBABILITIES_KEY), tensor_map(CLASSES_KEY)])]
    if inside:
        model.signatureDefs.append(signature(layers.SIGNATURE_KEY, [tensor_map(name, f"{layers.SCOPE}/{name}")
                                                                    for name in inside]))
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(json.dumps(record, sort_keys=True, ensure_ascii=True).encode("utf-8"), np.uint8)
    model.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name, entry.buffer = METADATA_NAME, len(model.buffers) - 1
    model.metadata = [m for m in (model.metadata or []) if m.name not in (METADATA_NAME, METADATA_NAME.encode())]
    model.metadata.append(entry)
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


def export(sess, images, logits, network, export_dir, calibration, source, log=print):
    """Write the SavedModel version and both LiteRT files of a restored network; returns an Export.

    sess holds the network's graph with its weights restored; images: the
    float32 [None, 784] placeholder; logits: float32 [None, 10]; network:
    the networks.Network it is (its export_name names the files); calibration:
    see tflite_model; source: {"checkpoint": its path, "global_step": int},
    what the export is made from. The SavedModel is written first, then the
    .tflite files, given its signatures (signed; the `inside` one of
    inside_outputs); each of the three records where it came from
    (provenance: the source, the export version, the network, its layers)
    in METADATA_FILE under the SavedModel's assets.extra/ and in the
    .tflite files' metadata (read_metadata). Everything is written under
    temporary names in export_dir first; only when all of it is there is
    it renamed into place (a new version folder, never an existing one).
    Raises DataError naming export_dir when it cannot be made or written;
    nothing is left then, not even the folders it created.
    """
    name = network.export_name
    probabilities, classes = serving_outputs(logits)
    shown, inside = inside_outputs(network, logits, log)
    created = files.missing_folders(os.path.join(export_dir, name))  # taken back out on failure
    staging = None
    try:
        os.makedirs(os.path.join(export_dir, name), exist_ok=True)
        staging = tempfile.mkdtemp(prefix=f".{name}-export-", dir=export_dir)
        saved_model = os.path.join(staging, "saved_model")
        log(f"writing the SavedModel ({SIGNATURE_KEY}: {INPUT_KEY} -> {PROBABILITIES_KEY}, {CLASSES_KEY}"
            + (f"; {layers.SIGNATURE_KEY}: {INPUT_KEY} -> {', '.join(inside)})" if inside else ")"))
        write_saved_model(sess, images, probabilities, classes, saved_model, inside)
        converted = {}
        for suffix, data in (("", None), (INT8_SUFFIX, calibration)):
            log(f"converting to LiteRT: {name}{suffix}{TFLITE_SUFFIX}"
                + (f" (int8, calibrated on {len(calibration)} training digits)" if data is not None else ""))
            converted[suffix] = tflite_model(sess, images, [probabilities, classes, *inside.values()], data)

        def stamp(version):
            """(Re)write the provenance of export version `version` into the staged files."""
            record = provenance(network, source, version, os.path.join(export_dir, name, str(version)), shown)
            write_json(os.path.join(saved_model, ASSETS_EXTRA, METADATA_FILE), record)
            for suffix, flatbuffer in converted.items():
                with open(os.path.join(staging, name + suffix + TFLITE_SUFFIX), "wb") as f:
                    f.write(signed(flatbuffer, record, list(inside)))

        written = commit(staging, export_dir, name, stamp)
    except BaseException as e:  # a full disk, a read-only folder, Ctrl-C: nothing of this export stays
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        files.remove_empty_folders(created)
        if isinstance(e, (OSError, tf.errors.OpError)):
            raise DataError(f"{export_dir}: cannot write the export ({files.why_not(e)}); "
                            f"choose another folder with --export-dir") from None
        raise
    shutil.rmtree(staging, ignore_errors=True)
    return written


def provenance(network, source, version, saved_model, shown=()):
    """What an export records of where it came from, and its layers (shown: layers.Layer, in the `inside`
    signature): a JSON-able dict (see export)."""
    return {"checkpoint": source["checkpoint"], "global_step": int(source["global_step"]), "version": int(version),
            "saved_model": saved_model, "network": networks.to_record(network), "written_by": "mnist_export.py",
            "inside": [layer.to_record() for layer in shown]}


def write_json(path, record):
    """Write `record` as indented JSON to path (UTF-8, its paths in their own letters: cli.readable_json), its
    folder made if needed."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(cli.readable_json(record, "utf-8", indent=1, sort_keys=True) + "\n")


def read_metadata(path):
    """The provenance record (dict) an export holds, or None for an export written before it had one.

    path: a .tflite file (its Model.metadata entry METADATA_NAME, read with
    the LiteRT schema of ai_edge_litert, no TensorFlow needed; TensorFlow's
    own copy of the schema where LiteRT is not installed) or a SavedModel
    version folder (assets.extra/METADATA_FILE). Raises DataError when the
    record is there but unreadable.
    """
    try:
        if is_tflite(path):
            try:
                from ai_edge_litert import schema_py_generated as schema
            except ImportError:
                from tensorflow.lite.python import schema_py_generated as schema
            with open(path, "rb") as f:
                data = f.read()
            model = schema.Model.GetRootAsModel(data, 0)
            for i in range(model.MetadataLength()):
                entry = model.Metadata(i)
                if entry.Name() in (METADATA_NAME, METADATA_NAME.encode()):
                    return json.loads(model.Buffers(entry.Buffer()).DataAsNumpy().tobytes().decode("utf-8"))
            return None
        record = os.path.join(path, ASSETS_EXTRA, METADATA_FILE)
        if not os.path.isfile(record):
            return None
        with open(record, encoding="utf-8") as f:
            return json.load(f)
    except (ValueError, OSError, IndexError, AttributeError) as e:
        raise DataError(f"{path}: its export record is unreadable ({e})") from None


def interruptible(work):
    """work()'s value, computed on a daemon thread while the main thread waits for it, WAIT_STEP_SECS at a time.

    The converter is one long C++ call: a signal's Python handler runs
    only when the main thread runs Python again, so a Ctrl-C or SIGTERM
    during a conversion waited for its end (seconds, more on a loaded
    machine). Waiting here, the main thread raises KeyboardInterrupt (or
    errors.Stopped) as soon as the converter lets go of the interpreter
    for a moment, and export() removes what it staged; the thread is left
    running, and the process must then end through end_if_left_running
    (os._exit), never through the interpreter's own exit, which would stop
    the thread inside the converter's C++ code and abort the process
    (`terminate called ...`, SIGABRT). work's exception is raised here.
    Off the main thread, work runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        return work()
    done, box = threading.Event(), {}

    def run():
        try:
            box["value"] = work()
        except BaseException as e:  # noqa: BLE001  (handed to the waiting main thread)
            box["error"] = e
        finally:
            done.set()
    thread = threading.Thread(target=run, name="litert-convert", daemon=True)
    thread.start()
    try:
        while not done.wait(WAIT_STEP_SECS):
            pass
    except BaseException:
        if not done.is_set():
            _LEFT_RUNNING.append(thread)  # the process must end with os._exit: end_if_left_running
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


@contextlib.contextmanager
def quiet_output():
    """Mute file descriptors 1 and 2 (unless --verbose) for TensorFlow's and LiteRT's C++ lines.

    The converter prints its settings there, the interpreter a line about
    its CPU delegate; our own messages say what matters. The descriptors
    are the whole process's: use it around a conversion or a load, never
    around each prediction. Two threads' mutings never interleave (the
    second would save the first's /dev/null and restore it for good).
    """
    if VERBOSE:
        yield
        return
    with _QUIET_LOCK:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            yield
        finally:
            if left_running():  # a stop left the converter running: its lines stay muted until the process ends
                sys.stdout = os.fdopen(saved[0], "w", buffering=1, encoding=sys.stdout.encoding, closefd=False)
                sys.stderr = os.fdopen(saved[1], "w", buffering=1, encoding=sys.stderr.encoding,
                                       errors="backslashreplace", closefd=False)
                os.close(devnull)
            else:
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                for fd in saved + [devnull]:
                    os.close(fd)


def stopped_note():
    """What a stopped export left, for its `<SIGNAL>: ...` line: `stopped; nothing written` (export() took
    everything back out), or `stopped; <version> (SavedModel), <.tflite> and <int8 .tflite> written` when
    the stop came after the commit."""
    if not _COMMITTED:
        return "stopped; nothing written"
    version, tflite, tflite_int8 = _COMMITTED[-1]
    return f"stopped; {version} (SavedModel), {tflite} and {tflite_int8} written"


def left_running():
    """True when a stop left a conversion running on its thread (interruptible): the process must end through
    end_if_left_running."""
    return any(thread.is_alive() for thread in _LEFT_RUNNING)


@contextlib.contextmanager
def stops_of_a_run():
    """Around mnist_export.py's work, inside cli.exit_status: a stop signal at any moment ends it with 128 + its
    number and one line, never with the signal's own death (-2) nor with status 0 and a traceback.

    Until an export is committed, a stop raises as exit_status's handlers
    do (KeyboardInterrupt, errors.Stopped), and export() takes back what it
    staged. From the commit on, the export is written and kept: a stop is
    held, not raised (raised there, a KeyboardInterrupt can land in a
    __del__, TensorFlow's Session's, which prints it as ignored and goes
    on to exit 0), until the export's cleanup and the session's close are
    done; then the body's end raises Interrupted with stopped_note's line.
    After the body, whatever it raised, a stop ends the process at once
    (end_stopped) until exit_status puts its own handlers back. Off the
    main thread, the body runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    committed, held = len(_COMMITTED), []
    raising = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}

    def stop(signum, frame):
        if len(_COMMITTED) > committed:
            held.append(signum)
        elif callable(raising[signum]):
            raising[signum](signum, frame)

    for signum in raising:
        signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum in raising:
            signal.signal(signum, end_stopped)  # before `held` is read: a stop in between is not lost
        if held:
            raise Interrupted(held[0], f"{signal.Signals(held[0]).name}: {stopped_note()}") from None


def end_stopped(signum, frame=None):
    """A signal handler: `<SIGNAL>: <stopped_note()>` on stderr, output flushed, the process ended with 128 + signum
    through end (os._exit): for a stop after mnist_export.py's work, when nothing is left to take back."""
    try:
        sys.stderr.write(f"{own_line()}{signal.Signals(signum).name}: {stopped_note()}\n")
    except (OSError, ValueError):
        pass
    end(128 + signum)


def end(status):
    """End the process with `status` (int) at once: output flushed, then tf_compat.end_at_once (os._exit, the
    folders' locks removed), never through the interpreter's exit.

    mnist_export.py run as a script ends here. The interpreter's exit
    gives each signal its default action back before TensorFlow's and
    LiteRT's C++ libraries shut down (measured: about 0.5 s after the last
    line), so a Ctrl-C then killed the process (status -2, no line); and
    it stops a conversion's thread left running (end_if_left_running) by
    unwinding it inside C++. Nothing of ours needs that exit: our files are
    closed and committed, and Python's exit handlers only flush output.
    A run that ended before TensorFlow was imported (a usage error, a
    folder that is not there) has none of that to fear: it exits as any
    script does (SystemExit), its exit handlers run.
    """
    if "tensorflow" not in sys.modules:
        raise SystemExit(status)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    end_at_once(status)


def end_if_left_running(status):
    """status (int), returned when the export was not stopped (status < 128) and no conversion was left running;
    else the process ends here with it: output flushed, then tf_compat.end_at_once (os._exit, the folders' locks
    removed), never the interpreter's exit.

    The interpreter's exit stops a daemon thread that is inside C++ code
    (the LiteRT converter, pybind11) by unwinding it, and runs the C++
    libraries' exit handlers while the converter's own threads may still
    work: the C++ runtime answers with `terminate called after throwing an
    instance of ''`, `FATAL: exception not rethrown` and SIGABRT. os._exit
    ends the process without either; export() has removed its staging and
    let go of the folder's lock by then.
    """
    if status < 128 and not left_running():
        return status
    end(status)


def write_saved_model(sess, images, probabilities, classes, path, inside=None):
    """Write sess's graph and variables as a SavedModel at path (a folder that must not exist yet).

    One meta graph, tagged `serve`, with the serving_default signature
    (INPUT_KEY -> PROBABILITIES_KEY, CLASSES_KEY) and, given `inside`
    ({layer name: tensor}), the layers' signature (INPUT_KEY -> each layer).
    Source: tf.compat.v1.saved_model.Builder, predict_signature_def.
    """
    predict = tf.saved_model.signature_def_utils.predict_signature_def
    signatures = {SIGNATURE_KEY: predict(inputs={INPUT_KEY: images},
                                         outputs={PROBABILITIES_KEY: probabilities, CLASSES_KEY: classes})}
    if inside:
        signatures[layers.SIGNATURE_KEY] = predict(inputs={INPUT_KEY: images}, outputs=dict(inside))
    builder = tf.saved_model.Builder(path)
    builder.add_meta_graph_and_variables(sess, [tf.saved_model.tag_constants.SERVING],
                                         signature_def_map=signatures, strip_default_attrs=True)
    builder.save()


def commit(staging, export_dir, name, stamp=lambda version: None):
    """Rename the staged SavedModel to export_dir/name/<next version> and the .tflite files into export_dir.

    stamp(version) writes the version's provenance into the staged files
    before each try. Another export's commit is waited for (export_dir's
    folders.FolderLock, up to COMMIT_WAIT_SECS), so that the newest version
    and the .tflite files beside it come from one export. A version that
    another writer took meanwhile (its folder there when the rename comes:
    Linux says ENOTEMPTY, others EEXIST) is passed over, never written into,
    and the next one stamped. When a .tflite rename fails, the new version
    is taken back out and a .tflite already renamed is put back as it was
    (a hard link kept in staging, a copy where links are refused), so the export is all there or not at all,
    and the .tflite files are never of another version than the newest
    SavedModel. Returns an
    Export. Raises DataError when another export holds the folder longer.
    """
    base = os.path.join(export_dir, name)
    with folders.FolderLock(export_dir, "--export-dir", "an export", wait=COMMIT_WAIT_SECS):
        while True:
            number = (versions(base) or [0])[-1] + 1
            version = os.path.join(base, str(number))
            stamp(number)
            try:
                os.rename(os.path.join(staging, "saved_model"), version)
                break
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not os.path.isdir(version):
                    raise
        tflite = [os.path.join(export_dir, name + suffix + TFLITE_SUFFIX) for suffix in ("", INT8_SUFFIX)]
        replaced = []  # (path, the earlier file's link in staging, or None when there was none)
        try:
            for path in tflite:
                earlier = os.path.join(staging, "earlier-" + os.path.basename(path)) if os.path.isfile(path) else None
                if earlier is not None:  # kept, to be put back should a later rename fail
                    try:
                        os.link(path, earlier)
                    except OSError:  # a file system without hard links (FAT, exFAT, some network shares)
                        shutil.copy2(path, earlier)
                files.replace(os.path.join(staging, os.path.basename(path)), path)
                replaced.append((path, earlier))
            _COMMITTED.append((version, *tflite))  # last in the try: a stop before it takes the export back out
        except BaseException:
            shutil.rmtree(version, ignore_errors=True)
            for path, earlier in replaced:  # the .tflite files as they were: none of this export's
                if earlier is not None:
                    files.replace(earlier, path)
                else:
                    files.discard(path)
            raise
    return Export(version, *tflite)

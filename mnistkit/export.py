"""A restored network written out for use without our graph code: a SavedModel and LiteRT (.tflite) files.

Used by mnist_export.py, after it has restored the moving-average weights
into a session. What is written into the export folder (--export-dir):
- <export>/<model name>/<N>/: a SavedModel in TF Serving's layout, N one
  more than the highest version there. Its serving_default signature takes
  `images`, float32 [None, 784] in [0, 1] (the course's x), and returns
  `probabilities`, float32 [None, 10], and `classes`, int64 [None].
- <export>/<model name>.tflite: the same network for LiteRT, float32
  input and output;
- <export>/<model name>_int8.tflite: fully int8 (weights, activations,
  input and output), calibrated on training records.
Everything is built in temporary names inside the export folder and renamed
into place at the end, so a failure leaves nothing half-written, and a
server watching the folder never sees a version being written.
mnistkit.deployed reads these files back. Source: tf.compat.v1.saved_model.Builder,
tf.compat.v1.lite.TFLiteConverter.from_session.
"""
import contextlib
import errno
import os
import shutil
import sys
import tempfile
import threading

import numpy as np

from tf_compat import VERBOSE, first_line, tf
from . import files, records
from .errors import DataError

EXPORT_DIR = "./export/"
SIGNATURE_KEY = "serving_default"  # what TF Serving, tf.saved_model.load and Keras' TFSMLayer call by default
INPUT_KEY = "images"  # float32 [None, 784] in [0, 1]
PROBABILITIES_KEY, CLASSES_KEY = "probabilities", "classes"  # float32 [None, 10], int64 [None]
TFLITE_SUFFIX, INT8_SUFFIX = ".tflite", "_int8"
CALIBRATION_RECORDS = 300  # training records the int8 file's value ranges are measured on
_QUIET_LOCK = threading.RLock()  # quiet_output's, around the process's file descriptors 1 and 2


class Export:
    """What one export wrote: the SavedModel version folder and the two LiteRT files (str paths)."""

    def __init__(self, saved_model, tflite, tflite_int8):
        self.saved_model, self.tflite, self.tflite_int8 = saved_model, tflite, tflite_int8


def serving_outputs(logits):
    """The signature's outputs for float32 logits [n, 10]: (probabilities float32 [n, 10], classes int64 [n])."""
    probabilities = tf.nn.softmax(logits, name=PROBABILITIES_KEY)
    classes = tf.argmax(logits, 1, output_type=tf.int64, name=CLASSES_KEY)
    return probabilities, classes


def versions(base):
    """The version numbers (sorted ints) of the SavedModels in base: its subfolders named by a whole number."""
    try:
        names = os.listdir(base)
    except OSError:
        return []
    return sorted(int(n) for n in names if n.isdecimal() and os.path.isdir(os.path.join(base, n)))


def calibration_images(data_dir, count=CALIBRATION_RECORDS):
    """The first `count` training images: float32 [count, 784] in [0, 1], as the network's x.

    Read from the training TFRecords in data_dir (records.tfrecord_files),
    checked whole first. Raises DataError naming the file when it is
    missing, damaged or holds no record.
    """
    path = records.tfrecord_files(data_dir, isTrain=True)[0]
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


def tflite_model(sess, images, probabilities, calibration=None):
    """The LiteRT flatbuffer (bytes) of the graph from `images` to `probabilities`, variables frozen.

    Without calibration: float32 throughout. With calibration (float32
    [n, 784] in [0, 1]): fully int8, input and output too, value ranges
    measured on those images one at a time. Source:
    tf.compat.v1.lite.TFLiteConverter.from_session. Raises DataError when
    the converter fails.
    """
    converter = tf.lite.TFLiteConverter.from_session(sess, [images], [probabilities])
    if calibration is not None:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: ([calibration[i:i + 1]] for i in range(len(calibration)))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = converter.inference_output_type = tf.int8
    try:
        with quiet_output():
            return converter.convert()
    except Exception as e:  # the converter raises its own ConverterError, and others from inside MLIR
        raise DataError(f"cannot convert the network to LiteRT ({first_line(e)})") from None


def export(sess, images, logits, network, export_dir, calibration, log=print):
    """Write the SavedModel version and both LiteRT files of a restored network; returns an Export.

    sess holds the network's graph with its weights restored; images: the
    float32 [None, 784] placeholder; logits: float32 [None, 10]; network:
    the networks.Network it is (its export_name names the files); calibration:
    see tflite_model. Everything is written under temporary names in
    export_dir first; only when all of it is there is it renamed into place
    (a new version folder, never an existing one). Raises DataError naming
    export_dir when it cannot be made or written; nothing is left then,
    not even the folders it created.
    """
    name = network.export_name
    probabilities, classes = serving_outputs(logits)
    created = files.missing_folders(os.path.join(export_dir, name))  # taken back out on failure
    staging = None
    try:
        os.makedirs(os.path.join(export_dir, name), exist_ok=True)
        staging = tempfile.mkdtemp(prefix=f".{name}-export-", dir=export_dir)
        log(f"writing the SavedModel ({SIGNATURE_KEY}: {INPUT_KEY} -> {PROBABILITIES_KEY}, {CLASSES_KEY})")
        write_saved_model(sess, images, probabilities, classes, os.path.join(staging, "saved_model"))
        converted = {}
        for suffix, data in (("", None), (INT8_SUFFIX, calibration)):
            log(f"converting to LiteRT: {name}{suffix}{TFLITE_SUFFIX}"
                + (f" (int8, calibrated on {len(calibration)} training records)" if data is not None else ""))
            converted[suffix] = tflite_model(sess, images, probabilities, data)
            with open(os.path.join(staging, name + suffix + TFLITE_SUFFIX), "wb") as f:
                f.write(converted[suffix])
        written = commit(staging, export_dir, name)
    except BaseException as e:  # a full disk, a read-only folder, Ctrl-C: nothing of this export stays
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        files.remove_empty_folders(created)
        if isinstance(e, (OSError, tf.errors.OpError)):
            reason = getattr(e, "strerror", None) or first_line(e)
            raise DataError(f"{export_dir}: cannot write the export ({reason}); "
                            f"choose another folder with --export-dir") from None
        raise
    shutil.rmtree(staging, ignore_errors=True)
    return written


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
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved + [devnull]:
                os.close(fd)


def write_saved_model(sess, images, probabilities, classes, path):
    """Write sess's graph and variables as a SavedModel at path (a folder that must not exist yet).

    One meta graph, tagged `serve`, with the serving_default signature
    (INPUT_KEY -> PROBABILITIES_KEY, CLASSES_KEY). Source:
    tf.compat.v1.saved_model.Builder, predict_signature_def.
    """
    signature = tf.saved_model.signature_def_utils.predict_signature_def(
        inputs={INPUT_KEY: images}, outputs={PROBABILITIES_KEY: probabilities, CLASSES_KEY: classes})
    builder = tf.saved_model.Builder(path)
    builder.add_meta_graph_and_variables(sess, [tf.saved_model.tag_constants.SERVING],
                                         signature_def_map={SIGNATURE_KEY: signature}, strip_default_attrs=True)
    builder.save()


def commit(staging, export_dir, name):
    """Rename the staged SavedModel to export_dir/name/<next version> and the .tflite files into export_dir.

    A version that another export took meanwhile is passed over, never
    written into. When a .tflite rename fails, the new version is taken
    back out, so the export is all there or not at all. Returns an Export.
    """
    base = os.path.join(export_dir, name)
    while True:
        version = os.path.join(base, str((versions(base) or [0])[-1] + 1))
        try:
            os.rename(os.path.join(staging, "saved_model"), version)
            break
        except OSError as e:
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not os.path.isdir(version):
                raise
    tflite = [os.path.join(export_dir, name + suffix + TFLITE_SUFFIX) for suffix in ("", INT8_SUFFIX)]
    try:
        for path in tflite:
            staged = os.path.join(staging, os.path.basename(path))
            files.replace(staged, path)
    except BaseException:
        shutil.rmtree(version, ignore_errors=True)
        raise
    return Export(version, *tflite)

"""Input pipelines over the TFRecord files (tf.compat.v1): queue runners, and tf.data.

mnist_generateds.read_tfRecord and get_tfrecord are the course's reader and
batcher; here is what the course never had: reading many records per op
(read_many, read_fixed), a failing reader as one line (pipeline_failed,
iterator_failed), and the same batches through tf.data for --pipeline
tfdata: tfdata_batches (training) and tfdata_once (evaluation).
docs/migrating.md compares them with the queue runners call by call.
"""
import dataclasses

from tf_compat import first_line, from_iterator, tf
from .errors import DataError
from .records import (FEATURES, IMAGE_PIXELS, NUM_CLASSES, RECORD_FRAME_BYTES, RECORD_HEADER_BYTES,
                      template_offsets)

# The course's shuffle_batch (examples, not batches); also the size of tf.data's shuffle buffer.
NUM_THREADS = 2
CAPACITY = 1000
MIN_AFTER_DEQUEUE = 700
JOIN_GRACE_SECS = 5  # a queue-runner thread gets this long to finish after request_stop
RECORDS_PER_READ = 200  # fast pipeline: records read and parsed per op run


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """What a --pipeline name means, decided once (PIPELINES) and asked by what it changes.

    records_per_read: records each reader op reads (None: one, the
    course's); fed: batches fetched by sess.run and fed back by feed_dict
    (the course's) rather than wired into the network; queue_runners: the
    batches come from queue runners under a Coordinator (else tf.data).
    """
    name: str
    records_per_read: object
    fed: bool
    queue_runners: bool


PIPELINES = {pipeline.name: pipeline for pipeline in (
    Pipeline("fast", RECORDS_PER_READ, fed=False, queue_runners=True),
    Pipeline("course", None, fed=True, queue_runners=True),
    Pipeline("tfdata", None, fed=False, queue_runners=False),
)}


def pipeline_of(pipeline):
    """The Pipeline of a --pipeline name (or a Pipeline itself); KeyError for an unknown name."""
    return pipeline if isinstance(pipeline, Pipeline) else PIPELINES[pipeline]


def read_fixed(filename_queue, records_per_read, layout):
    """Up to records_per_read examples per run from files of equal-length records.

    Source: tf.compat.v1.FixedLengthRecordReader (the TF1 CIFAR-10 reader),
    which reads through a buffer, where TFRecordReader makes two unbuffered
    reads per record (bench/bench.py, README "Performance"). Each TFRecord
    frame (uint64 length, its CRC, the record, the record's CRC) is read as
    one fixed-length value of layout.length + RECORD_FRAME_BYTES bytes, and
    the CRCs are not checked here. That loses nothing: layout comes from
    record_layout, whose files scan_tfrecord read whole just before,
    checking every CRC and that each file ends exactly at its last record,
    so the frames line up. Without layout.template the record is cut out
    of its frame (tf.strings.substr) and parsed with parse_example; with it,
    every record is the writer's template (see template_offsets), so img
    is a slice of the frame's bytes and label the 10 one-hot bytes at their
    fixed offset. Returns img uint8 [k, 784] and label int64 [k, 10] (uint8
    with layout.template), k <= records_per_read. The check holds for the
    files as they were at start-up: a file replaced by records of another
    layout while training runs is misread (TFRecordReader would read it
    unchecked, too).
    """
    # No CRC check in this reader: scan_tfrecord verified every CRC of these files before training.
    reader = tf.FixedLengthRecordReader(record_bytes=layout.length + RECORD_FRAME_BYTES)
    _, frames = reader.read_up_to(filename_queue, records_per_read)
    if not layout.template:
        serialized = tf.strings.substr(frames, RECORD_HEADER_BYTES, layout.length)
        features = tf.parse_example(serialized, features=FEATURES)
        return tf.reshape(tf.decode_raw(features["img_raw"], tf.uint8), [-1, IMAGE_PIXELS]), features["label"]
    image_at, label_at = (RECORD_HEADER_BYTES + at for at in template_offsets()[:2])
    frame_bytes = tf.decode_raw(frames, tf.uint8)
    frame_bytes.set_shape([None, layout.length + RECORD_FRAME_BYTES])  # the reader's values all have this length
    return (frame_bytes[:, image_at:image_at + IMAGE_PIXELS],
            frame_bytes[:, label_at:label_at + NUM_CLASSES])


def to_float(img, label):
    """img uint8 [..., 784] -> float32 in [0, 1]; label int64 one-hot -> float32."""
    return tf.cast(img, tf.float32) * (1.0 / 255), tf.cast(label, tf.float32)


def read_many(filename_queue, records_per_read, layout=None):
    """Up to records_per_read examples per run of the reader op: img uint8 [k, 784], label [k, 10], k <= n.

    Source: tf.compat.v1.TFRecordReader.read_up_to and one parse_example for
    the whole batch of records (label int64); with a RecordLayout (see
    records.record_layout) FixedLengthRecordReader instead (read_fixed;
    label uint8 when layout.template). The fast pipeline's reader stage.
    """
    if layout is not None:
        return read_fixed(filename_queue, records_per_read, layout)
    _, serialized = tf.TFRecordReader().read_up_to(filename_queue, records_per_read)
    features = tf.parse_example(serialized, features=FEATURES)
    img = tf.reshape(tf.decode_raw(features["img_raw"], tf.uint8), [-1, IMAGE_PIXELS])
    return img, features["label"]


def pipeline_failed(tfRecord_path, error):
    """The DataError for a reader that failed on tfRecord_path (a TensorFlow OpError), in one line.

    An OutOfRangeError is the end of tfdata_batches' endless stream, which
    comes only when an epoch found no record at all: files emptied after
    they were checked (the queue runners wait for a batch instead, until
    the step's time-out).
    """
    if isinstance(error, tf.errors.OutOfRangeError):
        return DataError(f"{tfRecord_path}: input pipeline failed: no record left to read "
                         "(was the data changed after it was checked?)")
    return DataError(f"{tfRecord_path}: input pipeline failed: {first_line(error)}")


def shuffle_queue_runner():
    """The tf.train.QueueRunner of the RandomShuffleQueue that shuffle_batch made in this graph.

    Its enqueue_ops are the reader threads (NUM_THREADS); its queue's op has
    the `capacity` and `min_after_dequeue` attributes. Raises ValueError
    when the graph has no shuffle_batch.
    """
    for runner in tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS):
        if runner.queue.queue_ref.op.type == "RandomShuffleQueueV2":
            return runner
    raise ValueError("no shuffle_batch queue in this graph")


def shuffle_queue():
    """The RandomShuffleQueue of shuffle_batch in this graph: its size() over its capacity is the fill TensorBoard shows."""
    return shuffle_queue_runner().queue


# ---------------------------------------------------------------- tf.data (the queue runners' successor)

def parse_batch(serialized):
    """Serialized tf.train.Examples string [k] -> img float32 [k, 784] in [0, 1], label float32 [k, 10]."""
    features = tf.parse_example(serialized, features=FEATURES)
    return to_float(tf.reshape(tf.decode_raw(features["img_raw"], tf.uint8), [-1, IMAGE_PIXELS]), features["label"])


def tfdata_epoch(files):
    """One epoch of serialized records (a tf.data.Dataset of strings): every record of `files` exactly once.

    The files come in a new random order each time the dataset is iterated
    (string_input_producer's shuffle) and are read one after another, as
    the queue runners read them: shuffle_batch's NUM_THREADS threads share
    one TFRecordReader, which reads one file at a time. Each file is opened
    once per epoch: a file list repeated *before* the reader would let one
    file be read twice at once, and with a single file every record would
    come twice in a row. Files are not interleaved: that costs CPU per
    batch (docs/performance.md) for a shuffle the shuffle buffer decides
    anyway.
    """
    files = list(files)
    return tf.data.TFRecordDataset(tf.data.Dataset.from_tensor_slices(files).shuffle(len(files)))


def tfdata_batches(files, batch_size):
    """Shuffled training batches through tf.data: img float32 [batch_size, 784] in [0, 1], label float32 [batch_size, 10].

    The same examples get_tfrecord's queue runners give, by tf.data's
    pipeline: tfdata_epoch (the files in a new random order each epoch,
    read one after another) -> shuffle with a buffer of
    shuffle_buffer(batch_size) examples -> repeat -> batch (drop_remainder:
    every batch full, as shuffle_batch's) -> parse_example on the whole
    batch -> prefetch. The shuffle comes before the repeat, so each epoch
    of the example stream holds every record exactly once (the queue's
    epochs overlap by what the queue holds); batches run on across the
    boundary. Runs in the graph through a one-shot iterator: no queue
    runners, no Coordinator and no variables (a checkpoint holds the same
    variables as with the queue runners); reading errors are raised by the
    training step itself (see iterator_failed). docs/migrating.md compares
    the two call by call.
    """
    dataset = (tfdata_epoch(files)
               .shuffle(shuffle_buffer(batch_size))
               .repeat()
               .batch(batch_size, drop_remainder=True)
               .map(parse_batch, num_parallel_calls=tf.data.experimental.AUTOTUNE)
               .prefetch(tf.data.experimental.AUTOTUNE))
    return tf.data.make_one_shot_iterator(dataset).get_next()


def shuffle_buffer(batch_size):
    """The tf.data shuffle buffer that matches get_tfrecord's queue: its capacity, max(CAPACITY, MIN_AFTER_DEQUEUE + batch).

    shuffle_batch's RandomShuffleQueue hands out a batch only while it
    holds at least MIN_AFTER_DEQUEUE + batch examples, and draws the
    batch's examples one by one at random from all it holds: each draw is
    from between MIN_AFTER_DEQUEUE + 1 and `capacity` examples (near
    capacity when the readers keep up). tf.data's shuffle refills its
    buffer after every draw, so each example is drawn from a full buffer;
    a buffer of the queue's capacity therefore shuffles at least as well
    (tests/test_tfdata.py measures both).
    """
    return max(CAPACITY, MIN_AFTER_DEQUEUE + batch_size)


def tfdata_once(num, tfRecord_path):
    """Every record of the file exactly once, in file order, batches of up to num, through tf.data.

    The batches of mnist_generateds.get_tfrecord(..., once=True); after
    the last batch the iterator raises tf.errors.OutOfRangeError, as that
    queue does. No local variables or queue runners needed.
    """
    dataset = tf.data.TFRecordDataset(tfRecord_path).batch(num).map(parse_batch).prefetch(1)
    return tf.data.make_one_shot_iterator(dataset).get_next()


def iterator_failed(error):
    """True when a TensorFlow error (OpError) came from a tf.data iterator's get_next (tf_compat.from_iterator).

    tf.data reads inside the session run that asks for the batch, so a
    damaged record fails that run (the training step, an evaluation
    fetch), where a queue runner's reader fails in its own thread and
    closes the queue.
    """
    return from_iterator(error)

"""The queue runners' successor, tf.data, over the same TFRecord files; and a failing reader in one line.

mnist_generateds.read_tfRecord and get_tfrecord are the course's reader and
batcher, with records' many-records-per-op readers (records.read_many);
here are the same batches through tf.data for --pipeline tfdata:
tfdata_iterator (training) and tfdata_once (evaluation), and the one-line
errors of a reader that fails either way (pipeline_failed,
iterator_failed). Both parse with records.FEATURES, the parse features of
records.SCHEMA. docs/migrating.md compares them call by call.
"""
from tf_compat import first_line, from_iterator, tf
from .errors import DataError
from .records import CAPACITY, FEATURES, MIN_AFTER_DEQUEUE, image_and_label, to_float


def pipeline_failed(tfRecord_path, error):
    """The DataError for a reader that failed on tfRecord_path (a TensorFlow OpError), in one line.

    An OutOfRangeError is the end of tfdata_iterator' endless stream, which
    comes only when an epoch found no record at all: files emptied after
    they were checked (the queue runners wait for a batch instead, until
    the step's time-out).
    """
    if isinstance(error, tf.errors.OutOfRangeError):
        return DataError(f"{tfRecord_path}: input pipeline failed: no record left to read "
                         "(was the data changed after it was checked?)")
    return DataError(f"{tfRecord_path}: input pipeline failed: {first_line(error)}")


# ---------------------------------------------------------------- tf.data (the queue runners' successor)

def parse_batch(serialized):
    """Serialized tf.train.Examples string [k] -> img float32 [k, 784] in [0, 1], label float32 [k, 10].

    Parsed with records.FEATURES: a record lacking a feature of records.SCHEMA fails here.
    """
    return to_float(*image_and_label(tf.parse_example(serialized, features=FEATURES)))


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


def tfdata_iterator(files, batch_size):
    """The one-shot iterator of shuffled training batches through tf.data; each get_next() makes a new batch tensor
    pair: img float32 [batch_size, 784] in [0, 1], label float32 [batch_size, 10].

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
    return tf.data.make_one_shot_iterator(dataset)


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

"""Queue-runner input pipelines over the TFRecord files (tf.compat.v1).

mnist_generateds.read_tfRecord and get_tfrecord are the course's reader and
batcher; here is what they and the evaluation share: reading many records
per op (read_many, read_fixed), one exact pass over a file for evaluation
(batches_once), and stopping the queue runners with the reader's own error
(stop_queue_runners).
"""
from tf_compat import first_line, tf
from .errors import DataError
from .records import (FEATURES, IMAGE_PIXELS, NUM_CLASSES, RECORD_FRAME_BYTES, RECORD_HEADER_BYTES,
                      template_offsets)

# Course input pipeline constants (examples, not batches).
NUM_THREADS = 2
CAPACITY = 1000
MIN_AFTER_DEQUEUE = 700
RECORDS_PER_READ = 200  # fast pipeline: records read and parsed per op run


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


def batches_once(num, tfRecord_path):
    """Every record of a TFRecord file exactly once, in batches of up to `num`, in file order.

    Unlike the course's test input (one shuffle_batch draw, which repeats some
    records and misses others), this reads the file for one epoch in order,
    and the last batch holds what is left (allow_smaller_final_batch). After
    the last batch the queue raises tf.errors.OutOfRangeError. Returns
    img_batch float32 [k, 784] in [0, 1], label_batch float32 [k, 10], k <= num.
    Needs tf.local_variables_initializer() (the epoch counter).
    """
    filename_queue = tf.train.string_input_producer([tfRecord_path], num_epochs=1, shuffle=False)
    img, label = read_many(filename_queue, num)
    img_batch, label_batch = tf.train.batch(
        [img, label], batch_size=num, num_threads=1, capacity=2 * num,
        enqueue_many=True, allow_smaller_final_batch=True)
    return to_float(img_batch, label_batch)


def stop_queue_runners(coord, threads, tfRecord_path, passthrough=()):
    """Stop the queue runners of a Coordinator and wait for their threads (course step).

    coord.join re-raises the first error a queue-runner thread reported,
    which is the real cause behind a main thread's closed-queue error; it is
    raised as DataError naming tfRecord_path, with TensorFlow's first line
    (tf_compat.first_line). Errors of the classes in `passthrough` are
    re-raised as they are (a distributed worker's lost parameter server).
    Threads get 5 s to finish.
    """
    coord.request_stop()
    try:
        coord.join(threads, stop_grace_period_secs=5)
    except passthrough:
        raise
    except tf.errors.OpError as e:
        raise pipeline_failed(tfRecord_path, e) from None


def pipeline_failed(tfRecord_path, error):
    """The DataError for a reader that failed on tfRecord_path (a TensorFlow OpError), in one line."""
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


def tfdata_batches(files, batch_size):
    """Shuffled training batches through tf.data: img float32 [batch_size, 784] in [0, 1], label float32 [batch_size, 10].

    The same examples get_tfrecord's queue runners give, by tf.data's
    pipeline: the files in a new random order each epoch, read by
    NUM_THREADS parallel readers (TFRecordDataset num_parallel_reads) ->
    shuffle with a buffer of shuffle_buffer(batch_size) examples -> repeat
    -> batch (drop_remainder: every batch full, as shuffle_batch's) ->
    parse_example on the whole batch -> prefetch. Runs in the graph through
    a one-shot iterator: no queue runners, no Coordinator needed (they do
    no harm). docs/migrating.md compares the two call by call.
    """
    dataset = (tf.data.Dataset.from_tensor_slices(list(files)).shuffle(len(files)).repeat()
               .interleave(tf.data.TFRecordDataset, cycle_length=NUM_THREADS, block_length=1,
                           num_parallel_calls=NUM_THREADS)
               .shuffle(shuffle_buffer(batch_size))
               .batch(batch_size, drop_remainder=True)
               .map(parse_batch, num_parallel_calls=tf.data.experimental.AUTOTUNE)
               .prefetch(tf.data.experimental.AUTOTUNE))
    return tf.data.make_one_shot_iterator(dataset).get_next()


def shuffle_buffer(batch_size):
    """The tf.data shuffle buffer that matches get_tfrecord's queue: its capacity, max(CAPACITY, MIN_AFTER_DEQUEUE + batch).

    shuffle_batch draws each example at random from a queue holding between
    MIN_AFTER_DEQUEUE and its capacity; tf.data's shuffle draws from a
    buffer it keeps full, so a buffer of the queue's capacity shuffles at
    least as well.
    """
    return max(CAPACITY, MIN_AFTER_DEQUEUE + batch_size)


def tfdata_once(num, tfRecord_path):
    """batches_once through tf.data: every record of the file exactly once, in file order, batches of up to num.

    After the last batch the iterator raises tf.errors.OutOfRangeError, as
    batches_once's queue does. No local variables or queue runners needed.
    """
    dataset = tf.data.TFRecordDataset(tfRecord_path).batch(num).map(parse_batch)
    return tf.data.make_one_shot_iterator(dataset).get_next()

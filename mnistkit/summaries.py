"""TensorBoard for the trainers and the evaluator: the training step's merged summary, one scalar from outside
the graph, and an events file closed with its failure said.

  TRAIN_LOG_DIR          the trainer's run, inside the model folder (mnist_test.py's is EVAL_LOG_DIR);
  summaries              the step's scalars, and the fill of shuffle_batch's queue (shuffle_queue_runner);
  scalar_summary         a value measured outside the graph (examples per second, the evaluator's accuracy);
  close_writer           a FileWriter closed; an events file a full disk left empty removed, with a warning.
When they are due in the step loop is training.SummaryMeter's.
"""
import os

from tf_compat import events_file, tf

TRAIN_LOG_DIR = "train"  # TensorBoard run, inside the model folder


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


def summaries(loss, cem, regularization, learning_rate, y, y_, queue_fill=True):
    """The merged TensorBoard summary of a training step: loss, cross_entropy, regularization_loss,
    learning_rate, the batch's accuracy (y logits, y_ one-hot labels), and with queue_fill the fill of
    shuffle_batch's queue (the queue runners' pipelines have one; tf.data's has no counterpart: docs/migrating.md)."""
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1)), tf.float32))
    scalars = [tf.summary.scalar("loss", loss), tf.summary.scalar("cross_entropy", cem),
               tf.summary.scalar("regularization_loss", regularization),
               tf.summary.scalar("learning_rate", learning_rate), tf.summary.scalar("accuracy", accuracy)]
    if queue_fill:
        queue = shuffle_queue_runner().queue
        # shuffle_batch's own summary measures only the part above min_after_dequeue; this is the whole queue.
        fill = tf.cast(queue.size(), tf.float32) / queue.queue_ref.op.get_attr("capacity")
        scalars.append(tf.summary.scalar("shuffle_queue_fill", fill))
    return tf.summary.merge(scalars)


def scalar_summary(tag, value):
    """A tf.Summary holding one scalar measured outside the graph (e.g. examples/s)."""
    return tf.Summary(value=[tf.Summary.Value(tag=tag, simple_value=float(value))])


def close_writer(writer, log=print):
    """Close a summary FileWriter; an events file it could not write (a full disk) is removed, with a warning.

    TensorFlow's events writer reports a failed write only in its C++ log,
    so an empty events file is how a failure shows.
    """
    path = events_file(writer)  # None: another TensorFlow's writer, nothing to check
    try:
        writer.close()
    except (tf.errors.OpError, OSError):
        pass
    try:
        if path and os.path.getsize(path) == 0:
            os.remove(path)
            log(f"warning: {os.path.dirname(path)}: no TensorBoard summaries written (the disk may be full)")
    except OSError:
        pass

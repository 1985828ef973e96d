"""TensorBoard for the training loop: the step's scalars, examples per second, and the events files.

mnist_backward.build_graph merges the step's scalars (summaries); its loop
asks a SummaryMeter when one is due and hands it what the step fetched; the
chief's FileWriter writes into <model folder>/train (summary_writer), and
close_writer removes an events file a full disk left empty.
mnist_test.py writes its accuracy beside it, in <model folder>/eval.
"""
import os
import time

from tf_compat import events_file, tf
from . import inputs
from .training import crossed

TRAIN_LOG_DIR = "train"  # TensorBoard run, inside the model folder


def summaries(loss, cem, regularization, learning_rate, y, y_, queue_fill=True):
    """The merged TensorBoard summary of a training step: loss, cross_entropy, regularization_loss,
    learning_rate, the batch's accuracy (y logits, y_ one-hot labels), and with queue_fill the fill of
    shuffle_batch's queue (the queue runners' pipelines have one; tf.data's has no counterpart: docs/migrating.md)."""
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1)), tf.float32))
    scalars = [tf.summary.scalar("loss", loss), tf.summary.scalar("cross_entropy", cem),
               tf.summary.scalar("regularization_loss", regularization),
               tf.summary.scalar("learning_rate", learning_rate), tf.summary.scalar("accuracy", accuracy)]
    if queue_fill:
        queue = inputs.shuffle_queue()
        # shuffle_batch's own summary measures only the part above min_after_dequeue; this is the whole queue.
        fill = tf.cast(queue.size(), tf.float32) / queue.queue_ref.op.get_attr("capacity")
        scalars.append(tf.summary.scalar("shuffle_queue_fill", fill))
    return tf.summary.merge(scalars)


def scalar_summary(tag, value):
    """A tf.Summary holding one scalar measured outside the graph (e.g. examples/s)."""
    return tf.Summary(value=[tf.Summary.Value(tag=tag, simple_value=float(value))])


def summary_writer(model_dir, graph=None):
    """The tf.summary.FileWriter of <model_dir>/train; graph: written into the events (a run's first)."""
    return tf.summary.FileWriter(os.path.join(model_dir, TRAIN_LOG_DIR), graph)


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


class SummaryMeter:
    """The chief's TensorBoard summaries in the step loop: when one is due, and examples_per_sec between them.

    writer: the summary FileWriter, or None (no summaries: not the chief).
    due(step): a summary is due at this step (every `every` steps);
    add(summary, step) after each step writes a fetched merged summary
    (None: none was fetched) and the examples per second since the previous
    one (batch_size examples per step; on a cluster, all workers together).
    The first step only starts the clock: queue warm-up is not a rate.
    """

    def __init__(self, writer, every, batch_size):
        self.writer, self.every, self.batch_size = writer, every, batch_size
        self.last = self.clock = None  # the step of the previous summary; (time, step) it was written at

    def due(self, step):
        if self.last is None:
            self.last = step - 1
        return self.writer is not None and crossed(self.last, step, self.every)

    def add(self, summary, step):
        if summary is None:
            if self.clock is None:
                self.clock = (time.monotonic(), step)
            return
        self.writer.add_summary(summary, step)
        now = time.monotonic()
        if self.clock is not None:
            rate = (step - self.clock[1]) * self.batch_size / max(now - self.clock[0], 1e-9)
            self.writer.add_summary(scalar_summary("examples_per_sec", rate), step)
        self.clock, self.last = (now, step), step

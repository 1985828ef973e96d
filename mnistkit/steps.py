"""--steps-per-run K: up to K training steps in one session run, a tf.while_loop over the trainer's own step.

mnist_backward.build_graph builds the course's single step; at
--steps-per-run above 1 it also builds steps_loop here, on the same
variables, passing in its own loss and learning rate (loss_and_rate) and
its own update (the optimizer's step with global_step += 1, then the moving
averages), so that whatever changes the single step changes the loop's
steps too. mnist_backward.train_loop then runs the StepsLoop's fetches
instead of the train op; loss lines, checkpoints, summaries and stops come
at the first run boundary at or after their step.
"""
import dataclasses

from tf_compat import tf, uncached
from . import folders, records, training
from .networks import LOSSES_COLLECTION


@dataclasses.dataclass
class StepsLoop:
    """The in-graph loop of --steps-per-run (steps_loop): what train_loop feeds and fetches instead of train_op.

    count: int32 placeholder, the steps of this run (at most steps_per_run);
    fetches: [steps run, the last step's loss, global_step after the run,
    the last step's learning rate]; summary: the merged summary of the
    last step (training.summaries of the loop's outputs).
    """
    count: object
    fetches: list
    summary: object


def steps_loop(settings, loss_and_rate, update, next_batch, global_step):
    """Up to settings.steps_per_run training steps in one sess.run: a tf.while_loop over the course's step; a StepsLoop.

    Each iteration trains on its own batch (next_batch(), from the same
    queue or iterator as the single step) and dequeues the next step's
    while it computes (the run's first batch is dequeued before the loop,
    and its last step dequeues none, so a run draws exactly its steps'
    batches). A step runs forward() on the graph's trainable variables
    (forward_on), then the trainer's own functions: loss_and_rate(y, y_,
    step, l2_terms) -> (loss, cross entropy, L2 term, learning rate) at the
    current global_step, and update(loss, learning_rate, var_list) -> the op
    of one training update of var_list (the optimizer's step, global_step
    += 1, the moving averages after it). The loop stops early after a step
    whose loss is not finite, so that train_loop's NaN stop names that step.
    mnist_backward.settings_for refuses the course pipeline (its batches are
    fed from Python), main() a cluster's synchronous updates.
    """
    count = tf.placeholder(tf.int32, [], name="steps_this_run")
    variables = list(folders.checkpoint_variables(tf.trainable_variables()).values())  # in creation order

    def step(i, *previous):
        x, y_ = previous[-2:]  # this step's batch, dequeued by the step before (the first: before the loop)
        # The next step's batch, dequeued while this one computes (nothing here waits for it); none after the last.
        following = tf.cond(i + 1 < count, lambda: batch_shaped(next_batch()), lambda: (x, y_))
        y, l2_terms, parts = forward_on(settings, x, variables)
        loss, cem, regularization, learning_rate = loss_and_rate(y, y_, global_step.read_value(), l2_terms)
        with tf.control_dependencies([update(loss, learning_rate, parts)]):
            return [i + 1] + [tf.identity(t) for t in (loss, cem, regularization, learning_rate)] + [
                tf.ensure_shape(y, labels.shape), y_] + list(following)  # y_: batch_shaped already

    def batch_shaped(batch):  # a mixed batch's dimension is not static; the loop's variables need it
        return (tf.ensure_shape(batch[0], [settings.batch_size, records.IMAGE_PIXELS]),
                tf.ensure_shape(batch[1], labels.shape))

    labels = tf.zeros([settings.batch_size, settings.net.OUTPUT_NODE])
    start = [tf.constant(0), tf.constant(0.0), tf.constant(0.0), tf.constant(0.0), tf.constant(0.0, tf.float32),
             labels, labels, *batch_shaped(next_batch())]  # the run's first batch
    with uncached(tf.trainable_variables()):  # a cluster's weights: each step's moving averages read its own
        ran, loss, cem, regularization, learning_rate, y, y_, _, _ = tf.while_loop(
            lambda i, loss, *_: tf.logical_and(i < count, tf.math.is_finite(loss)), step, start,
            back_prop=False, parallel_iterations=1, name="steps_per_run")  # 1: a step starts after the last ended
    with tf.control_dependencies([ran]):
        step_after = global_step.read_value()
    summary = training.summaries(loss, cem, regularization, learning_rate, y, y_,
                                 queue_fill=settings.pipeline.queue_runners)
    return StepsLoop(count, [ran, loss, step_after, learning_rate], summary)


def forward_on(settings, x, variables):
    """settings.net.forward(x) on existing variables, inside a tf.while_loop: (logits, L2 terms, variables read).

    Variables cannot be made in a while_loop: a tf.compat.v1.variable_creator_scope
    hands forward() a fresh read of each of `variables` (a variable, or a
    folders.Whole's parts concatenated) in the order it creates them,
    instead of a new variable. The L2 terms forward() adds to the 'losses'
    collection are returned and taken out of it again; the variables read
    (a Whole's parts each) are what the step's update trains.
    """
    parts, given = [], iter(variables)

    def existing(next_creator, **kwargs):
        var = next(given)
        read = var.parts if isinstance(var, folders.Whole) else [var]
        parts.extend(read)
        values = [part.read_value() for part in read]
        return values[0] if len(values) == 1 else tf.concat(values, 0)

    collected = tf.get_collection_ref(LOSSES_COLLECTION)
    before = len(collected)
    with tf.variable_creator_scope(existing):
        y = settings.net.forward(x, settings.regularizer, train=True)
    l2_terms = collected[before:]
    del collected[before:]
    return y, l2_terms, parts

"""The training step's update with its moving averages (step_and_averages), and --steps-per-run K (steps_loop).

step_and_averages is the body of mnist_backward.build_graph's update: the
optimizer's step and the moving averages of the weights that step makes,
without making the averages wait for the step (docs/performance.md).

steps_loop: up to K training steps in one session run, a tf.while_loop
over the trainer's own step. mnist_backward.build_graph builds the course's single step; at
--steps-per-run above 1 it also builds steps_loop here, on the same
variables, passing in its own loss and learning rate (loss_and_rate) and
its own update (the optimizer's step with global_step += 1, and the moving
averages of the weights it makes), so that whatever changes the single step changes the loop's
steps too. mnist_backward.train_loop then runs the StepsLoop's fetches
instead of the train op; loss lines, checkpoints, summaries and stops come
at the first run boundary at or after their step.
"""
import dataclasses

from tf_compat import tf, uncached
from . import folders, records, summaries
from .networks import LOSSES_COLLECTION


@dataclasses.dataclass
class StepsLoop:
    """The in-graph loop of --steps-per-run (steps_loop): what train_loop feeds and fetches instead of train_op.

    count: int32 placeholder, the steps of this run (at most steps_per_run);
    fetches: [steps run, the last step's loss, global_step after the run,
    the last step's learning rate]; summary: the merged summary of the
    last step (summaries.summaries of the loop's outputs).
    """
    count: object
    fetches: list
    summary: object


def step_and_averages(optimizer, averages, decay, grads_and_vars, learning_rate, global_step):
    """One op: optimizer.apply_gradients(grads_and_vars, global_step) and the moving averages of the new weights.

    averages: a training.AveragesBesideVariables; decay: its
    ExponentialMovingAverage's decay (moving_average_decay, float);
    learning_rate: the float32 scalar tensor the optimizer's rate returns
    for this step; global_step: the int64 variable the step adds 1 to.
    Each shadow ends as ExponentialMovingAverage.apply leaves it after the
    step: shadow - (shadow - w_new) * (1 - d), where w_new is the weight
    this step made and d = min(decay, (1 + n) / (10 + n)) at n = the
    global_step the step produces (read before it, plus 1).
    For tf.train.GradientDescentOptimizer with dense gradients, w_new = w
    - rate * grad, so the update is split in two halves that need not
    wait for the step: shadow -= (1 - d) * (shadow - w) on the weight
    before the step (each weight's apply op waits for it, so w is the
    old weight, read early while the step computes), then shadow -=
    (1 - d) * rate * grad as soon as the gradient exists, beside the
    weight's own apply (both halves are ResourceApplyGradientDescent
    ops, TensorFlow's fused `var -= alpha * delta`). The result equals
    the ordered formula up to float32 rounding (tests/test_steps_per_run.py).
    Any other optimizer (or a sparse gradient): the averages run after the
    whole step, as ExponentialMovingAverage.apply under
    control_dependencies. Source: tf.train.ExponentialMovingAverage.apply,
    tf.raw_ops.ResourceApplyGradientDescent.
    """
    pairs = [(g, v) for g, v in grads_and_vars if g is not None]
    if type(optimizer) is not tf.train.GradientDescentOptimizer or not all(
            isinstance(g, tf.Tensor) and v.dtype.base_dtype == tf.float32 for g, v in pairs):
        train_step = optimizer.apply_gradients(grads_and_vars, global_step=global_step)
        with tf.control_dependencies([train_step]):  # the averages of the weights this step made
            return tf.group(train_step, averages.apply([v for _, v in pairs]))
    averages.make_shadows([v for _, v in pairs])
    after = tf.cast(global_step.read_value() + 1, tf.float32)  # the step this one produces (1 + global_step)
    keep = tf.minimum(tf.constant(decay, tf.float32), (1.0 + after) / (10.0 + after))
    pulls = {}
    for g, v in pairs:  # the first half: towards the weight before the step
        shadow = averages.ema.average(v)
        with tf.device(v.device), tf.name_scope(f"{shadow.op.name}/before_step"):
            pulls[v.ref()] = tf.raw_ops.ResourceApplyGradientDescent(
                var=shadow.handle, alpha=1.0 - keep, delta=shadow.read_value() - v.read_value())
    with tf.control_dependencies(list(pulls.values())):  # each weight is read for its shadow before it changes
        train_step = optimizer.apply_gradients(grads_and_vars, global_step=global_step)
    steps = []
    for g, v in pairs:  # the second half: the step's own change of the weight, - rate * grad
        shadow = averages.ema.average(v)
        with tf.device(v.device), tf.control_dependencies([pulls[v.ref()]]), tf.name_scope(
                f"{shadow.op.name}/the_step"):
            steps.append(tf.raw_ops.ResourceApplyGradientDescent(
                var=shadow.handle, alpha=(1.0 - keep) * tf.cast(learning_rate, tf.float32),
                delta=g))
    return tf.group(train_step, *steps)


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
    += 1, the moving averages of the weights it makes). The loop stops early after a step
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
    summary = summaries.summaries(loss, cem, regularization, learning_rate, y, y_,
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

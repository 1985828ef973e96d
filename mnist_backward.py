"""Course step 2: train the 784-500-10 network from data/mnist_train.tfrecords.

Run after mnist_generateds.py. Batches come from tf.compat.v1 queue runners
(string_input_producer -> TFRecordReader -> parse -> shuffle_batch, 2
threads) started under a Coordinator around the step loop. The course's
schedule: exponentially decayed learning rate (x0.99 per epoch, staircase),
L2 regularization, moving averages of all trainable variables (which
mnist_test.py and mnist_app.py restore), a checkpoint every 1,000 steps.
A run resumes from the latest checkpoint in the model folder and trains until
global_step reaches --steps. Ctrl-C or SIGTERM saves a checkpoint and exits.

With --job_name ps|worker, --task_index, --ps_hosts and --worker_hosts the
same graph trains on TensorFlow's distributed runtime instead, one process
per task (train_distributed, serve_ps; mnist_cluster.py starts such a
cluster on one machine).
"""
import argparse
import contextlib
import os
import signal
import sys
import threading
import time

from tf_compat import tf
import mnist_forward
import mnist_generateds
from mnist_idx import DataError

BATCH_SIZE = 200
LEARNING_RATE_BASE = 0.1
LEARNING_RATE_DECAY = 0.99
REGULARIZER = 0.0001
STEPS = 50000
MOVING_AVERAGE_DECAY = 0.99
MODEL_SAVE_PATH = "./model/"
MODEL_NAME = "mnist_model"
SAVE_EVERY = 1000  # steps between checkpoints
PRINT_EVERY = 1000  # steps between the course's loss lines
STEP_TIMEOUT_MS = 60000  # a step waiting this long for a batch means the input is stuck
SUMMARY_EVERY = 100  # distributed chief: global steps between TensorBoard scalars
TRAIN_LOG_DIR = "train"  # TensorBoard run, inside the model folder
STARTUP_TIMEOUT_SECS = 300  # distributed: wait this long for the parameter servers and the chief
CLOSE_TIMEOUT_SECS = 10  # distributed: closing a session whose parameter server is gone never ends
PS_POLL_SECS = 0.5
MAX_FAILED_STEPS = 3  # distributed: this many failed steps in a row mean a parameter server is gone
RETRY_SECS = 1  # distributed: pause before trying a failed step again
MAX_MESSAGE = 200  # characters of a TensorFlow error message quoted in ours  # parameter server: how often the main thread looks for a stop signal


def build_graph(batch_size, train_examples, data_dir, pipeline, train_files=None, sync_replicas=None):
    """Everything training runs: input pipeline, network, loss, optimizer, moving averages.

    train_examples (int) is the real record count: one epoch is
    train_examples / batch_size steps, the learning rate's decay period.
    Returns a dict of the tensors and ops the loop uses. In the "course"
    pipeline the network reads placeholders x, y_ fed from fetched batches,
    as the course did; in "fast" it reads the batch tensors directly.
    train_files: list of TFRecord files read instead of data_dir's (a
    distributed worker's own shards).
    sync_replicas: None, or (replicas_to_aggregate, total_num_replicas) to
    wrap the optimizer in tf.compat.v1.train.SyncReplicasOptimizer; the dict
    then also holds "optimizer" (for its chief queue runner and tokens).
    """
    img_batch, label_batch = mnist_generateds.get_tfrecord(batch_size, isTrain=True, data_dir=data_dir,
                                                           pipeline=pipeline, files=train_files)
    if pipeline == "course":
        x = tf.placeholder(tf.float32, [None, mnist_forward.INPUT_NODE])
        y_ = tf.placeholder(tf.float32, [None, mnist_forward.OUTPUT_NODE])
    else:
        x, y_ = img_batch, label_batch
    y = mnist_forward.forward(x, REGULARIZER)
    global_step = tf.train.get_or_create_global_step()

    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(logits=y, labels=tf.argmax(y_, 1))
    cem = tf.reduce_mean(ce)
    loss = cem + tf.add_n(tf.get_collection(mnist_forward.LOSSES_COLLECTION))

    learning_rate = tf.train.exponential_decay(
        LEARNING_RATE_BASE, global_step, train_examples / batch_size, LEARNING_RATE_DECAY, staircase=True)
    optimizer = tf.train.GradientDescentOptimizer(learning_rate)
    ema = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
    if sync_replicas is None:
        train_step = optimizer.minimize(loss, global_step=global_step)
        # Each average is updated where its variable lives: on a cluster, on
        # its parameter server, so the weights need not travel to a worker.
        ema_ops = []
        for var in tf.trainable_variables():
            with tf.device(var.device):
                ema_ops.append(ema.apply([var]))
        ema_op = tf.group(*ema_ops)
        with tf.control_dependencies([train_step, ema_op]):
            train_op = tf.no_op(name="train")
    else:
        # A worker's train op only pushes its gradients and waits for a token;
        # the chief's queue runner applies their average and then the moving
        # averages, so both advance once per aggregated step, as on one machine.
        replicas_to_aggregate, total_num_replicas = sync_replicas
        optimizer = tf.train.SyncReplicasOptimizer(
            optimizer, replicas_to_aggregate=replicas_to_aggregate, total_num_replicas=total_num_replicas,
            variable_averages=ema, variables_to_average=tf.trainable_variables())
        train_op = optimizer.minimize(loss, global_step=global_step)
    with tf.control_dependencies([train_op]):
        step_after = global_step.read_value()  # the step number this update produced
    return dict(x=x, y_=y_, img_batch=img_batch, label_batch=label_batch, loss=loss,
                learning_rate=learning_rate, global_step=global_step, train_op=train_op,
                step_after=step_after, optimizer=optimizer)


class StopFlag:
    """Turns SIGINT/SIGTERM into a flag the step loop checks, so it can save first.

    A second Ctrl-C while the flag is set raises KeyboardInterrupt as usual.
    """

    def __init__(self):
        self.signal = None
        self._previous = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal = signal.Signals(signum).name

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def restore_or_init(sess, saver, model_dir):
    """Initialise the variables, then restore the latest checkpoint in model_dir if any.

    Returns the restored checkpoint path or None. Raises DataError when the
    checkpoint does not fit this graph (see mnist_forward.check_checkpoint).
    """
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    ckpt = tf.train.latest_checkpoint(model_dir)
    if ckpt is None:
        return None
    try:
        mnist_forward.check_checkpoint(ckpt, {v.op.name: v for v in tf.global_variables()})
    except ValueError as e:
        raise DataError(f"{e}; use another --model-dir or delete {model_dir}") from None
    saver.restore(sess, ckpt)
    return ckpt


def backward(steps=STEPS, batch_size=BATCH_SIZE, data_dir=mnist_generateds.data_path,
             model_dir=MODEL_SAVE_PATH, pipeline="fast", log=print):
    """Train until global_step reaches `steps`; returns the final global_step.

    Reads data_dir/mnist_train.tfrecords (or its shards; data_dir may also
    be a file or a pattern, see mnist_generateds.tfrecord_files), writes checkpoints
    model_dir/mnist_model-<global_step> every SAVE_EVERY steps, at the end and
    on SIGINT/SIGTERM. Raises DataError on bad input (missing or corrupted
    TFRecord file, checkpoint of another graph, a failing reader thread).
    """
    train_files = mnist_generateds.tfrecord_files(data_dir)
    train_path = train_files[0] if len(train_files) == 1 else f"{len(train_files)} files {data_dir}"
    train_examples = sum(mnist_generateds.count_records(f) for f in train_files)
    graph = build_graph(batch_size, train_examples, data_dir, pipeline, train_files)
    saver = tf.train.Saver()
    os.makedirs(model_dir, exist_ok=True)
    save_path = os.path.join(model_dir, MODEL_NAME)
    run_options = tf.RunOptions(timeout_in_ms=STEP_TIMEOUT_MS)
    fetches = [graph["train_op"], graph["loss"], graph["step_after"]]

    with tf.Session() as sess, StopFlag() as stop:
        restored = restore_or_init(sess, saver, model_dir)
        step = saved_step = sess.run(graph["global_step"])
        log(f"training on {train_examples} records from {train_path}"
            + (f", resuming from {restored}" if restored else "") + f"; target global_step {steps}")
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while step < steps and not stop.signal and not coord.should_stop():
                if pipeline == "course":
                    xs, ys = sess.run([graph["img_batch"], graph["label_batch"]], options=run_options)
                    _, loss_value, step = sess.run(fetches, feed_dict={graph["x"]: xs, graph["y_"]: ys})
                else:
                    _, loss_value, step = sess.run(fetches, options=run_options)
                if step == 1 or step % PRINT_EVERY == 0:
                    log("After %d training steps, loss on training batch is %g." % (step, loss_value))
                if step % SAVE_EVERY == 0:
                    saver.save(sess, save_path, global_step=step)
                    saved_step = step
        except (tf.errors.OutOfRangeError, tf.errors.CancelledError) as e:
            coord.request_stop(e)  # the reader's own error, if any, is re-raised by join below
        except tf.errors.DeadlineExceededError:
            raise DataError(f"{train_path}: no training batch arrived within {STEP_TIMEOUT_MS // 1000} s") from None
        finally:
            coord.request_stop()
            try:
                coord.join(threads, stop_grace_period_secs=5)
            except tf.errors.OpError as e:
                raise DataError(f"{train_path}: input pipeline failed: {e.message.splitlines()[0]}") from None
        path = save_path + f"-{step}"
        if step != saved_step or restored is None:
            path = saver.save(sess, save_path, global_step=step)
        if stop.signal:
            log(f"{stop.signal}: stopped at step {step}; checkpoint saved to {path}")
    return step


# ---------------------------------------------------------------- distributed training

class ClusterError(Exception):
    """The cluster failed: a parameter server lost, a step or start-up that never finished."""


def parse_hosts(text, flag):
    """"h1:p1,h2:p2" -> ["h1:p1", "h2:p2"]; raises ValueError naming `flag` on a bad entry."""
    hosts = [h.strip() for h in text.split(",") if h.strip()]
    for host in hosts:
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{flag}: {host!r} is not HOST:PORT")
    if not hosts:
        raise ValueError(f"{flag}: give at least one HOST:PORT")
    if len(set(hosts)) != len(hosts):
        raise ValueError(f"{flag}: a HOST:PORT is listed twice")
    return hosts


def worker_shards(files, task_index, num_workers):
    """This worker's own training files: files[task_index::num_workers].

    Every file goes to exactly one worker, so in one epoch no two workers
    read the same record. Raises DataError when there are fewer files than
    workers (a worker would have nothing to read).
    """
    if len(files) < num_workers:
        raise DataError(f"{os.path.dirname(files[0]) or '.'}: {len(files)} training file(s) for {num_workers} workers; "
                        f"run `python mnist_generateds.py --shards {num_workers}` (or a multiple) first")
    return files[task_index::num_workers]


@contextlib.contextmanager
def deadline(seconds, message):
    """Ends the process with `error: <message>` and status 1 if the block outlasts `seconds`.

    Needed around session creation: TensorFlow's master waits without limit
    for an unreachable task when it creates a session (master.cc,
    DeviceFinder::Wait), and neither operation_timeout_in_ms nor a
    RunOptions time-out ends that wait.
    """
    def expire():
        sys.stdout.flush()
        print(f"error: {message}", file=sys.stderr, flush=True)
        os._exit(1)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def serve_ps(ps_hosts, worker_hosts, task_index, log=print):
    """Run parameter server `task_index` until SIGINT/SIGTERM; returns 0.

    The gRPC server (tf.compat.v1.train.Server) holds the variables that
    replica_device_setter places on this task and serves them from its own
    threads; the main thread only waits for a signal, so that Ctrl-C or
    SIGTERM ends the process normally (server.join() would not return).
    """
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    start_server(cluster, "ps", task_index)
    log(f"ps {task_index}: serving the variables on {ps_hosts[task_index]} (Ctrl-C or SIGTERM to stop)")
    with StopFlag() as stop:
        while not stop.signal:
            time.sleep(PS_POLL_SECS)
    log(f"ps {task_index}: {stop.signal}: stopped")
    return 0


def start_server(cluster, job_name, task_index):
    """This task's tf.compat.v1.train.Server; ClusterError when its port cannot be served."""
    try:
        return tf.train.Server(cluster, job_name=job_name, task_index=task_index)
    except (tf.errors.OpError, ValueError) as e:
        address = cluster.task_address(job_name, task_index)
        raise ClusterError(f"{job_name} {task_index}: cannot serve {address} ({getattr(e, 'message', e)}); "
                           "is the port in use or the host not this machine?") from None


def train_distributed(task_index, ps_hosts, worker_hosts, steps=STEPS, batch_size=BATCH_SIZE,
                      data_dir=mnist_generateds.data_path, model_dir=MODEL_SAVE_PATH, pipeline="fast",
                      sync_replicas=False, startup_timeout=STARTUP_TIMEOUT_SECS, log=print):
    """Worker `task_index` of a between-graph replicated cluster; returns the last global_step it saw.

    Source: TF1's distributed runtime as in its mnist_replica.py example:
    tf.compat.v1.train.Server on a ClusterSpec of ps and worker jobs, the
    graph of build_graph() with its variables on the parameter servers
    (replica_device_setter) and its input pipeline on this worker, which
    reads only its own shards (worker_shards). Updates are asynchronous, or
    with sync_replicas aggregated by SyncReplicasOptimizer over all workers.
    Worker 0 is the chief: it restores the latest checkpoint in model_dir
    or initializes the variables (tf.train.SessionManager.prepare_session),
    starts SyncReplicasOptimizer's chief queue runner, writes checkpoints
    every SAVE_EVERY global steps and at the end, and TensorBoard scalars
    (loss, learning rate) to model_dir/train. The others wait until the variables
    are ready (SessionManager.wait_for_session); a restarted worker rejoins
    the same way. Every worker starts its queue runners under its own
    Coordinator and stops and joins them at the end, as backward() does.
    Stops when global_step reaches `steps` (asynchronous workers may pass it
    by up to one step each) or on SIGINT/SIGTERM. A step that fails with
    UnavailableError or AbortedError is tried again, up to MAX_FAILED_STEPS
    in a row. Raises DataError on bad input and ClusterError when a
    parameter server is lost or start-up takes longer than
    `startup_timeout` seconds.
    """
    num_workers, is_chief = len(worker_hosts), task_index == 0
    me = f"worker {task_index}"
    all_files = mnist_generateds.tfrecord_files(data_dir)
    counts = {f: mnist_generateds.count_records(f) for f in all_files}
    my_files = worker_shards(all_files, task_index, num_workers)
    ckpt = tf.train.latest_checkpoint(model_dir) if is_chief else None

    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = start_server(cluster, "worker", task_index)
    worker_device = f"/job:worker/task:{task_index}"
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device, cluster=cluster)):
        graph = build_graph(batch_size, sum(counts.values()), data_dir, pipeline, my_files,
                            (num_workers, num_workers) if sync_replicas else None)
    with tf.device(worker_device):  # checkpoints are read and written on the chief's disk
        saver = tf.train.Saver()
        init_op = tf.global_variables_initializer()
        local_init_op = tf.local_variables_initializer()
        if sync_replicas:
            optimizer = graph["optimizer"]
            with tf.control_dependencies([local_init_op]):
                local_init_op = optimizer.chief_init_op if is_chief else optimizer.local_step_init_op
            init_tokens_op = optimizer.get_init_tokens_op()
            chief_queue_runner = optimizer.get_chief_queue_runner()
            ready_for_local_init_op = optimizer.ready_for_local_init_op
        else:
            ready_for_local_init_op = tf.report_uninitialized_variables(tf.global_variables())
        ready_op = tf.report_uninitialized_variables()
    if ckpt is not None:
        try:
            mnist_forward.check_checkpoint(ckpt, {v.op.name: v for v in tf.global_variables()})
        except ValueError as e:
            raise DataError(f"{e}; use another --model-dir or delete {model_dir}") from None
    tf.get_default_graph().finalize()

    # Only the parameter servers and this worker take part in this worker's
    # session, so a worker that dies or restarts does not hold up the others.
    config = tf.ConfigProto(device_filters=["/job:ps", worker_device])
    manager = tf.train.SessionManager(local_init_op=local_init_op, ready_op=ready_op,
                                      ready_for_local_init_op=ready_for_local_init_op, recovery_wait_secs=1)
    waiting_for = f"the parameter servers {','.join(ps_hosts)}" + ("" if is_chief else " and the chief (worker 0)")
    log(f"{me} of {num_workers}: waiting for {waiting_for}")
    # wait_for_session gives up by itself after startup_timeout; the deadline
    # is for a session creation that hangs on an unreachable parameter server.
    give_up = startup_timeout + 5
    with deadline(give_up, f"{me}: no session after {give_up:g} s: {waiting_for} did not answer; "
                           "start them, or check --ps_hosts and --worker_hosts"):
        try:
            if is_chief:
                sess = manager.prepare_session(server.target, init_op=init_op, saver=saver,
                                               checkpoint_filename_with_path=ckpt, config=config)
            else:
                sess = manager.wait_for_session(server.target, config=config, max_wait_secs=startup_timeout)
        except tf.errors.DeadlineExceededError:
            raise ClusterError(f"{me}: the chief (worker 0) did not initialize the variables within "
                               f"{startup_timeout:g} s; start it, or check --worker_hosts") from None
        except (tf.errors.UnavailableError, tf.errors.AbortedError) as e:
            raise ClusterError(f"{me}: lost a parameter server while starting ({first_line(e)})") from None

    save_path = os.path.join(model_dir, MODEL_NAME)
    run_options = tf.RunOptions(timeout_in_ms=STEP_TIMEOUT_MS)
    fetches = [graph["train_op"], graph["loss"], graph["step_after"], graph["learning_rate"]]
    writer = tf.summary.FileWriter(os.path.join(model_dir, TRAIN_LOG_DIR)) if is_chief else None
    local_steps = 0
    # The chief's SyncReplicasOptimizer queue runner has a Coordinator of its
    # own: its thread waits in take_grad for gradients that stop coming at the
    # end, so it can only be joined after sess.close() has cancelled that wait.
    sync_coord, sync_threads = tf.train.Coordinator(), []
    try:
        with StopFlag() as stop:
            step = saved_step = sess.run(graph["global_step"], options=run_options)
            start = f"resuming from {ckpt}" if ckpt else "variables initialized" if is_chief else "variables ready"
            log(f"{me}: {start} at global_step {step}; reading {sum(counts[f] for f in my_files)} of "
                f"{sum(counts.values())} records from {', '.join(my_files)}; target global_step {steps}; "
                + ("synchronous updates (SyncReplicasOptimizer)" if sync_replicas else "asynchronous updates"))
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            if sync_replicas and is_chief:
                sess.run(init_tokens_op, options=run_options)
                sync_threads = chief_queue_runner.create_threads(sess, coord=sync_coord, daemon=True, start=True)
            failed_in_a_row = 0
            try:
                while step < steps and not stop.signal and not coord.should_stop():
                    previous = step
                    try:
                        if pipeline == "course":
                            xs, ys = sess.run([graph["img_batch"], graph["label_batch"]], options=run_options)
                            _, loss_value, step, rate = sess.run(
                                fetches, feed_dict={graph["x"]: xs, graph["y_"]: ys}, options=run_options)
                        else:
                            _, loss_value, step, rate = sess.run(fetches, options=run_options)
                    except (tf.errors.UnavailableError, tf.errors.AbortedError) as e:
                        # A busy machine can make gRPC resend a request, which TensorFlow then
                        # aborts as a duplicate: the next step works. A lost parameter server
                        # fails every step, and ends this worker after a few.
                        failed_in_a_row += 1
                        if failed_in_a_row >= MAX_FAILED_STEPS:
                            raise
                        log(f"{me}: step failed ({first_line(e)}); trying again")
                        time.sleep(RETRY_SECS)
                        continue
                    failed_in_a_row = 0
                    local_steps += 1
                    # Other workers move global_step too, so the steps seen here may skip a multiple.
                    if crossed(previous, step, PRINT_EVERY) or local_steps == 1:
                        log("After %d training steps, loss on training batch is %g." % (step, loss_value))
                    if is_chief and crossed(previous, step, SUMMARY_EVERY):
                        writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="loss", simple_value=loss_value),
                                                             tf.Summary.Value(tag="learning_rate", simple_value=rate)]),
                                           step)
                    if is_chief and crossed(saved_step, step, SAVE_EVERY):
                        saved_step = save_distributed(sess, saver, save_path, graph["global_step"])
            except tf.errors.OutOfRangeError as e:
                # The input queue was closed by a failing reader (re-raised by join below),
                # or in sync mode the chief closed the token queue when it finished.
                coord.request_stop(None if sync_replicas else e)
            except tf.errors.CancelledError as e:
                coord.request_stop(e)
            finally:
                # Closing the token queue tells the other workers that synchronous training is over.
                sync_coord.request_stop()
                coord.request_stop()
                try:
                    coord.join(threads, stop_grace_period_secs=5)
                except (tf.errors.UnavailableError, tf.errors.AbortedError):
                    raise
                except tf.errors.OpError as e:
                    raise DataError(f"{', '.join(my_files)}: input pipeline failed: {first_line(e)}") from None
            step = max(step, sess.run(graph["global_step"], options=run_options))
            if is_chief:
                if step != saved_step or ckpt is None:
                    saved_step = save_distributed(sess, saver, save_path, graph["global_step"])
                writer.close()
            if stop.signal:
                log(f"{me}: {stop.signal}: stopped at global_step {step}"
                    + (f"; checkpoint saved to {save_path}-{saved_step}" if is_chief else ""))
            elif step < steps:
                raise ClusterError(f"{me}: training ended at global_step {step}, before the target {steps}"
                                   + (": the chief stopped the synchronous updates" if sync_replicas else ""))
    except tf.errors.DeadlineExceededError:
        failure = ClusterError(f"{me}: no step finished within {STEP_TIMEOUT_MS // 1000} s: a parameter server "
                               f"({','.join(ps_hosts)}) does not answer"
                               + (", or the chief that applies the synchronous updates is gone" if sync_replicas else "")
                               + f"; restart the whole cluster to resume from the latest checkpoint in {model_dir}")
    except (tf.errors.UnavailableError, tf.errors.AbortedError) as e:
        failure = ClusterError(f"{me}: lost a parameter server ({first_line(e)}); restart the whole cluster "
                               f"to resume from the latest checkpoint in {model_dir}")
    except tf.errors.OpError as e:
        failure = ClusterError(f"{me}: training failed ({first_line(e)}); restart the whole cluster "
                               f"to resume from the latest checkpoint in {model_dir}")
    except BaseException as e:
        failure = e
    else:
        failure = None
    # Closing asks every task of the session to drop its part of the graph,
    # and waits without limit for a parameter server that is gone.
    with deadline(CLOSE_TIMEOUT_SECS, str(failure) if failure else f"{me}: the session did not close "
                                                                   f"within {CLOSE_TIMEOUT_SECS} s"):
        sess.close()
    try:
        sync_coord.join(sync_threads, stop_grace_period_secs=CLOSE_TIMEOUT_SECS, ignore_live_threads=True)
    except tf.errors.CancelledError:
        pass  # sess.close() ended the wait for gradients, as intended
    except tf.errors.OpError as e:
        failure = failure or ClusterError(f"{me}: synchronous updates failed ({first_line(e)})")
    if failure is not None:
        raise failure
    log(f"{me}: {local_steps} local steps; global_step {step}")
    return step


def save_distributed(sess, saver, save_path, global_step):
    """Save a checkpoint named for the global_step it holds; returns that step.

    Other workers keep updating while the chief saves, so the step is read
    here rather than taken from the chief's last train op.
    """
    step = sess.run(global_step, options=tf.RunOptions(timeout_in_ms=STEP_TIMEOUT_MS))
    saver.save(sess, save_path, global_step=step)
    return step


def crossed(before, after, every):
    """True when a multiple of `every` lies in (before, after]."""
    return after // every > before // every


def first_line(error):
    """A TensorFlow error's message in one line: where it happened and what, for a one-line report.

    "Graph execution error:\n\nFrom /job:ps/replica:0/task:0:\nSocket closed\n..." becomes
    "/job:ps/replica:0/task:0: Socket closed"; cut to MAX_MESSAGE characters.
    """
    lines = [line.strip() for line in (getattr(error, "message", None) or str(error)).splitlines()]
    lines = [line for line in lines if line and not line.startswith("Graph execution error")]
    if not lines:
        return type(error).__name__
    line = lines[0][len("From "):] + " " + lines[1] if lines[0].startswith("From ") and len(lines) > 1 else lines[0]
    return line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE - 3] + "..."


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=STEPS, help="train until global_step reaches this")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="examples per training step")
    parser.add_argument("--data-dir", default=mnist_generateds.data_path,
                        help="folder holding mnist_train.tfrecords or its shards, or a file pattern such as "
                             "'data/mnist_train-*'")
    parser.add_argument("--model-dir", default=MODEL_SAVE_PATH, help="checkpoint folder (read to resume, written)")
    parser.add_argument("--pipeline", choices=("fast", "course"), default="fast",
                        help="fast: many records per reader op, batches wired into the network; "
                             "course: one record per op, batches fetched and fed back by feed_dict")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    cluster = parser.add_argument_group("distributed training (TensorFlow's gRPC runtime; see mnist_cluster.py)")
    cluster.add_argument("--job_name", "--job-name", choices=("ps", "worker"),
                         help="this process's job: parameter server or worker (none: train on this machine alone)")
    cluster.add_argument("--task_index", "--task-index", type=int, default=0,
                         help="this process's index in its job; worker 0 is the chief")
    cluster.add_argument("--ps_hosts", "--ps-hosts", help="parameter servers, HOST:PORT,HOST:PORT,...")
    cluster.add_argument("--worker_hosts", "--worker-hosts", help="workers, HOST:PORT,HOST:PORT,...")
    cluster.add_argument("--sync_replicas", "--sync-replicas", action="store_true",
                         help="aggregate one gradient per worker per update (SyncReplicasOptimizer) "
                              "instead of asynchronous updates")
    cluster.add_argument("--startup-timeout", type=float, default=STARTUP_TIMEOUT_SECS,
                         help="seconds to wait for the parameter servers and the chief before giving up")
    args = parser.parse_args(argv)
    if args.steps < 0 or args.batch_size < 1:
        parser.error("--steps must be >= 0 and --batch-size >= 1")
    distributed = (args.job_name, args.ps_hosts, args.worker_hosts)
    if any(distributed) and not all(distributed):
        parser.error("--job_name, --ps_hosts and --worker_hosts go together")
    if args.job_name:
        try:
            ps_hosts = parse_hosts(args.ps_hosts, "--ps_hosts")
            worker_hosts = parse_hosts(args.worker_hosts, "--worker_hosts")
        except ValueError as e:
            parser.error(str(e))
        tasks = len(ps_hosts if args.job_name == "ps" else worker_hosts)
        if not 0 <= args.task_index < tasks:
            parser.error(f"--task_index {args.task_index}: the {args.job_name} job has tasks 0 to {tasks - 1}")
    try:
        if args.job_name == "ps":
            return serve_ps(ps_hosts, worker_hosts, args.task_index)
        if args.job_name == "worker":
            train_distributed(args.task_index, ps_hosts, worker_hosts, args.steps, args.batch_size, args.data_dir,
                              args.model_dir, args.pipeline, args.sync_replicas, args.startup_timeout)
        else:
            backward(args.steps, args.batch_size, args.data_dir, args.model_dir, args.pipeline)
    except (DataError, ClusterError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

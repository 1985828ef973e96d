"""Course step 2 on TensorFlow's distributed runtime: parameter servers and workers.

Not run directly: `python mnist_backward.py --job_name ps|worker --task_index I
--ps_hosts H:P,... --worker_hosts H:P,...` lands here, once per task
(mnist_cluster.py starts such a cluster on one machine). Source: TF1's
between-graph replication, as in its mnist_replica.py example:
tf.compat.v1.train.Server on a ClusterSpec of a "ps" and a "worker" job,
mnist_backward.build_graph() with its variables on the parameter servers
(replica_device_setter) and its queue-runner input pipeline on each worker,
which reads only its own shards (mnist_generateds.py --shards N). Worker 0
is the chief: it initializes or restores the variables and writes the
checkpoints and TensorBoard summaries that mnist_test.py reads as usual.
"""
import contextlib
import os
import sys
import threading
import time

from tf_compat import LazyMapping, first_line, tf
import mnist_backward
import mnist_checkpoint
import mnist_forward
import mnist_generateds
from mnist_backward import Interrupted, StopFlag
from mnist_idx import DataError

CLOSE_TIMEOUT_SECS = 10  # closing a session whose parameter server is gone never ends by itself
PS_POLL_SECS = 0.5  # parameter server: how often the main thread looks for a stop signal
MAX_FAILED_STEPS = 3  # this many unreachable-task steps in a row mean a parameter server is gone
MAX_ABORTED_STEPS = 30  # aborted steps (duplicate gRPC requests on a busy machine) tried again in a row
# Step errors tried again: the most in a row, and the word for the log line.
# A busy machine can make gRPC resend a request, which TensorFlow then aborts
# as a duplicate: a later step works. A lost parameter server fails every
# step, and ends the worker after a few.
RETRIED = LazyMapping(lambda: {tf.errors.AbortedError: (MAX_ABORTED_STEPS, "aborted"),
                               tf.errors.UnavailableError: (MAX_FAILED_STEPS, "failed")})
RETRY_SECS = 1  # pause before trying a failed step again


class ClusterError(Exception):
    """The cluster failed: a parameter server lost, a step or start-up that never finished."""


def parse_hosts(text, flag):
    """"h1:p1,h2:p2" -> ["h1:p1", "h2:p2"]; raises ValueError naming `flag` on a bad entry."""
    hosts = [h.strip() for h in (text or "").split(",") if h.strip()]
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

    Needed around session creation and closing: TensorFlow's master waits
    without limit for an unreachable task (master.cc, DeviceFinder::Wait),
    and neither operation_timeout_in_ms nor a RunOptions time-out ends that wait.
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


def start_server(cluster, job_name, task_index):
    """This task's tf.compat.v1.train.Server; ClusterError when its port cannot be served."""
    try:
        return tf.train.Server(cluster, job_name=job_name, task_index=task_index)
    except (tf.errors.OpError, ValueError) as e:
        address = cluster.task_address(job_name, task_index)
        raise ClusterError(f"{job_name} {task_index}: cannot serve {address} ({getattr(e, 'message', e)}); "
                           "is the port in use or the host not this machine?") from None


def serve_ps(cluster, task_index, log=print):
    """Run parameter server `task_index` of `cluster` (a tf.train.ClusterSpec) until SIGINT/SIGTERM.

    The gRPC server holds the variables that replica_device_setter places on
    this task and serves them from its own threads; the main thread only
    waits for a signal, so that Ctrl-C or SIGTERM ends the process normally
    (server.join() would never return). Stopping is a parameter server's
    normal end: returns 0.
    """
    start_server(cluster, "ps", task_index)
    log(f"ps {task_index}: serving the variables on {cluster.task_address('ps', task_index)} "
        "(Ctrl-C or SIGTERM to stop)")
    with StopFlag() as stop:
        while not stop.signal:
            time.sleep(PS_POLL_SECS)
    log(f"ps {task_index}: {stop.signal.name}: stopped")
    return 0


def train_distributed(cluster, task_index, steps=mnist_backward.STEPS, batch_size=mnist_backward.BATCH_SIZE,
                      data_dir=mnist_generateds.data_path, model_dir=mnist_backward.MODEL_SAVE_PATH,
                      pipeline="fast", sync_replicas=False, startup_timeout=mnist_backward.STARTUP_TIMEOUT_SECS,
                      save_every=mnist_backward.SAVE_EVERY, keep=mnist_backward.KEEP_CHECKPOINTS,
                      summary_every=mnist_backward.SUMMARY_EVERY, log=print, net=mnist_forward,
                      learning_rate_base=mnist_backward.LEARNING_RATE_BASE):
    """Worker `task_index` of `cluster` (a tf.train.ClusterSpec); returns the last global_step it saw.

    Builds mnist_backward.build_graph() of `net` (a forward module, trained
    from learning_rate_base) under replica_device_setter, so the
    variables, their moving averages and global_step live on the parameter
    servers, and the input pipeline reads this worker's own shards
    (worker_shards). Updates are asynchronous, or with sync_replicas
    aggregated over all workers by SyncReplicasOptimizer. Worker 0 is the
    chief: it restores the latest checkpoint in model_dir or initializes the
    variables (tf.train.SessionManager.prepare_session), starts
    SyncReplicasOptimizer's chief queue runner, writes a checkpoint each
    time global_step passes a multiple of `save_every` (keeping `keep`) and
    at the end, and the TensorBoard summaries of mnist_backward.backward()
    to model_dir/train. The others wait until the variables are ready
    (SessionManager.wait_for_session); a restarted worker rejoins the same
    way. Every worker starts its queue runners under a Coordinator and stops
    and joins them at the end. Stops when global_step reaches `steps`
    (asynchronous workers may pass it by up to one step each), or on
    SIGINT/SIGTERM, raising Interrupted after the chief has saved. A step
    failing with UnavailableError is tried again up to MAX_FAILED_STEPS
    times in a row, one failing with AbortedError (on a busy machine gRPC
    resends a request, which TensorFlow then aborts as a duplicate) up to
    MAX_ABORTED_STEPS times. Raises DataError on bad input and
    ClusterError when a parameter server is lost or start-up takes longer
    than `startup_timeout` seconds.

    Stages: connect (start_server, build_worker_graph), session and restore
    (chief_checkpoint, open_session), the step loop (train_steps, step_loop,
    run_step), shutdown (cluster_failure, shut_down).
    """
    num_workers, is_chief = cluster.num_tasks("worker"), task_index == 0
    me = f"worker {task_index}"
    counts, _, layout = mnist_backward.train_files_and_examples(data_dir)
    my_files = worker_shards(list(counts), task_index, num_workers)
    if is_chief:
        mnist_backward.prepare_model_dir(model_dir, log)

    # Connect: this worker's server, and the graph with its variables on the parameter servers.
    server = start_server(cluster, "worker", task_index)
    graph = build_worker_graph(cluster, task_index, batch_size, sum(counts.values()), data_dir, pipeline, my_files,
                               sync_replicas, keep, layout, net, learning_rate_base)
    ckpt = chief_checkpoint(model_dir, log, net) if is_chief else None
    tf.get_default_graph().finalize()

    # Session and restore (the chief), or wait for the chief (the others).
    sess = open_session(server, graph, cluster, task_index, ckpt, startup_timeout, log)

    # The step loop, then the shutdown whatever ended it.
    run = dict(me=me, is_chief=is_chief, steps=steps, batch_size=batch_size, pipeline=pipeline,
               sync_replicas=sync_replicas, save_every=save_every, summary_every=summary_every, log=log,
               save_path=os.path.join(model_dir, mnist_backward.MODEL_NAME), model_dir=model_dir, ckpt=ckpt,
               written=set(),  # steps this chief saved: the only checkpoints it may replace or rotate away
               my_files=my_files, records=(sum(counts[f] for f in my_files), sum(counts.values())),
               run_options=tf.RunOptions(timeout_in_ms=mnist_backward.STEP_TIMEOUT_MS))
    writer = tf.summary.FileWriter(os.path.join(model_dir, mnist_backward.TRAIN_LOG_DIR)) if is_chief else None
    # The chief's SyncReplicasOptimizer queue runner has a Coordinator of its
    # own: its thread waits in take_grad for gradients that stop coming at the
    # end, so it can only be joined after sess.close() has cancelled that wait.
    sync_coord, sync_threads = tf.train.Coordinator(), []
    try:
        step, local_steps = train_steps(sess, graph, writer, sync_coord, sync_threads, run)
    except BaseException as e:
        failure = cluster_failure(e, me, ",".join(cluster.job_tasks("ps")), model_dir, sync_replicas)
    else:
        failure = None
    shut_down(sess, sync_coord, sync_threads, failure, me)
    log(f"{me}: {local_steps} local steps; global_step {step}")
    return step


def build_worker_graph(cluster, task_index, batch_size, train_examples, data_dir, pipeline, my_files,
                       sync_replicas, keep, layout=None, net=mnist_forward,
                       learning_rate_base=mnist_backward.LEARNING_RATE_BASE):
    """mnist_backward.build_graph() placed for this worker, plus what its session needs; returns that dict.

    Variables go to the parameter servers (replica_device_setter), the
    input pipeline reads my_files on this worker (layout: see
    mnist_backward.train_files_and_examples). Added keys: saver (keeps
    `keep` checkpoints), init_op, local_init_op, ready_op,
    ready_for_local_init_op (tf.train.SessionManager's), worker_device, and
    with sync_replicas init_tokens_op and chief_queue_runner.
    """
    num_workers, is_chief = cluster.num_tasks("worker"), task_index == 0
    worker_device = f"/job:worker/task:{task_index}"
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device, cluster=cluster)):
        graph = mnist_backward.build_graph(batch_size, train_examples, data_dir, pipeline, my_files,
                                           (num_workers, num_workers) if sync_replicas else None, layout,
                                           net=net, learning_rate_base=learning_rate_base)
    with tf.device(worker_device):  # checkpoints are read and written on the chief's disk
        graph.update(saver=mnist_checkpoint.saver(keep), init_op=tf.global_variables_initializer(),
                     worker_device=worker_device)
        local_init_op = tf.local_variables_initializer()
        if sync_replicas:
            optimizer = graph["optimizer"]
            with tf.control_dependencies([local_init_op]):
                local_init_op = optimizer.chief_init_op if is_chief else optimizer.local_step_init_op
            graph.update(init_tokens_op=optimizer.get_init_tokens_op(),
                         chief_queue_runner=optimizer.get_chief_queue_runner(),
                         ready_for_local_init_op=optimizer.ready_for_local_init_op)
        else:
            graph["ready_for_local_init_op"] = tf.report_uninitialized_variables(tf.global_variables())
        graph.update(local_init_op=local_init_op, ready_op=tf.report_uninitialized_variables())
    return graph


def chief_checkpoint(model_dir, log=print, net=mnist_forward):
    """The checkpoint the chief restores: the newest in model_dir (a prefix), or None to initialize the variables.

    Found and read whole by mnist_backward.resume_checkpoint, then checked
    against the graph just built (mnist_checkpoint.check_variables); raises
    DataError when it is damaged, holds another network than `net`, or
    belongs to another graph.
    """
    ckpt, stored = mnist_backward.resume_checkpoint(model_dir, log)
    if ckpt is not None:
        mnist_forward.check_network(ckpt, stored, net, "TRAIN_SCRIPT")
        try:
            mnist_checkpoint.check_variables(ckpt, stored, {v.op.name: v for v in tf.global_variables()})
        except DataError as e:
            raise DataError(f"{e}; use another --model-dir") from None
    return ckpt


def open_session(server, graph, cluster, task_index, ckpt, startup_timeout, log=print):
    """This worker's tf.Session on the cluster, its variables ready (tf.train.SessionManager).

    The chief restores `ckpt` or runs init_op (prepare_session); the others
    wait until the chief has done so (wait_for_session). Raises ClusterError
    when that takes longer than startup_timeout seconds or a parameter
    server is lost; ends the process (deadline) when session creation hangs
    on an unreachable task.
    """
    is_chief, me = task_index == 0, f"worker {task_index}"
    # Only the parameter servers and this worker take part in this worker's
    # session, so a worker that dies or restarts does not hold up the others.
    config = tf.ConfigProto(device_filters=["/job:ps", graph["worker_device"]])
    manager = tf.train.SessionManager(local_init_op=graph["local_init_op"], ready_op=graph["ready_op"],
                                      ready_for_local_init_op=graph["ready_for_local_init_op"], recovery_wait_secs=1)
    waiting_for = (f"the parameter servers {','.join(cluster.job_tasks('ps'))}"
                   + ("" if is_chief else " and the chief (worker 0)"))
    log(f"{me} of {cluster.num_tasks('worker')}: waiting for {waiting_for}")
    # wait_for_session gives up by itself after startup_timeout; the deadline
    # is for a session creation that hangs on an unreachable parameter server.
    give_up = startup_timeout + 5
    with deadline(give_up, f"{me}: no session after {give_up:g} s: {waiting_for} did not answer; "
                           "start them, or check --ps_hosts and --worker_hosts"):
        try:
            if is_chief:
                return manager.prepare_session(server.target, init_op=graph["init_op"], saver=graph["saver"],
                                               checkpoint_filename_with_path=ckpt, config=config)
            return manager.wait_for_session(server.target, config=config, max_wait_secs=startup_timeout)
        except tf.errors.DeadlineExceededError:
            raise ClusterError(f"{me}: the chief (worker 0) did not initialize the variables within "
                               f"{startup_timeout:g} s; start it, or check --worker_hosts") from None
        except (tf.errors.UnavailableError, tf.errors.AbortedError) as e:
            raise ClusterError(f"{me}: lost a parameter server while starting ({first_line(e)})") from None


def train_steps(sess, graph, writer, sync_coord, sync_threads, run):
    """The step loop, between starting and joining the queue runners; returns (global_step, local steps).

    run: this worker's settings (see train_distributed). The chief also
    starts SyncReplicasOptimizer's queue runner (its threads are appended to
    sync_threads, under sync_coord), and saves the last checkpoint after the
    loop. Raises Interrupted after SIGINT/SIGTERM, ClusterError when
    training ended before the target, TensorFlow's errors as they come.
    """
    me, is_chief, steps = run["me"], run["is_chief"], run["steps"]
    with StopFlag() as stop:
        state = dict(local_steps=0)
        state["step"] = state["saved_step"] = sess.run(graph["global_step"], options=run["run_options"])
        ckpt = run["ckpt"]
        start = f"resuming from {ckpt}" if ckpt else "variables initialized" if is_chief else "variables ready"
        run["log"](f"{me}: {start} at global_step {state['step']}; reading {run['records'][0]} of "
                   f"{run['records'][1]} records from {', '.join(run['my_files'])}; target global_step {steps}; "
                   + ("synchronous updates (SyncReplicasOptimizer)" if run["sync_replicas"] else "asynchronous updates"))
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        if run["sync_replicas"] and is_chief:
            sess.run(graph["init_tokens_op"], options=run["run_options"])
            sync_threads += graph["chief_queue_runner"].create_threads(sess, coord=sync_coord, daemon=True, start=True)
        try:
            step_loop(sess, graph, writer, coord, stop, state, run)
        except tf.errors.OutOfRangeError as e:
            # The input queue was closed by a failing reader (re-raised by join below),
            # or in sync mode the chief closed the token queue when it finished.
            coord.request_stop(None if run["sync_replicas"] else e)
        except tf.errors.CancelledError as e:
            coord.request_stop(e)
        finally:
            # Closing the token queue tells the other workers that synchronous training is over.
            sync_coord.request_stop()
            mnist_generateds.stop_queue_runners(coord, threads, ", ".join(run["my_files"]), passthrough=tuple(RETRIED))
        step = max(state["step"], sess.run(graph["global_step"], options=run["run_options"]))
        saved_step = state["saved_step"]
        if is_chief:
            if step != saved_step or ckpt is None:
                saved_step = save(sess, graph["saver"], run["model_dir"], graph["global_step"], run["written"])
            writer.close()
        if stop.signal:
            raise Interrupted(stop.signal, f"{me}: {stop.signal.name}: stopped at global_step {step}"
                              + (f"; checkpoint saved to {run['save_path']}-{saved_step}" if is_chief else ""))
        if step < steps:
            raise ClusterError(f"{me}: training ended at global_step {step}, before the target {steps}"
                               + (": the chief stopped the synchronous updates" if run["sync_replicas"] else ""))
    return step, state["local_steps"]


def step_loop(sess, graph, writer, coord, stop, state, run):
    """Train until global_step reaches run["steps"], a stop signal, or the Coordinator stops.

    state: {"step", "saved_step", "local_steps"}, updated after each step.
    The chief writes the summaries and a checkpoint each time global_step
    passes a multiple of summary_every or save_every.
    """
    fetches = [graph["train_op"], graph["loss"], graph["step_after"]]
    meter = (time.monotonic(), state["step"])  # (time, global_step) of the previous summary, for examples/s
    in_a_row = {kind: 0 for kind in RETRIED}
    while state["step"] < run["steps"] and not stop.signal and not coord.should_stop():
        previous = state["step"]
        # Other workers move global_step too: the chief summarizes the first
        # of its steps after global_step passes a multiple of summary_every.
        summarize = run["is_chief"] and crossed(meter[1], previous + 1, run["summary_every"])
        out = run_step(sess, graph, fetches + [graph["summary"]] if summarize else fetches, in_a_row, run)
        if out is None:
            continue  # a retried step
        state["local_steps"] += 1
        _, loss_value, step = out[:3]
        state["step"] = step
        if crossed(previous, step, mnist_backward.PRINT_EVERY) or state["local_steps"] == 1:
            run["log"]("After %d training steps, loss on training batch is %g." % (step, loss_value))
        if summarize:
            now = time.monotonic()
            writer.add_summary(out[3], step)
            rate = (step - meter[1]) * run["batch_size"] / max(now - meter[0], 1e-9)  # all workers together
            writer.add_summary(mnist_backward.scalar_summary("examples_per_sec", rate), step)
            meter = (now, step)
        if run["is_chief"] and crossed(state["saved_step"], step, run["save_every"]):
            state["saved_step"] = save(sess, graph["saver"], run["model_dir"], graph["global_step"], run["written"])


def run_step(sess, graph, step_fetches, in_a_row, run):
    """One training step's fetched values, or None when it failed and is to be tried again.

    A step failing with one of RETRIED's errors is tried again up to its
    limit in a row (in_a_row counts them, reset by a step that works); the
    last one is raised.
    """
    try:
        if run["pipeline"] == "course":
            xs, ys = sess.run([graph["img_batch"], graph["label_batch"]], options=run["run_options"])
            out = sess.run(step_fetches, feed_dict={graph["x"]: xs, graph["y_"]: ys}, options=run["run_options"])
        else:
            out = sess.run(step_fetches, options=run["run_options"])
    except tuple(RETRIED) as e:
        kind = next(k for k in RETRIED if isinstance(e, k))
        limit, what = RETRIED[kind]
        in_a_row[kind] += 1
        if in_a_row[kind] >= limit:
            raise
        run["log"](f"{run['me']}: step {what} ({first_line(e)}); trying again")
        time.sleep(RETRY_SECS)
        return None
    for kind in in_a_row:
        in_a_row[kind] = 0
    return out


def cluster_failure(error, me, ps_hosts, model_dir, sync_replicas):
    """The exception a worker ends with for an error of its session: TensorFlow's errors as one-line ClusterErrors."""
    resume = f"restart the whole cluster to resume from the latest checkpoint in {model_dir}"
    if isinstance(error, tf.errors.DeadlineExceededError):
        return ClusterError(f"{me}: no step finished within {mnist_backward.STEP_TIMEOUT_MS // 1000} s: "
                            f"a parameter server ({ps_hosts}) does not answer"
                            + (", or the chief that applies the synchronous updates is gone" if sync_replicas else "")
                            + f"; {resume}")
    if isinstance(error, tf.errors.AbortedError):
        return ClusterError(f"{me}: {MAX_ABORTED_STEPS} steps in a row aborted ({first_line(error)}); the machine "
                            "may be overloaded; start this worker again to rejoin")
    if isinstance(error, tf.errors.UnavailableError):
        return ClusterError(f"{me}: lost a parameter server ({first_line(error)}); {resume}")
    if isinstance(error, tf.errors.OpError):
        return ClusterError(f"{me}: training failed ({first_line(error)}); {resume}")
    return error


def shut_down(sess, sync_coord, sync_threads, failure, me):
    """Close the session and join the chief's sync threads; then raise `failure` (an exception or None)."""
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


def save(sess, saver, model_dir, global_step, written):
    """Save a checkpoint named for the global_step it holds; returns that step.

    Other workers keep updating while the chief saves, so the step is read
    here rather than taken from the chief's last train op. Saved through
    mnist_checkpoint.save, as on one machine: never over a checkpoint of
    another run (written: the steps this chief saved).
    """
    step = sess.run(global_step, options=tf.RunOptions(timeout_in_ms=mnist_backward.STEP_TIMEOUT_MS))
    mnist_checkpoint.save(sess, saver, model_dir, step, written)
    return step


def crossed(before, after, every):
    """True when a multiple of `every` lies in (before, after]."""
    return after // every > before // every


def main(args, parser):
    """Run one cluster task from mnist_backward.py's parsed flags; returns the exit status.

    parser: mnist_backward.py's ArgumentParser, for flag errors (exit 2).
    Exit status 0 when done (a parameter server: when stopped), 1 with a
    one-line error, 128 + signal number when a worker was stopped by
    SIGINT/SIGTERM (after the chief saved a checkpoint).
    """
    missing = [flag for flag, value in (("--job_name", args.job_name), ("--ps_hosts", args.ps_hosts),
                                        ("--worker_hosts", args.worker_hosts)) if not value]
    if missing:
        parser.error(f"--job_name, --ps_hosts and --worker_hosts go together (missing: {', '.join(missing)})")
    try:
        hosts = {"ps": parse_hosts(args.ps_hosts, "--ps_hosts"),
                 "worker": parse_hosts(args.worker_hosts, "--worker_hosts")}
    except ValueError as e:
        parser.error(str(e))
    tasks = len(hosts[args.job_name])
    if not 0 <= args.task_index < tasks:
        parser.error(f"--task_index {args.task_index}: the {args.job_name} job has tasks 0 to {tasks - 1}")
    cluster = tf.train.ClusterSpec(hosts)
    if args.job_name == "ps":
        return mnist_backward.exit_status(lambda: serve_ps(cluster, args.task_index), (ClusterError,))
    return mnist_backward.exit_status(
        lambda: train_distributed(cluster, args.task_index, args.steps, args.batch_size, args.data_dir,
                                  args.model_dir, args.pipeline, args.sync_replicas, args.startup_timeout,
                                  args.save_every, args.keep, args.summary_every, net=args.net,
                                  learning_rate_base=args.learning_rate_base),
        (DataError, ClusterError), who=f"worker {args.task_index}: ")


if __name__ == "__main__":
    import tf_compat
    sys.exit(tf_compat.not_a_script(__file__, "one task of a distributed training, run through mnist_backward.py",
                                    "run mnist_cluster.py (one machine) or mnist_backward.py --job_name ps|worker ..."))

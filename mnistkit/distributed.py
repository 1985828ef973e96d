"""Course step 2 on TensorFlow's distributed runtime: parameter servers and workers.

`python mnist_backward.py --job_name ps|worker --task_index I --ps_hosts H:P,...
--worker_hosts H:P,...` lands here, once per task (mnist_cluster.py starts
such a cluster on one machine). Source: TF1's between-graph replication, as
in its mnist_replica.py example: tf.compat.v1.train.Server on a ClusterSpec
of a "ps" and a "worker" job, the trainer's own graph (mnist_backward.build_graph,
passed in) with its variables on the parameter servers
(replica_device_setter) and its queue-runner input pipeline on each worker,
which reads only its own shards (mnist_generateds.py --shards N). Worker 0
is the chief: it initializes or restores the variables and writes the
checkpoints and TensorBoard summaries that mnist_test.py reads as usual.
The steps run through the trainer's own loop, the same as on one machine
(mnist_backward.train_loop: the trainer's module is passed in), with this
worker's hooks (Worker: who saves, the synchronous updates' threads, which
step errors are tried again).

Reading order: main -> train_distributed: build_worker_graph,
open_session, worker_steps, shut_down.
"""
import contextlib
import dataclasses
import os
import signal
import socket
import sys
import threading
import time

import tf_compat
from tf_compat import LazyMapping, first_line, task_addresses, tf
from . import checkpoints, cli, folders, records, training
from .errors import STOP_SIGNALS, ClusterError, DataError, Interrupted

PROBE_SECS = 1.0  # a connection to a task's address not accepted within this long: nothing listens there
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


def parse_hosts(text, flag):
    """"h1:p1,h2:p2" -> ["h1:p1", "h2:p2"]; raises ValueError naming `flag` on a bad entry, and on an address
    listed twice, however it is spelt (normal_address: localhost:2222 and 127.0.0.1:02222 are 127.0.0.1:2222)."""
    hosts = [h.strip() for h in (text or "").split(",") if h.strip()]
    for host in hosts:
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{flag}: {host!r} is not HOST:PORT")
    if not hosts:
        raise ValueError(f"{flag}: give at least one HOST:PORT")
    seen = set()
    for address in map(normal_address, hosts):
        if address in seen:
            raise ValueError(f"{flag}: {address} is listed twice: give each task its own HOST:PORT")
        seen.add(address)
    return hosts

# The variables that send gRPC through a proxy (gRPC reads the lower-case ones, curl and others the upper-case),
# and the lists of hosts that bypass it: gRPC reads no_grpc_proxy instead of no_proxy when it is set.
PROXY_VARIABLES = ("grpc_proxy", "https_proxy", "http_proxy", "all_proxy", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
NO_PROXY_VARIABLES = ("no_proxy", "NO_PROXY")


def proxy_bypass(hosts, environ):
    """({name: value} to set in the environment, the proxy variable set or None): gRPC reaching `hosts` directly.

    hosts: the cluster's "HOST:PORT" entries; environ: a mapping such as
    os.environ. With a proxy variable set (a company laptop's
    http_proxy), gRPC sends even 127.0.0.1 traffic to the proxy
    (tensorflow/tensorflow#24887), and the tasks never reach each other.
    Each host (without its port) is appended to no_proxy and NO_PROXY, and
    to no_grpc_proxy when that is set, keeping their entries. Nothing to
    set when no proxy variable is set, or the hosts are listed already.
    """
    proxy = next((name for name in PROXY_VARIABLES if environ.get(name)), None)
    if proxy is None:
        return {}, None
    names = sorted({host.rpartition(":")[0].strip("[]") for host in hosts})
    changes = {}
    for variable in NO_PROXY_VARIABLES + (("no_grpc_proxy",) if "no_grpc_proxy" in environ else ()):
        listed = [entry.strip() for entry in environ.get(variable, "").split(",") if entry.strip()]
        missing = [name for name in names if name not in listed]
        if missing:
            changes[variable] = ",".join(listed + missing)
    return changes, proxy


def bypass_proxy(hosts, log=None):
    """Apply proxy_bypass to this process's environment (inherited by the processes it starts); returns the proxy variable or None.

    Must run before the gRPC server or session is created: gRPC reads the
    variables when it opens a channel. log: told once what was set.
    """
    changes, proxy = proxy_bypass(hosts, os.environ)
    os.environ.update(changes)
    if changes and log is not None:
        log(f"{proxy} is set: the cluster's hosts bypass the proxy ({', '.join(f'{k}={v}' for k, v in changes.items())})")
    return proxy


def worker_shards(files, task_index, num_workers):
    """This worker's own training files: files[task_index::num_workers].

    Every file goes to exactly one worker, so in one epoch no two workers
    read the same record. Raises DataError when there are fewer files than
    workers (a worker would have nothing to read).
    """
    if len(files) < num_workers:
        folder = os.path.dirname(files[0]) or "."
        raise DataError(f"{folder}: {len(files)} training file(s) for {num_workers} workers; "
                        f"run `{records.generate_command(folder, '--shards', str(num_workers))}` (or a multiple) first")
    return files[task_index::num_workers]

@contextlib.contextmanager
def deadline(seconds, message):
    """Ends the process with `error: <message>` and status 1 if the block outlasts `seconds` (message: a str, or
    a function returning it, called then).

    Needed around session creation and closing: TensorFlow's master waits
    without limit for an unreachable task (master.cc, DeviceFinder::Wait),
    and neither operation_timeout_in_ms nor a RunOptions time-out ends that wait.
    """
    def expire():
        sys.stdout.flush()
        print(f"error: {message() if callable(message) else message}", file=sys.stderr, flush=True)
        tf_compat.end_at_once(1)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()

@contextlib.contextmanager
def ends_on_signal(message):
    """While the block runs, SIGINT or SIGTERM ends the process at once: `<SIGNAL>: <message>`, status 128 + number.

    Creating a session on a cluster waits inside TensorFlow's C++ code for
    the parameter servers; Python runs a signal's handler only when that
    call returns, which may be the whole start-up time-out later, so a
    Ctrl-C there was held for minutes. Python's own C-level handler writes
    the signal's number to the wakeup fd (signal.set_wakeup_fd) at once;
    a watcher thread reads it and ends the process. Nothing is written
    during session creation, so nothing is left half-done. POSIX main
    thread only; elsewhere the block runs as it is.
    """
    if os.name == "nt" or threading.current_thread() is not threading.main_thread():
        yield
        return
    read, write = os.pipe()
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    done = threading.Event()

    def watch():
        while not done.is_set():
            data = os.read(read, 1)
            if not data or done.is_set():
                return
            if data[0] in STOP_SIGNALS:
                sys.stdout.flush()
                print(f"{signal.Signals(data[0]).name}: {message}", file=sys.stderr, flush=True)
                tf_compat.end_at_once(128 + data[0])

    watcher = threading.Thread(target=watch, name="stop-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        signal.set_wakeup_fd(previous)
        os.close(write)  # the watcher reads the end of the pipe and returns
        watcher.join(timeout=1)
        os.close(read)


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
        f"({cli.STOP_KEYS} to stop)")
    with training.stop_flag() as stop:
        while not stop.signal:
            time.sleep(PS_POLL_SECS)
    log(f"ps {task_index}: shut down by {stop.signal.name}")
    return 0

def sync_optimizer(optimizer, ema, sync_replicas):
    """`optimizer` as a tf.compat.v1.train.SyncReplicasOptimizer that also applies the moving averages `ema`.

    sync_replicas: (replicas_to_aggregate, total_num_replicas). The chief's
    queue runner applies the averaged gradients and then the moving
    averages, each beside its variable (training.AveragesBesideVariables),
    so both advance once per aggregated step, as on one machine.
    """
    replicas_to_aggregate, total_num_replicas = sync_replicas
    return tf.train.SyncReplicasOptimizer(
        optimizer, replicas_to_aggregate=replicas_to_aggregate, total_num_replicas=total_num_replicas,
        variable_averages=training.AveragesBesideVariables(ema), variables_to_average=tf.trainable_variables())


def train_distributed(cluster, task_index, settings, trainer, sync_replicas, startup_timeout):
    """Worker `task_index` of `cluster` (a tf.train.ClusterSpec); returns the last global_step it saw.

    settings: the run's training.Settings; trainer: the trainer script's
    module (mnist_backward), whose build_graph(settings, data,
    sync_replicas) is built here under replica_device_setter, so the variables, their moving
    averages and global_step live on the parameter servers, and the input
    pipeline reads this worker's own shards (worker_shards). Updates are
    asynchronous, or with sync_replicas aggregated over all workers by
    SyncReplicasOptimizer. Worker 0 is the chief: it restores the latest
    checkpoint or initializes the variables, writes the checkpoints and
    training. The others wait until the variables are ready; a restarted
    worker rejoins the same way. Stops when global_step reaches
    settings.steps (asynchronous workers may pass it by up to one step
    each), or on SIGINT/SIGTERM, running the trainer's own step loop
    (trainer.train_loop) with this Worker's hooks, raising Interrupted after the chief has
    saved. Step errors in RETRIED are tried again up to their limits.
    Raises DataError on bad input and ClusterError when a parameter server
    is lost or start-up takes longer than `startup_timeout` seconds.
    """
    num_workers, is_chief, me = cluster.num_tasks("worker"), task_index == 0, f"worker {task_index}"
    data = records.training_data(settings.data_dir, settings.train_file)
    mine = data.for_worker(worker_shards(data.files, task_index, num_workers))
    server = start_server(cluster, "worker", task_index)
    graph, parts = build_worker_graph(cluster, task_index, settings, mine, trainer.build_graph, sync_replicas)
    # Only the chief writes the model folder: it locks it and restores the newest checkpoint (checked against the
    # folder's network and settings and the graph just built), or initializes; the others never save.
    with training.resumed(settings, data.examples, graph.saver, folders.checkpoint_variables(tf.global_variables())) \
            if is_chief else contextlib.nullcontext(training.Resumed(None, None, None)) as resumed:
        ckpt = resumed.prefix
        tf.get_default_graph().finalize()
        with checkpoints.readable_prefix(ckpt) if ckpt else contextlib.nullcontext() as literal:  # Saver.restore globs
            sess = open_session(server, parts, cluster, task_index, literal, startup_timeout, settings.log)
        worker = Worker(me, is_chief, sync_replicas, ckpt, mine, parts)
        try:
            progress = worker_steps(sess, graph, settings, worker, trainer, resumed.saves)
        except BaseException as e:
            gone = ", ".join(silent_tasks(cluster, ("ps",))) if isinstance(e, tf.errors.OpError) else ""
            failure = cluster_failure(e, me, ",".join(cluster.job_tasks("ps")), settings.model_dir, sync_replicas,
                                      gone)
            progress = None
        else:
            failure = None
        shut_down(sess, worker.sync_coord, worker.sync_threads, failure, me)
    settings.log(f"{me}: {progress.local_steps} local steps; global_step {progress.step}")
    return progress.step


@dataclasses.dataclass
class SessionParts:
    """What a worker's session needs beside the training graph (tf.train.SessionManager's ops, the saver)."""
    saver: object
    init_op: object
    local_init_op: object
    ready_op: object
    ready_for_local_init_op: object
    worker_device: str
    init_tokens_op: object = None
    chief_queue_runner: object = None


@dataclasses.dataclass
class Worker:
    """One worker's part in the run, and its hooks in the trainer's step loop (mnist_backward.train_loop).

    me: its name ("worker 1"); is_chief: worker 0, which saves and writes
    summaries; ckpt: the checkpoint the chief resumed from, or None; data:
    its own shards; parts: its session's SessionParts. With sync_replicas
    the chief runs SyncReplicasOptimizer's queue runner under sync_coord.
    """
    me: str
    is_chief: bool
    sync_replicas: bool
    ckpt: object
    data: records.TrainingData
    parts: SessionParts
    sync_coord: object = dataclasses.field(default_factory=lambda: tf.train.Coordinator())
    sync_threads: list = dataclasses.field(default_factory=list)
    retried: dict = dataclasses.field(default_factory=lambda: dict(RETRIED))  # step errors tried again

    @property
    def log_prefix(self):
        return f"{self.me}: "

    def started(self, sess):
        """After the queue runners start: the chief's synchronous updates (their tokens, their queue runner)."""
        if self.sync_replicas and self.is_chief:
            sess.run(self.parts.init_tokens_op, options=tf.RunOptions(timeout_in_ms=training.STEP_TIMEOUT_MS))
            self.sync_threads += self.parts.chief_queue_runner.create_threads(
                sess, coord=self.sync_coord, daemon=True, start=True)

    def closed_queue_error(self, error):
        """What a closed queue in a step (OutOfRangeError, CancelledError) stops the Coordinator with.

        With synchronous updates an OutOfRangeError is the chief closing
        the token queue when it finished: no error. Otherwise the error
        itself (a failing reader's own is re-raised by the join).
        """
        if self.sync_replicas and isinstance(error, tf.errors.OutOfRangeError):
            return None
        return error

    def stopping(self):
        """Before the queue runners are joined: closing the token queue tells the other workers training is over."""
        self.sync_coord.request_stop()


def build_worker_graph(cluster, task_index, settings, data, build_graph, sync_replicas):
    """(training.TrainGraph, SessionParts): build_graph placed for this worker, and what its session needs.

    Variables go to the parameter servers (place_variables), the
    input pipeline reads data.files on this worker. The saver keeps
    settings.keep checkpoints; with sync_replicas the parts hold
    SyncReplicasOptimizer's token and chief queue-runner ops.
    """
    num_workers, is_chief = cluster.num_tasks("worker"), task_index == 0
    worker_device = f"/job:worker/task:{task_index}"
    with place_variables(cluster, worker_device, settings.net.NETWORK):
        graph = build_graph(settings, data, (num_workers, num_workers) if sync_replicas else None)
    with tf.device(worker_device):  # checkpoints are read and written on the chief's disk
        local_init_op = tf.local_variables_initializer()
        sync = {}
        if sync_replicas:
            optimizer = graph.optimizer
            with tf.control_dependencies([local_init_op]):
                local_init_op = optimizer.chief_init_op if is_chief else optimizer.local_step_init_op
            sync = dict(init_tokens_op=optimizer.get_init_tokens_op(),
                        chief_queue_runner=optimizer.get_chief_queue_runner())
            ready_for_local_init_op = optimizer.ready_for_local_init_op
        else:
            ready_for_local_init_op = tf.report_uninitialized_variables(tf.global_variables())
        parts = SessionParts(graph.saver, tf.global_variables_initializer(), local_init_op,
                             tf.report_uninitialized_variables(), ready_for_local_init_op, worker_device, **sync)
    return graph, parts


@contextlib.contextmanager
def place_variables(cluster, worker_device, network):
    """Build a worker's graph with the variables on the parameter servers, each weight read once per step.

    Source: tf.compat.v1.train.replica_device_setter (variables round-robin
    over the ps tasks, every other op on worker_device), and a
    tf.compat.v1.variable_creator_scope that gives each trainable variable
    a caching_device beside the variable itself (see read_beside_variable):
    the forward pass and its L2 term then share one read of it, which
    crosses to the worker once per step, and its moving average reads
    that same value where it lives. With more than one ps task, each
    variable named in network.split (a networks.Network) is created by
    tf.compat.v1.get_variable with fixed_size_partitioner(number of ps
    tasks): one part per parameter server, initialized from the slices of
    the value the network gave it. Checkpoints name it as on one machine
    (tf.train.Saver saves the parts as one variable); see
    folders.checkpoint_variables.
    """
    num_ps = cluster.num_tasks("ps")

    def create(next_creator, **kwargs):
        if kwargs.get("trainable") is False:  # global_step, the moving averages, SyncReplicasOptimizer's counters
            return next_creator(**kwargs)
        if num_ps > 1 and kwargs.get("name") in network.split:
            return split_variable(kwargs["name"], kwargs["initial_value"], num_ps)
        return next_creator(**dict(kwargs, caching_device=read_beside_variable))

    with tf.device(tf.train.replica_device_setter(worker_device=worker_device, cluster=cluster)), \
            tf.variable_creator_scope(create):
        yield


def read_beside_variable(op):
    """The caching_device of a variable on a parameter server: the device of the variable itself.

    A device function (tf.device) for the variable's cached read, whose
    input is the variable's own ReadVariableOp, placed on the variable's
    device. Every use of the variable in a step takes this one read: the
    uses on a worker receive it once, those beside the variable (its
    moving average) take it where it is. An op without inputs (a
    placeholder that a tf.cond's branch captures a value with, while the
    moving average starts) gets no device of its own.
    """
    return op.inputs[0].device if op.inputs else ""


def split_variable(name, initial_value, num_parts):
    """A tf.compat.v1.PartitionedVariable `name` of num_parts parts along axis 0, each with its own cached read.

    initial_value: the full variable's initial value (a float32 tensor, or a
    callable returning one, as tf.Variable takes it); each part starts from
    its slice of it. Source: tf.compat.v1.get_variable with
    tf.compat.v1.fixed_size_partitioner; the parts are `name/part_0`, ...
    """
    initial = initial_value() if callable(initial_value) else tf.convert_to_tensor(initial_value)

    def part_of_initial(shape, dtype=None, partition_info=None):
        return tf.slice(initial, partition_info.var_offset, shape)

    return tf.get_variable(name, shape=initial.shape, dtype=initial.dtype.base_dtype, initializer=part_of_initial,
                           partitioner=tf.fixed_size_partitioner(num_parts), caching_device=read_beside_variable)


def worker_steps(sess, graph, settings, worker, trainer, saves=None):
    """The trainer's own loop (trainer.train_loop) for this worker, then the chief's last save; a training.Progress.

    saves: the chief's saving.RunSaves (training.resumed's); None for the
    other workers, which never save. Raises Interrupted after
    SIGINT/SIGTERM, ClusterError when training ended before the target,
    TensorFlow's errors as they come.
    """
    me = worker.me
    step = int(sess.run(graph.global_step, options=tf.RunOptions(timeout_in_ms=training.STEP_TIMEOUT_MS)))
    start = (f"resuming from {worker.ckpt}" if worker.ckpt else
             "variables initialized" if worker.is_chief else "variables ready")
    settings.log(f"{me}: {start} at global_step {step}; reading {sum(worker.data.counts.values())} of "
                 f"{worker.data.examples} records from {worker.data.where}; target global_step {settings.steps}; "
                 + ("synchronous updates (SyncReplicasOptimizer)" if worker.sync_replicas
                    else "asynchronous updates"))
    with training.running(settings, worker.data, saves, step, worker=worker) as run:
        trainer.train_loop(sess, graph, settings, run)
        step = trainer.save_last(sess, graph, settings, run, worker.ckpt)
        if run.stop.signal:
            saved = f"; checkpoint saved to {saves.prefix(run.progress.saved_step)}" if worker.is_chief else ""
            raise Interrupted(run.stop.signal, f"{me}: {run.stop.signal.name}: stopped at global_step {step}{saved}")
        if step < settings.steps:
            raise ClusterError(f"{me}: training ended at global_step {step}, before the target {settings.steps}"
                               + (": the chief stopped the synchronous updates" if worker.sync_replicas else ""))
    return run.progress


def open_session(server, parts, cluster, task_index, ckpt, startup_timeout, log=print):
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
    config = training.session_config(device_filters=["/job:ps", parts.worker_device])
    manager = tf.train.SessionManager(local_init_op=parts.local_init_op, ready_op=parts.ready_op,
                                      ready_for_local_init_op=parts.ready_for_local_init_op, recovery_wait_secs=1)
    waiting_for = (f"the parameter servers {','.join(cluster.job_tasks('ps'))}"
                   + ("" if is_chief else " and the chief (worker 0)"))
    log(f"{me} of {cluster.num_tasks('worker')}: waiting for {waiting_for}")
    # wait_for_session gives up by itself after startup_timeout; the deadline
    # is for a session creation that hangs on an unreachable parameter server.
    give_up = startup_timeout + 5
    proxy = next((name for name in PROXY_VARIABLES if os.environ.get(name)), None)
    proxied = (f"; {proxy} is set ({os.environ[proxy]}): make sure no_proxy lists these hosts" if proxy else "")
    with deadline(give_up, lambda: f"{me}: no session after {give_up:g} s: "
                                   f"{silent_or(cluster, waiting_for, is_chief)}; start them, or check --ps_hosts "
                                   f"and --worker_hosts{proxied}"), \
            ends_on_signal(f"{me}: stopped while waiting for {waiting_for}; nothing saved"):
        try:
            if is_chief:
                return manager.prepare_session(server.target, init_op=parts.init_op, saver=parts.saver,
                                               checkpoint_filename_with_path=ckpt, config=config)
            return manager.wait_for_session(server.target, config=config, max_wait_secs=startup_timeout)
        except tf.errors.DeadlineExceededError:
            chief = cluster.task_address("worker", 0)
            never = " (it never started: nothing listens there)" if not listening(chief) else ""
            raise ClusterError(f"{me}: the chief (worker 0, {chief}){never} did not initialize the variables within "
                               f"{startup_timeout:g} s; start it, or check --worker_hosts") from None
        except (tf.errors.UnavailableError, tf.errors.AbortedError) as e:
            raise (flags_differ(e, cluster, me)
                   or ClusterError(f"{me}: lost a parameter server while starting ({first_line(e)})"
                                   f"{silent_note(cluster)}")) from None
        except tf.errors.OpError as e:  # e.g. a device the other tasks do not have: their flags differ
            raise (flags_differ(e, cluster, me)
                   or ClusterError(f"{me}: cannot start the session ({first_line(e)}); start every task with "
                                   "the same --ps_hosts and --worker_hosts")) from None


def listening(address, wait=PROBE_SECS):
    """Whether something accepts a TCP connection at HOST:PORT within `wait` seconds (a task that was started)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=wait):
            return True
    except (OSError, ValueError):
        return False


def silent_tasks(cluster, jobs=("ps", "worker")):
    """The tasks of `jobs` nothing listens for, as messages name them: ["ps 1 (127.0.0.1:2223)", ...]."""
    return [f"{job} {index} ({address})" for job in jobs if job in cluster.jobs
            for index, address in enumerate(cluster.job_tasks(job)) if not listening(address)]


def silent_or(cluster, waiting_for, is_chief):
    """What a worker that got no session says of the tasks it waits for (the parameter servers, and the chief when
    it is not the chief): those never started, named with host:port, else that `waiting_for` did not answer."""
    silent = silent_tasks(cluster, ("ps",))
    if not is_chief and not listening(cluster.task_address("worker", 0)):
        silent.append(f"the chief (worker 0, {cluster.task_address('worker', 0)})")
    if silent:
        return f"{', '.join(silent)} never started (nothing listens there)"
    return f"{waiting_for} did not answer"


def silent_note(cluster):
    """"; ps 1 (HOST:PORT) is not there (nothing listens)" for the parameter servers gone, else ""."""
    silent = silent_tasks(cluster, ("ps",))
    return f"; {', '.join(silent)} {'is' if len(silent) == 1 else 'are'} not there (nothing listens)" if silent else ""


def flags_differ(error, cluster, me):
    """A ClusterError when `error` shows another task using other host lists than this one's, else None.

    A task started with other --ps_hosts/--worker_hosts than this one
    reaches for addresses this task's cluster does not have; TensorFlow
    then reports a connection to that address as failed, which otherwise
    reads like a lost parameter server.
    """
    ours = {normal_address(a) for job in cluster.jobs for a in cluster.job_tasks(job)}
    strangers = [a for a in task_addresses(error) if normal_address(a) not in ours]
    if not strangers:
        return None
    return ClusterError(f"{me}: another task of this cluster reached for {strangers[0]}, which is not in "
                        "this task's --ps_hosts or --worker_hosts: the host lists differ between tasks; start every "
                        "task with the same --ps_hosts and --worker_hosts")


def normal_address(address):
    """HOST:PORT with the names of this machine's loopback (localhost, 127.x) written as 127.0.0.1, and the port
    without leading zeros (gRPC reads 02222 as 2222)."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if host in ("localhost", "::1") or host.startswith("127."):
        host = "127.0.0.1"
    return f"{host}:{int(port) if port.isdigit() else port}"


def cluster_failure(error, me, ps_hosts, model_dir, sync_replicas, gone=""):
    """The exception a worker ends with for an error of its session: TensorFlow's errors as one-line ClusterErrors.
    gone: the parameter servers nothing listens for any more (silent_tasks), named when the session lost one."""
    resume = f"restart the whole cluster to resume from the latest checkpoint in {model_dir}"
    if isinstance(error, tf.errors.DeadlineExceededError):
        return ClusterError(f"{me}: no step finished within {training.STEP_TIMEOUT_MS // 1000} s: "
                            f"a parameter server ({gone or ps_hosts}) does not answer"
                            + (", or the chief that applies the synchronous updates is gone" if sync_replicas else "")
                            + f"; {resume}")
    if isinstance(error, tf.errors.AbortedError):
        return ClusterError(f"{me}: {MAX_ABORTED_STEPS} steps in a row aborted ({first_line(error)}); the machine "
                            "may be overloaded; start this worker again to rejoin")
    if isinstance(error, tf.errors.UnavailableError):
        return ClusterError(f"{me}: lost a parameter server{f' {gone}' if gone else ''} ({first_line(error)}); "
                            f"{resume}")
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


def main(args, parser, settings, trainer):
    """Run one cluster task from mnist_backward.py's parsed flags; returns the exit status.

    parser: mnist_backward.py's ArgumentParser, for flag errors (exit 2);
    settings: the trainer's training.Settings; trainer: its module (see train_distributed).
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
    shared = sorted({normal_address(a) for a in hosts["ps"]} & {normal_address(a) for a in hosts["worker"]})
    if shared:
        print(f"error: --ps_hosts and --worker_hosts both name {shared[0]}: two tasks cannot share one address; "
              "give each task its own HOST:PORT", file=sys.stderr)
        return 1
    bypass_proxy(hosts["ps"] + hosts["worker"])  # before TensorFlow's gRPC opens any channel
    cluster = tf.train.ClusterSpec(hosts)
    if args.job_name == "ps":
        return cli.exit_status(lambda: serve_ps(cluster, args.task_index), (ClusterError,))
    return cli.exit_status(
        lambda: train_distributed(cluster, args.task_index, settings, trainer, args.sync_replicas,
                                  args.startup_timeout),
        (DataError, ClusterError),
        interrupted=f"worker {args.task_index}: interrupted before training started; nothing saved")

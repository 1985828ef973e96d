"""Try distributed training on one machine: parameter servers and workers on 127.0.0.1.

  python mnist_generateds.py --shards 2           # one shard (or more) per worker
  python mnist_cluster.py --ps 1 --workers 2 --steps 2000
  python mnist_test.py --once                     # the chief's checkpoints, as usual

Starts `mnist_backward.py --job_name ps|worker ...` (with --net lenet5,
mnist_lenet5_backward.py) once per task, on free
ports of 127.0.0.1, prints each command (the same commands run the cluster
on several machines, with real host names), streams their output prefixed
with `[ps 0]`, `[worker 1]`, ..., waits for the workers and then stops the
parameter servers. Ctrl-C or SIGTERM asks the workers to stop (the chief
saves a checkpoint), then the parameter servers. Flags other than --ps and
--workers go to every worker (see `python mnist_backward.py --help`), checked
here first as the trainer checks them: a mistake is one line before any task starts.
Exit status 0 when every process ended with status 0, 128 + signal number
(130 for Ctrl-C) when stopped by a signal, 1 otherwise.
No scheduler and no transport of our own: the processes talk through
TensorFlow's gRPC runtime; this script only starts, watches and stops them.
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)

import ctypes
import importlib
import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

import mnist_backward
import mnist_generateds
from mnistkit import checkpoints, cli, networks, places, records
from mnistkit.distributed import bypass_proxy, worker_shards
from mnistkit.errors import STOP_SIGNALS, DataError

NETS = {"mlp": "mnist_forward", "lenet5": "mnist_lenet5_forward"}  # --net's short names for the course's networks
HOST = "127.0.0.1"
OWN_PORTS_FROM = 20000  # free_ports draws from here up to the kernel's own range (above the well-known services)
PS_TASKS = 1
WORKER_TASKS = 2
GRACE_SECS = 30  # after a stop request: how long a process may take to save and exit before it is killed
POLL_SECS = 0.2
PR_SET_PDEATHSIG = 1  # prctl option: the kernel signals the child when the launcher dies


def free_ports(count, host=HOST):
    """`count` distinct TCP ports (int) that were free on `host` a moment ago: each bound, then all released.

    On Linux they are drawn at random from below the kernel's own range (/proc/sys/net/ipv4/ip_local_port_range,
    32768-60999 by default), from OWN_PORTS_FROM up: a port there is never given by the kernel to a server on
    port 0 nor to the near end of a connection, so between this pick and the task's bind no other process takes
    it unless it names that very port (one from the kernel's range can go to any new connection meanwhile, and a
    task's probe of a port no task listens on yet could connect to itself). Elsewhere, or when that range leaves
    no room below it, the kernel's own pick (port 0).
    """
    sockets, low, high = [], OWN_PORTS_FROM, own_ports_below()
    draw = random.SystemRandom()
    try:
        while len(sockets) < count:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(s)
            for _ in range(100 if high - low > 100 else 0):  # a port held by a server of another program: another
                try:
                    s.bind((host, draw.randrange(low, high)))
                    break
                except OSError:
                    continue
            else:
                s.bind((host, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def own_ports_below():
    """The lowest port (int) of the range the kernel picks ports from itself (Linux's ip_local_port_range);
    OWN_PORTS_FROM when it cannot be read (not Linux): then free_ports takes the kernel's pick."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return OWN_PORTS_FROM


def task_commands(ps_hosts, worker_hosts, worker_args, python=sys.executable, net="mlp"):
    """[(name, argv)] for every task: ps first, then the workers, worker 0 (the chief) first."""
    cluster = ["--ps_hosts", ",".join(ps_hosts), "--worker_hosts", ",".join(worker_hosts)]
    verbose = ["--verbose"] if "--verbose" in worker_args else []
    trainer = trainer_of(net)
    tasks = [(f"ps {i}", [python, trainer, "--job_name", "ps", "--task_index", str(i), *cluster, *verbose])
             for i in range(len(ps_hosts))]
    tasks += [(f"worker {i}", [python, trainer, "--job_name", "worker", "--task_index", str(i), *cluster, *worker_args])
              for i in range(len(worker_hosts))]
    return tasks


def trainer_of(net):
    """The trainer script (path) every task of --net runs: the train_script its network declares (network_of)."""
    return cli.script_file(network_of(net).train_script)


def network_of(net):
    """The networks.Network --net names: a short name of NETS, or any forward module's name (the network declared
    in it, e.g. one added beside the course on PYTHONPATH). Raises DataError when no such forward module can be
    imported."""
    try:
        return importlib.import_module(NETS.get(net, net)).NETWORK  # its forward module imports no TensorFlow
    except (ImportError, AttributeError):
        raise DataError(f"--net {net}: no such network; give mlp, lenet5 or a forward module's name") from None


def _die_with_parent():
    """In the child: get SIGTERM if the launcher dies, even by SIGKILL, so no task is left running (Linux)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _stream(pipe, prefix, out, lock):
    """Copy a child's output to `out` line by line, each line prefixed."""
    for line in pipe:
        with lock:
            out.write(prefix + line)
            out.flush()
    pipe.close()


class Cluster:
    """The task processes of one cluster, started together and stopped in order (workers, then ps)."""

    def __init__(self, tasks, out=sys.stdout, err=sys.stderr, cwd=None):
        self.procs = {}
        # Lines reach us as they are printed, in UTF-8 whatever the locale's encoding (GBK on Chinese Windows).
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
        if os.name == "nt":  # its own process group, so that CTRL_BREAK_EVENT reaches only the task
            options = dict(creationflags=subprocess.CREATE_NEW_PROCESS_GROUP)
        else:  # its own session, so that the terminal's Ctrl-C reaches the launcher only
            options = dict(start_new_session=True,
                           preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        # All processes are forked before any reader thread exists, as preexec_fn requires.
        for name, argv in tasks:
            self.procs[name] = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                encoding="utf-8", errors="backslashreplace", cwd=cwd, env=env,
                                                **options)
        lock = threading.Lock()
        self.readers = []
        for name, proc in self.procs.items():
            for pipe, stream in ((proc.stdout, out), (proc.stderr, err)):
                reader = threading.Thread(target=_stream, args=(pipe, f"[{name}] ", stream, lock), daemon=True)
                reader.start()
                self.readers.append(reader)

    def running(self, job):
        """Names of the tasks of `job` ("ps" or "worker") still running."""
        return [name for name, proc in self.procs.items() if name.startswith(job) and proc.poll() is None]

    def request_stop(self, job):
        """Ask every running task of `job` to stop as Ctrl-C would: the chief saves a checkpoint first.

        SIGTERM on POSIX; on Windows, where SIGTERM would end the process at
        once (TerminateProcess), CTRL_BREAK_EVENT to the task's process group,
        which the task takes as SIGBREAK.
        """
        for name in self.running(job):
            self.procs[name].send_signal(signal.CTRL_BREAK_EVENT if os.name == "nt" else signal.SIGTERM)

    def kill(self, job):
        """End every running task of `job` at once (Popen.kill: SIGKILL on POSIX, TerminateProcess on Windows)."""
        for name in self.running(job):
            self.procs[name].kill()

    def stop(self, job, grace=GRACE_SECS):
        """request_stop every running task of `job`, wait up to `grace` seconds, then kill what is left."""
        self.request_stop(job)
        end = time.monotonic() + grace
        while self.running(job) and time.monotonic() < end:
            time.sleep(POLL_SECS)
        self.kill(job)
        for name, proc in self.procs.items():
            if name.startswith(job):
                proc.wait()

    def finish(self):
        """Wait for the readers to drain; returns {name: exit status}."""
        for reader in self.readers:
            reader.join(timeout=5)
        return {name: proc.returncode for name, proc in self.procs.items()}


def run_cluster(num_ps, num_workers, worker_args, log=print, net="mlp"):
    """Start a cluster on 127.0.0.1, wait for its workers, then stop its parameter servers.

    Returns ({task name: exit status}, the first stop signal's number or
    None). SIGINT/SIGTERM during the run stop the
    workers first (SIGTERM, so the chief saves a checkpoint; SIGKILL after
    GRACE_SECS), then the parameter servers; a second Ctrl-C kills the
    workers at once.
    """
    ports = free_ports(num_ps + num_workers)
    ps_hosts = [f"{HOST}:{p}" for p in ports[:num_ps]]
    worker_hosts = [f"{HOST}:{p}" for p in ports[num_ps:]]
    tasks = task_commands(ps_hosts, worker_hosts, worker_args, net=net)
    bypass_proxy(ps_hosts + worker_hosts, log)  # the tasks inherit it, before their gRPC starts
    for name, argv in tasks:
        log(f"{name}: {shlex.join(argv)}")
    requests = []
    previous = {sig: signal.signal(sig, lambda signum, frame: requests.append(signum)) for sig in STOP_SIGNALS}
    cluster = None
    try:
        cluster = Cluster(tasks)
        kill_at = None
        while cluster.running("worker"):
            if requests and kill_at is None:
                log(f"{signal.Signals(requests[0]).name}: stopping the workers, then the parameter servers")
                cluster.request_stop("worker")
                kill_at = time.monotonic() + GRACE_SECS
            if kill_at is not None and (time.monotonic() > kill_at or requests.count(signal.SIGINT) > 1):
                cluster.kill("worker")
            time.sleep(POLL_SECS)
        if not requests:
            log("the workers are done; stopping the parameter servers")
        cluster.stop("ps")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if cluster is not None:
            for proc in cluster.procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    return cluster.finish(), (requests[0] if requests else None)


def networks_help():
    """--net's help: the course's two networks with their trainers (and LeNet-5's checkpoint folder), read from
    their declarations; imports no TensorFlow."""
    mlp, lenet5 = (importlib.import_module(NETS[net]).NETWORK for net in ("mlp", "lenet5"))
    lenet5_dir = importlib.import_module(os.path.splitext(lenet5.train_script)[0]).MODEL_SAVE_PATH
    return (f"the network: mlp, {mlp.name} ({mlp.train_script}); lenet5, {lenet5.name} ({lenet5.train_script}, "
            f"checkpoints in {lenet5_dir}); or a forward module's name, whose declared trainer every task runs")


# Each option of the launcher once (cli.Options, as mnist_backward.OPTIONS): flag, default, help and bounds.
Option = cli.ScriptOption
OPTIONS = cli.Options([
    Option("ps", PS_TASKS, "number of parameter servers (2 or more split the largest weights among them)", minimum=1,
           constant="PS_TASKS"),
    Option("workers", WORKER_TASKS, "number of workers (worker 0 is the chief)", minimum=1, constant="WORKER_TASKS"),
    Option("net", "mlp", networks_help()),
])


def check_worker_flags(worker_args, trainer, launcher):
    """Check the flags that go to every worker as their trainer (the script at path `trainer`) will, before any task
    starts: its parser and its options' bounds (mnist_backward.OPTIONS), each mistake one line through the launcher's
    parser's error (exit status 2), not once per worker; a mistyped flag is matched with the launcher's options too
    (--worker: did you mean --workers?). Raises DataError when the trainer cannot be imported. Returns the
    workers' parsed options (mnist_backward.OPTIONS' values), with `typo`: the trainer's refusal of a --model-dir
    mistyped from a folder beside it (checkpoints.new_folder_typo: bad input, exit 1, said by main), else false."""
    try:
        constants = importlib.import_module(os.path.splitext(os.path.basename(trainer))[0])  # its defaults
    except ImportError as e:
        raise DataError(f"{trainer}: the network's trainer cannot be imported ({e})") from None
    workers = mnist_backward.build_parser(constants=constants)
    workers.error = launcher.error  # its mistakes are the launcher's command line's
    workers.also_known = (launcher,)
    given = mnist_backward.OPTIONS.check(workers.parse_args(worker_args), constants, launcher.error)
    given.typo = ("model_dir" in mnist_backward.OPTIONS.typed(workers, worker_args)
                  and checkpoints.new_folder_typo(given.model_dir))  # `--model-dir modle` by model/: main refuses it
    return given


def build_parser():
    """The command line's argparse parser (OPTIONS' flags, --verbose); building it imports no TensorFlow (fast
    --help and flag errors). The flags it does not know go to every worker."""
    parser = cli.new_parser(__doc__, epilog="Other flags go to every worker.")
    OPTIONS.add_to(parser, sys.modules[__name__])
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines (in every task)")
    return parser


def main(argv=None):
    """The command line of mnist_cluster.py: run_cluster() with the flags' values; returns the exit status."""
    parser = build_parser()
    args, worker_args = parser.parse_known_args(argv)
    OPTIONS.check(args, sys.modules[__name__], parser.error)
    try:
        given = check_worker_flags(worker_args, trainer_of(args.net), parser)
    except DataError as e:
        parser.error(str(e))
    if given.typo:
        return cli.refused(given.typo)  # bad input (exit 1), as the trainer says it
    into_data = checkpoints.into_data(given.model_dir, networks.default_folder(network_of(args.net)))
    if into_data:  # `--model-dir data`: as the trainer says it, before any task starts
        return cli.refused(into_data)
    # Another network's --model-dir (told by its record), training records not there, or fewer training files than
    # workers (each reads its own shards): said as a worker says it (exit 1), before any task starts, where it took
    # the tasks' start (~10 s)
    status = cli.exit_status(lambda: (
        checkpoints.recorded_elsewhere(given.model_dir, network_of(args.net), "train_script",
                                       mnist_backward.MODEL_NAME),
        places.refuse_part(given.model_dir),
        worker_shards(records.tfrecord_files(given.data_dir, name=mnist_generateds.tfRecord_train), 0, args.workers)))
    if status:
        return status
    if args.verbose:
        worker_args.append("--verbose")
    statuses, stopped_by = run_cluster(args.ps, args.workers, worker_args, net=args.net)
    print("exit status: " + ", ".join(f"{name}: {code}" for name, code in statuses.items()))
    if stopped_by is not None:
        return 128 + stopped_by
    return 0 if all(code == 0 for code in statuses.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

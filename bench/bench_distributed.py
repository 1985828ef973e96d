"""Benchmark: distributed training (1 ps + 1, 2, 3 workers on 127.0.0.1) against one machine.

  python bench/bench_distributed.py                    # 5,000 global steps per run
  python bench/bench_distributed.py --steps 50000 --workers 2   # the course's full schedule

For one machine (mnist_backward.py) and for each worker count (mnist_cluster.py's
processes, asynchronous unless --sync), trains on the same records from scratch
to the same global_step and prints, side by side: global steps per second
(measured between the first and the last loss line, so start-up is left out),
the ratio to one machine, and the test accuracy of the final checkpoint.
Training data: the MNIST sample bundled in data/mnist_sample (8,000 digits);
test data: the official MNIST test set (10,000 digits) from ../shared/data/mnist
when present, else the sample's 2,000 test digits.
All processes share this machine's cores, so more workers cannot mean more
steps per second here: the table shows the cost of the gRPC runtime, not a
speed-up, which needs more machines.

  python bench/bench_distributed.py --bytes            # what a global step moves over the network

With --bytes it measures instead, for both networks and 1 and 2 parameter
servers (one worker, asynchronous): the bytes one global step moves, from
this machine's loopback counters (/proc/net/dev, `lo`, received bytes; the
difference between a long and a short run, so that start-up and the last
save cancel out), next to the size of the network's weights, and the same
from the byte counts of the parameter servers' own connections (`ss -tinp`),
which with one worker carry all of a step's traffic, and each parameter
server's share of them. Other programs using the loopback at the same time
add to its counters, not to the connections': where the two columns differ,
the machine was not quiet.
"""
import contextlib
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import mnist_cluster  # noqa: E402  (after the path is set)
import mnistkit.idx  # noqa: E402
from mnistkit import cli  # noqa: E402

SHARED_MNIST = os.path.join(ROOT, "..", "shared", "data", "mnist")
STEPS = 5000
WORKER_COUNTS = "1,2,3"
LOSS_LINE = re.compile(r"After (\d+) training steps, loss on training batch is")


def prepare(work, shards, log=print):
    """Generate the sharded training records and the test records in work/data; returns the test set's name."""
    idx = os.path.join(work, "idx")
    os.makedirs(idx)
    test_dir = SHARED_MNIST if os.path.exists(os.path.join(SHARED_MNIST, "t10k-images-idx3-ubyte.gz")) \
        else mnistkit.idx.BUNDLED_DIR
    for split, folder in (("train", mnistkit.idx.BUNDLED_DIR), ("test", test_dir)):
        for name in mnistkit.idx.IDX_FILES[split]:
            os.symlink(os.path.abspath(os.path.join(folder, name)), os.path.join(idx, name))
    subprocess.run([sys.executable, os.path.join(ROOT, "mnist_generateds.py"), "--idx-dir", idx,
                    "--shards", str(shards)], cwd=work, check=True, capture_output=True, timeout=900)
    return "official MNIST test set" if test_dir == SHARED_MNIST else "bundled sample's test split"


class TimedLines:
    """A file-like sink that stamps each line of output with its arrival time."""

    def __init__(self, echo=False):
        self.lines, self.echo, self.lock = [], echo, threading.Lock()

    def write(self, text):
        with self.lock:
            for line in text.splitlines():
                self.lines.append((time.monotonic(), line))
                if self.echo:
                    print(line, flush=True)

    def flush(self):
        pass

    def training_seconds(self):
        """Seconds from the chief's first step to its end (its "variables initialized" and "local steps" lines)."""
        start = next(t for t, line in self.lines if "variables initialized at global_step" in line)
        end = next(t for t, line in self.lines if re.search(r"worker 0: \d+ local steps", line))
        return end - start

    def rate(self):
        """Global steps per second between the first and the last loss line seen."""
        points = [(t, int(m.group(1))) for t, line in self.lines for m in [LOSS_LINE.search(line)] if m]
        points = [p for p in points if p[1] > 1]  # the first step carries graph start-up
        (t0, s0), (t1, s1) = min(points, key=lambda p: p[0]), max(points, key=lambda p: p[1])
        return (s1 - s0) / (t1 - t0) if t1 > t0 else float("nan")


def run_single(work, steps, echo):
    """One machine: mnist_backward.py; returns (steps/s, model dir)."""
    model = os.path.join(work, "model_single")
    sink = TimedLines(echo)
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_backward.py"), "--steps", str(steps),
                             "--model-dir", model], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, encoding="utf-8", errors="replace", env=dict(os.environ, PYTHONUNBUFFERED="1"))
    for line in proc.stdout:
        sink.write(line)
    if proc.wait() != 0:
        raise SystemExit("error: single-machine run failed:\n" + "\n".join(l for _, l in sink.lines))
    return sink.rate(), model


def run_cluster(work, workers, steps, sync, echo):
    """1 ps + `workers` workers through mnist_cluster's Cluster; returns (steps/s, model dir)."""
    model = os.path.join(work, f"model_{workers}{'_sync' if sync else ''}")
    ports = mnist_cluster.free_ports(1 + workers)
    ps_hosts, worker_hosts = [f"127.0.0.1:{ports[0]}"], [f"127.0.0.1:{p}" for p in ports[1:]]
    args = ["--steps", str(steps), "--model-dir", model] + (["--sync_replicas"] if sync else [])
    sink = TimedLines(echo)
    cluster = mnist_cluster.Cluster(mnist_cluster.task_commands(ps_hosts, worker_hosts, args),
                                    out=sink, err=sink, cwd=work)
    while cluster.running("worker"):
        time.sleep(0.5)
    cluster.stop("ps")
    statuses = cluster.finish()
    if any(statuses.values()):
        raise SystemExit(f"error: cluster run failed {statuses}:\n" + "\n".join(l for _, l in sink.lines))
    return sink.rate(), model


def accuracy(work, model):
    """(global_step, test accuracy) of the model folder's latest checkpoint, by mnist_test.py --once."""
    result = subprocess.run([sys.executable, os.path.join(ROOT, "mnist_test.py"), "--once", "--model-dir", model],
                            cwd=work, capture_output=True, text=True,
                            encoding="utf-8", errors="replace", timeout=600, check=True)
    step, value = re.search(r"After (\d+) training steps, test accuracy = ([0-9.]+)", result.stdout).groups()
    return int(step), float(value)


BYTES_STEPS = {"mlp": (100, 400), "lenet5": (20, 100)}  # --bytes: global steps of the short and the long run
SS_POLL_SECS = 0.1


def loopback_bytes():
    """Bytes received on the loopback interface so far (/proc/net/dev): every byte sent on it is received once."""
    with open("/proc/net/dev", encoding="ascii") as f:
        for line in f:
            name, _, fields = line.partition(":")
            if name.strip() == "lo":
                return int(fields.split()[0])
    raise SystemExit("error: /proc/net/dev has no loopback interface lo (--bytes needs Linux)")


def connection_bytes(pids):
    """{(pid, local address, peer address): bytes sent + received} of the TCP connections of the processes `pids`.

    From `ss -tinp`: each process's own end of each connection, those it
    serves (a worker reading a weight from a parameter server) and those it
    opened (a parameter server fetching a gradient from a worker: in
    TensorFlow's runtime the receiving task asks for each tensor).
    """
    try:
        out = subprocess.run(["ss", "-tinpH", "state", "established"], capture_output=True, text=True,
                             encoding="utf-8", errors="replace",
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"error: ss -tinp: {e} (--bytes needs ss, from iproute2)") from None
    found, socket = {}, None
    for line in out.splitlines():
        if not line[:1].isspace():
            owner = re.search(r"pid=(\d+)", line)
            fields = line.split("users:")[0].split()
            socket = (int(owner.group(1)), *fields[-2:]) if owner and int(owner.group(1)) in pids else None
        elif socket is not None:
            counts = dict(re.findall(r"\b(bytes_sent|bytes_received):(\d+)", line))
            found[socket] = sum(int(v) for v in counts.values())
    return found


def weights_bytes(net):
    """The bytes of a network's trainable variables (float32), from its forward graph."""
    from tf_compat import tf
    import mnist_forward
    import mnist_lenet5_forward
    module = {"mlp": mnist_forward, "lenet5": mnist_lenet5_forward}[net]
    with tf.Graph().as_default():
        module.forward(tf.placeholder(tf.float32, [None, module.INPUT_NODE]), None)
        return sum(v.shape.num_elements() * v.dtype.size for v in tf.trainable_variables())


def traffic(work, net, num_ps, steps, echo, shaped_rate=None):
    """1 worker + num_ps ps of `net` trained from scratch to `steps`.

    Returns (loopback bytes, [bytes of each ps's connections], the seconds
    of its training steps: TimedLines.training_seconds). shaped_rate: the traffic between the
    tasks limited to this rate (tc's syntax, e.g. "200mbit"; see shaped).
    """
    ports = mnist_cluster.free_ports(num_ps + 1)
    ps_hosts, worker_hosts = [f"127.0.0.1:{p}" for p in ports[:num_ps]], [f"127.0.0.1:{ports[-1]}"]
    args = ["--steps", str(steps), "--save-every", str(10 * steps),
            "--model-dir", os.path.join(work, f"model_{net}_{num_ps}ps_{steps}")]
    sink, seen = TimedLines(echo), {}
    with shaped(ports, shaped_rate):
        before = loopback_bytes()
        cluster = mnist_cluster.Cluster(mnist_cluster.task_commands(ps_hosts, worker_hosts, args, net=net),
                                        out=sink, err=sink, cwd=work)
        ps_pids = [cluster.procs[f"ps {i}"].pid for i in range(num_ps)]
        while cluster.running("worker"):
            seen.update(connection_bytes(set(ps_pids)))  # the counters of a connection only grow
            time.sleep(SS_POLL_SECS)
        cluster.stop("ps")
    after = loopback_bytes()
    if any(cluster.finish().values()):
        raise SystemExit("error: cluster run failed:\n" + "\n".join(l for _, l in sink.lines))
    per_ps = [sum(b for (owner, *_), b in seen.items() if owner == pid) for pid in ps_pids]
    return after - before, per_ps, sink.training_seconds()


@contextlib.contextmanager
def shaped(ports, rate):
    """The loopback traffic to and from `ports` limited to `rate` (tc syntax: "200mbit") inside the block.

    An htb queueing discipline on lo: one class of that rate for the
    packets from or to those ports, whichever way they go (so the traffic
    in both directions shares one link, as the model in
    docs/distributed.md counts it), and every other packet in a class of
    100 Gbit/s. Needs root and tc (iproute2); removed on the way out.
    Without a rate, does nothing.
    """
    if rate is None:
        yield
        return
    commands = [["qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "10"],
                ["class", "add", "dev", "lo", "parent", "1:", "classid", "1:10", "htb", "rate", "100gbit"],
                ["class", "add", "dev", "lo", "parent", "1:", "classid", "1:20", "htb", "rate", rate, "ceil", rate]]
    commands += [["filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip",
                  end, str(port), "0xffff", "flowid", "1:20"] for port in ports for end in ("sport", "dport")]
    try:
        for command in commands:
            done = subprocess.run(["tc", *command], capture_output=True, text=True, encoding="utf-8", errors="replace")
            if done.returncode:
                raise SystemExit(f"error: tc {' '.join(command)}: {done.stderr.strip()} (shaping needs root and tc)")
        yield
    finally:
        subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True)


def bytes_table(work, echo):
    """Print the bytes one global step moves, for each network and 1 and 2 parameter servers."""
    print(f"{'':<19} {'weights':>8} {'MB per global step':>29} {'x weights':>10}", flush=True)
    print(f"{'network':<11} {'ps':>7} {'MB':>8} {'loopback':>14} {'ps connections':>14} {'loopback':>10} "
          f"{'each ps':>12}", flush=True)
    for net, (short, long) in BYTES_STEPS.items():
        weights = weights_bytes(net)
        for num_ps in (1, 2):
            (lo_short, ps_short, _), (lo_long, per_ps, _) = (traffic(work, net, num_ps, s, echo)
                                                             for s in (short, long))
            per_step = (lo_long - lo_short) / (long - short)
            ps_per_step = (sum(per_ps) - sum(ps_short)) / (long - short)
            shares = "/".join(f"{b / sum(per_ps):.0%}" for b in per_ps) if sum(per_ps) else "-"
            print(f"{net:<11} {num_ps:>7} {weights / 1e6:>8.2f} {per_step / 1e6:>14.2f} {ps_per_step / 1e6:>14.2f} "
                  f"{per_step / weights:>10.2f} {shares:>12}", flush=True)


SHAPED_STEPS = {None: 1000, "shaped": 200}  # --shaped: global steps of the unshaped and the shaped run


def shaped_check(work, rate, echo):
    """The model of docs/distributed.md against a link of `rate`: the 784-500-10 network, 1 ps + 1 worker.

    Measures the bytes per global step B (as --bytes does) and the
    unshaped rate r0 (global steps/s over the chief's steps), then the rate
    with the link shaped to L bytes/s, and prints it beside the model's
    1 / (1/r0 + B/L): one worker reads, computes and sends back in turn, so
    its link adds B/L to every step.
    """
    link = tc_rate_bytes(rate)
    short, long = BYTES_STEPS["mlp"]
    (lo_short, _, _), (lo_long, _, _) = (traffic(work, "mlp", 1, s, echo) for s in (short, long))
    per_step = (lo_long - lo_short) / (long - short)
    rates = {}
    for key, steps in SHAPED_STEPS.items():
        rates[key] = steps / traffic(work, "mlp", 1, steps, echo, rate if key else None)[2]
    r0, measured = rates[None], rates["shaped"]
    model = 1 / (1 / r0 + per_step / link)
    print(f"784-500-10, 1 ps + 1 worker: {per_step / 1e6:.2f} MB per global step; unshaped {r0:.1f} global steps/s; "
          f"link shaped to {rate} ({link / 1e6:.1f} MB/s): measured {measured:.2f} global steps/s, "
          f"model {model:.2f} ({measured / model:.2f}x the model)", flush=True)


def tc_rate_bytes(rate):
    """Bytes per second of a tc rate such as "200mbit" or "1gbit" (tc's units: powers of 1000, bits)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", rate.lower())
    if not match:
        raise SystemExit(f"error: --shaped {rate}: give a rate such as 200mbit or 1gbit")
    return float(match.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[match.group(2)] / 8


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--steps", type=int, default=STEPS, help="global steps per run (at least 2,000)")
    parser.add_argument("--workers", default=WORKER_COUNTS, help="worker counts to run, comma-separated")
    parser.add_argument("--sync", action="store_true", help="synchronous updates (SyncReplicasOptimizer)")
    parser.add_argument("--no-single", action="store_true", help="skip the one-machine baseline")
    parser.add_argument("--echo", action="store_true", help="print the runs' own output")
    parser.add_argument("--keep", help="keep the work folder here instead of a temporary one")
    parser.add_argument("--bytes", action="store_true",
                        help="measure the bytes per global step of both networks with 1 and 2 ps instead of speed")
    parser.add_argument("--shaped", metavar="RATE",
                        help="check the speed model of docs/distributed.md with the cluster's loopback traffic "
                             "shaped to RATE (e.g. 200mbit; needs root and tc)")
    args = parser.parse_args(argv)
    if args.bytes or args.shaped:
        work = args.keep or tempfile.mkdtemp(prefix="bench_distributed.")
        os.makedirs(work, exist_ok=True)
        try:
            prepare(work, 1)
            if args.shaped:
                tc_rate_bytes(args.shaped)  # a bad rate fails before the runs
                shaped_check(work, args.shaped, args.echo)
            if args.bytes:
                print(f"{os.cpu_count()} CPUs; 1 worker, asynchronous; bytes per global step from the loopback "
                      f"counters ({', '.join(f'{n}: runs of {a} and {b} steps' for n, (a, b) in BYTES_STEPS.items())})",
                      flush=True)
                bytes_table(work, args.echo)
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
        return
    counts = [int(c) for c in args.workers.split(",")]
    shards = 1
    for c in counts:  # one shard count that every worker count divides
        shards = shards * c // math.gcd(shards, c)
    work = args.keep or tempfile.mkdtemp(prefix="bench_distributed.")
    os.makedirs(work, exist_ok=True)
    try:
        test_set = prepare(work, shards)
        print(f"{os.cpu_count()} CPUs; {args.steps} global steps per run, batch 200; 8,000 training records "
              f"in {shards} shard(s); accuracy on the {test_set}; "
              + ("synchronous" if args.sync else "asynchronous") + " updates", flush=True)
        print(f"{'run':<22} {'global steps/s':>15} {'vs 1 machine':>13} {'final step':>11} {'accuracy':>9}", flush=True)
        baseline = None
        runs = ([] if args.no_single else [("1 machine", None)]) + [(f"1 ps + {c} worker(s)", c) for c in counts]
        for name, count in runs:
            if count is None:
                rate, model = run_single(work, args.steps, args.echo)
                baseline = rate
            else:
                rate, model = run_cluster(work, count, args.steps, args.sync, args.echo)
            step, value = accuracy(work, model)
            ratio = f"{rate / baseline:.2f}x" if baseline else "-"
            print(f"{name:<22} {rate:>15.1f} {ratio:>13} {step:>11} {value:>9.4f}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

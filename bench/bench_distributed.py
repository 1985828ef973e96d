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
"""
import argparse
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
                            text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
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
                            cwd=work, capture_output=True, text=True, timeout=600, check=True)
    step, value = re.search(r"After (\d+) training steps, test accuracy = ([0-9.]+)", result.stdout).groups()
    return int(step), float(value)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=STEPS, help="global steps per run (at least 2,000)")
    parser.add_argument("--workers", default=WORKER_COUNTS, help="worker counts to run, comma-separated")
    parser.add_argument("--sync", action="store_true", help="synchronous updates (SyncReplicasOptimizer)")
    parser.add_argument("--no-single", action="store_true", help="skip the one-machine baseline")
    parser.add_argument("--echo", action="store_true", help="print the runs' own output")
    parser.add_argument("--keep", help="keep the work folder here instead of a temporary one")
    args = parser.parse_args(argv)
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

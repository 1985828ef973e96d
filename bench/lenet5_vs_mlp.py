"""Benchmark: LeNet-5 against the 784-500-10 network at the same number of training examples seen.

Usage (from the repository root):
  python bench/lenet5_vs_mlp.py                       the bundled sample, 120,000 examples, 3 pairs of runs
  python bench/lenet5_vs_mlp.py --examples 60000 --pairs 6
  python bench/lenet5_vs_mlp.py --idx-dir DIR         the 4 MNIST-format IDX files in DIR (full MNIST, Fashion-MNIST)

A pair is two fresh trainings, one of each network, run as a user runs them:
mnist_lenet5_backward.py and mnist_backward.py at their own batch sizes (100
and 200), each for as many steps as make --examples (120,000: 1,200 and 600
steps), then each network's test script (--once --report-json) on the whole
test file. The two runs of a pair follow each other, so a busy machine slows
both alike (and it changes their CPU time, not their accuracy). Prints, as
Markdown, each pair's two accuracies and their difference (LeNet-5 minus the
784-500-10 network), the medians and ranges, and each run's CPU seconds.
Figures go to docs/lenet5.md.

A benchmark, not a test: "LeNet-5 is more accurate after the same examples"
is a claim about accuracy, which moves from run to run (unseeded weights,
shuffling and dropout) and with the number of examples (at the course's rate
0.005 LeNet-5 starts slower and overtakes near 60,000 examples on the sample),
and it takes 1,200 LeNet-5 steps per pair. The suite checks the behaviour:
a short LeNet-5 training learns (tests/test_lenet5.py).
The work folder keeps the data (data/, mnist_data_jpg/) between runs.
"""
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

from bench import ROOT, WORK_DIR, cpu_seconds, note
from mnistkit import cli
import mnist_forward
import mnist_lenet5_forward

NETWORKS = (("LeNet-5", mnist_lenet5_forward, "mnist_lenet5_backward.py", "mnist_lenet5_test.py"),
            ("784-500-10", mnist_forward, "mnist_backward.py", "mnist_test.py"))


def run(script, *args, cwd):
    """Run a course script in cwd to its end; (stdout, wall seconds, CPU seconds). Exits in one line on failure."""
    began, cpu_began = time.perf_counter(), cpu_seconds(children=True)
    result = subprocess.run([sys.executable, os.path.join(ROOT, script), *args], cwd=cwd, capture_output=True,
                            text=True, encoding="utf-8", errors="replace")
    wall, cpu = time.perf_counter() - began, cpu_seconds(children=True) - cpu_began  # this process only waits
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["?"])[-1]
        raise SystemExit(f"error: {script} {' '.join(args)} failed in {cwd}: {last}")
    return result.stdout, wall, cpu


def prepare(work, idx_dir):
    """The work folder's data/ (made by mnist_generateds.py when missing); returns the data folder."""
    data = os.path.join(work, "data")
    if not os.path.isfile(os.path.join(data, "mnist_test.tfrecords")):
        os.makedirs(work, exist_ok=True)
        note(f"writing the TFRecords in {work} ...")
        run("mnist_generateds.py", "--no-download", "--quiet", *(["--idx-dir", idx_dir] if idx_dir else []), cwd=work)
    return data


def train_and_score(work, pair, name, net, trainer, tester, steps):
    """One fresh training of a network for `steps` and its score: a dict of accuracy, records, training records,
    CPU and wall seconds (training and evaluation)."""
    model = os.path.join(work, f"pair{pair}", net.NETWORK.model_dir.strip("./"))
    shutil.rmtree(model, ignore_errors=True)
    note(f"pair {pair}: {name}, {steps} steps ...")
    out, wall, cpu = run(trainer, "--steps", str(steps), "--data-dir", "data", "--model-dir", model, "--quiet",
                         cwd=work)
    report = os.path.join(model, "report.json")
    _, eval_wall, eval_cpu = run(tester, "--once", "--data-dir", "data", "--model-dir", model, "--report-json", report,
                                 cwd=work)
    with open(report, encoding="utf-8") as f:
        numbers = json.load(f)
    if numbers["global_step"] != steps:
        raise SystemExit(f"error: {model}: scored global_step {numbers['global_step']}, not {steps}")
    training_records = int(re.match(r"training on (\d+) records", out).group(1))
    return dict(accuracy=numbers["accuracy"], records=numbers["records"], training_records=training_records,
                cpu=cpu, wall=wall, eval_cpu=eval_cpu, eval_wall=eval_wall)


def table(runs, steps, examples, source, started):
    """The Markdown report: a heading line, one row per pair, the medians and ranges, the count of pairs won."""
    lenet5, mlp = ([r[name] for r in runs] for name, *_ in NETWORKS)
    differences = [a["accuracy"] - b["accuracy"] for a, b in zip(lenet5, mlp)]
    (l_name, l_net, *_), (m_name, m_net, *_) = NETWORKS
    lines = [f"{l_name} against the {m_name} network at {examples:,} training examples seen ({l_name} "
             f"{steps[l_name]:,} steps x {l_net.NETWORK.batch_size}, {m_name} {steps[m_name]:,} x "
             f"{m_net.NETWORK.batch_size}); data: {source} ({lenet5[0]['training_records']:,} training, "
             f"{lenet5[0]['records']:,} test records); {len(runs)} fresh pair{'s' if len(runs) > 1 else ''} of runs; "
             f"{datetime.date.today()}, "
             f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; "
             f"{time.perf_counter() - started:.0f} s in all.", "",
             f"| pair | {l_name} | {m_name} | difference | training CPU s ({l_name} / {m_name}) |",
             "|---|---|---|---|---|"]
    for i, (a, b, d) in enumerate(zip(lenet5, mlp, differences), 1):
        lines.append(f"| {i} | {a['accuracy']:.4f} | {b['accuracy']:.4f} | {d:+.4f} | {a['cpu']:.0f} / {b['cpu']:.0f} |")
    accuracies = [[r["accuracy"] for r in side] for side in (lenet5, mlp)]
    cpus = [statistics.median(r["cpu"] for r in side) for side in (lenet5, mlp)]
    lines.append(f"| median | {statistics.median(accuracies[0]):.4f} | {statistics.median(accuracies[1]):.4f} | "
                 f"{statistics.median(differences):+.4f} | {cpus[0]:.0f} / {cpus[1]:.0f} |")
    lines.append(f"| range | {min(accuracies[0]):.4f}-{max(accuracies[0]):.4f} | {min(accuracies[1]):.4f}-"
                 f"{max(accuracies[1]):.4f} | {min(differences):+.4f} to {max(differences):+.4f} | |")
    ahead = sum(d > 0 for d in differences)
    lines += ["", f"{l_name} ahead in {ahead} of {len(runs)} pairs."]
    return "\n".join(lines)


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--examples", type=int, default=120_000,
                        help="training examples each network sees (a multiple of both batch sizes)")
    parser.add_argument("--pairs", type=int, default=3, help="fresh pairs of runs, one of each network")
    parser.add_argument("--idx-dir", help="folder of the 4 MNIST-format IDX files (default: the bundled sample)")
    parser.add_argument("--work-dir", default=os.path.join(WORK_DIR, "lenet5_vs_mlp"),
                        help="data (kept for reuse) and the pairs' model folders")
    args = parser.parse_args(argv)
    steps = {}
    for name, net, *_ in NETWORKS:
        steps[name], left = divmod(args.examples, net.NETWORK.batch_size)
        if left or not steps[name]:
            parser.error(f"--examples {args.examples} is not a multiple of {name}'s batch size "
                         f"{net.NETWORK.batch_size}")
    if args.pairs < 1:
        parser.error("--pairs must be >= 1")
    source = os.path.abspath(args.idx_dir) if args.idx_dir else "the bundled sample"
    work = os.path.join(args.work_dir, re.sub(r"\W+", "_", source).strip("_") if args.idx_dir else "sample")
    started = time.perf_counter()
    prepare(work, args.idx_dir)
    runs = [{name: train_and_score(work, pair, name, net, trainer, tester, steps[name])
             for name, net, trainer, tester in NETWORKS} for pair in range(1, args.pairs + 1)]
    print(table(runs, steps, args.examples, source, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: this checkout's trainer against an earlier commit's, in alternating pairs of whole processes.

Usage (from the repository root):
  python bench/compare_commit.py 0c29734                 5 pairs of 6,000-step runs on Fashion-MNIST
  python bench/compare_commit.py HEAD --pairs 7          an uncommitted change against the last commit
  python bench/compare_commit.py 0c29734 -- --steps-per-run 10    flags after -- go to both trainers

The named commit is checked out into a temporary `git worktree` (removed
afterwards, also after an error or Ctrl-C). Both trainers, that
commit's and this checkout's (its working tree, uncommitted edits
included), run `mnist_backward.py --data-dir DATA --model-dir FRESH
--steps N --quiet` with the same Python, on the same records, each run in
a fresh model folder, in pairs whose order alternates (base first, then
today first, ...), so each pair saw about the same machine. A run is
timed as a whole process: wall time from start to exit, CPU time from
the child's rusage (user + system, all its threads). The table gives each
side's medians and the ratios today / base: the median of the pairs'
ratios (the figure to quote; under 1.00 today is faster) and the ratio
of the medians. Records: the 60,000 training images of --idx-dir
(Fashion-MNIST when dataset-fashion-mnist is installed), else the
bundled sample's 8,000.
"""
import datetime
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
IDX_DIR = "/usr/share/datasets/fashion-mnist"
SIDES = ("base", "today")
TRAIN_FILE = "mnist_train.tfrecords"  # mnist_generateds.tfRecord_train, the name both trainers read

sys.path.insert(0, ROOT)
from mnistkit import cli  # noqa: E402
from mnistkit.cli import bounded  # noqa: E402  (no TensorFlow: --help and flag errors stay instant)


class Refused(Exception):
    """A one-line reason the comparison cannot run (main prints it as `error: ...` and exits 2)."""


def git(*args, cwd=ROOT):
    """git's stdout (stripped); Refused with git's last line when it fails."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[-1]
        raise Refused(f"git {' '.join(args)}: {last}")
    return proc.stdout.strip()


def resolve(commit):
    """The full hash of `commit` (any name git knows); Refused naming it when it is unknown."""
    try:
        return git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    except Refused:
        raise Refused(f"unknown commit {commit!r} in {ROOT} (give a hash, tag or branch git log shows)") from None


def write_records(work, idx_dir):
    """`work`/data/mnist_train.tfrecords from idx_dir's IDX training split (None: the bundled sample).

    Returns (data folder, a description of the source, the number of records). The records are written with
    this checkout's records.make_example; the schema is the one both trainers read.
    """
    import mnistkit.idx
    from tf_compat import tf
    from mnistkit import records
    images, labels = mnistkit.idx.read_idx_split(idx_dir or mnistkit.idx.BUNDLED_DIR, "train")
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    with tf.io.TFRecordWriter(os.path.join(data, TRAIN_FILE)) as f:
        for image, label in zip(images, labels):
            f.write(records.make_example(image.tobytes(), int(label)).SerializeToString())
    return data, idx_dir or "the bundled sample", len(labels)


def schedule(pairs):
    """[(pair, side)] in running order: each pair's two runs back to back, base first in even pairs, today first in
    odd ones (a side that always ran second would always meet the first run's after-effects)."""
    order = []
    for pair in range(pairs):
        sides = SIDES if pair % 2 == 0 else SIDES[::-1]
        order += [(pair, side) for side in sides]
    return order


def run_once(root, command, cwd):
    """Run `command` in `cwd` as a whole process: (wall seconds, CPU seconds from its rusage). Refused on failure,
    with the trainer's last error line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", errors="replace", env=trainer_env(root))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise Refused(f"the trainer in {root} failed (exit status {proc.returncode}): {last}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def trainer_env(root):
    """The environment a trainer runs in: ours, without a PYTHONPATH that would import the other side's code."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def summarise(runs):
    """{side: {"wall": [...], "cpu": [...]}} in pair order -> the figures the table prints.

    Per side the medians; for wall and CPU the median of the pairs' today / base ratios, their range, and the ratio
    of the medians."""
    figures = {side: {kind: statistics.median(runs[side][kind]) for kind in ("wall", "cpu")} for side in SIDES}
    for kind in ("wall", "cpu"):
        ratios = [t / b for t, b in zip(runs["today"][kind], runs["base"][kind])]
        figures[kind] = {"pairs": statistics.median(ratios), "low": min(ratios), "high": max(ratios),
                         "medians": figures["today"][kind] / figures["base"][kind], "each": ratios}
    return figures


def table(runs, figures, info):
    """The Markdown table: each side's median wall and CPU seconds and its runs; the ratios today / base."""
    lines = [info, "", "| side | wall s (median) | CPU s (median) | wall s, each pair | CPU s, each pair |",
             "|---|---|---|---|---|"]
    for side in SIDES:
        lines.append(f"| {side} | {figures[side]['wall']:.2f} | {figures[side]['cpu']:.2f} | "
                     f"{', '.join(f'{w:.2f}' for w in runs[side]['wall'])} | "
                     f"{', '.join(f'{c:.2f}' for c in runs[side]['cpu'])} |")
    for kind in ("wall", "cpu"):
        f = figures[kind]
        lines.append(f"| today / base, {kind} | {f['pairs']:.3f}x median of the pairs "
                     f"({f['low']:.2f}-{f['high']:.2f}) | ratio of the medians {f['medians']:.3f}x | "
                     f"{', '.join(f'{r:.2f}' for r in f['each'])} | |")
    return "\n".join(lines)


def compare(args, extra):
    """Check out the base, write the records, run the pairs; the table."""
    full = resolve(args.commit)
    started, loads = time.perf_counter(), [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="compare_commit_") as work:
        base = os.path.join(work, "base")
        git("worktree", "add", "--detach", base, full)
        try:
            if not os.path.isfile(os.path.join(base, "mnist_backward.py")):
                raise Refused(f"commit {args.commit} has no mnist_backward.py")
            note(f"base {full[:10]} checked out in {base}; writing the records ...")
            data, source, count = write_records(work, args.idx_dir)
            roots = {"base": base, "today": ROOT}
            runs = {side: {"wall": [], "cpu": []} for side in SIDES}
            for pair, side in schedule(args.pairs):
                model = os.path.join(work, "models", f"{side}-{pair}")  # fresh: nothing to resume
                command = [args.python, "mnist_backward.py", "--data-dir", data, "--model-dir", model,
                           "--steps", str(args.steps), "--quiet", *extra]
                wall, cpu = run_once(roots[side], command, roots[side])
                shutil.rmtree(model, ignore_errors=True)
                runs[side]["wall"].append(wall)
                runs[side]["cpu"].append(cpu)
                loads.append(os.getloadavg()[0])
                note(f"pair {pair + 1}/{args.pairs} {side}: wall {wall:.2f} s, CPU {cpu:.2f} s, "
                     f"load {loads[-1]:.1f}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", base], cwd=ROOT, capture_output=True)
            subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)
    info = (f"Commit comparison, {datetime.date.today()}, {os.cpu_count()} CPUs: base {args.commit} ({full[:10]}), "
            f"today {ROOT} (working tree); mnist_backward.py --steps {args.steps:,}"
            f"{' ' + ' '.join(extra) if extra else ''}, {args.pairs} alternating pairs of whole processes; records: "
            f"{count:,} from {source}; load average {min(loads):.1f}-{max(loads):.1f}; "
            f"whole benchmark {time.perf_counter() - started:.0f} s.")
    return table(runs, summarise(runs), info)


def note(message):
    print(message, file=sys.stderr, flush=True)


def build_parser():
    parser = cli.new_parser(__doc__, epilog="Flags after -- are given to both trainers (e.g. -- --steps-per-run 10).")
    parser.add_argument("commit", nargs="?", default="HEAD", help="the earlier commit (hash, tag, branch, HEAD~3)")
    parser.add_argument("--pairs", type=bounded(int, 1), default=5, help="alternating pairs of runs")
    parser.add_argument("--steps", type=bounded(int, 1), default=6000, help="training steps of each run")
    parser.add_argument("--idx-dir", default=IDX_DIR if os.path.isdir(IDX_DIR) else None,
                        help="folder of the IDX training split to train on (Fashion-MNIST's when it is installed; "
                             "without it, the bundled sample)")
    parser.add_argument("--sample", action="store_true", help="train on the bundled sample's 8,000 records instead "
                                                               "(a smoke test of the command)")
    parser.add_argument("--python", default=sys.executable, help="the Python both trainers run with")
    return parser


def interrupted(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    parser = build_parser()
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.sample:
        args.idx_dir = None
    elif args.idx_dir is not None and not os.path.isdir(args.idx_dir):
        parser.error(f"--idx-dir {args.idx_dir}: no such folder")
    signal.signal(signal.SIGTERM, interrupted)  # a kill ends the same way as Ctrl-C: the worktree removed
    try:
        print(compare(args, extra))
    except Refused as refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted; the temporary worktree was removed", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: --steps-per-run, the course's step K at a time inside the graph, against its bounds.

Usage (from the repository root):
  python bench/steps_per_run.py            9,000 steps a run on ../shared/data's MNIST (see its README)
  python bench/steps_per_run.py --quick    600 steps a run (a smoke test of every row, a few minutes)

Each row is a whole process (`python bench/steps_per_run.py --child ROW ...`),
the rows alternating, --repeats rounds; a process is timed from its step
`every` (its first interval, TensorFlow's warm-up, left out) to the end of
its steps, and the table gives medians in ms per step and each row's ratio
to the memory-fed graph. Rows:
  ours K=1, ours K=10     mnist_backward.backward at --steps-per-run 1 and 10
                          (queue runners, loss lines and a checkpoint every `every` steps);
  memory-fed graph        the same graph fed from NumPy arrays by feed_dict (bench.train_in_memory);
  Keras fit, spe 1 / 10   the same network in Keras model.fit, steps_per_execution 1 and 10 (bench.keras_child);
  constant batch K=1 / 10 the trainer's graph with one constant batch inside it (no input at all), in the
                          trainer's session (training.session_config): its train op, and its K=10
                          tf.while_loop (mnistkit.steps.steps_loop): the in-graph limit.
Beside them, the test accuracy of each ours run after its steps (mnist_test.evaluate), K=1 against K=10.
Training data: the first 10,000 MNIST training digits (../shared/data/mnist-first10k), test: the official
10,000 (../shared/data/mnist); without ../shared, the bundled sample.
"""
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
import bench  # noqa: E402  (after the path is set; neither imports TensorFlow, nor tf_compat, which blocks Keras)
import mnistkit.idx  # noqa: E402
from mnistkit import cli  # noqa: E402

SHARED = next((d for d in (os.path.join(ROOT, "..", "shared", "data"), os.path.join(ROOT, "..", "..", "shared", "data"))
               if os.path.isdir(d)), "")  # ../shared/data beside the repository (or beside its worktree folder)
FULL = dict(steps=9000, every=1000)
QUICK = dict(steps=600, every=100)
ROWS = ("ours K=1", "ours K=10", "memory-fed graph", "Keras fit, spe 1", "Keras fit, spe 10", "constant batch K=1",
        "constant batch K=10")
BOUND = "memory-fed graph"


def write_tfrecords(images, labels, path):
    """IDX arrays (uint8 [n, 28, 28], labels [n]) as the project's TFRecord file (records.make_example)."""
    from tf_compat import tf
    from mnistkit import records
    with tf.io.TFRecordWriter(path) as f:
        for image, label in zip(images, labels):
            f.write(records.make_example(image.tobytes(), int(label)).SerializeToString())


def prepare(work):
    """data/mnist_train.tfrecords, data/mnist_test.tfrecords and arrays.npz in `work`; the data's description."""
    import numpy as np
    import mnist_generateds
    if os.path.isdir(os.path.join(SHARED, "mnist-first10k")):
        train = mnistkit.idx.read_idx_split(os.path.join(SHARED, "mnist-first10k"), "train")
        test = mnistkit.idx.read_idx_split(os.path.join(SHARED, "mnist"), "test")
        source = "MNIST, first 10,000 training digits; the official 10,000 test digits"
    else:
        train, test = (mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, split) for split in ("train", "test"))
        source = "the bundled MNIST sample"
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    write_tfrecords(*train, os.path.join(data, mnist_generateds.tfRecord_train))
    write_tfrecords(*test, os.path.join(data, mnist_generateds.tfRecord_test))
    np.savez(os.path.join(work, "arrays.npz"), pixels=train[0].reshape(len(train[0]), -1), digits=train[1])
    return source, len(train[0])


# ---------------------------------------------------------------- the rows, each in a process of its own

class Clock:
    """A log callback: the time of the first loss line at or after step `every`."""

    def __init__(self, every):
        self.every, self.start = every, None

    def __call__(self, line):
        if line.startswith("After ") and self.start is None and int(line.split()[1]) >= self.every:
            self.start = (time.perf_counter(), int(line.split()[1]))

    def ms_per_step(self, steps):
        return 1000 * (time.perf_counter() - self.start[0]) / (steps - self.start[1])


def ours(config, per_run):
    """mnist_backward.backward at --steps-per-run per_run: {"ms": ms/step, "accuracy": test accuracy after it}."""
    import mnist_backward
    import mnist_test
    mnist_backward.PRINT_EVERY = config["every"]  # the clock's lines
    clock, model = Clock(config["every"]), os.path.join(config["scratch"], "model")
    step = mnist_backward.backward(steps=config["steps"], data_dir=config["data"], model_dir=model, quiet=True,
                                   save_every=config["every"], steps_per_run=per_run, log=clock)
    ms = clock.ms_per_step(step)
    _, accuracy, _ = mnist_test.evaluate(os.path.join(model, f"mnist_model-{step}"),
                                         os.path.join(config["data"], "mnist_test.tfrecords"))
    return {"ms": ms, "accuracy": accuracy}


def memory_fed(config):
    """bench.train_in_memory: the same graph, batches sliced from NumPy arrays and fed."""
    import numpy as np
    data = np.load(config["arrays"])
    arrays = bench.shuffled_arrays(data["pixels"], data["digits"])
    clock = Clock(config["every"])
    bench.train_in_memory(config["steps"], arrays, len(arrays[0]), config["data"], config["scratch"], clock,
                          config["every"])
    return {"ms": clock.ms_per_step(config["steps"])}


def constant_batch(config, per_run):
    """The trainer's graph over one constant batch (no input pipeline): its train op, or its steps_loop at per_run."""
    import numpy as np
    from tf_compat import tf
    import mnist_backward
    import mnist_forward
    from mnistkit import records, training
    data = np.load(config["arrays"])
    xs, ys = bench.shuffled_arrays(data["pixels"][:bench.BATCH_SIZE], data["digits"][:bench.BATCH_SIZE])

    def constant_source(settings, data, num, files=None):  # one batch, the same every step
        batch = (tf.constant(xs), tf.constant(ys))
        return batch, lambda: batch
    mnist_backward.batch_source = constant_source
    settings = mnist_backward.settings_for(mnist_forward, batch_size=bench.BATCH_SIZE, data_dir=config["data"],
                                           pipeline="tfdata", steps_per_run=max(per_run, 2))  # no queue to watch
    graph = mnist_backward.build_graph(settings, records.training_data(config["data"]))
    with tf.Session(config=training.session_config()) as sess:  # the trainer's session
        sess.run(tf.global_variables_initializer())
        if per_run == 1:
            fetches, feed = [graph.train_op, graph.loss, graph.step_after], None
        else:
            fetches, feed = graph.loop.fetches, {graph.loop.count: per_run}
        step, start = 0, None
        while step < config["steps"]:
            step = sess.run(fetches, feed)[2]
            if start is None and step >= config["every"]:
                start = (time.perf_counter(), step)
    return {"ms": 1000 * (time.perf_counter() - start[0]) / (step - start[1])}


def keras(config, per_run):
    """bench.keras_child at steps_per_execution per_run, in ms/step."""
    import io
    import contextlib
    import mnist_backward  # noqa: F401  (only for bench.keras_config's constants: no tf_compat import)
    c = bench.keras_config(config["steps"], config["every"], config["examples"], config["arrays"], config["scratch"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench.keras_child(dict(c, steps_per_execution=per_run))
    return {"ms": 1000 / json.loads(out.getvalue())["rate"]}


def child(row, config):
    """Run one row in this process; prints its JSON result."""
    kinds = {"ours K=1": lambda: ours(config, 1), "ours K=10": lambda: ours(config, 10),
             BOUND: lambda: memory_fed(config),
             "Keras fit, spe 1": lambda: keras(config, 1), "Keras fit, spe 10": lambda: keras(config, 10),
             "constant batch K=1": lambda: constant_batch(config, 1),
             "constant batch K=10": lambda: constant_batch(config, 10)}
    print(json.dumps(kinds[row]()))


def run_row(row, config):
    """One row in a fresh process (a scratch folder of its own); its JSON result."""
    with tempfile.TemporaryDirectory() as scratch:
        proc = subprocess.run([sys.executable, __file__, "--child", row, json.dumps(dict(config, scratch=scratch))],
                              capture_output=True, text=True, encoding="utf-8", errors="replace", cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"error: {row}: the child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(results, info):
    """The Markdown table of medians: ms/step, ratio to the memory-fed graph (its ms / the row's), accuracy."""
    bound = statistics.median(r["ms"] for r in results[BOUND])
    lines = [info, "", "| row | ms/step | speed vs memory-fed | runs (ms/step) | test accuracy |", "|---|---|---|---|---|"]
    for row, runs in results.items():
        ms = [r["ms"] for r in runs]
        accuracy = [r["accuracy"] for r in runs if "accuracy" in r]
        lines.append(f"| {row} | {statistics.median(ms):.2f} | {bound / statistics.median(ms):.2f}x | "
                     f"{', '.join(f'{m:.2f}' for m in ms)} | "
                     + (f"{statistics.median(accuracy):.4f} ({min(accuracy):.4f}-{max(accuracy):.4f})" if accuracy
                        else "") + " |")
    return "\n".join(lines)


def chosen_rows(text, parser):
    """The rows a --rows value names, comma-separated; a row's own comma ("Keras fit, spe 1") joins its two parts."""
    chosen, part = [], ""
    for piece in text.split(","):
        part = f"{part},{piece}" if part else piece
        if part.strip() in ROWS:
            chosen.append(part.strip())
            part = ""
    if part:
        parser.error(f"--rows: no row {part.strip()!r}; the rows: {'; '.join(ROWS)}")
    return chosen


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="600 steps a run instead of 9,000")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the rows, alternating")
    parser.add_argument("--rows", help="a comma-separated subset of the rows, e.g. \"ours K=1,Keras fit, spe 1\" "
                                       "(default: all; the memory-fed graph always runs)")
    args = parser.parse_args(argv)
    chosen = chosen_rows(args.rows, parser) if args.rows else ROWS
    rows = [row for row in ROWS if row in chosen or row == BOUND]
    started, load = time.perf_counter(), [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as work:
        bench.note(f"writing the TFRecords into {work} ...")
        source, examples = prepare(work)
        config = dict(QUICK if args.quick else FULL, data=os.path.join(work, "data"),
                      arrays=os.path.join(work, "arrays.npz"), examples=examples)
        results = {row: [] for row in ROWS}
        for round_ in range(args.repeats):
            for row in rows:
                results[row].append(run_row(row, config))
                load.append(os.getloadavg()[0])
                bench.note(f"round {round_ + 1}: {row}: {results[row][-1]}")
    info = (f"{'Quick' if args.quick else 'Full'} steps-per-run benchmark, {datetime.date.today()}, "
            f"{os.cpu_count()} CPUs, {config['steps']:,} steps a run at batch {bench.BATCH_SIZE}, timed from step "
            f"{config['every']:,}; data: {source}; medians of {args.repeats} processes a row, alternating; "
            f"load average {min(load):.1f}-{max(load):.1f}; whole benchmark {time.perf_counter() - started:.0f} s.")
    print(table({row: r for row, r in results.items() if r}, info))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], json.loads(sys.argv[3]))
    else:
        sys.exit(main())

"""The trainer's step under TensorFlow's own tracer: where a step's time goes, and what waits for what.

Usage (from the repository root):
  python bench/step_trace.py                          the bundled sample's records, this checkout's trainer
  python bench/step_trace.py --data-dir DIR           a folder with mnist_train.tfrecords
  python bench/step_trace.py --root ../other-checkout another checkout's build_graph on the same records
  python bench/step_trace.py --timeline step.json     also one traced step as a Chrome trace (chrome://tracing)

In one process it builds mnist_backward.build_graph (the queue-runner
pipeline, batch 200, the trainer's session: training.session_config),
runs --warm-up steps, then --traced steps under RunOptions.FULL_TRACE and
reads each step's RunMetadata.step_stats: the step's span (first op's
start to last op's end), the ops of the moving averages (the shadow
variables' updates, names under ExponentialMovingAverage), the ops
that apply the gradients, and the "tail": how long the step goes on
after the last gradient is applied. Then --timed steps without the tracer
(its own cost is large), in wall and process CPU time. Medians are printed.
The tracer's figures are for comparing two graphs side by side, not
absolute speeds: bench/compare_commit.py times whole runs.
"""
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from mnistkit import cli  # noqa: E402  (the course scripts' parser: one line for a wrong flag)

EMA_MARK = "ExponentialMovingAverage"


def spans(step_stats):
    """[(name, op type, start µs, end µs)] of every op of one traced step (all devices)."""
    out = []
    for dev in step_stats.dev_stats:
        for node in dev.node_stats:
            kind = node.timeline_label.split("(")[0].split("=")[-1].strip() if node.timeline_label else ""
            out.append((node.node_name, kind, node.all_start_micros, node.all_start_micros + node.all_end_rel_micros))
    return out


def describe(ops):
    """{span, ema_busy, ema_start, tail} in µs of one step's ops (spans)."""
    start, end = min(o[2] for o in ops), max(o[3] for o in ops)
    ema = [o for o in ops if EMA_MARK in o[0]]
    applied = [o[3] for o in ops if "/update_" in o[0]]  # the optimizer's own apply ops (GradientDescent/update_w1/...)
    return {"span": end - start,
            "ema_busy": sum(o[3] - o[2] for o in ema),
            "ema_start": (min(o[2] for o in ema) - start) if ema else 0,
            "tail": (end - max(applied)) if applied else 0}


def measure(args):
    """Build, warm up, trace and time in this process; a dict of medians."""
    sys.path.insert(0, os.path.abspath(args.root))
    for name in [name for name in sys.modules if name.split(".")[0] in ("mnistkit", "tf_compat")]:
        del sys.modules[name]  # the parser's mnistkit is this checkout's: --root's own is imported below
    from tf_compat import tf
    import mnist_backward
    import mnist_forward
    from mnistkit import records, training
    from tensorflow.python.client import timeline
    settings = mnist_backward.settings_for(mnist_forward, data_dir=args.data_dir, batch_size=200)
    data = records.training_data(settings.data_dir, settings.train_file)
    graph = mnist_backward.build_graph(settings, data)
    with tf.Session(config=training.session_config()) as sess:
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        for _ in range(args.warm_up):
            sess.run(graph.train_op)
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        steps = []
        for i in range(args.traced):
            metadata = tf.RunMetadata()
            sess.run(graph.train_op, options=options, run_metadata=metadata)
            steps.append(describe(spans(metadata.step_stats)))
            if args.timeline and i == args.traced - 1:
                with open(args.timeline, "w", encoding="utf-8") as f:
                    f.write(timeline.Timeline(metadata.step_stats).generate_chrome_trace_format())
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(args.timed):
            sess.run(graph.train_op)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        coord.request_stop()
        coord.join(threads)
    result = {key: statistics.median(s[key] for s in steps) for key in steps[0]}
    result.update(ms_per_step=1000 * wall / args.timed, cpu_ms_per_step=1000 * cpu / args.timed)
    return result


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--root", default=ROOT, help="the checkout whose mnist_backward.build_graph is traced")
    parser.add_argument("--data-dir", help="a folder with mnist_train.tfrecords (default: the bundled sample's, "
                                           "written to a temporary folder)")
    parser.add_argument("--warm-up", type=int, default=300, help="untraced steps first")
    parser.add_argument("--traced", type=int, default=200, help="steps under the tracer")
    parser.add_argument("--timed", type=int, default=2000, help="untraced steps timed after them")
    parser.add_argument("--timeline", help="write the last traced step as a Chrome trace to this file")
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.root, "mnist_backward.py")):
        parser.error(f"--root {args.root}: no mnist_backward.py there")
    with tempfile.TemporaryDirectory() as work:
        if args.data_dir is None:
            sys.path.insert(0, HERE)
            sys.path.insert(0, ROOT)
            import compare_commit
            args.data_dir = compare_commit.write_records(work, None)[0]
        result = measure(args)
    print(json.dumps({k: round(v, 3) for k, v in result.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

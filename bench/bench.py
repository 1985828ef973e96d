"""Benchmark: the course's loops against this project's, side by side in one run.

Usage (from the repository root; `make bench` / `make bench-quick`):
  python bench/bench.py            full-size data from --idx-dir (Fashion-MNIST, 60,000 + 10,000)
  python bench/bench.py --quick    the bundled MNIST sample and short runs (a smoke test of every row, a few minutes)

Six figures, each measured --repeats times with the contenders interleaved,
so a busy machine slows them alike; the table gives medians and ratios of
medians, as Markdown:
  1. TFRecord generation of the training split, images/s and peak resident
     memory: the course's loop (course_baseline.write_tfRecord) against
     mnist_generateds.write_tfRecord, each in a fresh process.
  2. The input pipeline alone, examples/s: the course's per-example graph
     against mnist_generateds.get_tfrecord (batches of 200 dequeued, not fetched).
  3. Training at batch 200, steps/s: the course's loop (fetch, then
     feed_dict), mnist_backward.backward, and the same graph fed from NumPy
     arrays already in memory (the upper bound), and mnist_backward.backward
     with --pipeline tfdata (tf.data, the migration target of queue runners);
     beside them what a user might pick instead: Keras model.fit on the same
     network from NumPy arrays (in its own process: tf_compat keeps Keras
     out of ours). All log and save a checkpoint on the same schedule; the
     first interval is a warm-up. These runs are repeated --train-repeats
     times (the course's loop only --repeats times: it is slow).
  4. `mnist_test.py --once` latency after the TensorFlow import.
  5. The default run: `mnist_backward.py` wall time and the test accuracy reached.
  6. LeNet-5 training at batch 100, steps/s: mnist_lenet5_backward
     through the queue runners, the same graph fed from NumPy arrays in memory,
     and the same network in Keras `model.fit` on in-memory arrays (in a
     process of its own: tf_compat blocks the Keras import).
The work folder keeps the JPG layout between runs (it takes a minute to build).
"""
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
import mnistkit.idx  # noqa: E402  (after the path is set; neither TensorFlow nor tf_compat, which blocks Keras)
from mnistkit import cli  # noqa: E402


FULL_IDX_DIR = "/usr/share/datasets/fashion-mnist"
WORK_DIR = os.path.join(HERE, "work")
BATCH_SIZE = 200
# training: the median over the interleaved project / in-memory pairs of their ratio.
TARGETS = {"generation": 3.0, "memory_mb": 500, "pipeline": 6.0, "training": 0.90, "latency": 2.0, "accuracy": 0.89,
           "lenet5": 0.95, "lenet5_keras": 1.0}
FULL = dict(repeats=3, train_repeats=5, pipeline_secs=3.0, train_every=1000, train_intervals=2, run_steps=None,
            lenet5_every=300, lenet5_intervals=2)
QUICK = dict(repeats=3, train_repeats=3, pipeline_secs=0.5, train_every=100, train_intervals=2, run_steps=500,
             lenet5_every=50, lenet5_intervals=2)
TRAINING_LOOPS = ("course", "project", "in-memory", "tf.data", "Keras")  # figure 3, in the order they run


def note(message):
    print(message, file=sys.stderr, flush=True)


def cpu_seconds(children=False):
    """CPU time of this process (all threads), plus its exited and waited-for children's if asked."""
    times = os.times()
    return times.user + times.system + (times.children_user + times.children_system if children else 0)


# ---------------------------------------------------------------- memory of a process tree

def _descendants(pid):
    found = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        return []
    for child in list(found):
        found += _descendants(child)
    return found


def _rss(pid):
    with open(f"/proc/{pid}/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _private(pid):
    total = 0
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1]) * 1024
    return total


def tree_memory(pid):
    """Bytes resident for a process and its workers: its RSS plus each descendant's private pages.

    A forked worker shares the rest of its pages with its parent, so adding
    its RSS would count the TensorFlow libraries once per worker.
    """
    try:
        total = _rss(pid)
    except OSError:
        return 0
    for child in _descendants(pid):
        try:
            total += _private(child)
        except OSError:
            pass  # the worker has just exited
    return total


def run_child(args, sample_every=0.05):
    """Run `python bench.py --child ...` and return (its JSON result, peak tree memory in bytes)."""
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", *args],
                            stdout=subprocess.PIPE, text=True, encoding="utf-8", errors="replace", cwd=ROOT)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_memory(proc.pid))
        time.sleep(sample_every)
    out = proc.stdout.read()
    if proc.returncode != 0:
        raise SystemExit(f"error: bench child {args} failed with exit status {proc.returncode}")
    return json.loads(out.strip().splitlines()[-1]), peak


def child_main(argv):
    """A measurement in a fresh process; prints JSON.

    `--child gen course|project IMAGES LABELS OUT`: generation;
    `--child keras CONFIG_JSON`: Keras training (keras_child).
    """
    if argv[0] == "keras":
        keras_child(json.loads(argv[1]))
        return
    kind, method, images, labels, out = argv
    assert kind == "gen"
    if method == "course":  # import only the code measured
        import course_baseline
    else:
        import mnist_generateds
    import tf_compat
    tf_compat.import_tensorflow()  # the baseline is a process with TensorFlow loaded, as the scripts' is
    base = _rss(os.getpid())
    start, cpu_start = time.perf_counter(), cpu_seconds(children=True)
    if method == "course":
        count = course_baseline.write_tfRecord(out, images, labels)
    else:
        count = mnist_generateds.write_tfRecord(out, images, labels, log=lambda m: None)
    seconds, cpu = time.perf_counter() - start, cpu_seconds(children=True) - cpu_start
    print(json.dumps({"count": count, "seconds": seconds, "cpu": cpu, "base": base}))


# ---------------------------------------------------------------- the five figures

def bench_generation(layout, work, repeats):
    """Figure 1: images/s and peak memory of the course loop and write_tfRecord (train split)."""
    images, labels = layout["train"]
    out = {m: os.path.join(work, f"gen_{m}.tfrecords") for m in ("course", "project")}
    rates, cpu, peaks = ({"course": [], "project": []} for _ in range(3))
    bases = []
    for r in range(repeats):
        for method in ("course", "project"):
            note(f"1 generation: {method} run {r + 1}/{repeats}")
            result, peak = run_child(["gen", method, images, labels, out[method]])
            rates[method].append(result["count"] / result["seconds"])
            cpu[method].append(result["cpu"] / result["count"])
            peaks[method].append(peak)
            bases.append(result["base"])
    identical = same_examples(out["course"], out["project"])
    return dict(rates=rates, cpu=cpu, peaks=peaks, base=statistics.median(bases), identical=identical,
                count=result["count"], project_file=out["project"], course_file=out["course"])


def same_examples(course_path, project_path):
    """(equal, total): records equal as tf.train.Example and byte-equal once the course's is re-serialized deterministically."""
    from tf_compat import tf
    equal = total = 0
    course = tf.io.tf_record_iterator(course_path)
    for ours in tf.io.tf_record_iterator(project_path):
        theirs = tf.train.Example.FromString(next(course, b""))
        total += 1
        equal += theirs.SerializeToString(deterministic=True) == ours and theirs == tf.train.Example.FromString(ours)
    total += sum(1 for _ in course)
    return equal, total


def bench_pipeline(data_dir, repeats, seconds):
    """Figure 2: examples/s of the course's per-example pipeline and get_tfrecord."""
    from tf_compat import tf
    import course_baseline
    import mnist_generateds
    import mnistkit.training
    path = os.path.join(data_dir, mnist_generateds.tfRecord_train)
    layout = mnistkit.records.training_data(data_dir).layout  # as training reads it
    builds = {
        "course": lambda: course_baseline.get_tfrecord(BATCH_SIZE, path),
        "project": lambda: mnist_generateds.get_tfrecord(BATCH_SIZE, isTrain=True, data_dir=data_dir, layout=layout),
    }
    rates = {"course": [], "project": []}
    for r in range(repeats):
        for method, build in builds.items():
            note(f"2 input pipeline: {method} run {r + 1}/{repeats}")
            with tf.Graph().as_default():
                consume = tf.group(*build())  # dequeue and convert each batch, fetch nothing
                with tf.Session() as sess:
                    coord = tf.train.Coordinator()
                    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
                    for _ in range(20):
                        sess.run(consume)
                    batches, start = 0, time.perf_counter()
                    while time.perf_counter() - start < seconds:
                        sess.run(consume)
                        batches += 1
                    rates[method].append(batches * BATCH_SIZE / (time.perf_counter() - start))
                    coord.request_stop()
                    coord.join(threads)
    return rates




class StepClock:
    """A log callback that timestamps the course's 'After N training steps' lines (wall and CPU time)."""

    def __init__(self):
        self.marks = []

    def __call__(self, line):
        if line.startswith("After "):
            self.marks.append((time.perf_counter(), cpu_seconds(), int(line.split()[1])))

    def rate(self):
        """(steps/s, CPU ms/step) from the second line to the last: the first interval is warm-up."""
        (t0, c0, s0), (t1, c1, s1) = self.marks[1], self.marks[-1]
        return (s1 - s0) / (t1 - t0), 1000 * (c1 - c0) / (s1 - s0)


def load_records(path):
    """Every record of a TFRecord file: pixels uint8 [n, 784] and digits int64 [n], in file order."""
    import numpy as np
    from tf_compat import tf
    pixels, digits = [], []
    for serialized in tf.io.tf_record_iterator(path):
        feature = tf.train.Example.FromString(serialized).features.feature
        pixels.append(feature["img_raw"].bytes_list.value[0])
        digits.append(list(feature["label"].int64_list.value).index(1))
    return np.frombuffer(b"".join(pixels), np.uint8).reshape(len(pixels), 784), np.array(digits)


def shuffled_arrays(pixels, digits):
    """load_records' arrays as float32 [n, 784] in [0, 1] and one-hot float32 [n, 10], shuffled once."""
    import numpy as np
    order = np.random.default_rng(0).permutation(len(pixels))
    return pixels[order].astype(np.float32) / 255, np.eye(10, dtype=np.float32)[digits[order]]


def train_loop(sess, graph, steps, model_dir, log, every, feed=lambda step: None):
    """mnist_backward's loop schedule without its extras: run the train op, log and save every `every` steps.

    feed(step) gives the feed_dict of the next step (None when the graph reads its own input).
    """
    from tf_compat import tf
    saver = tf.train.Saver()
    fetches = [graph.train_op, graph.loss, graph.step_after]
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    step = 0
    while step < steps:
        _, loss_value, step = sess.run(fetches, feed_dict=feed(step))
        if step == 1 or step % every == 0:
            log("After %d training steps, loss on training batch is %g." % (step, loss_value))
        if step % every == 0:
            saver.save(sess, os.path.join(model_dir, "mnist_model"), global_step=step)


def train_in_memory(steps, arrays, train_examples, data_dir, model_dir, log, every):
    """The upper bound: mnist_backward's graph and loop schedule, batches sliced from NumPy arrays and fed."""
    from tf_compat import tf
    import mnist_backward
    xs, ys = arrays
    batches = len(xs) // BATCH_SIZE
    # pipeline="course" gives the same graph reading placeholders; its queue runners are never started.
    import mnist_forward
    settings = mnist_backward.settings_for(mnist_forward, steps=steps, batch_size=BATCH_SIZE, data_dir=data_dir,
                                           model_dir=model_dir, pipeline="course")
    import mnistkit.records
    graph = mnist_backward.build_graph(settings, mnistkit.records.training_data(data_dir))

    def feed(step):
        lo = (step % batches) * BATCH_SIZE
        return {graph.x: xs[lo:lo + BATCH_SIZE], graph.y_: ys[lo:lo + BATCH_SIZE]}

    with tf.Session() as sess:
        train_loop(sess, graph, steps, model_dir, log, every, feed)


def keras_config(steps, every, train_examples, arrays_path, model_dir):
    """What keras_child needs, with the network's and schedule's constants taken from the project's modules."""
    import mnist_backward
    import mnist_forward
    return dict(steps=steps, every=every, train_examples=train_examples, arrays=arrays_path, model_dir=model_dir,
                batch=BATCH_SIZE, hidden=mnist_forward.LAYER1_NODE, stddev=mnist_forward.WEIGHT_STDDEV,
                regularizer=mnist_backward.REGULARIZER, rate=mnist_backward.LEARNING_RATE_BASE,
                decay=mnist_backward.LEARNING_RATE_DECAY, average=mnist_backward.MOVING_AVERAGE_DECAY)


def keras_child(config):
    """Keras 3 model.fit on the course's network from NumPy arrays; prints JSON {"rate": steps/s, "cpu": ms/step}.

    Runs in its own process without tf_compat (which blocks the keras
    import). 784-500-10 ReLU, truncated-normal weights, L2 on the weights
    equal to mnist_forward's (regularizer * sum(w ** 2) / 2), SGD with the
    same staircase exponential decay and a moving average of the weights
    (use_ema), batch 200, Keras's defaults otherwise (shuffled every epoch,
    jit_compile "auto", which is XLA here); weights saved every `every` steps.
    Timed like StepClock: from step `every` to the last.
    """
    import math
    import numpy as np
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    c = config
    data = np.load(c["arrays"])
    xs, ys = data["pixels"].astype(np.float32) / 255, data["digits"]
    init = keras.initializers.TruncatedNormal(stddev=c["stddev"])
    l2 = keras.regularizers.L2(c["regularizer"] / 2)
    model = keras.Sequential([
        keras.Input((xs.shape[1],)),
        keras.layers.Dense(c["hidden"], activation="relu", kernel_initializer=init, kernel_regularizer=l2),
        keras.layers.Dense(10, kernel_initializer=init, kernel_regularizer=l2),
    ])
    rate = keras.optimizers.schedules.ExponentialDecay(c["rate"], c["train_examples"] / c["batch"], c["decay"],
                                                       staircase=True)
    model.compile(optimizer=keras.optimizers.SGD(rate, use_ema=True, ema_momentum=c["average"]),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  steps_per_execution=c.get("steps_per_execution", 1))  # bench/steps_per_run.py gives 10 too
    marks = []

    class Clock(keras.callbacks.Callback):
        step = 0

        def on_train_batch_end(self, batch, logs=None):  # after every steps_per_execution steps
            before, self.step = self.step, int(self.model.optimizer.iterations.numpy())
            if self.step // c["every"] > before // c["every"]:
                marks.append((time.perf_counter(), cpu_seconds(), self.step))
                self.model.save_weights(os.path.join(c["model_dir"], f"mnist_model-{self.step}.weights.h5"))
            if self.step >= c["steps"]:
                self.model.stop_training = True

    epochs = math.ceil(c["steps"] / (len(xs) // c["batch"]))
    model.fit(xs, ys, batch_size=c["batch"], epochs=epochs, verbose=0, callbacks=[Clock()])
    (t0, c0, s0), (t1, c1, s1) = marks[0], marks[-1]
    print(json.dumps({"rate": (s1 - s0) / (t1 - t0), "cpu": 1000 * (c1 - c0) / (s1 - s0)}))


def bench_training(data_dir, repeats, every, intervals, train_repeats=None, work=None):
    """Figure 3: steps/s of the course loop, mnist_backward.backward, the in-memory bound, tf.data and Keras.

    Returns ({loop: [steps/s]}, {loop: [CPU ms per step, all threads]}),
    loops as TRAINING_LOOPS: on a busy machine a loop with more threads gets
    a larger share of the CPU, so the CPU cost per step is shown beside the
    rates. The loops run in turn, train_repeats times (default: repeats),
    so the project's i-th run pairs with the in-memory bound's i-th; the
    course's loop runs in the first `repeats` rounds only.
    """
    import numpy as np
    from tf_compat import tf
    import course_baseline
    import mnist_backward
    import mnist_generateds
    path = os.path.join(data_dir, mnist_generateds.tfRecord_train)
    import mnistkit.records
    count = mnistkit.records.check_tfrecord(path)
    pixels, digits = load_records(path)
    arrays = shuffled_arrays(pixels, digits)
    steps = every * (1 + intervals)
    scratch = tempfile.TemporaryDirectory(dir=work)
    arrays_path = os.path.join(scratch.name, "arrays.npz")  # for the Keras process
    np.savez(arrays_path, pixels=pixels, digits=digits)

    def project(clock, model_dir, pipeline="fast"):
        saved = mnist_backward.PRINT_EVERY
        mnist_backward.PRINT_EVERY = every
        try:
            mnist_backward.backward(steps, BATCH_SIZE, data_dir, model_dir, pipeline=pipeline, save_every=every,
                                    log=clock, quiet=True)
        finally:
            mnist_backward.PRINT_EVERY = saved

    def keras(model_dir):
        config = keras_config(steps, every, count, arrays_path, model_dir)
        result = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "keras", json.dumps(config)],
                                capture_output=True, text=True, encoding="utf-8", errors="replace", cwd=ROOT)
        if result.returncode != 0:
            raise SystemExit(f"error: Keras bench child failed with exit status {result.returncode}:\n{result.stderr}")
        out = json.loads(result.stdout.strip().splitlines()[-1])
        return out["rate"], out["cpu"]

    loops = {
        "course": lambda clock, model_dir: course_baseline.backward(
            steps + 1, path, count, model_dir, log=clock, every=every),
        "project": project,
        "in-memory": lambda clock, model_dir: train_in_memory(steps, arrays, count, data_dir, model_dir, clock, every),
        "tf.data": lambda clock, model_dir: project(clock, model_dir, pipeline="tfdata"),
    }
    rates, cpu = {name: [] for name in TRAINING_LOOPS}, {name: [] for name in TRAINING_LOOPS}
    with scratch:
        for r in range(train_repeats or repeats):
            for name in TRAINING_LOOPS:
                if name == "course" and r >= repeats:
                    continue
                note(f"3 training: {name} run {r + 1}/{train_repeats or repeats} ({steps} steps)")
                with tf.Graph().as_default(), tempfile.TemporaryDirectory() as model_dir:
                    if name == "Keras":
                        steps_per_second, cpu_ms = keras(model_dir)
                    else:
                        clock = StepClock()
                        loops[name](clock, model_dir)
                        steps_per_second, cpu_ms = clock.rate()
                rates[name].append(steps_per_second)
                cpu[name].append(cpu_ms)
    return rates, cpu


def bench_full_run(work, steps):
    """Figure 5: wall time of `python mnist_backward.py` in the work folder (fresh model folder)."""
    model_dir = os.path.join(work, "model")
    shutil.rmtree(model_dir, ignore_errors=True)
    command = [sys.executable, os.path.join(ROOT, "mnist_backward.py"), "--data-dir", "data", "--model-dir", "model"]
    if steps is not None:
        command += ["--steps", str(steps)]
    note(f"5 full run: {' '.join(command[1:])}")
    start = time.perf_counter()
    result = subprocess.run(command, cwd=work, capture_output=True, text=True, encoding="utf-8", errors="replace")
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"error: mnist_backward.py failed:\n{result.stderr}")
    from tf_compat import tf
    final_step = int(tf.train.latest_checkpoint(model_dir).rsplit("-", 1)[1])
    return seconds, final_step


LATENCY_SNIPPET = """
import json, sys, time
sys.path.insert(0, {root!r})
import tf_compat
tf_compat.import_tensorflow()  # tf is imported on first use: the time starts after the import
start = time.perf_counter()
import mnist_test
step, accuracy, count = mnist_test.test({model!r}, {data!r}, once=True, log=lambda m: None)
print(json.dumps({{"seconds": time.perf_counter() - start, "accuracy": accuracy, "count": count, "step": step}}))
"""


def bench_latency(work, repeats):
    """Figure 4: seconds from after the TensorFlow import to the printed accuracy of `mnist_test.py --once`."""
    snippet = LATENCY_SNIPPET.format(root=ROOT, model=os.path.join(work, "model"), data=os.path.join(work, "data"))
    runs = []
    for r in range(repeats):
        note(f"4 mnist_test --once: run {r + 1}/{repeats}")
        result = subprocess.run([sys.executable, "-c", snippet], cwd=work, capture_output=True, text=True,
                                encoding="utf-8", errors="replace")
        if result.returncode != 0:
            raise SystemExit(f"error: mnist_test.py --once failed:\n{result.stderr}")
        runs.append(json.loads(result.stdout.strip().splitlines()[-1]))
    return runs


# ---------------------------------------------------------------- figure 6: LeNet-5

KERAS_SNIPPET = """
import json, sys, time
import numpy as np
import tensorflow as tf
import keras
from keras import layers

data, steps, every, batch, lr, decay, reg, model_dir = sys.argv[1:]
steps, every, batch = int(steps), int(every), int(batch)
arrays = np.load(data)
xs, ys = arrays["xs"], arrays["ys"]
init = keras.initializers.TruncatedNormal(stddev=0.1)
l2 = keras.regularizers.L2(float(reg) / 2)  # tf.nn.l2_loss is sum(w ** 2) / 2
model = keras.Sequential([
    keras.Input((784,)), layers.Reshape((28, 28, 1)),
    layers.Conv2D(32, 5, padding="same", activation="relu", kernel_initializer=init, kernel_regularizer=l2),
    layers.MaxPooling2D(2, padding="same"),
    layers.Conv2D(64, 5, padding="same", activation="relu", kernel_initializer=init, kernel_regularizer=l2),
    layers.MaxPooling2D(2, padding="same"),
    layers.Flatten(),
    layers.Dense(512, activation="relu", kernel_initializer=init, kernel_regularizer=l2),
    layers.Dropout(0.5),
    layers.Dense(10, kernel_initializer=init, kernel_regularizer=l2),
])
schedule = keras.optimizers.schedules.ExponentialDecay(float(lr), len(xs) / batch, float(decay), staircase=True)
model.compile(optimizer=keras.optimizers.SGD(schedule, use_ema=True, ema_momentum=0.99),
              loss=keras.losses.CategoricalCrossentropy(from_logits=True))

class Clock(keras.callbacks.Callback):
    marks = []
    def on_train_batch_end(self, batch_index, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step == every or step == steps:
            self.marks.append((time.perf_counter(), time.process_time(), step))
        if step % every == 0:
            self.model.save_weights(f"{model_dir}/lenet5-{step}.weights.h5")
        if step >= steps:
            self.model.stop_training = True

clock = Clock()
model.fit(xs, ys, batch_size=batch, epochs=-(-steps * batch // len(xs)), shuffle=True, verbose=0, callbacks=[clock])
(t0, c0, s0), (t1, c1, s1) = clock.marks
print(json.dumps({"rate": (s1 - s0) / (t1 - t0), "cpu_ms": 1000 * (c1 - c0) / (s1 - s0)}))
"""


def lenet5_in_memory(steps, arrays, train_examples, data_dir, model_dir, log, every):
    """LeNet-5's training graph (mnist_backward.build_graph with mnist_lenet5_forward) fed from NumPy arrays."""
    from tf_compat import tf
    import mnist_backward
    import mnist_lenet5_backward
    import mnist_lenet5_forward
    xs, ys = arrays
    batch = mnist_lenet5_backward.BATCH_SIZE
    batches = len(xs) // batch
    settings = mnist_backward.settings_for(mnist_lenet5_forward, steps, batch, data_dir, model_dir,
                                           pipeline="course", constants=mnist_lenet5_backward)
    import mnistkit.training
    graph = mnist_backward.build_graph(settings, mnistkit.records.training_data(data_dir))
    saver = tf.train.Saver()
    fetches = [graph.train_op, graph.loss, graph.step_after]
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        step = 0
        while step < steps:
            lo = (step % batches) * batch
            _, loss_value, step = sess.run(fetches, feed_dict={graph.x: xs[lo:lo + batch],
                                                                graph.y_: ys[lo:lo + batch]})
            if step == 1 or step % every == 0:
                log("After %d training steps, loss on training batch is %g." % (step, loss_value))
            if step % every == 0:
                saver.save(sess, os.path.join(model_dir, "mnist_model"), global_step=step)


def lenet5_keras(steps, arrays_file, model_dir, every):
    """(steps/s, CPU ms/step) of the same network in Keras model.fit, in a process that imports Keras."""
    import mnist_backward
    import mnist_lenet5_backward
    args = [arrays_file, steps, every, mnist_lenet5_backward.BATCH_SIZE, mnist_lenet5_backward.LEARNING_RATE_BASE,
            mnist_backward.LEARNING_RATE_DECAY, mnist_backward.REGULARIZER, model_dir]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, "-c", KERAS_SNIPPET, *map(str, args)], capture_output=True, text=True,
                            encoding="utf-8", errors="replace",
                            env=env)
    if result.returncode != 0:
        raise SystemExit(f"error: Keras model.fit failed:\n{result.stderr}")
    out = json.loads(result.stdout.strip().splitlines()[-1])
    return out["rate"], out["cpu_ms"]


def bench_lenet5(data_dir, work, repeats, every, intervals):
    """Figure 6: LeNet-5 steps/s through the queue runners, fed from memory, and in Keras model.fit.

    Returns ({loop: [steps/s]}, {loop: [CPU ms per step]}), loops "project",
    "in-memory", "keras"; as figure 3, the first `every` steps are warm-up.
    """
    import numpy as np
    from tf_compat import tf
    import mnist_backward
    import mnist_generateds
    import mnist_lenet5_backward
    path = os.path.join(data_dir, mnist_generateds.tfRecord_train)
    import mnistkit.records
    count = mnistkit.records.check_tfrecord(path)
    arrays = shuffled_arrays(*load_records(path))
    arrays_file = os.path.join(work, "lenet5_arrays.npz")
    np.savez(arrays_file, xs=arrays[0], ys=arrays[1])
    steps = every * (1 + intervals)

    def project(clock, model_dir):
        saved = mnist_backward.PRINT_EVERY
        mnist_backward.PRINT_EVERY = every
        try:
            mnist_lenet5_backward.backward(steps, data_dir=data_dir, model_dir=model_dir, save_every=every,
                                           log=clock, quiet=True)
        finally:
            mnist_backward.PRINT_EVERY = saved

    loops = {
        "project": project,
        "in-memory": lambda clock, model_dir: lenet5_in_memory(steps, arrays, count, data_dir, model_dir, clock, every),
    }
    rates, cpu = {name: [] for name in (*loops, "keras")}, {name: [] for name in (*loops, "keras")}
    for r in range(repeats):
        for name, loop in loops.items():
            note(f"6 LeNet-5 training: {name} run {r + 1}/{repeats} ({steps} steps)")
            clock = StepClock()
            with tf.Graph().as_default(), tempfile.TemporaryDirectory() as model_dir:
                loop(clock, model_dir)
            steps_per_second, cpu_ms = clock.rate()
            rates[name].append(steps_per_second)
            cpu[name].append(cpu_ms)
        note(f"6 LeNet-5 training: keras run {r + 1}/{repeats} ({steps} steps)")
        with tempfile.TemporaryDirectory() as model_dir:
            steps_per_second, cpu_ms = lenet5_keras(steps, arrays_file, model_dir, every)
        rates["keras"].append(steps_per_second)
        cpu["keras"].append(cpu_ms)
    os.remove(arrays_file)
    return rates, cpu


def lenet5_rows(lenet5):
    """Figure 6's table rows, dicts over COLUMNS: steps/s and CPU ms/step, Keras fit in the "other" column."""
    rates, cpu = lenet5
    project, bound, keras = (median(rates[k]) for k in ("project", "in-memory", "keras"))
    paired = [p / b for p, b in zip(rates["project"], rates["in-memory"])]
    return [
        {"figure": "6 LeNet-5 training at batch 100, steps/s", "project": f"{project:,.1f}",
         "in-memory": f"{bound:,.1f}", "other": f"Keras fit: {keras:,.1f}",
         "ratio": f"{median(paired):.2f}x in-memory ({spread(paired)}), {project / keras:.2f}x Keras",
         "target": f">= {TARGETS['lenet5']:g}x in-memory: {verdict(median(paired) >= TARGETS['lenet5'])}; "
                   f">= {TARGETS['lenet5_keras']:g}x Keras: {verdict(project >= TARGETS['lenet5_keras'] * keras)}"},
        {"figure": "6 LeNet-5 CPU time, ms/step", "project": f"{median(cpu['project']):.1f}",
         "in-memory": f"{median(cpu['in-memory']):.1f}", "other": f"Keras fit: {median(cpu['keras']):.1f}"},
    ]


# ---------------------------------------------------------------- the table

def median(values):
    return statistics.median(values)


def verdict(ok):
    return "met" if ok else "**not met**"


COLUMNS = ("figure", "course", "project", "in-memory", "other", "ratio", "target")


def pair_ratios(rates, name, bound="in-memory"):
    """Each run of loop `name` against the bound's run of the same round: the machine's noise shows in their spread."""
    return [a / b for a, b in zip(rates[name], rates[bound])]


def spread(ratios):
    return f"median of {len(ratios)} pairs; single pairs {min(ratios):.2f}-{max(ratios):.2f}"


def table(gen, pipe, train, latency, full_run, quick, info, lenet5=None):
    """The Markdown table: `info`, then one line per row of COLUMNS (rows are dicts; missing cells stay empty)."""
    mb = 1 << 20
    g_course, g_project = median(gen["rates"]["course"]), median(gen["rates"]["project"])
    m_course, m_project = median(gen["peaks"]["course"]), median(gen["peaks"]["project"])
    p_course, p_project = median(pipe["course"]), median(pipe["project"])
    rates, cpu = train
    t = {name: median(values) for name, values in rates.items()}
    c = {name: median(values) for name, values in cpu.items()}
    paired = pair_ratios(rates, "project")
    ratio = median(paired)
    lat = median([r["seconds"] for r in latency])
    accuracy, tested = latency[-1]["accuracy"], latency[-1]["count"]
    run_seconds, run_steps = full_run
    equal, total = gen["identical"]
    rows = [
        {"figure": "1 generation, images/s", "course": f"{g_course:,.0f}", "project": f"{g_project:,.0f}",
         "ratio": f"{g_project / g_course:.2f}x course",
         "target": f">= {TARGETS['generation']:g}x: {verdict(g_project / g_course >= TARGETS['generation'])}"},
        {"figure": "1 generation CPU time, µs/image", "course": f"{1e6 * median(gen['cpu']['course']):.0f}",
         "project": f"{1e6 * median(gen['cpu']['project']):.0f}",
         "ratio": f"course / project: {median(gen['cpu']['course']) / median(gen['cpu']['project']):.2f}"},
        {"figure": "1 peak resident memory, MB", "course": f"{m_course / mb:,.0f}", "project": f"{m_project / mb:,.0f}",
         "ratio": f"above the TF import ({gen['base'] / mb:,.0f}): course +{(m_course - gen['base']) / mb:,.0f}, "
                  f"project +{(m_project - gen['base']) / mb:,.0f}",
         "target": f"<= {TARGETS['memory_mb']}: {verdict(m_project / mb <= TARGETS['memory_mb'])}"},
        {"figure": "1 records equal to the course's", "project": f"{equal:,} of {total:,}", "target": verdict(equal == total)},
        {"figure": "2 input pipeline, examples/s", "course": f"{p_course:,.0f}", "project": f"{p_project:,.0f}",
         "ratio": f"{p_project / p_course:.2f}x course",
         "target": f">= {TARGETS['pipeline']:g}x: {verdict(p_project / p_course >= TARGETS['pipeline'])}"},
        {"figure": "3 training at batch 200, steps/s", "course": f"{t['course']:,.1f}", "project": f"{t['project']:,.1f}",
         "in-memory": f"{t['in-memory']:,.1f}",
         "ratio": f"{ratio:.2f}x in-memory ({spread(paired)}), {t['project'] / t['course']:.2f}x course",
         "target": f">= {TARGETS['training']:.2f}x in-memory: {verdict(ratio >= TARGETS['training'])}"},
        {"figure": "3 training CPU time, ms/step", "course": f"{c['course']:.1f}", "project": f"{c['project']:.1f}",
         "in-memory": f"{c['in-memory']:.1f}", "ratio": f"in-memory / project: {c['in-memory'] / c['project']:.2f}"},
        {"figure": "3 --pipeline tfdata (the product's tf.data path), steps/s (CPU ms/step)",
         "other": f"{t['tf.data']:,.1f} ({c['tf.data']:.1f})",
         "ratio": f"{median(pair_ratios(rates, 'tf.data')):.2f}x in-memory ({spread(pair_ratios(rates, 'tf.data'))}); "
                  f"project / tf.data: {median(pair_ratios(rates, 'project', 'tf.data')):.2f}"},
        {"figure": "3 other: Keras model.fit from NumPy arrays, steps/s (CPU ms/step)",
         "other": f"{t['Keras']:,.1f} ({c['Keras']:.1f})",
         "ratio": f"{median(pair_ratios(rates, 'Keras')):.2f}x in-memory; "
                  f"project / Keras: {median(pair_ratios(rates, 'project', 'Keras')):.2f}"},
        {"figure": f"4 mnist_test.py --once, s ({tested:,} records)", "project": f"{lat:.2f}", "ratio": "after the TF import",
         "target": f"<= {TARGETS['latency']:g} s: {verdict(lat <= TARGETS['latency'])}"},
        {"figure": f"5 mnist_backward.py, {run_steps:,} steps: wall s", "project": f"{run_seconds:,.0f}",
         "ratio": f"{run_steps / run_seconds:.0f} steps/s including start-up"},
        {"figure": "5 test accuracy after the run", "project": f"{accuracy:.4f}",
         "target": "" if quick else f">= {TARGETS['accuracy']}: {verdict(accuracy >= TARGETS['accuracy'])}"},
    ]
    if lenet5 is not None:
        rows += lenet5_rows(lenet5)
    lines = [f"{info}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row.get(column, "") for column in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="the bundled MNIST sample and short runs (a few minutes)")
    parser.add_argument("--idx-dir", default=FULL_IDX_DIR, help="folder of the 4 MNIST-format IDX files (full mode)")
    parser.add_argument("--work-dir", default=WORK_DIR, help="JPG layout (kept for reuse), TFRecords and model")
    parser.add_argument("--repeats", type=int, help="runs of each figure 1-4 (default 3)")
    parser.add_argument("--train-repeats", type=int,
                        help="rounds of figure 3's training runs, the course's loop excepted (default 5, --quick 3)")
    args = parser.parse_args(argv)
    if args.quick:
        settings, idx_dir, work = dict(QUICK), mnistkit.idx.BUNDLED_DIR, os.path.join(args.work_dir, "quick")
    else:
        settings, idx_dir, work = dict(FULL), args.idx_dir, os.path.join(args.work_dir, "full")
    if args.repeats:
        settings["repeats"] = args.repeats
    if args.train_repeats:
        settings["train_repeats"] = args.train_repeats
    for name, _ in mnistkit.idx.IDX_FILES.values():
        if not os.path.isfile(os.path.join(idx_dir, name)):
            print(f"error: {idx_dir}: no {name}; install dataset-fashion-mnist, give --idx-dir, or use --quick",
                  file=sys.stderr)
            return 1
    started = time.perf_counter()
    os.makedirs(work, exist_ok=True)
    note(f"preparing the JPG layout in {work} ...")
    layout = mnistkit.idx.build_jpg_layout(os.path.join(work, "mnist_data_jpg"), idx_dir, download=False, log=note)

    gen = bench_generation(layout, work, settings["repeats"])
    # The project's output of figure 1 is the training file for figures 2-5.
    import mnist_generateds
    data_dir = os.path.join(work, "data")
    os.makedirs(data_dir, exist_ok=True)
    os.replace(gen["project_file"], os.path.join(data_dir, mnist_generateds.tfRecord_train))
    os.remove(gen["course_file"])
    mnist_generateds.write_tfRecord(os.path.join(data_dir, mnist_generateds.tfRecord_test), *layout["test"], log=note)

    pipe = bench_pipeline(data_dir, settings["repeats"], settings["pipeline_secs"])
    train = bench_training(data_dir, settings["repeats"], settings["train_every"], settings["train_intervals"],
                           settings["train_repeats"], work)
    full_run = bench_full_run(work, settings["run_steps"])
    latency = bench_latency(work, settings["repeats"])
    lenet5 = bench_lenet5(data_dir, work, settings["repeats"], settings["lenet5_every"], settings["lenet5_intervals"])

    info = (f"{'Quick' if args.quick else 'Full'} benchmark, {datetime.date.today()}, {os.cpu_count()} CPUs, "
            f"data: {layout['source']} ({gen['count']:,} training images); medians of {settings['repeats']} runs "
            f"side by side ({settings['train_repeats']} rounds of training runs but the course's); "
            f"load average {os.getloadavg()[0]:.1f} at the end; whole benchmark {time.perf_counter() - started:.0f} s.")
    print(table(gen, pipe, train, latency, full_run, args.quick, info, lenet5))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child_main(sys.argv[2:])
    else:
        sys.exit(main())

"""--steps-per-run K: K training steps in one session run (mnistkit.steps.steps_loop), and the run boundaries.

In process: the trainer's backward() with a log that collects its lines,
and the graph itself for the in-loop update, which must be the K single
steps' (gradient step, global_step, moving averages).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, run_main, wait_limit
import mnist_backward
import mnist_forward
import mnist_lenet5_backward
import mnist_lenet5_forward
from mnistkit import checkpoints, cli, folders, records, training
from mnistkit.errors import Interrupted
from tf_compat import tf

LOSS_LINE = re.compile(r"^After (\d+) training steps, loss on training batch is \S+\.$")


def train(data_dir, model_dir, lines, **options):
    """mnist_backward.backward on data_dir into model_dir, its log lines appended to `lines`; the final step."""
    return mnist_backward.backward(data_dir=str(data_dir), model_dir=str(model_dir), quiet=True, log=lines.append,
                                   **options)


def loss_steps(lines):
    """The steps of the course's loss lines among the trainer's log lines."""
    return [int(m.group(1)) for m in map(LOSS_LINE.match, lines) if m]


def summary_steps(model_dir, tag="loss"):
    """The steps at which the trainer wrote TensorBoard scalar `tag` into model_dir/train."""
    folder = os.path.join(str(model_dir), "train")
    steps = []
    for name in sorted(os.listdir(folder)):
        for event in tf.train.summary_iterator(os.path.join(folder, name)):
            steps += [event.step for value in event.summary.value if value.tag == tag]
    return steps


@pytest.mark.parametrize("per_run, boundaries, saved, summarized", [
    (10, [10, 20, 30, 40, 45], [20, 40, 45], [20, 30, 45]),
    (7, [7, 14, 21, 28, 35, 42, 45], [21, 42, 45], [21, 35, 45]),  # 7 divides neither period
])
def test_global_step_moves_by_k_a_run_and_periods_fall_on_the_first_boundary_at_or_after_them(
        sample_workdir, tmp_path, monkeypatch, per_run, boundaries, saved, summarized):
    monkeypatch.setattr(mnist_backward, "PRINT_EVERY", 1)  # a loss line at every run boundary
    lines = []
    step = train(sample_workdir / "data", tmp_path / "model", lines, steps=45, steps_per_run=per_run, save_every=20,
                 summary_every=15, keep=10)
    assert step == 45
    assert loss_steps(lines) == boundaries  # the last run is cut short: never past --steps
    assert checkpoints.checkpoint_steps(str(tmp_path / "model")) == saved
    assert summary_steps(tmp_path / "model") == summarized
    assert lines[-1] == f"done at step 45; checkpoint saved to {tmp_path / 'model' / 'mnist_model-45'}"


def test_a_model_trained_at_one_step_a_run_resumes_at_ten_and_back(sample_workdir, tmp_path, monkeypatch):
    monkeypatch.setattr(mnist_backward, "PRINT_EVERY", 1)
    data, model = sample_workdir / "data", tmp_path / "model"
    lines = []
    assert train(data, model, lines, steps=3) == 3
    assert train(data, model, lines, steps=25, steps_per_run=10) == 25
    assert train(data, model, lines, steps=27) == 27
    assert loss_steps(lines) == [1, 2, 3, 13, 23, 25, 26, 27]
    assert not any("note:" in line or "error" in line for line in lines), lines
    with open(os.path.join(str(model), folders.FOLDER_FILE)) as f:
        assert "steps_per_run" in json.dumps(json.load(f))  # recorded like every flag, free on resume


def test_sigint_stops_at_the_run_boundary_saves_and_exits_130(sample_workdir, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mnist_backward, "PRINT_EVERY", 1)

    def log(line):  # Ctrl-C while the run ending at step 20 is reported
        if line.startswith("After 20 training steps"):
            os.kill(os.getpid(), signal.SIGINT)

    status = cli.exit_status(lambda: mnist_backward.backward(
        data_dir=str(sample_workdir / "data"), model_dir=str(tmp_path / "model"), steps=1000, steps_per_run=10,
        quiet=True, log=log))
    assert status == 128 + signal.SIGINT
    prefix = tmp_path / "model" / "mnist_model-20"
    assert capsys.readouterr().err.strip() == f"SIGINT: stopped at step 20; checkpoint saved to {prefix}"
    assert checkpoints.checkpoint_steps(str(tmp_path / "model")) == [20]


def test_a_diverging_loop_stops_at_the_nan_step_and_saves_nothing_non_finite(sample_workdir, tmp_path):
    lines = []
    with pytest.raises(mnist_backward.training.Diverged) as raised:
        train(sample_workdir / "data", tmp_path / "model", lines, steps=400, steps_per_run=10, save_every=1,
              learning_rate_base=1e6)
    match = re.match(r"step (\d+): the loss is (nan|inf|-inf) ", str(raised.value))
    assert match, raised.value
    step = int(match.group(1))
    saved = checkpoints.checkpoint_steps(str(tmp_path / "model"))
    assert all(s < step for s in saved) and saved == [s for s in range(10, step, 10)]
    for s in saved:
        assert checkpoints.first_non_finite(checkpoints.read_checkpoint(checkpoints.prefix_of(
            str(tmp_path / "model"), s))) is None


def test_the_loop_stops_at_the_first_non_finite_step_as_single_steps_do(tmp_path):
    """From one start, on one batch repeated, a rate that makes the loss non-finite within a few steps: the error
    names the same step at one step a run and at fifty, not the run's boundary, and global_step stops there."""
    (tmp_path / "data").mkdir()
    write_one_record_file(tmp_path / "data" / "mnist_train.tfrecords")

    def diverged_at(model, per_run, *flags):
        result = run_main("mnist_backward.py", "--data-dir", "data", "--model-dir", model, "--batch-size", "20",
                          "--steps-per-run", str(per_run), "--quiet", *flags, cwd=tmp_path)
        match = re.search(r"error: step (\d+): the loss is (?:nan|inf|-inf) ", result.stderr)
        return int(match.group(1)) if match else result
    assert run_main("mnist_backward.py", "--data-dir", "data", "--model-dir", "start", "--batch-size", "20",
                    "--steps", "1", "--quiet", cwd=tmp_path).returncode == 0
    steps = {}
    for per_run in (1, 50):  # runs of 50 steps: global_step 51, 101, ... at their ends
        shutil.copytree(tmp_path / "start", tmp_path / f"k{per_run}")
        steps[per_run] = diverged_at(f"k{per_run}", per_run, "--steps", "200", "--learning-rate-base", "1e30")
    assert isinstance(steps[1], int) and steps[1] % 50 != 1, steps  # a step inside a run of the loop
    assert steps[50] == steps[1]


def write_one_record_file(path, copies=60):
    """A TFRecord file of `copies` identical records (a graded image, digit 7): every batch is the same whatever the
    shuffle."""
    image = bytes(i * 7 % 256 for i in range(records.IMAGE_PIXELS))
    with tf.io.TFRecordWriter(str(path)) as f:
        for _ in range(copies):
            f.write(records.make_example(image, 7).SerializeToString())


def test_k_steps_in_the_loop_are_k_single_steps_with_their_moving_averages(tmp_path):
    per_run, decay = 10, mnist_backward.MOVING_AVERAGE_DECAY
    write_one_record_file(tmp_path / "mnist_train.tfrecords")
    settings = mnist_backward.settings_for(mnist_forward, data_dir=str(tmp_path), batch_size=20,
                                           steps_per_run=per_run, learning_rate_base=0.5)
    data = records.training_data(settings.data_dir, settings.train_file)
    with tf.Graph().as_default():
        graph = mnist_backward.build_graph(settings, data)
        weights = tf.trainable_variables()
        by_name = {v.op.name: v for v in tf.global_variables()}
        shadows = [by_name[w.op.name + "/ExponentialMovingAverage"] for w in weights]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            start = sess.run(weights)
            single = []  # the weights after each single step, and that step's loss
            for _ in range(per_run):
                loss = sess.run([graph.train_op, graph.loss])[1]
                single.append((sess.run(weights), loss))
            single_averaged = sess.run(shadows)  # the single steps' own averages: each after its step's update
            for var, value in zip(weights + shadows, start + start):
                var.load(value, sess)
            graph.global_step.load(0, sess)
            ran, loop_loss, step_after, _ = sess.run(graph.loop.fetches, {graph.loop.count: per_run})
            after, averaged = sess.run([weights, shadows])
            coord.request_stop()
            coord.join(threads)
    assert (ran, step_after) == (per_run, per_run)
    for got, want in zip(after, single[-1][0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert loop_loss == pytest.approx(single[-1][1], rel=1e-4)
    # tf.train.ExponentialMovingAverage's update after each step t = 1..K, on the weights that step made.
    expected = [np.array(w) for w in start]
    for t, (step_weights, _) in enumerate(single, 1):
        d = min(decay, (1 + t) / (10 + t))
        expected = [shadow - (shadow - w) * (1 - d) for shadow, w in zip(expected, step_weights)]
    for got, single_got, want, first in zip(averaged, single_averaged, expected, start):
        assert np.abs(want - first).max() > 1e-3  # the averages moved: the comparison can fail
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(single_got, want, rtol=1e-4, atol=1e-6)


def ancestors(op):
    """Every op `op` waits for in one run: its inputs' ops and control inputs, transitively."""
    seen, todo = set(), [op]
    while todo:
        current = todo.pop()
        for before in [t.op for t in current.inputs] + list(current.control_inputs):
            if before not in seen:
                seen.add(before)
                todo.append(before)
    return seen


def test_the_moving_averages_wait_for_each_weights_old_value_and_gradient_not_for_the_whole_step(sample_workdir):
    """The single step's update (issue #54): each shadow's two halves run beside the step, not after it. The weight's
    apply waits for the first half (the shadow reads the weight before it changes); no part of any average waits for
    the optimizer's apply of its weight or for global_step += 1, which put the averages on every step's tail."""
    settings = mnist_backward.settings_for(mnist_forward, data_dir=str(sample_workdir / "data"), batch_size=20)
    with tf.Graph().as_default():
        graph = mnist_backward.build_graph(settings, records.training_data(settings.data_dir, settings.train_file))
        runs = ancestors(graph.train_op)
        increment = [op for op in runs if op.type == "AssignAddVariableOp" and op.inputs[0].op.name == "global_step"]
        assert len(increment) == 1
        for weight in tf.trainable_variables():
            name = weight.op.name
            apply = [op for op in runs if op.name.startswith(f"GradientDescent/update_{name}/")
                     and op.type == "ResourceApplyGradientDescent"]
            halves = [op for op in runs if op.name.startswith(f"{name}/ExponentialMovingAverage/")
                      and op.type == "ResourceApplyGradientDescent"]
            assert len(apply) == 1 and len(halves) == 2, (name, apply, halves)
            before, step = sorted(halves, key=lambda op: "the_step" in op.name)
            assert before in ancestors(apply[0])  # the weight read for its shadow before the weight changes
            for half in halves:
                assert apply[0] not in ancestors(half) and increment[0] not in ancestors(half), half.name
                assert half.inputs[0].op.name == f"{name}/ExponentialMovingAverage"  # on the shadow itself


def with_optimizer_option(monkeypatch):
    """Declare a test-only option --optimizer {sgd,momentum} (recorded, refused on resume at another value), and its
    use where a developer would put it: build_graph makes its optimizer with tf.train.MomentumOptimizer (momentum
    0.9, slots "<variable>/Momentum") instead of tf.train.GradientDescentOptimizer when it is "momentum"."""
    monkeypatch.setattr(mnist_backward, "OPTIONS", cli.Options([*mnist_backward.OPTIONS, cli.Option(
        "optimizer", "sgd", "the optimizer", choices=("sgd", "momentum"), resume="refuse")]))
    build_graph = mnist_backward.build_graph

    def build(settings, data, *rest):
        with monkeypatch.context() as patch:
            if settings.optimizer == "momentum":
                patch.setattr(tf.train, "GradientDescentOptimizer", lambda rate: tf.train.MomentumOptimizer(rate, 0.9))
            return build_graph(settings, data, *rest)
    monkeypatch.setattr(mnist_backward, "build_graph", build)


def test_an_option_that_swaps_the_optimizer_trains_the_same_weights_and_slots_at_one_and_two_steps_a_run(
        tmp_path, monkeypatch):
    with_optimizer_option(monkeypatch)
    (tmp_path / "data").mkdir()
    write_one_record_file(tmp_path / "data" / "mnist_train.tfrecords")  # every batch the same: one order of data

    def train(model, steps, per_run):
        result = run_main("mnist_backward.py", "--data-dir", "data", "--model-dir", model, "--batch-size", "20",
                          "--steps", str(steps), "--steps-per-run", str(per_run), "--optimizer", "momentum",
                          "--quiet", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        return checkpoints.read_checkpoint(str(tmp_path / model / f"mnist_model-{steps}"))
    start = train("start", 1, 1)  # one step: the same weights and slots to go on from
    for per_run in (1, 2):
        shutil.copytree(tmp_path / "start", tmp_path / f"k{per_run}")
    one, two = train("k1", 7, 1), train("k2", 7, 2)
    slots = [name for name in one if name.endswith("/Momentum")]
    assert sorted(slots) == ["b1/Momentum", "b2/Momentum", "w1/Momentum", "w2/Momentum"]
    assert sorted(two) == sorted(one) == sorted(start)  # the loop made no variables of its own
    for name in slots:
        assert np.abs(one[name] - start[name]).max() > 1e-3, name  # the slots moved: the comparison can fail
    for name in sorted(one):  # weights, slots, moving averages, global_step
        np.testing.assert_allclose(two[name], one[name], rtol=1e-5, atol=1e-7, err_msg=name)


def upstream_types(nodes, name):
    """The op types node `name` of a FunctionDef depends on (inputs and control inputs), within that function.

    nodes: {name: NodeDef} of the function; an input that is not one of
    them is the function's argument (a loop variable, for a while_loop's body)."""
    seen, todo, types = set(), [name], set()
    while todo:
        for given in nodes[todo.pop()].input:
            before = given.lstrip("^").split(":")[0]
            if before in nodes and before not in seen:
                seen.add(before)
                types.add(nodes[before].op)
                todo.append(before)
    return types


def loop_graph(tmp_path, per_run=3, **options):
    """build_graph at --steps-per-run per_run (and options) over write_one_record_file's records, in the current
    graph."""
    write_one_record_file(tmp_path / "mnist_train.tfrecords")
    settings = mnist_backward.settings_for(mnist_forward, data_dir=str(tmp_path), batch_size=20,
                                           steps_per_run=per_run, **options)
    return mnist_backward.build_graph(settings, records.training_data(settings.data_dir, settings.train_file))


def test_each_loop_step_trains_on_the_batch_dequeued_while_the_step_before_computed(tmp_path):
    with tf.Graph().as_default():
        loop_graph(tmp_path)
        graph = tf.get_default_graph()
        (loop,) = [op for op in graph.get_operations() if op.type in ("While", "StatelessWhile")]
        functions = {f.signature.name: {node.name: node for node in f.node_def}
                     for f in graph.as_graph_def().library.function}
    body = functions[loop.get_attr("body").name]
    matmuls = [name for name, node in body.items() if "MatMul" in node.op]
    assert len(matmuls) >= 4, sorted({node.op for node in body.values()})  # the forward and gradient matmuls
    for name in matmuls:  # no step waits for its own dequeue: its batch came in with the loop's variables
        assert not upstream_types(body, name) & {"QueueDequeueManyV2", "If", "StatelessIf"}, name
    # ...and the next step's batch is dequeued in the loop, in a tf.cond that skips it after the run's last step.
    (prefetch,) = [node for node in body.values() if node.op in ("If", "StatelessIf")]
    assert any(node.op == "QueueDequeueManyV2"
               for node in functions[prefetch.attr["then_branch"].func.name].values())


def test_a_run_of_k_steps_draws_exactly_k_batches(tmp_path, monkeypatch):
    def counting_source(settings, data, num, files=None):  # a constant batch, each draw counted
        counter = tf.Variable(0, trainable=False, name="draws", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        batch = (tf.constant(np.full((num, records.IMAGE_PIXELS), 0.5, np.float32)),
                 tf.constant(np.eye(records.NUM_CLASSES, dtype=np.float32)[np.arange(num) % records.NUM_CLASSES]))

        def next_batch():
            with tf.control_dependencies([counter.assign_add(1)]):
                return tuple(tf.identity(t) for t in batch)
        draws.append(counter)
        return batch, next_batch
    draws = []
    monkeypatch.setattr(mnist_backward, "batch_source", counting_source)
    with tf.Graph().as_default():
        graph = loop_graph(tmp_path, per_run=10, pipeline="tfdata")  # no queue to watch
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            counts = []
            for count in (7, 10, 1):  # a run cut short, a whole one, one step
                ran = sess.run(graph.loop.fetches, {graph.loop.count: count})[0]
                counts.append((ran, sess.run(draws[0])))
    assert counts == [(7, 7), (10, 17), (1, 18)]


def test_tfdata_with_mixed_records_trains_at_k_steps_a_run(sample_workdir, tmp_path, monkeypatch):
    monkeypatch.setattr(mnist_backward, "PRINT_EVERY", 1)
    lines = []
    mix = str(sample_workdir / "data" / "mnist_test.tfrecords")
    assert train(sample_workdir / "data", tmp_path / "model", lines, steps=8, steps_per_run=4, pipeline="tfdata",
                 mix_records=mix) == 8
    assert loss_steps(lines) == [4, 8]


def test_lenet5_trains_at_k_steps_a_run(sample_workdir, tmp_path):
    lines = []
    step = mnist_lenet5_backward.backward(data_dir=str(sample_workdir / "data"), model_dir=str(tmp_path / "model"),
                                          steps=6, steps_per_run=3, quiet=True, log=lines.append, print_every=1)
    assert step == 6 and loss_steps(lines) == [3, 6]
    assert checkpoints.folder_network(str(tmp_path / "model")).forward == mnist_lenet5_forward.NETWORK.forward


@pytest.mark.parametrize("flags, refused", [
    (["--pipeline", "course"], "--pipeline course (which feeds each batch from Python)"),
    (["--job_name", "worker", "--ps_hosts", "localhost:1", "--worker_hosts", "localhost:2", "--sync_replicas"],
     "--sync_replicas (SyncReplicasOptimizer aggregates one step per session run)"),
])
def test_what_cannot_run_steps_in_the_graph_is_refused_in_one_line(flags, refused, capsys):
    with pytest.raises(SystemExit) as raised:
        mnist_backward.main(["--steps-per-run", "10", *flags])
    assert raised.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        f"error: --steps-per-run 10 runs its steps inside the graph: it cannot go with {refused}; "
        "give --steps-per-run 1")


def test_backward_refuses_the_course_pipeline_at_k_above_1_naming_its_keywords(tmp_path):
    with pytest.raises(ValueError) as raised:
        mnist_backward.backward(steps=20, steps_per_run=10, pipeline="course", model_dir=str(tmp_path / "model"))
    assert str(raised.value) == ("steps_per_run=10 runs its steps inside the graph: it cannot go with "
                                 "pipeline='course' (which feeds each batch from Python); give steps_per_run=1")
    assert not (tmp_path / "model").exists()  # refused before any file is read or written


@pytest.mark.long
def test_asynchronous_workers_with_split_weights_run_k_steps_a_run(sharded_data, tmp_path):
    """2 parameter servers (w1 split between them) and 2 workers at --steps-per-run 10: each update counted once."""
    per_run, target = 10, 60
    result = subprocess.run([sys.executable, os.path.join(ROOT, "mnist_cluster.py"), "--ps", "2", "--workers", "2",
                             "--steps", str(target), "--steps-per-run", str(per_run), "--data-dir", str(sharded_data),
                             "--model-dir", str(tmp_path / "model")],
                            cwd=tmp_path, capture_output=True, text=True, timeout=wait_limit(600))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    done = re.findall(r"^\[worker (\d)\] worker \1: (\d+) local steps; global_step (\d+)$", output, re.M)
    assert len(done) == 2, output
    final = max(int(g) for _, _, g in done)
    assert sum(int(n) for _, n, _ in done) == final  # every step of every run is one update of the shared variables
    assert target <= final < target + 2 * per_run  # at most one run of each worker goes past the target
    assert tf.train.load_variable(tf.train.latest_checkpoint(str(tmp_path / "model")), "global_step") >= target


def test_the_trainers_session_runs_without_thread_spinning(sample_workdir, tmp_path, monkeypatch):
    made, real = [], training.session_config

    def recording(**fields):
        made.append(real(**fields))
        return made[-1]
    monkeypatch.setattr(training, "session_config", recording)
    assert train(sample_workdir / "data", tmp_path / "model", [], steps=2) == 2
    assert len(made) == 1 and made[0].experimental.disable_thread_spinning  # idle pools sleep: the cores go to work
    assert list(real(device_filters=["/job:ps"]).device_filters) == ["/job:ps"]  # a cluster worker's, kept

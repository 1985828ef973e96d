"""Faults: processes really killed or signalled; nothing is lost, nothing half-written is used."""
import errno
import gzip
import hashlib
import os
import re
import shutil
import signal
import struct
import subprocess
import sys

import numpy as np
import pytest

import conftest
from conftest import ROOT, ended, run_main, run_script
from tf_compat import tf

sys.path.insert(0, os.path.join(ROOT, "bench"))
import soak  # noqa: E402
import mnistkit.checkpoints
import mnistkit.folders
import mnistkit.idx

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="kills, stops and holds processes with POSIX signals, named pipes and Linux's /proc")


# How long a test waits for an event (a file, a line, a process state) before calling it broken, on a quiet machine
# (conftest.wait_limit scales it with the load): far beyond what any of them takes on a busy 2-core machine, so it
# matters only when something hangs.
PATIENCE_SECS = 120


def start(script, *args, cwd):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, os.path.join(ROOT, script), *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=soak.default_sigint)


def wait_for(condition, what, proc=None, timeout=PATIENCE_SECS):
    """conftest.wait_for polling every 0.01 s (a process is caught at a point of its work, between two saves):
    condition()'s first true value; fails naming `what` when proc ends first or after wait_limit(timeout) s."""
    return conftest.wait_for(condition, what, timeout, every=0.01, process=proc)


def reader_blocked_on(fifo):
    """A write end of the named pipe once a process opened it to read, else None.

    The reader then waits in read() for bytes that never come (this end stays
    open, without data): the process is stopped at that point of its work,
    however fast or slow the machine. Close the returned fd after killing it.
    """
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ENXIO:  # no reader yet
            return None
        raise


def digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def kill9(process):
    process.send_signal(signal.SIGKILL)
    ended(process, "a process killed with SIGKILL")


@pytest.mark.long
def test_generator_killed_mid_write_leaves_the_previous_output_and_a_rerun_succeeds(sample_workdir, tmp_path):
    # Each killed run is held at its moment by a named pipe in place of an input
    # file, so the moment is reached whatever the machine's speed.
    work = tmp_path / "work"
    shutil.copytree(sample_workdir, work)
    data, jpg = work / "data", work / "mnist_data_jpg"
    good = digests(data)
    test = [str(jpg / "mnist_test_jpg_2000"), str(jpg / "mnist_test_jpg_2000.txt")]
    # A temporary file: the training split is being written, its 1001st image (a pipe) never arrives.
    held = work / "held"
    held.mkdir()
    lines = (jpg / "mnist_train_jpg_8000.txt").read_text().splitlines()[:1000]
    for line in lines:
        name = line.split()[0]
        os.link(jpg / "mnist_train_jpg_8000" / name, held / name)
    os.mkfifo(held / "pipe.jpg")
    (work / "held.txt").write_text("\n".join(lines + ["pipe.jpg 7"]) + "\n")
    (work / "first1000.txt").write_text("\n".join(lines) + "\n")
    moments = {"a temporary file": ([str(held), str(work / "held.txt")] + test, held / "pipe.jpg", ".tmp"),
               # The finished train split (1000 records, unlike the good file's 8000): staged under its
               # hidden name, while the test split's label file (a pipe) never arrives.
               "the finished train split": ([str(held), str(work / "first1000.txt"), test[0], str(work / "test.txt")],
                                            work / "test.txt", ".staging-mnist_train.tfrecords")}
    os.mkfifo(work / "test.txt")
    for moment, (inputs, pipe, left) in moments.items():
        flags = [f"--{split}-{kind}" for split in ("train", "test") for kind in ("images", "labels")]
        proc = start("mnist_generateds.py", "--no-download", "--workers", "1",
                     *(x for pair in zip(flags, inputs) for x in pair), cwd=work)
        held_open = wait_for(lambda: reader_blocked_on(pipe), f"the generator at {moment}", proc)
        try:
            assert [n for n in os.listdir(data) if n.endswith(left)], (moment, os.listdir(data))
        finally:
            kill9(proc)
            os.close(held_open)
        assert {k: v for k, v in digests(data).items() if not k.startswith(".")} == good
    rerun = run_script("mnist_generateds.py", "--no-download", cwd=work)
    assert rerun.returncode == 0, rerun.stderr
    assert digests(data) == good  # same records, and the killed runs' temporaries are gone


@pytest.mark.long
def test_generator_killed_while_building_the_jpg_layout_recovers(sample_workdir, tmp_path):
    # The build from --idx-dir checks all four IDX files, then writes 60,000 training JPGs
    # into a hidden folder: seconds of work on any machine (a JPG each), and the test waits
    # in steps of 10 ms, so it sees the folder and kills the build in the middle of it.
    idx = tmp_path / "idx"
    idx.mkdir()
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "train")
    for split, count in (("train", 60000), ("test", 100)):
        image_name, label_name = mnistkit.idx.IDX_FILES[split]
        with gzip.open(idx / image_name, "wb", compresslevel=1) as f:
            f.write(struct.pack(">IIII", mnistkit.idx.IMAGE_MAGIC, count, 28, 28) + np.resize(images, (count, 28, 28)).tobytes())
        with gzip.open(idx / label_name, "wb", compresslevel=1) as f:
            f.write(struct.pack(">II", mnistkit.idx.LABEL_MAGIC, count) + np.resize(labels, count).tobytes())
    jpg = tmp_path / "mnist_data_jpg"
    proc = start("mnist_generateds.py", "--idx-dir", str(idx), "--no-download", cwd=tmp_path)
    try:
        wait_for(lambda: jpg.exists() and any(n.startswith(".mnist_train_jpg_60000.") for n in os.listdir(jpg)),
                 "the JPG build", proc)
    finally:
        kill9(proc)
    assert [n for n in os.listdir(jpg) if n.startswith(".mnist_train_jpg_60000.")]  # what the rerun must clear
    assert mnistkit.idx.read_manifest(str(jpg)) is None  # its SOURCE.txt marks the folder as built here, naming no layout
    assert not (tmp_path / "data" / "mnist_train.tfrecords").exists()
    rerun = run_script("mnist_generateds.py", "--no-download", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert "wrote 8000 train records" in rerun.stdout
    assert digests(tmp_path / "data") == digests(sample_workdir / "data")
    assert sorted(n for n in os.listdir(jpg)) == sorted(os.listdir(sample_workdir / "mnist_data_jpg"))


def all_threads_stopped(proc):
    """True when every thread of proc is in the stopped state (T), e.g. after SIGSTOP (Linux /proc)."""
    tasks = f"/proc/{proc.pid}/task"
    states = []
    for task in os.listdir(tasks):
        try:
            with open(f"{tasks}/{task}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:  # a thread that just ended
            pass
    return states and all(state in "Tt" for state in states)


def stopped_between_saves(proc, model, at_least):
    """Stop proc (SIGSTOP); return the newest checkpoint's step when no save is under way, else resume proc, None.

    Between saves the model folder holds only whole checkpoints (.index, .data,
    .meta), the newest of them named in the `checkpoint` index, no `_temp`
    folder and no half-written index file (besides train/, schedule.json and
    the trainer's lock, which names it while it runs).
    """
    if proc.poll() is not None:
        return None
    proc.send_signal(signal.SIGSTOP)
    wait_for(lambda: all_threads_stopped(proc), "SIGSTOP to take effect", proc)
    names = set(os.listdir(model)) if model.exists() else set()
    steps = mnistkit.checkpoints.checkpoint_steps(str(model))
    whole = {f"mnist_model-{s}.{ext}" for s in steps for ext in ("index", "data-00000-of-00001", "meta")}
    indexed = mnistkit.folders.indexed_prefix(str(model))
    held = {"checkpoint", "train", "schedule.json", mnistkit.folders.LOCK_FILE}
    if (steps and steps[-1] >= at_least and names - {"history"} == whole | held  # history/: --history's snapshots
            and indexed == str(model / f"mnist_model-{steps[-1]}")):
        return steps[-1]
    proc.send_signal(signal.SIGCONT)
    return None


@pytest.mark.long
def test_trainer_killed_resumes_from_the_latest_complete_checkpoint(sample_workdir, tmp_path):
    shutil.copytree(sample_workdir / "data", tmp_path / "data")
    model = tmp_path / "model"
    proc = start("mnist_backward.py", "--steps", "1000000", "--save-every", "20", cwd=tmp_path)
    # Killed between saves, once three checkpoints are written. (A kill amid Saver.save
    # is what the _temp folder below stands for; its moment cannot be hit on purpose.)
    try:
        step = wait_for(lambda: stopped_between_saves(proc, model, 60), "three checkpoints", proc)
    finally:
        kill9(proc)
    assert tf.train.latest_checkpoint(str(model)).endswith(f"mnist_model-{step}")
    # What a kill during Saver.save leaves: a temporary folder and no index entry.
    (model / f"mnist_model-{step + 20}_temp").mkdir(exist_ok=True)
    (model / f"mnist_model-{step + 20}_temp" / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"\0" * 100)
    rerun = run_main("mnist_backward.py", "--steps", str(step + 10), "--save-every", "20", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    training = [line for line in rerun.stdout.splitlines() if line.startswith("training on")]
    assert training[0].endswith(f"resuming from ./model/mnist_model-{step}; target global_step {step + 10}; running on CPU")
    final = tf.train.latest_checkpoint(str(model))
    assert final.endswith(f"mnist_model-{step + 10}")
    assert tf.train.load_variable(final, "global_step") == step + 10
    assert not (model / f"mnist_model-{step + 20}_temp").exists()
    assert not (model / mnistkit.folders.LOCK_FILE).exists()  # the killed run's, taken over and let go


@pytest.mark.parametrize("signum", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.long)])
def test_signal_saves_a_checkpoint_and_exits_promptly(sample_workdir, tmp_path, signum):
    shutil.copytree(sample_workdir / "data", tmp_path / "data")
    model = tmp_path / "model"
    proc = start("mnist_backward.py", "--steps", "1000000", "--save-every", "50", cwd=tmp_path)
    try:
        wait_for(lambda: mnistkit.folders.indexed_prefix(str(model)), "the first checkpoint (step 50)", proc)
        proc.send_signal(signum)
        # Promptly: 10^6 steps would take hours; the wait matters only when the signal is ignored.
        out, err = ended(proc, f"the trainer after {signal.Signals(signum).name}", PATIENCE_SECS)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    assert out.startswith("training on 8000 records")
    assert out.splitlines()[1].startswith("After 1 training steps")
    name = signal.Signals(signum).name
    stopped = re.fullmatch(rf"{name}: stopped at step (\d+); checkpoint saved to ./model/mnist_model-\1\n", err)
    assert stopped, err
    step = int(stopped.group(1))
    assert tf.train.load_variable(str(model / f"mnist_model-{step}"), "global_step") == step
    assert tf.train.latest_checkpoint(str(model)).endswith(f"mnist_model-{step}")
    assert step >= 50  # stopped mid-training, after the checkpoint it was sent upon


@pytest.mark.long
def test_trainer_and_evaluator_side_by_side_until_six_checkpoints_are_scored_with_the_harshest_rotation(
        sample_workdir, tmp_path):
    # --save-every 50 --keep 1: the trainer deletes each checkpoint soon after
    # the next one, often while the evaluator (every 0.5 s) is reading it.
    # At least 15 s, and on until the evaluator has scored 6 checkpoints (a busy machine scores fewer in
    # the same time). The long run is `python bench/soak.py --minutes 10` (docs/troubleshooting.md).
    shutil.copytree(sample_workdir / "data", tmp_path / "data")
    keep = 1
    found = soak.soak(str(tmp_path), 15, save_every=50, keep=keep, interval=0.5, min_lines=6)
    # The evaluator never failed: no exit 1, no traceback, no false "damaged" nor "deleted" line.
    assert found["trainer_rc"] == 128 + signal.SIGTERM, found["trainer_err"]
    assert found["evaluator_rc"] == 128 + signal.SIGINT, found["evaluator_err"]
    assert found["trainer_err"] == (f"SIGTERM: stopped at step {found['final_step']}; "
                                    f"checkpoint saved to ./model/mnist_model-{found['final_step']}\n")
    assert found["evaluator_err"] == "SIGINT: stopped\n"
    # It scored several distinct checkpoints, each one the trainer's rotation deleted later.
    steps = [step for step, _ in found["lines"]]
    assert len(steps) >= 6 and steps == sorted(set(steps)), steps
    assert all(step % 50 == 0 or step == found["final_step"] for step in steps)
    deleted = [step for step in steps if not (tmp_path / "model" / f"mnist_model-{step}.index").exists()]
    assert len(deleted) >= 5, (steps, found["final_step"])
    assert found["mismatches"] == []
    # Only the newest --keep checkpoint is left, and the index file names it alone.
    kept = [f"mnist_model-{found['final_step']}"]
    assert sorted(os.listdir(tmp_path / "model")) == sorted(
        ["checkpoint", "eval", "schedule.json", "train"] + [f"{name}.{ext}" for name in kept
                                           for ext in ("data-00000-of-00001", "index", "meta")])
    state = tf.train.get_checkpoint_state(str(tmp_path / "model"))  # (which makes the paths absolute)
    assert [os.path.basename(state.model_checkpoint_path)] + [
        os.path.basename(path) for path in state.all_model_checkpoint_paths] == kept[-1:] + kept

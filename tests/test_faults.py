"""Faults: processes really killed or signalled; nothing is lost, nothing half-written is used."""
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, run_script
from tf_compat import tf

sys.path.insert(0, os.path.join(ROOT, "bench"))
import soak  # noqa: E402


def start(script, *args, cwd):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, os.path.join(ROOT, script), *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=soak.default_sigint)


def wait_for(condition, timeout=60, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def kill9(process):
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def test_generator_killed_mid_write_leaves_the_previous_output_and_a_rerun_succeeds(sample_workdir, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(sample_workdir, work)
    data = work / "data"
    good = digests(data)
    for moment in ("a temporary file", "the finished train split"):
        proc = start("mnist_generateds.py", "--no-download", cwd=work)
        if moment == "a temporary file":
            wait_for(lambda: any(n.endswith(".tmp") for n in os.listdir(data)), what=moment)
        else:
            wait_for(lambda: ".staging-mnist_train.tfrecords" in os.listdir(data), what=moment)
        kill9(proc)
        assert {k: v for k, v in digests(data).items() if not k.startswith(".")} == good
    rerun = run_script("mnist_generateds.py", "--no-download", cwd=work)
    assert rerun.returncode == 0, rerun.stderr
    assert digests(data) == good  # same records, and the killed runs' temporaries are gone


def test_generator_killed_while_building_the_jpg_layout_recovers(sample_workdir, tmp_path):
    jpg = tmp_path / "mnist_data_jpg"
    proc = start("mnist_generateds.py", "--no-download", cwd=tmp_path)
    wait_for(lambda: jpg.exists() and any(n.startswith(".mnist_train_jpg_") for n in os.listdir(jpg)), what="the JPG build")
    time.sleep(0.3)
    kill9(proc)
    assert not (jpg / "SOURCE.txt").exists()
    assert not (tmp_path / "data" / "mnist_train.tfrecords").exists()
    rerun = run_script("mnist_generateds.py", "--no-download", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert "wrote 8000 train records" in rerun.stdout
    assert digests(tmp_path / "data") == digests(sample_workdir / "data")
    assert sorted(n for n in os.listdir(jpg)) == sorted(os.listdir(sample_workdir / "mnist_data_jpg"))


def test_trainer_killed_resumes_from_the_latest_complete_checkpoint(sample_workdir, tmp_path):
    shutil.copytree(sample_workdir / "data", tmp_path / "data")
    model = tmp_path / "model"
    proc = start("mnist_backward.py", "--steps", "1000000", "--save-every", "20", cwd=tmp_path)
    wait_for(lambda: (tf.train.latest_checkpoint(str(model)) or "-0").endswith(("-60", "-80", "-100")),
             what="three checkpoints")
    time.sleep(0.137)  # some way into the next interval, maybe mid-save
    kill9(proc)
    latest = tf.train.latest_checkpoint(str(model))
    step = int(latest.rsplit("-", 1)[1])
    # What a kill during Saver.save leaves: a temporary folder and no index entry.
    (model / f"mnist_model-{step + 20}_temp").mkdir(exist_ok=True)
    (model / f"mnist_model-{step + 20}_temp" / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"\0" * 100)
    rerun = run_script("mnist_backward.py", "--steps", str(step + 10), "--save-every", "20", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    training = [line for line in rerun.stdout.splitlines() if line.startswith("training on")]
    assert training[0].endswith(f"resuming from ./model/mnist_model-{step}; target global_step {step + 10}")
    final = tf.train.latest_checkpoint(str(model))
    assert final.endswith(f"mnist_model-{step + 10}")
    assert tf.train.load_variable(final, "global_step") == step + 10
    assert not (model / f"mnist_model-{step + 20}_temp").exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_saves_a_checkpoint_and_exits_within_5_seconds(sample_workdir, tmp_path, signum):
    shutil.copytree(sample_workdir / "data", tmp_path / "data")
    proc = start("mnist_backward.py", "--steps", "1000000", cwd=tmp_path)
    assert proc.stdout.readline().startswith("training on 8000 records")
    assert proc.stdout.readline().startswith("After 1 training steps")
    time.sleep(0.5)
    sent = time.time()
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert time.time() - sent < 5
    assert proc.returncode == 128 + signum
    name = signal.Signals(signum).name
    step = int(err.split(" stopped at step ")[1].split(";")[0])
    assert err == f"{name}: stopped at step {step}; checkpoint saved to ./model/mnist_model-{step}\n"
    assert tf.train.load_variable(str(tmp_path / "model" / f"mnist_model-{step}"), "global_step") == step
    assert step > 1


def test_trainer_and_evaluator_side_by_side_for_60_seconds_with_the_harshest_rotation(sample_workdir, tmp_path):
    # --save-every 50 --keep 1: the trainer deletes each checkpoint soon after
    # the next one, often while the evaluator (every 0.5 s) is reading it.
    shutil.copytree(sample_workdir / "data", tmp_path / "data")
    found = soak.soak(str(tmp_path), 60, save_every=50, keep=1, interval=0.5)
    assert found["trainer_rc"] == 128 + signal.SIGTERM, found["trainer_err"]
    assert found["evaluator_rc"] == 128 + signal.SIGINT, found["evaluator_err"]
    assert found["trainer_err"].startswith("SIGTERM: stopped at step ")
    assert found["evaluator_err"] == "stopped\n"  # no traceback, no false "damaged"
    steps = [step for step, _ in found["lines"]]
    assert len(steps) >= 5 and steps == sorted(set(steps))
    assert all(step % 50 == 0 or step == found["final_step"] for step in steps)
    assert found["mismatches"] == []
    assert sorted(os.listdir(tmp_path / "model")) == sorted(
        ["checkpoint", "eval", "train"] + [f"mnist_model-{found['final_step']}.{ext}"
                                           for ext in ("data-00000-of-00001", "index", "meta")])

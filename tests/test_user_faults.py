"""Faults real users hit: a paused machine, a full disk, two processes on one folder, a changed batch size,
Ctrl-C anywhere, a cluster started with mismatched flags. Each case: the exit status, the one line, the files."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import (LENET5_STEPS, ROOT, TRAIN_STEPS, ended, mounted_tmpfs, read_line, run_main, run_script,
                      shown, tree_digests, wait_limit)
from test_faults import PATIENCE_SECS, reader_blocked_on, wait_for
import mnist_cluster

POSIX = pytest.mark.skipif(os.name != "posix", reason="needs POSIX signals (SIGSTOP, SIGINT to a process)")
ROOT_ONLY = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                               reason="needs root to mount a small tmpfs (a full disk)")

# The trainer with the step time-out shortened from 60 s to argv[2] ms, so that a pause longer than it is cheap.
SHORT_TIMEOUT = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import mnist_backward
    import mnistkit.training
    mnistkit.training.STEP_TIMEOUT_MS = int(sys.argv[2])
    sys.exit(mnist_backward.main(sys.argv[3:]))
""")


def start(args, cwd, code=None, **popen):
    program = ["-c", code, ROOT] if code else []
    return subprocess.Popen([sys.executable, *program, *args], cwd=cwd, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, PYTHONUNBUFFERED="1"), **popen)


def copy_data(sample_workdir, work):
    shutil.copytree(sample_workdir / "data", work / "data")
    return work / "data"


# ---------------------------------------------------------------- 1. a paused process is not a stuck one

@pytest.mark.long
@POSIX
def test_a_trainer_paused_longer_than_the_step_timeout_goes_on(sample_workdir, tmp_path):
    copy_data(sample_workdir, tmp_path)
    # Batches of 4,000: the main thread spends nearly all its time inside a step, so a stop lands in one.
    # A time-out of 4 s on a quiet machine, times the load per core on a busier one (wait_limit), the pauses twice
    # as long: a loaded machine's reader threads may take more than a second or two to fill a batch of 4,000, and
    # a fixed 4 s then ends the run as a stuck input (rightly: that is a slow input, not a pause).
    timeout = wait_limit(4)
    proc = start([str(int(timeout * 1000)), "--steps", "80", "--batch-size", "4000", "--save-every", "10",
                  "--quiet"], tmp_path, SHORT_TIMEOUT)
    wait_for(lambda: (tmp_path / "model" / "mnist_model-10.index").exists(), "the first checkpoint", proc)
    for _ in range(2):  # Ctrl-Z, then `fg` after twice the time-out
        proc.send_signal(signal.SIGSTOP)
        time.sleep(2 * timeout)
        proc.send_signal(signal.SIGCONT)
        time.sleep(1)
    out, err = ended(proc, "the trainer after its two pauses", PATIENCE_SECS)
    assert proc.returncode == 0, err
    assert err == ""
    assert out.rstrip().splitlines()[-1] == "done at step 80; checkpoint saved to ./model/mnist_model-80"
    # Not a stuck input: a step that timed out in the pause was run again, its pause measured at least 2 s
    # (8 s quietly; more on a loaded machine, where the SIGCONT and the watch's next tick come later). On a
    # quiet machine the step stopped mid-way may end before its time-out fires after the SIGCONT: then no step
    # timed out and there is no note; either way the run went on to its end (above) instead of ending as stuck.
    paused = re.findall(r"^note: this process was paused for (\d+) s; going on with the step$", out, re.M)
    assert all(int(seconds) >= 2 for seconds in paused), out
    assert not re.search(r"stuck|timed out", out + err), out + err


# A training file corrupted while training reads it (course pipeline: its reader checks every CRC):
# the run ends in one line, after saving the steps done.
CORRUPTED_AT_STEP = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import mnist_backward
    import mnistkit.training
    real, calls = mnist_backward.run_step, [0]

    def run_step(*args):
        calls[0] += 1
        if calls[0] == 150:
            with open("data/mnist_train.tfrecords", "r+b") as f:
                f.seek(1000)
                f.write(b"\\xff" * 64)  # into a record: its CRC fails when the reader comes by
        return real(*args)

    mnist_backward.run_step = run_step
    mnistkit.records.TrainingData.check_unchanged = lambda self: None  # the CRC is what this case is about
    sys.exit(mnist_backward.main(sys.argv[2:]))
""")


@pytest.mark.long
def test_a_failing_input_during_training_saves_the_steps_done_first(sample_workdir, tmp_path):
    copy_data(sample_workdir, tmp_path)
    proc = start(["--steps", "100000", "--pipeline", "course", "--quiet"], tmp_path, CORRUPTED_AT_STEP)
    out, err = ended(proc, "the trainer whose input fails", PATIENCE_SECS)
    assert proc.returncode == 1, err
    line = err.strip()
    assert line.startswith("error: ./data/mnist_train.tfrecords: input pipeline failed: ") and "\n" not in line
    saved = line.rsplit("; checkpoint saved to ", 1)[1]
    step = int(saved.rsplit("-", 1)[1])
    assert step >= 149 and os.path.exists(tmp_path / (saved + ".index"))
    assert run_main("mnist_test.py", "--once", cwd=tmp_path).stdout.startswith(f"After {step} training steps")


@pytest.mark.long
def test_a_training_file_rewritten_while_training_is_said_and_the_steps_are_saved(sample_workdir, tmp_path):
    data = copy_data(sample_workdir, tmp_path)
    proc = start([os.path.join(ROOT, "mnist_backward.py"), "--steps", "100000", "--save-every", "100000",
                  "--quiet"], tmp_path)
    wait_for(lambda: "After 1 training steps" in read_line(proc, "a line of the trainer"), "the first step", proc)
    time.sleep(0.5)
    shutil.copy(data / "mnist_test.tfrecords", data / ".new")
    os.replace(data / ".new", data / "mnist_train.tfrecords")  # what a generator's rename does
    out, err = ended(proc, "the trainer whose training file was rewritten", PATIENCE_SECS)
    assert proc.returncode == 1
    message, saved = err.strip().split("; checkpoint saved to ")
    assert message == ("error: ./data/mnist_train.tfrecords: the training file changed while training (rewritten "
                       "by mnist_generateds.py?); run the trainer again to train on the new file")
    assert os.path.exists(tmp_path / (saved + ".index")) and os.path.exists(tmp_path / (saved + ".meta"))


# ---------------------------------------------------------------- 2. a full disk is one line, and nothing is lost

@pytest.fixture
def small_disk(tmp_path):
    """An 8 MiB tmpfs at tmp_path/small: room for two checkpoints of the 784-500-10 network, not three."""
    with mounted_tmpfs(tmp_path / "small", "8m", "the tests marked ROOT_ONLY are skipped") as mount:
        yield mount


@ROOT_ONLY
def test_a_full_disk_while_saving_is_one_line_and_keeps_the_earlier_checkpoints(sample_workdir, tmp_path,
                                                                               small_disk):
    copy_data(sample_workdir, tmp_path)
    # --history 0: the disk is sized for the checkpoints alone (the snapshots would fill it first)
    result = run_main("mnist_backward.py", "--model-dir", "small/model", "--steps", "300", "--save-every", "100",
                      "--history", "0", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == ("error: small/model: no space left on device while saving mnist_model-300; "
                             "the newest checkpoint is small/model/mnist_model-200\n")
    model = small_disk / "model"
    assert sorted(p.name for p in model.iterdir() if p.is_file()) == [
        "checkpoint", "mnist_model-100.data-00000-of-00001", "mnist_model-100.index", "mnist_model-100.meta",
        "mnist_model-200.data-00000-of-00001", "mnist_model-200.index", "mnist_model-200.meta", "schedule.json"]
    assert "mnist_model-200" in (model / "checkpoint").read_text()
    evaluated = run_main("mnist_test.py", "--once", "--model-dir", "small/model", cwd=tmp_path)
    assert evaluated.stdout.startswith("After 200 training steps, test accuracy = ")


@pytest.mark.long
@ROOT_ONLY
def test_a_full_disk_for_the_report_the_input_picture_and_the_jpg_layout_is_one_line_each(trained_workdir,
                                                                                         tmp_path, small_disk):
    shutil.copytree(trained_workdir / "model", tmp_path / "model")
    with open(small_disk / "filler", "wb") as f:  # fill the disk to its last byte
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    assert not os.statvfs(small_disk).f_bavail
    before = tree_digests(small_disk)
    evaluated = run_main("mnist_test.py", "--once", "--model-dir", "model", "--data-dir",
                         str(trained_workdir / "data"), "--report", "small/r.png", cwd=tmp_path)
    assert evaluated.returncode == 1
    assert evaluated.stderr == "error: small/r.png: cannot write report (no space left on device)\n"
    import mnistkit.idx
    from PIL import Image
    images, _ = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    Image.fromarray(255 - images[5]).save(tmp_path / "digit.png")
    applied = run_main("mnist_app.py", "--model-dir", "model", "--show-input", "small/seen.png", "digit.png",
                       cwd=tmp_path)
    assert applied.returncode == 1
    assert applied.stderr == "error: small/seen.png: cannot write --show-input picture (no space left on device)\n"
    generated = run_script("mnist_generateds.py", "--no-download", "--jpg-dir", "small/jpg", "--data-dir", "out",
                           cwd=tmp_path)
    assert generated.returncode == 1
    assert generated.stderr == "error: small/jpg: cannot write the JPG layout (no space left on device)\n"
    assert tree_digests(small_disk) == before  # nothing half-written left
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- 3. two processes on one folder

@pytest.mark.long  # the folder lock's refusal: test_one_writer.py's
@POSIX
def test_a_second_generator_on_the_same_folder_says_so_and_the_first_finishes(sample_workdir, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(sample_workdir / "mnist_data_jpg", work / "jpg")
    test_images = work / "jpg" / "mnist_test_jpg_2000"
    first = sorted(test_images.iterdir())[0]
    pixels = first.read_bytes()
    first.unlink()
    os.mkfifo(first)  # generator A stops there, in the middle of its work, holding the folder
    args = [os.path.join(ROOT, "mnist_generateds.py"), "--jpg-dir", "jpg", "--data-dir", "out", "--workers", "1"]
    a = start(args, work)
    writer_end = wait_for(lambda: reader_blocked_on(first), "generator A reading the named pipe", a)
    b = run_script("mnist_generateds.py", "--jpg-dir", "jpg", "--data-dir", "out", "--workers", "1", cwd=work)
    assert b.returncode == 1
    assert b.stderr == (f"error: out: `python mnist_generateds.py --jpg-dir jpg --data-dir out --workers 1` (pid "
                        f"{a.pid}) is writing this folder; wait for it or use another --data-dir\n")
    os.write(writer_end, pixels)  # A reads its image and goes on
    os.close(writer_end)
    out, err = ended(a, "generator A", PATIENCE_SECS)
    assert a.returncode == 0, err
    assert sorted(os.listdir(work / "out")) == ["mnist_test.tfrecords", "mnist_train.tfrecords"]
    assert (work / "out" / "mnist_train.tfrecords").read_bytes() == \
        (sample_workdir / "data" / "mnist_train.tfrecords").read_bytes()


@pytest.mark.long  # a dead writer's lock: test_one_writer.py's
@POSIX
def test_the_lock_of_a_generator_that_was_killed_is_taken_over(sample_workdir, tmp_path):
    (tmp_path / "out").mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / "out" / ".mnist.lock").write_text(dead.stdout)  # its process is gone
    shutil.copytree(sample_workdir / "mnist_data_jpg", tmp_path / "mnist_data_jpg")
    result = run_script("mnist_generateds.py", "--data-dir", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["mnist_test.tfrecords", "mnist_train.tfrecords"]


# ---------------------------------------------------------------- 4. a changed batch size is said

@pytest.mark.parametrize("script", ["mnist_backward.py", "mnist_lenet5_backward.py"])
def test_resuming_at_another_batch_size_is_refused_in_one_line(sample_workdir, trained_workdir, two_models, tmp_path,
                                                                script):
    copy_data(sample_workdir, tmp_path)
    # A model the script trained at its default --batch-size: a copy of conftest's (trained_workdir's, two_models').
    source, steps = ((trained_workdir / "model", TRAIN_STEPS) if script == "mnist_backward.py"
                     else (two_models / "model_lenet5", LENET5_STEPS))
    shutil.copytree(source, tmp_path / "m")
    before = tree_digests(tmp_path / "m")
    batch = 200 if script == "mnist_backward.py" else 100
    refused = run_main(script, "--steps", str(steps + 10), "--batch-size", "5000", "--model-dir", "m", cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"error: m: this model was trained at --batch-size {batch}; resuming at 5000 "
                                     "would move its learning rate from ")
    assert refused.stderr.endswith(f"at once (the schedule decays once per epoch of steps); give --batch-size {batch}, "
                                   "or another --model-dir for a new model\n")
    assert tree_digests(tmp_path / "m") == before
    again = run_main(script, "--steps", str(steps + 10), "--batch-size", str(batch), "--model-dir", "m",
                     cwd=tmp_path)
    assert again.returncode == 0 and f"done at step {steps + 10}" in again.stdout


# ---------------------------------------------------------------- 5. Ctrl-C anywhere is clean

@POSIX
@pytest.mark.parametrize("signum, status, background", [
    (signal.SIGINT, 130, False), pytest.param(signal.SIGTERM, 143, False, marks=pytest.mark.long),
    pytest.param(signal.SIGINT, 130, True, marks=pytest.mark.long)])
def test_a_generator_stopped_mid_write_says_so_in_one_line_and_leaves_nothing(sample_workdir, tmp_path, signum,
                                                                             status, background):
    work = tmp_path / "work"
    shutil.copytree(sample_workdir / "mnist_data_jpg", work / "mnist_data_jpg")
    victim = sorted((work / "mnist_data_jpg" / "mnist_train_jpg_8000").iterdir())[4000]
    pixels = victim.read_bytes()
    victim.unlink()
    os.mkfifo(victim)  # the generator stops there, half-way through the training split
    # A shell's `&` starts a job with SIGINT ignored.
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if background else None
    proc = start([os.path.join(ROOT, "mnist_generateds.py"), "--data-dir", "new", "--workers", "1"], work,
                 preexec_fn=ignore)
    writer_end = wait_for(lambda: reader_blocked_on(victim), "the generator reading the named pipe", proc)
    proc.send_signal(signum)
    # The image's bytes, then: a signal that the kernel gave to one of TensorFlow's threads does not
    # interrupt the main thread's read of the pipe; Python runs the handler once the read returns.
    try:
        os.write(writer_end, pixels)
    except BrokenPipeError:
        pass  # the main thread had the signal and has already closed the pipe
    os.close(writer_end)
    out, err = ended(proc, "the generator after the signal", PATIENCE_SECS)
    assert proc.returncode == status, (out, err)
    assert err == f"{signal.Signals(signum).name}: stopped; no TFRecord file written\n", out
    # The folder it made, and every temporary in it, are gone.
    assert not (work / "new").exists(), sorted(os.listdir(work / "new"))


@POSIX
def test_the_app_piped_into_a_reader_that_stops_early_ends_quietly(trained_workdir, tmp_path):
    from PIL import Image
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    import mnistkit.idx
    images, _ = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    for i in range(400):
        Image.fromarray(255 - images[i]).save(pictures / f"{i:03d}.png")
    command = (f"{shlex.quote(sys.executable)} {shown('mnist_app.py')} --model-dir "
               f"{shlex.quote(str(trained_workdir / 'model'))} {shlex.quote(str(pictures))} | head -1")
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True,
                            timeout=wait_limit(PATIENCE_SECS))
    assert result.stdout.startswith(f"{pictures / '000.png'}: The prediction number is: ")
    assert result.stderr == ""  # no BrokenPipeError traceback
    assert result.returncode in (0, 141)


@POSIX
def test_the_evaluator_ends_on_sigterm_in_one_line(trained_copy, tmp_path):
    proc = start([os.path.join(ROOT, "mnist_test.py"), "--model-dir", str(trained_copy / "model"), "--data-dir",
                  str(trained_copy / "data")], tmp_path)  # a copy: the evaluator writes model/eval
    wait_for(lambda: read_line(proc, "a line of the trainer").startswith("After "), "the first score", proc)
    proc.send_signal(signal.SIGTERM)
    _, err = ended(proc, "the evaluator after SIGTERM", PATIENCE_SECS)
    assert (proc.returncode, err) == (143, "SIGTERM: stopped\n")


# ---------------------------------------------------------------- 6. a cluster started with mismatched flags

@pytest.mark.long
def test_tasks_started_with_different_host_lists_are_told_apart_from_a_lost_ps(sample_workdir, tmp_path):
    ps_port, worker_port, other_port = mnist_cluster.free_ports(3)
    ps = start([os.path.join(ROOT, "mnist_backward.py"), "--job_name", "ps", "--task_index", "0", "--ps_hosts",
                f"localhost:{ps_port}", "--worker_hosts", f"localhost:{other_port}"], tmp_path)
    try:
        wait_for(lambda: "serving the variables" in read_line(ps, "a line of the parameter server"), "the parameter server",
                 ps)
        worker = run_script("mnist_backward.py", "--job_name", "worker", "--task_index", "0", "--ps_hosts",
                            f"localhost:{ps_port}", "--worker_hosts", f"localhost:{worker_port}", "--steps", "10",
                            "--data-dir", str(sample_workdir / "data"), "--model-dir", "m", cwd=tmp_path)
    finally:
        ps.send_signal(signal.SIGTERM)
        ended(ps, "the parameter server after SIGTERM", PATIENCE_SECS)
    assert worker.returncode == 1
    assert worker.stderr == (f"error: worker 0: another task of this cluster reached for 127.0.0.1:{other_port}, "
                             "which is not in this task's --ps_hosts or --worker_hosts: the host lists differ "
                             "between tasks; start every task with the same --ps_hosts and --worker_hosts\n")


@pytest.mark.parametrize("job", ["ps", "worker"])
def test_two_tasks_on_one_address_are_refused_before_starting(tmp_path, job):
    port, = mnist_cluster.free_ports(1)
    result = run_script("mnist_backward.py", "--job_name", job, "--task_index", "0", "--ps_hosts",
                        f"localhost:{port}", "--worker_hosts", f"127.0.0.1:{port}", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"error: --ps_hosts and --worker_hosts both name 127.0.0.1:{port}: two tasks cannot "
                             "share one address; give each task its own HOST:PORT\n")
    assert os.listdir(tmp_path) == []


@pytest.mark.long
@POSIX
def test_the_trainer_piped_into_a_reader_that_stops_early_saves_its_steps_and_ends_quietly(sample_workdir, tmp_path):
    copy_data(sample_workdir, tmp_path)
    command = f"{shlex.quote(sys.executable)} {shown('mnist_backward.py')} --steps 5000 --save-every 100000 | head -2"
    # Unbuffered, as on a terminal: each line goes out when printed, so the print after head has gone fails.
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                            timeout=wait_limit(PATIENCE_SECS), env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert result.stdout.splitlines()[1].startswith("After 1 training steps")
    assert (result.returncode, result.stderr) == (141, "")  # no BrokenPipeError traceback
    saved = sorted(p.name for p in (tmp_path / "model").glob("mnist_model-*.index"))
    assert saved == ["mnist_model-1000.index"]  # the steps up to the failed print were saved

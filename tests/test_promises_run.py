"""README promises about running the trainer, the evaluator and the app that no other test held.

- the trainer's `model folder is not writable` and `no training batch arrived within 60 s` (Troubleshooting);
- `mnist_test.py --report` rewritten for every new checkpoint when it watches a folder (Evaluation report);
- `mnist_app.py --threshold` with `--preprocess course` (Flags);
- `--verbose` bringing TensorFlow's own log lines back (Flags), which are absent without it.
"""
import ctypes
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from PIL import Image, ImageDraw

from conftest import ROOT, ended, sha256_of, shown, tree_digests, wait_limit
import mnistkit.training

WAIT = 300  # s: upper bound for any one event below (a TensorFlow start and an evaluation on a loaded 2-core machine)
PR_CAPBSET_DROP = 24  # prctl(2) option: drop a capability from the bounding set (linux/prctl.h)
CAP_DAC_OVERRIDE = 1  # the capability that lets root write into a folder without write permission (linux/capability.h)
# A TensorFlow log line: a Python one (`WARNING:tensorflow:From ...: ... is deprecated`) or an absl/C++ one
# (`I0000 00:00:1796075028.811120   24586 port.cc:153] oneDNN custom operations are on. ...`), or absl's
# `WARNING: All log messages before absl::InitializeLog() is called are written to STDERR`.
TF_LOG_LINE = re.compile(r"WARNING:tensorflow:|[IWEF]\d{4} [\d:.]+ +\d+ \S+:\d+\] |WARNING: All log messages before absl")


def run(script, *args, cwd, env=None, preexec_fn=None):
    """Run a script as a user would (text output, bounded by WAIT); returns CompletedProcess."""
    return subprocess.run([sys.executable, os.path.join(ROOT, script), *args], cwd=cwd, env=env,
                          preexec_fn=preexec_fn, capture_output=True, text=True, timeout=wait_limit(WAIT))


def checkpoint_files(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith("mnist_model-") or n == "checkpoint")


# ---------------------------------------------------------------- trainer: model folder not writable

def without_write_override():
    """preexec_fn for a child that must obey folder permissions even when we run as root.

    Root writes into a folder without write permission through
    CAP_DAC_OVERRIDE; dropped from the bounding set before exec, the
    child (still uid 0, the owner of the test's files, so it reads
    everything as before) has it no longer, as an ordinary user would not.
    """
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE)")


@pytest.mark.long
def test_trainer_refuses_a_read_only_model_folder_and_writes_nothing(trained_workdir, tmp_path):
    if not sys.platform.startswith("linux"):
        pytest.skip("folder permissions for root are handled with Linux capabilities here")
    model = tmp_path / "model"
    shutil.copytree(trained_workdir / "model", model)  # a trained model to continue, in a read-only folder
    before = tree_digests(model, with_folders=True)
    os.chmod(model, 0o555)
    try:
        try:
            result = run("mnist_backward.py", "--steps", "2100", "--model-dir", str(model),
                         "--data-dir", str(trained_workdir / "data"), cwd=tmp_path,
                         preexec_fn=without_write_override)
        except subprocess.SubprocessError as e:  # prctl refused: no CAP_SETPCAP in this container
            pytest.skip(f"cannot run the trainer without CAP_DAC_OVERRIDE as root ({e.__cause__ or e})")
    finally:
        os.chmod(model, 0o755)
    assert result.returncode == 1
    assert result.stderr == f"error: {model}: model folder is not writable; choose another with --model-dir\n"
    assert result.stdout == ""
    # no checkpoint, no TensorBoard event, no `checkpoint` index written
    assert tree_digests(model, with_folders=True) == before
    assert sorted(os.listdir(tmp_path)) == ["model"]


# ---------------------------------------------------------------- trainer: no batch within STEP_TIMEOUT_MS

# The trainer in a process of its own, with the step time-out shortened from 60 s (the bound that keeps the
# test from waiting a minute) and its training files emptied right after the check before training: the
# readers then find no record, shuffle_batch's queue never fills, and the first step waits in vain.
EMPTIED_AFTER_CHECK = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    import mnist_backward
    import mnistkit.training
    mnistkit.training.STEP_TIMEOUT_MS = int(sys.argv[2])
    checked = mnistkit.records.training_data

    def check_then_empty(data_dir, *name):
        found = checked(data_dir, *name)
        for path in found.counts:
            os.truncate(path, 0)  # another program rewriting the file after the check
        return found

    mnistkit.records.training_data = check_then_empty
    sys.exit(mnist_backward.main(sys.argv[3:]))
""")


def test_a_stuck_input_pipeline_ends_training_with_one_line_and_no_checkpoint(sample_workdir, tmp_path):
    assert mnistkit.training.STEP_TIMEOUT_MS == 60000  # README: "no training batch arrived within 60 s"
    timeout_ms = 3000  # any wait fails: no batch can come from an empty file
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(sample_workdir / "data" / "mnist_train.tfrecords", data)
    train_file = str(data / "mnist_train.tfrecords")
    result = subprocess.run([sys.executable, "-c", EMPTIED_AFTER_CHECK, ROOT, str(timeout_ms),
                             "--steps", "10", "--data-dir", str(data), "--model-dir", "model"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=wait_limit(WAIT))
    assert result.returncode == 1
    assert result.stderr == f"error: {train_file}: no training batch arrived within {timeout_ms // 1000} s\n"
    assert result.stdout == f"training on 8000 records from {train_file}; target global_step 10; running on CPU\n"
    assert os.path.getsize(train_file) == 0  # the condition was really created
    assert checkpoint_files(tmp_path / "model") == []


# ---------------------------------------------------------------- evaluator: --report in periodic mode

def lines_of(stream):
    """A queue receiving each line of `stream` (None at its end), read by a thread: waits can be bounded."""
    lines = queue.Queue()

    def pump():
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def next_line(lines):
    line = lines.get(timeout=wait_limit(WAIT))
    assert line is not None, "the evaluator ended"
    return line


def add_checkpoint(source, folder, step):
    """Copy checkpoint mnist_model-<step> from `source` into `folder`, each file renamed into place whole.

    The .meta comes last, as in tf.train.Saver.save: until it is there, a step newer than the one the
    `checkpoint` index file names is an unfinished save, which the evaluator passes over.
    """
    for ext in ("data-00000-of-00001", "index", "meta"):
        name = f"mnist_model-{step}.{ext}"
        shutil.copy(source / name, folder / f".{name}.tmp")
        os.replace(folder / f".{name}.tmp", folder / name)


@pytest.mark.long
def test_periodic_evaluator_rewrites_the_report_for_each_new_checkpoint(trained_workdir, tmp_path):
    source = trained_workdir / "model"
    model = tmp_path / "model"
    model.mkdir()
    add_checkpoint(source, model, 1000)
    (model / "checkpoint").write_text('model_checkpoint_path: "mnist_model-1000"\n'
                                      'all_model_checkpoint_paths: "mnist_model-1000"\n')
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_test.py"), "--interval", "0.2",
                             "--model-dir", str(model), "--data-dir", str(trained_workdir / "data"),
                             "--report", "out.png", "--report-json", "out.json"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # as a shell's background job (`python mnist_test.py &`) starts it: SIGINT ignored
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        lines = lines_of(proc.stdout)
        reports = []
        for step in (1000, 2000):
            scored = re.fullmatch(rf"After {step} training steps, test accuracy = (\S+)\n", next_line(lines))
            assert scored, step
            assert next_line(lines) == "report: out.png, out.json\n"
            numbers = json.loads((tmp_path / "out.json").read_text())
            assert numbers["global_step"] == step
            assert numbers["records"] == 2000 and numbers["accuracy"] == pytest.approx(float(scored[1]), abs=1e-6)
            with Image.open(tmp_path / "out.png") as picture:
                assert picture.format == "PNG"
            reports.append(sha256_of(tmp_path / "out.png"))
            if step == 1000:
                add_checkpoint(source, model, 2000)  # a newer checkpoint arrives while the evaluator watches
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = ended(proc, "the evaluator after SIGINT", 120)  # it ends at once; the bound only ends a hang
        finally:
            proc.kill()  # nothing left behind if SIGINT did not end it
    assert reports[0] != reports[1]  # the picture was drawn again for step 2000
    assert out == "" and err == "SIGINT: stopped\n" and proc.returncode == 130  # each checkpoint reported once
    assert sorted(os.listdir(tmp_path)) == ["model", "out.json", "out.png"]  # no temporary left


# ---------------------------------------------------------------- app: --threshold with --preprocess course

def course_pixels(path, threshold):
    """README's course preparation, by hand: resized whole to 28x28, inverted, stroke where >= threshold."""
    with Image.open(path) as img:
        inverted = 255 - np.asarray(img.convert("L").resize((28, 28), Image.Resampling.LANCZOS), dtype=np.int32)
    return np.where(inverted >= threshold, 255, 0).astype(np.uint8)


@pytest.mark.long
def test_threshold_decides_which_strokes_the_course_preparation_keeps(trained_workdir, tmp_path):
    img = Image.new("L", (280, 280), 255)
    draw = ImageDraw.Draw(img)
    draw.ellipse((50, 30, 230, 250), outline=180, width=24)  # a light-grey 0: 75 after inversion
    draw.rectangle((128, 60, 152, 220), fill=0)  # a black 1 inside it
    img.save(tmp_path / "pencil.png")
    model = str(trained_workdir / "model")
    seen, predicted = {}, {}
    for threshold in (None, 100):  # the default (50): the grey ring is stroke; 100: only the black bar is
        flags = [] if threshold is None else ["--threshold", str(threshold)]
        result = run("mnist_app.py", "--model-dir", model, "--preprocess", "course", *flags, "--json",
                     "--show-input", f"seen{threshold}.png", "pencil.png", cwd=tmp_path)
        assert result.returncode == 0 and result.stderr == f"input written to seen{threshold}.png\n", result.stderr
        [answer] = json.loads(result.stdout)
        predicted[threshold] = answer["prediction"]
        with Image.open(tmp_path / f"seen{threshold}.png") as shown:
            seen[threshold] = np.asarray(shown)
    np.testing.assert_array_equal(seen[None], course_pixels(tmp_path / "pencil.png", 50))
    np.testing.assert_array_equal(seen[100], course_pixels(tmp_path / "pencil.png", 100))
    ring = (seen[None] == 255) & (seen[100] == 0)
    assert ring.sum() > 100 and not ((seen[100] == 255) & (seen[None] == 0)).any()  # 100 only removes strokes
    assert predicted[100] == 1 and predicted[None] != 1  # the 1 alone, or the 1 inside its ring


# ---------------------------------------------------------------- --verbose

def tf_log_lines(stderr):
    return [line for line in stderr.splitlines() if TF_LOG_LINE.match(line)]


def small_jpg_layout(folder, sample_workdir, count=20):
    """The first `count` training JPGs of the sample and their label file, in `folder`: a generator run
    that still imports TensorFlow but decodes 20 images, not 10,000."""
    jpg = sample_workdir / "mnist_data_jpg"
    labels = (jpg / "mnist_train_jpg_8000.txt").read_text().splitlines()[:count]
    (folder / "images").mkdir()
    for line in labels:
        name = line.rsplit(" ", 1)[0]
        shutil.copy(jpg / "mnist_train_jpg_8000" / name, folder / "images" / name)
    (folder / "labels.txt").write_text("\n".join(labels) + "\n")
    return ["--train-images", "images", "--train-labels", "labels.txt",
            "--test-images", "images", "--test-labels", "labels.txt"]


@pytest.mark.long
@pytest.mark.parametrize("script", ["mnist_generateds.py", "mnist_backward.py", "mnist_test.py"])
def test_verbose_brings_tensorflows_log_lines_back(script, sample_workdir, tmp_path, request):
    # The environment must not decide: TF_CPP_MIN_LOG_LEVEL would hide the C++ lines whatever --verbose says,
    # TF_ENABLE_ONEDNN_OPTS=0 the oneDNN line. The generator calls no deprecated TensorFlow function, so its
    # verbose lines are the C++ ones TensorFlow prints while it loads (oneDNN, CPU features on x86 Linux).
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS")}
    if script == "mnist_generateds.py":
        args = small_jpg_layout(tmp_path, sample_workdir)
        runs = {flag: [*args, "--data-dir", f"data{flag}"] for flag in ("", "--verbose")}
    elif script == "mnist_backward.py":
        data = str(sample_workdir / "data")
        runs = {flag: ["--steps", "1", "--data-dir", data, "--model-dir", f"model{flag}"] for flag in ("", "--verbose")}
    else:
        # Only the evaluator needs a model; a copy, as it writes eval/ into its model folder.
        trained = request.getfixturevalue("trained_copy")
        runs = {flag: ["--once", "--model-dir", str(trained / "model"),
                       "--data-dir", str(trained / "data")] for flag in ("", "--verbose")}
    results = {flag: run(script, *args, *([flag] if flag else []), cwd=tmp_path, env=env)
               for flag, args in runs.items()}
    quiet, verbose = results[""], results["--verbose"]
    assert quiet.returncode == verbose.returncode == 0, verbose.stderr
    assert quiet.stderr == ""
    assert tf_log_lines(verbose.stderr), verbose.stderr
    # The scripts' own lines are the same: --verbose adds TensorFlow's, it does not change ours.
    strip = lambda out: re.sub(r"(data|model)--verbose", r"\1", re.sub(r"is [\d.e+-]+\.", "is X.", out))
    assert strip(verbose.stdout) == strip(quiet.stdout)


# ---------------------------------------------------------------- a mistyped --data-dir: one wording for trainer and evaluator

@pytest.mark.parametrize("script,flags", [("mnist_backward.py", ["--steps", "10"]), ("mnist_test.py", ["--once"])])
def test_a_missing_data_folder_is_named_alike_by_trainer_and_evaluator(tmp_path, script, flags):
    result = run(script, *flags, "--data-dir", "dta", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"error: dta: no such folder or TFRecord file; run `python {shown('mnist_generateds.py')} "
                             "--data-dir dta` first\n")
    assert os.listdir(tmp_path) == []  # no model folder made for nothing


@pytest.mark.parametrize("script,flags", [("mnist_backward.py", ["--steps", "10"]), ("mnist_test.py", ["--once"])])
def test_a_mistyped_data_folder_beside_the_records_asks_about_them(tmp_path, script, flags):
    """`--data-dir dta` beside a folder `data` holding the TFRecords asks "did you mean data?" (a new user's
    trial: the generator's command sent them to build a new data set in the typo); a close name that holds no
    records (`dat`, empty) is no answer, and the generator's command is given."""
    (tmp_path / "data").mkdir()
    for name in ("mnist_train.tfrecords", "mnist_test.tfrecords"):
        (tmp_path / "data" / name).write_bytes(b"")
    (tmp_path / "dat").mkdir()
    result = run(script, *flags, "--data-dir", "dta", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "error: dta: no such folder or TFRecord file; did you mean data?\n"
    (tmp_path / "data").rename(tmp_path / "records")  # no longer a close name: only `dat` is, and holds none
    result = run(script, *flags, "--data-dir", "dta", cwd=tmp_path)
    assert result.stderr == (f"error: dta: no such folder or TFRecord file; run `python {shown('mnist_generateds.py')} "
                             "--data-dir dta` first\n")
    assert sorted(os.listdir(tmp_path)) == ["dat", "records"]  # no model folder made for nothing

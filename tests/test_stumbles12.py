"""A new user's stumbles (issue #53, the twelfth trial): each test fails on the code before its fix."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT, run_main, tree_digests, wait_limit

RECORDS = "TFRecord files (mnist_test.tfrecords and mnist_train.tfrecords)"


def data_folder(tmp_path):
    """tmp_path/data holding the two (empty) TFRecord files mnist_generateds.py writes, and my pics/ two pictures."""
    from PIL import Image
    (tmp_path / "data").mkdir()
    for name in ("mnist_train.tfrecords", "mnist_test.tfrecords"):
        (tmp_path / "data" / name).write_bytes(b"")
    (tmp_path / "my pics").mkdir()
    for name in ("two.png", "one.jpg"):
        Image.new("L", (28, 28), 255).save(tmp_path / "my pics" / name)


WAY_ON = "give --model-dir a folder of its own for the checkpoints (default {default})"


@pytest.mark.quick
@pytest.mark.parametrize("script, default", [("mnist_backward.py", "model"), ("mnist_lenet5_backward.py",
                                                                              "model_lenet5"),
                                             ("mnist_cluster.py", "model"), ("mnist_learn.py", "model")])
@pytest.mark.parametrize("given, line", [
    ("data", "data: it holds " + RECORDS + ": a data folder, not a model folder; " + WAY_ON),
    ("./data/", "./data/: it holds " + RECORDS + ": a data folder, not a model folder; " + WAY_ON),
    ("my pics", "my pics: it holds pictures (one.jpg and two.png): a data folder, not a model folder; " + WAY_ON),
    ("data/model", "data/model: inside the data folder data, which holds " + RECORDS + "; " + WAY_ON
     + ", not inside it"),
    ("data/runs/a", "data/runs/a: inside the data folder data, which holds " + RECORDS + "; " + WAY_ON
     + ", not inside it"),
], ids=["the data folder", "spelled otherwise", "a folder of pictures", "a folder inside it", "deeper inside"])
def test_a_trainer_refuses_to_train_into_the_data_folder(script, default, given, line, tmp_path):
    """Fails before the fix: `mnist_backward.py --model-dir data` trained into the folder of the TFRecords (its
    checkpoints, train/ summaries and record beside mnist_train.tfrecords), while the evaluator, the exporter and
    the app called that folder a data folder (checkpoints.data_held)."""
    data_folder(tmp_path)
    before = tree_digests(tmp_path, with_folders=True)
    done = run_main(script, "--model-dir", given, "--steps", "1", cwd=tmp_path) if script != "mnist_learn.py" else \
        run_main(script, "--model-dir", given, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"error: {line.format(default=default)}\n")
    assert tree_digests(tmp_path, with_folders=True) == before  # nothing written


@pytest.mark.quick
def test_the_data_folder_is_refused_before_tensorflows_import(tmp_path):
    """Fails before the fix: the trainer imported TensorFlow (seconds), then wrote its checkpoints into data/."""
    data_folder(tmp_path)
    snippet = (f"import sys; sys.path.insert(0, {ROOT!r}); import mnist_backward; "
               "status = mnist_backward.main(['--model-dir', 'data', '--steps', '1']); "
               "print(status, 'tensorflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True, text=True,
                          timeout=wait_limit(120), stdin=subprocess.DEVNULL)
    assert done.stdout == "1 False\n", done.stderr
    assert done.stderr.startswith("error: data: it holds TFRecord files") and done.stderr.count("\n") == 1


@pytest.mark.quick
@pytest.mark.parametrize("given", ["model", "runs/model", "data_model", "."])
def test_a_model_folder_beside_the_data_folder_is_no_data_folder(given, tmp_path, monkeypatch):
    """The refusal's other side: folders beside data/ (not in it) are model folders, and so is the current folder
    itself when it holds no data, also when a folder beside data/ is inside a current folder holding records."""
    from mnistkit import checkpoints
    data_folder(tmp_path)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "mnist_train.tfrecords").write_bytes(b"")  # the current folder's own records
    monkeypatch.chdir(tmp_path)
    assert checkpoints.into_data(given, "model") is None
    monkeypatch.chdir(tmp_path / "work")  # the records' folder is the current one: it is not looked at above
    assert checkpoints.into_data(os.path.join("sub", "model"), "model") is None


def generator(cwd, *args):
    """mnist_generateds.py started in cwd on the bundled sample (no download), its output piped."""
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_generateds.py"), "--no-download", *args],
                            cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def stopped_when(process, condition, what):
    """SIGINT to `process` once condition() holds (polled; the process must not end first), then its stderr once
    it has ended (exit 130 asserted)."""
    from conftest import ended, wait_for
    try:
        wait_for(condition, what, 120, every=0.005, process=process)
        process.send_signal(__import__("signal").SIGINT)
        _, err = ended(process, f"the generator stopped when {what}", 60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert (process.returncode, err) == (130, "SIGINT: stopped; no TFRecord file written\n")
    return err


JPG = "mnist_data_jpg"
MOMENTS = {  # a moment of the JPG layout's build, as the folder shows it
    "its manifest written": lambda jpg: (jpg / "SOURCE.txt").exists(),
    "the train images being written": lambda jpg: list(jpg.glob(".mnist_train_jpg_*")),
    "the train images in place": lambda jpg: (jpg / "mnist_train_jpg_8000").is_dir(),
    "the test images being written": lambda jpg: list(jpg.glob(".mnist_test_jpg_*")),
}


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_stop_during_the_first_jpg_build_leaves_nothing(moment, tmp_path):
    """Fails before the fix: a Ctrl-C while mnist_generateds.py built mnist_data_jpg/ left SOURCE.txt (`source: ...
    (build not finished)`), with the train split's folder and label file when they were done: a folder the user
    never asked for, taken by the next run for a build of its own."""
    jpg = tmp_path / JPG
    stopped_when(generator(tmp_path), lambda: MOMENTS[moment](jpg), moment)
    assert tree_digests(tmp_path, with_folders=True) == {}  # no mnist_data_jpg/, no data/, no temporary


@pytest.mark.parametrize("moment, whole", [("the train images being written", True),
                                           ("the test images being written", False)])
def test_a_stop_during_a_rebuild_puts_back_the_earlier_layout_or_marks_it_unfinished(moment, whole,
                                                                                     sample_workdir, tmp_path):
    """Fails before the fix: a rebuild (--idx-dir, another source) stopped before it replaced anything left the
    earlier, whole layout under SOURCE.txt's `(build not finished)`, so the next run built it all again. A stop
    once a split was replaced keeps that mark (the layout is no longer the earlier source's)."""
    import shutil
    shutil.copytree(sample_workdir / JPG, tmp_path / JPG)
    jpg = tmp_path / JPG
    before = tree_digests(jpg)
    stopped_when(generator(tmp_path, "--idx-dir", os.path.join(ROOT, "data", "mnist_sample")),
                 lambda: MOMENTS[moment](jpg), moment)
    after = tree_digests(jpg)
    if whole:
        assert after == before  # the manifest put back, byte for byte
    else:
        assert sorted(after) == sorted(before)  # no temporary, no stray file
        assert (jpg / "SOURCE.txt").read_text(encoding="utf-8").splitlines()[0].endswith("(build not finished)")


@pytest.mark.quick
@pytest.mark.parametrize("typed, offered", [
    ("nothere.png", []), ("there.png", ["three.png"]), ("thre.png", ["three.png"]), ("Three.PNG", ["three.png"]),
    ("tree.png", ["three.png"]), ("three.jpg", []), ("sevne.png", ["seven.png"]), ("seven", ["seven.png"]),
    ("one.png", []), ("modle", ["model"]), ("mdoel", ["model"]), ("models", ["model"]), ("moel", ["model"]), ("mole", []),
    ("mdl", []), ("moodel2", []), ("digits", []), ("my_digts", ["my_digits"]), ("pic/one.png", ["pics/one.png"]),
    ("pix/seven.png", []), ("mnist_train_jpg_800.txt", ["mnist_train_jpg_8000.txt"]), ("M", []), ("d", ["D"]),
], ids=lambda v: repr(v) if isinstance(v, list) else v)
def test_did_you_mean_offers_typos_only(typed, offered, tmp_path, monkeypatch):
    """Fails before the fix: `mnist_app.py nothere.png` beside three.png said `did you mean three.png?` (difflib's
    ratio of the stems, 0.67, passed its cutoff 0.6), `digits` was offered my_digits, `one.png` seven.png, and a
    label file the other split's (`mnist_train_jpg_800.txt`: mnist_test_jpg_2000.txt too)."""
    from mnistkit import cli
    for name in ("three.png", "seven.png", "pics/one.png", "mnist_train_jpg_8000.txt", "mnist_test_jpg_2000.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    for name in ("model", "my_digits", "D"):  # D: `--data-dir D --model-dir M` (test_floor_e2e) is no typo of it
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path)
    assert cli.close_paths(typed, os.path.exists) == [os.path.join(*p.split("/")) for p in offered]


@pytest.mark.quick
def test_the_app_offers_no_picture_that_is_no_typo(tmp_path):
    """Fails before the fix: `python mnist_app.py nothere.png` (three.png beside it) said `did you mean three.png?`."""
    from PIL import Image
    from mnistkit import networks
    from test_trial7 import folder_of
    folder_of(tmp_path / "model", networks.MLP)
    Image.new("L", (28, 28), 255).save(tmp_path / "three.png")
    done = run_main("mnist_app.py", "nothere.png", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, "error: nothere.png: file not found\n")
    done = run_main("mnist_app.py", "thre.png", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, "error: thre.png: file not found; did you mean three.png?\n")


@pytest.mark.quick
def test_a_picture_path_the_shell_split_at_its_space_is_named_whole_with_its_quoting(tmp_path, monkeypatch):
    """Fails before the fix: `python mnist_app.py 我的 图片/one.png` said `error: 我的: file not found` and `error:
    图片/one.png: file not found`, and nothing of the picture there under the two words joined (a new user's tenth
    trial). Words that are there on their own are pictures of their own."""
    from PIL import Image
    from mnistkit import images, networks
    from test_trial7 import folder_of
    folder_of(tmp_path / "model", networks.MLP)
    (tmp_path / "我的 图片").mkdir()
    Image.new("L", (28, 28), 255).save(tmp_path / "我的 图片" / "one.png")
    Image.new("L", (28, 28), 255).save(tmp_path / "a b c.png")
    done = run_main("mnist_app.py", "我的", "图片/one.png", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr == ("error: 我的 图片/one.png: one path, split in 2 by the shell at its spaces; quote it: "
                           "'我的 图片/one.png'\n")
    monkeypatch.chdir(tmp_path)
    assert images.split_at_spaces(["x.png", "a", "b", "c.png"], 1) == "a b c.png"
    assert images.split_at_spaces(["x.png", "a", "b", "c.png"], 0) is None  # x.png x: not joined, as a is not x's
    (tmp_path / "b").mkdir()
    assert images.split_at_spaces(["a", "b", "c.png"], 0) is None  # b there on its own: its own argument


def in_a_process(snippet, cwd):
    """Run the Python `snippet` (the repository on its path) in cwd; its CompletedProcess (text)."""
    return subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {ROOT!r}); {snippet}"], cwd=cwd,
                          capture_output=True, text=True, timeout=wait_limit(120), stdin=subprocess.DEVNULL)


def checkpoint_files(folder, *steps):
    """Empty files named as the checkpoints `steps` of mnist_model in folder (made), and its `checkpoint` index."""
    folder.mkdir(parents=True, exist_ok=True)
    for step in steps:
        for end in (".index", ".meta", ".data-00000-of-00001"):
            (folder / f"mnist_model-{step}{end}").write_bytes(b"")
    (folder / "checkpoint").write_text(f'model_checkpoint_path: "mnist_model-{steps[-1]}"\n' + "".join(
        f'all_model_checkpoint_paths: "mnist_model-{step}"\n' for step in steps), encoding="utf-8")


@pytest.mark.quick
@pytest.mark.parametrize("args, named", [(["--steps", "20"], "--steps"), (["--steps", "10"], "--steps"),
                                         ([], "STEPS in mnist_backward.py")])
def test_a_trainer_at_its_target_says_so_before_tensorflows_import(args, named, tmp_path):
    """Fails before the fix: `mnist_backward.py --steps 20` on a folder at step 20 imported TensorFlow, built the
    graph and read the records and the checkpoint (6 s, 9 s on a busy machine) before it said `already reaches the
    target`."""
    data_folder(tmp_path)  # the records are looked up first (not read): a path not there is said before
    checkpoint_files(tmp_path / "model", 10, 20 if args else 50000)
    before = tree_digests(tmp_path, with_folders=True)
    done = in_a_process("import mnist_backward; status = mnist_backward.main(sys.argv[1:]); "
                        "print(status, 'tensorflow' in sys.modules)".replace("sys.argv[1:]", repr(args)), tmp_path)
    step, target = (20 if args else 50000), (args[1] if args else "50000")
    assert (done.stdout, done.stderr) == (
        f"./model/mnist_model-{step} is the newest checkpoint; target global_step {target}\n"
        f"global_step {step} already reaches the target; raise {named} to train further\n0 False\n", "")
    assert tree_digests(tmp_path, with_folders=True) == before


INDEXES = [
    'model_checkpoint_path: "mnist_model-20"\nall_model_checkpoint_paths: "mnist_model-10"\n'
    'all_model_checkpoint_paths: "mnist_model-20"\n',
    'model_checkpoint_path: "/abs/m/mnist_model-5"\nall_model_checkpoint_paths: "/abs/m/mnist_model-5"\n'
    'all_model_checkpoint_timestamps: 1.5\nlast_preserved_timestamp: 1700000000.0\n',
    'model_checkpoint_path: "\\345\\233\\276 \\"x\\\\.data"\n',  # escapes: octal UTF-8, a quote, a backslash
    'model_checkpoint_path: "图 片/mnist_model-1"\n',
    'model_checkpoint_path: "cut', "\x00\x01junk", "", 'all_model_checkpoint_paths: "x"\n', 'other: "x"\n',
]


@pytest.mark.parametrize("text", INDEXES)  # not quick: TensorFlow's reading in a process of its own
def test_the_index_file_is_read_as_tensorflow_reads_it_without_tensorflow(text, tmp_path):
    """Fails before the fix: folders.index_state imported TensorFlow (tf.train.get_checkpoint_state) to read the
    `checkpoint` file, so `mnist_learn.py --undo` took 4 s (9 s on a busy machine) to refuse a folder trained further
    since its learn, which the file names alone tell. The same paths as TensorFlow's, or None where it fails."""
    import json
    from mnistkit import folders
    (tmp_path / "checkpoint").write_text(text, encoding="utf-8")
    done = in_a_process(f"from mnistkit import folders; folders.index_state({str(tmp_path)!r}); "
                        "print('tensorflow' in sys.modules)", tmp_path)
    assert done.stdout == "False\n", done.stderr
    theirs = in_a_process(  # TensorFlow's reading, in a process of its own: a fork after its import would hang
        f"import json; from tf_compat import tf\ntry:\n    s = tf.train.get_checkpoint_state({str(tmp_path)!r})\n"
        "    print(json.dumps(s and [s.model_checkpoint_path, list(s.all_model_checkpoint_paths)]))\n"
        "except (tf.errors.OpError, ValueError):\n    print('null')", tmp_path)
    ours = folders.index_state(str(tmp_path))
    assert (ours and [ours.model_checkpoint_path, ours.all_model_checkpoint_paths]) == json.loads(
        theirs.stdout.splitlines()[-1]), theirs.stderr


def test_a_terminal_shows_a_line_while_tensorflow_loads_and_a_pipe_does_not(tmp_path):
    """Fails before the fix: `mnist_learn.py --undo`, the refusal of a checkpoint holding NaN (mnist_test.py,
    the app, the exporter) said nothing for the seconds of TensorFlow's import. On a terminal the line shows from
    the start of the import and is erased after it; a pipe (a log) gets nothing."""
    import pty
    import select
    from conftest import ended
    snippet = "import tf_compat; tf_compat.tf.constant; print('imported', flush=True)"
    main, other = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.insert(0, {ROOT!r}); {snippet}"],
                             cwd=tmp_path, stdin=other, stdout=other, stderr=other, close_fds=True)
    os.close(other)
    seen = b""
    try:
        while b"imported" not in seen:
            ready, _, _ = select.select([main], [], [], wait_limit(120))
            assert ready, f"nothing more from the terminal after {seen!r}"
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child ended, its terminal closed
                break
            if not chunk:
                break
            seen += chunk
        ended(child, "the import under a terminal", 60)
    finally:
        os.close(main)
        if child.poll() is None:
            child.kill()
    line = b"loading TensorFlow ..."
    assert seen.startswith(b"\r" + line + b"\r\r" + b" " * len(line) + b"\r") and seen.endswith(b"imported\r\n"), seen
    piped = in_a_process(snippet, tmp_path)
    assert (piped.stdout, piped.stderr) == ("imported\n", "")


@pytest.mark.parametrize("script", ["mnist_generateds.py", "mnist_backward.py", "mnist_export.py"])
def test_a_full_disk_is_one_line_naming_the_file_and_nothing_half_written_stays(script, sample_workdir, tmp_path):
    """Fails before the fix: mnist_generateds.py on a full disk named its hidden temporary
    (`small/data/.staging-mnist_train.tfrecords: write failed (/…/..staging-mnist_train.tfrecords.9032.bvslmlli.tmp;
    No space left on device)`); every line now says `no space left on device` in the same words (files.why_not)."""
    import shutil
    from conftest import mounted_tmpfs
    shutil.copytree(sample_workdir / "data", tmp_path / "data")
    if script == "mnist_export.py":
        trained = run_main("mnist_backward.py", "--steps", "1", "--quiet", cwd=tmp_path)
        assert trained.returncode == 0, trained.stderr
    with mounted_tmpfs(tmp_path / "small", "2m", "test_kinds_store.py fills a 64k one the same way") as small:
        args, line = {
            "mnist_generateds.py": (["--no-download", "--jpg-dir", str(sample_workdir / JPG), "--data-dir",
                                     "small/data"],
                                    "small/data/mnist_train.tfrecords: write failed (no space left on device)"),
            "mnist_backward.py": (["--steps", "5", "--model-dir", "small/model", "--history", "0"],
                                  "small/model: no space left on device while saving mnist_model-5; "),
            "mnist_export.py": (["--export-dir", "small/export"],
                                "small/export: cannot write the export (no space left on device); choose another "
                                "folder with --export-dir"),
        }[script]
        done = subprocess.run([sys.executable, os.path.join(ROOT, script), *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=wait_limit(300), stdin=subprocess.DEVNULL)
        assert done.returncode == 1 and done.stderr.startswith("error: " + line), done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        left = tree_digests(small)
        assert all(not name.split(os.sep)[-1].startswith(".") and ".tmp" not in name for name in left), left
        if script != "mnist_backward.py":
            assert left == {}, left  # nothing of the records or the export

"""Paths as users give them (glob characters, `~`), consoles that cannot print a name, V1 checkpoints,
the generator's all-or-nothing swap of both splits, and a --jpg-dir of the user's own."""
import io
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, tree_digests, new_saver, save_checkpoint, wait_limit
import mnist_app
import mnist_backward
import mnist_export
import mnist_generateds
import mnist_learn
import mnist_lenet5_backward
import mnist_lenet5_test
import mnist_test
from mnistkit import checkpoints, cli, files, folders, idx, networks, records, writer
from mnistkit.errors import DataError
from tf_compat import tf

GLOB_NAMES = ["model[1]", "a*b", "q?"]  # each also matches, as a pattern, the folder next to it named below
MATCHED_BY = {"model[1]": "model1", "a*b": "aXb", "q?": "qq"}


def one_variable_saves(model_dir, steps, keep, value=1.0, saver=None):
    """Save a one-variable graph (v = value + step) at each of `steps` into model_dir with --keep `keep`.

    saver: a function of the graph's variables giving the tf.train.Saver to save with (default: new_saver(keep)).
    """
    with tf.Graph().as_default():
        v = tf.Variable(value, name="v")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver, written = (saver or (lambda: new_saver(keep)))(), set()
            for step in steps:
                sess.run(v.assign(value + step))
                save_checkpoint(sess, saver, model_dir, step, written)


@pytest.mark.parametrize("name", GLOB_NAMES)
def test_checkpoints_in_a_folder_named_like_a_pattern_are_read_rotated_and_never_called_damaged(tmp_path, name):
    model, decoy = str(tmp_path / name), str(tmp_path / MATCHED_BY[name])
    one_variable_saves(decoy, [30], keep=5, value=500.0)  # what TensorFlow's glob would read instead
    one_variable_saves(model, [10, 20, 30], keep=1)
    assert checkpoints.checkpoint_steps(model) == [30]  # --keep 1 kept one, by its literal name
    assert checkpoints.checkpoint_steps(decoy) == [30]
    prefix = checkpoints.latest(model)
    assert prefix == os.path.join(model, "mnist_model-30")
    assert checkpoints.read_or_hint(model, prefix)["v"] == 31.0  # ours, not the decoy's 530
    assert not [p for p in os.listdir(tmp_path) if p.startswith("mnist_checkpoint_")]


@pytest.mark.parametrize("name", ["model", "model[1]"])
def test_rotation_deletes_only_what_the_savers_max_to_keep_meant_to(tmp_path, name):
    """A Saver keeping one checkpoint every N hours drops it from its list but means to keep its files."""
    model = str(tmp_path / name)
    one_variable_saves(model, [10, 20, 30], keep=1)
    assert checkpoints.checkpoint_steps(model) == [30]  # max_to_keep alone: the dropped ones deleted
    every_hour = str(tmp_path / (name + "_hourly"))
    one_variable_saves(every_hour, [10, 20, 30], keep=1, saver=lambda: tf.train.Saver(
        max_to_keep=1, keep_checkpoint_every_n_hours=1e-9, save_relative_paths=True))  # each one is due to be kept
    assert checkpoints.checkpoint_steps(every_hour) == [10, 20, 30]
    assert all(checkpoints.checkpoint_format(checkpoints.prefix_of(every_hour, s)) == "V2" for s in (10, 20, 30))


def test_tfrecord_sources_are_literal_before_they_are_patterns(tmp_path):
    for name, decoy in MATCHED_BY.items():
        for folder in (name, decoy):
            os.makedirs(tmp_path / folder)
            (tmp_path / folder / records.TRAIN_FILE).write_bytes(b"")
        assert records.tfrecord_files(str(tmp_path / name)) == [str(tmp_path / name / records.TRAIN_FILE)]
        literal = str(tmp_path / name / records.TRAIN_FILE)
        assert records.tfrecord_files(literal) == [literal]
    (tmp_path / "f[1].tfrecords").write_bytes(b"")
    (tmp_path / "f1.tfrecords").write_bytes(b"")
    assert records.tfrecord_files(str(tmp_path / "f[1].tfrecords")) == [str(tmp_path / "f[1].tfrecords")]
    assert records.tfrecord_files(str(tmp_path / "f[0-9].tfrecords")) == [str(tmp_path / "f1.tfrecords")]  # a pattern


def test_pictures_in_a_folder_named_like_a_pattern_are_its_own(tmp_path):
    for name, decoy in MATCHED_BY.items():
        for folder in (name, decoy):
            os.makedirs(tmp_path / folder)
            Image.new("L", (28, 28), 255).save(tmp_path / folder / f"{folder.replace('*', 'x').replace('?', 'x')}.png")
        assert [os.path.dirname(p) for p in mnist_app.picture_paths([str(tmp_path / name)])] == [str(tmp_path / name)]


PARSERS = {"mnist_generateds.py": mnist_generateds.build_parser, "mnist_backward.py": mnist_backward.build_parser,
           "mnist_test.py": mnist_test.build_parser, "mnist_app.py": mnist_app.build_parser,
           "mnist_lenet5_backward.py": mnist_lenet5_backward.build_parser,
           "mnist_lenet5_test.py": mnist_lenet5_test.build_parser, "mnist_export.py": mnist_export.build_parser,
           "mnist_learn.py": mnist_learn.build_parser}
PATH_DESTS = {"export_dir", "train_images", "train_labels", "test_images", "test_labels", "jpg_dir", "idx_dir", "data_dir",
              "model_dir", "report", "report_json", "show_input", "images"}


@pytest.mark.parametrize("script", PARSERS)
def test_every_path_flag_expands_a_tilde_after_the_equals_sign(script, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    parser = PARSERS[script]()
    paths = [a for a in parser._actions if a.dest in PATH_DESTS or "dir" in a.dest or "path" in a.dest]
    # cli.path for a path TensorFlow opens, cli.plain_path for one Python alone opens (pictures, reports): both expand ~
    assert paths and all(a.type in (cli.path, cli.plain_path) for a in paths), \
        [a.dest for a in paths if a.type not in (cli.path, cli.plain_path)]
    argv = [f"{a.option_strings[-1]}=~/x/{a.dest}" for a in paths if a.option_strings]
    args = parser.parse_args(argv + (["~/pic.png"] if script == "mnist_app.py" else []))
    for a in paths:
        expected = [f"{tmp_path}/pic.png"] if a.dest == "images" else f"{tmp_path}/x/{a.dest}"
        if isinstance(a, cli.Again):  # a flag that may be given again: the list of the values given
            expected = [expected]
        assert getattr(args, a.dest) == expected


def cp1252_console(monkeypatch):
    """stdout and stderr as a Windows console redirected to a file: cp1252, strict; returns the two byte buffers."""
    buffers = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(buffers[0], encoding="cp1252", errors="strict"))
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(buffers[1], encoding="cp1252", errors="strict"))
    return buffers


@pytest.mark.parametrize("script, argv", [
    (mnist_generateds, ["--data-dir", "数据", "--train-images", "图片", "--train-labels", "标签.txt",
                        "--test-images", "图片", "--test-labels", "标签.txt"]),
    (mnist_backward, ["--data-dir", "数据", "--steps", "1"]),
    (mnist_test, ["--once", "--data-dir", "数据", "--model-dir", "模型"]),
])
def test_a_console_that_cannot_print_a_name_gets_it_escaped(script, argv, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    out, err = cp1252_console(monkeypatch)
    assert script.main(argv) == 1
    sys.stderr.flush()
    message = err.getvalue().decode("cp1252")
    assert message.startswith("error: ") and message.count("\n") == 1, message
    assert "\\u" in message  # the Chinese name, escaped


@pytest.mark.long
def test_the_app_prints_a_chinese_file_name_on_a_cp1252_console_with_a_v1_model_under_tilde(trained_workdir, tmp_path):
    """One run: PYTHONIOENCODING=cp1252, a picture named 数字七.jpg, --model-dir=~/m[1] holding a V1 checkpoint."""
    home = tmp_path / "home"
    v1_copy(trained_workdir / "model" / "mnist_model-2000", home / "m[1]")
    img = np.full((100, 80), 255, np.uint8)
    img[15:85, 35:45] = 0  # a 1
    Image.fromarray(img).save(tmp_path / "数字七.jpg")
    env = dict(os.environ, HOME=str(home), PYTHONIOENCODING="cp1252")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "mnist_app.py"), "数字七.jpg", "--model-dir=~/m[1]"],
                            cwd=tmp_path, env=env, capture_output=True, timeout=wait_limit(300))
    out, err = result.stdout.decode("cp1252"), result.stderr.decode("cp1252")
    assert result.returncode == 0, err
    assert "\\u6570\\u5b57\\u4e03.jpg" in out and "Traceback" not in err
    assert "The prediction number is: 1" in out or "prediction" in out.lower(), out


# ---------------------------------------------------------------- V1-format checkpoints

def v1_copy(prefix, folder):
    """Write the tensors of checkpoint `prefix` again as a V1-format checkpoint folder/mnist_model-<step>."""
    stored = checkpoints.read_checkpoint(str(prefix))
    os.makedirs(folder, exist_ok=True)
    with tf.Graph().as_default():
        variables = {name: tf.Variable(value, name=name) for name, value in stored.items()}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver = tf.train.Saver(variables, write_version=tf.train.SaverDef.V1)
            saver.save(sess, os.path.join(folder, checkpoints.MODEL_NAME), global_step=checkpoints.step_of(str(prefix)),
                       write_meta_graph=False)
    return stored


def test_a_v1_checkpoint_is_found_read_and_kept(trained_workdir, tmp_path):
    model = tmp_path / "v1"
    stored = v1_copy(trained_workdir / "model" / "mnist_model-2000", model)
    prefix = str(model / "mnist_model-2000")
    assert sorted(os.listdir(model)) == ["checkpoint", "mnist_model-2000"]  # one file, no .index
    assert checkpoints.checkpoint_format(prefix) == "V1"
    assert checkpoints.latest(str(model)) == prefix
    got = checkpoints.read_checkpoint(prefix)
    assert sorted(got) == sorted(stored) and all(np.array_equal(got[k], stored[k]) for k in stored)
    with folders.writing(str(model), "training", network=networks.MLP, log=lambda line: None) as found:
        assert found.unfinished == [] and found.newest == prefix
    assert os.path.isfile(prefix)  # never taken for an unfinished save
    with open(prefix, "r+b") as f:  # cut short: really damaged, and said so
        f.truncate(os.path.getsize(prefix) // 2)
    with pytest.raises(DataError, match=r"mnist_model-2000: checkpoint is damaged \(mnist_model-2000, a V1-format "
                                        r"checkpoint file, is unreadable"):
        checkpoints.read_or_hint(str(model), prefix)


def test_the_evaluator_and_the_trainer_use_a_v1_checkpoint_in_a_folder_named_like_a_pattern(trained_workdir, tmp_path,
                                                                                           capsys):
    data = str(trained_workdir / "data")
    v2 = tmp_path / "v2"  # a copy: the evaluator writes eval/ into the folder it scores, and the model is shared
    shutil.copytree(trained_workdir / "model", v2)
    assert mnist_test.main(["--once", "--model-dir", str(v2), "--data-dir", data]) == 0
    v2_line = capsys.readouterr().out.strip().splitlines()[-1]
    model = tmp_path / "q?[1]"
    v1_copy(trained_workdir / "model" / "mnist_model-2000", model)
    assert mnist_test.main(["--once", "--model-dir", str(model), "--data-dir", data]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == v2_line  # the same accuracy
    assert mnist_backward.main(["--steps", "2010", "--save-every", "10", "--model-dir", str(model),
                                "--data-dir", data]) == 0
    out = capsys.readouterr().out
    assert f"resuming from {model}/mnist_model-2000" in out and f"saved to {model}/mnist_model-2010" in out
    assert checkpoints.checkpoint_steps(str(model)) == [2000, 2010]


# ---------------------------------------------------------------- both splits, or neither

def staged_run(data_dir, olds):
    """A Staging that publishes new train and test files over `olds` ({name: bytes}) in data_dir."""
    os.makedirs(data_dir, exist_ok=True)
    for name, content in olds.items():
        with open(os.path.join(data_dir, name), "wb") as f:
            f.write(content)
    with writer.Staging(data_dir, log=lambda line: None) as staging:
        for split, name in (("train", records.TRAIN_FILE), ("test", records.TEST_FILE)):
            with open(staging.path(name), "wb") as f:
                f.write(b"new " + split.encode())
            staging.add(split, name, 1)


OLD_FORMS = {
    "one file each": {records.TRAIN_FILE: b"old train", records.TEST_FILE: b"old test"},
    "train in 2 shards": {"mnist_train-00000-of-00002.tfrecords": b"old 0", "mnist_train-00001-of-00002.tfrecords":
                          b"old 1", records.TEST_FILE: b"old test"},
}


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()],
                         ids=["full disk", "Ctrl-C"])
@pytest.mark.parametrize("olds", OLD_FORMS.values(), ids=OLD_FORMS.keys())
def test_a_failure_at_any_rename_of_the_publish_leaves_both_old_splits(tmp_path, monkeypatch, olds, failure):
    real, calls = files.replace, []

    def counted(src, dst):
        calls.append(dst)
        return real(src, dst)

    monkeypatch.setattr(files, "replace", counted)
    staged_run(str(tmp_path / "probe"), olds)
    renames = len(calls)
    assert renames == len(olds) + 2  # each old file set aside, then each new one put in place
    for k in range(renames):
        data_dir = tmp_path / f"fail{k}"

        def failing(src, dst, k=k, seen=[]):
            seen.append(dst)
            if len(seen) == k + 1:
                raise failure
            return real(src, dst)

        monkeypatch.setattr(files, "replace", failing)
        with pytest.raises(type(failure)):
            staged_run(str(data_dir), olds)
        monkeypatch.setattr(files, "replace", real)
        assert {p: open(data_dir / p, "rb").read() for p in os.listdir(data_dir)} == olds, k
    assert {p: open(tmp_path / "probe" / p, "rb").read() for p in os.listdir(tmp_path / "probe")} == {
        records.TRAIN_FILE: b"new train", records.TEST_FILE: b"new test"}


# ---------------------------------------------------------------- a --jpg-dir of the user's own

def test_the_generator_builds_no_layout_in_a_folder_of_the_users_own(tmp_path, capsys):
    own = tmp_path / "my_digits"
    (own / "pics").mkdir(parents=True)
    (own / "pics" / "a.png").write_bytes(b"mine")
    (own / "labels.txt").write_text("a.png 3\n")
    (own / "idx").mkdir()  # a folder of the user's own under the download folder's name
    (own / "idx" / "notes.txt").write_text("mine")
    before = tree_digests(own, with_folders=True)
    assert mnist_generateds.main(["--jpg-dir", str(own), "--no-download", "--data-dir", str(tmp_path / "d")]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {own}: holds files that mnist_generateds.py did not write (e.g. 'idx'), so it builds no "
                   "JPG layout there; give an empty or new --jpg-dir, or your own images with --train-images, "
                   "--train-labels, --test-images and --test-labels\n")
    assert tree_digests(own, with_folders=True) == before
    assert not (tmp_path / "d").exists()


def test_what_the_generator_wrote_itself_is_its_own(tmp_path):
    idx.check_ours(str(tmp_path / "new"))  # a new folder
    (tmp_path / "empty").mkdir()
    idx.check_ours(str(tmp_path / "empty"))
    cache = tmp_path / "cache" / "idx"
    cache.mkdir(parents=True)
    (cache / "train-images-idx3-ubyte.gz.part").write_bytes(b"")  # a download that was stopped
    (tmp_path / "cache" / folders.LOCK_FILE).write_text("")
    idx.check_ours(str(tmp_path / "cache"))
    (tmp_path / "built").mkdir()
    (tmp_path / "built" / idx.MANIFEST).write_text("source: x (build not finished)\n")
    (tmp_path / "built" / "mnist_train_jpg_8000").mkdir()
    idx.check_ours(str(tmp_path / "built"))
    (cache / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match="did not write"):
        idx.check_ours(str(tmp_path / "cache"))


def test_the_courses_own_files_are_used_from_any_jpg_dir(tmp_path):
    for split, stem in idx.COURSE_LAYOUT.items():
        (tmp_path / stem).mkdir()
        (tmp_path / (stem + ".txt")).write_text("")
    layout = idx.course_layout(str(tmp_path))
    assert layout["train"] == (str(tmp_path / "mnist_train_jpg_60000") + os.sep, str(tmp_path / "mnist_train_jpg_60000.txt"))
    (tmp_path / idx.MANIFEST).write_text("source: x\n")
    assert idx.course_layout(str(tmp_path)) is None  # built here from IDX files: the manifest says where from


@pytest.mark.quick
def test_reading_a_pattern_named_folder_leaves_no_temporary_folder(tmp_path, monkeypatch):
    """readable_prefix's links live in a folder of the system's temporary folder: it is removed after each read."""
    temp = tmp_path / "system_temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where tempfile.mkdtemp makes it
    model = str(tmp_path / "model[1]")
    one_variable_saves(model, [10], keep=1)
    for _ in range(3):
        assert checkpoints.read_checkpoint(os.path.join(model, "mnist_model-10"))["v"] == 11.0
        with checkpoints.readable_prefix(os.path.join(model, "mnist_model-10")) as literal:
            assert os.path.dirname(literal).startswith(str(temp))  # the links were made there ...
    assert os.listdir(temp) == []  # ... and nothing is left there


@pytest.mark.quick
def test_a_checkpoint_file_that_is_gone_is_not_called_unreadable(tmp_path):
    """A file the trainer's rotation deleted is missing, not 'permission denied' (os.access is False for both)."""
    gone = tmp_path / "mnist_model-10.index"
    checkpoints._check_readable([str(gone)])  # gone: passed over, for the read to name it missing
    gone.write_bytes(b"x")
    checkpoints._check_readable([str(gone)])  # readable: fine
    if os.geteuid() != 0:  # root reads any file
        gone.chmod(0)
        with pytest.raises(DataError, match="permission denied"):
            checkpoints._check_readable([str(gone)])

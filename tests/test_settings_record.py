"""Every setting travels with its model: the folder's record (folders.FOLDER_FILE) holds each training option's
value, and a resume at another value does what the option declares (cli.Option.resume): refuse, note, or nothing.

Runs the trainer in this process (conftest.run_main) for 1-2 steps at a batch of 10 on the bundled sample.
"""
import json
import shutil
import types

import pytest

from conftest import copy_into, run_main, tree_digests
import mnist_backward
from mnistkit import cli, folders, training
from mnistkit.errors import DataError

BATCH = "10"


def train(work, data, *flags):
    """mnist_backward.py's main in `work`, training the model folder work/m on `data` quietly (CompletedProcess)."""
    return run_main("mnist_backward.py", "--data-dir", str(data), "--model-dir", "m", "--batch-size", BATCH, "--quiet",
                    *flags, cwd=work)


def record(work):
    """The model folder work/m's record, as written."""
    return json.loads((work / "m" / folders.FOLDER_FILE).read_text(encoding="utf-8"))


def with_variable(monkeypatch, needed):
    """Make build_graph add one more variable when needed(settings), as an Adam optimizer adds its slots: a graph a
    checkpoint trained without it does not fit ("checkpoint of another graph")."""
    build_graph = mnist_backward.build_graph

    def build(settings, data, *rest):
        graph = build_graph(settings, data, *rest)
        if needed(settings):
            mnist_backward.tf.Variable(0.0, name="adam_slot")
        return graph
    monkeypatch.setattr(mnist_backward, "build_graph", build)


@pytest.fixture(scope="module")
def trained(sample_workdir, tmp_path_factory):
    """A folder holding m, the 784-500-10 network trained 1 step at a batch of 10 (read only: tests copy it)."""
    work = tmp_path_factory.mktemp("trained_settings")
    result = train(work, sample_workdir / "data", "--steps", "1")
    assert result.returncode == 0, result.stderr
    return work


@pytest.fixture
def work(trained, tmp_path):
    """tmp_path holding a copy of trained's model folder m."""
    shutil.copytree(trained / "m", tmp_path / "m")
    return tmp_path


def test_each_option_declares_its_resume():
    assert {o.name: o.resume for o in mnist_backward.OPTIONS} == {
        "steps": "free", "batch_size": "refuse", "data_dir": "free", "model_dir": "free", "pipeline": "free",
        "save_every": "free", "keep": "free", "log": "free", "quiet": "free", "print_every": "free", "summary_every": "free",
        "learning_rate_base": "note", "mix_records": "free", "steps_per_run": "free",
        "history": "free", "decay_from": "free"}
    assert set(cli.RESUMES) >= {o.resume for o in mnist_backward.OPTIONS}
    with pytest.raises(TypeError, match="required keyword-only argument: 'resume'"):
        cli.Option("optimizer", "sgd")  # a new option says what a resume at another value does


def test_the_first_save_records_every_flag_option(trained, sample_workdir):
    written = record(trained)
    assert written["network"]["layers"] == [784, 500, 10] and written["records"] == 8000
    assert {k: v for k, v in written.items() if k not in ("network", "records", "pipeline")} == {
        "steps": 1, "batch_size": 10, "data_dir": str(sample_workdir / "data"), "model_dir": "m", "save_every": 1000,
        "keep": 5, "quiet": True, "print_every": 1000, "summary_every": 100, "learning_rate_base": 0.1, "mix_records": None,
        "steps_per_run": 1, "history": 20, "decay_from": 0}
    assert written["pipeline"]["name"] == "fast"


def test_another_learning_rate_base_goes_on_after_one_note_line(work, sample_workdir):
    result = train(work, sample_workdir / "data", "--steps", "2", "--learning-rate-base", "0.7")
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if "note" in line] == [
        "note: --learning-rate-base 0.7 (this folder was trained at 0.1); going on with 0.7"]
    assert "done at step 2; checkpoint saved to m/mnist_model-2" in result.stdout
    assert record(work)["learning_rate_base"] == 0.7  # what it trains at now: no note on the next resume


def test_another_batch_size_is_refused_in_one_line_before_the_variables_are_compared(work, sample_workdir,
                                                                                      monkeypatch):
    with_variable(monkeypatch, lambda settings: True)  # the checkpoint does not fit this graph either
    before = tree_digests(work / "m")
    result = train(work, sample_workdir / "data", "--steps", "2", "--batch-size", "20")
    assert result.returncode == 1
    assert result.stderr == ("error: m: this model was trained at --batch-size 10; resuming at 20 would move its "
                             "learning rate from 0.1 to 0.1 at once (the schedule decays once per epoch of steps); "
                             "give --batch-size 10, or another --model-dir for a new model\n")
    assert tree_digests(work / "m") == before


def test_an_option_declared_here_alone_is_recorded_and_checked_on_resume(sample_workdir, tmp_path, monkeypatch):
    monkeypatch.setattr(mnist_backward, "OPTIONS", cli.Options([*mnist_backward.OPTIONS,
        cli.Option("optimizer", "sgd", "the optimizer", choices=("sgd", "adam"), resume="refuse"),
        cli.Option("warmup", 0, "steps of warm-up", resume="note")]))
    with_variable(monkeypatch, lambda settings: settings.optimizer == "adam")  # the optimizer's use
    data = sample_workdir / "data"
    assert train(tmp_path, data, "--steps", "1").returncode == 0
    assert (record(tmp_path)["optimizer"], record(tmp_path)["warmup"]) == ("sgd", 0)

    before = tree_digests(tmp_path / "m")
    refused = train(tmp_path, data, "--steps", "2", "--optimizer", "adam", "--warmup", "5")
    assert refused.returncode == 1 and "note" not in refused.stdout  # a refusal first, and alone
    assert refused.stderr == ("error: m: this model was trained at --optimizer sgd; resuming at adam would change "
                              "how it trains; give --optimizer sgd, or another --model-dir for a new model\n")
    assert tree_digests(tmp_path / "m") == before

    noted = train(tmp_path, data, "--steps", "2", "--warmup", "5")
    assert noted.returncode == 0, noted.stderr
    assert [line for line in noted.stdout.splitlines() if "note" in line] == [
        "note: --warmup 5 (this folder was trained at 0); going on with 5"]
    assert record(tmp_path)["warmup"] == 5


def test_a_record_without_the_options_resumes_without_complaint_and_gets_them(work, sample_workdir):
    path = work / "m" / folders.FOLDER_FILE
    written = record(work)
    path.write_text(json.dumps({"network": written["network"], "batch_size": 10, "records": 8000}))  # an earlier one
    result = train(work, sample_workdir / "data", "--steps", "2", "--learning-rate-base", "0.7")
    assert result.returncode == 0 and result.stderr == ""
    assert "note" not in result.stdout and "done at step 2" in result.stdout
    assert record(work) == {**written, "steps": 2, "learning_rate_base": 0.7}  # written whole at its first save


def test_a_hand_edited_record_value_is_refused_in_one_line(sample_workdir, tmp_path):
    work = copy_into(tmp_path / "work", sample_workdir, "data")
    assert run_main("mnist_backward.py", "--steps", "1", "--batch-size", "10", cwd=work).returncode == 0
    record_path = work / "model" / folders.FOLDER_FILE
    record = json.loads(record_path.read_text())
    record["batch_size"] = "abc"
    record_path.write_text(json.dumps(record))
    result = run_main("mnist_backward.py", "--steps", "2", "--batch-size", "10", cwd=work)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: ") and "--batch-size abc" in result.stderr


# ---------------------------------------------------------------- messages name what the user changed

def test_an_edited_batch_size_is_refused_naming_the_constant_in_its_file(work, sample_workdir, monkeypatch):
    monkeypatch.setattr(mnist_backward, "BATCH_SIZE", 20)  # no --batch-size: the edited constant trains
    before = tree_digests(work / "m")
    result = run_main("mnist_backward.py", "--data-dir", str(sample_workdir / "data"), "--model-dir", "m", "--steps",
                      "2", "--quiet", cwd=work)
    assert result.returncode == 1
    assert result.stderr == ("error: m: this model was trained at BATCH_SIZE = 10; resuming at 20 (BATCH_SIZE in "
                             "mnist_backward.py) would move its learning rate from 0.1 to 0.1 at once (the schedule "
                             "decays once per epoch of steps); set BATCH_SIZE = 10 in mnist_backward.py, or give "
                             "another --model-dir for a new model\n")
    assert tree_digests(work / "m") == before


def test_lenet5s_edited_batch_size_is_named_in_its_own_trainer(two_models, tmp_path, monkeypatch):
    import mnist_lenet5_backward
    shutil.copytree(two_models / "model_lenet5", tmp_path / "model_lenet5")
    monkeypatch.setattr(mnist_lenet5_backward, "BATCH_SIZE", 50)
    result = run_main("mnist_lenet5_backward.py", "--data-dir", str(two_models / "data"), "--steps", "1000",
                      "--quiet", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error: ./model_lenet5/: this model was trained at BATCH_SIZE = 100; resuming "
                                    "at 50 (BATCH_SIZE in mnist_lenet5_backward.py) would move")
    assert result.stderr.endswith("; set BATCH_SIZE = 100 in mnist_lenet5_backward.py, or give another --model-dir "
                                  "for a new model\n")


def test_a_batch_size_given_to_backward_is_refused_naming_the_keyword(work, sample_workdir):
    with pytest.raises(DataError) as refused:
        mnist_backward.backward(data_dir=str(sample_workdir / "data"), model_dir=str(work / "m"), steps=2,
                                batch_size=20, quiet=True, log=lambda line: None)
    assert str(refused.value).startswith(f"{work / 'm'}: this model was trained at batch_size=10; resuming at 20 "
                                         "would move its learning rate")
    assert str(refused.value).endswith("; give batch_size=10, or another model_dir for a new model")


def test_the_resume_note_names_the_edited_constant_or_the_keyword(work, sample_workdir, monkeypatch):
    monkeypatch.setattr(mnist_backward, "LEARNING_RATE_BASE", 0.7)
    noted = train(work, sample_workdir / "data", "--steps", "2")
    assert noted.returncode == 0, noted.stderr
    assert [line for line in noted.stdout.splitlines() if line.startswith("note:")] == [
        "note: LEARNING_RATE_BASE = 0.7 in mnist_backward.py (this folder was trained at 0.1); going on with 0.7"]
    monkeypatch.undo()
    lines = []
    mnist_backward.backward(data_dir=str(sample_workdir / "data"), model_dir=str(work / "m"), steps=3, batch_size=10,
                            learning_rate_base=0.5, quiet=True, log=lines.append)
    assert [line for line in lines if line.startswith("note:")] == [
        "note: learning_rate_base=0.5 (this folder was trained at 0.7); going on with 0.5"]


def test_no_resume_note_nor_refusal_when_nothing_will_train(work, sample_workdir, monkeypatch):
    monkeypatch.setattr(mnist_backward, "STEPS", 1)  # the folder is at step 1 already

    def checkpoints_and_record():  # the folder but TensorBoard's events, which every run opens
        return {name: digest for name, digest in tree_digests(work / "m").items() if not name.startswith("train")}
    before = checkpoints_and_record()
    result = run_main("mnist_backward.py", "--data-dir", str(sample_workdir / "data"), "--model-dir", "m",
                      "--batch-size", "20", "--learning-rate-base", "0.7", "--quiet", cwd=work)
    assert result.returncode == 0 and result.stderr == ""
    assert not [line for line in result.stdout.splitlines() if line.startswith("note:")]
    assert ("global_step 1 already reaches the target; raise STEPS in mnist_backward.py to train further"
            in result.stdout.splitlines())
    assert checkpoints_and_record() == before  # nothing trained, nothing saved, the record as it was
    flagged = train(work, sample_workdir / "data", "--steps", "1")
    assert "global_step 1 already reaches the target; raise --steps to train further" in flagged.stdout.splitlines()



@pytest.mark.quick
def test_a_resume_where_the_schedule_has_faded_the_learning_rate_says_so():
    """The course's rate, 0.1 decayed x0.99 an epoch, after 50,000 steps on the bundled sample's 8,000 records (40
    steps an epoch at a batch of 200) is 3.5e-7: a learn's 600 steps there changed no kept digit (a new user's
    trial). The note comes once the rate is below FADED (1%) of the base: from 459 epochs (0.99 ** 459 = 0.0099),
    not at 458 (0.0100); on MNIST's 60,000 records the same 50,000 steps are 166 epochs (0.019) and say nothing."""
    settings = types.SimpleNamespace(learning_rate_base=0.1, learning_rate_decay=0.99, batch_size=200, steps=50600)
    assert training.faded_rate(settings, 8000, 50000) == (
        "note: at step 50000 the learning rate is 3.5e-07, 0.1 decayed x0.99 for each of 1250 epochs of 8000 records: "
        "the 600 steps to 50600 will barely change the weights (docs/teach.md, \"The learn's learning rate\")")
    assert training.faded_rate(settings, 8000, 459 * 40).startswith("note: at step 18360 the learning rate is 0.00099")
    assert training.faded_rate(settings, 8000, 459 * 40 - 1) is None
    assert training.faded_rate(settings, 60000, 50000) is None
    assert training.faded_rate(types.SimpleNamespace(**{**vars(settings), "steps": 50000}), 8000, 50000) is None

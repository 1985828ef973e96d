"""The sixth audit: faults found by trying the board's learns and the scripts' hints for real (docs/tests.md, "The
sixth audit").

- A learn's script ends when the process that ran the learn (the board, mnist_learn.py) is killed with SIGKILL:
  the folder's lock and the learn's staging are gone, the model folder as it was.
- A redo refused after the folder was trained again to the learned checkpoint's own step names the two
  checkpoints apart (learn N's, the one trained since the undo), not one name twice.
- A held learn in a folder trained further since is said so on the board, not "Not used: ...".
- mnist_test.py given LeNet-5's folder without a checkpoint names mnist_lenet5_test.py as the one that scores it.
- Keeps added by hand (a picture and its label line) that the model reads as another digit are flagged as
  possibly mis-kept, as the board's own keeps are.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import ROOT, keep_sevens_as_threes, run_main, run_script, tree_digests, wait_for, wait_limit
from mnistkit import cli, folders, promotion
from mnistkit.board import zh
from mnistkit.errors import DataError


@pytest.mark.quick
def test_a_redo_after_training_again_to_the_learned_step_names_the_two_checkpoints_apart(tmp_path):
    # before: "(a redo would put mnist_model-2000 in service over mnist_model-2000)"
    from test_audit_learns import AFTER, BEFORE, SHARD, history_folder
    model = history_folder(tmp_path / "work", state="undone", redo=[1])
    for suffix in (".index", ".meta", SHARD):  # the trainer run again to the learned checkpoint's step
        (model / (AFTER + suffix)).write_bytes(b"trained again " + AFTER.encode())
    folders.write_index(str(model), AFTER, [BEFORE, AFTER])
    before = tree_digests(model)
    with pytest.raises(DataError) as refused:
        promotion.redo(str(model), out=pytest.fail)
    said = str(refused.value)
    assert f"in service over {AFTER})" not in said, said
    assert said.endswith(f"nothing redone (a redo would put learn 1's {AFTER} in service over the {AFTER} trained "
                         "since the undo)"), said
    assert tree_digests(model) == before
    twin = zh.phrased(said)
    assert twin is not None and f"学习 1 的 {AFTER}" in twin and f"撤销之后训练出的同名检查点 {AFTER}" in twin, twin


@pytest.mark.parametrize("script, folder, other", [("mnist_test.py", "model_lenet5", "mnist_lenet5_test.py"),
                                                    ("mnist_lenet5_test.py", "model", "mnist_test.py")])
def test_an_evaluator_given_the_other_networks_folder_without_a_checkpoint_names_that_networks_evaluator(
        sample_workdir, tmp_path, monkeypatch, script, folder, other):
    # before: "model_lenet5: no checkpoint found; train first with `python mnist_lenet5_backward.py`", no word that
    # mnist_test.py would refuse the checkpoint it trains (`use mnist_lenet5_test.py`)
    monkeypatch.chdir(tmp_path)  # the commands named as from there
    os.symlink(sample_workdir / "data", tmp_path / "data")
    (tmp_path / folder).mkdir()
    trainer = "mnist_lenet5_backward.py" if other == "mnist_lenet5_test.py" else "mnist_backward.py"
    result = run_main(script, "--model-dir", folder, "--once", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (f"error: {folder}: no checkpoint found; train first with `{cli.command(trainer)}`, then "
                             f"score it with `{cli.command(other)}`, not {script}\n")
    os.symlink(sample_workdir / "data", tmp_path / "mydata")  # the user's flags kept in both commands
    result = run_main(script, "--model-dir", folder, "--once", "--data-dir", "mydata", cwd=tmp_path)
    assert result.stderr.endswith(f"then score it with `{cli.command(other, '--data-dir', 'mydata')}`, not {script}\n")
    # a folder of its own network is told nothing more
    own = "model" if folder == "model_lenet5" else "model_lenet5"
    (tmp_path / own).mkdir()
    result = run_main(script, "--model-dir", own, "--once", cwd=tmp_path)
    assert result.returncode == 1 and "score it" not in result.stderr, result.stderr


# A process running a learn that says, once the trainer has reported a step, its staging folder and its script's
# process group (learn.run's: the tether and the trainer), then waits to be killed.
RUNS_A_LEARN = """\
import sys, threading
sys.path.insert(0, {root!r})
from mnistkit import learn
def progress(stage, step, steps):
    if stage == "training" and step is not None and step > {start}:
        print("training", watch.child.pid, watch.staging, flush=True)
watch = learn.Watch(out=lambda line: None, progress=progress)
learn.learn("model", "my_digits", steps={steps}, data_dir="data", watch=watch)
print("ended", flush=True)
"""


def group_running(pgid):
    """The processes (pids) of process group `pgid` still running (zombies not counted), from /proc."""
    found = []
    for name in filter(str.isdecimal, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, NotADirectoryError, ProcessLookupError, PermissionError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(name))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_learns_script_ends_when_the_process_running_the_learn_is_killed(trained_copy, sample_workdir):
    # before: the trainer (its own process group) trained on into the staging folder, which stayed with the lock
    from conftest import TRAIN_STEPS
    work = trained_copy
    keep_sevens_as_threes(sample_workdir, work / "my_digits")
    model = work / "model"
    before = tree_digests(model)
    script = work / "runs_a_learn.py"
    script.write_text(RUNS_A_LEARN.format(root=ROOT, start=TRAIN_STEPS, steps=100_000), encoding="utf-8")
    parent = subprocess.Popen([sys.executable, str(script)], cwd=work, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    group = None
    try:
        line = wait_for(parent.stdout.readline, "the learn's trainer reporting a step", 300, process=parent)
        assert line.startswith("training "), line
        group, staging = int(line.split()[1]), line.split(" ", 2)[2].rstrip("\n")
        assert os.path.isdir(staging) and (model / folders.LOCK_FILE).exists()
        assert group_running(group)  # the trainer (and its tether)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_for(lambda: not group_running(group), "the learn's script ended after its learn's process was killed",
                 120)
        assert not os.path.exists(staging), "the learn's staging folder stayed"
        assert not (model / folders.LOCK_FILE).exists(), "the model folder's lock stayed"
        assert tree_digests(model) == before
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if group is not None:
            for pid in group_running(group):
                os.kill(pid, signal.SIGKILL)


BOARD_JS = os.path.join(ROOT, "mnistkit", "board", "static", "board.js")


def learn_line(learning, language):
    """board.js's learnLine() for the GET /board/learn answer `learning` in `language`, run by node: the page's
    TEXT and the functions the line is made by, taken from the file as the browser gets it."""
    text = open(BOARD_JS, encoding="utf-8").read()
    table = re.search(r"^const TEXT = \{.*?^\};$", text, re.S | re.M).group(0)
    functions = [re.search(rf"^function {name}\(.*?^\}}$", text, re.S | re.M).group(0)
                 for name in ("say", "local", "serverLine", "stepOf", "checkLine", "fellLine", "learnLine")]
    program = "\n".join([table, f"const language = {json.dumps(language)}; let T = TEXT[language];",
                          f"let learning = {json.dumps(learning)};", *functions,
                          "process.stdout.write(learnLine());"])
    result = subprocess.run(["node", "-e", program], capture_output=True, text=True, timeout=wait_limit(60))
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.quick
@pytest.mark.skipif(shutil.which("node") is None, reason="runs board.js's learnLine with node")
def test_a_held_learn_in_a_folder_trained_further_is_said_so_on_the_board(tmp_path):
    # before: standing's further was None for a held learn, and the page said "Not used: digit 7's recall fell ..."
    # with "Use it anyway", which accept then refused (its newest checkpoint is now mnist_model-3000)
    from test_audit_learns import BEFORE, SHARD, history_folder
    model = history_folder(tmp_path / "work", state="held")
    for suffix in (".index", ".meta", SHARD):
        (model / ("mnist_model-3000" + suffix)).write_bytes(b"trained further")
    folders.write_index(str(model), "mnist_model-3000", [BEFORE, "mnist_model-3000"])
    stand = promotion.standing(str(model))
    assert stand["further"] == {"learn": 1, "newest": "mnist_model-3000", "step": 3000}
    with pytest.raises(DataError, match="its newest checkpoint is now mnist_model-3000"):
        promotion.accept(str(model), out=pytest.fail)  # what "Use it anyway" would meet
    held = {"state": "held", "learn": 1, "check": {"test": None, "kept": {"count": 1, "right": [0, 1]}, "fell": [
        {"digit": 7, "measure": "recall", "before": 0.99, "after": 0.9}]}, "further": stand["further"]}
    assert learn_line(held, "en") == ("Trained further since learn 1 (now step 3000): its checkpoint cannot be used; "
                                      "discard it and learn again")
    assert learn_line(held, "zh") == "学习 1 之后又训练过（现在第 3000 步）：它的检查点不能再用；请丢弃它再学习"
    assert learn_line({**held, "further": None}, "en").startswith("Not used: digit 7's recall fell 0.990 → 0.900")


def stand_reading_one(sure):
    """A predictor standing in for the network: it reads every picture as 1, with probability `sure`."""
    import numpy as np

    class Stand:
        network, source = None, "stand/mnist_model-7"

        def predict(self, rows):
            probabilities = np.full(10, (1 - sure) / 9, np.float32)
            probabilities[1] = sure
            return np.tile(probabilities, (len(rows), 1))
    from mnistkit.networks import MLP
    Stand.network = MLP
    return Stand()


@pytest.mark.quick
def test_a_keep_written_by_hand_that_the_model_reads_as_another_digit_is_flagged_as_the_boards_are(tmp_path):
    # before: GET /board/kept flagged nothing; only POST /board/keep's answer did, so a keep written by hand (a
    # picture and its label line) read as 1 at 99.5% was never flagged
    import numpy as np
    from PIL import Image
    from test_board_learn import kept_input
    from test_board_routes import Asked
    from mnistkit import keep
    from mnistkit.board import app, model, teach
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    served = app.Served(model.Model(stand_reading_one(0.995), None), None, store, teach.Learning(store))
    kept = json.loads(Asked(app.create_app(served), "POST", "/board/keep",
                            json.dumps({"digit": 7, "input": kept_input(0)}).encode()).body)
    assert kept["misread"] == {"reads": 1, "probability": pytest.approx(0.995)}  # the board's keep, flagged

    def by_hand(name, digit, seed):  # the user's own keep: a picture of the store's kind and its label line
        Image.fromarray(np.array(kept_input(seed), np.uint8).reshape(28, 28)).save(tmp_path / "my_digits" / name)
        with open(tmp_path / "my_digits.txt", "a", encoding="utf-8") as f:
            f.write(f"{name} {digit}\n")
    by_hand("000002_7.jpg", 7, 1)
    by_hand("000003_1.jpg", 1, 2)  # read as what it was kept as
    listed = json.loads(Asked(app.create_app(served), "GET", "/board/kept").body)
    assert [e["name"] for e in listed["entries"]] == ["000003_1.jpg", "000002_7.jpg", "000001_7.jpg"], listed
    flagged = {"reads": 1, "probability": pytest.approx(0.995)}
    assert [e.get("misread") for e in listed["entries"]] == [None, flagged, flagged]  # whoever kept it
    served.model = model.Model(stand_reading_one(0.985), None)  # less sure than teach.MISREAD: none flagged
    listed = json.loads(Asked(app.create_app(served), "GET", "/board/kept").body)
    assert len(listed["entries"]) == 3 and not any("misread" in e for e in listed["entries"]), listed


@pytest.mark.quick
def test_discarding_a_held_learn_in_a_folder_trained_further_names_the_checkpoint_it_goes_on_with(tmp_path):
    # before: "discarded learn 1's checkpoint mnist_model-2000; model goes on with mnist_model-1000", the checkpoint
    # the learn started from, while the folder's newest, in service, was mnist_model-3000
    from test_audit_learns import AFTER, BEFORE, SHARD, history_folder
    model = history_folder(tmp_path / "work", state="held")
    for suffix in (".index", ".meta", SHARD):
        (model / ("mnist_model-3000" + suffix)).write_bytes(b"trained further")
    folders.write_index(str(model), "mnist_model-3000", [BEFORE, "mnist_model-3000"])
    said = []
    promotion.discard(str(model), out=said.append)
    assert said == [f"discarded learn 1's checkpoint {AFTER}; {model} goes on with mnist_model-3000"]


def test_the_waiting_evaluator_given_the_other_networks_folder_says_so_at_once(sample_workdir, tmp_path):
    # before: `mnist_test.py --model-dir model_lenet5` (no --once) printed "No checkpoint file found" every interval,
    # for ever, and refused LeNet-5's first checkpoint once its trainer saved one (`use mnist_lenet5_test.py`)
    os.symlink(sample_workdir / "data", tmp_path / "data")
    (tmp_path / "model_lenet5").mkdir()
    try:
        result = run_script("mnist_test.py", "--model-dir", "model_lenet5", cwd=tmp_path, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("mnist_test.py waited for a checkpoint of LeNet-5's folder, which it would refuse")
    assert result.returncode == 1, result.stderr
    assert result.stderr.endswith("mnist_lenet5_test.py`, not mnist_test.py\n"), result.stderr
    assert "then score it with `python " in result.stderr, result.stderr

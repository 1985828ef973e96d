"""The fifth audit of issue #53's kinds (§1, §3, §4, §9): cases beyond the first four audits, each a fault found
by trying it for real (docs/tests.md, "The fifth audit").

- A learn's script that ignores SIGTERM and has started processes of its own that ignore it too (they hold its
  output pipe): once the grace has passed every one of them is killed, on mnist_learn.py's Ctrl-C and on the
  board's stop alike, and the learn ends.
- A trainer that made its model folder and ends before its first save (a cluster's chief whose ps never starts
  gives up, or is stopped while it waits) leaves no empty model folder, as the generator and the exporter leave
  none of theirs.
- A redo or an accept after the checkpoint its learn started from was removed by hand is refused naming that
  checkpoint as gone and the newest one there (or none), not as a folder "trained further" with an older one.
- Out of date counts what the served model learned, drawings and their digits: a keep relabelled and relabelled
  back, or removed and kept again with the same pixels, is no change.
- The check's lines name a digit whose recall (none in the test records) or precision (read as no test record) is
  undefined, instead of leaving it out.
"""
import os
import shutil
import signal
import subprocess
import sys
import threading

import pytest

import mnist_cluster
from conftest import ROOT, ended, read_line, running, tree_digests, wait_for, wait_limit
from mnistkit import folders, learn, promotion
from mnistkit.board import zh
from mnistkit.errors import DataError

# A course script deaf to SIGTERM (and SIGINT) that started a process deaf to both, which holds its output pipe.
DEAF_WITH_A_CHILD = ("import os, signal, subprocess, sys, time\n"
                     "for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_IGN)\n"
                     "child = subprocess.Popen([sys.executable, '-c', 'import signal, time\\n'\n"
                     "    'for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_IGN)\\n'\n"
                     "    'time.sleep(600)'])\n"
                     "print('pids', os.getpid(), child.pid, flush=True)\n"
                     "time.sleep(600)\n")

CTRL_C_TO_THE_LEARN = """\
import sys
sys.path.insert(0, {root!r})
from mnistkit import learn
learn.STOP_GRACE_SECS = 1  # the grace, shortened for the test
try:
    learn.run(["-c", {script!r}], learn.Watch(out=lambda line: print(line, flush=True)), "failed")
except KeyboardInterrupt:
    print("stopped", flush=True)
    sys.exit(130)
"""


def end_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# not quick: over 2 s a run (make test runs it), so make test-quick keeps under a minute
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_ctrl_c_to_mnist_learn_kills_a_deaf_script_and_the_processes_it_started(tmp_path):
    script = tmp_path / "learn_run.py"
    script.write_text(CTRL_C_TO_THE_LEARN.format(root=ROOT, script=DEAF_WITH_A_CHILD), encoding="utf-8")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = []
    try:
        line = read_line(parent, "the parent's first line")
        assert line.startswith("pids "), line
        pids = [int(n) for n in line.split()[1:]]
        parent.send_signal(signal.SIGINT)
        out, err = ended(parent, "mnist_learn's run after Ctrl-C, its script and the script's child deaf", 30)
        assert parent.returncode == 130 and out.splitlines()[-1] == "stopped", (out, err)
        wait_for(lambda: not any(map(running, pids)), "the script and its child killed", 30)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.communicate()
        end_all(pids)


@pytest.mark.quick
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_the_boards_stop_kills_a_deaf_script_and_the_processes_it_started_and_the_learn_ends():
    # the board's Learning.end: Watch.stop(), then Watch.stop(kill=True) once the grace has passed
    lines, failed = [], []
    watch = learn.Watch(out=lines.append)

    def learning():
        try:
            learn.run(["-c", DEAF_WITH_A_CHILD], watch, "failed")
        except learn.LearnStopped as e:
            failed.append(e)

    thread = threading.Thread(target=learning, daemon=True)
    thread.start()
    pids = []
    try:
        said = wait_for(lambda: next((line for line in lines if line.startswith("pids ")), None), "the script's pids",
                        60)
        pids = [int(n) for n in said.split()[1:]]
        watch.stop()
        thread.join(0.5)
        assert thread.is_alive()  # deaf to SIGTERM
        watch.stop(kill=True)
        thread.join(wait_limit(30))
        assert not thread.is_alive(), "the learn still waits on the output of a process its script started"
        assert len(failed) == 1
        wait_for(lambda: not any(map(running, pids)), "the script and its child killed", 30)
    finally:
        end_all(pids)


MADE_BY_A_RUN = """\
import os, sys, time
sys.path.insert(0, {root!r})
from mnistkit import distributed, folders
with folders.writing({folder!r}, "training"):
    print("writing" if os.path.isdir({folder!r}) else "no folder made", flush=True)
{call}
"""
ENDS_BEFORE_ITS_FIRST_SAVE = {  # how a run that made its model folder ends before it saved anything
    "a cluster's time-out (the chief, its ps never started)": (
        '    with distributed.deadline(0.5, "no session: ps 0 never started"):\n        time.sleep(600)', 1),
    "a Ctrl-C while the chief waits for its session": (
        '    import signal\n'  # Python's own handler a no-op: the main thread waits as if in C (session creation)
        '    signal.signal(signal.SIGINT, lambda *_: None)\n'
        '    with distributed.ends_on_signal("stopped while waiting"):\n        print("waiting", flush=True)\n'
        '        time.sleep(600)', 130),
    "an error": ('    raise SystemExit("error: the records are damaged")', 1),
}


@pytest.mark.quick
@pytest.mark.parametrize("how", list(ENDS_BEFORE_ITS_FIRST_SAVE))
def test_a_run_that_ends_before_its_first_save_leaves_no_empty_model_folder(how, tmp_path):
    call, status = ENDS_BEFORE_ITS_FIRST_SAVE[how]
    folder = tmp_path / "new" / "model_lenet5"  # made by the run, with its parent
    script = tmp_path / "run.py"
    script.write_text(MADE_BY_A_RUN.format(root=ROOT, folder=str(folder), call=call), encoding="utf-8")
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert read_line(child, "writing") == "writing\n"  # in the folder it made
        if status == 130:
            assert read_line(child, "waiting") == "waiting\n"  # its stop watcher is on
            child.send_signal(signal.SIGINT)
        _, err = ended(child, f"the run after {how}", 90)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == status, err
    assert os.listdir(tmp_path) == ["run.py"], "the run left the model folder it made, empty"


@pytest.mark.quick
def test_a_folder_that_was_there_or_that_a_run_saved_into_stays(tmp_path):
    there = tmp_path / "model"
    there.mkdir()
    with pytest.raises(RuntimeError):
        with folders.writing(str(there), "training"):
            raise RuntimeError("failed")
    assert there.is_dir()  # the user's folder, empty before the run: left as it was
    saved = tmp_path / "new" / "model"
    with folders.writing(str(saved), "training"):
        (saved / "mnist_model-1.index").write_bytes(b"")
    assert (saved / "mnist_model-1.index").exists()


@pytest.mark.long
def test_a_lenet5_chief_whose_ps_never_starts_names_it_and_leaves_no_model_folder(sample_workdir, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    os.symlink(sample_workdir / "data", work / "data")
    ports = mnist_cluster.free_ports(2)  # none another test's server or connection takes meanwhile
    result = subprocess.run([sys.executable, os.path.join(ROOT, "mnist_lenet5_backward.py"), "--job_name", "worker",
                             "--task_index", "0", "--ps_hosts", f"127.0.0.1:{ports[0]}", "--worker_hosts",
                             f"127.0.0.1:{ports[1]}", "--steps", "5", "--startup-timeout", "2"], cwd=work,
                            capture_output=True, text=True, timeout=wait_limit(300))
    assert result.returncode == 1, result.stderr
    assert f"ps 0 (127.0.0.1:{ports[0]}) never started" in result.stderr.splitlines()[-1]
    assert sorted(os.listdir(work)) == ["data"], "the chief left the model folder it made, empty"


@pytest.mark.parametrize("older", [True, False], ids=["an-older-checkpoint-left", "no-checkpoint-left"])
@pytest.mark.parametrize("doing", ["redo", "accept"])
def test_a_redo_or_accept_after_the_checkpoint_the_learn_started_from_was_removed_says_so(trained_workdir, tmp_path,
                                                                                         older, doing):
    # before: "trained further since the undo: its newest checkpoint is mnist_model-500" (an older one), or, with
    # none left, the learned checkpoint put in service and the index naming the removed one
    from test_learn_faults import AFTER, BEFORE, promoted_folder
    model_dir = promoted_folder(trained_workdir, tmp_path)
    for path in sorted(model_dir.glob(BEFORE + ".*")):
        if older:
            shutil.copyfile(path, model_dir / ("mnist_model-500" + path.name[len(BEFORE):]))
    promotion.undo(str(model_dir), out=lambda line: None)
    for path in model_dir.glob("mnist_model-*"):
        if not older or not path.name.startswith("mnist_model-500."):
            path.unlink()  # removed by hand: the checkpoint the learn started from (and the others)
    folders.write_index(str(model_dir), "mnist_model-500", ["mnist_model-500"]) if older else \
        (model_dir / folders.INDEX_FILE).unlink()
    if doing == "accept":  # the learn held instead, waiting for a choice
        record = folders.folder_record(str(model_dir))
        record[folders.LEARNS][0]["state"], record[folders.REDO] = "held", []
        folders.change(str(model_dir), record=record)
    before = tree_digests(model_dir)
    with pytest.raises(DataError) as refused:
        getattr(promotion, doing)(str(model_dir), out=pytest.fail)
    said = str(refused.value)
    assert "\n" not in said and "trained further" not in said and "newest checkpoint is now" not in said, said
    assert f"{BEFORE}, the checkpoint learn 1 started from, is not there" in said, said
    assert ("its newest checkpoint is mnist_model-500" if older else "it holds no checkpoint") in said, said
    assert {"redo": "nothing redone", "accept": "nothing accepted"}[doing] in said and AFTER in said, said
    assert tree_digests(model_dir) == before
    twin = zh.phrased(said)  # said whole in Chinese on the board, its names kept
    assert twin is not None and "学习 1 开始时的检查点" in twin and {"redo": "没有重做", "accept": "没有采用"}[doing] in twin, twin


@pytest.mark.quick
def test_a_keep_relabelled_and_relabelled_back_or_removed_and_kept_again_is_no_change(tmp_path):
    # before: counted by number, each new number 2 changes: the page said "does not know 2 changes" of a store
    # holding exactly the drawings and digits the served model learned
    import numpy as np
    from test_audit_learns import history_folder, kept_store, learned_from
    model = history_folder(tmp_path / "work")
    store = kept_store(tmp_path / "work" / "my_digits", [7, 2, 2])
    learned_from(model, store)
    pixels = {name: np.zeros((28, 28), np.uint8) for name, _ in store.entries()}
    for i, (name, _) in enumerate(sorted(store.entries())):  # kept_store's strokes, drawn again
        pixels[name][4:24, 8 + i:12 + i] = 255
    assert promotion.unknown(str(model), store) == 0
    store.remove("000001_7.jpg")
    relabelled, _, _ = store.keep(pixels["000001_7.jpg"], 1)  # the same drawing as a 1: the page's relabel
    assert promotion.unknown(str(model), store) == 2  # the 7 it learned is gone, a 1 it never saw is kept
    store.remove(relabelled)
    store.keep(pixels["000001_7.jpg"], 7)  # and back to 7: number 5 now, the drawing and digit it learned
    assert promotion.unknown(str(model), store) == 0
    store.remove("000002_2.jpg")
    assert promotion.unknown(str(model), store) == 1
    store.keep(pixels["000002_2.jpg"], 2)  # kept again, the same pixels
    assert promotion.unknown(str(model), store) == 0
    store.keep(pixels["000002_2.jpg"], 2)  # and once more: a second copy it did not learn
    assert promotion.unknown(str(model), store) == 1


@pytest.mark.quick
def test_a_digit_the_test_records_lack_is_named_in_the_checks_lines_not_left_out():
    # before: the recall line of a test set without 9s ended at 8, with no word of 9
    before = {"records": 1817, "accuracy": 0.92, "per_digit": [
        {"recall": None if d == 9 else 0.9, "precision": None if d == 5 else 0.0 if d == 9 else 0.9} for d in range(10)]}
    after = {**before, "accuracy": 0.921}
    test, fell = promotion.judge(before, after)
    assert fell == []  # an undefined value holds nothing, and divides by nothing
    recall, precision = learn.per_digit_lines(test)
    assert recall.startswith("recall of each digit, before -> after: 0 0.900->0.900, ")
    assert recall.endswith("8 0.900->0.900; 9: not in the test records (not checked)"), recall
    assert "9 0.000->0.000" in precision and precision.endswith("; 5: read as no test record (not checked)"), precision
    assert learn.per_digit_lines(None) == []


ENDS_AT_ONCE_WHILE_A_SCRIPT_RUNS = """\
import sys, threading
sys.path.insert(0, {root!r})
import tf_compat
from mnistkit import learn
learn.STOP_GRACE_SECS = 10 ** 6  # the tether's own kill after the grace never comes here: end_at_once's is seen
lines = []
watch = learn.Watch(out=lambda line: (print(line, flush=True), lines.append(line)))
threading.Thread(target=learn.run, args=(["-c", {script!r}], watch, "failed"), daemon=True).start()
while not any(line.startswith("pids ") for line in lines):
    threading.Event().wait(0.1)
tf_compat.end_at_once(130)  # the board's second Ctrl-C
"""


@pytest.mark.quick
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_process_that_ends_at_once_takes_its_learns_script_with_it(tmp_path):
    # the script has a process group of its own, which the terminal's second Ctrl-C to the board no longer reaches
    script = tmp_path / "ends.py"
    script.write_text(ENDS_AT_ONCE_WHILE_A_SCRIPT_RUNS.format(root=ROOT, script=DEAF_WITH_A_CHILD), encoding="utf-8")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = []
    try:
        out, err = ended(parent, "a process ending at once while its learn's script runs", 60)
        assert parent.returncode == 130, err
        pids = [int(n) for n in out.split("pids ", 1)[1].split()[:2]]
        wait_for(lambda: not any(map(running, pids)), "the learn's script and its child killed", 30)
    finally:
        end_all(pids)

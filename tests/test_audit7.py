"""The seventh audit of issue 53's kinds (docs/tests.md, "The seventh audit").

- A learn whose process is killed (SIGKILL) between two of its scripts (the trainer ended, the evaluator not yet
  started: no script, so no tether, runs) leaves its staging folder and the model folder's lock; the next board
  (or mnist_learn.py) removes them and says so in one line each (learn.leftovers).
- The planted bugs of the audit that the suite did not catch, each with the behaviour test that fails on it: a
  deaf script after its learn was killed (the grace; a lock another process holds), a keep's rename into place
  that fails, the misread flag's input, the page's undo and redo buttons after more training, a redo of a learn
  recorded without its files list, one kept digit, the changes counted from the last learn, a negative
  `?record=`, `--threshold 0`.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from conftest import ROOT, keep_sevens_as_threes, tree_digests, wait_for, wait_limit
from mnistkit import folders, keep, learn, promotion
from mnistkit.errors import DataError

KILLED_BETWEEN_SCRIPTS = """\
import os, signal, sys
sys.path.insert(0, {root!r})
from mnistkit import learn
def progress(stage, step, steps):
    if stage == "checking":  # the trainer has ended, the evaluator has not started
        print(watch.staging, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
watch = learn.Watch(out=lambda line: None, progress=progress)
learn.learn("model", "my_digits", steps=20, data_dir="data", watch=watch)
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_a_learn_killed_between_its_scripts_leaves_what_the_next_board_removes_and_names(trained_copy, sample_workdir,
                                                                                          tmp_path):
    # before: the staging folder (a copy of the checkpoint, the kept digits and their TFRecords) stayed in the
    # temporary folder for good, and model/.mnist.lock of a learn no one runs stayed without a word
    from test_board import Server, request
    work = trained_copy
    keep_sevens_as_threes(sample_workdir, work / "my_digits")
    model = work / "model"
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    before = tree_digests(model)
    script = work / "killed_between_scripts.py"
    script.write_text(KILLED_BETWEEN_SCRIPTS.format(root=ROOT), encoding="utf-8")
    killed = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True,
                            timeout=wait_limit(600))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    staging = killed.stdout.strip()
    assert os.path.dirname(staging) == str(temp) and os.path.isdir(staging), (staging, killed.stderr[-3000:])
    lock = model / folders.LOCK_FILE
    assert lock.exists()  # no script ran: nothing of the learn's was there to remove them
    pid = folders.lock_owner(str(lock))
    server = Server(work, "--model-dir", "model", env={"TMPDIR": str(temp)})
    try:
        status, _ = request(server.url + "board/learn")  # answered: the lines said before serving are written
        assert status == 200
    finally:
        server.stop()
    said = server.stderr()
    assert f"note: removed {staging}, the staging folder of a learn whose process (pid {pid}) is gone\n" in said, said
    assert f"note: removed {os.path.join('model', folders.LOCK_FILE)}, the lock of a process that is gone (" in said
    assert not os.path.exists(staging) and not lock.exists()
    assert tree_digests(model) == before


@pytest.mark.quick
def test_leftovers_remove_what_gone_learns_left_and_nothing_of_a_running_one(tmp_path, monkeypatch):
    # before: no such sweep; a staging folder of a learn killed between its scripts stayed for good
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead, alive = int(ended.stdout), os.getppid()  # a process that has ended; pytest's parent, running
    assert not folders.pid_alive(dead)
    names = {"gone": f"{learn.STAGING_PREFIX}{dead}-abc123_x", "running": f"{learn.STAGING_PREFIX}{alive}-abc",
             "mine": f"{learn.STAGING_PREFIX}{os.getpid()}-q", "older": f"{learn.STAGING_PREFIX}k2j3h4g5",
             "other": f"other-{dead}-abc"}
    for name in names.values():
        (temp / name).mkdir()
        (temp / name / "mnist_model-1000.index").write_bytes(b"staged")
    os.symlink(temp / names["gone"], temp / f"{learn.STAGING_PREFIX}{dead}-link")
    models = {}
    for key, pid in (("gone", dead), ("running", alive), ("unwritten", None)):
        models[key] = tmp_path / key
        models[key].mkdir()
        (models[key] / folders.LOCK_FILE).write_text("" if pid is None else f"{pid}\nlearning\npython mnist_learn.py\n",
                                                     encoding="utf-8")
    said = learn.leftovers([str(m) for m in models.values()])
    assert said == [f"note: removed {temp / names['gone']}, the staging folder of a learn whose process (pid {dead}) "
                    "is gone",
                    f"note: removed {models['gone'] / folders.LOCK_FILE}, the lock of a process that is gone "
                    f"(`python mnist_learn.py`, pid {dead}, learning)"]
    assert sorted(os.listdir(temp)) == sorted([f"{learn.STAGING_PREFIX}{dead}-link", *(n for k, n in names.items()
                                                                                       if k != "gone")])
    assert (models["running"] / folders.LOCK_FILE).exists() and (models["unwritten"] / folders.LOCK_FILE).exists()
    # a board starting (ours: no learn of its own runs yet) counts its own PID's as gone, as FolderLock does
    assert learn.leftovers(ours=True) == [f"note: removed {temp / names['mine']}, the staging folder of a learn "
                                          f"whose process (pid {os.getpid()}) is gone"]
    assert learn.leftovers([str(m) for m in models.values()], ours=True) == []


DEAF_AND_TETHERED = """\
import os, sys
sys.path.insert(0, {root!r})
from mnistkit import learn
learn.STOP_GRACE_SECS = 1  # the grace, shortened for the test
with open({lock!r}, "w", encoding="utf-8") as f:
    f.write(f"{{os.getpid() if {own!r} else os.getppid()}}\\nlearning\\n")  # another's: the test's, running
watch = learn.Watch(out=lambda line: print(line, flush=True))
watch.temporary({staging!r})
watch.holding({lock!r})
learn.run(["-c", {script!r}], watch, "failed")
"""


# not quick: over 2 s a run (make test runs it), so make test-quick keeps under a minute
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@pytest.mark.parametrize("own", [True, False], ids=["its own lock", "a lock another process holds"])
def test_a_learn_killed_while_its_script_is_deaf_to_sigterm_has_the_script_killed_after_the_grace(tmp_path, own):
    # before (planted): the tether waited for the deaf script with no limit, so the staging folder and the lock of a
    # learn killed with SIGKILL stayed as long as the script ran; or it removed the lock whoever held it by then
    from conftest import read_line
    from test_audit6 import group_running
    from test_audit5 import DEAF_WITH_A_CHILD, end_all
    staging, lock = tmp_path / "staging", tmp_path / folders.LOCK_FILE
    staging.mkdir()
    script = tmp_path / "learn_run.py"
    script.write_text(DEAF_AND_TETHERED.format(root=ROOT, lock=str(lock), staging=str(staging), own=own,
                                               script=DEAF_WITH_A_CHILD), encoding="utf-8")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = []
    try:
        line = read_line(parent, "the deaf script's first line")
        assert line.startswith("pids "), line
        pids = [int(n) for n in line.split()[1:]]
        group = os.getpgid(pids[0])  # the tether's: the script, its child and the tether itself
        parent.kill()
        parent.communicate()
        wait_for(lambda: not group_running(group), "the deaf script, its child and its tether ended after the grace",
                 60)
        assert not staging.exists()
        assert lock.exists() != own  # the learn's own lock removed; another process's left to it
        if not own:
            assert folders.lock_owner(str(lock)) == os.getpid()
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.communicate()
        end_all(pids)


@pytest.mark.quick
@pytest.mark.parametrize("failing", ["label file", "picture", "original", "counter", "journal"])
def test_a_keep_whose_rename_into_place_fails_names_the_file_not_its_temporary(tmp_path, monkeypatch, failing):
    # before (planted): the line named the hidden temporary (.my_digits.txt.k2j3h4.tmp), a name the user never saw
    import errno

    from test_keep import PNG, check_consistent, files_under, kept, one_kept_and_the_next_keeps_file, prepared
    folder = tmp_path / "my_digits"
    store, target = one_kept_and_the_next_keeps_file(folder, failing)
    before = (tmp_path / "my_digits.txt").read_bytes()
    real_replace = os.replace

    def busy(src, dst):  # a file another program holds open (Windows: an antivirus, an image viewer)
        if os.fspath(dst) == target:
            raise OSError(errno.EBUSY, "Device or resource busy")
        real_replace(src, dst)
    monkeypatch.setattr(os, "replace", busy)
    with pytest.raises(DataError) as refused:
        store.keep(prepared(6), 6, PNG, "PNG")
    monkeypatch.undo()
    assert re.fullmatch(rf"{re.escape(target)}: cannot write [^\n]+ \(Device or resource busy\)", str(refused.value))
    assert (tmp_path / "my_digits.txt").read_bytes() == before
    assert not [name for name in files_under(folder) if name.endswith(".tmp")]
    check_consistent(store, 1)
    again = keep.KeptDigits(str(folder))
    assert again.entries() == store.entries() == [(kept(1, 5), 5)] and again.problem() is None


@pytest.mark.quick
def test_the_misread_flag_reads_a_keep_with_the_input_the_network_takes(tmp_path):
    # before (planted): the rows went to the model as 0-255 values, not 0-1: a real network read every keep as
    # something else, sure (a stand reading every picture as 1 flagged the same, so no test saw it)
    from test_audit6 import stand_reading_one
    from test_board_learn import kept_input
    from test_board_routes import Asked
    from mnistkit import keep, preparation
    from mnistkit.board import app, model, teach
    stand = stand_reading_one(0.995)
    seen, answer = [], stand.predict
    stand.predict = lambda rows: (seen.append(np.array(rows)), answer(rows))[1]
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    served = app.Served(model.Model(stand, None), None, store, teach.Learning(store))
    board = app.create_app(served)
    for seed, digit in ((0, 7), (1, 3)):
        Asked(board, "POST", "/board/keep", json.dumps({"digit": digit, "input": kept_input(seed)}).encode())
    seen.clear()
    listed = json.loads(Asked(board, "GET", "/board/kept").body)["entries"]
    assert [e.get("misread") for e in listed] == [{"reads": 1, "probability": pytest.approx(0.995)}] * 2
    rows = np.concatenate(seen)
    wanted = np.concatenate([preparation.network_input(teach.kept_pixels(store, e["name"])) for e in listed])
    assert rows.dtype == np.float32 and np.array_equal(rows, wanted)  # the network's [0, 1] row of each keep


@pytest.mark.quick
def test_the_page_offers_no_undo_or_redo_that_would_be_refused_for_a_folder_trained_further(tmp_path):
    # before (planted): standing's "redo" said yes with mnist_model-3000 trained since the undo; the page offered a
    # redo the server then refused
    from test_audit_learns import BEFORE, SHARD, history_folder
    for state, redo, button in (("promoted", (), "undo"), ("undone", (1,), "redo")):
        model = history_folder(tmp_path / state, state=state, redo=redo)
        assert promotion.standing(str(model))[button] is True
        for suffix in (".index", ".meta", SHARD):
            (model / ("mnist_model-3000" + suffix)).write_bytes(b"trained further")
        folders.write_index(str(model), "mnist_model-3000", [BEFORE, "mnist_model-3000"])
        stand = promotion.standing(str(model))
        assert (stand["undo"], stand["redo"]) == (False, False), state
        assert stand["further"] == {"learn": 1, "newest": "mnist_model-3000", "step": 3000}
        with pytest.raises(DataError, match="its newest checkpoint is mnist_model-3000"):
            getattr(promotion, button)(str(model), out=pytest.fail)


@pytest.mark.quick
@pytest.mark.parametrize("lost", [".index", ".data-00000-of-00001"])
def test_a_redo_of_a_learn_recorded_without_its_files_list_checks_the_files_all_the_same(tmp_path, lost):
    # before (planted): a record from before "files" were listed (an earlier version's undo) had only the .index
    # checked: a redo put a checkpoint without its .data in service, an index naming files that are gone
    from test_audit_learns import AFTER, BEFORE, history_folder
    model = history_folder(tmp_path / "work", state="undone", redo=[1])
    record = folders.folder_record(str(model))
    del record[folders.LEARNS][0]["files"]
    (model / folders.FOLDER_FILE).write_text(folders.record_text(record), encoding="utf-8")
    (model / folders.LEARNS_FOLDER / "1" / (AFTER + lost)).unlink()
    before = tree_digests(model)
    with pytest.raises(DataError) as refused:
        promotion.redo(str(model), out=pytest.fail)
    said = str(refused.value)
    assert "not all there" in said and AFTER + lost in said and "\n" not in said, said
    assert tree_digests(model) == before
    assert folders.indexed_names(str(model))[-1] == BEFORE


@pytest.mark.quick
def test_a_single_kept_digit_is_warned_as_one_digit_only(tmp_path):
    # before (planted): the warning waited for two keeps; a learn on one 7 alone went ahead without a word
    assert learn.one_digit([("000001_7.jpg", 7)]) is not None
    assert "7" in learn.one_digit([("000001_7.jpg", 7)])
    from test_board_learn import kept_input
    from test_board_routes import Asked
    from test_learn_faults import types_stand
    from mnistkit import keep
    from mnistkit.board import app, model, teach
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    stand = types_stand(np.eye(10, dtype=np.float32)[7] * 0.5 + 0.05)
    board = app.create_app(app.Served(model.Model(stand, None), None, store, teach.Learning(store)))
    store.keep(np.array(kept_input(0), np.uint8).reshape(28, 28), 7)
    assert json.loads(Asked(board, "GET", "/board/learn").body)["one_digit"] == 7


@pytest.mark.quick
def test_the_changes_the_model_does_not_know_are_counted_from_the_learn_in_service_the_last(tmp_path):
    # before (planted): counted from the first learn promoted; after a second learn of more keeps the page said
    # the served model did not know keeps it had learned
    from test_audit_learns import history_folder
    from test_board_learn import kept_input
    from mnistkit import keep
    model = history_folder(tmp_path / "work")
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    first = [store.keep(np.array(kept_input(seed), np.uint8).reshape(28, 28), 7) for seed in range(2)]
    record = folders.folder_record(str(model))
    (entry,) = record[folders.LEARNS]
    entry["settings"]["known"] = promotion.known_of(store, store.entries(), str(model))
    entry["state"] = "undone"  # learn 1 undone: its checkpoint and knowledge out of service
    second = {**entry, "learn": 2, "state": "promoted", "changed": 2.0}
    store.keep(np.array(kept_input(5), np.uint8).reshape(28, 28), 3)
    second["settings"] = {**entry["settings"], "known": promotion.known_of(store, store.entries(), str(model))}
    record[folders.LEARNS] = [entry, second]
    folders.change(str(model), record=record)
    assert len(first) == 2 and promotion.unknown(str(model), store) == 0  # learn 2, in service, learned all three
    entry["state"] = "promoted"  # both promoted, learn 2 the later: its knowledge is the served model's
    folders.change(str(model), record=record)
    assert promotion.unknown(str(model), store) == 0


def test_a_record_or_a_cell_given_a_negative_number_is_400_naming_it(sample_workdir):
    # before (planted): `?record=-1` read as Python reads an index, the last test digit's inside (200)
    from test_board_routes import Asked
    from test_server_faults import Stand
    from mnistkit.board import app
    board = app.open_board(lambda: Stand(), lambda data, name: None, "unused", data_dir=str(sample_workdir / "data"))
    asgi = app.create_app(board)
    try:
        wait_for(lambda: json.loads(Asked(asgi, "GET", "/board/mistakes").body).get("state") == "done",
                 "the test records scored")
        for query, name in (("record=-1", "record"), ("record=-0", "record"), ("digit=-1&read=7", "digit"),
                            ("digit=7&read=-3", "read")):
            refused = Asked(asgi, "GET", f"/board/mistakes?{query}")
            value = dict(part.split("=") for part in query.split("&"))[name]
            assert refused.status == 400, query
            assert refused.error().startswith(f"{name}={value}: give a whole number from 0 to "), refused.error()
    finally:
        board.mistakes.stop()


@pytest.mark.quick
def test_threshold_0_the_bottom_of_its_range_is_taken_by_the_app_as_its_help_says(tmp_path):
    # before (planted): the declared minimum 1 under a help text saying 0-255; --threshold 0 refused
    import mnist_app
    from conftest import run_main
    (option,) = [o for o in mnist_app.OPTIONS if o.name == "threshold"]
    low, high = map(int, re.search(r"(\d+)-(\d+)", option.help).groups())
    assert (option.minimum, option.maximum) == (low, high) == (0, 255)
    result = run_main("mnist_app.py", "--threshold", "0", "--model-dir", "none", "x.png", cwd=tmp_path)
    assert "--threshold" not in result.stderr and result.returncode == 1, result.stderr
    refused = run_main("mnist_app.py", "--threshold", "-1", "--model-dir", "none", "x.png", cwd=tmp_path)
    assert refused.returncode == 2 and "--threshold" in refused.stderr


@pytest.mark.quick
def test_mnist_learn_says_and_removes_what_a_killed_learn_left_before_it_starts(tmp_path):
    # before: mnist_learn.py said nothing of a staging folder a learn killed between its scripts left
    temp = tmp_path / "temp"
    temp.mkdir()
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(ended.stdout)
    staging = temp / f"{learn.STAGING_PREFIX}{pid}-abc"
    (staging / "data").mkdir(parents=True)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / folders.LOCK_FILE).write_text(f"{pid}\nlearning\n", encoding="utf-8")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "mnist_learn.py"), "--undo", "--model-dir", "model"],
                            cwd=tmp_path, env={**os.environ, "TMPDIR": str(temp)}, capture_output=True, text=True,
                            timeout=wait_limit(300))
    lines = result.stderr.splitlines()
    assert lines[:2] == [f"note: removed {staging}, the staging folder of a learn whose process (pid {pid}) is gone",
                         f"note: removed {os.path.join('model', folders.LOCK_FILE)}, the lock of a process that is "
                         f"gone (pid {pid}, learning)"], result.stderr
    assert not staging.exists() and not (tmp_path / "model" / folders.LOCK_FILE).exists()
    assert result.returncode == 1 and "no learn to undo" in result.stderr  # then the command itself, as ever

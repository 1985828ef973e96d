"""One writer per model folder: the trainer, a learn and (for its commit) an export take the same folder lock
(mnistkit.folders.FolderLock); a second writer is refused in one line naming the first's command and PID; a lock
whose process is gone is taken over silently; readers take none.

The first writer is this process (the trainer, in process) or a small child process that holds the lock as the
learn or an export does; the second is the real command.
"""
import os
import shlex
import socket
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, copy_into, read_line, run_main, run_script, wait_limit
import mnist_backward
from mnistkit import export, folders, promotion
from mnistkit.errors import DataError

REFUSED = "is writing this folder; wait for it or use another"


@pytest.fixture
def holder(tmp_path):
    """A function starting a child process that holds a folder the way `how` says ("learn": promotion.one_at_a_time
    on a model folder; "export": an export's commit lock), until its stdin is closed; returns the Popen once the
    lock is held. Its command line, as the lock names it: `python hold.py FOLDER HOW`."""
    script = tmp_path / "hold.py"
    script.write_text(textwrap.dedent("""\
        import sys
        sys.path.insert(0, sys.argv[3])
        from mnistkit import folders, promotion
        folder, how = sys.argv[1], sys.argv[2]
        with promotion.one_at_a_time(folder) if how == "learn" else folders.FolderLock(folder, "--export-dir", "an export"):
            print("held", flush=True)
            sys.stdin.read()
    """))
    children = []

    def start(folder, how):
        child = subprocess.Popen([sys.executable, str(script), str(folder), how, ROOT], cwd=tmp_path, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        children.append(child)
        assert read_line(child, "held") == "held\n"
        return child
    yield start
    for child in children:  # a test that failed before releasing its holder
        if not child.stdin.closed:
            child.stdin.close()
        child.wait(timeout=wait_limit(60))
        child.stdout.close()


def held_by(folder, how):
    """The holder's command line as its lock names it (mnistkit.folders.FolderLock: each word quoted by shlex, so a
    repository path with a space in it is one quoted word): str."""
    return shlex.join(["python", "hold.py", str(folder), how, ROOT])


def release(child):
    child.stdin.close()
    assert child.wait(timeout=wait_limit(60)) == 0


def trainer(work, *flags):
    """mnist_backward.py's main in `work` (in this process), training ./model on ./data quietly."""
    return run_main("mnist_backward.py", "--model-dir", "model", "--quiet", *flags, cwd=work)


def test_a_trainer_is_refused_while_a_learn_writes_the_folder_and_a_reader_is_not(trained_workdir, tmp_path, holder):
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    before = sorted(os.listdir(work / "model"))
    learning = holder(work / "model", "learn")
    refused = trainer(work, "--steps", "2100")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == (f"error: model: `{held_by(work / 'model', 'learn')}` (pid {learning.pid}, a "
                              f"learn) {REFUSED} --model-dir\n")
    assert sorted(os.listdir(work / "model")) == sorted(before + [folders.LOCK_FILE])  # nothing written beside it
    scored = run_main("mnist_test.py", "--once", "--data-dir", "data", "--model-dir", "model", cwd=work)  # a reader
    assert scored.returncode == 0 and scored.stdout.startswith("After 2000 training steps, test accuracy = ")
    release(learning)
    assert trainer(work, "--steps", "2001").returncode == 0  # the learn done: the trainer goes on
    assert not (work / "model" / folders.LOCK_FILE).exists()


def test_a_learn_is_refused_while_the_trainer_writes_the_folder(trained_workdir, tmp_path, monkeypatch):
    monkeypatch.setattr(mnist_backward, "PRINT_EVERY", 1)  # a loss line at every step
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    (work / "my_digits").mkdir()
    (work / "my_digits.txt").write_text("")
    learns = []

    def log(line):  # the trainer's first loss line: it holds the folder; a learn tries it now
        if line.startswith("After ") and not learns:
            learns.append(run_script("mnist_learn.py", "--model-dir", "model", "--keep-dir", "my_digits", cwd=work))
    step = mnist_backward.backward(data_dir=str(work / "data"), model_dir=str(work / "model"), steps=2002, quiet=True,
                                   log=log)
    assert step == 2002 and len(learns) == 1
    assert learns[0].returncode == 1 and learns[0].stdout == ""
    line = learns[0].stderr
    assert line.startswith("error: model: `") and line.endswith(f" (pid {os.getpid()}, training) {REFUSED} "
                                                                 "--model-dir\n") and line.count("\n") == 1, line
    assert promotion.learn_history(str(work / "model")) == ([], [])  # nothing learned, nothing promoted
    assert not (work / "model" / folders.LOCK_FILE).exists()


@pytest.mark.long
def test_a_clusters_chief_takes_the_folders_lock(trained_workdir, tmp_path, holder):
    work = copy_into(tmp_path / "work", trained_workdir, "data", "model")
    learning = holder(work / "model", "learn")
    with socket.socket() as s:  # a free port for the chief's server; no parameter server is reached before the lock
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chief = run_script("mnist_backward.py", "--job_name", "worker", "--task_index", "0", "--ps_hosts", "127.0.0.1:1",
                       "--worker_hosts", f"127.0.0.1:{port}", "--model-dir", "model", "--steps", "2100", cwd=work)
    assert chief.returncode == 1, chief.stderr
    assert chief.stderr.splitlines()[-1] == (f"error: model: `{held_by(work / 'model', 'learn')}` (pid "
                                             f"{learning.pid}, a learn) {REFUSED} --model-dir")
    release(learning)


# not quick: 4-5 s of a trainer's process (make test runs it); the quick tier keeps under a minute
def test_a_lock_whose_process_is_gone_is_taken_over_silently(sample_workdir, tmp_path):
    work = copy_into(tmp_path / "work", sample_workdir, "data")
    (work / "model").mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (work / "model" / folders.LOCK_FILE).write_text(f"{gone.stdout.strip()}\ntraining\npython mnist_backward.py\n")
    result = trainer(work, "--steps", "1", "--batch-size", "10")
    assert result.returncode == 0 and result.stderr == ""
    assert "lock" not in result.stdout and "pid" not in result.stdout
    assert not (work / "model" / folders.LOCK_FILE).exists()


@pytest.mark.quick
def test_an_export_commits_under_the_export_folders_lock(tmp_path, holder, monkeypatch):
    staging = tmp_path / "export" / ".staging"
    (staging / "saved_model").mkdir(parents=True)
    for suffix in ("", "_int8"):
        (staging / f"mnist{suffix}.tflite").write_text("this")
    (tmp_path / "export" / "mnist").mkdir()  # made by export() before its commit
    exporting = holder(tmp_path / "export", "export")
    monkeypatch.setattr(export, "COMMIT_WAIT_SECS", 0)  # another export's commit is not waited for here
    with pytest.raises(DataError) as refused:
        export.commit(str(staging), str(tmp_path / "export"), "mnist")
    assert str(refused.value) == (f"{tmp_path / 'export'}: `{held_by(tmp_path / 'export', 'export')}` (pid "
                                  f"{exporting.pid}, an export) {REFUSED} --export-dir")
    assert os.listdir(tmp_path / "export" / "mnist") == []  # nothing renamed
    release(exporting)
    assert export.commit(str(staging), str(tmp_path / "export"), "mnist").saved_model == str(
        tmp_path / "export" / "mnist" / "1")

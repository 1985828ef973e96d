"""A new user's small faults in the trial of issue #53 (§1, §11), each by kind: docs/tests.md, "The trial's stumbles".

1, 2. What a learn prints names no path that is gone when it ends: a child's line saying it saved or reported a file
      into the learn's staging (the trainer's "SIGTERM: ...; checkpoint saved to STAGING/...", the evaluator's
      "report: STAGING/check.json") is relayed without that clause; no other line names a path inside the staging.
3.    No script's --help shows "(default: None)" or "(default: False)" (cli.ShownDefaults).
"""
import glob
import importlib
import json
import os
import re

import pytest

from conftest import ROOT, run_main
from mnistkit import learn

# Lines a learn's scripts print that name its staging folder (STAGE stands for its path): the generator's, the
# trainer's at its start, end and stop, the evaluator's score and report, an error naming a file there.
CHILD_LINES = [
    "wrote 3 train records to STAGE/data/mnist_train.tfrecords",
    "training on 8000 records from data/mnist_train.tfrecords, resuming from STAGE/mnist_model-5; target "
    "global_step 9; mixing 25% from STAGE/data/mnist_train.tfrecords",
    "After 7 training steps, loss on training batch is 0.2.",
    "done at step 9; checkpoint saved to STAGE/mnist_model-9",
    "SIGTERM: stopped at step 7; checkpoint saved to STAGE/mnist_model-7",
    "SIGINT: stopped at step 7; checkpoint saved to STAGE/mnist_model-7",
    "After 9 training steps, test accuracy = 0.93 (STAGE/mnist_model-9, data/mnist_test.tfrecords)",
    "report: STAGE/check.json",
    "report: STAGE/check.json, STAGE/report.png",
    "error: STAGE/data/mnist_train.tfrecords: No space left on device; checkpoint saved to STAGE/mnist_model-8",
]


def path_words(line):
    """The words of `line` that read as paths (a slash in them, or a file name with an extension)."""
    return [w.strip("(),;:") for w in line.split() if "/" in w or re.fullmatch(r"[\w.-]+\.[a-z]{2,9}[),;:]?", w)]


@pytest.mark.quick
def test_a_learns_lines_name_no_path_its_end_removes_and_never_say_its_work_saved_there(tmp_path, monkeypatch):
    """The child lines, printed by a script a learn runs (learn.run), as the learn relays them; then the staging
    removed as a learn's end does. Each path printed is there afterwards; no line says a file was saved."""
    staging = tmp_path / "mnist-learn-x"
    (staging / "data").mkdir(parents=True)
    (tmp_path / "model").mkdir()
    for name in ("mnist_model-5.index", "checkpoint"):
        (tmp_path / "model" / name).write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mnist_train.tfrecords").write_text("")
    (tmp_path / "data" / "mnist_test.tfrecords").write_text("")
    child = tmp_path / "child.py"
    child.write_text("import sys\nfor line in sys.argv[1:]:\n    print(line)\n", encoding="utf-8")
    printed = []
    watch = learn.Watch(printed.append)
    watch.name(str(staging / "mnist_model-5"), os.path.join("model", "mnist_model-5"))
    watch.temporary(str(staging))
    learn.run([str(child), *(line.replace("STAGE", str(staging)) for line in CHILD_LINES)], watch, "failed")
    for path in staging.rglob("*"):
        path.unlink() if path.is_file() else None
    monkeypatch.chdir(tmp_path)
    assert printed, "nothing relayed"
    for line in printed:
        assert "saved" not in line and not line.startswith("report"), (line, printed)
        assert str(tmp_path) not in line and "STAGING" not in line, line
        gone = [p for p in path_words(line) if not os.path.exists(p) and not glob.glob(p + ".*")]  # a prefix
        assert not gone, (line, gone)
    assert "wrote 3 train records" in printed and "done at step 9" in printed and "SIGTERM: stopped at step 7" in \
        printed  # what was done is still said, without where it went



@pytest.mark.quick
def test_a_failed_scripts_last_line_said_is_one_the_learn_printed(tmp_path):
    """A script that fails after a line the learn leaves out (its report into the staging): the learn's one line
    quotes the last line it printed, not "()" or the left-out one."""
    staging = tmp_path / "mnist-learn-x"
    staging.mkdir()
    child = tmp_path / "child.py"
    child.write_text("import sys\nprint('error: cannot read the kept digits')\nprint('report: ' + sys.argv[1] + "
                     "'/check.json')\nsys.exit(1)\n", encoding="utf-8")
    watch = learn.Watch(lambda line: None)
    watch.temporary(str(staging))
    with pytest.raises(learn.LearnFailed) as failed:
        learn.run([str(child), str(staging)], watch, "nothing learned; model is unchanged")
    assert str(failed.value) == ("child.py exited with status 1 (cannot read the kept digits); nothing learned; "
                                 "model is unchanged")

# 3. --help shows a default only where it is a value the flag takes.
SCRIPTS = sorted(name for name in os.listdir(ROOT) if re.fullmatch(r"mnist_\w+\.py", name))


@pytest.mark.quick
@pytest.mark.parametrize("script", SCRIPTS)
def test_every_scripts_help_shows_no_default_that_is_no_value(script, tmp_path):
    """Each top-level mnist_*.py's --help (a script without flags says so in one line): no "(default: None)",
    "(default: False)" or the like, which `mnist_learn.py --help` showed for the trainer's flags after --, the
    switches and the flags unset; each default it shows is the parser's."""
    module = importlib.import_module(script[:-3])
    if not hasattr(module, "build_parser"):  # mnist_forward.py, mnist_lenet5_forward.py: imported, not run
        return
    result = run_main(script, "--help", cwd=tmp_path)
    text = " ".join(result.stdout.split())  # argparse wraps "(default:" and its value onto two lines at times
    assert result.returncode == 0 and text, result.stderr
    shown = re.findall(r"\(default: ([^)]*)\)", text)
    assert shown, text  # the defaults that are values are still shown
    assert not [value for value in shown if value in ("None", "False", "True", "[]", "()", "''", "==SUPPRESS==")], \
        (script, shown)
    defaults = {str(a.default) for a in module.build_parser()._actions}
    assert all(value.split(";")[0] in defaults for value in shown), (script, shown, defaults)


# 4. A request a page of another site may not make is refused in a sentence that reads well for every method.
@pytest.mark.quick
@pytest.mark.parametrize("method, asked, says", [
    ("OPTIONS", "POST", "may not send POST requests here (its browser asked first, with OPTIONS)"),
    ("OPTIONS", "put", "may not send PUT requests here (its browser asked first, with OPTIONS)"),
    ("OPTIONS", None, "may not send OPTIONS requests here"),
    ("POST", None, "may not send POST requests here"), ("PUT", None, "may not send PUT requests here"),
    ("DELETE", None, "may not send DELETE requests here"), ("PATCH", None, "may not send PATCH requests here")])
def test_a_refused_request_of_another_sites_page_says_what_it_may_not_do_in_words(method, asked, says, tmp_path):
    """Every route of the board's table (app.ROUTES), asked with `method` by a page of another site: the 403's line
    says what the page may not do ("may not OPTIONS here" was a CORS preflight's); a HEAD is a read, never
    refused for its Origin."""
    import numpy as np
    from mnistkit import keep
    from mnistkit.board import app, model, teach
    from test_board_routes import EVIL, OWN_HOST, Asked, Stand, example_path
    kept = keep.KeptDigits(str(tmp_path / "my_digits"))  # test_board_routes.served's board
    board = app.create_app(app.Served(model.Model(Stand(), lambda data, name: np.zeros((28, 28), np.uint8)), None,
                                      kept, teach.Learning(kept)))
    headers = [OWN_HOST, (b"origin", EVIL.encode())] + (
        [(b"access-control-request-method", asked.encode())] if asked else [])
    for route in app.ROUTES:
        answer = Asked(board, method, example_path(route), headers=headers)
        assert answer.status == 403, (route.path, answer.status)
        assert answer.error() == f"Origin {EVIL}: a page of another site {says}; to let it, start the server " \
                                 f"with --allow-origin {EVIL}", route.path
        assert Asked(board, "HEAD", example_path(route), headers=headers[:2]).status != 403, route.path


# 5. docs/deploy.md's version examples are what the server answers.
def version_examples():
    """[(the --model-dir served, the model name asked, the version its comment shows)] of docs/deploy.md: each
    `curl .../v1/models/<name>` line whose comment shows a version status, with the last `mnist_app.py --serve`
    line before it (--model-dir, else the default ./model/)."""
    from test_docs import FENCE
    with open(os.path.join(ROOT, "docs", "deploy.md"), encoding="utf-8") as f:
        text = f.read()
    found, served = [], None
    for block in FENCE.finditer(text):
        for line in block.group(1).splitlines():
            if "mnist_app.py --serve" in line:
                flag = re.search(r"--model-dir (\S+)", line.split(" # ")[0])
                served = flag.group(1) if flag else "model"
            example = re.search(r"curl -s \S+/v1/models/(\w+)\s+#.*\"version\":\"(\w+)\"", line)
            if example:
                found.append((served, example.group(1), example.group(2)))
    return found


@pytest.mark.long  # two servers, one loading a SavedModel
def test_the_version_docs_deploy_md_shows_is_the_one_served(exported_workdir):
    """A new user served ./model/ (a checkpoint at step 4000) and got "version":"4000", where docs/deploy.md's one
    example showed "1" (an export's). Each example's served model (the shared export of a 2,000-step checkpoint,
    as the README's flow trains) answers GET /v1/models/<name> with the version the doc shows."""
    from test_board import Server, request
    examples = version_examples()
    assert {served for served, _, _ in examples} >= {"model", "export/mnist"}, examples
    for served, name, version in examples:
        assert served is not None, (name, version)  # an example with no serving command before it
        server = Server(exported_workdir, "--model-dir", served)
        try:
            status, answer = request(server.url + f"v1/models/{name}")
        finally:
            server.stop()
        assert status == 200 and answer["model_version_status"][0]["version"] == version, (served, answer)


# 6. Every "train first" hint, for a folder that is missing, mistyped, empty, summaries only, or the other network's.
HINTED = [("mnist_test.py", ["--once"]), ("mnist_lenet5_test.py", ["--once"]), ("mnist_app.py", ["pic.png"]),
          ("mnist_app.py", ["--serve", "--port", "0"]), ("mnist_export.py", []), ("mnist_learn.py", [])]


def folders_for_hints(work):
    """The folders of the cases, in `work`: model/ (a checkpoint index only, beside which `modle` is a typo),
    empty/, summ/ (TensorBoard's train/ only), lenet/ and mlp/ (each network's record and summaries, no checkpoint:
    its checkpoints deleted by hand)."""
    from mnistkit import folders, networks
    for name in ("model", "empty", "summ/train", "lenet/train", "mlp/train"):
        (work / name).mkdir(parents=True)
    (work / "model" / "checkpoint").write_text('model_checkpoint_path: "mnist_model-1000"\n')
    for name in ("summ", "lenet", "mlp"):
        (work / name / "train" / "events.out.tfevents.1.host").write_bytes(b"")
    for name, network in (("lenet", networks.LENET5), ("mlp", networks.MLP)):
        (work / name / folders.FOLDER_FILE).write_text(json.dumps({"network": networks.to_record(network)}))


@pytest.mark.quick
@pytest.mark.parametrize("script, extra", HINTED, ids=[" ".join([s, *e[:1]]) for s, e in HINTED])
def test_every_train_first_hint_says_what_is_there_and_names_the_right_trainer(script, extra, sample_workdir,
                                                                               tmp_path):
    """A summaries-only folder was hinted `mnist_backward.py` without a word of what it held; a LeNet-5 folder must
    be hinted its own trainer. Each script that needs a checkpoint, for each kind of folder without one."""
    folders_for_hints(tmp_path)
    (tmp_path / "data").symlink_to(sample_workdir / "data")
    (tmp_path / "my_digits.txt").write_text("")  # a learn says kept digits that are not there before the model's hint
    (tmp_path / "pic.png").write_bytes((sample_workdir / "pic.png").read_bytes()) if (
        sample_workdir / "pic.png").exists() else None
    mlp, lenet = "mnist_backward.py", "mnist_lenet5_backward.py"
    own = lenet if "lenet5" in script else mlp  # the trainer of a script's own network, for a folder that says none
    cases = {"gone": ("gone: no such folder; give the folder that holds the checkpoints", None),
             "modle": ("modle: no such folder; did you mean model?", None),
             "empty": ("empty: no checkpoint ", own),
             "summ": ("summ: no checkpoint found, only TensorBoard's summaries (train/); ", own),
             "model": ("model: no checkpoint found, an index naming mnist_model-1000, whose files are not there; ",
                       own if "lenet5" not in script else mlp),
             "lenet": ("lenet: no checkpoint found, only TensorBoard's summaries (train/); ", lenet),
             "mlp": ("mlp: no checkpoint found, only TensorBoard's summaries (train/); ", mlp)}
    for folder, (says, trainer) in cases.items():
        result = run_main(script, "--model-dir", folder, *extra, cwd=tmp_path)
        line = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
        if script == "mnist_learn.py":  # a learn's folder that is gone may have been deleted: it may be trained anew
            says = says.replace("no checkpoint found", "no checkpoint to learn from")
            says, trainer = ("gone: the model folder is not there", own) if folder == "gone" else (says, trainer)
        assert result.returncode == 1 and says in line, (script, folder, line)
        named = re.findall(r"mnist_(?:\w+_)?backward\.py", line.split(";", 1)[-1])  # the evaluator named: test_audit6
        assert named == ([] if trainer is None else [trainer]), (script, folder, line)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["data", "empty", "lenet", "mlp", "model",
                                                                         "summ"]  # no typo's folder made


# 7. A learn's record without checksums: a kept file not provably the one it learned is a change.
@pytest.mark.quick
@pytest.mark.parametrize("recorded", ["digits", "numbers"])
def test_a_record_without_checksums_counts_a_rebuilt_keep_folder_as_changes(recorded, tmp_path):
    """An earlier version's learn record ("known" without "sums"; the oldest without "digits" either). Kept files
    neither written nor renamed since the learn was put in service are the ones it learned (0 changes); a keep
    folder deleted by hand and kept into again (numbers from 1 again) counted 0 and now counts each learned digit
    gone and each new one kept; a file replaced by hand under its name counts 2."""
    import time
    from mnistkit import folders, keep, promotion
    from test_audit_learns import history_folder, kept_store, learned_from, other_drawings, rebuilt
    work = tmp_path / "work"
    model = history_folder(work)

    def learned_before(store, changed):
        """The learn in service learned what `store` holds, put in service at `changed`, as an earlier version
        recorded it."""
        learned_from(model, store)
        record = folders.folder_record(str(model))
        entry = record[folders.LEARNS][0]
        entry["changed"] = changed
        for key in ("sums",) + (("digits",) if recorded == "numbers" else ()):
            del entry["settings"]["known"][key]
        folders.change(str(model), record=record)
    store = kept_store(work / "my_digits", [2, 3, 3])
    learned_before(store, time.time())  # put in service after the three were kept
    assert promotion.unknown(str(model), keep.KeptDigits(store.folder)) == 0
    learned_before(store, time.time() - 1)  # a second before what follows, whatever the file system's clock tick
    rebuilt(work)
    assert promotion.unknown(str(model), other_drawings(work / "my_digits", [2, 3, 3])) == 6  # was 0
    rebuilt(work)
    again = kept_store(work / "my_digits", [2, 3, 3])  # the same drawings kept again: not provably the same files
    assert promotion.unknown(str(model), again) == 6
    learned_before(again, time.time())  # ... then one file replaced by hand under its name
    put_in_service = time.time()
    while time.time() < put_in_service + 0.05:  # past the file system's clock tick (a few ms): a later ctime
        time.sleep(0.01)
    replaced = work / "my_digits" / "000002_3.jpg"
    replaced.write_bytes(replaced.read_bytes())
    assert promotion.unknown(str(model), keep.KeptDigits(again.folder)) == 2


# More of kind 6, found on the way: a trainer given another network's folder whose checkpoints are gone (its record
# left: deleted by hand) trained its own network there, over the record, without a word.
@pytest.mark.quick
@pytest.mark.parametrize("script, other", [("mnist_backward.py", "LENET5"), ("mnist_lenet5_backward.py", "MLP")])
def test_a_trainer_refuses_a_folder_another_networks_trainer_started(script, other, sample_workdir, tmp_path):
    from mnistkit import folders, networks
    network = getattr(networks, other)
    (tmp_path / "started" / "train").mkdir(parents=True)
    record = json.dumps({"network": networks.to_record(network)})
    (tmp_path / "started" / folders.FOLDER_FILE).write_text(record)
    result = run_main(script, "--model-dir", "started", "--data-dir", str(sample_workdir / "data"), "--steps", "1",
                      cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: started: {network.name}'s folder (its {folders.FOLDER_FILE}), with no checkpoint; "), line
    assert re.findall(r"mnist_\w+\.py", line.split(" (or delete")[0]) == [network.train_script], line
    assert sorted(p.name for p in (tmp_path / "started").iterdir()) == [folders.FOLDER_FILE, "train"]
    assert (tmp_path / "started" / folders.FOLDER_FILE).read_text() == record  # not rewritten


@pytest.mark.quick
def test_a_mistyped_picture_is_offered_only_pictures_beside_it(tmp_path):
    """`sevne.jpg` was offered `seven.jpg or serve.pid or serve.out`: the server's files beside the pictures."""
    from mnistkit import pictures
    for name in ("seven.jpg", "serve.pid", "serve.out", "sevens.txt"):
        (tmp_path / name).write_bytes(b"x")
    said = str(pictures.not_found("sevne.jpg", tmp_path / "sevne.jpg"))
    assert said == f"sevne.jpg: file not found; did you mean {tmp_path / 'seven.jpg'}?", said

"""tasks.py, the task script for every operating system: paths, commands, the install stamp, the GPU build,
exit statuses and its one-line errors. No venv is created and nothing is installed: venv and pip are
replaced by recorders, and the few real processes are small Python one-liners."""
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import ROOT, ended, wait_limit
import tasks

pytestmark = pytest.mark.quick  # every test here: make test-quick

POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="signals and process groups as POSIX has them")


@pytest.fixture
def recorded(monkeypatch):
    """tasks.run and tasks.create_venv replaced by recorders: [("run", command)] and [("venv", dir, clear)]."""
    calls = []
    monkeypatch.setattr(tasks, "run", lambda command, failure=None: calls.append(("run", command)))

    def create_venv(venv_dir, clear=False):
        calls.append(("venv", str(venv_dir), clear))
        python = tasks.venv_python(venv_dir)
        python.parent.mkdir(parents=True, exist_ok=True)
        python.touch()
    monkeypatch.setattr(tasks, "create_venv", create_venv)
    return calls


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """tmp_path as the current folder, holding the three requirements files; restored after the test
    (main() moves to the repository's folder)."""
    monkeypatch.chdir(tmp_path)
    for name in (tasks.CPU, tasks.GPU, tasks.FLOOR):
        (tmp_path / name).write_text("numpy\n")
    return tmp_path


def age(path, seconds):
    """Set a file's modification time `seconds` into the past."""
    when = time.time() - seconds
    os.utime(path, (when, when))


# ---------------------------------------------------------------- paths and commands

@pytest.mark.parametrize("platform, python", [("win32", ".venv/Scripts/python.exe"), ("linux", ".venv/bin/python"),
                                              ("darwin", ".venv/bin/python")])
def test_the_venvs_python_is_where_each_system_puts_it(platform, python):
    assert tasks.venv_python(".venv", platform) == Path(python)


def test_each_task_runs_the_makefiles_commands():
    py = ".venv/bin/python"
    assert tasks.task_commands("install", py) == []
    assert tasks.task_commands("demo", py, steps=50) == [
        [py, "mnist_generateds.py"], [py, "mnist_backward.py", "--steps", "50"], [py, "mnist_test.py", "--once"]]
    parallel = ["-n", str(tasks.xdist_workers()), "--dist", "loadscope"]
    assert [tasks.xdist_workers(cores) for cores in (1, 2, 3, 8)] == [2, 3, 4, 4]
    assert tasks.task_commands("test", py, extra=["-x"]) == [[py, "-m", "pytest", "-q", "tests", "-m",
                                                              "not floor and not long", *parallel, "--file-progress",
                                                              "-x"]]
    assert tasks.task_commands("test-long", py) == [[py, "-m", "pytest", "-q", "tests", "-m", "long and not floor",
                                                     *parallel, "--file-progress"]]
    quick = tasks.quick_files()
    assert quick and all(f.startswith("tests/test_") for f in quick)
    assert tasks.task_commands("test-quick", py, extra=["-x"]) == [[py, "-m", "pytest", "-q", *quick, "-m",
                                                                    "quick and not floor", *parallel, "-x"]]
    assert tasks.task_commands("test-floor", py) == [[py, "-m", "pytest", "-q", "tests/test_floor_e2e.py"]]
    assert tasks.task_commands("bench", py, idx_dir="/d", extra=["--repeats", "5"]) == [
        [py, "bench/bench.py", "--idx-dir", "/d", "--repeats", "5"]]
    assert tasks.task_commands("bench-quick", py) == [[py, "bench/bench.py", "--quick"]]
    for command in sum((tasks.task_commands(t, py) for t in tasks.TASKS if t != "clean"), []):
        script = next((c for c in command[1:] if c.endswith(".py") or c == "tests"), None)
        assert script is None or os.path.exists(os.path.join(ROOT, script)), command


def test_quick_files_are_the_test_files_that_mark_a_test_quick(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("import pytest\n\n@pytest.mark.quick\ndef test_x():\n    pass\n")
    (tmp_path / "tests" / "test_b.py").write_text("import pytest\npytestmark = pytest.mark.quick\n")
    (tmp_path / "tests" / "test_c.py").write_text("def test_slow():\n    pass\n")
    (tmp_path / "tests" / "helper.py").write_text("QUICK = pytest.mark.quick\n")
    assert tasks.quick_files(tmp_path / "tests") == ["tests/test_a.py", "tests/test_b.py"]


def test_main_installs_then_runs_the_tasks_commands_with_its_arguments(recorded, in_tmp, monkeypatch, capsys):
    monkeypatch.setattr(tasks, "VENV", str(in_tmp / "venv"))
    monkeypatch.setenv("DEMO_STEPS", "120")
    python = str(tasks.venv_python(in_tmp / "venv"))
    assert tasks.main(["demo"]) == 0
    assert recorded[0] == ("venv", str(in_tmp / "venv"), False)
    # The requirements' install is not --quiet: pip's own lines are the progress of its minute (make install)
    assert [c[1][3:] for c in recorded[1:3]] == [["install", "--quiet", "--upgrade", "pip"],
                                                   ["install", "-r", "requirements.txt"]]
    said = capsys.readouterr().out.splitlines()  # the plan before pip starts, where it went after
    assert said == [tasks.install_plan(str(in_tmp / "venv"), "requirements.txt"),
                    f"{in_tmp / 'venv'} holds requirements.txt (stamp {in_tmp / 'venv' / 'installed'})"]
    assert said[0].startswith(f"installing requirements.txt into {in_tmp / 'venv'}: ") and "pip" in said[0]
    assert recorded[3:] == [("run", c) for c in tasks.task_commands("demo", python, steps=120)]
    del recorded[:]
    assert tasks.main(["bench", "--repeats", "2", "--idx-dir", "/d"]) == 0  # installed: no venv, no pip
    assert recorded == [("run", [python, "bench/bench.py", "--idx-dir", "/d", "--repeats", "2"])]
    assert os.getcwd() == str(ROOT)  # commands run in the repository's folder, wherever tasks.py was started


def test_unknown_arguments_are_refused_by_tasks_that_pass_none_on(capsys):
    with pytest.raises(SystemExit) as exit:
        tasks.main(["demo", "--repeats", "2"])
    assert exit.value.code == 2 and "unrecognized arguments: --repeats 2" in capsys.readouterr().err


@pytest.mark.parametrize("given, said", [(["--steps", "0"], "argument --steps: 0 is out of range: give a whole "
                                                              "number >= 1"),
                                         (["--steps", "many"], "argument --steps: 'many' is not a whole number")])
def test_demo_steps_out_of_range_are_a_usage_error_before_anything_installs(recorded, capsys, given, said):
    with pytest.raises(SystemExit) as exit:
        tasks.main(["demo", *given])
    assert exit.value.code == 2 and said in capsys.readouterr().err and recorded == []


def test_demo_steps_from_the_environment_are_checked_too(monkeypatch, capsys):
    monkeypatch.setenv("DEMO_STEPS", "-3")
    with pytest.raises(SystemExit) as exit:
        tasks.build_parser().parse_args(["demo"])
    assert exit.value.code == 2 and "argument --steps: -3 is out of range" in capsys.readouterr().err
    monkeypatch.setenv("DEMO_STEPS", "300")
    assert tasks.build_parser().parse_args(["demo"]).steps == 300


@pytest.mark.parametrize("text", ["1", "300", "0", "-3", "many", "2.0", "", "nan"])
def test_the_steps_check_is_the_scripts_whole_number_from_1(text):
    """tasks.step_count stands in for mnistkit.cli.bounded(int, 1) (tasks.py runs on the standard library): the
    same value, or the same message."""
    import argparse
    from mnistkit.cli import bounded

    def said(parse):
        try:
            return parse(text)
        except argparse.ArgumentTypeError as e:
            return str(e)
    assert said(tasks.step_count) == said(bounded(int, 1))


def test_help_names_every_task_and_says_where_the_gpu_build_works():
    text = tasks.build_parser().format_help()
    assert all(task in text for task in tasks.TASKS)
    assert "Linux and WSL2 only" in " ".join(text.split())


def test_make_test_says_first_how_long_it_takes_and_which_check_takes_a_minute(recorded, in_tmp, monkeypatch, capsys):
    monkeypatch.setattr(tasks, "VENV", str(in_tmp / "venv"))
    assert tasks.main(["test"]) == 0
    first = capsys.readouterr().out.splitlines()[0]  # before the install and pytest's own lines
    assert first == tasks.STARTS["test"]
    assert f"{tasks.SUITE_TIME} on 2 quiet cores" in first and "`make test-quick`" in first and "one-minute" in first
    assert recorded[-1][1][-1] == "--file-progress"  # and the lines it promises, one per file
    assert tasks.main(["demo"]) == 0 and tasks.STARTS["test"] not in capsys.readouterr().out
    # The documents give the same time as the line (the figure is said in one place and checked here)
    for document in ("README.md", "docs/tests.md"):
        assert f"{tasks.SUITE_TIME} on 2 cores" in Path(ROOT, document).read_text(encoding="utf-8"), document


def test_collecting_the_quick_tier_imports_no_tensorflow():
    """Each of test-quick's workers collects every quick file; TensorFlow's import (about 5 CPU-seconds) must not come
    with it. A module holding tf_compat's `tf` is probed by pytest's collection (`_mock_name`), which must not load it."""
    holding = [f for f in tasks.quick_files() if "from tf_compat import tf" in Path(ROOT, f).read_text(encoding="utf-8")]
    assert holding  # else this test would check nothing
    probe = ("import sys, pytest; status = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', *sys.argv[1:]]); "
             "print('tensorflow imported:', 'tensorflow' in sys.modules); sys.exit(status)")
    result = subprocess.run([sys.executable, "-c", probe, *holding], cwd=ROOT, capture_output=True, text=True,
                            timeout=wait_limit(120))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "tensorflow imported: False"


PROGRESSED = {  # test files of a small suite, run below with --file-progress
    "test_a.py": "def test_one():\n    pass\n\ndef test_two():\n    pass\n",
    "test_b.py": ("import pytest\n\ndef test_fails():\n    assert 1 + 1 == 3\n\n@pytest.mark.skip('later')\n"
                  "def test_skipped():\n    pass\n\n@pytest.mark.parametrize('n', [1, 2, 3])\ndef test_many(n):\n"
                  "    pass\n"),
    "test_c.py": "import pytest\n\n@pytest.fixture\ndef broken():\n    raise OSError('no')\n\n"
                 "def test_error(broken):\n    pass\n",
}


@pytest.mark.parametrize("parallel", [[], ["-n", "2", "--dist", "loadscope"]], ids=["one process", "xdist"])
def test_file_progress_says_each_file_as_it_ends_and_keeps_pytests_failures(parallel, tmp_path):
    for name, text in PROGRESSED.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # this folder is the run's root, not the repository
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "tests")}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "file_progress", "--file-progress",
                             "-p", "no:cacheprovider", *parallel], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=wait_limit(120))
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if re.match(r"^test_\w\.py: ", line)]
    shape = r"^(test_\w\.py): (.*) \((\d) of 3 files, (\d) of 8 tests, \d+ s\)$"
    found = [re.match(shape, line).groups() for line in lines]
    assert {name: counts for name, counts, _, _ in found} == {
        "test_a.py": "2 passed", "test_b.py": "3 passed, 1 failed, 1 skipped", "test_c.py": "1 error"}, lines
    assert [int(done) for _, _, done, _ in found] == [1, 2, 3]  # files done, in the order they ended
    assert int(found[-1][3]) == 8 and int(found[0][3]) == {"test_a.py": 2, "test_b.py": 5, "test_c.py": 1}[found[0][0]]
    # pytest's own report is still there: the failure's assertion and the summary
    assert "assert (1 + 1) == 3" in result.stdout and "FAILED test_b.py::test_fails" in result.stdout
    assert re.search(r"^1 failed, 5 passed, 1 skipped, 1 error in ", result.stdout, re.M), result.stdout


def test_every_makefile_target_calls_tasks_py_and_ci_runs_make_test():
    makefile = Path(ROOT, "Makefile").read_text()
    recipes = dict(re.findall(r"^([\w-]+):\n\t(.*)$", makefile, re.M))
    assert sorted(recipes) == sorted(tasks.TASKS)
    for target, recipe in recipes.items():
        assert recipe.startswith(f"$(PYTHON) tasks.py {target}"), target
    assert "make test\n" in Path(ROOT, ".ci", "run").read_text()


def test_clean_removes_what_the_tasks_write_and_nothing_else(in_tmp):
    for folder in ("model", "model_lenet5", "model_cluster", "model_deep", "mine", "export/mnist/1", "mnist_data_jpg/x",
                   "bench/work", "data/mnist_sample"):
        (in_tmp / folder).mkdir(parents=True)
    # A model folder is told by what the trainer writes into it (any network's, whatever its name); `mine` stays.
    for name in ("data/mnist_train.tfrecords", "data/mnist_test.tfrecords", "bench/bench.py", "model/checkpoint",
                 "model_lenet5/schedule.json", "model_cluster/checkpoint", "model_deep/schedule.json", "mine/notes.txt",
                 "report.png", "report.json", "seen.png"):
        (in_tmp / name).write_text("")
    tasks.clean()
    left = sorted(str(p.relative_to(in_tmp)).replace(os.sep, "/") for p in in_tmp.rglob("*"))
    assert left == ["bench", "bench/bench.py", "data", "data/mnist_sample", "mine", "mine/notes.txt",
                    tasks.FLOOR, tasks.GPU, tasks.CPU]


# ---------------------------------------------------------------- the stamp and the GPU build

def test_install_runs_when_the_stamp_is_missing_older_or_names_another_file(recorded, in_tmp):
    venv = in_tmp / "venv"
    assert tasks.needs_install(venv, tasks.CPU)  # no venv at all
    tasks.ensure_venv(venv, tasks.CPU)
    assert (venv / "installed").read_text() == "requirements.txt\n"
    assert not tasks.needs_install(venv, tasks.CPU)
    age(venv / "installed", 10)
    assert tasks.needs_install(venv, tasks.CPU)  # requirements.txt newer than the stamp: as make decides
    age(in_tmp / tasks.CPU, 20)
    assert not tasks.needs_install(venv, tasks.CPU)
    assert tasks.needs_install(venv, tasks.GPU)
    (venv / "installed").write_text("")  # the stamp the Makefile used to touch: the CPU build
    assert tasks.installed_from(venv) == tasks.CPU and not tasks.needs_install(venv, tasks.CPU)
    (venv / "installed").unlink()
    assert tasks.needs_install(venv, tasks.CPU)


def test_the_gpu_build_is_kept_by_later_tasks_until_cpu_asks_for_the_other(recorded, in_tmp):
    venv = in_tmp / "venv"
    tasks.ensure_venv(venv, tasks.choose_requirements(venv, gpu=True, platform="linux"))
    assert recorded[-1] == ("run", [str(tasks.venv_python(venv)), "-m", "pip", "install", "-r", tasks.GPU])
    del recorded[:]
    for _ in range(2):  # a later install, demo or test: the GPU build stays, nothing is reinstalled
        assert tasks.choose_requirements(venv, platform="linux") == tasks.GPU
        tasks.ensure_venv(venv, tasks.choose_requirements(venv, platform="linux"))
    assert recorded == []
    age(venv / "installed", 10)  # requirements-gpu.txt changed: reinstalled from it, in the same venv
    tasks.ensure_venv(venv, tasks.choose_requirements(venv, platform="linux"))
    assert [c[0] for c in recorded] == ["run", "run"] and recorded[-1][1][-1] == tasks.GPU
    del recorded[:]
    tasks.ensure_venv(venv, tasks.choose_requirements(venv, cpu=True, platform="linux"))
    assert recorded[0] == ("venv", str(venv), True)  # another TensorFlow build: the venv starts empty
    assert recorded[-1][1][-1] == tasks.CPU and tasks.installed_from(venv) == tasks.CPU


@pytest.mark.parametrize("platform", ["win32", "darwin"])
def test_gpu_is_refused_where_tensorflow_has_no_gpu_build(platform):
    with pytest.raises(tasks.Failed) as failed:
        tasks.choose_requirements(".venv", gpu=True, platform=platform)
    assert failed.value.status == 2 and "Linux" in failed.value.message


def requirement_lines(name):
    """{package name and marker: version spec} of a requirements file's requirement lines."""
    found = {}
    for line in Path(ROOT, name).read_text().splitlines():
        line = re.split(r"\s#", line)[0].strip()
        if line and not line.startswith("#"):
            spec, _, marker = line.partition(";")
            package, version = re.match(r"([\w.\[\]-]+)\s*(.*)", spec).groups()
            found[(package, marker.strip())] = version
    return found


def test_gpu_and_floor_files_follow_requirements_txt():
    cpu, gpu, floor = (requirement_lines(name) for name in (tasks.CPU, tasks.GPU, tasks.FLOOR))
    tensorflow = {key for key in cpu if key[0].startswith("tensorflow-") or key[0] == "tensorflow"}
    assert {k: v for k, v in cpu.items() if k not in tensorflow} == {
        k: v for k, v in gpu.items() if k[0] != "tensorflow[and-cuda]"}
    assert gpu[("tensorflow[and-cuda]", "")] == cpu[("tensorflow", 'sys_platform != "linux" or platform_machine != "x86_64"')]
    assert sorted(floor) == sorted(cpu)
    for key, spec in cpu.items():  # each pinned inside the lowest release series that requirements.txt allows
        lowest = re.match(r">=([\d.]+)", spec).group(1)
        pinned = re.fullmatch(r"==([\d.]+(?:\.\*)?)", floor[key]).group(1)
        assert pinned == lowest + ".*" or pinned.startswith(lowest + "."), (key, spec, floor[key])


# ---------------------------------------------------------------- exit statuses and errors

def test_a_failing_command_ends_main_with_its_exit_status(in_tmp, monkeypatch, capfd):
    monkeypatch.setattr(tasks, "ensure_venv", lambda venv, requirements: sys.executable)
    monkeypatch.setattr(tasks, "task_commands", lambda *a: [[sys.executable, "-c", "raise SystemExit(7)"],
                                                            [sys.executable, "-c", "print('not reached')"]])
    assert tasks.main(["demo"]) == 7
    out, err = capfd.readouterr()
    assert out.startswith("+ ") and "SystemExit(7)" in out and "not reached" not in out
    assert err == ""  # the command's own status says it; no error line of tasks.py's


@POSIX_ONLY
def test_a_command_killed_by_a_signal_gives_128_plus_its_number():
    with pytest.raises(tasks.Failed) as failed:
        tasks.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
    assert failed.value.status == 128 + signal.SIGTERM


def test_pip_failing_ends_with_its_status_and_one_error_line(in_tmp, monkeypatch, capsys):
    monkeypatch.setattr(tasks, "VENV", str(in_tmp / "venv"))
    monkeypatch.setattr(tasks, "create_venv", lambda venv_dir, clear=False: None)
    monkeypatch.setattr(tasks.subprocess, "Popen", lambda command: type("Child", (), {"wait": lambda self: 1})())
    assert tasks.main(["install"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("error: pip could not install requirements.txt into ")
    assert not (in_tmp / "venv" / "installed").exists()


@pytest.mark.parametrize("broken", ["no venv module", "no ensurepip module", "ensurepip fails", "Debian's exit"])
def test_a_python_without_a_working_venv_gives_one_error_line(broken, in_tmp, monkeypatch, capsys):
    import venv
    monkeypatch.setattr(tasks, "VENV", str(in_tmp / "venv"))
    if broken == "no venv module":
        monkeypatch.setitem(sys.modules, "venv", None)  # import venv raises ImportError
    elif broken == "no ensurepip module":
        monkeypatch.setitem(sys.modules, "ensurepip", None)  # find_spec finds nothing
    else:
        def create(self, env_dir):
            if broken == "ensurepip fails":
                raise subprocess.CalledProcessError(1, ["python", "-m", "ensurepip"])
            raise SystemExit(1)
        monkeypatch.setattr(venv.EnvBuilder, "create", create)
    assert tasks.main(["demo"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("+ ") and " -m venv " in out
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "apt install python3" in err
    assert not (in_tmp / "venv").exists()


def test_ctrl_c_while_a_command_runs_waits_for_it_then_exits_130(in_tmp, monkeypatch, capsys):
    waits = []

    class Child:
        def wait(self):
            waits.append(1)
            if len(waits) == 1:
                raise KeyboardInterrupt
            return 130
    monkeypatch.setattr(tasks.subprocess, "Popen", lambda command: Child())
    monkeypatch.setattr(tasks, "ensure_venv", lambda venv, requirements: sys.executable)
    assert tasks.main(["demo"]) == 130
    assert len(waits) == 2  # waited again for the child after the Ctrl-C
    assert capsys.readouterr().err == "interrupted\n"


@POSIX_ONLY
def test_ctrl_c_in_a_terminal_lets_the_script_finish_and_exits_130_without_a_traceback(tmp_path):
    """A real Ctrl-C: SIGINT to the whole process group, as a terminal sends it to tasks.py and its child."""
    child = ("import sys, time\ntry:\n    print('ready', flush=True)\n    time.sleep(60)\n"
             "except KeyboardInterrupt:\n    time.sleep(1)\n    print('saved', flush=True)\n    sys.exit(130)\n")
    starter = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import tasks
        tasks.ensure_venv = lambda venv, requirements: sys.executable
        tasks.task_commands = lambda *a: [[sys.executable, "-c", {child!r}]]
        sys.exit(tasks.main(["demo"]))
        """)
    proc = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            # as a terminal starts it, whatever this worker's own Ctrl-C handling is
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line == "ready\n":
            os.killpg(proc.pid, signal.SIGINT)
            break
    out, err = ended(proc, "the task after SIGINT", 60)
    assert proc.returncode == 130, err
    assert (lines[-1] + out).splitlines() == ["ready", "saved"]  # the child's second of stopping was waited for
    assert err == "interrupted\n"

"""The documentation's commands exist: every `python X.py --flag` and `make TARGET` in a fenced code block.

The parsers come from each script's build_parser(), so the flags checked are
the ones argparse really accepts; no script is run.
"""
import glob
import importlib
import os
import re

import pytest

from conftest import ROOT

pytestmark = pytest.mark.quick  # every test here: make test-quick

DOCUMENTS = ["README.md", "README.zh-CN.md"] + sorted(
    os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
PYTHON = re.compile(r"(?:^|[\s/])python3?\s+(\S+\.py)\b(.*)")
MAKE = re.compile(r"(?:^|\s)make\s+([A-Za-z][\w-]*)")
FLAG = re.compile(r"(?:^|\s)(--[\w-]+)")
FORWARDED = {"mnist_cluster.py": "mnist_backward.py"}  # flags it does not know go to every worker
# Documents sure to hold commands: finding none there means this test's parsing broke. A page
# of docs/ may have none (docs/design.md's one code block is a diagram).
HOLD_COMMANDS = {"README.md", "README.zh-CN.md"}


def code_lines(document):
    """[(line number, text)] of the lines inside fenced code blocks, shell comments cut off."""
    with open(os.path.join(ROOT, document), encoding="utf-8") as f:
        text = f.read()
    lines = []
    for block in FENCE.finditer(text):
        first = text.count("\n", 0, block.start(1)) + 1
        for offset, line in enumerate(block.group(1).splitlines()):
            lines.append((first + offset, re.split(r"\s#\s|\s#$", line)[0]))
    return lines


def commands(document):
    """[(where, script path as written, [flags])] and [(where, make target)] of a document's code blocks."""
    python, make = [], []
    for number, line in code_lines(document):
        where = f"{document}:{number}"
        for part in re.split(r"\||&&|;", line):
            found = PYTHON.search(part)
            if found:
                python.append((where, found.group(1), [f.split("=")[0] for f in FLAG.findall(found.group(2))]))
            make += [(where, target) for target in MAKE.findall(part)]
    return python, make


def make_targets():
    with open(os.path.join(ROOT, "Makefile")) as f:
        return set(re.findall(r"^([A-Za-z][\w-]*)\s*:", f.read(), re.M))


def accepted_flags(script):
    """The option strings of a top-level script's parser, or None for a script without build_parser()."""
    module = importlib.import_module(os.path.splitext(script)[0])
    if not hasattr(module, "build_parser"):
        return None
    flags = {s for action in module.build_parser()._actions for s in action.option_strings}
    if script in FORWARDED:
        flags |= accepted_flags(FORWARDED[script])
    return flags


def script_file(written):
    """The repository file a command names: `$REPO/x.py`, `"$REPO"/x.py` and `x.py` are all ROOT/x.py."""
    path = re.sub(r"^(\"?\$\{?REPO\}?\"?|\$HOME/\S*?|~/\S*?)/", "", written)
    return os.path.join(ROOT, path), path


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_documented_command_names_a_script_flag_and_target_that_exist(document):
    assert os.path.isfile(os.path.join(ROOT, document)), document
    python, make = commands(document)
    if document in HOLD_COMMANDS:
        assert python or make, f"{document}: no command found in its code blocks (is the parser of this test broken?)"
    targets = make_targets()
    problems = []
    for where, target in make:
        if target not in targets:
            problems.append(f"{where}: make {target}: no such target in Makefile")
    for where, written, flags in python:
        path, relative = script_file(written)
        if not os.path.isfile(path):
            problems.append(f"{where}: {written}: no such script in the repository")
            continue
        accepted = accepted_flags(relative) if "/" not in relative else None
        for flag in flags:
            if accepted is not None and flag not in accepted:
                problems.append(f"{where}: {relative} has no flag {flag}")
    assert problems == []


def test_the_check_finds_a_wrong_script_flag_and_target(tmp_path):
    """The test above would pass on any document if its parsing found nothing: feed it known mistakes."""
    bad = tmp_path / "bad.md"
    bad.write_text("text `python nothere.py` outside a block\n\n```sh\n"
                   "python $REPO/mnist_app.py --no-such-flag pic.png   # comment --ignored\n"
                   "python mnist_cluster.py --steps 10 --workers 2 | python nothere.py\n"
                   "make demo && make no-such-target\n```\n", encoding="utf-8")
    python, make = commands(os.path.relpath(bad, ROOT))
    assert [(w.split(":")[-1], s, f) for w, s, f in python] == [
        ("4", "$REPO/mnist_app.py", ["--no-such-flag"]),
        ("5", "mnist_cluster.py", ["--steps", "--workers"]),
        ("5", "nothere.py", [])]
    assert [t for _, t in make] == ["demo", "no-such-target"]
    assert "--no-such-flag" not in accepted_flags("mnist_app.py")
    assert {"--steps", "--workers", "--ps"} <= accepted_flags("mnist_cluster.py")
    assert "no-such-target" not in make_targets() and "demo" in make_targets()
    assert not os.path.isfile(script_file("nothere.py")[0]) and os.path.isfile(script_file("$REPO/mnist_app.py")[0])


# A line that waits for Ctrl-C or for input, or trains the course's 50,000 steps, says so in its comment.
WAITS = re.compile(r"#.*\b(waits|runs long)\b|#.*(会等待|运行很久)")
MAX_PASTED_STEPS = 5000  # a pasted block trains at most this many steps (2,000: about a minute on 2 cores)


def waiting_lines(document):
    """[(line number, text)] of a document's code lines that wait (for Ctrl-C or input) or train for long.

    mnist_test.py (or the LeNet-5 one) without --once waits for checkpoints until Ctrl-C; mnist_app.py without
    a picture asks at its prompts, and with --serve serves until Ctrl-C; a trainer without --steps trains the course's 50,000 steps.
    """
    found = []
    for number, code in code_lines(document):
        for part in re.split(r"\||&&|;", code):
            call = PYTHON.search(part)
            if not call:
                continue
            script, args = os.path.basename(call.group(1)), call.group(2).split()
            if (script.endswith("_test.py") and "--once" not in args
                    or script == "mnist_app.py" and (not [a for a in args if not a.startswith("-")] or "--serve" in args)
                    or script.endswith("_backward.py") and "--steps" not in args and "--help" not in args):
                found.append((number, code))
    return found


@pytest.mark.parametrize("document", ["README.md", "README.zh-CN.md"])
def test_the_readmes_first_block_runs_as_pasted_and_waiting_lines_are_marked(document):
    """The README's bash block is pasted whole by a newcomer; it must not stop for input or Ctrl-C."""
    with open(os.path.join(ROOT, document), encoding="utf-8") as f:
        text = f.read()
    pasted = next(block.group(0) for block in FENCE.finditer(text) if block.group(0).startswith("```bash"))
    start = text.count("\n", 0, text.index(pasted)) + 1
    end = start + pasted.count("\n")
    lines = {n: code for n, code in code_lines(document) if start < n < end}
    assert any("mnist_generateds.py" in code for code in lines.values())
    assert [n for n, _ in waiting_lines(document) if n in lines] == []
    for n, code in lines.items():
        steps = re.search(r"--steps[ =](\d+)", code)
        assert steps is None or int(steps.group(1)) <= MAX_PASTED_STEPS, (n, code)
        app = re.search(r"mnist_app\.py\s+(.*)", code)
        if app:  # the pictures it reads are the generator's own: no placeholder such as pic.png
            assert all(arg.startswith(("--", "mnist_data_jpg/")) for arg in app.group(1).split()), (n, code)
    with open(os.path.join(ROOT, document), encoding="utf-8") as f:
        source = f.read().splitlines()
    unmarked = [(n, code) for n, code in waiting_lines(document) if not WAITS.search(source[n - 1])]
    assert unmarked == []


def test_the_waiting_check_finds_waiting_lines(tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_text("```bash\npython $REPO/mnist_test.py\npython mnist_app.py\npython mnist_backward.py\n"
                   "python mnist_test.py --once\npython mnist_app.py x.png\npython mnist_backward.py --steps 9\n```\n",
                   encoding="utf-8")
    assert [n for n, _ in waiting_lines(os.path.relpath(bad, ROOT))] == [2, 3, 4]


# A folder of the developers' machines (/work/shared/data, /work/main): a user has none of them.
MACHINE_PATH = re.compile(r"(?<![\w.])/work/[\w./-]*")


def user_files():
    """What a user reads or runs: the documents, the scripts, the package, bench/ and tools/ (relative paths)."""
    found = DOCUMENTS + [os.path.relpath(p, ROOT) for pattern in ("*.py", "mnistkit/**/*.py", "bench/*.py", "tools/*.py")
                         for p in glob.glob(os.path.join(ROOT, pattern), recursive=True)]
    return sorted(set(found) - {os.path.join("docs", "tests.md")})  # the tests' own page: how they find ../shared


def test_no_document_script_or_default_names_a_folder_of_the_developers_machine():
    # docs/teach.md, docs/inside.md and bench/teach.py's --mnist-dir default named /work/shared/data (a new user's
    # reading): a path no user has; the bundled sample, the repository's folders or an option are what a user has
    named = []
    for path in user_files():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            named += [f"{path}:{n}: {found.group()}" for n, line in enumerate(f, 1)
                      for found in MACHINE_PATH.finditer(line)]
    assert named == []


def test_the_readmes_figure_for_handmade_photos_is_what_it_writes():
    """A README's `tests/handmade.py photos` block follows a paragraph naming how many pictures it writes: ten
    digits per style of its two sets (make_photos' STYLES, make_phone_photos' PHONE_STYLES), as it prints
    `wrote N pictures`; docs/photos.md names the two sets' sizes."""
    import handmade
    drawn, phone = 10 * len(handmade.STYLES), 10 * len(handmade.PHONE_STYLES)
    figures = {}
    for readme in ("README.md", "README.zh-CN.md"):
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            text = f.read()
        for match in re.finditer(r"\n\n([^\n`][^\n]*(?:\n[^\n]+)*?)\n\n```sh\n[^`]*handmade\.py", text):
            figures[readme] = [int(n) for n in re.findall(r"(?<![\w.])(\d+)(?![\w.])", match.group(1))]
    assert figures.get("README.zh-CN.md"), figures  # the Chinese README shows it; finding none: the parsing broke
    for readme, numbers in figures.items():
        assert numbers[0] == drawn + phone, (readme, numbers)
    with open(os.path.join(ROOT, "docs", "photos.md"), encoding="utf-8") as f:
        photos = " ".join(f.read().split())
    assert f"On {drawn} hand-made test photos" in photos and f"On {phone} phone photos" in photos

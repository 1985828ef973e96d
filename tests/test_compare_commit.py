"""bench/compare_commit.py: its arguments, its pairs' order, its figures and its clean-up (no timing is asserted).

Speed itself is what the benchmark prints; docs/performance.md keeps its figures.
"""
import os
import statistics
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
import compare_commit  # noqa: E402


def worktrees():
    """The paths of the repository's detached worktrees (the bench's kind): set of str. Others' worktrees on a
    branch (a developer's, made or moved while the test runs) are not the bench's to remove."""
    listed = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=ROOT, capture_output=True,
                            text=True).stdout
    return {block.splitlines()[0] for block in listed.split("\n\n") if block.strip() and "\ndetached" in block}


@pytest.mark.quick
def test_the_pairs_alternate_which_side_runs_first():
    order = compare_commit.schedule(4)
    assert len(order) == 8
    assert [pair for pair, _ in order] == [0, 0, 1, 1, 2, 2, 3, 3]
    firsts = [order[2 * pair][1] for pair in range(4)]
    assert firsts == ["base", "today", "base", "today"]
    for pair in range(4):  # each pair holds both sides once
        assert {side for p, side in order if p == pair} == {"base", "today"}


@pytest.mark.quick
def test_the_figures_are_medians_of_each_side_and_of_the_pairs_ratios():
    runs = {"base": {"wall": [10.0, 12.0, 11.0, 30.0, 10.5], "cpu": [8.0, 8.2, 8.1, 8.4, 8.0]},
            "today": {"wall": [9.0, 13.0, 10.0, 27.0, 11.5], "cpu": [8.1, 8.0, 8.3, 8.2, 8.1]}}
    figures = compare_commit.summarise(runs)
    for side in ("base", "today"):
        for kind in ("wall", "cpu"):
            assert figures[side][kind] == statistics.median(runs[side][kind])
    for kind in ("wall", "cpu"):
        ratios = [t / b for t, b in zip(runs["today"][kind], runs["base"][kind])]
        assert figures[kind]["each"] == ratios
        assert figures[kind]["pairs"] == statistics.median(ratios)
        assert (figures[kind]["low"], figures[kind]["high"]) == (min(ratios), max(ratios))
        assert figures[kind]["medians"] == figures["today"][kind] / figures["base"][kind]
    # A pair taken on a busy machine (30 s against 27 s) moves its own ratio, not the others'; the median of the
    # pairs (0.91) is not the ratio of the medians (11.5 / 11 = 1.05).
    assert figures["wall"]["pairs"] < 1 < figures["wall"]["medians"] and figures["wall"]["high"] > 1
    table = compare_commit.table(runs, figures, "info")
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| side |") and rows[1].startswith("| base | 11.00 | 8.10 | 10.00, 12.00")
    assert rows[-2].startswith(f"| today / base, wall | {statistics.median(figures['wall']['each']):.3f}x")


@pytest.mark.quick
def test_help_names_the_commit_the_pairs_and_the_steps(capsys):
    with pytest.raises(SystemExit) as exited:
        compare_commit.main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for word in ("commit", "--pairs", "--steps", "--idx-dir", "--sample", "--"):
        assert word in out


@pytest.mark.quick
@pytest.mark.parametrize("argv, said", [(["--pairs", "0"], "--pairs: 0 is out of range: give a whole number >= 1"),
                                        (["--steps", "many"], "--steps: 'many' is not a whole number"),
                                        (["--idx-dir", "/no/such/folder"], "--idx-dir /no/such/folder: no such")])
def test_bad_flags_are_usage_errors(argv, said, capsys):
    with pytest.raises(SystemExit) as exited:
        compare_commit.main(argv)
    assert exited.value.code == 2
    assert said in capsys.readouterr().err


@pytest.mark.quick
def test_an_unknown_commit_is_one_line_and_checks_nothing_out(capsys):
    before = worktrees()
    assert compare_commit.main(["no-such-commit-1f2e3d"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: unknown commit 'no-such-commit-1f2e3d'")
    assert worktrees() <= before  # its own detached worktree removed


@pytest.mark.long
def test_one_pair_of_two_step_runs_prints_both_sides_and_removes_its_worktree(capsys):
    before = worktrees()
    assert compare_commit.main(["HEAD", "--pairs", "1", "--steps", "2", "--sample"]) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in out.splitlines() if line.startswith("| ")}
    for side in ("base", "today"):
        wall, cpu = float(rows[side][1]), float(rows[side][2])
        assert wall > 0 and cpu > 0  # a whole process each: TensorFlow's import alone costs CPU seconds
    assert "today / base, wall" in rows and "today / base, cpu" in rows
    import mnistkit.idx
    count = len(mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "train")[1])
    assert f"{count:,} from the bundled sample" in out and "--steps 2," in out
    assert worktrees() <= before  # its own detached worktree removed

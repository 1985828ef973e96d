"""A pytest plugin: with --file-progress, one line as each test file's last test ends, for a person watching.

    tests/test_x.py: 11 passed, 1 failed (3 of 50 files, 160 of 900 tests, 4 min 10 s)

`make test` (tasks.py test) turns it on: the suite takes minutes and its slowest files start first, so the
dots alone can look like a hang. pytest's own output (the dots, the failures, the summary) is unchanged.
Under pytest-xdist the controller hears the test ids each worker collected
(pytest_xdist_node_collection_finished) and every test's reports (pytest_runtest_logreport); without it, the
session's items. Loaded by tests/conftest.py (pytest_plugins), or `-p file_progress` with tests/ on the path.
"""
import time

import pytest

OUTCOMES = ("passed", "failed", "error", "skipped")  # the order a file's line counts them in


def pytest_addoption(parser):
    parser.getgroup("terminal reporting").addoption(
        "--file-progress", action="store_true",
        help="print a line as each test file ends: its counts, files and tests done, time since the start")


def pytest_configure(config):
    if config.getoption("file_progress") and not hasattr(config, "workerinput"):  # the controller, or no xdist
        config.pluginmanager.register(FileProgress(config), "file_progress_reporter")


def file_of(nodeid):
    """The test file of a test id ("tests/test_x.py::test_y[1]" -> "tests/test_x.py")."""
    return nodeid.split("::", 1)[0]


def elapsed(seconds):
    """A duration as a person reads it: "40 s", "4 min 10 s"."""
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


class FileProgress:
    """Counts each file's tests as they end and says the file's line when its last one has."""

    def __init__(self, config, clock=time.monotonic):
        self.config, self.clock, self.started = config, clock, clock()
        self.expected = {}  # {file: its number of tests}
        self.outcome = {}  # {test id: its outcome so far} (one of OUTCOMES)
        self.ended = {}  # {file: its tests that have ended}
        self.files_done = 0

    def collected(self, nodeids):
        """Take the run's test ids: how many tests each file has."""
        for nodeid in nodeids:
            self.expected[file_of(nodeid)] = self.expected.get(file_of(nodeid), 0) + 1

    def pytest_collection_finish(self, session):
        if session.items:  # without xdist (the controller collects nothing)
            self.collected(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.expected:  # every worker collects the same ids
            self.collected(ids)

    @pytest.hookimpl(trylast=True)  # after the terminal reporter's dot for this test
    def pytest_runtest_logreport(self, report):
        nodeid = report.nodeid
        if report.failed:
            self.outcome[nodeid] = "failed" if report.when == "call" else "error"
        elif report.skipped and self.outcome.get(nodeid) not in ("failed", "error"):
            self.outcome[nodeid] = "skipped"
        else:
            self.outcome.setdefault(nodeid, "passed")
        if report.when in ("setup", "call"):  # a test has ended at its teardown (or a crashed worker's report)
            return
        ended = self.ended.setdefault(file_of(nodeid), [])
        ended.append(nodeid)
        if len(ended) == self.expected.get(file_of(nodeid)):
            self.files_done += 1
            self.say(file_of(nodeid), ended)

    def say(self, file, nodeids):
        """Write a finished file's line: its counts, then files and tests done and the time since the start."""
        outcomes = [self.outcome[n] for n in nodeids]
        counts = ", ".join(f"{outcomes.count(o)} {o}" for o in OUTCOMES if o in outcomes)
        tests_done = sum(len(ended) for ended in self.ended.values())
        line = (f"{file}: {counts} ({self.files_done} of {len(self.expected)} files, {tests_done} of "
                f"{sum(self.expected.values())} tests, {elapsed(self.clock() - self.started)})")
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if getattr(reporter._tw, "width_of_current_line", 0):  # after a row of dots, which -q does not end itself
            reporter.write("\n")
        reporter.write_line(line)

"""The first thing every script does: Ctrl-C from then on ends it with one line, also while modules import;
a third-party package that is not installed is one line too (missing_package), not an import's traceback.

Importing TensorFlow takes a few seconds; a Ctrl-C in that time would
otherwise print Python's KeyboardInterrupt traceback through the import
machinery. Importing this module installs the handler: each script imports
it before its other imports, when run as a script only (a notebook
importing the script keeps its own Ctrl-C). cli.exit_status takes over
around the work itself, and restores this handler after it. Imports
nothing but the standard library's os, signal and sys.
"""
import os
import signal
import sys


def _stop(signum, frame):
    """End the process as exit_status ends a stopped one: `SIGINT: stopped`, status 130, no traceback.

    It ends the process at once (os._exit) rather than raising: an exception
    raised inside an extension module's import (NumPy's, TensorFlow's) is
    turned by that module into an ImportError with its own traceback. While
    the modules import, nothing has been written that would need cleaning up.
    """
    try:
        fresh = "\n" if sys.stderr.isatty() else ""  # as tf_compat.own_line: after a terminal's `^C`, no blank line in a log
        sys.stderr.write(f"{fresh}{signal.Signals(signum).name}: stopped\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(128 + signum)


signal.signal(signal.SIGINT, _stop)  # from now on, until cli.exit_status takes over


# A module whose package is installed under another name (what `pip install` needs).
PACKAGE_OF = {"PIL": "Pillow", "yaml": "PyYAML", "google": "protobuf"}
OWN_MODULES = ("mnistkit", "tf_compat", "tasks", "conftest")  # and every mnist_*: the project's, not a package


def missing_package(error, script):
    """The one line for a ModuleNotFoundError `error` of a third-party module, else None (a module of the project's
    own, or no module named): `mnist_backward.py: needs the package 'tqdm' (No module named 'tqdm'): run make
    install, then use .venv/bin/python (see README)`. script: the script's file name the line starts with."""
    module = (getattr(error, "name", None) or "").split(".")[0]
    if not module or module in OWN_MODULES or module.startswith("mnist_"):
        return None
    python = os.path.join(".venv", "Scripts" if os.name == "nt" else "bin", "python")
    return (f"{script}: needs the package '{PACKAGE_OF.get(module, module)}' ({error}): run make install, then use "
            f"{python} (see README)")


def _uncaught(kind, error, trace, previous=sys.excepthook):
    """sys.excepthook: a missing package (a script run with the system's Python, not the project's venv) ends in
    missing_package's line instead of a traceback; Python's exit status for an uncaught exception, 1, stays.
    Anything else goes to the hook there was before."""
    line = missing_package(error, os.path.basename(sys.argv[0] or "python")) if issubclass(
        kind, ModuleNotFoundError) else None
    if line is None:
        return previous(kind, error, trace)
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


sys.excepthook = _uncaught  # wherever it is raised: at the scripts' imports, or at TensorFlow's first use

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


def saves(argv=None):
    """Whether the script run as argv (default sys.argv) saves files: every script but mnist_app.py predicting
    pictures (without --serve or --show-input, or an abbreviation of them: its parser refuses one, after a stop
    that came first). The one rule of the stop lines' `; nothing saved`: stop_words' here, and tf_compat's while
    TensorFlow imports (tf_compat.writes)."""
    argv = sys.argv if argv is None else argv
    if os.path.basename(argv[0] if argv else "") != "mnist_app.py":
        return True
    return any(arg.split("=")[0] in (flag[:n] for flag in ("--serve", "--show-input") for n in range(5, len(flag) + 1))
               for arg in argv[1:])


WORK_BEGAN = False  # set by cli.exit_status once the script's work began: a stop then may follow a save


def stop_words():
    """What a stop before the script's work says after `SIGINT: `: `stopped; nothing saved` (as tf_compat's
    `stopped while TensorFlow was imported; nothing saved`), or `stopped` for a script that saves nothing (saves)
    and once the work began (WORK_BEGAN: after it, its own line said what was written)."""
    return "stopped; nothing saved" if saves() and not WORK_BEGAN else "stopped"


def _stop(signum, frame):
    """End the process as exit_status ends a stopped one: `SIGINT: stopped; nothing saved` (stop_words), status
    130, no traceback.

    It ends the process at once (os._exit) rather than raising: an exception
    raised inside an extension module's import (NumPy's, TensorFlow's) is
    turned by that module into an ImportError with its own traceback. While
    the modules import, nothing has been written that would need cleaning up.
    """
    try:
        fresh = "\n" if sys.stderr.isatty() else ""  # as tf_compat.own_line: after a terminal's `^C`, no blank line in a log
        sys.stderr.write(f"{fresh}{signal.Signals(signum).name}: {stop_words()}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(128 + signum)


signal.signal(signal.SIGINT, _stop)  # from now on, until cli.exit_status takes over


# A module whose package is installed under another name (what `pip install` needs).
PACKAGE_OF = {"PIL": "Pillow", "yaml": "PyYAML", "google": "protobuf"}
OWN_MODULES = ("mnistkit", "tf_compat", "tasks", "conftest")  # and every mnist_*: the project's, not a package


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository's folder, where .venv is made


def missing_package(error, script, argv=None, venv=None):
    """The one line for a ModuleNotFoundError `error` of a third-party module, else None (a module of the project's
    own, or no module named): the package, and the same command (argv: the command line, default sys.argv;
    `--help` too) run by the project's venv, made first when it is not there:
    `mnist_backward.py: needs the package 'tqdm' (No module named 'tqdm'), which this Python lacks: make the
    project's venv with `python3 tasks.py install` (or make install), then run `.venv/bin/python mnist_backward.py
    --help``. script: the script's file name the line starts with; venv: the venv's folder (default ROOT/.venv).
    Paths are named as from the current folder (relative below it) and quoted for the shell (quoted)."""
    module = (getattr(error, "name", None) or "").split(".")[0]
    if not module or module in OWN_MODULES or module.startswith("mnist_"):
        return None
    venv = os.path.join(ROOT, ".venv") if venv is None else venv
    python = os.path.join(venv, "Scripts", "python.exe") if os.name == "nt" else os.path.join(venv, "bin", "python")
    command = " ".join([quoted(shown(python))] + [quoted(arg) for arg in (sys.argv if argv is None else argv)])
    said = f"{script}: needs the package '{PACKAGE_OF.get(module, module)}' ({error}), which this Python lacks"
    if os.path.isfile(python):
        activate = quoted(os.path.join(shown(venv), "Scripts", "activate")) if os.name == "nt" else \
            "source " + quoted(os.path.join(shown(venv), "bin", "activate"))
        return f"{said}; the project's venv has it: run `{command}` (or activate the venv: `{activate}`)"
    tasks = f"{'py -3.11' if os.name == 'nt' else 'python3'} {quoted(shown(os.path.join(ROOT, 'tasks.py')))} install"
    return f"{said}: make the project's venv with `{tasks}` (or make install), then run `{command}`"


def shown(path):
    """path as a command names it from the current folder: relative below it, else as it is (absolute)."""
    here = os.path.abspath(os.curdir)
    return os.path.relpath(path) if os.path.abspath(path).startswith(here + os.sep) else path


def quoted(arg):
    """arg as a shell takes it back (shlex.quote's rule; Windows: in double quotes), without importing shlex."""
    if arg and all(c.isalnum() or c in "@%+=:,./\\-_" for c in arg):
        return arg
    return f'"{arg}"' if os.name == "nt" else "'" + arg.replace("'", "'\"'\"'") + "'"


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

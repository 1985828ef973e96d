"""The first thing every script does: Ctrl-C from then on ends it with one line, also while modules import.

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
        sys.stderr.write(f"\n{signal.Signals(signum).name}: stopped\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(128 + signum)


signal.signal(signal.SIGINT, _stop)  # from now on, until cli.exit_status takes over

"""TensorFlow's v1 graph API, imported once and quietly, for every script here.

The course was written for TensorFlow 1.x. On TensorFlow 2.x its API lives on
as `tf.compat.v1`; graph mode must be switched on before any op is built.

TensorFlow prints C++ info lines (oneDNN, absl) while it loads, and Python
deprecation warnings for every queue-runner call the course uses. Both drown
the course's own output, so they are silenced unless the command line holds
`--verbose` (checked here, before argparse runs, because the C++ logs are
written during the import itself).

`import tensorflow` also imports Keras 3 eagerly (only to register Keras
optimizers for SavedModel), and Keras pulls in matplotlib and rich (TensorFlow
imports h5py itself).
Nothing here uses Keras, so its import is blocked before TensorFlow loads:
TensorFlow catches the ImportError, exactly as when Keras is not installed.
That saves about 50 MB of resident memory and 0.6 s per script start
(measured with TF 2.21 on the 2-core CI machine: 516 -> 469 MB peak RSS).

Usage: `from tf_compat import tf`; `first_line(error)` quotes a TensorFlow
error in the one-line messages every script prints.
"""
import logging
import os
import sys
import warnings

VERBOSE = "--verbose" in sys.argv[1:]
MAX_MESSAGE = 200  # characters of a TensorFlow error message quoted in ours
UNUSED_PACKAGES = ("keras",)  # imported by TensorFlow's __init__ but not needed by tf.compat.v1 graphs


def _block_unused_packages():
    """Make `import keras` raise ImportError, unless something imported Keras already."""
    for name in UNUSED_PACKAGES:
        sys.modules.setdefault(name, None)


def _import_quietly():
    """Import tensorflow.compat.v1 with stderr muted at the file-descriptor level.

    Returns the `tensorflow.compat.v1` module. The C++ messages printed before
    absl's logging starts ignore TF_CPP_MIN_LOG_LEVEL, so fd 2 is pointed at
    /dev/null during the import and restored afterwards (also when the import
    raises, so its traceback is seen).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        import tensorflow.compat.v1 as tf_v1
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    return tf_v1


_block_unused_packages()
if VERBOSE:
    import tensorflow.compat.v1 as tf
else:
    tf = _import_quietly()
    tf.logging.set_verbosity(tf.logging.ERROR)
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)

tf.disable_eager_execution()


def first_line(error):
    """A TensorFlow error's message in one line: where it happened and what, for a one-line report.

    "Graph execution error:\\n\\nFrom /job:ps/replica:0/task:0:\\nSocket closed\\n..." becomes
    "/job:ps/replica:0/task:0: Socket closed"; cut to MAX_MESSAGE characters.
    A quote mark without its partner (TensorFlow's record reader writes
    "truncated record at 999273' failed with ...") is left out
    (see balance_quotes), so the line can sit inside our own parentheses.
    """
    lines = [line.strip() for line in (getattr(error, "message", None) or str(error)).splitlines()]
    lines = [line for line in lines if line and not line.startswith("Graph execution error")]
    if not lines:
        return type(error).__name__
    line = lines[0][len("From "):] + " " + lines[1] if lines[0].startswith("From ") and len(lines) > 1 else lines[0]
    line = balance_quotes(line)
    return line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE - 3] + "..."


def balance_quotes(text):
    """text without the single quotes that have no partner; apostrophes (can't, file's) are kept.

    A quote between two letters or digits is an apostrophe. Any other quote
    opens a quotation when it follows the start, a space or an opening
    bracket, and closes one otherwise; a closing quote with no open
    quotation, and an opening one never closed, are dropped.
    """
    stray, opened = [], None
    for i, char in enumerate(text):
        if char != "'":
            continue
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < len(text) else " "
        if before.isalnum() and after.isalnum():
            continue
        if before.isspace() or before in "([{<:=,":
            if opened is not None:
                stray.append(opened)
            opened = i
        elif opened is None:
            stray.append(i)
        else:
            opened = None
    if opened is not None:
        stray.append(opened)
    return "".join(char for i, char in enumerate(text) if i not in stray)

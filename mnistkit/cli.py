"""What every script's command line shares: its parser, and its arguments when called from a notebook.

Building a parser imports no TensorFlow, so `--help` and flag errors are
instant.
"""
import argparse
import os
import shlex
import sys

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where the course scripts are

# The keys a user presses, in the words of their own system.
STOP_KEYS = "Ctrl-C or Ctrl-Break" if os.name == "nt" else "Ctrl-C or SIGTERM"
END_OF_INPUT_KEY = "Ctrl-Z then Enter" if os.name == "nt" else "Ctrl-D"


def new_parser(doc):
    """An argparse parser described by the first paragraph of a script's docstring, defaults shown.

    Every script builds its parser first, so this is also where its console
    is made safe for any file name (safe_console).
    """
    safe_console()
    return argparse.ArgumentParser(description=doc.split("\n\n")[0], allow_abbrev=False,
                                   formatter_class=argparse.ArgumentDefaultsHelpFormatter)


def path(text):
    """argparse type of every path flag: the path with a leading ~ expanded to the home folder (str -> str).

    A shell expands `~` only at the start of a word, so `--model-dir=~/m`
    arrives as the literal `~/m`; expanded here, it names the folder the user
    meant, and messages print the expanded path.
    """
    return os.path.expanduser(text)


def safe_console():
    """Make stdout and stderr escape what their encoding cannot print (\\u6570), instead of raising.

    A console or a redirected file on Windows encodes with its code page
    (cp1252, gbk; PYTHONIOENCODING too), which cannot print every file
    name: a message naming `数字七.jpg` would end the run with
    UnicodeEncodeError. With errors="backslashreplace" every message
    arrives, the unprintable characters as \\uXXXX escapes. Streams
    without reconfigure (a notebook's) are left as they are.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) != "backslashreplace":
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream
                pass


def arguments(argv=None):
    """The arguments a main(argv) parses: argv, else the command line's, else none inside a notebook.

    A Jupyter kernel's sys.argv holds its own `-f kernel.json`, which is no
    argument of ours: a course function called from a notebook cell, e.g.
    `mnist_backward.main()`, runs with the defaults there.
    """
    if argv is not None:
        return list(argv)
    if "ipykernel" in sys.modules or "ipykernel" in sys.argv[0] or "IPython" in sys.modules:
        return []
    return sys.argv[1:]


def typed_path(answer):
    """The path a prompt's answer names, as a shell would read it: str -> str.

    A path dragged in from a file manager comes quoted and often with
    spaces after it ('my six.jpg' , "C:\\Users\\me\\my six.jpg"):
    surrounding whitespace is stripped, then one pair of matching
    surrounding quotes (single or double), and a leading ~ is expanded to
    the home folder (os.path.expanduser). Backslashes are kept (Windows).
    """
    path = answer.strip()
    if len(path) >= 2 and path[0] == path[-1] and path[0] in "'\"":
        path = path[1:-1]
    return os.path.expanduser(path)


def script_path(script, cwd=None):
    """A course script's path as the user can type it from the current folder: str.

    script: its file name ("mnist_generateds.py"). The bare name when the
    scripts are in the current folder, the relative path when they are
    below it, else the absolute path: a hint that names a script must run
    where the user is, also when they started this one from another folder
    (`python ~/course/mnist_backward.py`). Quoted for the shell when the
    path holds spaces or other special characters.
    """
    target = os.path.join(REPO_DIR, script)
    try:
        relative = os.path.relpath(target, cwd or os.getcwd())
    except ValueError:  # Windows: another drive
        relative = target
    return quoted(target if relative.startswith(os.pardir) or os.path.isabs(relative) else relative)


def quoted(word):
    """One word of a command line as the user's shell reads it: quoted when it holds spaces or special characters."""
    if os.name == "nt":
        return f'"{word}"' if any(c.isspace() for c in word) else word
    return shlex.quote(word)


def command(script, *args):
    """The command line `python SCRIPT ARGS` that runs a course script from the current folder (see script_path).

    Each of args is quoted for the shell (quoted), so a hint that keeps the
    user's `--model-dir 'model[1]'` runs as written.
    """
    return " ".join(["python", script_path(script), *map(quoted, args)])


def kept(flag, value, default):
    """[flag, value] when the user gave value other than the flag's default (the same folder spelled
    otherwise counts as the default), else []: a hint's command keeps the user's own flags."""
    if value is None or os.path.normpath(value) == os.path.normpath(default):
        return []
    return [flag, value]


def whole_number(answer, what):
    """A prompt's answer as an int >= 0; raises ValueError naming `what` for anything else ("two", "-1", "", "2.0").

    A negative whole number is told what is wanted (`must be 0 or more`), not that it is no whole number.
    """
    answer = answer.strip()
    if answer[:1] == "-" and answer[1:].isdecimal():
        raise ValueError(f"{what} must be 0 or more, not {answer!r}")
    if not answer.isdecimal():  # int() reads every decimal digit; isdigit() would also pass "²"
        raise ValueError(f"{what} must be a whole number, not {answer!r}")
    return int(answer)


def ask_whole_number(prompt, what):
    """Ask `prompt` until the answer is a whole number (int >= 0); None at end of input (Ctrl-D).

    A wrong answer prints `error: <what> must be a whole number, not '<answer>'`
    (`must be 0 or more` for a negative one) on stderr and asks again. Ctrl-C ends the prompt's line, then raises
    KeyboardInterrupt as usual.
    """
    while True:
        try:
            return whole_number(input(prompt), what)
        except EOFError:
            return None
        except KeyboardInterrupt:
            print(flush=True)  # end the prompt's line before the stop is reported
            raise
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr, flush=True)

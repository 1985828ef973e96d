"""What every script's command line shares: its parser, and its arguments when called from a notebook.

Building a parser imports no TensorFlow, so `--help` and flag errors are
instant.
"""
import argparse
import os
import sys

# The keys a user presses, in the words of their own system.
STOP_KEYS = "Ctrl-C or Ctrl-Break" if os.name == "nt" else "Ctrl-C or SIGTERM"
END_OF_INPUT_KEY = "Ctrl-Z then Enter" if os.name == "nt" else "Ctrl-D"


def new_parser(doc):
    """An argparse parser described by the first paragraph of a script's docstring, defaults shown."""
    return argparse.ArgumentParser(description=doc.split("\n\n")[0], allow_abbrev=False,
                                   formatter_class=argparse.ArgumentDefaultsHelpFormatter)


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

"""What every script's command line shares: its parser, and its arguments when called from a notebook.

Building a parser imports no TensorFlow, so `--help` and flag errors are
instant.
"""
import argparse
import sys


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

"""Learn from your own digits: the served model trained on, with the digits you kept mixed into every batch.

Run mnist_app.py --serve first and keep digits with the page's buttons
"That was a ..." (they go to ./my_digits and ./my_digits.txt, the course
layout). This script then does what the page's button "Learn from my
digits" does: mnist_generateds.py turns the kept digits into
TFRecords, and the model folder's trainer (mnist_backward.py, or
mnist_lenet5_backward.py) goes on from the newest checkpoint with
--mix-records, in a staging folder; the new checkpoint joins ./model/ only
when the training ends well. Its --undo goes back to the
checkpoint from before (mnistkit/learn.py; docs/teach.md).
"""
if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401

import sys

from mnistkit import cli, learn


def build_parser():
    """The command line's argparse parser: learn.OPTIONS' flags (declared once, with their bounds), --undo,
    --verbose and the trainer's own flags after --. Building it imports no TensorFlow."""
    parser = cli.new_parser(__doc__)
    learn.OPTIONS.add_to(parser, learn)
    parser.add_argument("--undo", action="store_true", help="go back to the checkpoint before the last learn")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines (the trainer's)")
    parser.add_argument("trainer_args", nargs="*", metavar="-- TRAINER_FLAG",
                        help="after --: more flags for the trainer, e.g. -- --learning-rate-base 0.01")
    return parser


def main(argv=None):
    """The command line of mnist_learn.py: learn.learn(), or learn.undo() with --undo; returns the exit status."""
    parser = build_parser()
    args = learn.OPTIONS.check(parser.parse_args(cli.arguments(argv)), learn, parser.error)
    if args.undo:
        return cli.exit_status(lambda: learn.undo(args.model_dir))
    trainer_args = [*args.trainer_args, *(["--verbose"] if args.verbose else [])]
    return cli.exit_status(lambda: learn.learn(args.model_dir, args.keep_dir, args.steps, args.data_dir, args.share,
                                               trainer_args=trainer_args),
                           interrupted=f"stopped; {args.model_dir} is unchanged")


if __name__ == "__main__":
    sys.exit(main())

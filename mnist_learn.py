"""Learn from your own digits: the served model trained on, with the digits you kept mixed into every batch.

Run mnist_app.py --serve first and keep digits with the page's buttons
"That was a ..." (they go to ./my_digits and ./my_digits.txt, the course
layout). This script then does what the page's button "Learn from my
digits" does: mnist_generateds.py turns the kept digits into
TFRecords, and the model folder's trainer (mnist_backward.py, or
mnist_lenet5_backward.py) goes on from the newest checkpoint with
--mix-records, in a staging folder; mnist_test.py then scores the learned
checkpoint against the one before, on the test records and on your
digits, and the new checkpoint joins ./model/ only when the training ended
well, no digit's recall or precision fell by more than 2 points and the
accuracy by no more than 0.5 (else it waits: accept
it with --accept-worse, or --discard it). --undo goes back to the
checkpoint from before, --redo forward again (mnistkit/learn.py, mnistkit/promotion.py;
docs/teach.md).
"""
if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401

import sys

from mnistkit import checkpoints, cli, learn, promotion


def build_parser():
    """The command line's argparse parser: learn.OPTIONS' flags (declared once, with their bounds), the choices
    about the learns (--undo, --redo, --accept-worse, --discard), --verbose and the trainer's own flags after --.
    Building it imports no TensorFlow."""
    parser = cli.new_parser(__doc__)
    learn.OPTIONS.add_to(parser, learn)
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--undo", action="store_true", help="go back to the checkpoint before the last learn")
    choice.add_argument("--redo", action="store_true", help="put the learned checkpoint the last --undo took back "
                                                            "in service again")
    choice.add_argument("--accept-worse", action="store_true",
                        help="use the learned checkpoint even when a digit got worse: the one waiting for this "
                             "choice, else the one this learn makes")
    choice.add_argument("--discard", action="store_true", help="remove the learned checkpoint waiting for a choice")
    parser.add_argument("--again", action="store_true", help="learn even when the model in service learned every "
                        "kept digit already (none kept, removed or relabelled since its learn); without it, that "
                        "is said and nothing is trained")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines (the trainer's)")
    parser.add_argument("trainer_args", nargs="*", metavar="-- TRAINER_FLAG",
                        help="after --: more flags for the trainer, e.g. -- --learning-rate-base 0.01")
    return parser


def main(argv=None):
    """The command line of mnist_learn.py: learn.learn(), or undo, redo, accept or discard; returns the exit
    status (1 with one line for a learn held because a digit got worse; 0 with learn.nothing_new's line, nothing
    trained, when the model in service learned every kept digit already and --again is not given)."""
    parser = build_parser()
    args = learn.OPTIONS.check(parser.parse_args(cli.arguments(argv)), learn, parser.error)
    into_data = checkpoints.into_data(args.model_dir, parser.get_default("model_dir"))  # as the trainers refuse it
    if into_data:
        return cli.refused(into_data)
    for line in learn.leftovers([args.model_dir], ours=True):  # a learn killed between its scripts: said, removed
        print(line, file=sys.stderr, flush=True)
    for flag, choose in (("undo", promotion.undo), ("redo", promotion.redo), ("discard", promotion.discard)):
        if getattr(args, flag):
            return cli.exit_status(lambda: choose(args.model_dir))
    if args.accept_worse and any(entry.get("state") == "held" for entry in promotion.learn_history(args.model_dir)[0]):
        return cli.exit_status(lambda: promotion.accept(args.model_dir))
    plan = learn.Plan.of(args, trainer_args=(*args.trainer_args, *(["--verbose"] if args.verbose else [])),
                         accept_worse=args.accept_worse)
    said = not args.again and learn.nothing_new(plan)  # the same digits again: said, nothing trained (exit 0)
    if said:
        print(said, flush=True)
        return 0
    return cli.exit_status(lambda: learn.learn(plan), interrupted=f"stopped; {args.model_dir} is unchanged")

if __name__ == "__main__":
    sys.exit(main())

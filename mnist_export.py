"""Course step 5, one past the course: export the trained network for serving and for phones.

Run after mnist_backward.py (or mnist_lenet5_backward.py) has written a
checkpoint. The newest checkpoint in --model-dir is restored with its
moving-average weights, as mnist_test.py and mnist_app.py use them, and
written into --export-dir as
  mnist/<N>/              a SavedModel in TF Serving's layout (N: a new version each time)
  mnist.tflite            the same network for LiteRT (phones), float32
  mnist_int8.tflite       fully int8, about a quarter of the size
(mnist_lenet5/<N>/, mnist_lenet5.tflite and mnist_lenet5_int8.tflite for
LeNet-5, found from the checkpoint). The SavedModel's serving_default
signature takes `images`, float32 [None, 784] in [0, 1], and returns
`probabilities` (float32 [None, 10]) and `classes` (int64 [None]).
docs/deploy.md shows how to use each of them.

  python mnist_export.py                                  # ./model/ -> ./export/
  python mnist_export.py --model-dir model_lenet5         # LeNet-5
  python mnist_app.py --model-dir export/mnist.tflite pic.png
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)

import importlib
import os
import signal

from tf_compat import tf
import mnist_backward
import mnist_forward
import mnist_generateds
from mnistkit import checkpoints, cli, export, files, places, records
from mnistkit.errors import Interrupted

EXPORT_DIR = export.EXPORT_DIR


def export_model(model_dir=mnist_backward.MODEL_SAVE_PATH, export_dir=EXPORT_DIR,
                 data_dir=mnist_generateds.data_path, log=print):
    """Restore the newest checkpoint in model_dir with its moving averages and export it; returns an export.Export.

    The course's restore (mnist_app.restore_model's steps), then one more:
    mnistkit.export.export writes the SavedModel version and the LiteRT
    files into export_dir, the int8 file calibrated on the first
    export.CALIBRATION_RECORDS training records in data_dir (of the bundled
    MNIST sample, after a note, when data_dir holds none). Raises
    DataError when model_dir holds no checkpoint, a damaged one (naming
    the newest intact one) or one with NaN weights, when the training
    records are there but cannot be read, when export_dir cannot be
    written, is a file, or is a SavedModel (a version folder or a base path) that the
    export would nest in (places.export_given); nothing half-written is left then.
    """
    misplaced = places.export_given(export_dir, "--export-dir")  # a SavedModel base path given: no nested export
    if misplaced is not None:
        raise misplaced
    a_file = files.a_file_as_folder(export_dir, "--export-dir", "the exports",
                                    f" (the default is {os.path.normpath(export.EXPORT_DIR)})")
    if a_file is not None:
        raise a_file
    typo = records.mistyped_data(data_dir)  # `--data-dir dta` by data/: said first, not kept in a `train first` hint
    if typo is not None:
        raise typo
    # The newest checkpoint, found from its files as tf.train.get_checkpoint_state would from the `checkpoint`
    # index file, read whole first (a damaged one is one line, never a traceback); its network from the folder.
    found = checkpoints.newest(model_dir, mnist_forward.NETWORK, places.EXPORTER, mnist_backward.MODEL_SAVE_PATH,
                               cli.kept("--data-dir", data_dir, mnist_generateds.data_path),
                               name=mnist_backward.MODEL_NAME)  # the name the folder's `checkpoint` index tells first
    net, ckpt, stored = importlib.import_module(found.network.forward), found.prefix, found.stored
    calibration = export.calibration_images(data_dir, log=log, name=mnist_generateds.tfRecord_train)  # else the sample
    log(f"exporting {net.NETWORK.name} from {ckpt} (moving averages)")

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, net.INPUT_NODE], name=export.INPUT_KEY)
        y = net.forward(x, None)
        variable_averages = tf.train.ExponentialMovingAverage(mnist_backward.MOVING_AVERAGE_DECAY)
        variables_to_restore = variable_averages.variables_to_restore()
        saver = tf.train.Saver(variables_to_restore)
        with tf.Session() as sess:
            with checkpoints.restoring(ckpt, variables_to_restore, stored) as path:  # checked first; a literal path
                saver.restore(sess, path)
            source = {"checkpoint": ckpt, "global_step": int(stored["global_step"])}
            written = export.export(sess, x, y, net.NETWORK, export_dir, calibration, source, log)
    log(f"wrote {written.saved_model} (SavedModel), {written.tflite} and {written.tflite_int8}")
    return written


# Each option of the command line once (cli.Options, as mnist_backward.OPTIONS): flag, default and help; the
# checkpoint folder's default is the trainer's MODEL_SAVE_PATH, read from mnist_backward.py when the parser is built.
Option = cli.ScriptOption
OPTIONS = cli.Options([
    Option("model_dir", mnist_backward.MODEL_SAVE_PATH, "checkpoint folder, of any network (./model_lenet5/ for "
           "LeNet-5)", type=cli.path, constant="MODEL_SAVE_PATH"),
    Option("export_dir", EXPORT_DIR, "where the SavedModel versions and .tflite files go", type=cli.path),
    Option("data_dir", mnist_generateds.data_path, f"folder holding {mnist_generateds.tfRecord_train} (the int8 "
           "file's calibration records)", type=cli.path),
])


def build_parser():
    """The command line's argparse parser (OPTIONS' flags, --verbose); building it imports no TensorFlow (fast
    --help and flag errors)."""
    parser = cli.new_parser(__doc__)
    OPTIONS.add_to(parser, mnist_backward)
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    return parser


def main(argv=None):
    """The command line of mnist_export.py; returns the exit status."""
    args = build_parser().parse_args(cli.arguments(argv))

    def work():
        try:
            with export.stops_of_a_run():  # a stop after the commit is held until the export's cleanup is done
                export_model(args.model_dir, args.export_dir, args.data_dir)
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (errors.Stopped): the line says what was left
            signum = getattr(e, "signum", signal.SIGINT)
            raise Interrupted(signum, f"{signal.Signals(signum).name}: {export.stopped_note()}") from None
    # A stopped export ends at once (os._exit, after its line and its cleanup), never through the interpreter's
    # exit, which aborts the process while the LiteRT converter still runs on its thread (export.interruptible).
    return export.end_if_left_running(cli.exit_status(work))


if __name__ == "__main__":
    export.end(main())  # not sys.exit: a Ctrl-C during the interpreter's exit would kill it with -2 (export.end)

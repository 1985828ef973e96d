"""Course step 3: evaluate the latest checkpoint on data/mnist_test.tfrecords.

Run beside (or after) mnist_backward.py. Every --interval seconds it restores
the newest checkpoint in the model folder into the network with the moving
average (shadow) values of the weights, scores every test record exactly
once through queue runners started and joined around the fetches (with
--pipeline tfdata through tf.data, to the same accuracy), and prints
`After N training steps, test accuracy = X`. The course scored one
shuffle_batch draw of 10,000 examples instead, which repeats some records
and misses others, so its accuracy changed from run to run.

Each score also goes to TensorBoard (<model folder>/eval, beside the
trainer's train/), and `--report report.png` / `--report-json report.json`
write an evaluation report: confusion matrix, per-digit precision and
recall, and the misclassified test digits the network was surest about.
`--checkpoint PREFIX` scores that checkpoint instead of the newest, once;
given again, and with --data-dir given again, each checkpoint is scored on
each test set in one process (mnist_learn.py compares a learned checkpoint
with the one before on MNIST and on your kept digits that way).
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)

import importlib
import os
import sys
import time
import types

import numpy as np

from tf_compat import first_line, tf
import mnist_backward
import mnist_forward
import mnist_generateds
from mnistkit import checkpoints, cli, folders, history, inputs, places, records, summaries
from mnistkit import report as reporting
from mnistkit.errors import DataError

TEST_INTERVAL_SECS = 5
EVAL_BATCH_SIZE = 1000  # records per fetch; any size scores the same
EVAL_LOG_DIR = "eval"  # TensorBoard run inside the model folder, beside the trainer's summaries.TRAIN_LOG_DIR


def evaluate(ckpt_path, tfRecord_path, batch_size=EVAL_BATCH_SIZE, details=False, net=mnist_forward,
             pipeline="fast", found=None):
    """Score one checkpoint on every record of a TFRecord file, exactly once.

    Builds a fresh graph, restores the moving-average (shadow) weights of
    ckpt_path, and runs the batches of mnist_generateds.get_tfrecord(...,
    once=True) (pipeline "tfdata": inputs.tfdata_once, the same batches through
    tf.data) until the queue is exhausted. Returns (global_step, accuracy, count):
    global_step int from the checkpoint, accuracy float in [0, 1], count the
    number of records scored. With `details`, a fourth element holds the
    per-record results in file order: {"labels": int64 [count] true digits,
    "probabilities": float32 [count, 10] softmax of the logits,
    "pixels": uint8 [count, 784]}; without, only the two counts leave the
    session. net: the network's forward module (mnist_forward, or
    mnist_lenet5_forward, built without dropout). found: ckpt_path as
    checkpoints.checked read it, when the caller has (else it is read
    here); the checkpoint is read whole and verified before use
    (mnistkit.checkpoints.restoring). Raises NotFinite (NaN weights: a
    training that diverged), CheckpointDamaged, CheckpointGone (deleted by the trainer's rotation
    while read), or DataError when the checkpoint holds another network or
    does not fit this one, or net.NETWORK names a variable its graph lacks
    (folders.check_graph), or a reader thread fails.
    """
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, net.INPUT_NODE])
        y_ = tf.placeholder(tf.float32, [None, net.OUTPUT_NODE])
        y = net.forward(x, None, train=False)
        folders.check_graph(net.NETWORK)
        global_step = tf.train.get_or_create_global_step()  # restored too: the step the checkpoint was saved at
        ema = tf.train.ExponentialMovingAverage(mnist_backward.MOVING_AVERAGE_DECAY)
        ema_restore = ema.variables_to_restore()  # {name in the checkpoint: variable}: the weights' moving averages
        saver = tf.train.Saver(ema_restore)  # restores each weight's moving average into the weight itself
        found = found or checkpoints.checked(os.path.dirname(ckpt_path), ckpt_path, net.NETWORK, "test_script")
        stored = found.stored
        correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
        correct = tf.reduce_sum(tf.cast(correct_prediction, tf.int64))  # a count: the accuracy is over all batches
        fetches = [correct, tf.shape(x, out_type=tf.int64)[0]]
        if details:
            fetches += [tf.argmax(y_, 1), tf.nn.softmax(y), tf.cast(tf.round(x * 255), tf.uint8)]
        # Differs from the course's get_tfrecord(TEST_NUM, isTrain=False), one shuffle_batch draw that repeats
        # some records and misses others: the test file is read once, in order, so every record is scored once.
        if not records.pipeline_of(pipeline).queue_runners:  # the same pass through tf.data (docs/migrating.md)
            img_batch, label_batch = inputs.tfdata_once(batch_size, tfRecord_path)
        else:
            img_batch, label_batch = mnist_generateds.get_tfrecord(batch_size, isTrain=False, files=[tfRecord_path],
                                                                   once=True)
        step, total_correct, total, batches = score(ckpt_path, stored, (saver, ema_restore), global_step, (x, y_),
                                                    fetches, (img_batch, label_batch), tfRecord_path)
    if total == 0:
        raise DataError(f"{tfRecord_path}: TFRecord file holds no records")
    if not details:
        return step, total_correct / total, total
    labels, probabilities, pixels = (np.concatenate(column) for column in zip(*batches))
    return step, total_correct / total, total, {"labels": labels, "probabilities": probabilities, "pixels": pixels}


def newest_checkpoint(model_dir, model_name=mnist_backward.MODEL_NAME):
    """The prefix (str) of the newest checkpoint in model_dir, or None when there is none.

    The course's tf.train.get_checkpoint_state reads the folder's
    `checkpoint` index file, which tells the checkpoints' name (the
    MODEL_NAME of the trainer that wrote them; model_name, the trainer's
    constant, when it tells none: checkpoints.checkpoint_name). Differs
    from the course's restore of ckpt.model_checkpoint_path:
    checkpoints.latest finds the newest checkpoint files even when the
    index is lost or stale, and passes over a save not yet finished.
    A model_dir that is no folder (a typo, a folder the trainer has not made
    yet) has none, said without importing TensorFlow.
    """
    if not os.path.isdir(model_dir):
        return None
    try:
        ckpt = tf.train.get_checkpoint_state(model_dir)
    except (tf.errors.OpError, ValueError, UnicodeDecodeError):  # an index of binary junk: the files alone count
        ckpt = None
    return checkpoints.latest(model_dir, checkpoints.checkpoint_name(model_dir, model_name, ckpt))


def score(ckpt_path, stored, restorer, global_step, placeholders, fetches, batches, tfRecord_path):
    """evaluate's session: the moving averages restored, every batch of the file fetched and fed once.

    restorer: (saver, its var_list); placeholders: (x, y_); batches: the
    (img_batch, label_batch) fed into them; fetches: [correct count, batch
    size, details...]. Returns (global_step, correct, count, [each batch's
    details]).
    """
    (x, y_), (img_batch, label_batch), (saver, ema_restore) = placeholders, batches, restorer
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())  # get_tfrecord's epoch counter (once=True)
        with checkpoints.restoring(ckpt_path, ema_restore, stored) as path:  # checked first; a literal path
            saver.restore(sess, path)
        step = int(sess.run(global_step))
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        total_correct = total = 0
        batches = []
        try:
            while True:
                xs, ys = sess.run([img_batch, label_batch])
                c, n, *per_record = sess.run(fetches, feed_dict={x: xs, y_: ys})
                total_correct += int(c)
                total += int(n)
                batches.append(per_record)
        except tf.errors.OutOfRangeError:
            pass  # one epoch done: every record has been scored
        except tf.errors.OpError as e:
            if inputs.iterator_failed(e):  # tf.data read the damaged record in this run, not in a thread
                raise inputs.pipeline_failed(tfRecord_path, e) from None
            raise
        finally:
            coord.request_stop()
            try:  # join re-raises a reader thread's error: the real cause behind a closed queue
                coord.join(threads, stop_grace_period_secs=records.JOIN_GRACE_SECS)
            except tf.errors.OpError as e:
                raise inputs.pipeline_failed(tfRecord_path, e) from None
    return step, total_correct, total, batches


# ---------------------------------------------------------------- TensorBoard

def open_eval_writer(model_dir, log=print):
    """A FileWriter for <model_dir>/eval, or None (after a warning) when it cannot be made."""
    try:
        return tf.summary.FileWriter(os.path.join(model_dir, EVAL_LOG_DIR))
    except (tf.errors.OpError, OSError) as e:
        print(f"warning: {model_dir}: no TensorBoard summaries ({getattr(e, 'message', e)})", file=sys.stderr)
        return None


def test(model_dir=mnist_backward.MODEL_SAVE_PATH, data_dir=mnist_generateds.data_path,
         interval=TEST_INTERVAL_SECS, once=False, log=print, report=None, report_json=None, net=mnist_forward,
         pipeline="fast", trainer=mnist_backward):
    """Evaluate the newest checkpoint now, then every `interval` seconds (unless once).

    A checkpoint already scored is not scored again while its files stay as they were
    (checkpoints.signature). Each score is recorded in the model folder's record (record_score), and
    written to TensorBoard as `accuracy` at its global_step in
    <model_dir>/eval. report / report_json: paths (see report_path) rewritten for every scored checkpoint.
    net: this script's network's forward module (see evaluate); a folder of another network whose test
    script is this one (a network declared with no evaluator of its own) is scored with the network the
    folder records (checkpoints.checked). trainer: the trainer script's module, whose MODEL_NAME and
    MODEL_SAVE_PATH are read (mnist_lenet5_test passes mnist_lenet5_backward). The newest checkpoint is
    found from the files in model_dir (newest_checkpoint); one deleted by the trainer's rotation while it
    is read is skipped for the newer one. A damaged checkpoint, or one holding NaN weights, is an error
    with `once`; otherwise it is reported once on stderr and the watch goes on. Returns the last
    (global_step, accuracy, count). Raises DataError when `once` and there is no checkpoint, when
    `interval` (seconds) is not a finite number above 0 without `once`, or on bad input.
    """
    test_path, data_flags = inputs_of(model_dir, data_dir, interval, once, net, trainer)
    details = report is not None or report_json is not None
    last_seen, result, writer = None, None, None
    while True:
        ckpt = newest_checkpoint(model_dir, trainer.MODEL_NAME)  # named as the folder's `checkpoint` index says
        seen = ckpt and (ckpt, checkpoints.signature(ckpt))
        if ckpt is None:
            # an export, a file: it stays so; the other network's folder: its checkpoints are another script's
            if once or places.misplaced(model_dir, net.NETWORK.test_script) or \
                    checkpoints.scored_by_another(model_dir, net.NETWORK):
                raise checkpoints.no_checkpoint(model_dir, net.NETWORK, net.NETWORK.test_script, trainer.MODEL_SAVE_PATH,
                                                data_flags)
            log("No checkpoint file found")
        elif seen != last_seen:
            try:  # the one restore's check: read whole, its network read from the folder
                found = checkpoints.checked(model_dir, ckpt, net.NETWORK, "test_script")
                result = evaluate(ckpt, test_path, details=details, net=importlib.import_module(found.network.forward),
                                  pipeline=pipeline, found=found)
            except checkpoints.CheckpointGone:
                continue  # the trainer's rotation deleted it while we read it; take the newer one
            except (checkpoints.CheckpointDamaged, checkpoints.NotFinite) as e:  # damaged, or NaN weights
                if once:
                    raise DataError(str(e)) from None
                if checkpoints.being_saved(ckpt):  # the trainer is still writing it: score it when it is there
                    time.sleep(interval)
                    continue
                print(f"error: {e}; waiting for the next checkpoint", file=sys.stderr)
                last_seen = seen  # said once; the next checkpoint, or this one written again, is scored
                time.sleep(interval)
                continue
            except tf.errors.OpError as e:
                raise DataError(f"{ckpt}: cannot evaluate checkpoint ({first_line(e)})") from None
            # The files as scored: a save still finishing when `seen` was taken (its index being written) is the
            # same checkpoint, not one to score again.
            last_seen = (ckpt, checkpoints.signature(ckpt))
            log("After %d training steps, test accuracy = %g" % (result[0], result[1]))
            record_score(model_dir, result)
            writer = writer or open_eval_writer(model_dir)
            result = publish(result, writer, report, report_json, log)
        if once:
            if writer is not None:
                summaries.close_writer(writer, log)
            return result
        time.sleep(interval)


def inputs_of(model_dir, data_dir, interval, once, net, trainer):
    """What test() reads, looked up in the order a user fixes it: (the test records' path, the --data-dir flags its
    hints repeat: [] or ["--data-dir", DIR]). Raises DataError for an interval (seconds) that is not a finite number
    above 0 without `once`; a data_dir that is not there (records.no_data, as the trainer says it), then a model_dir
    that is not there (looked_up), both before TensorFlow's import; then bad test records (test_records)."""
    if not once and not cli.within(interval, 0, above=True):  # TEST_INTERVAL_SECS edited, or a caller's value
        raise DataError(f"the interval (--interval, TEST_INTERVAL_SECS) must be a finite number of seconds > 0, "
                        f"not {interval!r}")
    if not os.path.isdir(data_dir):
        raise records.no_data(data_dir)
    data_flags = cli.kept("--data-dir", data_dir, mnist_generateds.data_path)
    looked_up(model_dir, net, trainer, data_flags, watch=not once)
    return test_records(data_dir), data_flags


def score_each(ckpt_paths, data_dirs, log=print, report_json=None, net=mnist_forward, pipeline="fast",
               model_dir=mnist_backward.MODEL_SAVE_PATH, trainer=mnist_backward):
    """Score each checkpoint of ckpt_paths on each data folder's test records, once (--checkpoint, --data-dir again).

    ckpt_paths: checkpoint prefixes (None among them: the newest of
    model_dir); data_dirs: folders holding mnist_test.tfrecords. One line
    each, `After N training steps, test accuracy = X (CHECKPOINT, RECORDS)`;
    report_json: a path for one JSON list of their reports (report.py's
    numbers, with "checkpoint" and "test_records"), checkpoint by
    checkpoint. Returns [(global_step, accuracy, count)] in that order.
    Raises DataError for a checkpoint that is not there, damaged or holding
    NaN weights, and for test records that are missing or bad.
    """
    if None in ckpt_paths:
        looked_up(model_dir, net, trainer)
    for ckpt in ckpt_paths:  # each named checkpoint looked up before the test records are read whole (TensorFlow)
        if ckpt is not None and checkpoints.checkpoint_format(ckpt) is None:
            raise checkpoints.no_such(ckpt)
    test_paths = [test_records(data_dir) for data_dir in data_dirs]
    results, reports = [], []
    for ckpt in ckpt_paths:
        ckpt = ckpt or newest_checkpoint(model_dir, trainer.MODEL_NAME)
        if ckpt is None:
            raise checkpoints.no_checkpoint(model_dir, net.NETWORK, net.NETWORK.test_script, trainer.MODEL_SAVE_PATH)
        try:
            found = checkpoints.checked(os.path.dirname(ckpt) or os.curdir, ckpt, net.NETWORK, "test_script")
            for path in test_paths:
                result = evaluate(ckpt, path, details=report_json is not None, pipeline=pipeline, found=found,
                                  net=importlib.import_module(found.network.forward))
                log("After %d training steps, test accuracy = %g (%s, %s)" % (result[0], result[1], ckpt, path))
                results.append(result[:3])
                if report_json is not None:
                    reports.append({"checkpoint": ckpt, "test_records": path, **reporting.report_numbers(
                        result[0], result[3]["labels"], result[3]["probabilities"])})
        except (checkpoints.CheckpointDamaged, checkpoints.NotFinite, checkpoints.CheckpointGone) as e:
            raise DataError(str(e)) from None
        except tf.errors.OpError as e:
            raise DataError(f"{ckpt}: cannot evaluate checkpoint ({first_line(e)})") from None
    if report_json is not None:
        log("report: " + ", ".join(reporting.write_report(reports, None, json_path=report_json)))
    return results


def looked_up(model_dir, net, trainer, flags=(), watch=False):
    """Raise DataError for a model_dir that is no folder, or without `watch` a folder with no checkpoint file (an
    empty ./model/), before the test records are read whole (their check imports TensorFlow, seconds): a typo
    (`modle`) is said at once (checkpoints.no_checkpoint: `did you mean model?`). With `watch` (test() without
    --once) a folder still to come is waited for, unless its name looks mistyped from a folder beside it
    (checkpoints.new_folder_typo), which would be waited for forever, and so is a folder of data without checkpoints
    (checkpoints.data_held: `--model-dir data`).
    net, trainer, flags: as for test() and no_checkpoint."""
    if os.path.isdir(model_dir):
        # an empty ./model/: said before the records' check; a data folder (TFRecord files, pictures) even by a watch,
        # which would wait for it forever
        if (not watch or checkpoints.data_held(model_dir)) and not folders.has_checkpoints(model_dir):
            raise checkpoints.no_checkpoint(model_dir, net.NETWORK, net.NETWORK.test_script, trainer.MODEL_SAVE_PATH,
                                            flags)
        return
    if not watch:
        raise checkpoints.no_checkpoint(model_dir, net.NETWORK, net.NETWORK.test_script, trainer.MODEL_SAVE_PATH, flags)
    typo = checkpoints.new_folder_typo(model_dir, "watch a model still to be trained there")
    if typo is not None:
        raise DataError(typo)


def test_records(data_dir):
    """The path of data_dir's test TFRecord file (mnist_generateds.tfRecord_test), checked whole before any
    checkpoint is read (records.check_tfrecord). Raises DataError naming the file, or records.no_data's when
    data_dir is not a folder (a mistyped --data-dir, or no ./data yet: said as the trainer says it), or
    records.model_folder_given's when it is a model folder without test records."""
    if not os.path.isdir(data_dir):
        raise records.no_data(data_dir)
    test_path = os.path.join(data_dir, mnist_generateds.tfRecord_test)
    misplaced = not os.path.isfile(test_path) and records.model_folder_given(data_dir)
    if misplaced:  # `--data-dir model`: not told to write the test records into the model folder
        raise misplaced
    records.check_tfrecord(test_path)
    return test_path


def record_score(model_dir, result):
    """The score (evaluate's (global_step, accuracy, ...)) into the model folder's record (history.record_accuracy:
    the board's playback shows it at that step); a record that cannot be written is one warning, and the watch goes
    on."""
    try:
        history.record_accuracy(model_dir, result[0], result[1])
    except DataError as e:
        print(f"warning: {e}; the score is not recorded", file=sys.stderr)


def publish(result, writer, report, report_json, log=print):
    """A score's accuracy into TensorBoard (writer: a FileWriter, or None), and the report when one is asked for.

    result: evaluate's (global_step, accuracy, count[, details]); returns
    its first three. report / report_json: see test().
    """
    if writer is not None:
        writer.add_summary(summaries.scalar_summary("accuracy", result[1]), result[0])
        writer.flush()
    if len(result) > 3:
        numbers = reporting.report_numbers(result[0], result[3]["labels"], result[3]["probabilities"])
        written = reporting.write_report(numbers, result[3]["pixels"], report and reporting.report_path(report), report_json)
        log("report: " + ", ".join(written))
    return result[:3]


# Each option of the command line once (cli.Options, as mnist_backward.OPTIONS): flag, default, help and bounds.
# The defaults named by a constant are read from the trainer script's module and this file's (defaults_of).
Option = cli.ScriptOption
OPTIONS = cli.Options([
    Option("model_dir", mnist_backward.MODEL_SAVE_PATH, "checkpoint folder to evaluate", type=cli.path,
           constant="MODEL_SAVE_PATH"),
    Option("data_dir", mnist_generateds.data_path, f"folder holding {mnist_generateds.tfRecord_test}; given again, "
           "each test set is scored", type=cli.path, again=True),
    Option("checkpoint", None, "score this checkpoint (e.g. model/mnist_model-2000) instead of the newest in "
           "--model-dir, once (its .index, .meta or .data file names it too); give it again to score more in one run",
           type=folders.checkpoint_path, append=True, metavar="PREFIX"),
    Option("interval", TEST_INTERVAL_SECS, "seconds between checks for a new checkpoint",
           type=cli.bounded(float, 0, above=True), constant="TEST_INTERVAL_SECS"),
    Option("once", False, "evaluate the latest checkpoint once and exit"),
    # The pipelines that read the test file whole, once: not "course" (a batch fetched and fed back by feed_dict).
    Option("pipeline", "fast", "fast: queue runners reading many records per op; tfdata: tf.data (docs/migrating.md); "
           "either scores every test record exactly once",
           choices=tuple(name for name, pipeline in records.PIPELINES.items() if not pipeline.fed)),
    Option("report", None, f"write the evaluation report picture: PATH.png, or {reporting.REPORT_FILE} in folder PATH",
           type=cli.plain_path, metavar="PATH"),
    Option("report_json", None, "write the report's numbers as JSON to PATH", type=cli.plain_path, metavar="PATH"),
])


def build_parser(net=mnist_forward, doc=__doc__, trainer=mnist_backward, interval=None):
    """The command line's argparse parser (OPTIONS' flags, --verbose); building it imports no TensorFlow (fast
    --help and flag errors).

    Also mnist_lenet5_test.py's: net (the network's forward module), doc
    (the script's docstring, for --help), trainer (the trainer script's
    module, whose MODEL_SAVE_PATH is --model-dir's default) and interval
    (its TEST_INTERVAL_SECS; None: this file's, read now) are its.
    """
    parser = cli.new_parser(doc)
    parser.set_defaults(net=net)
    OPTIONS.add_to(parser, defaults_of(trainer, interval))
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    return parser


def defaults_of(trainer, interval=None):
    """The module-like namespace OPTIONS' constants are read from: the trainer's MODEL_SAVE_PATH, and `interval`
    (else this file's TEST_INTERVAL_SECS, as it is now) as TEST_INTERVAL_SECS."""
    return types.SimpleNamespace(MODEL_SAVE_PATH=trainer.MODEL_SAVE_PATH, __file__=__file__,
                                 TEST_INTERVAL_SECS=TEST_INTERVAL_SECS if interval is None else interval)


def check_at_once(args, trainer):
    """What the parsed command line `args` names that cannot work, said before TensorFlow's import (seconds):
    another network's folder, told by its record (checkpoints.recorded_elsewhere; each --checkpoint's folder, else
    --model-dir), a model folder's own history/ or learns/ as --model-dir (places.part_given), a --report it cannot
    write (report.jpg: reporting.report_path), a --report-json that is a folder.
    Raises DataError. trainer: the trainer script's module (its MODEL_NAME)."""
    if not args.checkpoint:
        places.refuse_part(args.model_dir)  # model/history: the model folder named
    folders_named = [os.path.dirname(c) or os.curdir for c in args.checkpoint or ()] or [args.model_dir]
    for folder in folders_named:
        checkpoints.recorded_elsewhere(folder, args.net.NETWORK, "test_script", trainer.MODEL_NAME)
    if args.report:
        reporting.report_path(args.report)
    if args.report_json:
        reporting.check_json_path(args.report_json)


def main(argv=None, net=mnist_forward, doc=__doc__, trainer=mnist_backward, interval=None):
    """The command line of mnist_test.py; with net, doc, trainer and interval (build_parser's), of
    mnist_lenet5_test.py."""
    parser = build_parser(net, doc, trainer, interval)
    args = parser.parse_args(cli.arguments(argv))
    data_dirs = args.data_dir if isinstance(args.data_dir, list) else [args.data_dir]
    early = cli.exit_status(lambda: check_at_once(args, trainer))
    if early:
        return early
    if args.checkpoint or len(data_dirs) > 1:
        if args.report:
            parser.error("--report draws one checkpoint on one test set: give --report-json for several")
        return cli.exit_status(lambda: score_each(args.checkpoint or [None], data_dirs, report_json=args.report_json,
                                                  net=args.net, pipeline=args.pipeline, model_dir=args.model_dir,
                                                  trainer=trainer))
    return cli.exit_status(lambda: test(args.model_dir, data_dirs[0], args.interval, args.once, report=args.report,
                                    report_json=args.report_json, net=args.net, pipeline=args.pipeline,
                                    trainer=trainer))


if __name__ == "__main__":
    sys.exit(main())

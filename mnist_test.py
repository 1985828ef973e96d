"""Course step 3: evaluate the latest checkpoint on data/mnist_test.tfrecords.

Run beside (or after) mnist_backward.py. Every --interval seconds it restores
the newest checkpoint in the model folder into the network with the moving
average (shadow) values of the weights, scores every test record exactly
once through queue runners started and joined around the fetches, and prints
`After N training steps, test accuracy = X`. The course scored one
shuffle_batch draw of 10,000 examples instead, which repeats some records
and misses others, so its accuracy changed from run to run.

Each score also goes to TensorBoard (<model folder>/eval, beside the
trainer's train/), and `--report report.png` / `--report-json report.json`
write an evaluation report: confusion matrix, per-digit precision and
recall, and the misclassified test digits the network was surest about.
"""
import argparse
import json
import os
import signal
import sys
import tempfile
import time

import numpy as np

from tf_compat import first_line, tf
import mnist_backward
import mnist_checkpoint
import mnist_forward
import mnist_generateds
import mnist_idx
from mnist_idx import DataError

TEST_INTERVAL_SECS = 5
EVAL_BATCH_SIZE = 1000  # records per fetch; any size scores the same
EVAL_LOG_DIR = "eval"  # TensorBoard run inside the model folder, beside mnist_backward.TRAIN_LOG_DIR
REPORT_FILE = "report.png"  # written into --report when it names a folder
REPORT_WORST = 24  # misclassified digits listed in the report


def evaluate(ckpt_path, tfRecord_path, batch_size=EVAL_BATCH_SIZE, details=False, net=mnist_forward):
    """Score one checkpoint on every record of a TFRecord file, exactly once.

    Builds a fresh graph, restores the moving-average (shadow) weights of
    ckpt_path, and runs the batches of mnist_generateds.get_tfrecord_once
    until the queue is exhausted. Returns (global_step, accuracy, count):
    global_step int from the checkpoint, accuracy float in [0, 1], count the
    number of records scored. With `details`, a fourth element holds the
    per-record results in file order: {"labels": int64 [count] true digits,
    "probabilities": float32 [count, 10] softmax of the logits,
    "pixels": uint8 [count, 784]}; without, only the two counts leave the
    session. net: the network's forward module (mnist_forward, or
    mnist_lenet5_forward, built without dropout). The checkpoint is read
    whole and verified before use (mnist_checkpoint.restore). Raises
    CheckpointDamaged, CheckpointGone (deleted by the trainer's rotation
    while read), or DataError when the checkpoint holds another network or
    does not fit this one, or a reader thread fails.
    """
    with tf.Graph().as_default():
        img_batch, label_batch = mnist_generateds.get_tfrecord_once(batch_size, tfRecord_path)
        y = net.forward(img_batch, None, train=False)
        correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(label_batch, 1)), tf.int64))
        seen = tf.shape(img_batch, out_type=tf.int64)[0]
        fetches = [correct, seen]
        if details:
            fetches += [tf.argmax(label_batch, 1), tf.nn.softmax(y), tf.cast(tf.round(img_batch * 255), tf.uint8)]
        batches = []
        global_step = tf.train.get_or_create_global_step()
        ema = tf.train.ExponentialMovingAverage(mnist_backward.MOVING_AVERAGE_DECAY)
        restore_vars = ema.variables_to_restore()
        stored = mnist_checkpoint.read_checkpoint(ckpt_path)
        mnist_forward.check_network(ckpt_path, stored, net, "TEST_SCRIPT")
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            mnist_checkpoint.restore(sess, restore_vars, ckpt_path, stored)
            step = int(sess.run(global_step))
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            total_correct = total = 0
            try:
                while True:
                    c, n, *per_record = sess.run(fetches)
                    total_correct += int(c)
                    total += int(n)
                    batches.append(per_record)
            except tf.errors.OutOfRangeError:
                pass  # one epoch done: every record has been scored
            finally:
                mnist_generateds.stop_queue_runners(coord, threads, tfRecord_path)
    if total == 0:
        raise DataError(f"{tfRecord_path}: TFRecord file holds no records")
    if not details:
        return step, total_correct / total, total
    labels, probabilities, pixels = (np.concatenate(column) for column in zip(*batches))
    return step, total_correct / total, total, {"labels": labels, "probabilities": probabilities, "pixels": pixels}


# ---------------------------------------------------------------- the report

def report_numbers(step, labels, probabilities, worst=REPORT_WORST):
    """The evaluation report's numbers, as a JSON-ready dict.

    labels: int [n] true digits; probabilities: float [n, 10], one row per
    record in file order. Returns global_step, records, correct, accuracy,
    confusion_matrix (10x10 counts, rows = true digit, columns = predicted),
    per_digit (precision, recall, support = true count, predicted = count
    predicted; precision or recall is None when undefined, e.g. a digit
    never predicted), and worst_misclassified: up to `worst` wrongly
    predicted records, most confident first, with index (record number in
    the file), true, predicted, confidence (probability of the predicted
    digit) and true_probability.
    """
    labels = np.asarray(labels, dtype=np.int64)
    predicted = np.argmax(probabilities, axis=1)
    classes = probabilities.shape[1]
    confusion = np.bincount(labels * classes + predicted, minlength=classes * classes).reshape(classes, classes)
    per_digit = []
    for d in range(classes):
        hits, support, called = int(confusion[d, d]), int(confusion[d].sum()), int(confusion[:, d].sum())
        per_digit.append({"digit": d, "precision": hits / called if called else None,
                          "recall": hits / support if support else None, "support": support, "predicted": called})
    confidence = probabilities[np.arange(len(labels)), predicted]
    wrong = np.flatnonzero(predicted != labels)
    wrong = wrong[np.argsort(-confidence[wrong], kind="stable")][:worst]
    correct = int(np.trace(confusion))
    return {
        "global_step": int(step), "records": len(labels), "correct": correct, "accuracy": correct / len(labels),
        "confusion_matrix": confusion.tolist(), "per_digit": per_digit,
        "worst_misclassified": [{"index": int(i), "true": int(labels[i]), "predicted": int(predicted[i]),
                                 "confidence": float(confidence[i]), "true_probability": float(probabilities[i, labels[i]])}
                                for i in wrong],
    }


def draw_report(numbers, pixels):
    """The report as a matplotlib Figure (Agg, no window): confusion matrix,
    precision/recall per digit, and the worst misclassified digits.

    numbers: from report_numbers; pixels: uint8 [n, 784] of the same records.
    """
    from matplotlib.figure import Figure  # imported here: only a report needs matplotlib
    from matplotlib.patches import Rectangle

    confusion = np.array(numbers["confusion_matrix"])
    classes = len(confusion)
    worst = numbers["worst_misclassified"]
    columns = 8
    rows = max(1, -(-len(worst) // columns))
    fig = Figure(figsize=(11, 6 + 1.45 * rows), layout="constrained")
    fig.suptitle(f"checkpoint at global_step {numbers['global_step']}: test accuracy {numbers['accuracy']:.4f} "
                 f"({numbers['correct']} of {numbers['records']} records)", fontsize=13, fontweight="bold")
    top, bottom = fig.subfigures(2, 1, height_ratios=[6, 1.45 * rows])
    ax_cm, ax_pr = top.subplots(1, 2, width_ratios=[1.25, 1])

    # Errors in red, scaled to the largest error, so the confusions stand out.
    errors = np.where(np.eye(classes, dtype=bool), 0, confusion)
    ax_cm.imshow(errors, cmap="Reds", vmin=0, vmax=max(1, errors.max()) * 1.25)
    for t in range(classes):
        ax_cm.add_patch(Rectangle((t - 0.5, t - 0.5), 1, 1, color="#d8efd8", zorder=0.5))  # the diagonal in green
        for p in range(classes):
            count = confusion[t, p]
            ax_cm.text(p, t, str(count), ha="center", va="center", fontsize=9,
                       fontweight="bold" if t == p else "normal", color="#b0b0b0" if count == 0 else "black")
    ax_cm.set(xticks=range(classes), yticks=range(classes), xlabel="predicted digit", ylabel="true digit",
              title="confusion matrix (counts)")
    ax_cm.tick_params(length=0)

    digits = np.arange(classes)
    precision = [d["precision"] or 0.0 for d in numbers["per_digit"]]
    recall = [d["recall"] or 0.0 for d in numbers["per_digit"]]
    ax_pr.barh(digits - 0.2, precision, height=0.4, color="#4c72b0", label="precision")
    ax_pr.barh(digits + 0.2, recall, height=0.4, color="#dd8452", label="recall")
    for d in numbers["per_digit"]:
        for offset, key in ((-0.2, "precision"), (0.2, "recall")):
            value = d[key]
            ax_pr.text(1.005, d["digit"] + offset, "n/a" if value is None else f"{value:.3f}", va="center", fontsize=8)
    low = min([v for v in precision + recall if v > 0] + [1.0])
    start = max(0.0, np.floor((low - 0.05) * 20) / 20)
    ax_pr.set(xlim=(start, 1.08), ylim=(classes - 0.5, -0.5), yticks=digits, ylabel="digit",
              xticks=np.arange(start, 1.0001, 0.05 if start >= 0.6 else 0.1), title="precision / recall per digit")
    ax_pr.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2, fontsize=9, frameon=False)

    bottom.suptitle("misclassified test digits the network was surest about (record #, true → predicted, confidence)",
                    fontsize=11)
    axes = bottom.subplots(rows, columns, squeeze=False)
    for ax in axes.flat:
        ax.set_axis_off()
    for ax, w in zip(axes.flat, worst):
        ax.imshow(pixels[w["index"]].reshape(28, 28), cmap="gray_r", vmin=0, vmax=255)
        ax.set_title(f"#{w['index']}: {w['true']} → {w['predicted']}\n{w['confidence']:.0%}", fontsize=9)
    return fig


def report_path(path):
    """--report's file: PATH itself when it ends in .png, else PATH/report.png."""
    return path if path.lower().endswith(".png") else os.path.join(path, REPORT_FILE)


def write_atomically(path, write):
    """Call write(tmp_path), then rename tmp_path to path: no half-written report.

    Raises DataError naming path when the folder cannot be made or written.
    """
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
        os.close(fd)
        write(tmp)
        mnist_idx.public_mode(tmp)
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None and os.path.exists(tmp):
            os.remove(tmp)
        raise DataError(f"{path}: cannot write report ({e.strerror or e})") from None


def write_report(numbers, pixels, png=None, json_path=None):
    """Write the report picture (png) and/or its numbers (json_path); returns the paths written."""
    written = []
    if png is not None:
        fig = draw_report(numbers, pixels)
        write_atomically(png, lambda tmp: fig.savefig(tmp, format="png", dpi=80))
        written.append(png)
    if json_path is not None:
        def dump(tmp):
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(numbers, f, indent=1)
                f.write("\n")
        write_atomically(json_path, dump)
        written.append(json_path)
    return written


# ---------------------------------------------------------------- TensorBoard

def open_eval_writer(model_dir, log=print):
    """A FileWriter for <model_dir>/eval, or None (after a warning) when it cannot be made."""
    try:
        return tf.summary.FileWriter(os.path.join(model_dir, EVAL_LOG_DIR))
    except (tf.errors.OpError, OSError) as e:
        print(f"warning: {model_dir}: no TensorBoard summaries ({getattr(e, 'message', e)})", file=sys.stderr)
        return None


def test(model_dir=mnist_backward.MODEL_SAVE_PATH, data_dir=mnist_generateds.data_path,
         interval=TEST_INTERVAL_SECS, once=False, log=print, report=None, report_json=None, net=mnist_forward):
    """Evaluate the newest checkpoint now, then every `interval` seconds (unless once).

    A checkpoint already scored is not scored again while its files stay
    as they were (mnist_checkpoint.signature). Each score is written
    to TensorBoard as `accuracy` at its global_step in <model_dir>/eval.
    report / report_json: paths (see report_path) rewritten for every scored
    checkpoint. net: the network's forward module (see evaluate). The
    newest checkpoint is found from the files in model_dir
    (mnist_checkpoint.latest); one deleted by the trainer's rotation while
    it is read is skipped for the newer one. A damaged checkpoint is an
    error with `once`; otherwise it is reported once on stderr and the
    watch goes on. Returns the last (global_step, accuracy, count). Raises
    DataError when `once` and there is no checkpoint, or on bad input.
    """
    if not os.path.isdir(data_dir):  # a mistyped --data-dir, or no ./data yet: said as the trainer says it
        raise mnist_generateds.no_data(data_dir)
    test_path = os.path.join(data_dir, mnist_generateds.tfRecord_test)
    mnist_generateds.check_tfrecord(test_path)
    details = report is not None or report_json is not None
    last_seen, result, writer = None, None, None
    while True:
        ckpt = mnist_checkpoint.latest(model_dir)
        seen = ckpt and (ckpt, mnist_checkpoint.signature(ckpt))
        if ckpt is None:
            if once:
                raise DataError(f"{model_dir}: no checkpoint found; train first with `python {net.TRAIN_SCRIPT}`")
            log("No checkpoint file found")
        elif seen != last_seen:
            try:
                result = evaluate(ckpt, test_path, details=details, net=net)
            except mnist_checkpoint.CheckpointGone:
                continue  # the trainer's rotation deleted it while we read it; take the newer one
            except mnist_checkpoint.CheckpointDamaged as e:
                message = f"{e}; {mnist_checkpoint.damaged_hint(model_dir, ckpt)}"
                if once:
                    raise DataError(message) from None
                print(f"error: {message}; waiting for the next checkpoint", file=sys.stderr)
                last_seen = seen  # said once; the next checkpoint, or this one written again, is scored
                time.sleep(interval)
                continue
            except tf.errors.OpError as e:
                raise DataError(f"{ckpt}: cannot evaluate checkpoint ({first_line(e)})") from None
            last_seen = seen
            log("After %d training steps, test accuracy = %g" % (result[0], result[1]))
            writer = writer or open_eval_writer(model_dir)
            if writer is not None:
                writer.add_summary(mnist_backward.scalar_summary("accuracy", result[1]), result[0])
                writer.flush()
            if details:
                numbers = report_numbers(result[0], result[3]["labels"], result[3]["probabilities"])
                written = write_report(numbers, result[3]["pixels"], report and report_path(report), report_json)
                log("report: " + ", ".join(written))
                result = result[:3]
        if once:
            if writer is not None:
                writer.close()
            return result
        time.sleep(interval)


def build_parser(net=mnist_forward, model_dir=mnist_backward.MODEL_SAVE_PATH, doc=__doc__):
    """The command line's argparse parser; building it imports no TensorFlow (fast --help and flag errors).

    Also mnist_lenet5_test.py's: net (the network's forward module),
    model_dir (--model-dir's default) and doc (the script's docstring,
    for --help) are its.
    """
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0], allow_abbrev=False,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.set_defaults(net=net)
    parser.add_argument("--model-dir", default=model_dir, help="checkpoint folder to evaluate")
    parser.add_argument("--data-dir", default=mnist_generateds.data_path, help="folder holding mnist_test.tfrecords")
    parser.add_argument("--interval", type=float, default=TEST_INTERVAL_SECS, help="seconds between checks for a new checkpoint")
    parser.add_argument("--once", action="store_true", help="evaluate the latest checkpoint once and exit")
    parser.add_argument("--report", metavar="PATH",
                        help=f"write the evaluation report picture: PATH.png, or {REPORT_FILE} in folder PATH")
    parser.add_argument("--report-json", metavar="PATH", help="write the report's numbers as JSON to PATH")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    return parser


def main(argv=None, **network):
    """The command line of mnist_test.py; with `network` (build_parser's keywords), of mnist_lenet5_test.py."""
    parser = build_parser(**network)
    args = parser.parse_args(argv)
    # Ctrl-C or `kill -INT` stops the watch even when a shell started it in the
    # background (`&`), which hands SIGINT down as ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        test(args.model_dir, args.data_dir, args.interval, args.once,
             report=args.report, report_json=args.report_json, net=args.net)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGINT, previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())

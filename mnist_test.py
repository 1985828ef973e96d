"""Course step 3: evaluate the latest checkpoint on data/mnist_test.tfrecords.

Run beside (or after) mnist_backward.py. Every --interval seconds it restores
the newest checkpoint in the model folder into the network with the moving
average (shadow) values of the weights, scores every test record exactly
once through queue runners started and joined around the fetches, and prints
`After N training steps, test accuracy = X`. The course scored one
shuffle_batch draw of 10,000 examples instead, which repeats some records
and misses others, so its accuracy changed from run to run.
"""
import argparse
import os
import sys
import time

from tf_compat import tf
import mnist_backward
import mnist_forward
import mnist_generateds
from mnist_idx import DataError

TEST_INTERVAL_SECS = 5
EVAL_BATCH_SIZE = 1000  # records per fetch; any size scores the same


def evaluate(ckpt_path, tfRecord_path, batch_size=EVAL_BATCH_SIZE):
    """Score one checkpoint on every record of a TFRecord file, exactly once.

    Builds a fresh graph, restores the moving-average (shadow) weights of
    ckpt_path, and runs the batches of mnist_generateds.get_tfrecord_once
    until the queue is exhausted. Returns (global_step, accuracy, count):
    global_step int from the checkpoint, accuracy float in [0, 1], count the
    number of records scored. Raises DataError when the checkpoint does not
    fit this network or a reader thread fails.
    """
    with tf.Graph().as_default():
        img_batch, label_batch = mnist_generateds.get_tfrecord_once(batch_size, tfRecord_path)
        y = mnist_forward.forward(img_batch, None)
        correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(label_batch, 1)), tf.int64))
        seen = tf.shape(img_batch, out_type=tf.int64)[0]
        global_step = tf.train.get_or_create_global_step()
        ema = tf.train.ExponentialMovingAverage(mnist_backward.MOVING_AVERAGE_DECAY)
        restore_vars = ema.variables_to_restore()
        try:
            mnist_forward.check_checkpoint(ckpt_path, restore_vars)
        except ValueError as e:
            raise DataError(str(e)) from None
        saver = tf.train.Saver(restore_vars)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            saver.restore(sess, ckpt_path)
            step = int(sess.run(global_step))
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            total_correct = total = 0
            try:
                while True:
                    c, n = sess.run([correct, seen])
                    total_correct += int(c)
                    total += int(n)
            except tf.errors.OutOfRangeError:
                pass  # one epoch done: every record has been scored
            finally:
                coord.request_stop()
                try:
                    coord.join(threads, stop_grace_period_secs=5)
                except tf.errors.OpError as e:
                    raise DataError(f"{tfRecord_path}: input pipeline failed: {e.message.splitlines()[0]}") from None
    if total == 0:
        raise DataError(f"{tfRecord_path}: TFRecord file holds no records")
    return step, total_correct / total, total


def test(model_dir=mnist_backward.MODEL_SAVE_PATH, data_dir=mnist_generateds.data_path,
         interval=TEST_INTERVAL_SECS, once=False, log=print):
    """Evaluate the newest checkpoint now, then every `interval` seconds (unless once).

    A checkpoint already scored is not scored again. Returns the last
    (global_step, accuracy, count). Raises DataError when `once` and there
    is no checkpoint, or on bad input.
    """
    test_path = os.path.join(data_dir, mnist_generateds.tfRecord_test)
    mnist_generateds.check_tfrecord(test_path)
    last_ckpt, result = None, None
    while True:
        ckpt = tf.train.latest_checkpoint(model_dir)
        if ckpt is None:
            if once:
                raise DataError(f"{model_dir}: no checkpoint found; train first with `python mnist_backward.py`")
            log("No checkpoint file found")
        elif ckpt != last_ckpt:
            try:
                result = evaluate(ckpt, test_path)
            except (DataError, tf.errors.OpError) as e:
                if tf.train.latest_checkpoint(model_dir) != ckpt:
                    continue  # the trainer deleted it (max_to_keep) while we read it; take the newer one
                if isinstance(e, DataError):
                    raise
                raise DataError(f"{ckpt}: cannot evaluate checkpoint ({e.message.splitlines()[0]})") from None
            last_ckpt = ckpt
            log("After %d training steps, test accuracy = %g" % (result[0], result[1]))
        if once:
            return result
        time.sleep(interval)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model-dir", default=mnist_backward.MODEL_SAVE_PATH, help="checkpoint folder to evaluate")
    parser.add_argument("--data-dir", default=mnist_generateds.data_path, help="folder holding mnist_test.tfrecords")
    parser.add_argument("--interval", type=float, default=TEST_INTERVAL_SECS, help="seconds between checks for a new checkpoint")
    parser.add_argument("--once", action="store_true", help="evaluate the latest checkpoint once and exit")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    args = parser.parse_args(argv)
    try:
        test(args.model_dir, args.data_dir, args.interval, args.once)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The course's own code, kept as the baseline the benchmark compares against.

Copied in substance from the PKU course's mnist_generateds.py and
mnist_backward.py (TFRecord version), changed only where TensorFlow 2.x
removed an API: `tf.python_io` is `tf.io`, the network comes from this
project's mnist_forward.py (the same 784-500-10 graph; the course's
`tf.contrib.layers.l2_regularizer` no longer exists), and the paths are
arguments instead of module constants. One thing is left out on purpose:
the course printed a line for every image it wrote, which would only make
the baseline slower than the loop itself.

Nothing here validates its input; it is for measuring, not for use.
"""
import os
import sys

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tf_compat import tf  # noqa: E402
import mnist_forward  # noqa: E402

BATCH_SIZE = 200
LEARNING_RATE_BASE = 0.1
LEARNING_RATE_DECAY = 0.99
REGULARIZER = 0.0001
MOVING_AVERAGE_DECAY = 0.99
MODEL_NAME = "mnist_model"


def write_tfRecord(tfRecordName, image_path, label_path):
    """The course's generation loop: one image at a time, open, tobytes, Example, write."""
    writer = tf.io.TFRecordWriter(tfRecordName)
    num_pic = 0
    f = open(label_path, "r", encoding="utf-8")
    contents = f.readlines()
    f.close()
    for content in contents:
        value = content.split()
        img_path = image_path + value[0]
        img = Image.open(img_path)
        img_raw = img.tobytes()
        labels = [0] * 10
        labels[int(value[1])] = 1

        example = tf.train.Example(features=tf.train.Features(feature={
            "img_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[img_raw])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=labels)),
        }))
        writer.write(example.SerializeToString())
        num_pic += 1
    writer.close()
    return num_pic


def read_tfRecord(tfRecord_path):
    """The course's reader: one record per run, parsed and converted to float before batching."""
    filename_queue = tf.train.string_input_producer([tfRecord_path], shuffle=True)
    reader = tf.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.parse_single_example(serialized_example, features={
        "label": tf.FixedLenFeature([10], tf.int64),
        "img_raw": tf.FixedLenFeature([], tf.string),
    })
    img = tf.decode_raw(features["img_raw"], tf.uint8)
    img.set_shape([784])
    img = tf.cast(img, tf.float32) * (1. / 255)
    label = tf.cast(features["label"], tf.float32)
    return img, label


def get_tfrecord(num, tfRecord_path):
    """The course's batches: shuffle_batch, 2 threads, capacity 1000, min_after_dequeue 700."""
    img, label = read_tfRecord(tfRecord_path)
    img_batch, label_batch = tf.train.shuffle_batch([img, label],
                                                    batch_size=num,
                                                    num_threads=2,
                                                    capacity=1000,
                                                    min_after_dequeue=700)
    return img_batch, label_batch


def backward(steps, tfRecord_path, train_num_examples, model_save_path, log=print, every=1000):
    """The course's training loop: fetch a batch to NumPy, then feed it back with feed_dict.

    `log` receives the course's line every `every` (course: 1000) steps, and
    a checkpoint is saved at the same steps; the benchmark times the loop by
    these lines.
    """
    x = tf.placeholder(tf.float32, [None, mnist_forward.INPUT_NODE])
    y_ = tf.placeholder(tf.float32, [None, mnist_forward.OUTPUT_NODE])
    y = mnist_forward.forward(x, REGULARIZER)
    global_step = tf.Variable(0, trainable=False)

    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(logits=y, labels=tf.argmax(y_, 1))
    cem = tf.reduce_mean(ce)
    loss = cem + tf.add_n(tf.get_collection("losses"))

    learning_rate = tf.train.exponential_decay(
        LEARNING_RATE_BASE,
        global_step,
        train_num_examples / BATCH_SIZE,
        LEARNING_RATE_DECAY,
        staircase=True)

    train_step = tf.train.GradientDescentOptimizer(learning_rate).minimize(loss, global_step=global_step)

    ema = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
    ema_op = ema.apply(tf.trainable_variables())
    with tf.control_dependencies([train_step, ema_op]):
        train_op = tf.no_op(name="train")

    saver = tf.train.Saver()
    img_batch, label_batch = get_tfrecord(BATCH_SIZE, tfRecord_path)

    with tf.Session() as sess:
        init_op = tf.global_variables_initializer()
        sess.run(init_op)

        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)

        for i in range(steps):
            xs, ys = sess.run([img_batch, label_batch])
            _, loss_value, step = sess.run([train_op, loss, global_step], feed_dict={x: xs, y_: ys})
            if i % every == 0:
                log("After %d training steps, loss on training batch is %g." % (step, loss_value))
                saver.save(sess, os.path.join(model_save_path, MODEL_NAME), global_step=global_step)

        coord.request_stop()
        coord.join(threads)


if __name__ == "__main__":  # a module: --help says what runs it; anything else is refused in one line
    said = "usage: course_baseline.py is a module, not a script to run: `python bench/bench.py` measures it"
    print(said, file=sys.stdout if sys.argv[1:] in (["--help"], ["-h"]) else sys.stderr)
    sys.exit(0 if sys.argv[1:] in (["--help"], ["-h"]) else 2)

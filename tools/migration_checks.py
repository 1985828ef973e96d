"""Run every claim of docs/migrating.md's fixes and answers, and print what TensorFlow does here.

    python tools/migration_checks.py            # all checks, one to two minutes on 2 cores
    python tools/migration_checks.py --only dynamic_pad --only saveable_iterator

Each check builds small TFRecord files of its own in a temporary folder, runs the TF1 way (queue
runners, Saver, in a tf.compat.v1 graph and session) and the tf.data or TF2 way side by side, and
prints one or a few lines; the guide quotes them. Needs TensorFlow 2 only; nothing of this project is
imported. The shuffle figures vary a little from run to run; the others do not.
"""
import argparse
import os
import resource
import sys
import tempfile
import time

import numpy as np

tf = v1 = ID_SPEC = None  # TensorFlow, its compat.v1 and the records' spec: load_tensorflow(), after the command line


def load_tensorflow():
    """Import TensorFlow (seconds, and its log lines) once the command line is read: --help and a mistyped
    --only answer at once without it."""
    global tf, v1, ID_SPEC
    import tensorflow
    tf, v1 = tensorflow, tensorflow.compat.v1
    ID_SPEC = {"id": tf.io.FixedLenFeature([], tf.int64)}


def write_ids(path, ids, label=None, pad=0):
    """A TFRecord file of Examples holding `id` (and `label`, and `pad` zero bytes) for each id."""
    with tf.io.TFRecordWriter(path) as writer:
        for i in ids:
            feature = {"id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}
            if label is not None:
                feature["label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
            if pad:
                feature["pad"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes(pad)]))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return path


def run_queue(build, batches):
    """Run a queue-runner graph (build() -> batch tensor) for `batches` fetches; the fetched arrays."""
    with tf.Graph().as_default():
        batch = build()
        with v1.Session() as sess:
            sess.run(v1.local_variables_initializer())
            coord = v1.train.Coordinator()
            threads = v1.train.start_queue_runners(sess, coord)
            out = []
            try:
                for _ in range(batches):
                    out.append(sess.run(batch))
            except tf.errors.OutOfRangeError:
                pass
            coord.request_stop()
            coord.join(threads)
    return out


def names():
    for name in ("parse_example", "decode_raw", "data.make_one_shot_iterator", "set_random_seed",
                 "io.parse_example", "io.decode_raw", "compat.v1.data.make_one_shot_iterator", "random.set_seed",
                 "compat.v1.parse_example", "compat.v1.set_random_seed"):
        found = tf
        for part in name.split("."):
            found = getattr(found, part, None)
        print(f"names: tf.{name} {'exists' if found is not None else 'does not exist'} in TensorFlow {tf.__version__}")


def drop_remainder(count=12685, batch=100):
    path = write_ids("drop.tfrecords", range(count))
    for allow in (True, False):  # the queue's final batch with num_epochs=1
        got = run_queue(lambda: v1.train.batch(
            [v1.parse_single_example(v1.TFRecordReader().read(v1.train.string_input_producer(
                [path], num_epochs=1, shuffle=False))[1], ID_SPEC)["id"]], batch, allow_smaller_final_batch=allow),
            10 ** 6)
        print(f"drop_remainder: tf.train.batch(allow_smaller_final_batch={allow}) hands out "
              f"{sum(len(b) for b in got)} of {count}")
    for drop in (False, True):
        got = sum(len(b) for b in tf.data.TFRecordDataset(path).batch(batch, drop_remainder=drop))
        print(f"drop_remainder: .batch({batch}, drop_remainder={drop}) hands out {got} of {count}")


def displacement(index, count):
    """Mean distance of each example from its place in the files, in the nearest pass (the guide's measure)."""
    order = np.arange(len(index))
    return np.abs(index + count * np.rint((order - index) / count) - order).mean()


def shuffle(batch=200, epochs=5):
    def queue(paths):
        def build():
            _, serialized = v1.TFRecordReader().read(v1.train.string_input_producer(paths, shuffle=True))
            return v1.train.shuffle_batch([v1.parse_single_example(serialized, ID_SPEC)["id"]], batch,
                                          capacity=1000, min_after_dequeue=700, num_threads=2)
        return build

    def buffer(paths):
        files = tf.data.Dataset.from_tensor_slices(paths).shuffle(len(paths))
        records = files.flat_map(tf.data.TFRecordDataset).shuffle(1000).repeat()
        return records.batch(batch, drop_remainder=True).map(lambda s: tf.io.parse_example(s, ID_SPEC)["id"])

    for count, files in ((2000, 1), (4000, 1), (12685, 1), (40000, 1), (12685, 5), (12685, 13)):
        per = -(-count // files)
        paths = [write_ids(f"shuffle{count}-{f}.tfrecords", range(f * per, min(count, (f + 1) * per)), pad=784)
                 for f in range(files)]
        steps = epochs * count // batch
        q = displacement(np.concatenate(run_queue(queue(paths), steps)), count)
        d = displacement(np.concatenate([b.numpy() for b in buffer(paths).take(steps)]), count)
        print(f"shuffle: {count} records in {files} file(s), data/buffer {count / 1000:.1f}: queue (capacity 1000, "
              f"min_after_dequeue 700) {q:.0f}, tf.data buffer 1000 {d:.0f} (random permutation {count / 3:.0f})")


def resident_mb():
    """This process's resident memory now, in MB (Linux's /proc; elsewhere the peak so far)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 if sys.platform == "darwin" else 1024) / 1024


def buffer_memory(buffer=1000):
    for name, size in (("float32 224x224x3 images", 224 * 224 * 3), ("float32 MNIST digits", 784)):
        before = resident_mb()
        images = tf.data.Dataset.range(3 * buffer).map(lambda i: tf.fill([size], tf.cast(i, tf.float32)))
        iterator = iter(images.shuffle(buffer))
        next(iterator)  # the buffer is filled before the first element comes out
        print(f"buffer_memory: shuffle({buffer}) of {name} ({size * 4:,} bytes each): "
              f"resident memory +{resident_mb() - before:.0f} MB while it runs")
        del iterator


def dynamic_pad():
    path = "var.tfrecords"
    with tf.io.TFRecordWriter(path) as writer:
        for k, n in enumerate([3, 1, 5, 2, 4, 6, 1]):
            writer.write(tf.train.Example(features=tf.train.Features(feature={"tokens": tf.train.Feature(
                int64_list=tf.train.Int64List(value=range(100 + k, 100 + k + n)))})).SerializeToString())
    spec = {"tokens": tf.io.VarLenFeature(tf.int64)}
    queue = run_queue(lambda: v1.train.batch([tf.sparse.to_dense(v1.parse_single_example(v1.TFRecordReader().read(
        v1.train.string_input_producer([path], num_epochs=1, shuffle=False))[1], spec)["tokens"])], 3,
        dynamic_pad=True, allow_smaller_final_batch=True), 100)
    data = [b.numpy() for b in tf.data.TFRecordDataset(path).map(
        lambda s: tf.sparse.to_dense(tf.io.parse_single_example(s, spec)["tokens"])).padded_batch(3, padded_shapes=[None])]
    same = len(queue) == len(data) and all(np.array_equal(a, b) for a, b in zip(queue, data))
    print(f"dynamic_pad: tf.train.batch(dynamic_pad=True) and padded_batch give the same batches: {same}; "
          f"shapes {[list(b.shape) for b in data]}")


def join(files=3, per=1000, batch=30):
    paths = [write_ids(f"part{k}.tfrecords", range(k * per, (k + 1) * per)) for k in range(files)]

    def files_per_batch(batches):
        return np.mean([len(set((np.asarray(b) // per).tolist())) for b in batches])
    queue = run_queue(lambda: v1.train.batch_join(
        [[v1.parse_single_example(v1.TFRecordReader().read(q)[1], ID_SPEC)["id"]]
         for q in [v1.train.string_input_producer(paths, shuffle=False)] for _ in range(files)], batch), 50)
    parse = lambda s: tf.io.parse_example(s, ID_SPEC)["id"]
    names = tf.data.Dataset.from_tensor_slices(paths)
    in_turn = names.interleave(tf.data.TFRecordDataset, cycle_length=files, num_parallel_calls=tf.data.AUTOTUNE)
    print(f"join: files in a batch of {batch}: batch_join with {files} readers {files_per_batch(queue):.2f}, "
          f"files one after another {files_per_batch(names.flat_map(tf.data.TFRecordDataset).batch(batch).map(parse).take(50)):.2f}, "
          f"interleave(cycle_length={files}) {files_per_batch(in_turn.batch(batch).map(parse).take(50)):.2f}")


def one_class_per_file(classes=10, per=2000, batch=100):
    paths = [write_ids(f"class{c}.tfrecords", range(c * per, (c + 1) * per), label=c) for c in range(classes)]
    spec = dict(ID_SPEC, label=tf.io.FixedLenFeature([], tf.int64))
    names = tf.data.Dataset.from_tensor_slices(paths).shuffle(classes)
    ways = {"one after another": names.flat_map(tf.data.TFRecordDataset),
            f"interleave(cycle_length={classes})": names.interleave(tf.data.TFRecordDataset, cycle_length=classes)}
    for name, records in ways.items():
        batches = records.shuffle(1000).batch(batch, drop_remainder=True).map(lambda s: tf.io.parse_example(s, spec))
        share = np.mean([np.bincount(b["label"].numpy()).max() / batch for b in batches])
        print(f"one_class_per_file: {classes} files of {per} records, files {name}, buffer 1000: "
              f"the most common class fills {share:.2f} of a batch on average")
    chance = np.mean([np.bincount(np.random.default_rng(k).integers(0, classes, batch)).max() / batch for k in range(500)])
    print(f"one_class_per_file: batches drawn at random: {chance:.2f}")


def map_threads(elements=40, wait=0.05):
    def slow(x):  # waits `wait` s per element, releasing the GIL: what a decode or a disk read does
        return tf.py_function(lambda v: (time.sleep(wait), v)[1], [x], tf.int64)
    for calls in (None, 4, tf.data.AUTOTUNE):
        start = time.perf_counter()
        out = [int(v) for v in tf.data.Dataset.range(elements).map(slow, num_parallel_calls=calls)]
        print(f"map_threads: num_parallel_calls={calls}: {time.perf_counter() - start:.2f} s for {elements} elements "
              f"of {wait * 1000:.0f} ms each, order kept: {out == list(range(elements))} ({os.cpu_count()} CPUs)")


def saveable_iterator():
    def graph(in_collection):
        w = v1.get_variable("w", [2], initializer=v1.zeros_initializer())
        iterator = v1.data.make_initializable_iterator(tf.data.Dataset.range(100).batch(10))
        saveable = tf.data.experimental.make_saveable_from_iterator(iterator)
        if in_collection:
            v1.add_to_collection(v1.GraphKeys.SAVEABLE_OBJECTS, saveable)
        return w, iterator, saveable
    with tf.Graph().as_default():  # a checkpoint of an earlier run, without the iterator
        w, iterator, _ = graph(False)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(w.assign([1.0, 2.0]))
            old = v1.train.Saver().save(sess, "old")
    with tf.Graph().as_default():
        w, iterator, _ = graph(True)
        with v1.Session() as sess:
            try:
                v1.train.Saver().restore(sess, old)
                print("saveable_iterator: in SAVEABLE_OBJECTS, the older checkpoint restores")
            except tf.errors.NotFoundError as e:
                print(f"saveable_iterator: in SAVEABLE_OBJECTS, the older checkpoint fails: {type(e).__name__} "
                      f"({str(e).splitlines()[0][:60]}...)")
    with tf.Graph().as_default():
        w, iterator, saveable = graph(False)
        next_batch = iterator.get_next()
        model_saver, iterator_saver = v1.train.Saver(), v1.train.Saver([saveable])
        with v1.Session() as sess:
            sess.run(iterator.initializer)
            model_saver.restore(sess, old)
            seen = [int(sess.run(next_batch)[0]) for _ in range(3)]
            model_saver.save(sess, "model")
            iterator_saver.save(sess, "iterator")
            expected = int(sess.run(next_batch)[0])
        with v1.Session() as sess:
            sess.run(iterator.initializer)
            model_saver.restore(sess, "model")
            iterator_saver.restore(sess, "iterator")
            print(f"saveable_iterator: a separate Saver: older checkpoint restored (w = {sess.run(w).tolist()}); "
                  f"batches started {seen}, resumed at {int(sess.run(next_batch)[0])} (expected {expected}); "
                  f"model checkpoint keys {[n for n, _ in tf.train.list_variables('model')]}")


def checkpoint_iterator():
    dataset = tf.data.Dataset.range(100).shuffle(100, seed=1).batch(10)
    iterator = iter(dataset)
    next(iterator)
    path = tf.train.Checkpoint(iterator=iterator).write("eager_iterator")
    expected = next(iterator).numpy()
    again = iter(dataset)
    tf.train.Checkpoint(iterator=again).read(path).assert_consumed()
    print(f"checkpoint_iterator: tf.train.Checkpoint(iterator=...) resumes at the saved batch: "
          f"{np.array_equal(next(again).numpy(), expected)}")
    with tf.Graph().as_default():  # a Saver checkpoint with an optimizer's slot
        w = v1.get_variable("w", initializer=[1.0, 2.0])
        step = v1.train.MomentumOptimizer(0.1, 0.9).minimize(tf.reduce_sum(w * w))
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(step)
            sess.run(step)
            trained = sess.run(w).tolist()
            saved = v1.train.Saver().save(sess, "momentum")
    v1.logging.set_verbosity(v1.logging.ERROR)  # the name-based restore's deprecation notice
    w = tf.Variable([0.0, 0.0], name="w")
    status = tf.train.Checkpoint(w=w).restore(saved)
    print(f"checkpoint_iterator: Checkpoint.restore of a Saver checkpoint ({type(status).__name__}): w = "
          f"{w.numpy().tolist()} (saved {trained}); its keys {[n for n, _ in tf.train.list_variables(saved)]}")


CHECKS = {f.__name__: f for f in (names, drop_remainder, shuffle, buffer_memory, dynamic_pad, join,
                                  one_class_per_file, map_threads, saveable_iterator, checkpoint_iterator)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=CHECKS, help="run this check (repeat for more)")
    parser.error = lambda message: parser.exit(2, f"{parser.prog}: error: {message}\n")  # one line, no usage block
    args = parser.parse_args(argv)
    load_tensorflow()
    os.chdir(tempfile.mkdtemp(prefix="migration_checks-"))
    for name in args.only or CHECKS:
        CHECKS[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""TensorFlow's wording and private fields that our behaviour depends on (tf_compat's last section).

Each pattern is checked against what this TensorFlow really does, so that a
version that words a message otherwise fails here (run on the floor
TensorFlow too: requirements-floor.txt), not in a user's run.
"""
import contextlib
import errno
import os
import sys

import numpy as np
import pytest

import tf_compat
from tf_compat import tf


def saved_checkpoint(tmp_path):
    """A checkpoint of one float32 [4096] variable; returns (prefix, its one .data file)."""
    with tf.Graph().as_default():
        tf.Variable(np.arange(4096, dtype=np.float32), name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = saver.save(sess, str(tmp_path / "m"), write_meta_graph=False)
    return prefix, prefix + ".data-00000-of-00001"


def read_error(prefix):
    try:
        tf.train.load_checkpoint(prefix).get_tensor("v")
    except (tf.errors.OpError, ValueError, IndexError) as e:
        return e
    raise AssertionError("the tensor was read")


def test_a_tensor_past_the_end_of_its_data_file_and_a_failed_checksum_are_told_apart(tmp_path):
    prefix, data = saved_checkpoint(tmp_path)
    good = open(data, "rb").read()
    with open(data, "r+b") as f:
        f.seek(100)
        f.write(bytes(b ^ 0xFF for b in good[100:164]))
    assert tf_compat.tensor_read_problem(read_error(prefix)) == "checksum"
    with open(data, "wb") as f:
        f.write(good[:len(good) // 2])
    assert tf_compat.tensor_read_problem(read_error(prefix)) == "cut short"
    assert tf_compat.tensor_read_problem(ValueError("something else")) is None


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_recognised_in_tensorflow_s_error_and_in_an_oserror():
    with pytest.raises(tf.errors.OpError) as raised:
        with tf.io.gfile.GFile("/dev/full", "w") as f:
            f.write("x" * 100000)
    assert tf_compat.disk_full(raised.value)
    assert tf_compat.disk_full(OSError(errno.ENOSPC, "whatever the platform says"))
    assert not tf_compat.disk_full(OSError(errno.EACCES, "Permission denied"))


def test_a_tf_data_error_is_told_from_another_op_s():
    with tf.Graph().as_default():
        bad = tf.data.Dataset.from_tensor_slices([b"not a tf.train.Example"]).map(
            lambda s: tf.parse_single_example(s, {"label": tf.FixedLenFeature([1], tf.int64)}))
        from_data = tf.data.make_one_shot_iterator(bad).get_next()
        one = tf.placeholder(tf.int32, [])
        other = tf.debugging.assert_equal(one, 2)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.OpError) as raised:
                sess.run(from_data)
            assert tf_compat.from_iterator(raised.value)
            with pytest.raises(tf.errors.OpError) as raised:
                sess.run(other, feed_dict={one: 1})
            assert not tf_compat.from_iterator(raised.value)


def test_the_events_file_of_a_summary_writer_is_found(tmp_path):
    with tf.Graph().as_default():
        writer = tf.summary.FileWriter(str(tmp_path / "train"))
        path = tf_compat.events_file(writer)
        writer.close()
    assert path is not None and os.path.dirname(path) == str(tmp_path / "train") and os.path.exists(path)
    assert tf_compat.events_file(object()) is None  # a writer without the private field: nothing to check


def test_the_task_addresses_of_a_grpc_error():
    # gRPC's wording, as a worker of a cluster with other host lists reports it (the real case runs in
    # test_user_faults.py: "another task of this cluster reached for ...").
    message = ("failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:23456: "
               "Failed to connect to remote host: Connection refused")
    assert tf_compat.task_addresses(tf.errors.UnavailableError(None, None, message)) == ["127.0.0.1:23456"]
    assert tf_compat.task_addresses(ValueError("no address here")) == []


def test_a_file_another_process_holds_is_recognised_by_its_windows_wording():
    assert tf_compat.file_held(OSError("[WinError 32] The process cannot access the file because it is "
                                       "being used by another process"))
    assert tf_compat.file_held(tf.errors.PermissionDeniedError(None, None, "model/checkpoint; Access is denied"))
    assert not tf_compat.file_held(OSError("No such file or directory"))


@pytest.mark.skipif(sys.platform != "win32", reason="Windows' file sharing rules")
def test_a_file_held_open_is_refused_on_windows_in_the_words_file_held_knows(tmp_path):
    path = tmp_path / "held"
    with open(path, "w"):
        with pytest.raises(OSError) as raised:
            os.remove(path)
    assert tf_compat.file_held(raised.value)


def test_a_partitioned_variable_is_saved_under_its_whole_name_and_shape(tmp_path):
    with tf.Graph().as_default():
        parts = list(tf.get_variable("w", shape=[6, 3], partitioner=tf.fixed_size_partitioner(2)))
        plain = tf.Variable(tf.zeros([4]), name="b")
        assert [tf_compat.saved_as(v) for v in parts] == [("w", [6, 3])] * 2
        assert [v.op.name for v in parts] == ["w/part_0", "w/part_1"]
        assert tf_compat.saved_as(plain) == ("b", [4])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = tf.train.Saver().save(sess, str(tmp_path / "m"), write_meta_graph=False)
    assert tf.train.list_variables(prefix) == [("b", [4]), ("w", [6, 3])]  # what saved_as said


def test_a_cached_variable_is_read_afresh_at_each_step_of_a_loop_built_uncached():
    """A cluster's weights have a caching_device (mnistkit.distributed.place_variables): one read a session run,
    kept in the private _cached_value. Inside a tf.while_loop that read is the run's first value at every step;
    built under uncached() each step reads the value the step before left."""
    with tf.Graph().as_default():
        variable = tf.Variable(0.0, caching_device="/cpu:0")
        assert variable._cached_value is not None  # the private field uncached() sets aside

        def sum_of_three_steps(context):
            def body(i, total):
                with tf.control_dependencies([variable.assign_add(1.0)]):
                    return i + 1, total + tf.identity(variable)
            with context:
                return tf.while_loop(lambda i, total: i < 3, body, [tf.constant(0), tf.constant(0.0)],
                                     back_prop=False, parallel_iterations=1)[1]
        cached, fresh = sum_of_three_steps(contextlib.nullcontext()), sum_of_three_steps(tf_compat.uncached([variable]))
        assert variable._cached_value is not None  # put back after the block
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            # One read for the whole run, taken before or after the first step's add: every step sees it.
            assert sess.run(cached) in (0.0 * 3, 1.0 * 3)
            variable.load(0.0, sess)
            assert sess.run(fresh) == 1.0 + 2.0 + 3.0


"""tools/check_pipeline.py (docs/migrating.md): epochs and shuffle of a user's tf.data pipeline, by record ids.

One TF2 eager process (the script's own mode; the suite's runs graph mode) checks three small pipelines
on files of one class each: exact epochs, a dropped last batch, and batches of one class.
"""
import json
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, wait_limit

PIPELINES = textwrap.dedent('''
    import tensorflow as tf

    FEATURES = {"label": tf.io.FixedLenFeature([], tf.int64), "record_id": tf.io.FixedLenFeature([], tf.int64)}

    def parse(serialized):
        return tf.io.parse_example(serialized, FEATURES)

    def in_sequence(files):  # one file after another, a buffer smaller than a file: batches of one class
        return (tf.data.TFRecordDataset(files).shuffle(50).repeat().batch(20, drop_remainder=True).map(parse))

    def interleaved(files):  # one record of each file in turn
        records = tf.data.Dataset.from_tensor_slices(files).interleave(tf.data.TFRecordDataset, cycle_length=len(files))
        return records.shuffle(50).repeat().batch(20, drop_remainder=True).map(parse)

    def one_pass_dropping(files):  # 400 records in batches of 30: 13 full ones, 10 records never handed out
        return tf.data.TFRecordDataset(files).batch(30, drop_remainder=True).map(parse)

    def as_tuples(files):  # (features, record_id) elements, in file order
        return tf.data.TFRecordDataset(files).batch(40).map(parse).map(lambda f: (f, f["record_id"]))
''')

RUN = textwrap.dedent('''
    import contextlib, io, json, sys
    import tensorflow as tf
    sys.path.insert(0, sys.argv[1] + "/tools")
    import check_pipeline
    for digit in range(4):
        with tf.io.TFRecordWriter(f"class{digit}.tfrecords") as writer:
            for _ in range(100):
                writer.write(tf.train.Example(features=tf.train.Features(feature={"label": tf.train.Feature(
                    int64_list=tf.train.Int64List(value=[digit]))})).SerializeToString())
    files = [f"class{d}.tfrecords" for d in range(4)]
    found = {}
    for name in ("in_sequence", "interleaved", "one_pass_dropping", "as_tuples"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = check_pipeline.main(["--pipeline", "pipelines:" + name, "--label-key", "label", "--epochs", "2",
                                          "--json", *files])
        found[name] = [status, json.loads(out.getvalue())]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        found["missing"] = [check_pipeline.main(["--pipeline", "pipelines:in_sequence", "nothere.tfrecords"]),
                            err.getvalue()]
    print(json.dumps(found))
''')


@pytest.mark.long
def test_epochs_dropped_records_and_one_class_batches_are_found(tmp_path):
    (tmp_path / "pipelines.py").write_text(PIPELINES)
    result = subprocess.run([sys.executable, "-c", RUN, ROOT], cwd=tmp_path, capture_output=True, text=True,
                            timeout=wait_limit(300))
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.splitlines()[-1])
    for name in ("in_sequence", "interleaved"):
        status, got = found[name]
        assert status == 0 and got["records"] == 400 and got["epochs_read"] == 2 and not got["dataset_ended"]
        assert [e["seen_once"] for e in got["per_epoch"]] == [400, 400]  # shuffled before repeat: exact epochs
        assert 0 < got["mean_displacement"] < got["random_permutation_displacement"]
    # A buffer of 50 inside files of 100 records of one class: most batches hold one or two classes;
    # reading the four files in turn gives each batch of 20 about 5 of each.
    assert found["in_sequence"][1]["mean_majority_label_share"] > 0.6
    assert found["interleaved"][1]["mean_majority_label_share"] < 0.5
    status, got = found["one_pass_dropping"]
    assert got["dataset_ended"] and got["never_handed_out"] == 10 and got["per_epoch"][0]["missed"] == 10
    # In file order: 11 of the 13 batches hold one class, 2 straddle a file's end (20 and 10 records): 0.949.
    assert got["mean_displacement"] == 0 and got["mean_majority_label_share"] == round((11 + 2 * 20 / 30) / 13, 3)
    status, got = found["as_tuples"]
    assert status == 0 and got["never_handed_out"] == 0 and got["neighbours_in_a_batch"] == 0.975  # 39 of 40 per batch
    assert found["missing"] == [1, "error: nothere.tfrecords: no such file\n"]

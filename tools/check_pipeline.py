"""Check a tf.data input pipeline's epochs and shuffle on your own TFRecord files, by record ids.

    python tools/check_pipeline.py --pipeline my_input:make_dataset --epochs 3 data/train-*.tfrecords

Made for an engineer who has moved a TF1 queue-runner pipeline to tf.data (docs/migrating.md) and wants
to know, on their own data, what the guide measured on ours. Each tf.train.Example of the files (in the
order given, records in file order) gets one more int64 feature, `record_id` (its place, from 0), in
copies written to a temporary folder. Your function (module:function, the module importable from the
folder you are in) is called with the copies' paths, as a list of str, and returns your tf.data.Dataset
of batches; add `"record_id": tf.io.FixedLenFeature([], tf.int64)` to its parse spec, so that the id
reaches each batch as element["record_id"] (a dict element) or as the last item of a tuple. The script
reads --epochs epochs' worth of examples (or until the dataset ends) in TF2's eager mode and prints:
  - each epoch: records seen once, missed and repeated, counting each N examples as an epoch of N
    records; for a dataset that ends, the records it never handed out (a dropped last batch);
  - shuffle: the mean distance between a record's place in the files and its place in the stream,
    taken in the nearest pass (a full random permutation gives about N/3, none gives 0), the share of record pairs that are
    next to each other in the files and come out in one batch, and with --label-key, the mean share of
    a batch taken by its most common label (one class per file read in sequence shows here).
--json prints the same as one JSON object. Exit status 0; 1 with one line `error: ...` for bad input.
Needs TensorFlow 2 only; nothing of this project is imported.
"""
import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

RECORD_ID = "record_id"


def tagged_copies(paths, folder):
    """Copy each TFRecord file into folder with RECORD_ID added to each Example; returns (copies, record count)."""
    import tensorflow as tf
    copies, next_id = [], 0
    for index, path in enumerate(paths):
        copy = os.path.join(folder, f"{index:05d}-{os.path.basename(path)}")
        with tf.io.TFRecordWriter(copy) as writer:
            for serialized in tf.data.TFRecordDataset(path).as_numpy_iterator():
                example = tf.train.Example.FromString(serialized)
                if RECORD_ID in example.features.feature:
                    raise ValueError(f"{path}: its records already have a feature {RECORD_ID!r}")
                example.features.feature[RECORD_ID].int64_list.value.append(next_id)
                writer.write(example.SerializeToString())
                next_id += 1
        copies.append(copy)
    return copies, next_id


def batch_ids(element, label_key=None):
    """(ids int64 [batch], labels [batch] or None) of one element of the user's dataset."""
    if isinstance(element, dict):
        ids, labels = element[RECORD_ID], element.get(label_key) if label_key else None
    else:
        ids, labels = element[-1], element[0][label_key] if label_key and isinstance(element[0], dict) else None
    ids = np.asarray(ids).reshape(-1)
    if labels is not None:
        labels = np.asarray(labels)
        labels = labels.argmax(-1) if labels.ndim == 2 else labels.reshape(-1)  # one-hot or class ids
    return ids, labels


def check(dataset, count, epochs, label_key=None):
    """The figures printed, as a dict, from at most `epochs` * count examples of the dataset."""
    stream, batches, majority = [], [], []
    for element in dataset:
        ids, labels = batch_ids(element, label_key)
        stream.extend(ids.tolist())
        batches.append(ids)
        if labels is not None and len(labels):
            majority.append(np.unique(labels, return_counts=True)[1].max() / len(labels))
        if len(stream) >= epochs * count:
            break
    stream = np.array(stream[:epochs * count], np.int64)
    per_epoch = []
    for start in range(0, len(stream), count):
        epoch = stream[start:start + count]
        seen = np.bincount(epoch, minlength=count)
        per_epoch.append({"examples": int(len(epoch)), "seen_once": int((seen == 1).sum()),
                          "missed": int((seen == 0).sum()), "repeated": int((seen > 1).sum())})
    order = np.arange(len(stream))
    # docs/migrating.md's measure: how far each example lands from its place in the files, taken in the
    # nearest pass over them (so an example the shuffle carried across an epoch boundary is not counted N off).
    stream_position = stream + count * np.rint((order - stream) / count)
    ended = len(stream) < epochs * count
    pairs = sum(int(np.isin(b + 1, b).sum()) for b in batches)
    return {"records": count, "epochs_read": round(len(stream) / count, 3), "dataset_ended": ended,
            "never_handed_out": int(count - len(np.unique(stream))) if ended else None,
            "per_epoch": per_epoch, "mean_displacement": round(float(np.abs(stream_position - order).mean()), 1),
            "random_permutation_displacement": round((count * count - 1) / (3 * count), 1),
            "neighbours_in_a_batch": round(pairs / max(1, len(stream)), 5),
            "mean_majority_label_share": round(float(np.mean(majority)), 3) if majority else None}


def report(found):
    """The human-readable lines for check()'s dict."""
    lines = [f"{found['records']} records; read {found['epochs_read']} epochs"
             + (" (the dataset ended)" if found["dataset_ended"] else "")]
    if found["never_handed_out"]:
        lines.append(f"never handed out: {found['never_handed_out']} records (a dropped last batch?)")
    for number, epoch in enumerate(found["per_epoch"], 1):
        lines.append(f"epoch {number} ({epoch['examples']} examples): {epoch['seen_once']} records seen once, "
                     f"{epoch['missed']} missed, {epoch['repeated']} repeated")
    lines.append(f"mean displacement: {found['mean_displacement']} places "
                 f"(a random permutation of each epoch: {found['random_permutation_displacement']})")
    lines.append(f"neighbours in the files that share a batch: {found['neighbours_in_a_batch']} per example")
    if found["mean_majority_label_share"] is not None:
        lines.append(f"most common label's share of a batch: {found['mean_majority_label_share']} on average")
    return lines


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("files", nargs="+", help="your TFRecord files of tf.train.Example, in file order")
    parser.add_argument("--pipeline", required=True, metavar="MODULE:FUNCTION",
                        help="function(list of file paths) -> tf.data.Dataset of batches carrying record_id")
    parser.add_argument("--epochs", type=int, default=3, help="epochs' worth of examples to read")
    parser.add_argument("--label-key", help="the batch's label key, for the per-batch label mix")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    parser.error = lambda message: parser.exit(2, f"{parser.prog}: error: {message}\n")  # one line, no usage block
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    for path in args.files:
        if not os.path.isfile(path):
            print(f"error: {path}: no such file", file=sys.stderr)
            return 1
    module_name, _, function_name = args.pipeline.partition(":")
    sys.path.insert(0, os.getcwd())
    try:
        make_dataset = getattr(importlib.import_module(module_name), function_name or "make_dataset")
    except (ImportError, AttributeError) as e:
        print(f"error: --pipeline {args.pipeline}: {e}", file=sys.stderr)
        return 1
    folder = tempfile.mkdtemp(prefix="check_pipeline-")
    try:
        copies, count = tagged_copies(args.files, folder)
        if count == 0:
            print("error: the files hold no records", file=sys.stderr)
            return 1
        found = check(make_dataset(copies), count, args.epochs, args.label_key)
    except (ValueError, KeyError) as e:
        print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(found, indent=1, ensure_ascii=True) if args.json else "\n".join(report(found)))  # numbers
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Score the exports of mnist_export.py in plain TensorFlow 2 (eager, no tf.compat.v1, none of our code).

    python tests/exported_check.py EXPORT_DIR TEST_TFRECORDS

Run by tests/test_export.py in a fresh process, and by hand for docs/deploy.md's figures. For each
network exported in EXPORT_DIR (mnist, mnist_lenet5), on every record of TEST_TFRECORDS: the newest
SavedModel version's accuracy through tf.saved_model.load and its serving_default signature, and the two
.tflite files' through ai_edge_litert's Interpreter, with the largest difference between the float file's
probabilities and the SavedModel's; and the second signature, inside (forward()'s layers), called as a
client calls it: its outputs, and how far the softmax of its logits is from serving_default's
probabilities, in the SavedModel and in the float file's signature runner. Prints one JSON object:
{model name: {...}}.
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter


def test_records(path):
    """(images float32 [n, 784] in [0, 1], labels int64 [n]) of a TFRecord file of the course's schema."""
    features = {"img_raw": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([10], tf.int64)}
    images, labels = [], []
    for batch in tf.data.TFRecordDataset(path).batch(1000):
        parsed = tf.io.parse_example(batch, features)
        images.append(tf.cast(tf.io.decode_raw(parsed["img_raw"], tf.uint8), tf.float32).numpy() / 255)
        labels.append(tf.argmax(parsed["label"], 1).numpy())
    return np.concatenate(images), np.concatenate(labels)


def litert_probabilities(path, images):
    """A .tflite file's output for images, as float32 probabilities (an int8 file's dequantized)."""
    interpreter = Interpreter(model_path=path)
    given, wanted = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    interpreter.resize_tensor_input(given["index"], list(images.shape))
    interpreter.allocate_tensors()
    if given["dtype"] == np.int8:
        scale, zero_point = given["quantization"]
        images = np.clip(np.round(images / scale + zero_point), -128, 127).astype(np.int8)
    interpreter.set_tensor(given["index"], images)
    interpreter.invoke()
    out = interpreter.get_tensor(wanted["index"])
    if wanted["dtype"] == np.int8:
        scale, zero_point = wanted["quantization"]
        out = (out.astype(np.float32) - zero_point) * scale
    return out


def check(export_dir, name, images, labels):
    version = max((v for v in os.listdir(os.path.join(export_dir, name)) if v.isdecimal()), key=int)
    model = tf.saved_model.load(os.path.join(export_dir, name, version))
    serve = model.signatures["serving_default"]
    result = serve(images=tf.constant(images))
    probabilities, classes = result["probabilities"].numpy(), result["classes"].numpy()
    tflite = os.path.join(export_dir, name + ".tflite")
    int8 = os.path.join(export_dir, name + "_int8.tflite")
    float_probabilities = litert_probabilities(tflite, images)
    int8_probabilities = litert_probabilities(int8, images)
    inside = model.signatures["inside"]
    logits = inside(images=tf.constant(images[:200]))["y"]
    lite = Interpreter(model_path=tflite).get_signature_runner("inside")(images=images[:1])
    return {"version": int(version), "executing_eagerly": tf.executing_eagerly(),
            "inside": {k: [str(v.dtype.name), v.shape.as_list()] for k, v in inside.structured_outputs.items()},
            "inside_difference": float(np.abs(tf.nn.softmax(logits).numpy() - probabilities[:200]).max()),
            "tflite_inside": {k: list(v.shape) for k, v in lite.items()},
            "tflite_inside_difference": float(np.abs(tf.nn.softmax(lite["y"]).numpy() - probabilities[:1]).max()),
            "signature": {"inputs": {k: [str(v.dtype.name), v.shape.as_list()]
                                     for k, v in serve.structured_input_signature[1].items()},
                          "outputs": {k: [str(v.dtype.name), v.shape.as_list()]
                                      for k, v in serve.structured_outputs.items()}},
            "count": len(labels),
            "saved_model_accuracy": float(np.mean(classes == labels)),
            "classes_are_argmax": bool(np.array_equal(classes, probabilities.argmax(1))),
            "tflite_accuracy": float(np.mean(float_probabilities.argmax(1) == labels)),
            "tflite_max_difference": float(np.abs(float_probabilities - probabilities).max()),
            "int8_accuracy": float(np.mean(int8_probabilities.argmax(1) == labels)),
            "tflite_bytes": os.path.getsize(tflite), "int8_bytes": os.path.getsize(int8)}


def main(export_dir, test_path):
    images, labels = test_records(test_path)
    names = [n for n in ("mnist", "mnist_lenet5") if os.path.isdir(os.path.join(export_dir, n))]
    print(json.dumps({name: check(export_dir, name, images, labels) for name in names}, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:])

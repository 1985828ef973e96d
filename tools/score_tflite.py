"""Score a .tflite file of mnist_export.py on the course's JPGs with LiteRT and Pillow alone, no TensorFlow.

    python tools/score_tflite.py export/mnist_int8.tflite mnist_data_jpg/mnist_test_jpg_2000 \\
        mnist_data_jpg/mnist_test_jpg_2000.txt

The JPGs and their label file are those mnist_generateds.py writes (from the
bundled sample: mnist_test_jpg_2000, or the full set's mnist_test_jpg_10000):
MNIST digits stroke bright, as the network takes them. Each is run through
the file's serving_default signature (images -> classes), int8 files
quantized with the scale and zero point they hold. Prints
`<file>: <accuracy> of <count> digits`. docs/deploy.md shows it whole, as
the way to check an export where only LiteRT is installed.
"""
import argparse
import sys

import numpy as np
from PIL import Image
from ai_edge_litert.interpreter import Interpreter

parser = argparse.ArgumentParser(description="Score a .tflite file of mnist_export.py on the course's JPGs.")
parser.add_argument("model", help="a .tflite file (export/mnist_int8.tflite)")
parser.add_argument("folder", help="the course's JPGs (mnist_data_jpg/mnist_test_jpg_2000)")
parser.add_argument("labels", help="their label file (mnist_data_jpg/mnist_test_jpg_2000.txt)")
parser.error = lambda message: parser.exit(2, f"{parser.prog}: error: {message}\n")  # one line, no usage block
model, folder, labels = vars(parser.parse_args()).values()
try:
    runner = Interpreter(model_path=model).get_signature_runner("serving_default")
except ValueError as e:                                         # not there, or not a .tflite file
    sys.exit(f"error: {model}: cannot load it as a .tflite model ({str(e).strip().splitlines()[0]})")
given = runner.get_input_details()["images"]
right = total = 0
try:
    with open(labels, encoding="utf-8") as f:
        for line in f:
            name, digit = line.rsplit(maxsplit=1)
            images = np.asarray(Image.open(f"{folder}/{name}").convert("L"), np.float32).reshape(1, 784) / 255
            if given["dtype"] == np.int8:                      # the int8 file: pixel k of 0-255 is k - 128
                scale, zero_point = given["quantization"]
                images = np.clip(np.round(images / scale + zero_point), -128, 127).astype(np.int8)
            right += int(runner(images=images)["classes"][0]) == int(digit)
            total += 1
except (OSError, ValueError) as e:                               # a file missing or unreadable, a line not `NAME DIGIT`
    sys.exit(f"error: {getattr(e, 'filename', None) or labels}: {getattr(e, 'strerror', None) or e}")
if not total:
    sys.exit(f"error: {labels}: no digits listed")
print(f"{model}: {right / total:.4f} of {total} digits")

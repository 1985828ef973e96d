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
import sys

import numpy as np
from PIL import Image
from ai_edge_litert.interpreter import Interpreter

model, folder, labels = sys.argv[1], sys.argv[2], sys.argv[3]       # a .tflite file, the course's JPGs
runner = Interpreter(model_path=model).get_signature_runner("serving_default")
given = runner.get_input_details()["images"]
right = total = 0
with open(labels, encoding="utf-8") as f:
    for line in f:
        name, digit = line.rsplit(maxsplit=1)
        images = np.asarray(Image.open(f"{folder}/{name}").convert("L"), np.float32).reshape(1, 784) / 255
        if given["dtype"] == np.int8:                          # the int8 file: pixel k of 0-255 is k - 128
            scale, zero_point = given["quantization"]
            images = np.clip(np.round(images / scale + zero_point), -128, 127).astype(np.int8)
        right += int(runner(images=images)["classes"][0]) == int(digit)
        total += 1
print(f"{model}: {right / total:.4f} of {total} digits")

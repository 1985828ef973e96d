"""The convolutional chapter, step 3: evaluate the latest LeNet-5 checkpoint on data/mnist_test.tfrecords.

Run beside (or after) mnist_lenet5_backward.py. mnist_test.py's evaluation
(every test record scored exactly once, moving-average weights, every
--interval seconds or --once, TensorBoard, --report, --report-json) with the
network of mnist_lenet5_forward.py, without dropout, and ./model_lenet5/ as
the default model folder.
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)

import sys

import mnist_lenet5_backward
import mnist_lenet5_forward
import mnist_test

TEST_INTERVAL_SECS = 5


def test(model_dir=mnist_lenet5_backward.MODEL_SAVE_PATH, **options):
    """mnist_test.test for LeNet-5: options are its other keyword arguments (data_dir, interval, once, ...).

    Returns the last (global_step, accuracy, count); raises DataError as
    mnist_test.test does, also when the folder holds the 784-500-10 network.
    """
    return mnist_test.test(model_dir, net=mnist_lenet5_forward, trainer=mnist_lenet5_backward,
                           **{"interval": TEST_INTERVAL_SECS, **options})


def build_parser():
    """The command line's argparse parser (mnist_test's, with this file's and its trainer's defaults); no TensorFlow
    import."""
    return mnist_test.build_parser(mnist_lenet5_forward, __doc__, mnist_lenet5_backward, TEST_INTERVAL_SECS)


def main(argv=None):
    return mnist_test.main(argv, mnist_lenet5_forward, __doc__, mnist_lenet5_backward, TEST_INTERVAL_SECS)


if __name__ == "__main__":
    sys.exit(main())

"""The convolutional chapter, step 2: train LeNet-5 from data/mnist_train.tfrecords.

Run after mnist_generateds.py. The same training as mnist_backward.py (queue
runners under a Coordinator, resume, checkpoints every 1,000 steps,
Ctrl-C/SIGTERM saves, progress bar, TensorBoard summaries, distributed
flags), with the network of mnist_lenet5_forward.py and the course's
schedule for it, in the constants below: batch 100, learning rate 0.005
decayed x0.99 per epoch (staircase), L2 0.0001, moving averages 0.99,
50,000 steps. Checkpoints go to ./model_lenet5/, so that this network and
the 784-500-10 one never resume each other's; evaluate with
mnist_lenet5_test.py. Edit a constant and it takes effect: --help shows it,
and mnist_lenet5_test.py reads MODEL_SAVE_PATH and MODEL_NAME here.
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)

import sys

import mnist_backward
import mnist_lenet5_forward

BATCH_SIZE = 100
LEARNING_RATE_BASE = 0.005
LEARNING_RATE_DECAY = 0.99
REGULARIZER = 0.0001
STEPS = 50000
MOVING_AVERAGE_DECAY = 0.99
MODEL_SAVE_PATH = "./model_lenet5/"  # the course's ./model/ would hold both networks' checkpoints
MODEL_NAME = "mnist_model"  # checkpoints are <model folder>/<MODEL_NAME>-<global_step>, as in the course


def backward(*args, **options):
    """Train LeNet-5 until global_step reaches `steps`; returns the final global_step.

    mnist_backward.backward with mnist_lenet5_forward's network and this
    file's constants (the batch size, learning rate, model folder, ...);
    `options` are mnist_backward.backward's keywords (steps, batch_size,
    data_dir, model_dir, pipeline, save_every, keep, log, quiet,
    summary_every, learning_rate_base). Raises DataError on bad input,
    among them a model folder holding the 784-500-10 network's checkpoints.
    """
    return mnist_backward.backward(*args, net=mnist_lenet5_forward, constants=sys.modules[__name__], **options)


def build_parser():
    """The command line's argparse parser (mnist_backward's, with this file's defaults); no TensorFlow import."""
    return mnist_backward.build_parser(mnist_lenet5_forward, __doc__, sys.modules[__name__])


def main(argv=None):
    return mnist_backward.main(argv, mnist_lenet5_forward, __doc__, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())

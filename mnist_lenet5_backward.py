"""The convolutional chapter, step 2: train LeNet-5 from data/mnist_train.tfrecords.

Run after mnist_generateds.py. The same training as mnist_backward.py (queue
runners under a Coordinator, resume, checkpoints every 1,000 steps,
Ctrl-C/SIGTERM saves, progress bar, TensorBoard summaries, distributed
flags), with the network of mnist_lenet5_forward.py and the course's
schedule for it: batch 100, learning rate 0.005 decayed x0.99 per epoch
(staircase), L2 0.0001, moving averages 0.99, 50,000 steps. Checkpoints go
to ./model_lenet5/, so that this network and the 784-500-10 one never
resume each other's; evaluate with mnist_lenet5_test.py.
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)

import sys

import mnist_backward
import mnist_lenet5_forward

NETWORK = mnist_lenet5_forward.NETWORK  # the course's defaults below come from the network's declaration
BATCH_SIZE = NETWORK.batch_size  # 100
LEARNING_RATE_BASE = NETWORK.learning_rate_base  # 0.005
LEARNING_RATE_DECAY = mnist_backward.LEARNING_RATE_DECAY  # 0.99, as for the 784-500-10 network
REGULARIZER = mnist_backward.REGULARIZER  # 0.0001
STEPS = mnist_backward.STEPS  # 50,000
MOVING_AVERAGE_DECAY = mnist_backward.MOVING_AVERAGE_DECAY  # 0.99
MODEL_SAVE_PATH = NETWORK.model_dir  # "./model_lenet5/"
MODEL_NAME = mnist_backward.MODEL_NAME  # mnist_model-<global_step>, as in the course


def backward(*args, **options):
    """Train LeNet-5 until global_step reaches `steps`; returns the final global_step.

    mnist_backward.backward with mnist_lenet5_forward's network, whose
    declaration gives the batch size, learning rate and model folder;
    `options` are mnist_backward.backward's keywords (steps, batch_size,
    data_dir, model_dir, pipeline, save_every, keep, log, quiet,
    summary_every, learning_rate_base). Raises DataError on bad input,
    among them a model folder holding the 784-500-10 network's checkpoints.
    """
    return mnist_backward.backward(*args, net=mnist_lenet5_forward, **options)


def build_parser():
    """The command line's argparse parser (mnist_backward's, with this network's defaults); no TensorFlow import."""
    return mnist_backward.build_parser(mnist_lenet5_forward, __doc__)


def main(argv=None):
    return mnist_backward.main(argv, mnist_lenet5_forward, __doc__)


backward.__signature__ = mnist_backward.OPTIONS.signature(net=mnist_lenet5_forward)


if __name__ == "__main__":
    sys.exit(main())

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
    from mnistkit import startup
    startup.stop_quietly()

import sys

import mnist_backward
import mnist_generateds
import mnist_lenet5_forward

BATCH_SIZE = 100
LEARNING_RATE_BASE = 0.005
LEARNING_RATE_DECAY = mnist_backward.LEARNING_RATE_DECAY  # 0.99, as for the 784-500-10 network
REGULARIZER = mnist_backward.REGULARIZER  # 0.0001
STEPS = mnist_backward.STEPS  # 50,000
MOVING_AVERAGE_DECAY = mnist_backward.MOVING_AVERAGE_DECAY  # 0.99
MODEL_SAVE_PATH = "./model_lenet5/"
MODEL_NAME = mnist_backward.MODEL_NAME  # mnist_model-<global_step>, as in the course


def backward(steps=STEPS, batch_size=BATCH_SIZE, data_dir=mnist_generateds.data_path,
             model_dir=MODEL_SAVE_PATH, **options):
    """Train LeNet-5 until global_step reaches `steps`; returns the final global_step.

    mnist_backward.backward with mnist_lenet5_forward's network and this
    file's batch size, learning rate and model folder; `options` are
    mnist_backward.backward's other keyword arguments (pipeline, save_every,
    keep, log, quiet, summary_every). Raises DataError on bad input, among
    them a model folder holding the 784-500-10 network's checkpoints.
    """
    return mnist_backward.backward(steps, batch_size, data_dir, model_dir, net=mnist_lenet5_forward,
                                   learning_rate_base=LEARNING_RATE_BASE, **options)


NETWORK = dict(net=mnist_lenet5_forward, batch_size=BATCH_SIZE, learning_rate_base=LEARNING_RATE_BASE,
               model_dir=MODEL_SAVE_PATH, doc=__doc__)  # mnist_backward.build_parser's keywords


def build_parser():
    """The command line's argparse parser (mnist_backward's, with this network's defaults); no TensorFlow import."""
    return mnist_backward.build_parser(**NETWORK)


def main(argv=None):
    return mnist_backward.main(argv, **NETWORK)


if __name__ == "__main__":
    sys.exit(main())

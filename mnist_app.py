"""Course step 4: predict the digit in your own pictures.

Run after mnist_backward.py has written a checkpoint. Each picture (a dark
digit on a light background, any size, any mode: RGB, RGBA, palette,
grayscale, 16-bit) is prepared as the course did: resized to 28x28,
grayscale, inverted to light-on-dark like MNIST, and thresholded to black
and white. The network runs with the moving-average weights.

  python mnist_app.py pic1.png pic2.jpg   # one line per picture
  python mnist_app.py                     # the course's prompts
"""
import argparse
import sys

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from tf_compat import tf
import mnist_backward
import mnist_forward
from mnist_idx import DataError

THRESHOLD = 50  # after inversion: below is background (0), the rest is stroke (255)
IMAGE_SIZE = 28


def pre_pic(picName, threshold=THRESHOLD):
    """The course's preprocessing of one picture file.

    Returns float32 [1, 784] with values 0.0 or 1.0 (stroke = 1.0). EXIF
    orientation is applied and transparent areas are laid on white first;
    16-bit images are scaled to 8 bits. Resizing uses Pillow's LANCZOS
    filter, which is what the removed Image.ANTIALIAS was.
    Raises DataError naming the file when it is missing, not an image, or empty.
    """
    try:
        with Image.open(picName) as img:
            img = ImageOps.exif_transpose(img)
            if img.width == 0 or img.height == 0:
                raise DataError(f"{picName}: empty image (0 pixels)")
            if img.mode in ("I", "I;16", "I;16B", "I;16L"):
                img = Image.fromarray((np.asarray(img, dtype=np.uint32) >> 8).astype(np.uint8), mode="L")
            if img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info:
                rgba = img.convert("RGBA")
                img = Image.alpha_composite(Image.new("RGBA", rgba.size, "white"), rgba)
            reIm = img.convert("L").resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.LANCZOS)
    except FileNotFoundError:
        raise DataError(f"{picName}: file not found") from None
    except UnidentifiedImageError:
        raise DataError(f"{picName}: not an image file") from None
    except (OSError, Image.DecompressionBombError) as e:
        raise DataError(f"{picName}: cannot read image ({e})") from None
    im_arr = 255 - np.asarray(reIm, dtype=np.int32)
    im_arr = np.where(im_arr < threshold, 0, 255)
    return (im_arr.reshape([1, mnist_forward.INPUT_NODE]) * (1.0 / 255)).astype(np.float32)


class Predictor:
    """The network restored once with its moving-average weights, for many pictures.

    model_dir: checkpoint folder. Raises DataError when it holds no
    checkpoint or one of another graph.
    """

    def __init__(self, model_dir=mnist_backward.MODEL_SAVE_PATH):
        ckpt = tf.train.latest_checkpoint(model_dir)
        if ckpt is None:
            raise DataError(f"{model_dir}: no checkpoint found; train first with `python mnist_backward.py`")
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.x = tf.placeholder(tf.float32, [None, mnist_forward.INPUT_NODE])
            self.probabilities = tf.nn.softmax(mnist_forward.forward(self.x, None))
            ema = tf.train.ExponentialMovingAverage(mnist_backward.MOVING_AVERAGE_DECAY)
            restore_vars = ema.variables_to_restore()
            restore_vars = {k: v for k, v in restore_vars.items() if "global_step" not in k}
            try:
                mnist_forward.check_checkpoint(ckpt, restore_vars)
            except ValueError as e:
                raise DataError(str(e)) from None
            self.sess = tf.Session(graph=self.graph)
            tf.train.Saver(restore_vars).restore(self.sess, ckpt)

    def restore_model(self, testPicArr):
        """Predicted digit (int) for one prepared picture, float32 [1, 784]."""
        return int(np.argmax(self.predict(testPicArr)[0]))

    def predict(self, pictures):
        """Class probabilities float32 [n, 10] for prepared pictures float32 [n, 784]."""
        return self.sess.run(self.probabilities, feed_dict={self.x: pictures})


def application(paths, model_dir, threshold=THRESHOLD, out=print):
    """Predict each picture in `paths`; returns the number of pictures that failed."""
    predictor = Predictor(model_dir)
    failed = 0
    for path in paths:
        try:
            digit = predictor.restore_model(pre_pic(path, threshold))
        except DataError as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1
            continue
        out(f"{path}: The prediction number is: {digit}")
    return failed


def ask_paths():
    """The course's interactive prompts: a count, then that many paths."""
    answer = input("input the number of test pictures:")
    try:
        count = int(answer)
    except ValueError:
        raise DataError(f"the number of pictures must be a whole number, not {answer!r}") from None
    return [input("the path of test picture:") for _ in range(count)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("images", nargs="*", help="picture files; none: ask as the course did")
    parser.add_argument("--model-dir", default=mnist_backward.MODEL_SAVE_PATH, help="checkpoint folder")
    parser.add_argument("--threshold", type=int, default=THRESHOLD, help="stroke threshold 0-255 after inversion")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    args = parser.parse_args(argv)
    try:
        paths = args.images or ask_paths()
        failed = application(paths, args.model_dir, args.threshold)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (EOFError, KeyboardInterrupt):
        return 130
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

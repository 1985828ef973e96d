"""Course step 4: predict the digit in your own pictures.

Run after mnist_backward.py has written a checkpoint. Each picture (a dark
digit on light paper, any size, any mode: RGB, RGBA, palette, grayscale,
16-bit, EXIF-rotated phone JPEG) is turned into the 28x28 input MNIST
digits have, and the network runs with the moving-average weights.

Two preparations (--preprocess):
  mnist (default): the paper's lighting is evened out, the ink threshold is
    chosen per picture (Otsu's method), and the digit is cropped to its
    bounding box, scaled into a 20x20 box and placed in 28x28 by its centre
    of mass, which is how MNIST itself was built (LeCun et al.). Thin pen
    strokes are thickened to MNIST's stroke width.
  course: the course's way: the whole picture resized to 28x28, inverted
    and cut at a fixed threshold (--threshold, 50).

  python mnist_app.py pic1.png pic2.jpg   # one line per picture, with the top 3
  python mnist_app.py photos/             # every picture in a folder
  python mnist_app.py                     # the course's prompts
  python mnist_app.py --model-dir model_lenet5 pic.png   # LeNet-5 (found from the checkpoint)
  python mnist_app.py --model-dir export/mnist.tflite pic.png   # an export of mnist_export.py
  python mnist_app.py --serve             # the drawing board: http://127.0.0.1:8501/ (mnistkit.board)
  python mnist_app.py --serve --host 0.0.0.0   # for a phone too: prints this computer's addresses to open
  python mnist_app.py --serve --compare model_lenet5   # both networks side by side, each read layer by layer
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)
import importlib
import os
import sys

import numpy as np
from PIL import Image

import tf_compat
from tf_compat import tf
import mnist_backward
import mnist_forward
from mnistkit import (checkpoints, cli, deployed, export, folders, keep, layers, learn, listener, pictures, places,
                      preparation, reference, segmentation)
from mnistkit.board import app as board, guard, threads
from mnistkit.errors import DataError
from mnistkit.images import picture_paths  # the pictures the command line names, folders listed
from mnistkit.pictures import IMAGE_SIZE, claim_input_path, write_input

MODEL_SAVE_PATH = mnist_backward.MODEL_SAVE_PATH  # "./model/"; any network's folder is read
MODEL_NAME = mnist_backward.MODEL_NAME  # the checkpoints' name when the folder's `checkpoint` index tells none
MOVING_AVERAGE_DECAY = mnist_backward.MOVING_AVERAGE_DECAY  # restoring reads the shadows by name, whatever the decay

THRESHOLD = 50  # --preprocess course: after inversion, below is background (0), the rest is stroke (255)
PREPROCESS = ("mnist", "course")  # --preprocess
TOP_K = 3
COUNT_PROMPT = "input the number of test pictures:"  # the course's prompts, word for word
PATH_PROMPT = "the path of test picture:"
NO_PICTURES = "0 test pictures: nothing to predict"  # the line an answer of 0 ends with
NOT_A_DIGIT = ("; but that is not a digit: it lies far from every test digit the network knows "
               "(docs/inside.md)")  # the end of the line of a picture mnistkit.reference finds no digit in


def restore_network(model_dir=MODEL_SAVE_PATH):
    """The course's restore: the network of model_dir's newest checkpoint with its moving-average weights.

    Returns (sess, x, prediction, probabilities, net, ckpt): a tf.Session
    holding the restored network, its input placeholder x float32 [None,
    784], the predicted digits int64 [None] and their probabilities
    float32 [None, 10], the network's forward module (the one the folder
    records: checkpoints.newest; no dropout) and the checkpoint's path.
    The caller closes sess. Raises DataError when model_dir holds no
    checkpoint, a damaged one (with the newest intact one in the hint) or
    one of another graph.
    """
    # The course's tf.train.get_checkpoint_state reads only the `checkpoint` index file; checkpoints.newest
    # finds the newest checkpoint files even when that index is lost or names a moved folder, reads them
    # whole, and names the network the folder holds, whose forward module builds the graph. Before the graph: a
    # mistyped path, a file or a folder without checkpoint files is said at once, without TensorFlow's import.
    found = checkpoints.newest(model_dir, mnist_forward.NETWORK, places.APP, MODEL_SAVE_PATH, name=MODEL_NAME)
    with tf.Graph().as_default() as tg:
        net, ckpt, stored = importlib.import_module(found.network.forward), found.prefix, found.stored
        x = tf.placeholder(tf.float32, [None, net.INPUT_NODE])
        y = net.forward(x, None, train=False)
        prediction = tf.argmax(y, 1)
        probabilities = tf.nn.softmax(y)  # for the top 3 beside the prediction
        variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY)
        variables_to_restore = variable_averages.variables_to_restore()
        saver = tf.train.Saver(variables_to_restore)
        sess = tf.Session(graph=tg)
        try:
            with checkpoints.restoring(ckpt, variables_to_restore, stored) as path:  # checked first; a literal path
                saver.restore(sess, path)
        except DataError:
            sess.close()
            raise
    return sess, x, prediction, probabilities, net, ckpt


def restore_model(testPicArr, model_dir=MODEL_SAVE_PATH):
    """The course's step: the digit (int) the newest checkpoint in model_dir predicts for pre_pic's float32 [1, 784].

    Restores the network for this one call, as the course did
    (application() restores once for many pictures: Predictor). Raises
    DataError as restore_network does.
    """
    sess, x, prediction, _, _, _ = restore_network(model_dir)
    with sess:
        preValue = sess.run(prediction, feed_dict={x: testPicArr})
    return int(preValue[0])


class Predictor:
    """restore_network's network, restored once for many pictures: `net` (its forward module), `ckpt` (its path).

    `network` (its networks.Network), `source` (= ckpt) and `inside` (its
    layers, mnistkit.layers) are what the exports' predictors
    (mnistkit.deployed) have too. It may be shared between threads (the
    board's server): tf.Session.run is thread-safe, and the graph is finalized.
    """

    def __init__(self, model_dir=MODEL_SAVE_PATH):
        self.sess, self.x, _, self.probabilities, self.net, self.ckpt = restore_network(model_dir)
        self.network, self.source = self.net.NETWORK, self.ckpt
        self.inside = layers.GraphInside.of_forward(self.network, self.sess, self.x, self.probabilities)
        self.sess.graph.finalize()

    def predict(self, pictures):
        """Class probabilities float32 [n, 10] for prepared pictures float32 [n, 784]."""
        return self.sess.run(self.probabilities, feed_dict={self.x: pictures})


def pre_pic(picName, threshold=THRESHOLD, preprocess="mnist"):
    """The network input for one picture file: float32 [1, 784] in [0, 1], stroke bright.

    preprocess "mnist" (preparation.mnist_input) or "course" (course_pixels
    with `threshold`). The values are k / 255 for the uint8 pixels k that
    prepared_pixels returns. Raises DataError naming the file when it cannot
    be read or holds no digit.
    """
    return preparation.network_input(prepared_pixels(picName, threshold, preprocess))


def prepared_pixels(picName, threshold=THRESHOLD, preprocess="mnist", name=None):
    """uint8 [28, 28]: the picture as the network sees it (see pre_pic).

    picName: a picture file's path, or the picture's bytes or a binary file
    object (the drawing board's uploads, read from memory); name: how
    messages name it (default: the path). Raises DataError naming the
    picture when it cannot be read, is too large to read
    (pictures.MAX_READ_BYTES), holds no digit (segmentation.find_ink), several
    digits, or gives a flat input (every pixel one value).
    """
    name = pictures.picture_name(picName, name)
    img = pictures.load_picture(picName, name)  # any mode, EXIF-rotated, transparency resolved; 8-bit gray, <= 2048 px
    with pictures.refusals_named(name):
        if preprocess == "course":
            segmentation.find_ink(pictures.shrink(img))  # the course's threshold alone reads a blank page as a digit
            pixels = course_pixels(img, threshold)
        else:  # MNIST's own preparation: lighting evened, digit cropped, scaled into 20x20 and centred
            pixels = preparation.as_is_input(img)  # one already so (a kept digit, the course's own JPGs): as it is
            if pixels is None:
                pixels = preparation.mnist_input(img)
    pictures.check_not_flat(name, pixels, threshold, preprocess)
    return pixels


def course_pixels(img, threshold=THRESHOLD):
    """The course's preparation of a grayscale PIL image: uint8 [28, 28], 0 or 255 (stroke = 255)."""
    reIm = img.resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.LANCZOS)  # LANCZOS: the removed Image.ANTIALIAS
    im_arr = np.array(reIm.convert("L"), dtype=np.int32)  # grayscale
    im_arr = 255 - im_arr  # inverted: a bright stroke on black, as in MNIST
    return np.where(im_arr < threshold, 0, 255).astype(np.uint8)  # threshold: paper and noise 0, stroke 255


def load_predictor(model_dir):
    """The predictor --model-dir names: a checkpoint folder's Predictor, or an export (mnistkit.deployed).

    An export is a SavedModel version folder (export/mnist/1), its base path (export/mnist: the newest version)
    or a .tflite file written by mnist_export.py; each has Predictor's predict, `network`, `source` and `inside`.
    A .tflite file is run without importing TensorFlow. Raises DataError as model_loader, Predictor or
    deployed.load does.
    """
    return model_loader(model_dir)()


def model_loader(model_dir):
    """How load_predictor loads --model-dir's model, chosen without TensorFlow: a function of no arguments that
    returns the predictor.

    The one check of whether model_dir holds a model at all, made by listing it (no file read, no TensorFlow,
    which restoring a checkpoint or reading its index imports): a folder with checkpoint files, V2 or V1, is
    Predictor's (an export beside checkpoints that are all unfinished too), else a SavedModel deployed.load's.
    A .tflite file is read here (deployed.load: LiteRT's, without TensorFlow), once (tflite_once). Raises
    DataError at once for a path that holds none: not there (a typo: `did you mean model?`), a file, a folder without
    checkpoint files (checkpoints.no_checkpoint's line, with the trainer to run), a .tflite file missing or damaged,
    a model folder's own history/ or learns/ (places.part_given).
    application() calls it before any picture, so that this line comes first, and loads the model only when a
    picture named is there.
    """
    places.refuse_part(model_dir)  # model/history, model/learns/1: the model folder named
    if export.is_tflite(model_dir):
        model = tflite_once(model_dir)
        return lambda: model
    # checkpoint files: a V2 checkpoint's of any name (which one is read is the index's, read with TensorFlow), or
    # the one file of a V1 checkpoint of the course's name (checkpoints.newest's name without a V2 file)
    if not (folders.checkpoint_names(model_dir) or folders.checkpoint_steps(model_dir, MODEL_NAME)):
        if not deployed.is_exported(model_dir):
            raise checkpoints.no_checkpoint(model_dir, mnist_forward.NETWORK, places.APP, MODEL_SAVE_PATH)
        return lambda: deployed.load(model_dir)

    def restore():
        try:
            return Predictor(model_dir)
        except checkpoints.NoCheckpoint:  # its checkpoint files all unfinished saves, or of another name
            if not deployed.is_exported(model_dir):
                raise
        return deployed.load(model_dir)
    return restore


_TFLITE_LOADED = {}  # {absolute path of a .tflite file: (its state, its model)}: tflite_once's


def tflite_once(path):
    """deployed.load(path) of a .tflite file, loaded once while the file stays as it is (its inode, size and mtime):
    model_loader checks it at once (the prompts' first line, --serve's start), and the predictor_for or board load
    that follows takes that model instead of reading the file a second time. A file written again is loaded again
    (the board follows a new export). Raises DataError as deployed.load does."""
    try:
        stat = os.stat(path)
    except OSError:
        return deployed.load(path)  # its own line: not there, unreadable
    key, state = os.path.abspath(path), (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    held = _TFLITE_LOADED.get(key)
    if held is not None and held[0] == state:
        return held[1]
    model = deployed.load(path)
    _TFLITE_LOADED[key] = (state, model)
    return model


def top_k(probabilities, k=TOP_K):
    """[(digit, probability)] of the k most probable digits, most probable first."""
    order = np.argsort(-probabilities, kind="stable")[:k]
    return [(int(d), float(probabilities[d])) for d in order]


def application(paths=None, model_dir=MODEL_SAVE_PATH, threshold=THRESHOLD, out=print,
                preprocess="mnist", as_json=False, show_input=None, count=None, name_pictures=True):
    """Predict each picture in `paths`; returns the number of pictures that failed.

    paths: a list, or any iterable (ask_paths: the course's prompts, each asked after the previous picture's
    line is printed); None asks as the course did (ask_count, then ask_paths, pictures not named). The network
    is restored once, before the first path is taken; a network other than the 784-500-10 one is named on
    stderr (`using LeNet-5 from CKPT`). Prints one line per picture (`<path>: The prediction number is: D (top
    3: ...)`; without the `<path>: ` when not name_pictures), or with `as_json` one JSON list (cli.readable_json:
    file names as they are) of {"file",
    "prediction", "top3": [{"digit", "probability"}], "network", "not_a_digit"} ({"file", "error"} for a failed
    picture); not_a_digit: true, false or null (mnistkit.reference: the test digits the model knows, made on the
    first picture and cached), true also ending the line with NOT_A_DIGIT.
    show_input: see input_path and claim_input_path; count: how many pictures it is given for (default
    len(paths)); the 28x28 PNG holds exactly what the network got, times 255, and each file written is named
    on stderr (`input written to PATH`). Unreadable pictures are reported on stderr and skipped.
    """
    if paths is None:
        model_loader(model_dir)  # a model not there is said before the first prompt, not after its answer
        count, name_pictures = ask_count(), False
        if not count:
            return 0  # end of input, or 0 pictures, before any picture: nothing failed
        paths = ask_paths(count)
    predictor = predictor_for(model_dir, paths)  # the course restored the network for each picture: once here
    count = len(paths) if count is None else count
    failed, results, claimed = 0, [], {}
    judge = predictor and reference.Judge(predictor, log=(lambda line: print(line, file=sys.stderr, flush=True)) if
                                          tf_compat.VERBOSE else None)
    for path in paths:
        try:
            if not path:
                raise DataError("(empty answer): no picture path given")
            testPicArr = pre_pic(path, threshold, preprocess)
            if show_input is not None:
                target = claim_input_path(show_input, path, count, claimed)
                write_input(testPicArr, target)
                print(f"input written to {target}", file=sys.stderr, flush=True)
            probabilities, not_a_digit = judge.judge(testPicArr)
            best = top_k(probabilities)
        except DataError as e:
            print(f"error: {e}", file=sys.stderr, flush=True)
            failed += 1
            results.append({"file": path, "error": str(e)})
            continue
        results.append({"file": path, "prediction": best[0][0],
                        "top3": [{"digit": d, "probability": p} for d, p in best],
                        "network": predictor.network.label, "not_a_digit": not_a_digit})
        if not as_json:
            ranked = ", ".join(f"{d} {p:.1%}" for d, p in best)
            out((f"{path}: " if name_pictures else "") + f"The prediction number is: {best[0][0]} (top {TOP_K}: "
                f"{ranked})" + (NOT_A_DIGIT if not_a_digit else ""))
    if as_json:
        out(cli.readable_json(results, indent=1))  # 图片.png as it is; JSON escapes where stdout cannot
    return failed


def predictor_for(model_dir, paths):
    """application's network, restored once before the first picture: a Predictor, an export's predictor
    (deployed.load_export), or None when paths is a list of which no picture opens (opens: a typo, `notes.txt`, a
    text file named fake.png: each picture's line follows at once, without the load, which imports TensorFlow:
    seconds). A model_dir with no model is said first
    (model_loader: SystemExit, without TensorFlow); at a terminal, TensorFlow's first import is said before it
    starts; an export's version (and with --verbose its record) and a network other than the 784-500-10 one are
    named on stderr."""
    load = model_loader(model_dir)
    unread = isinstance(paths, list) and not any(path and opens(path) for path in paths)
    if not unread and "tensorflow" not in sys.modules and not export.is_tflite(model_dir) \
            and sys.stderr.isatty():  # a person waits at a prompt: the seconds of TensorFlow's first import said
        print("loading the model (TensorFlow's first import takes a few seconds)...", file=sys.stderr, flush=True)
    predictor = None if unread else load()
    if predictor is not None and not isinstance(predictor, Predictor):  # an export: which version, --verbose its record
        for line in deployed.describe(predictor, tf_compat.VERBOSE):
            print(line, file=sys.stderr, flush=True)
    if predictor is not None and predictor.network.forward != mnist_forward.NETWORK.forward:  # another network: say
        print(f"using {predictor.network.label} from {predictor.source}", file=sys.stderr, flush=True)
    return predictor


def opens(path):
    """Whether `path` (str) is a file the app takes for a picture by its header alone (pictures.open_picture: Pillow's,
    HEIC too; no pixels decoded): False for one not there, a folder, or a file of no picture format (a text file,
    whatever its name); True for any other fault, which the picture's own reading says (pictures.load_picture)."""
    try:
        with pictures.open_picture(path):
            return True
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, Image.UnidentifiedImageError):
        return False
    except Exception:  # a decompression bomb, a plugin's own error: the picture is read, and said, as one
        return True


def ask_count():
    """The course's first prompt: how many pictures (int >= 0); None at end of input (Ctrl-D).

    An answer that is not a whole number gets its error line and the prompt again (cli.ask_whole_number), as a
    wrong path does; an input that ends after one raises DataError (exit 1), where a plain Ctrl-D exits 0. An answer
    of 0 ends with NO_PICTURES on stderr, not silently.
    """
    count = cli.ask_whole_number(COUNT_PROMPT, "the number of test pictures")
    if count is None:
        end_of_input(0, None)
    elif count == 0:
        print(NO_PICTURES, file=sys.stderr, flush=True)
    return count


def ask_paths(count):
    """The course's per-picture prompt, `count` times: yields each answer (cli.typed_path) as it is typed.

    A generator, so that application() predicts each picture before the
    next prompt. Ends early at end of input (Ctrl-D), after end_of_input's line.
    """
    for number in range(count):
        try:
            yield cli.typed_path(input(PATH_PROMPT))
        except EOFError:
            end_of_input(number, count)
            return
        except KeyboardInterrupt:
            print(flush=True)  # end the prompt's line before the stop is reported
            raise


def end_of_input(given, count):
    """Finish the prompt's line and say on stderr where the input ended (given of count pictures)."""
    print(flush=True)
    said = "no pictures to read" if count is None else f"{given} of {count} test pictures given"
    print(f"end of input: {said}", file=sys.stderr, flush=True)


# Each option of the app once (cli.Options, as mnist_backward.OPTIONS): flag, default, help and bounds.
Option = cli.ScriptOption
OPTIONS = cli.Options([
    Option("model_dir", MODEL_SAVE_PATH, "checkpoint folder, of any network (./model_lenet5/ for LeNet-5), or an "
           "export of mnist_export.py: a SavedModel version folder (export/mnist/1), its base path (export/mnist: "
           "the newest version) or a .tflite file", type=cli.path, constant="MODEL_SAVE_PATH"),
    Option("preprocess", "mnist", "mnist: even lighting, per-picture threshold, digit cropped and centred as in "
           "MNIST; course: whole picture resized, fixed --threshold", choices=PREPROCESS),
    Option("threshold", THRESHOLD, "--preprocess course: stroke threshold 0-255 after inversion", minimum=0,
           maximum=255, constant="THRESHOLD"),
    Option("json", False, "print one JSON list: file, prediction, top 3"),
    Option("show_input", None, "write the 28x28 network input: to PATH.png (one picture), or into folder PATH as "
           "<picture's name>.png (photos/a.jpg -> PATH/a.png)", type=cli.plain_path, metavar="PATH"),
    Option("serve", False, "serve the drawing board (draw a digit, drop a photo) and TF Serving's REST API "
           "(POST /v1/models/<name>:predict) for --model-dir, until Ctrl-C"),
    Option("host", board.HOST, "--serve: the address to listen on; 0.0.0.0 opens it to your network (a phone can "
           "draw: the addresses it opens are printed)"),
    Option("port", board.PORT, "--serve: the port (8501 is TF Serving's REST port; 0 takes any free one)", minimum=0,
           maximum=65535),
    Option("allow_host", None, "--serve: also answer requests that reach it by NAME (a Host header; repeatable); "
           "127.0.0.1, localhost, --host and with 0.0.0.0 this machine's names always are; '*': any name, which "
           "lets any web page you visit read and use it (unsafe)", metavar="NAME", append=True),
    Option("allow_origin", None, "--serve: let pages of ORIGIN (http://localhost:3000; repeatable; '*': any site) "
           "post here and read the answers (CORS); pages of other sites are refused with 403", metavar="ORIGIN",
           append=True),
    Option("keep_dir", keep.DEFAULT_FOLDER, "--serve: where the page keeps the digits you correct, in the course's "
           "layout: FOLDER/*.jpg and FOLDER.txt (docs/teach.md)", type=cli.plain_path,
           metavar="FOLDER"),
    Option("shutdown_grace", listener.SHUTDOWN_GRACE, "--serve: seconds the requests under way get after Ctrl-C "
           "or SIGTERM; then they are cut, and the last line says how many", minimum=0, metavar="SECONDS"),
    Option("compare", None, "--serve: a second model served beside --model-dir, a folder or export as it takes "
           "(model_lenet5 beside model; not --model-dir itself): the page shows both answers and insides; the page "
           "learns on either (docs/teach.md)", type=cli.path, metavar="DIR"),
])
# The page's "Learn from my digits": mnist_learn.py's own declarations, as --learn-steps, --learn-share, ...
LEARN_OPTIONS = learn.OPTIONS.prefixed("learn", "steps", "share", "data_dir")


def build_parser():
    """The command line's argparse parser (the pictures, OPTIONS' flags, --verbose); building it imports no
    TensorFlow (fast --help and flag errors)."""
    parser = cli.new_parser(__doc__)
    parser.add_argument("images", type=cli.plain_path, nargs="*", metavar="IMAGE",
                        help="picture files or folders of pictures; none: ask as the course did "
                             f"({cli.END_OF_INPUT_KEY} ends the answers early)")
    OPTIONS.add_to(parser, sys.modules[__name__])
    LEARN_OPTIONS.add_to(parser.add_argument_group(
        "--serve's learn (the page's \"Learn from my digits\"; mnist_learn.py's --steps, --share, --data-dir)"), learn)
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    return parser


def main(argv=None):
    """The command line of mnist_app.py; returns the exit status (1 when a picture failed)."""
    parser = build_parser()
    args = OPTIONS.check(parser.parse_args(cli.arguments(argv)), sys.modules[__name__], parser.error)
    LEARN_OPTIONS.check(args, learn, parser.error)
    if args.serve and (args.images or args.json or args.show_input):
        parser.error("--serve takes no pictures, --json or --show-input: the page and the API receive the pictures")
    typed = OPTIONS.typed(parser, cli.arguments(argv))
    if args.compare and not args.serve:
        parser.error("--compare serves a second model beside the first: give --serve too")
    serve_only = [o.flag_name for o in OPTIONS if o.help.startswith("--serve:") and o.name in typed]
    serve_only += [o.flag_name for o in LEARN_OPTIONS if o.name in LEARN_OPTIONS.typed(parser, cli.arguments(argv))]
    if serve_only and not args.serve:  # else ignored without a word: the pictures are only predicted
        parser.error(f"{serve_only[0]} is for the drawing board: give --serve too (pictures take none of --serve's "
                     "flags)")
    # A --keep-dir not there, mistyped from a folder beside it (`my_digts` by my_digits/): the board would keep the
    # digits apart from those kept before, and a learn would not see them; refused, with the way to start one.
    typo = args.serve and checkpoints.new_folder_typo(args.keep_dir, "keep digits in a new folder")
    if typo:
        return cli.refused(typo)  # bad input (exit 1), as a --model-dir not there is
    if args.compare and same_folder(args.compare, args.model_dir):
        parser.error(f"--compare {args.compare} is --model-dir {args.model_dir} itself: a model beside itself shows "
                     "nothing; give another model's folder (model_lenet5)")
    for origin in args.allow_origin or ():
        if origin != "*" and guard.origin_key(origin) is None:
            parser.error(f"--allow-origin {origin}: give an origin as a browser sends it, scheme://host[:port] "
                         "(http://localhost:3000), or *")
    failed = []
    status = cli.exit_status(lambda: failed.append(run(args)))
    return status or (1 if failed[0] else 0)


def same_folder(one, other):
    """Whether the paths `one` and `other` (str) name one folder: spelled alike once made absolute with links
    followed (`model`, `./model`, `/home/me/model`, a link to it), or one on disk (os.path.samefile: a folder
    that file system's names do not tell apart, `Model` on a case-blind one)."""
    if os.path.realpath(one) == os.path.realpath(other):
        return True
    try:
        return os.path.samefile(one, other)
    except OSError:  # one of them is not there: not the same (its own line comes when it is loaded)
        return False


def run(args):
    """Predict the pictures the parsed command line names, or ask for them, or --serve; returns how many failed."""
    if args.serve:
        serve(args)
    threads.one_blas_thread()  # the not-a-digit reference's NumPy on this thread (BLAS's own spin on a busy machine)
    if args.images:
        paths = picture_paths(args.images)
        count = len(paths)
    else:
        if args.show_input is not None and os.path.lexists(args.show_input) and not os.path.isdir(args.show_input):
            # a picture there named as --show-input (`--show-input two.jpg`, meant as the picture): said before the
            # prompts, not after the count is answered; an input written before (a 28x28 PNG) is written over
            over = pictures.over_a_picture(pictures.input_path(args.show_input, "picture", 1), "picture")
            if over is not None:
                raise over
        model_loader(args.model_dir)  # a model not there is said before the first prompt, not after its answer
        count = ask_count()
        if not count:
            return 0  # end of input, or 0 pictures, before any picture: nothing failed
        paths = ask_paths(count)
    if args.show_input is not None and count:  # a wrong --show-input fails before any work
        claimed = {}
        for path in paths if args.images else ["picture"]:
            claim_input_path(args.show_input, path, count, claimed)
    return application(paths, args.model_dir, args.threshold, preprocess=args.preprocess, as_json=args.json,
                       show_input=args.show_input, count=count, name_pictures=bool(args.images))


def serve(args):
    """--serve: the drawing board and TF Serving's REST API for --model-dir, with this app's preparation.

    Pictures are prepared by prepared_pixels with --preprocess and
    --threshold, as the app reads a photo, and answered by load_predictor's
    predictor, loaded again for a newer model in --model-dir
    (board.open_board), and by --compare's beside it; the page keeps
    corrected digits in --keep-dir and learns with LEARN_OPTIONS;
    --allow-host and --allow-origin say who else may use it. Runs until Ctrl-C or SIGTERM, raised as errors.Interrupted
    within --shutdown-grace seconds; raises DataError as load_predictor
    does, or when --host/--port cannot be listened on (said before the model loads).
    """
    kept = keep.KeptDigits(args.keep_dir)  # a folder it cannot use is said before the model loads
    model_loader(args.model_dir)  # a model not there (`--model-dir modle`) said at once, before TensorFlow's import
    try:
        args.compare and model_loader(args.compare)  # and --compare's, named as the board names it once loading
    except DataError as e:
        raise DataError(f"--compare: {e}") from None
    # Bound before the model loads (TensorFlow's import: seconds): a port taken (a board still running) is said at
    # once; a browser's request in those seconds waits in the socket's queue.
    sock = listener.bind(args.host, args.port)
    try:
        served = board.open_board(lambda: load_predictor(args.model_dir),
                                  lambda data, name: prepared_pixels(data, args.threshold, args.preprocess, name),
                                  args.model_dir, kept, learn.Plan.of(args, "learn"),
                                  compare=args.compare and (lambda: load_predictor(args.compare), args.compare))
    except BaseException:
        sock.close()
        raise
    access = guard.Access(args.host, args.allow_host or (), args.allow_origin or ())
    board.serve(served, args.host, args.port, access=access, grace=args.shutdown_grace, sock=sock)

if __name__ == "__main__":
    tf_compat.end(main())  # --serve's daemon threads: no abort at exit (tf_compat.end)

"""A checkpoint of a model folder read whole, verified and restored, or the one line that says why not.

Used by the trainers (resume: mnist_backward.py, through which
mnist_lenet5_backward.py, mnistkit.training, the distributed chief),
mnist_test.py (evaluate), mnist_app.py (predict), mnist_export.py (export)
and the board (mnistkit.board: the newest checkpoint; mnistkit.learn:
learning from the kept digits). What a model folder holds and how a
trainer takes it (checkpoint names, the `checkpoint` index file, the
folder's record, the lock) is mnistkit.folders'; the names a reader uses
(latest, step_of, prefix_of, ...) are reached here too. The trainer's
saves (RunSaves: the .meta first, never over another run's checkpoint,
retried while another process holds a file, the --keep rotation) are
mnistkit.saving's.

tf.compat.v1.train.Saver writes each checkpoint as three kinds of file,
<folder>/<name>-<global_step>.index, .data-00000-of-00001 and .meta, where
<name> is the trainer's MODEL_NAME (the course's "mnist_model"): the
functions that find a folder's checkpoints take that `name`, and readers
that were given none take the name the folder's `checkpoint` index file
uses (folders.checkpoint_name). The index file alone is not trusted here:
with absolute paths in it a moved or copied folder points nowhere, and it
can be missing or damaged while the checkpoint files are fine. So:
- the newest checkpoint is found from the files that are there, the index
  file only breaking the tie with a checkpoint still being written
  (folders.latest);
- a checkpoint is read whole before it is used: every tensor's checksum is
  verified, so a cut or bit-flipped file is one clear error (CheckpointDamaged),
  never a traceback and never a silent start from scratch;
- the values restored are the ones read, so a checkpoint that the trainer's
  rotation deletes while an evaluator reads it is either read whole or
  reported gone (CheckpointGone), never half-restored;
- a checkpoint in the older V1 format (one file <folder>/mnist_model-<step>,
  no .index) is read too;
- every folder name is a literal path: TensorFlow's checkpoint reader and
  Saver.restore treat a prefix as a glob pattern (`model[1]` would match
  `model1`), so they never see one with glob characters (readable_prefix).
"""
import collections
import contextlib
import glob
import importlib.util
import os
import re
import shutil
import tempfile
import time

import numpy as np
from google.protobuf.message import DecodeError  # TensorFlow's own protobuf: its requirement

from tf_compat import first_line, tensor_read_problem, tf
from . import cli, folders, networks, places
from .errors import DataError
from .folders import (MODEL_NAME, checkpoint_format, checkpoint_name, checkpoint_steps, folder_network, latest,
                      name_of, prefix_of, step_of)

# Saver.save on its own writes a checkpoint's .meta last, after the index file
# names it (the trainer's save does not: saving.save_attempts; other writers
# of a folder may); a reader waits this long for the .meta of a checkpoint
# written less than FRESH_SECS ago before calling it damaged.
META_WAIT_SECS = 10
FRESH_SECS = 120
NEW_FOLDER = "NEW_FOLDER"  # a hint's stand-in for a folder name the user chooses


class CheckpointDamaged(DataError):
    """A checkpoint whose files are missing, cut short or fail their checksums; str() is the one-line message."""


class CheckpointGone(DataError):
    """A checkpoint deleted while it was read (the trainer's --keep rotation)."""


class NoCheckpoint(DataError):
    """A model folder holding no checkpoint (no_checkpoint); str() is the one-line message with its hint."""


class NotFinite(DataError):
    """A checkpoint holding a NaN or an infinity (a training that diverged); str() is the one-line message."""


class CourseOriginal(DataError):
    """A checkpoint the course's original TF1 code wrote (course_original); str() is the one-line message, whole:
    it says what to do."""


def signature(prefix):
    """What tells one state of a checkpoint's files from another: sorted (name, bytes, mtime ns) tuples.

    mnist_test.py scores a checkpoint again only when this changed (a
    checkpoint reported damaged that was then written whole, or a step
    saved again by a new run). Several checkpoints: signatures, one scan.
    """
    return signatures([prefix])[prefix]


def signatures(prefixes):
    """{prefix: signature(prefix)} for many checkpoints, each folder listed once (os.scandir).

    A checkpoint's files are <prefix>.* and, in the V1 format, the file
    <prefix> itself; one deleted by the trainer's rotation between the
    listing and its stat is left out. A folder that is not there gives ().
    """
    by_folder = collections.defaultdict(dict)  # {folder: {its base names, as the system compares them: prefix}}
    for prefix in prefixes:
        by_folder[os.path.dirname(prefix)][os.path.normcase(os.path.basename(prefix))] = prefix
    found = {prefix: [] for prefix in prefixes}
    for folder, bases in by_folder.items():
        try:
            with os.scandir(folder or os.curdir) as listing:
                entries = [(entry.name, entry.is_file()) for entry in listing]
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name, is_file in entries:
            key = os.path.normcase(name)
            owners = [key[:i] for i, c in enumerate(key) if c == "." and key[:i] in bases]  # <base>.<anything>
            owners += [key] if is_file and key in bases else []  # a V1 checkpoint's one file
            for base in owners:
                try:
                    info = os.stat(os.path.join(folder, name))
                except FileNotFoundError:  # deleted by the trainer's rotation just now
                    continue
                found[bases[base]].append((name, info.st_size, info.st_mtime_ns))
    return {prefix: tuple(sorted(stats)) for prefix, stats in found.items()}


def data_files(prefix):
    """The .data-NNNNN-of-NNNNN files of a checkpoint that exist, and those its shard count expects (sorted lists)."""
    present = sorted(glob.glob(glob.escape(prefix) + ".data-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]"))
    counts = {int(p[-5:]) for p in present} or {1}
    expected = sorted(f"{prefix}.data-{i:05d}-of-{n:05d}" for n in counts for i in range(n))
    return present, expected


def read_checkpoint(prefix):
    """Every tensor of a checkpoint, read and verified: {variable name: numpy array}.

    Source: tf.train.load_checkpoint (TensorFlow's CheckpointReader), whose
    reads check each tensor's CRC32C against the .index. Raises
    CheckpointDamaged (message `<prefix>: checkpoint is damaged (<what>)`)
    when the .index, a .data shard or the .meta is missing, cut short,
    unreadable or fails a checksum; CheckpointGone when its .index is gone
    and a newer checkpoint is there: the trainer's rotation (--keep) is
    deleting it, file by file.
    """
    try:
        return _read_all(prefix)
    except CheckpointDamaged:
        folder = os.path.dirname(prefix) or "."
        if checkpoint_format(prefix) is None and checkpoint_steps(folder, name_of(prefix))[-1:] > [step_of(prefix)]:
            raise CheckpointGone(f"{prefix}: checkpoint was deleted while it was read") from None
        raise


def _read_all(prefix):
    def damaged(what):
        return CheckpointDamaged(f"{prefix}: checkpoint is damaged ({what})")

    name = os.path.basename(prefix)
    if checkpoint_format(prefix) == "V1":
        return _read_v1(prefix)
    if not os.path.exists(prefix + ".index"):
        raise damaged(f"{name}.index is missing")
    present, expected = data_files(prefix)
    missing = [os.path.basename(p) for p in expected if p not in present]
    if missing:
        raise damaged(f"{missing[0]} is missing")
    _check_readable([prefix + ".index"] + present)
    with readable_prefix(prefix) as literal:
        try:
            reader = tf.train.load_checkpoint(literal)
            names = sorted(reader.get_variable_to_shape_map())
        except (tf.errors.OpError, ValueError, IndexError) as e:
            raise damaged(f"{name}.index is unreadable: {first_line(e).replace(literal, prefix)}") from None
        values = {}
        for var in names:
            try:
                values[var] = reader.get_tensor(var)
            except (tf.errors.OpError, ValueError, IndexError) as e:
                data = os.path.basename(expected[0]) if len(expected) == 1 else "a .data file"
                problem = tensor_read_problem(e)
                if problem == "cut short":
                    sizes = ", ".join(f"{os.path.getsize(p):,}" for p in present)
                    raise damaged(f"{data} is cut short ({sizes} bytes): tensor {var!r} lies past its end") from None
                if problem == "checksum":
                    raise damaged(f"{data} fails its checksum at tensor {var!r}") from None
                raise damaged(f"cannot read tensor {var!r}: {first_line(e).replace(literal, prefix)}") from None
    if not _meta_arrives(prefix):
        raise damaged(f"{name}.meta is missing: the save did not finish")
    cut = meta_problem(prefix + ".meta")
    if cut:
        raise damaged(f"{name}.meta {cut}")
    return values


def meta_problem(path):
    """What is wrong with a checkpoint's .meta file `path` (str: "is cut short or damaged (N bytes): ..."), or None
    when it holds a whole graph: a MetaGraphDef that parses, with its graph, its saver and its `variables`
    collection.

    A .meta cut short mid-field fails to parse; one cut between fields parses and lacks what comes after: the
    fields are written in order (graph_def, saver_def, then collection_def by name, `variables` the last of a
    trainer's). Nothing of ours restores from the .meta, but the course's readers (tf.train.import_meta_graph) do.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    graph = tf.MetaGraphDef()
    try:
        graph.ParseFromString(data)
        whole = graph.HasField("graph_def") and graph.HasField("saver_def") and "variables" in graph.collection_def
    except DecodeError:
        whole = False
    return None if whole else f"is cut short or damaged ({len(data):,} bytes): not a whole graph"


def _read_v1(prefix):
    """Every tensor of a V1-format checkpoint (the one file `prefix`): {name: array}; CheckpointDamaged if unreadable.

    Source: tf.train.load_checkpoint, whose reader falls back to the V1
    format (TensorSliceReader) when there is no .index. Its .meta is not
    required: TensorFlow before 1.x wrote none with some savers, and the
    values alone are restored.
    """
    _check_readable([prefix])
    with readable_prefix(prefix) as literal:
        try:
            reader = tf.train.load_checkpoint(literal)
            return {var: reader.get_tensor(var) for var in sorted(reader.get_variable_to_shape_map())}
        except (tf.errors.OpError, ValueError, IndexError) as e:
            raise CheckpointDamaged(f"{prefix}: checkpoint is damaged ({os.path.basename(prefix)}, a V1-format "
                                    f"checkpoint file, is unreadable: {first_line(e).replace(literal, prefix)})") from None


def _check_readable(paths):
    """DataError (not CheckpointDamaged: the files may be whole) for the first of `paths` this process may not read.

    A path that is gone is passed over: os.access says False for it too, but
    its reading then fails as missing (the trainer's rotation deleting it).
    """
    for path in paths:
        if os.path.exists(path) and not os.access(path, os.R_OK):
            raise DataError(f"{path}: cannot read this checkpoint file (permission denied); give yourself "
                            "read access to it, e.g. chmod u+r")


@contextlib.contextmanager
def readable_prefix(prefix):
    """A prefix (str) for TensorFlow's checkpoint readers naming the files of `prefix`, glob characters or not,
    UTF-8 or not.

    TensorFlow's CheckpointReader and Saver.restore match a prefix as a
    glob pattern (`model[1]/mnist_model-300` matches model1/...), and its
    pattern syntax has no escape that its file opening understands. A prefix
    with `*`, `?` or `[` is therefore given to them as links (symbolic, else
    hard, else copies) in a fresh temporary folder, removed on exit; any
    other prefix is given as it is. A prefix whose bytes are not UTF-8
    (cli.not_utf8: a GBK folder name), which TensorFlow's C++ cannot take,
    is given as links too.
    """
    if not glob.has_magic(prefix) and cli.not_utf8(prefix) is None:
        yield prefix
        return
    folder = tempfile.mkdtemp(prefix="mnist_checkpoint_")
    try:
        literal = os.path.join(folder, os.path.basename(prefix))
        for path in glob.glob(glob.escape(prefix) + ".*") + ([prefix] if os.path.isfile(prefix) else []):
            _link(path, literal + path[len(prefix):])
        yield literal
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _link(source, target):
    """Make `target` show the file `source`: a symbolic link, else a hard link, else a copy (Windows without rights)."""
    for make in (lambda: os.symlink(os.path.abspath(source), target), lambda: os.link(source, target),
                 lambda: shutil.copyfile(source, target)):
        try:
            make()
            return
        except OSError:
            continue
    raise CheckpointGone(f"{source}: checkpoint file could not be read (it went while it was read)")


def _meta_arrives(prefix):
    """True when prefix.meta exists, or appears within META_WAIT_SECS of a save that is still fresh."""
    deadline = time.monotonic() + META_WAIT_SECS
    while not os.path.exists(prefix + ".meta"):
        try:
            fresh = time.time() - os.path.getmtime(prefix + ".index") < FRESH_SECS
        except OSError:
            return False
        if not fresh or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def being_saved(prefix):
    """True when prefix looks like a save still running: no .index yet, and a file of it written less than
    FRESH_SECS ago (the trainer's first save, before any `checkpoint` index file names a checkpoint)."""
    if os.path.exists(prefix + ".index") or os.path.isfile(prefix):
        return False
    times = [os.path.getmtime(p) for p in glob.glob(glob.escape(prefix) + ".*") if os.path.exists(p)]
    return bool(times) and time.time() - max(times) < FRESH_SECS


def intact_before(model_dir, prefix):
    """The newest checkpoint in model_dir older than prefix that reads whole, or None."""
    name = name_of(prefix)
    for step in reversed(checkpoint_steps(model_dir, name)):
        if step < step_of(prefix):
            try:
                read_checkpoint(prefix_of(model_dir, step, name))
                return prefix_of(model_dir, step, name)
            except DataError:
                continue
    return None


def damaged_hint(model_dir, prefix):
    """How to go on when prefix is damaged: the newest intact checkpoint and how to use it (str)."""
    older = intact_before(model_dir, prefix)
    files = f"{prefix}.*"
    if older is None:
        return f"no intact checkpoint is left in {model_dir}; move {files} away and train again"
    return f"the newest intact checkpoint is {older}: move {files} out of {model_dir} to use it"


def first_non_finite(values):
    """The name of the first (sorted) floating-point array in {name: array} holding a NaN or an infinity, or None."""
    for name in sorted(values):
        value = np.asarray(values[name])
        if value.dtype.kind in "fc" and not np.isfinite(value).all():
            return name
    return None


def check_finite(prefix, stored):
    """Raise NotFinite when a checkpoint's tensors hold a NaN or an infinity: weights of a training that diverged.

    stored: {name: array}, the checkpoint as read_checkpoint (read_or_hint)
    returned it. The evaluator, the app and the exporter call this once on
    what they read, so that NaN weights are never scored, applied or
    published. The message names the checkpoint and the first bad variable.
    """
    bad = first_non_finite(stored)
    if bad is not None:
        value = np.asarray(stored[bad])
        count = int(np.size(value) - np.isfinite(value).sum())
        raise NotFinite(f"{prefix}: checkpoint holds non-finite values ({bad!r}: {count} of {np.size(value)} "
                        f"are NaN or infinite), so its training diverged; use an earlier checkpoint, or train "
                        f"again with a lower LEARNING_RATE_BASE")


def check_variables(prefix, stored, var_list):
    """Raise DataError unless a checkpoint's tensors fit the variables about to be restored.

    stored: {name: array} from read_checkpoint; var_list: {name in checkpoint:
    variable}, as given to tf.train.Saver. The message names the checkpoint
    and the first missing variable or shape mismatch (for example a
    checkpoint of a network with another hidden-layer size).
    """
    if not any(name in stored for name in var_list):
        original = course_original(prefix, stored)
        if original is not None:
            raise original
    for name, var in sorted(var_list.items()):
        want = var.shape.as_list()
        if name not in stored:
            raise DataError(f"{prefix}: checkpoint of another graph: it has no variable {name!r}")
        if list(stored[name].shape) != want:
            raise DataError(f"{prefix}: checkpoint of another graph: {name} is {list(stored[name].shape)} there, "
                            f"{want} here")


def course_original(prefix, stored):
    """The CourseOriginal for checkpoint `prefix` when its variables (stored: {name: array}, or names) are the
    unnamed ones of the course's original code (networks.course_original), else None: what it is and what to do,
    where `checkpoint of another graph: it has no variable 'b1/ExponentialMovingAverage'` said a graph was
    another that is the same, and `holds no network this project knows` (a learn) said it knew none."""
    network = networks.course_original(stored)
    if network is None:
        return None
    return CourseOriginal(
        f"{prefix}: a checkpoint of the course's original code ({network.name}), whose variables have no names "
        f"('Variable', 'Variable_1', ...); this project restores them by name ({', '.join(network.variables[:2])}, "
        f"...): train it again here, in a new folder: `{cli.command(network.train_script, '--model-dir', NEW_FOLDER)}`")


@contextlib.contextmanager
def restoring(prefix, var_list, stored=None):
    """Around the course's `saver.restore(sess, path)`: yields the path to give it, after checking the checkpoint.

    prefix: the checkpoint (e.g. model/mnist_model-2000, from latest());
    var_list: the Saver's {name in checkpoint: variable} (e.g.
    ExponentialMovingAverage.variables_to_restore()); stored: what
    read_checkpoint(prefix) returned, when the caller has read it already.
    Before the body runs, the checkpoint is read whole and verified, and its
    tensors must fit var_list (check_variables). The path yielded names the
    same files with no glob characters (readable_prefix), as TensorFlow's
    Saver matches a path as a pattern. Raises DataError for a checkpoint of
    another graph, CheckpointDamaged when it cannot be read, CheckpointGone
    when the trainer's rotation deleted it before or while the body read it.
    """
    if stored is None:
        stored = read_checkpoint(prefix)
    check_variables(prefix, stored, var_list)
    with readable_prefix(prefix) as literal:
        try:
            yield literal
        except (tf.errors.OpError, ValueError) as e:
            if checkpoint_format(prefix) is None:  # its files went between the check and the restore
                raise CheckpointGone(f"{prefix}: checkpoint was deleted while it was read") from None
            raise CheckpointDamaged(f"{prefix}: checkpoint is damaged "
                                    f"({first_line(e).replace(literal, prefix)})") from None


Found = collections.namedtuple("Found", "prefix stored network")
Found.__doc__ = """A checkpoint to restore: its `prefix`, its tensors read whole ({name: array}), the networks.Network it
holds, whose forward module (network.forward) the caller imports to build the graph."""


def newest(model_dir, network, caller, default_dir=None, flags=(), name=MODEL_NAME):
    """The one restore's first half, for the app and the exporter: model_dir's newest checkpoint as a Found.

    Read whole and checked (checked()); the course's Saver,
    variables_to_restore and restore follow in the caller, inside
    restoring(). network: the caller's own network (its default folder's),
    named in the hint when the folder does not say which it holds. caller:
    the script's file name (places.APP, places.EXPORTER), for what a path
    one level off is named with. default_dir, flags: see no_checkpoint.
    name: the checkpoints' name when the folder does not tell it
    (checkpoint_name; the trainer's MODEL_NAME).
    Raises DataError: no checkpoint (no_checkpoint: NoCheckpoint, or what
    the path holds instead), a damaged one (naming the newest intact one),
    one with NaN weights (NotFinite); a model folder's own history/ or learns/ (places.part_given: the model
    folder named).
    """
    places.refuse_part(model_dir)
    prefix = latest(model_dir, checkpoint_name(model_dir, name))
    if prefix is None:
        raise no_checkpoint(model_dir, network, caller, default_dir, flags)
    return checked(model_dir, prefix, network)


def checked(model_dir, prefix, network, script=None):
    """The Found for checkpoint `prefix` of model_dir: read whole, finite, its network read from the folder.

    network: the caller's own, taken when the folder names none. script:
    None takes any network (the app, the exporter); "test_script" refuses
    one that has an evaluator of its own (networks.check_network). Raises
    CheckpointDamaged (with the newest intact one in the hint),
    CheckpointGone (deleted while read), NotFinite, DataError.
    """
    stored = read_or_hint(model_dir, prefix)
    check_finite(prefix, stored)  # NaN weights of a diverged training are never scored, applied or exported
    found = folder_network(model_dir, stored) or network
    if script is not None:
        networks.check_network(prefix, found, network, script)
    elif networks.same(found, network):  # the app, the exporter: their own network at other sizes is no graph here
        networks.check_layers(prefix, found, network)
    if importlib.util.find_spec(found.forward) is None:  # imported by the caller: a course script, or one beside it
        raise DataError(f"{prefix}: {found.name}'s forward module {found.forward}.py is not on the module path; "
                        "put the folder that holds it on PYTHONPATH (with the course's folder, for its trainer)")
    return Found(prefix, stored, found)


def no_such(prefix, shown=5):
    """The DataError for a checkpoint prefix that is not there (`--checkpoint model/mnist_model-1000`): with the
    checkpoints of that name its folder holds, the newest `shown` (a trainer's --keep rotation deletes all but its
    newest 5; a step mistyped), `model/mnist_model-1000: no such checkpoint (no mnist_model-1000.index there);
    model holds mnist_model-4000, ... and mnist_model-8000`."""
    line = f"{prefix}: no such checkpoint (no {os.path.basename(prefix)}.index there)"
    folder, name = os.path.dirname(prefix) or os.curdir, folders.name_of(prefix)
    steps = checkpoint_steps(folder, name)
    if not steps:
        return DataError(line)
    held = cli.in_words([os.path.basename(prefix_of(folder, step, name)) for step in steps[-shown:]])
    return DataError(f"{line}; {folder} holds {'' if len(steps) <= shown else f'{len(steps)}, the newest '}{held}")


def no_checkpoint(model_dir, network, caller, default_dir=None, flags=()):
    """The DataError for a --model-dir without a checkpoint: what it holds instead, or `train first with`.

    A path one level off (an exports folder, a SavedModel given to the
    evaluator or the exporter, a checkpoint's file) is named with what to
    give instead (places.misplaced, for the script `caller`). A folder that
    is not there and is no trainer's default folder (a typo: `modle`) is
    named as not there (not_there). Else a NoCheckpoint naming the trainer
    of the network the folder records (a folder whose checkpoints were all
    deleted), else of the one its checkpoint files show (folders.files_network:
    its history/ snapshots, learns/<n>/, a copy without its record), else of
    the network whose trainer writes that folder by default
    (networks.trained_into: model_lenet5 is LeNet-5's), else of `network`; the
    command keeps --model-dir when model_dir is not default_dir (None:
    always) and the user's other `flags` (cli.kept's), so that the hint,
    followed as written, trains into the folder named. An evaluator (caller:
    `network`'s test_script) asked about the other network's folder is told
    that network's evaluator too (`..., then score it with `python
    mnist_lenet5_test.py`, not mnist_test.py`).
    """
    misplaced = places.misplaced(model_dir, caller)
    if misplaced is not None:
        return misplaced
    if os.path.isfile(model_dir):  # a picture or a label file given as --model-dir
        return a_file(model_dir, caller)
    data = data_held(model_dir)
    if data:  # `--model-dir data`: a trainer's hint would have it train into the data folder
        default = f" (default {os.path.normpath(default_dir)})" if default_dir else ""
        return NoCheckpoint(f"{model_dir}: no checkpoint found; it holds {data}: a data folder, not a model folder; "
                            f"give --model-dir the folder a trainer saved its checkpoints into{default}")
    found = network_of(model_dir)
    if found is None and not os.path.isdir(model_dir) and (
            default_dir is None or os.path.normpath(model_dir) != os.path.normpath(default_dir)):
        return NoCheckpoint(not_there(model_dir, caller == places.APP))  # a typo (`modle`), not a model to train
    chosen, scorer = found or network, None
    if chosen.train_script != network.train_script:  # another network's folder (model_lenet5): its own trainer
        # and, asked by an evaluator (caller: its test_script), its own evaluator, which scores it once trained
        scorer = chosen.test_script if caller == network.test_script != chosen.test_script else None
        network, default_dir = chosen, networks.default_folder(chosen)
    kept = ["--model-dir", model_dir] if default_dir is None else cli.kept("--model-dir", model_dir, default_dir)
    there = holds_instead(model_dir)
    return NoCheckpoint(f"{model_dir}: no checkpoint found{f', {there}' if there else ''}; train first with "
                        f"`{cli.command(network.train_script, *kept, *flags)}`"
                        + (f", then score it with `{cli.command(scorer, *kept, *flags)}`, not {caller}" if scorer
                           else ""))


def network_of(model_dir):
    """The network (networks.Network) a hint takes model_dir for, with or without a checkpoint: the one its record
    declares, else the one its checkpoint files show (folders.files_network), else the one whose trainer writes a
    folder of that name by default (networks.trained_into: model_lenet5 is LeNet-5's); None when none says."""
    return folder_network(model_dir) or folders.files_network(model_dir) or networks.trained_into(model_dir)


def recorded_elsewhere(model_dir, network, script, name=MODEL_NAME):
    """Raise networks.check_network's DataError at once, before TensorFlow's import, when model_dir's record
    (folders.FOLDER_FILE) declares another network than `network` and the folder holds a checkpoint named `name`
    (its newest named, from a listing: `model_lenet5/mnist_model-2000: this checkpoint holds LeNet-5, not the
    784-500-10 network; use mnist_lenet5_test.py, ...`). script: "train_script" or "test_script". A folder
    without a record, or not there, passes: the checkpoint's own names are checked when it is read."""
    steps = checkpoint_steps(model_dir, name) if os.path.isdir(model_dir) else []
    if steps:
        networks.check_network(prefix_of(model_dir, steps[-1], name), folder_network(model_dir), network, script)


def scored_by_another(model_dir, network):
    """The evaluator script (file name) of model_dir's network (network_of) when it is not `network`'s own (an
    evaluator that would refuse the folder's checkpoints: mnist_test.py on model_lenet5), else None."""
    found = network_of(model_dir)
    return found.test_script if found is not None and found.test_script != network.test_script else None


SUMMARIES = "events.out.tfevents.*"  # TensorBoard's summary files, which a trainer writes into <model_dir>/train/


def holds_instead(model_dir):
    """What a folder with no checkpoint holds that a user may take for one, for a hint's "no checkpoint found, <it>"
    ("" for an empty folder, or one that is not there): TensorBoard's summaries ("only TensorBoard's summaries
    (train/)": a training stopped before its first save, or its checkpoints deleted), an index naming checkpoint
    files that are gone ("an index naming mnist_model-1000, whose files are not there")."""
    if not os.path.isdir(model_dir):
        return ""
    named = folders.indexed_prefix(model_dir) if os.path.isfile(os.path.join(model_dir, folders.INDEX_FILE)) else None
    summaries = sorted(name + "/" for name in os.listdir(model_dir) if glob.glob(
        os.path.join(glob.escape(os.path.join(model_dir, name)), SUMMARIES)))
    said = [f"an index naming {os.path.basename(named)}, whose files are not there"] if named else []
    if summaries:
        said.append(f"{'' if said else 'only '}TensorBoard's summaries ({', '.join(summaries)})")
    return ", and ".join(said)


def trainer_of(model_dir, network=networks.MLP):
    """The trainer script (file name) a hint names for model_dir: its network's (network_of: the record's, else its
    checkpoint files', else the one whose trainer writes a folder of that name by default), else `network`'s."""
    return (network_of(model_dir) or network).train_script


def close_folders(model_dir):
    """The folders beside model_dir (str, a path) whose names are close to its name (cli.close_paths, at most 3):
    what a typo (`modle`) may have meant (`model`), each as model_dir's parent joined with the name."""
    return cli.close_paths(model_dir, os.path.isdir)


def not_there(model_dir, exports=False):
    """The line for a --model-dir that is not there (a typo, `modle`): the folder named, and the folders beside
    it whose names are close to it (close_folders): `modle: no such folder; did you mean model?`. exports: a
    .tflite file beside it is offered too (mnist_app.py takes one: `export/mnist.tfilte` means
    export/mnist.tflite, not the SavedModel folder export/mnist)."""
    close = close_folders(model_dir)
    if exports:
        files = cli.close_paths(model_dir, places.a_tflite_file)
        typed, found = os.path.basename(model_dir), files + close
        # the same stem first (a mistyped suffix), then a file for a name with an extension, a folder for one without
        close = sorted(found, key=lambda p: (cli.stem(os.path.basename(p)) != cli.stem(typed),
                                             os.path.isfile(p) != ("." in typed), found.index(p)))[:3]
    said = "not found" if close and os.path.isfile(close[0]) else "no such folder"  # a .tflite meant: a file
    return f"{model_dir}: {said}; " + (cli.did_you_mean(model_dir, close=close)
                                      or "give the folder that holds the checkpoints")


def typo_of(typed, name):
    """True when the folder name `typed` (str) looks like a slip of the keys for `name`, not a name of its own: at
    most one edit apart (a letter changed, added, dropped, or two swapped: `modle`, `mdoel`, `mdel`; two for
    names of 8 letters or more), and not `name` with anything added at its end, nor cut short (`models`, `model2`,
    `model_async`: a second model named on purpose), nor `name` with other digits (`model_lenet4`)."""
    shorter, longer = sorted((typed, name), key=len)
    if longer.startswith(shorter) or re.sub(r"\d", "0", typed) == re.sub(r"\d", "0", name):
        return False
    return 0 < cli.slips(typed, name) <= (2 if len(longer) >= 8 else 1)


def path_typo_of(typed, path):
    """True when the path `typed` (str) looks mistyped for `path`, a path close_paths spelled from it: as many
    names, and each either the same or a slip of the keys for the other's (typo_of): `modle` for model,
    `rnus/model` for runs/model; not `runs2/model` (a name of its own)."""
    one, other = os.path.normpath(typed).split(os.sep), os.path.normpath(path).split(os.sep)
    return len(one) == len(other) and one != other and all(a == b or typo_of(a, b) for a, b in zip(one, other))


def new_folder_typo(model_dir, meant="start a new model there"):
    """For a trainer (and the evaluator's watch, the board's --keep-dir): the one-line refusal of a folder that is
    not there while a folder beside it has a name it looks mistyped from (close_folders, then typo_of: `modle`
    beside `model`, a typo that would silently start a new model; `my_digts` beside my_digits/), else None. Any
    folder counts, whatever it holds: a model/ made by hand and still empty is the folder meant as much as a
    trained one. The way on for what was `meant` there (a trainer's new model, the evaluator's watch of one to
    come): make the folder first. A folder on the way counts too (`rnus/model` beside runs/model: path_typo_of)."""
    if os.path.lexists(model_dir):
        return None
    beside = close_folders(model_dir)
    close = [folder for folder in beside if path_typo_of(model_dir, folder)]
    if not close:
        return None
    parent = os.path.dirname(os.path.normpath(model_dir))
    mkdir = "mkdir -p" if parent and not os.path.isdir(parent) and os.name != "nt" else "mkdir"  # its folders too
    return (f"{model_dir}: no such folder; {cli.did_you_mean(model_dir, close=close)} (to {meant}, "
            f"make the folder first: {mkdir} {cli.quoted(model_dir)})")


def data_held(folder, shown=3, pictures=True):
    """What data a folder without checkpoints holds (str, for a line), or "": its TFRecord files (`TFRecord files
    (mnist_test.tfrecords and mnist_train.tfrecords)`), else its pictures (`pictures (one.png, two.jpg, ...)`;
    pictures=False: TFRecord files only), at most `shown` named; "" for a folder holding neither, not there, or
    that cannot be listed."""
    from . import images  # imported here: images imports records, which the evaluator need not load for this
    if not os.path.isdir(folder):
        return ""
    try:
        kinds = (("TFRecord files", sorted(name for name in os.listdir(folder) if name.endswith(".tfrecords")
                                           and not name.startswith("."))),
                 ("pictures", sorted(os.path.basename(path) for path in images.pictures_in(folder))
                  if pictures else []))
    except OSError:
        return ""
    for what, names in kinds:
        if names:
            listed = cli.in_words(names) if len(names) <= shown else ", ".join(names[:shown]) + " ..."
            return f"{what} ({listed})"
    return ""


def into_data(model_dir, default_dir):
    """For a trainer (mnist_backward.py, mnist_lenet5_backward.py, a cluster's workers): the DataError refusing a
    --model-dir that would put checkpoints among the training data, else None. It is refused when it holds data
    (data_held: TFRecord files or pictures, `--model-dir data`), or lies inside a folder holding TFRecord files
    (`--model-dir data/model`): of the folders on its way, those inside the current folder are looked at (the
    folders the user's path names, not the temporary folder a learn's staging is in). default_dir: the trainer's
    default folder, named as the way on. No TensorFlow: said before its import, nothing written."""
    way_on = f"give --model-dir a folder of its own for the checkpoints (default {os.path.normpath(default_dir)})"
    held = data_held(model_dir)
    if held:
        return DataError(f"{model_dir}: it holds {held}: a data folder, not a model folder; {way_on}")
    here, folder = os.path.abspath(os.curdir), os.path.dirname(os.path.abspath(model_dir))
    while folder.startswith(here + os.sep):
        held = data_held(folder, pictures=False)
        if held:
            shown = os.path.relpath(folder) if not os.path.isabs(model_dir) else folder
            return DataError(f"{model_dir}: inside the data folder {shown}, which holds {held}; {way_on}, "
                             "not inside it")
        folder = os.path.dirname(folder)
    return None


def a_file(model_dir, caller):
    """The NoCheckpoint for a --model-dir that is a file (a picture, a label file), not a folder: the folder to give
    instead (for caller places.APP, an export too)."""
    return NoCheckpoint(f"{model_dir} is a file, not a model folder: give the folder holding the checkpoints"
                        + (" (or an export: a .tflite file, a SavedModel folder)" if caller == places.APP else ""))


def read_or_hint(model_dir, prefix):
    """read_checkpoint(prefix), with a damaged checkpoint's CheckpointDamaged naming the newest intact one
    (damaged_hint); CheckpointGone as read_checkpoint raises it."""
    try:
        return read_checkpoint(prefix)
    except CheckpointDamaged as e:
        raise CheckpointDamaged(f"{e}; {damaged_hint(model_dir, prefix)}") from None

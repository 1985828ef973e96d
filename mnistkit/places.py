"""What a --model-dir holds, for the one line a script says when it finds no checkpoint there.

A path one level off is the usual mistake: the export folder instead of a
SavedModel in it, a SavedModel's variables/ folder or saved_model.pb
instead of its version folder, a SavedModel given to mnist_test.py or to
mnist_export.py, a checkpoint's file instead of its folder, the project
folder instead of its model/. holding() names what a path is (the one
place that knows the names of what the scripts write: checkpoint files,
SavedModels, .tflite files); misplaced() is the error mnist_test.py,
mnist_app.py and mnist_export.py raise (through checkpoints.no_checkpoint)
when --model-dir holds no checkpoint but something one level off.
"""
import collections
import os

from . import cli, files
from .errors import DataError
from .export import EXPORT_DIR, is_tflite, versions
from .folders import ANY_CHECKPOINT_FILE, CHECKPOINT_FILE, INDEX_FILE, has_checkpoints  # a model folder's names
from .folders import HISTORY_FOLDER, LEARNS_FOLDER  # a model folder's own folders of checkpoints

SAVED_MODEL_FILE = "saved_model.pb"
VARIABLES_FOLDER = "variables"
APP, EXPORTER = "mnist_app.py", "mnist_export.py"


Holding = collections.namedtuple("Holding", "kind what give")
Holding.__doc__ = """What a path is. kind: "checkpoints" (a checkpoint folder), "saved_model" (a SavedModel
version folder or a base path of versions), "tflite" (a .tflite file), or "off" (one level off what
the scripts read: an exports folder, a SavedModel's variables/ or saved_model.pb, a checkpoint's file,
a folder of checkpoint folders); what: the words after the path in a message ("is a SavedModel");
give: the paths to give instead, for the app (for "off"), else [path]."""


def holding(path):
    """The Holding of path, or None when it holds none of these (nothing there, an empty or other folder)."""
    path = str(path)
    if os.path.isfile(path):
        return _file_holding(path)
    if not os.path.isdir(path):
        return None
    parent = os.path.dirname(os.path.normpath(path))
    if os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)):
        return Holding("saved_model", "is a SavedModel", [path])
    if os.path.basename(os.path.normpath(path)) == VARIABLES_FOLDER and is_version(parent):
        return Holding("off", f"is the variables folder of the SavedModel {parent}", [parent])
    if any(is_version(os.path.join(path, str(v))) for v in versions(path)):
        return Holding("saved_model", f"holds SavedModel versions ({', '.join(map(str, versions(path)))})", [path])
    part = model_part(path)
    if part is not None:  # a model folder's history/ or learns/: the model is its folder, not they
        return part
    if has_checkpoints(path):
        return Holding("checkpoints", "holds checkpoints", [path])
    return _folder_holding(path)


def model_part(path):
    """The Holding of a folder of a model folder's own that holds checkpoints (its history/ snapshots, its learns/
    and a set-aside learn learns/<n>/), with the model folder to give (give: [the folder above]), or None.

    kind "checkpoints" for history/ and learns/<n>/ (a script reading a checkpoint folder may read them, as
    before), "off" for learns/ (one level above its learns' checkpoints); what says what the folder is:
    `holds the history snapshots of the model folder model (mnist_backward.py --history)`.
    """
    folder = os.path.normpath(path)
    parent, name = os.path.split(folder)
    above, parent_name = os.path.split(parent)
    if name == HISTORY_FOLDER and has_checkpoints(folder):
        return Holding("checkpoints", f"holds the history snapshots of the model folder {parent or os.curdir} "
                       "(mnist_backward.py --history)", [parent or os.curdir])
    if parent_name == LEARNS_FOLDER and name.isdecimal() and has_checkpoints(folder):
        return Holding("checkpoints", f"holds learn {name}'s checkpoint, set aside by mnist_learn.py, of the model "
                       f"folder {above or os.curdir}", [above or os.curdir])
    if name == LEARNS_FOLDER and any(n.isdecimal() and has_checkpoints(os.path.join(folder, n))
                                     for n in files.listing(folder)):
        return Holding("off", f"holds the learns' checkpoints mnist_learn.py set aside for the model folder "
                       f"{parent or os.curdir}", [parent or os.curdir])
    return None


def part_given(path):
    """The DataError for a --model-dir that is a model folder's own history/, learns/ or learns/<n>/ (model_part), or
    None: every script names the model folder instead (`model/history holds the history snapshots of the model
    folder model (...): give model`), where a trainer wrote into the snapshots, the app and the board served one,
    and the evaluator took the snapshots' missing .meta for a damaged checkpoint. Lists folders only: no TensorFlow."""
    part = model_part(path)
    return None if part is None else DataError(f"{path} {part.what}: give {either(part.give)}")


def refuse_part(path):
    """Raise part_given(path)'s DataError, if any: the check each script makes of its --model-dir before
    TensorFlow's import."""
    part = part_given(path)
    if part is not None:
        raise part


def _file_holding(path):
    folder, name = os.path.split(path)
    if is_tflite(name):
        return Holding("tflite", "is a LiteRT (.tflite) file", [path])
    if name == SAVED_MODEL_FILE:
        return Holding("off", f"is the graph file of the SavedModel {folder or os.curdir}", [folder or os.curdir])
    if os.path.basename(folder) == VARIABLES_FOLDER and is_version(os.path.dirname(folder)):
        version = os.path.dirname(folder)
        return Holding("off", f"is a file of the SavedModel {version}", [version])
    match = CHECKPOINT_FILE.match(name) or ANY_CHECKPOINT_FILE.match(name)
    if match or (name == INDEX_FILE and has_checkpoints(folder or os.curdir)):
        what = (f"a file of the checkpoint {os.path.join(folder, name[:match.end('step')])}" if match
                else "the index file of a checkpoint folder")
        return Holding("off", f"is {what}", [folder or os.curdir])
    return None


def _folder_holding(path):
    """The Holding of a folder that holds exports or checkpoint folders (one level above them), or None."""
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return None
    inside = [os.path.join(path, n) for n in names]
    exports = [p + " (SavedModel)" for p in inside if any(is_version(os.path.join(p, str(v))) for v in versions(p))]
    exports += [p for p in inside if a_tflite_file(p)]
    if exports:
        return Holding("off", "holds exports", exports)
    models = [p for p in inside if os.path.isdir(p) and has_checkpoints(p)  # a model folder's own snapshots: not one
              and os.path.basename(p) != HISTORY_FOLDER]
    if models:
        return Holding("off", "holds checkpoint folders", models)
    return None


def a_tflite_file(path):
    """True when `path` (str) is a LiteRT file mnist_export.py writes (a file ending in TFLITE_SUFFIX): what a
    mistyped .tflite name is offered (cli.did_you_mean's wanted)."""
    return is_tflite(path) and os.path.isfile(path)


def is_version(folder):
    """True when folder is a SavedModel version folder (it holds saved_model.pb)."""
    return os.path.isfile(os.path.join(folder, SAVED_MODEL_FILE))


def either(paths):
    """'a', 'a or b', 'a, b or c' (str) of a list of paths."""
    return paths[0] if len(paths) == 1 else ", ".join(paths[:-1]) + " or " + paths[-1]


def misplaced(model_dir, script):
    """The DataError for a --model-dir that holds something `script` does not read, or None.

    script: "mnist_test.py" (or mnist_lenet5_test.py) and "mnist_export.py"
    read checkpoint folders; "mnist_app.py" also SavedModels and .tflite
    files. For example `export holds exports: give export/mnist (SavedModel)
    or export/mnist.tflite`, or `mnist_test.py scores checkpoints;
    export/mnist/1 is a SavedModel: give the checkpoint folder, or use the
    app`.
    """
    found = holding(model_dir)
    if found is None or found.kind == "checkpoints" or (script == APP and found.kind != "off"):
        return None
    if script == APP or found.kind == "off" and "checkpoint" in found.what:
        return DataError(f"{model_dir} {found.what}: give {either(found.give)}")
    if script == EXPORTER:
        return DataError(f"{script} exports checkpoints; {model_dir} {found.what} (written by {EXPORTER}): "
                         f"give the checkpoint folder it was exported from")
    app = cli.command(APP, "--model-dir", found.give[0].split(" (")[0], "PICTURE")
    return DataError(f"{script} scores checkpoints; {model_dir} {found.what}: give the checkpoint folder, "
                     f"or use the app: `{app}`")


def export_given(path, flag):
    """The DataError for a folder of the exporter's given where checkpoints are written or exports are made, or None.

    flag "--model-dir" (a trainer, a learn and its undo): path is a
    SavedModel (a version folder or a base path of versions), a .tflite
    file, or a SavedModel's variables/ or saved_model.pb: a trainer would
    write checkpoints into what TF Serving serves, and a learn hint to do so;
    also a folder of exports (export/).
    flag "--export-dir" (mnist_export.py): path holds checkpoints (a model
    folder, its history/ or learns/), which the exporter never writes into
    (docs/deploy.md); or path is a SavedModel version folder or base path,
    or a variables/ folder, where the next export would nest
    (export/mnist/mnist/1) instead of coming as the next version: the
    export folder meant, the one above the base path, is named.
    """
    found = holding(path)
    if flag == "--export-dir" and found is not None and (found.kind == "checkpoints" or model_part(path)):
        return DataError(f"{path} {found.what}: {EXPORTER} writes nothing into a model folder; give --export-dir a "
                         f"folder of the exports' own (the default is {os.path.normpath(EXPORT_DIR)})")
    if found is None or found.kind == "checkpoints" or "checkpoint" in found.what:
        return None
    if flag == "--model-dir" and (found.kind != "off" or "SavedModel" in found.what or found.what == "holds exports"):
        return DataError(f"{path} {found.what} (written by {EXPORTER}), not a checkpoint folder: give the checkpoint "
                         f"folder it was exported from (--model-dir)")
    if flag != "--export-dir" or found.kind == "tflite" or found.what == "holds exports":
        return None
    version = found.give[0] if found.kind == "off" else os.path.normpath(path)
    base = os.path.dirname(version) if is_version(version) else version
    meant = os.path.dirname(os.path.normpath(base)) or os.curdir
    return DataError(f"{path} {found.what}, inside the export folder {meant}: give --export-dir {meant} (the "
                     f"exporter makes {os.path.join(meant, '<name>', '<N>')} inside it itself)")

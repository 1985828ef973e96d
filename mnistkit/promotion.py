"""Model promotion and rollback: which of a model folder's checkpoints is in service after its learns.

A learn (mnistkit.learn) ends by giving its checkpoint to this module's
gate and record. The gate (judge): a learned checkpoint is promoted only
when no digit's recall or precision fell more than RECALL_DROP and the
accuracy no more than ACCURACY_DROP (points, not parts of the value);
else it is held in learns/<n>/ until accept() puts it in service or
discard() removes it (mnist_learn.py --accept-worse, --discard; the
board's "use it anyway" and "discard"). undo() rolls the last promoted
learn back into its own learns/<n>/, redo() brings the last undone one
in again (bring_in): no checkpoint is ever written over, and both
refuse, naming it, when the folder trained further since (moved_on), so
no trained work leaves service without a word; redo refuses a set-aside
checkpoint whose files are not all there (missing_files), and both one
that does not read whole (damaged). Every change
is one folders.change (all or nothing) under the folder's lock
(one_at_a_time: across the board's threads and processes). standing()
says where a folder's learns stand (the page's undo/redo/held buttons);
unknown() how many changes to the kept digits the model in service does
not know (each learn records the ones it learned: known_of). The
history itself is the folder record's (learn_history, here).
"""
import collections
import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import threading
import time

from . import checkpoints, cli, files, folders, keep, places
from .errors import DataError

RECALL_DROP = 0.02  # a digit's recall on the test records may fall this much (2 points) before a learn is held
ACCURACY_DROP = 0.005  # and the accuracy this much (0.5 points)


# ---------------------------------------------------------------- the gate


MEASURES = ("recall", "precision")  # each digit's, in the check; each may fall RECALL_DROP at most


def learn_history(model_dir, record=None, strict=False):
    """(learns, redo) of model_dir: its record's LEARNS, the learns in it oldest first (dicts, mnistkit.learn's), and
    REDO, the numbers of the learns an undo took back, the next to redo last; ([], []) when none (folders.LEARNS,
    folders.REDO: the record is folders.FOLDER_FILE).

    A folder learned into by an earlier version holds OLDER_LEARNS_FILE
    instead: its {"before", "after"} pairs are read as learns 1, 2, ...,
    each promoted. record: model_dir's record as folders.folder_record
    read it, when the caller has. An entry of the wrong shape (a hand edit:
    learn_problem) is left out; strict: it, a record that cannot be read
    or a redo list of the wrong shape raises DataError naming the file and
    the entry (undo, redo, a learn: they would rewrite the history).
    """
    record = folders.folder_record(model_dir, strict) if record is None else record
    learns, redo = record.get(folders.LEARNS), record.get(folders.REDO)
    if strict:
        wrong = history_problem(learns, redo)
        if wrong:
            raise DataError(f"{os.path.join(model_dir, folders.FOLDER_FILE)}: {wrong}; correct it (or put back a "
                            "copy) and try again; nothing changed")
    if isinstance(learns, list):
        return [e for e in learns if not learn_problem(e)], [n for n in redo or () if _counted(n)]
    try:
        with open(os.path.join(model_dir, folders.OLDER_LEARNS_FILE), encoding="utf-8") as f:
            older = json.load(f)
    except (OSError, ValueError):
        return [], []
    return [{"learn": n, "before": e["before"], "after": e["after"], "state": "promoted"}
            for n, e in enumerate(older if isinstance(older, list) else [], 1)
            if isinstance(e, dict) and isinstance(e.get("before"), str) and isinstance(e.get("after"), str)], []


LEARN_STATES = ("promoted", "held", "undone", "discarded")  # a learn entry's states (mnistkit.promotion)
_NAME = re.compile(r"[^/\\:]+-\d+")  # a checkpoint's name in the model folder: no folder in it


def _counted(n):
    return isinstance(n, int) and not isinstance(n, bool) and n >= 1


def _shown(value):
    """A value of a hand-edited record as a line shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def learn_problem(entry):
    """What is wrong with one learn entry of the record (str), or None: a dict whose "learn" is a number >= 1, its
    "state" one of LEARN_STATES, its "before" and "after" checkpoint names in the folder; its "options" (with
    "before" and "after"), "settings" and "check" objects, and "files" names, when there."""
    if not isinstance(entry, dict):
        return f"is a JSON {type(entry).__name__}, not an object"
    if "learn" in entry and not _counted(entry["learn"]):
        return f"has learn {_shown(entry['learn'])}, not a number from 1"
    if entry.get("state") not in LEARN_STATES:
        return f"has state {_shown(entry.get('state'))}, not one of {', '.join(LEARN_STATES)}"
    for key in ("before", "after"):
        if not isinstance(entry.get(key), str) or not _NAME.fullmatch(entry[key]):
            return f"has {key} {_shown(entry.get(key))}, not a checkpoint's name in the folder (mnist_model-2000)"
    for key in ("options", "settings", "check"):
        if not isinstance(entry.get(key, {}), dict):
            return f"has {key} {_shown(entry[key])}, not an object"
    if not all(isinstance(entry.get("options", {}).get(k, {}), dict) for k in ("before", "after")):
        return f"has options {_shown(entry['options'])}, not objects before and after"
    if not isinstance(entry.get("changed", 0), (int, float)) or isinstance(entry.get("changed"), bool):
        return f"has changed {_shown(entry['changed'])}, not a time"
    files_ = entry.get("files", [])
    if not isinstance(files_, list) or not all(isinstance(n, str) and _NAME.match(n) and "/" not in n
                                               and "\\" not in n for n in files_):
        return f"has files {_shown(files_)}, not a checkpoint's file names"
    return None


def history_problem(learns, redo):
    """What is wrong with a record's learn history (folders.LEARNS, folders.REDO as read), in words, or None."""
    if learns is None and redo is None:
        return None
    if not isinstance(learns, list):
        return f"its {folders.LEARNS!r} is {_shown(learns)}, not a list of learns"
    for n, entry in enumerate(learns, 1):
        wrong = learn_problem(entry)
        if wrong:
            return f"its learn entry {n} (of {len(learns)}) {wrong}"
    numbers = [e["learn"] for e in learns if "learn" in e]
    if len(set(numbers)) != len(numbers):
        return f"two learn entries have the number {max(numbers, key=numbers.count)}"
    if redo is not None and (not isinstance(redo, list) or not all(_counted(n) and n in numbers for n in redo)):
        return f"its {folders.REDO!r} is {_shown(redo)}, not a list of its learns' numbers"
    return None


def judge(before, after):
    """The check of two evaluation reports on the test records (report.numbers' keys: records, accuracy,
    per_digit's recall and precision), before and after a learn: ({"count", "accuracy": [before, after],
    "recall": [[before, after] of each digit, None where undefined], "precision": likewise}, fell).

    fell: what fell past the limits, in points (percentage points, not a
    part of the value): the accuracy by more than ACCURACY_DROP, {"digit":
    None, "before", "after"}; a digit's recall (it is read as another) by
    more than RECALL_DROP, {"digit": d, "before", "after"}; its precision
    (another is read as it: keeps of one digit make the network call
    others that one) by as much, the same with "measure": "precision".
    """
    test = {"count": before["records"], "accuracy": [before["accuracy"], after["accuracy"]]}
    fallen = []
    if before["accuracy"] - after["accuracy"] > ACCURACY_DROP + 1e-9:
        fallen.append({"digit": None, "before": before["accuracy"], "after": after["accuracy"]})
    for measure in MEASURES:
        pairs = [[a[measure], b[measure]] for a, b in zip(before["per_digit"], after["per_digit"])]
        test[measure] = [pair if None not in pair else None for pair in pairs]
        fallen += [{"digit": d, "before": pair[0], "after": pair[1], **({} if measure == "recall" else
                                                                       {"measure": measure})}
                   for d, pair in enumerate(test[measure]) if pair and pair[0] - pair[1] > RECALL_DROP + 1e-9]
    return test, fallen


def summary(found):
    """A check in one line: `MNIST 0.9381 → 0.9386; digit 8 recall 0.951 → 0.938; your digits 23/30 → 30/30` (the
    digit whose recall fell most; `no digit's recall fell` when none did)."""
    parts, test = [], found["test"]
    if test:
        parts.append(f"MNIST {test['accuracy'][0]:.4f} → {test['accuracy'][1]:.4f}")
        moved = [(pair[1] - pair[0], d, pair) for d, pair in enumerate(test["recall"]) if pair]
        change, digit, pair = min(moved) if moved else (0, None, None)
        parts.append(f"digit {digit} recall {pair[0]:.3f} → {pair[1]:.3f}" if change < 0 else "no digit's recall fell")
    kept = found["kept"]
    parts.append(f"your digits {kept['right'][0]}/{kept['count']} → {kept['right'][1]}/{kept['count']}")
    return "; ".join(parts)


def fell(found):
    """What fell past the limits, in words: `digit 8's recall fell 0.951 → 0.921 (-3.0 points)`, `digit 1's
    precision fell ...`, joined by "and"."""
    return " and ".join(
        (f"the test accuracy fell {f['before']:.4f} → {f['after']:.4f}" if f["digit"] is None else
         f"digit {f['digit']}'s {f.get('measure', 'recall')} fell {f['before']:.3f} → {f['after']:.3f}")
        + f" ({100 * (f['after'] - f['before']):+.1f} points)" for f in found["fell"])


# ---------------------------------------------------------------- what the served model knows of the kept digits


SUM_CHARS = 8  # hex characters of each kept file's checksum in a learn's record ("sums"): 32 bits of BLAKE2b


def known_of(store, kept, model_dir, folder=None):
    """The kept digits [(name, digit)] of `store` a learn into model_dir learned, as the record keeps them:
    {"keep_dir": the store's path from model_dir (so that it holds from any working folder), "keep_path": its
    absolute path (so that it holds when the model folder is moved or renamed on its own), "numbers": their
    numbers (names are never given again, and a number is one name) as [[first, last], ...] runs, "digits": the
    digit of each of those numbers, in order, as one string ("3377"): a digit relabelled by hand (its file renamed
    000001_1.jpg -> 000001_7.jpg and its line changed) keeps its number, and is a change all the same, "sums":
    the checksum of each of those files' bytes (SUM_CHARS hex characters each, in order, as one string; read in
    `folder`, the learn's snapshot, default the store's folder): a keep folder deleted by hand and kept into
    again gives its numbers again from 1, and a file replaced by hand keeps its name; both are other drawings}."""
    pairs = sorted(found + (name,) for found, name in ((store.layout.parse(name), name) for name, _ in kept)
                   if found)
    numbers = [number for number, _, _ in pairs]
    runs = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    try:
        relative = os.path.relpath(os.path.abspath(store.folder), os.path.abspath(model_dir))
    except ValueError:  # Windows: another drive
        relative = os.path.abspath(store.folder)
    sums = [checksum(os.path.join(folder or store.folder, name)) for _, _, name in pairs]
    return {"keep_dir": relative, "keep_path": os.path.abspath(store.folder), "numbers": runs,
            "digits": "".join(str(digit) for _, digit, _ in pairs),
            **({"sums": "".join(sums)} if all(sums) else {})}


_sums, _sums_lock = {}, threading.Lock()  # (path, inode, size, mtime ns) -> checksum: the page asks every poll


def checksum(path):
    """The SUM_CHARS hex characters of BLAKE2b over the bytes of the file at `path` (a str), or "" when it cannot be
    read (gone: a change). Remembered by the file's inode, size and modification time: the store never writes
    over a file, and a file put in its place by hand is another inode."""
    try:
        stat = os.stat(path)
        key = (os.path.abspath(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
        with _sums_lock:
            if key in _sums:
                return _sums[key]
        with open(path, "rb") as f:
            found = hashlib.blake2b(f.read(), digest_size=SUM_CHARS // 2).hexdigest()
    except OSError:
        return ""
    with _sums_lock:
        if len(_sums) > 4 * keep.MOST:  # bounded: a long-running board over many stores
            _sums.clear()
        _sums[key] = found
    return found


def _learned(known, now, folder, since=None):
    """(learned, now): what unknown() compares (sets, or collections.Counters: a drawing may be kept twice), from a
    record's "known" and the store's (number, digit, name)s now: (digit, checksum) with the record's "sums" (the
    drawings and their digits, whatever their numbers). A record from before they were kept (no "sums": (number,
    digit); no "digits" either: numbers alone) cannot tell a drawing from another under the same name, so a file of
    `now` counts as the one learned only when it is provably older: neither written nor renamed (its mtime and
    ctime) after `since`, the time the learn was put in service (its entry's "changed"; None: no file is). Any
    other (a keep folder deleted by hand and kept into again, a file replaced or relabelled by hand, or all of them
    when the store was copied) is the learned one gone and a new one kept: the model may not know it.
    None for runs of the wrong shape or too many (a hand edit)."""
    try:
        runs = [(int(first), int(last)) for first, last in known.get("numbers", ())]
    except (TypeError, ValueError):  # runs of the wrong shape (a hand edit): not known
        return None
    if sum(last - first + 1 for first, last in runs) > 10 * keep.MOST:  # no learn knows so many
        return None
    learned = [n for first, last in runs for n in range(first, last + 1)]
    digits, sums = known.get("digits"), known.get("sums")
    if not (isinstance(digits, str) and len(digits) == len(learned) and digits.isdecimal()):
        return set(learned), {number if older(os.path.join(folder, name), since) else (number, name)
                              for number, _, name in now}  # from before the digits were kept: numbers alone
    if not (isinstance(sums, str) and len(sums) == SUM_CHARS * len(learned) and re.fullmatch("[0-9a-f]*", sums)):
        return set(zip(learned, map(int, digits))), {
            (number, digit) if older(os.path.join(folder, name), since) else (number, digit, name)
            for number, digit, name in now}
    cut = [sums[i:i + SUM_CHARS] for i in range(0, len(sums), SUM_CHARS)]
    # by what the model learned, each drawing under its digit, whatever number it has now: a digit relabelled and
    # relabelled back, or removed and kept again with the same pixels (each a new number), is what it learned
    return (collections.Counter(zip(map(int, digits), cut)),
            collections.Counter((digit, checksum(os.path.join(folder, name))) for _, digit, name in now))


def older(path, since):
    """True when the file at `path` was last written and last renamed or linked (mtime, ctime) no later than `since`
    (seconds since the epoch; None, or a file that cannot be read: False). The keep store never writes over a
    file, so such a file is the one a learn of time `since` saw."""
    try:
        stat = os.stat(path)
    except OSError:
        return False
    return isinstance(since, (int, float)) and max(stat.st_mtime, stat.st_ctime) <= since


def unknown(model_dir, store):
    """How many changes to the kept digits of `store` (a keep.KeptDigits) the model in service in model_dir does
    not know: digits kept and digits removed since the learn in service (the last promoted one) snapshotted
    them; a relabel (removed, kept again under the new digit) counts each, and so does one made by hand (the same
    number under another digit: known_of's "digits"), and another drawing under a learned name (a keep folder
    deleted by hand and kept into again, a file replaced by hand: known_of's "sums"; each counts two, the one
    learned gone and the new one kept). What the model learned is the drawings and their digits, not their
    numbers: a drawing removed and kept again with the same pixels, or relabelled and relabelled back, is no
    change (a drawing kept twice counts once more). A record without "sums" (an earlier version's learn) is
    counted by number and digit, one without "digits" by number alone, and a file there not provably older than
    the learn (_learned) counts as a new drawing all the same. All kept digits when no learn from this store is in
    service. None when that learn is from before this was recorded, or model_dir is None."""
    if model_dir is None:
        return None
    learns, _ = learn_history(model_dir)
    entry = next((e for e in reversed(learns) if e.get("state") == "promoted"), None)
    now = {found + (name,) for found, name in ((store.layout.parse(name), name) for name, _ in store.entries())
           if found}  # (number, digit, name)
    if entry is None:
        return len(now)
    known = entry.get("settings", {}).get("known")
    if not isinstance(known, dict) or not isinstance(known.get("keep_dir", ""), str):
        return None
    if _learned(known, set(), store.folder) is None:  # a record of the wrong shape (a hand edit): not known
        return None
    if os.path.realpath(store.folder) not in {os.path.realpath(os.path.join(model_dir, known.get("keep_dir", ""))),
                                              os.path.realpath(str(known.get("keep_path", "")))}:
        return len(now)  # learned from another store: none of these
    learned, now = map(collections.Counter, _learned(known, now, store.folder, entry.get("changed")))
    return sum(((now - learned) + (learned - now)).values())


def gone(model_dir):
    """The DataError of a model folder that is not there (deleted or moved, or never made), or is a file; a name
    close to a folder beside it (`modle`) is checkpoints.not_there's line, with no hint to train into it."""
    if os.path.isfile(model_dir):  # a picture or a label file given as --model-dir: no folder to train into there
        return checkpoints.a_file(model_dir, "mnist_learn.py")
    typo = checkpoints.not_there(model_dir)
    if "did you mean" in typo:  # `modle` beside `model`: a typo, not a folder to train into
        return DataError(typo)
    return DataError(f"{model_dir}: the model folder is not there (not trained yet, or gone: deleted or moved?); "
                     "nothing to learn from: train one "
                     f"(`{cli.command(checkpoints.trainer_of(model_dir), '--model-dir', model_dir)}`)"
                     " or give another --model-dir")


_learning, _learning_lock = set(), threading.Lock()  # the model folders a learn of this process works on


@contextlib.contextmanager
def one_at_a_time(model_dir):
    """Around a learn, an undo, a redo, an accept or a discard of model_dir: one at a time, across threads (the
    board's) and processes.

    Processes: the one-writer lock of model_dir (folders.FolderLock) that
    the trainer takes too, so that a learn and a trainer never write one
    folder at once; removed at the end. Raises DataError naming the folder,
    and the process that writes it, when another holds it; and naming the
    reason when the lock cannot be made (a read-only mount, a full disk),
    and naming what it is when model_dir is an export (places.export_given).
    """
    # an export, a model folder's history/ or learns/<n>/: no lock made in it, nothing learned
    misplaced = places.export_given(model_dir, "--model-dir") or places.part_given(model_dir)
    if misplaced is not None:
        raise misplaced
    key = os.path.realpath(model_dir)
    with _learning_lock:
        if key in _learning:
            raise DataError(f"{model_dir}: another learn is working on this model folder; wait until it ends")
        _learning.add(key)
    try:
        with contextlib.ExitStack() as held:
            # A folder that is not there has no writer to wait for (and nothing to learn from: learn() says so).
            if os.path.isdir(model_dir):
                try:
                    held.enter_context(folders.FolderLock(model_dir, "--model-dir", "a learn"))
                except OSError as e:  # a read-only folder (a mount, a shared course folder), a full disk
                    raise DataError(f"{model_dir}: cannot write in this model folder ({e.strerror}: its lock "
                                    f"{folders.LOCK_FILE}); nothing changed; make it writable, or copy it and give "
                                    "the copy with --model-dir") from None
            yield
    finally:
        with _learning_lock:
            _learning.discard(key)


# ---------------------------------------------------------------- the folder's learns: bring in, undo, redo, accept


def learns_folder(model_dir, number):
    """<model_dir>/learns/<number>: learn `number`'s checkpoint while it is out of service."""
    return os.path.join(model_dir, folders.LEARNS_FOLDER, str(number))


def moves(prefix, folder, coming):
    """[(from, to)] moving a checkpoint's files (prefix.*) into `folder`: the .index last when they come into the
    model folder (coming), first when they leave it (no reader takes a checkpoint half there)."""
    paths = sorted(glob.glob(glob.escape(prefix) + ".*"), key=lambda p: (p.endswith(".index"), p.endswith(".meta")))
    return [(p, os.path.join(folder, os.path.basename(p))) for p in (paths if coming else paths[::-1])]


def choices(model_dir):
    """What to do with a held learn, as commands: `use it anyway with ..., or discard it with ...`."""
    return (f"use it anyway with `{cli.command('mnist_learn.py', '--accept-worse', '--model-dir', model_dir)}`, or "
            f"discard it with `{cli.command('mnist_learn.py', '--discard', '--model-dir', model_dir)}`")


def bring_in(model_dir, record, learns, entry, redo=()):
    """Put learn `entry`'s checkpoint, in its learns/<n>/, in service: its files moved into model_dir, the index
    naming it newest, the record holding `learns` with the entry promoted, the trainer's options after it and
    `redo` the learns left to redo (none after a new learn or an accept: they end what could be redone). All or
    nothing (folders.change)."""
    folder = learns_folder(model_dir, entry["learn"])
    missing = missing_files(folder, entry)
    if missing:
        raise DataError(f"{os.path.join(folder, entry['after'])}: the learned checkpoint is not all there "
                        f"({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''} missing); nothing changed in "
                        f"{model_dir}")
    damage = damaged(os.path.join(folder, entry["after"]))
    if damage:
        raise DataError(f"{os.path.join(folder, entry['after'])}: the learned checkpoint is damaged ({damage}); "
                        f"nothing changed in {model_dir}")
    names = index_names(model_dir, entry["after"]) or [entry["before"]]
    entry.update(state="promoted", changed=time.time())
    record = {**record, **entry.get("options", {}).get("after", {}), folders.LEARNS: learns, folders.REDO: list(redo)}
    folders.change(model_dir, moves(os.path.join(folder, entry["after"]), model_dir, coming=True),
                   index=(entry["after"], names + [entry["after"]]), record=record)
    files.remove_empty_folders([folder, os.path.dirname(folder)])


def missing_files(folder, entry):
    """The names of learn `entry`'s checkpoint files that are not in `folder` (its learns/<n>/): those it had when
    set aside (entry["files"]), else its .index and every .data shard the shards' names count; [] when whole."""
    after = entry["after"]
    names = set(files.listing(folder))
    wanted = list(entry.get("files") or [])
    if not wanted:
        shards = [re.fullmatch(re.escape(after) + r"\.data-\d+-of-(\d+)", n) for n in names]
        count = max([int(m.group(1)) for m in shards if m] + [1])
        wanted = [after + ".index"] + [f"{after}.data-{i:05d}-of-{count:05d}" for i in range(count)]
    return [n for n in wanted if n not in names]


def not_all_there(prefix):
    """The names of a V2 checkpoint's files a restore needs that are missing: its .index and each .data shard its
    shards' names count (checkpoints.data_files); [] when whole, or for a V1 checkpoint (one file)."""
    if checkpoints.checkpoint_format(prefix) != "V2":
        return []
    present, expected = checkpoints.data_files(prefix)
    wanted = [prefix + ".index"] + expected
    return [os.path.basename(p) for p in wanted if not os.path.exists(p)]


def index_names(model_dir, leaving, newest=None):
    """The names the index file lists after an undo or a redo (oldest first, `newest` last when given): those it
    lists now, but `leaving` (the checkpoint taken out, or coming in: bring_in puts it last), each once, and only
    those whose files are there (an index edited by hand may list names twice, or checkpoints that are gone)."""
    names = []
    for name in folders.indexed_names(model_dir):
        if name not in (leaving, newest) and name not in names and \
                checkpoints.checkpoint_format(os.path.join(model_dir, name)) is not None:
            names.append(name)
    return names + ([newest] if newest else [])


def damaged(prefix):
    """What is wrong with the checkpoint `prefix` an undo or a redo is about to put in service (a file cut short,
    a checksum that fails: checkpoints.read_checkpoint reads it whole), or None when it reads: a checkpoint no
    reader can restore never takes the place of one that can."""
    try:
        checkpoints.read_checkpoint(prefix)
    except DataError as e:
        found = re.search(r"checkpoint (?:is damaged|was deleted while it was read) ?\(?(.*?)\)?$", str(e))
        return found.group(1) if found and found.group(1) else str(e)
    return None


def moved_on(model_dir, newest, name):
    """The checkpoint of model_dir newer than `name` (the folder trained further since): the newest one when it is
    not `name`, else the newest of any files of a later step (a save under way); None when there is none."""
    if newest is not None and newest != name:
        return newest
    later = [step for step in folders.checkpoint_steps(model_dir, folders.name_of(name))
             if step > folders.step_of(name)]
    return f"{folders.name_of(name)}-{max(later)}" if later else None


def started_from_gone(model_dir, newest, entry, done):
    """Raise DataError when the checkpoint learn `entry` started from (its "before") is not in model_dir (removed
    by hand after an undo, or while the learn was held): a redo or an accept would put the learned checkpoint in
    service over a folder that no longer holds what it was learned from, so it is refused, naming the checkpoint
    gone and the newest one there (`newest`, None for none), never as a folder "trained further" with an older
    one. done: what is not done ("redone", "accepted")."""
    if checkpoints.checkpoint_format(os.path.join(model_dir, entry["before"])) is not None:
        return
    there = f"its newest checkpoint is {newest}" if newest else "it holds no checkpoint"
    raise DataError(f"{model_dir}: {entry['before']}, the checkpoint learn {entry.get('learn', '')} started from, is "
                    f"not there (removed?); {there}; nothing {done} (the learned checkpoint {entry['after']} stays "
                    f"in {learns_folder(model_dir, entry.get('learn', ''))})")


@contextlib.contextmanager
def history(model_dir, chosen):
    """Around an undo, a redo, an accept or a discard: the folder held (one_at_a_time), and (record, learns,
    redo, the entry chosen, the newest checkpoint's name or None) read; DataError when the folder is gone, or its
    record cannot be read or holds a learn history of the wrong shape (learn_history's strict: a hand edit), naming
    it, and as chosen raises it.

    chosen(learns, redo): the learn entry to act on, or DataError when there is none (`no learn to undo`); called
    before the newest checkpoint is looked up, which reads the `checkpoint` index with TensorFlow (seconds), so that
    the refusal comes at once.
    """
    with one_at_a_time(model_dir):
        if not os.path.isdir(model_dir):
            raise gone(model_dir)
        record = folders.folder_record(model_dir, strict=True)
        learns, redo = learn_history(model_dir, record, strict=True)
        entry = chosen(learns, redo)
        newest = checkpoints.latest(model_dir)
        yield record, learns, redo, entry, newest and os.path.basename(newest)


def promoted_entry(learns, model_dir):
    """The last learn in service (state "promoted"), which undo() takes out; DataError when none is."""
    if not learns:
        raise DataError(f"{os.path.join(model_dir, folders.FOLDER_FILE)}: no learn to undo")
    entry = next((e for e in reversed(learns) if e.get("state") == "promoted"), None)
    if entry is None:
        raise DataError(f"{model_dir}: no learn to undo (each one here is undone, held or discarded)")
    return entry


def undone_entry(learns, redo_list, model_dir):
    """The learn the last undo took out, which redo() puts back; DataError when there is none."""
    entry = next((e for e in learns if redo_list and e.get("learn") == redo_list[-1]), None)
    if entry is None:
        raise DataError(f"{model_dir}: no undone learn to redo")
    return entry


def undo(model_dir, out=print):
    """Take the last promoted learn out of service: its checkpoint moved into learns/<n>/ (a folder of its own), the
    one from before named newest again; returns the prefix in use again.

    Raises DataError when no learn is recorded, when the newest checkpoint
    is not one a learn promoted (trained further since), or the one from
    before is gone: nothing is changed then.
    """
    with history(model_dir, lambda learns, _: promoted_entry(learns, model_dir)) as (record, learns, redo, entry,
                                                                                      newest):
        newer = moved_on(model_dir, newest, entry["after"])
        if newer is not None and checkpoints.checkpoint_format(os.path.join(model_dir, entry["after"])) is None:
            raise DataError(f"{model_dir}: {entry['after']}, the checkpoint learn {entry.get('learn', '')} added, is "
                            f"not there (removed?); its newest checkpoint is {newer}; nothing undone")
        if newer is not None:
            raise DataError(f"{model_dir}: trained further since learn {entry.get('learn', '')}: its newest checkpoint "
                            f"is {newer}, not {entry['after']} that the learn added; nothing undone (an undo would "
                            f"take {newer} out of service too)")
        before = os.path.join(model_dir, entry["before"])
        if checkpoints.checkpoint_format(before) is None:
            raise DataError(f"{before}: the checkpoint from before the learn is gone; nothing undone")
        lost = not_all_there(before)
        if lost:
            raise DataError(f"{before}: the checkpoint from before the learn is not all there ({', '.join(lost[:3])}"
                            f"{' ...' if len(lost) > 3 else ''} missing); nothing undone ({entry['after']} stays in "
                            "service)")
        damage = damaged(before)
        if damage:
            raise DataError(f"{before}: the checkpoint from before the learn is damaged ({damage}); nothing undone "
                            f"({entry['after']} stays in service)")
        number = entry.setdefault("learn", 1 + max(e.get("learn", 0) for e in learns))
        folder = learns_folder(model_dir, number)
        made = files.missing_folders(folder)  # learns/ too, for the first undo: taken back out on failure
        os.makedirs(folder, exist_ok=True)
        going = moves(os.path.join(model_dir, entry["after"]), folder, coming=False)
        entry.update(state="undone", changed=time.time(), files=sorted(os.path.basename(f) for f, _ in going))
        names = index_names(model_dir, entry["after"], entry["before"])
        try:
            folders.change(model_dir, going, index=(entry["before"], names),
                           record={**record, **entry.get("options", {}).get("before", {}), folders.LEARNS: learns,
                                   folders.REDO: redo + [number]})
        except BaseException:
            files.remove_empty_folders(made)
            raise
    out(f"back to {before}; the learned checkpoint is in {folder} "
        f"(`{cli.command('mnist_learn.py', '--redo', '--model-dir', model_dir)}` puts it back)")
    return before


def redo(model_dir, out=print):
    """Put the learn the last undo took back in service again; returns its prefix. Raises DataError when there is
    none, or when the newest checkpoint is no longer the one it was learned from: nothing is changed then."""
    with history(model_dir, lambda learns, redo_list: undone_entry(learns, redo_list, model_dir)) as (
            record, learns, redo_list, entry, newest):
        started_from_gone(model_dir, newest, entry, "redone")
        newer = moved_on(model_dir, newest, entry["before"])
        if newer is not None:  # a newer of the learned one's own name: trained to its step again, since the undo
            mine = f"learn {entry['learn']}'s {entry['after']}" if newer == entry["after"] else entry["after"]
            theirs = f"the {newer} trained since the undo" if newer == entry["after"] else newer
            raise DataError(f"{model_dir}: trained further since the undo: its newest checkpoint is {newer}, not "
                            f"{entry['before']} that learn {entry['learn']} started from; nothing redone (a redo "
                            f"would put {mine} in service over {theirs})")
        bring_in(model_dir, record, learns, entry, redo_list[:-1])
    after = os.path.join(model_dir, entry["after"])
    out(f"learned: {after} again (from {os.path.join(model_dir, entry['before'])}); go back with "
        f"`{cli.command('mnist_learn.py', '--undo', '--model-dir', model_dir)}`")
    return after


def held_entry(learns, model_dir):
    """The learn that waits for a choice (state "held"); DataError when none does."""
    entry = next((e for e in reversed(learns) if e.get("state") == "held"), None)
    if entry is None:
        raise DataError(f"{model_dir}: no learned checkpoint waits for a choice")
    return entry


def accept(model_dir, out=print):
    """Put the held learn's checkpoint in service anyway (mnist_learn.py --accept-worse, the page's "use it
    anyway"); returns its prefix. DataError when none is held, or the folder moved on since it was learned."""
    with history(model_dir, lambda learns, _: held_entry(learns, model_dir)) as (record, learns, _, entry, newest):
        started_from_gone(model_dir, newest, entry, "accepted")
        newer = moved_on(model_dir, newest, entry["before"])
        if newer is not None:
            raise DataError(f"{model_dir}: its newest checkpoint is now {newer}, not {entry['before']} that learn "
                            f"{entry['learn']} started from; discard it and learn again")
        bring_in(model_dir, record, learns, entry)
    after = os.path.join(model_dir, entry["after"])
    out(f"learned: {after} (from {os.path.join(model_dir, entry['before'])}), though {fell(entry['check'])}; go "
        f"back with `{cli.command('mnist_learn.py', '--undo', '--model-dir', model_dir)}`")
    return after


def discard(model_dir, out=print):
    """Remove the held learn's checkpoint (mnist_learn.py --discard, the page's "discard"); the record keeps the
    learn as discarded. DataError when none is held."""
    with history(model_dir, lambda learns, _: held_entry(learns, model_dir)) as (record, learns, redo_list, entry,
                                                                                  newest):
        entry.update(state="discarded", changed=time.time())
        folders.change(model_dir, record={**record, folders.LEARNS: learns, folders.REDO: redo_list})
        shutil.rmtree(learns_folder(model_dir, entry["learn"]), ignore_errors=True)
        files.remove_empty_folders([os.path.join(model_dir, folders.LEARNS_FOLDER)])
    # the checkpoint in service: the one the learn started from, or a newer one the folder was trained to since
    going_on = f"goes on with {newest}" if newest else "holds no checkpoint"
    out(f"discarded learn {entry['learn']}'s checkpoint {entry['after']}; {model_dir} {going_on}")


def step_or_none(name):
    """The global_step (int) in a checkpoint's name ("mnist_model-5400": 5400), or None when it names none."""
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if "-" in name and tail.isdigit() else None


def standing(model_dir):
    """Where model_dir's learns stand (None: a model without a folder), for the board's page: {"last": the learn
    changed last (its entry) or None, "undo": whether undo() would do something, "redo": whether redo() would,
    "held": the held learn or None, "further": None, or when the folder was trained further since the held learn
    started (else the learn in service, else the one a redo would put back) {"learn": its number, "newest": the
    newer checkpoint's name, "step": its step (int or None)}: accept(), undo() and redo() refuse then (moved_on,
    the same check)}."""
    learns, redo_list = learn_history(model_dir) if model_dir else ([], [])
    if not learns:
        return {"last": None, "undo": False, "redo": False, "held": None, "further": None}
    newest = checkpoints.latest(model_dir)
    newest = newest and os.path.basename(newest)
    last = max(enumerate(learns), key=lambda item: (item[1].get("changed", 0), item[0]))[1]
    nxt = next((e for e in learns if redo_list and e.get("learn") == redo_list[-1]), None)
    serving = next((e for e in reversed(learns) if e.get("state") == "promoted"), None)
    held = next((e for e in reversed(learns) if e.get("state") == "held"), None)
    mine = (held, held["before"]) if held else (serving, serving["after"]) if serving else \
        (nxt, nxt["before"]) if nxt else (None, None)
    newer = mine[0] and moved_on(model_dir, newest, mine[1])
    return {"last": last, "undo": serving is not None and moved_on(model_dir, newest, serving["after"]) is None,
            "redo": nxt is not None and moved_on(model_dir, newest, nxt["before"]) is None, "held": held,
            "further": newer and {"learn": mine[0].get("learn"), "newest": newer, "step": step_or_none(newer)}}

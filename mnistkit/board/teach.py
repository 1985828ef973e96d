"""Teaching the board: the routes that keep corrected digits (keep.KeptDigits) and learn from them (mnistkit.learn).

- POST   /board/keep          KEEP_FORM -> {"kept": {"name", "digit"}, "count"}, and "misread": {"reads",
                              "probability"} when the served model (?model=compare: the --compare one) reads it as
                              another digit at MISREAD or more (a mis-click? the page asks "keep it?"): the
                              same size at any count
- GET    /board/kept          a page of them, newest first: ?limit=N (PAGE; at most MOST_PAGE), ?before=NAME
                              (those kept before NAME) -> {"count", "entries": [{"name", "digit"}, ...], "more",
                              "unreadable": [one line per label line the store cannot read]}; an entry the model
                              (?model=compare: the --compare one) reads as another digit at MISREAD or more has
                              "misread" as the keep's answer has, whoever kept it (the board, or a user's own
                              picture and label line written by hand)
- GET    /board/kept/<name>   the kept 28x28 picture (only names the store lists)
- DELETE /board/kept/<name>   removes it -> {"removed": name, "count"}
- GET    /board/learn         Learning.status(): the learn running, else where the served folder's learns stand;
                              with "unknown" (changes to the kept digits the served model does not know),
                              "one_digit" (the digit all keeps are: the page warns before a learn) and
                              "nothing_new" (the line a learn would be refused with, and "nothing_new_zh": the
                              page says it and its learn button learns anyway, ?again=1)
- POST   /board/learn         starts a learn on the served checkpoint's folder -> 202 and the status; 409 with
                              learn.nothing_new's line when nothing was kept, removed or relabelled since the
                              learn in service (as mnist_learn.py says it), ?again=1 to learn all the same
- POST   /board/learn/undo    the last learn undone (mnistkit.promotion.undo) -> the status
- POST   /board/learn/redo    the last undone learn put back (promotion.redo) -> the status
- POST   /board/learn/accept  the learn held for a choice put in service anyway (promotion.accept) -> the status
- POST   /board/learn/discard the learn held for a choice removed (promotion.discard) -> the status
The learn routes take the query the other routes take (table.chosen):
?model=compare learns on the --compare network (LeNet-5 beside the
784-500-10 one: its own folder, its own trainer, its own Follower), and
model=first (the default) on the first; another name is 400 naming it,
model=compare on a board without --compare 409 (learn_side). The kept
digits are pictures: one store for both networks; what each learned,
and "unknown", are its folder's. One learn runs at a time on a board,
whichever network it is on (Learning's job; mnistkit.learn also locks
each folder, across processes): the other network's status says "busy"
with the folder being learned into.
Errors (table.BoardError): 400 a bad request (a picture that is not one,
past the picture limits), 404 a name not kept, 409 a label line the store
cannot read (keep, remove and learn: the line, and the fix), the most
digits kept, a learn running, held for a choice, nothing to undo or redo,
or no checkpoint folder to learn into, 500 a keep folder that cannot be
written or read (DataError's line). A keep's
original is read within predict's picture limits (page.under_limits) and
kept under its decoded format's suffix.

A learn runs on a thread of its own, its scripts in processes
(mnistkit.learn). GET /board/learn's state: "running" while it runs,
with its stage (learn.STAGES: preparing, training with the trainer's
steps, checking, promoting; then the Follower's swap to the learned
checkpoint); "failed" with the error's line, the model folder as it was
and the board answering on. Every status's "line" comes with its Chinese
twin, "line_zh" (line_zh: board.zh), and its "step" is the one its line
speaks of (while checking and promoting: the learned checkpoint's). Otherwise what the served folder's record says of its last learn,
whoever made it (the page, mnist_learn.py in a terminal): "done" (in
service, with its check: the test records' accuracy and each digit's
recall before and after, the kept digits read right), "held" (not
promoted: what fell; "use it anyway" or "discard"), "undone",
"discarded", or "idle" when it holds none; "undo" and "redo" say whether
those would do something. A learn that ended on this board, the folder's
learns unchanged since, keeps its last line ("learned: ... (from ...);
go back with ...", or a held one's "not promoted: ..."). The server stopping stops the learn
(Learning.stop, end): its script ended, its staging folder removed, the
folder's lock released, within the shutdown grace.
"""
import base64
import binascii
import mimetypes
import os
import threading

import numpy as np

from .. import checkpoints, cli, images, learn, pictures, preparation, promotion
from ..errors import DataError
from ..keep import KeepRefused, NotKept
from ..records import IMAGE_PIXELS, IMAGE_SIZE, NUM_CLASSES
from . import zh
from .model import POLL_SECS
from .page import picture_name, under_limits
from .table import BoardError, Reply, chosen, runs_model

KEEP_KEYS = ("digit", "input", "original", "name")
KEEP_FORM = '{"digit": 0-9, "input": [784 ints 0-255]} and/or "original": the picture in base64, "name": its file name'
PAGE, MOST_PAGE = 100, 1000  # kept digits a GET /board/kept answers by default, at most


def keep_digit(call):
    """POST /board/keep[?model=compare]: one digit kept (keep_request's form) in the one store of both networks;
    its original read as a picture within the picture limits, and prepared again when the digit comes without its
    input. Answers the entry and the count, and "misread" as the network the query names (table.chosen: the one
    the page learns on) reads it."""
    reader = chosen(call)  # before anything is kept: a model name the board does not know is 400, nothing kept
    digit, pixels, original, name = keep_request(call.json)
    kind = None
    if original is not None:
        pixels, kind = under_limits(call.model, read_original, call.model.prepare, original, name, pixels)
    kept, digit, count = store_call(call.kept.keep, pixels, digit, original, kind)
    flagged = misread(reader, pixels, digit)
    return {"kept": {"name": kept, "digit": digit}, "count": count, **({"misread": flagged} if flagged else {})}


MISREAD = 0.99  # a keep the served model reads as another digit this surely is flagged: a mis-click?


def misread(model, pixels, digit):
    """{"reads": e, "probability": p} when the served `model` reads the kept pixels (uint8 [28, 28]) as another
    digit e with probability p >= MISREAD ("kept as 7, reads as 1: keep it?"), else None."""
    return misreads(model, [(pixels, digit)])[0]


def misreads(model, kept):
    """misread()'s flag (or None) of each of kept [(pixels uint8 [28, 28], digit)], in one run of the model: the one
    place a keep is flagged, at its keep and in the list (kept_list). [] for none; Nones when the model fails (the
    flag is advice, never a failed keep or list)."""
    if not kept:
        return []
    rows = preparation.network_rows(np.stack([pixels.reshape(IMAGE_PIXELS) for pixels, _ in kept]))
    try:
        probabilities = np.asarray(model.predictor.predict(rows))
    except Exception:  # noqa: BLE001  (any: the digit is kept; the flag is advice, never a failed keep)
        return [None] * len(kept)
    flags = []
    for (_, digit), row in zip(kept, probabilities):
        reads = int(np.argmax(row))
        flags.append(None if reads == digit or row[reads] < MISREAD else
                     {"reads": reads, "probability": float(row[reads])})
    return flags


def kept_pixels(store, name):
    """The pixels (uint8 [28, 28]) of the listed keep `name` as a learn reads them (images.decode_image, the
    generator's rule: a picture kept by hand too), or None when it is gone or is no 28x28 picture."""
    try:
        data, _ = images.decode_image(store.read(name), name)
    except (NotKept, DataError, OSError):
        return None
    return np.frombuffer(data, np.uint8).reshape(IMAGE_SIZE, IMAGE_SIZE)


def read_original(prepare, original, name, pixels):
    """(pixels, Pillow's format) of a keep's original picture `original` (bytes): pixels prepared from it by
    prepare(original, name) when None, else as given, the picture then decoded only to check it is one (and
    which). Raises DataError (naming `name`) for bytes that are not a picture, or one past the limits."""
    if pixels is None:
        return prepare(original, name), pictures.picture_format(original, name, decoded=True)
    return pixels, pictures.picture_format(original, name)


@runs_model
def kept_list(call):
    """GET /board/kept[?limit=N][&before=NAME][&model=compare]: a page of the kept digits, newest first
    (KeptDigits.page), each the model reads as another digit flagged (misreads: "misread", as POST /board/keep
    answers, for keeps written by hand too), and the label lines the store cannot read (and their Chinese twins,
    "unreadable_zh", asked in zh: zh.asked)."""
    reader = chosen(call)
    limit = call.query.get("limit", str(PAGE))
    if not (limit.isdecimal() and 1 <= int(limit) <= MOST_PAGE):
        raise BoardError(400, f"limit must be a number of kept digits 1-{MOST_PAGE}, not {limit[:20]!r}")
    count, entries, more = store_call(call.kept.page, call.query.get("before"), int(limit))
    unreadable = store_call(call.kept.unreadable)
    pixels = {name: kept_pixels(call.kept, name) for name, _ in entries}
    readable = [(name, digit) for name, digit in entries if pixels[name] is not None]
    flags = dict(zip((name for name, _ in readable), misreads(reader, [(pixels[n], d) for n, d in readable])))
    listed = [{"name": name, "digit": digit, **({"misread": flags[name]} if flags.get(name) else {})}
              for name, digit in entries]
    return {"count": count, "entries": listed, "more": more,
            "unreadable": unreadable, **({"unreadable_zh": [zh.twin(line, 409) for line in unreadable]}
                                         if zh.asked(call.headers) else {})}


def kept_jpg(call):
    """GET /board/kept/<name>: the kept picture's bytes."""
    name = call.params["name"]
    return Reply(store_call(call.kept.read, name), media_type=mimetypes.guess_type(name)[0] or "image/jpeg",
                 headers={"Cache-Control": "no-cache"})


def kept_remove(call):
    """DELETE /board/kept/<name>: the digit removed; the name and the count."""
    name = call.params["name"]
    return {"removed": name, "count": store_call(call.kept.remove, name)}


def learn_side(call):
    """(the Model, its slot: "first" or "compare") a learn route's query names: ?model=compare the --compare
    network, model=first (the default) the first (table.chosen's names). BoardError 400 naming another name, 409
    for model=compare on a board serving no second model (nothing to learn into: one line)."""
    slot = call.query.get("model", "first")
    if slot == "compare" and call.compare is None:
        raise BoardError(409, f"{call.method} {call.path}?model=compare: this board serves no --compare network to "
                              "learn on; start it with mnist_app.py --serve --compare DIR, or learn on the first "
                              "(model=first)")
    return chosen(call), slot


def learn_status(call):
    """GET /board/learn[?model=compare]: Learning.status() of that network's folder."""
    model, _ = learn_side(call)
    return call.learning.status(model)


def learn_start(call):
    """POST /board/learn[?model=compare][&again=1]: a learn started on that model's checkpoint folder: 202 and the
    status; 409 with learn.nothing_new's line when its model learned every kept digit already, unless again=1
    (mnist_learn.py --again's). BoardError 400 for again other than 1 or 0."""
    again = call.query.get("again", "0")
    if again not in ("0", "1"):
        raise BoardError(400, f"again={again[:20]}: give again=1 (learn even with nothing new) or leave it out")
    return Reply(call.learning.start(*learn_side(call), again=again == "1"), status=202)


def learn_undo(call):
    """POST /board/learn/undo[?model=compare]: that folder's last learn undone (promotion.undo); the status."""
    return call.learning.choose(*learn_side(call), promotion.undo)


def learn_redo(call):
    """POST /board/learn/redo[?model=compare]: that folder's last undone learn put back (promotion.redo); the status."""
    return call.learning.choose(*learn_side(call), promotion.redo)


def learn_accept(call):
    """POST /board/learn/accept[?model=compare]: the learn held for a choice put in service anyway (promotion.accept);
    the status."""
    return call.learning.choose(*learn_side(call), promotion.accept)


def learn_discard(call):
    """POST /board/learn/discard[?model=compare]: the learn held for a choice removed (promotion.discard); the
    status."""
    return call.learning.choose(*learn_side(call), promotion.discard)


def store_call(work, *args):
    """work(*args), a keep store's call, with its refusals as BoardErrors: 400 (ValueError), 404 (NotKept), 409
    (KeepRefused: a label line it cannot read, the most digits kept), 500 (DataError: a folder it cannot use)."""
    try:
        return work(*args)
    except ValueError as e:
        raise BoardError(400, str(e)) from None
    except NotKept as e:
        raise BoardError(404, f"no kept digit {e.args[0]!r}; GET /board/kept lists them") from None
    except KeepRefused as e:
        raise BoardError(409, str(e)) from None
    except DataError as e:
        raise BoardError(500, str(e)) from None


def keep_request(request):
    """(digit int, pixels uint8 [28, 28] or None, original bytes or None, name str) of a POST /board/keep body.

    request: the parsed JSON of KEEP_FORM; "input" is the prepared input
    /board/predict answered, row by row; without it the original is
    prepared again on the server. Raises BoardError 400 (one line) for
    anything else.
    """
    if not isinstance(request, dict) or set(request) - set(KEEP_KEYS):
        raise BoardError(400, f"send a JSON object with only {', '.join(KEEP_KEYS)}: {KEEP_FORM}")
    digit, values, original, name = (request.get(key) for key in KEEP_KEYS)
    if type(digit) is not int or not 0 <= digit < NUM_CLASSES:
        raise BoardError(400, f'"digit" must be an integer 0-9, not {cli.readable_json(digit, "utf-8")[:20]}')
    pixels = None
    if values is not None:
        if not (isinstance(values, list) and len(values) == IMAGE_PIXELS
                and all(type(v) is int and 0 <= v <= 255 for v in values)):
            raise BoardError(400, f'"input" must be {IMAGE_PIXELS} integers 0-255, the {IMAGE_SIZE}x{IMAGE_SIZE} '
                                  "input /board/predict answered, row by row")
        pixels = np.array(values, np.uint8).reshape(IMAGE_SIZE, IMAGE_SIZE)
    if original is not None:
        try:
            original = base64.b64decode(original, validate=True) if isinstance(original, str) else b""
        except (binascii.Error, ValueError):
            original = b""
        if not original:
            raise BoardError(400, '"original" must be the picture\'s bytes in base64')
    if pixels is None and original is None:
        raise BoardError(400, 'send "input" (the prepared input), "original" (the picture in base64), or both')
    if name is not None and not isinstance(name, str):
        raise BoardError(400, '"name" must be the picture\'s file name (a string)')
    return digit, pixels, original, picture_name(name)


class Learning:
    """The page's "Learn from my digits": one mnistkit.learn run at a time, on a thread, its scripts in processes.

    kept: the keep.KeptDigits store whose digits are learned (a snapshot
    of them at the learn's start), one for both networks; follower: the
    model.Follower of the first network's folder (None: nothing follows
    it); followers: {slot: Follower or None} per SLOTS, the --compare
    network's set by app.open_board; plan: the learn's settings
    (a learn.Plan: mnist_app.py's --learn-steps, --learn-share,
    --learn-data-dir; None: the defaults), each learn's the same but for
    the folder it learns into and the store. A learn on either network
    runs that folder's own trainer (learn.learn: mnist_lenet5_backward.py
    for LeNet-5). The learned
    checkpoint is promoted into the model folder, where that slot's
    Follower finds it and the board answers with it; until then the board
    answers with the model it has. status(model) is what GET
    /board/learn answers (the module's docstring): state, stage, line,
    step, steps, folder, learn (its number), before, after, check, undo,
    redo, unknown (the changes to the kept digits the model does not
    know), one_digit (the digit all kept digits are, else None),
    nothing_new, nothing_new_zh (learn.nothing_new's line, None when something
    is new, and its zh twin), busy (the
    folder a learn on the other network runs in, else None), doing,
    taken, left (what the learn running does now, for how long, the time
    left if known). `thread`: the last learn's thread, or None.
    """

    def __init__(self, kept, follower=None, plan=None):
        self.kept, self.plan = kept, plan or learn.Plan()
        self.followers = {slot: None for slot in SLOTS}
        self.followers["first"] = follower
        self.lock, self.thread, self.watch, self.failed_at = threading.Lock(), None, None, None
        self.ended_at = None  # mark() of the folder's learns when the last learn here ended: its last line holds
        self.stopped = False  # the server stopped while a learn ran (stop); its stop line says so
        self.job = dict(IDLE)
        self.chosen = {}  # a folder (realpath) -> (mark() after the last choice on it, that choice's line): choose

    def status(self, model):
        """The learn running on `model`'s folder (its stage, step, last line), else where that folder's learns
        stand; "busy" names the folder of a learn running on the board's other network."""
        folder = served_folder(model)
        with self.lock:
            job = dict(self.job)
            chosen = self.chosen.get(folder and os.path.realpath(folder))
        busy = None
        if job["folder"] is not None and job["folder"] != folder:  # the last learn was the other network's
            busy = job["folder"] if job["state"] == "running" else None
            job = dict(IDLE)
        stand = promotion.standing(folder)
        shown = stand["held"] or stand["last"]
        unknown = self.unknown(folder)
        answer = {**job, "folder": folder, "learn": None, "before": None, "after": None, "check": None,
                  "undo": stand["undo"], "redo": stand["redo"], "further": stand["further"], "unknown": unknown,
                  "one_digit": self.one_digit(), "busy": busy, **self.doing(job),
                  **self.new_lines(job, folder, unknown)}
        if not (job["state"] == "running" or shown is None or (job["state"] == "failed" and
                                                               self.failed_at == mark(stand))):
            state = {"promoted": "done", "held": "held", "undone": "undone", "discarded": "discarded"}.get(
                shown["state"])
            # the learn that ended here in service or held, nothing changed since: its last line (`learned: ...`,
            # `not promoted: ...`); else the line of the choice that left the learns as they are (`back to ...`)
            line = job["line"] if job["state"] == state in ("done", "held") and self.ended_at == mark(stand) else \
                chosen[1] if chosen is not None and chosen[0] == mark(stand) else ""
            answer = {**answer, "state": state or "idle", "stage": None, "line": line, "step": None, "steps": None,
                      **{key: shown.get(key) for key in ("learn", "before", "after", "check")}}
        return {**answer, "line_zh": line_zh(answer)}

    def unknown(self, folder):
        """How many changes to the kept digits the served folder's model does not know (promotion.unknown), or None."""
        try:
            return promotion.unknown(folder, self.kept)
        except (DataError, OSError):
            return None

    def nothing_new(self, folder, unknown=None):
        """learn.nothing_new's line for a learn into `folder` (the one rule mnist_learn.py follows; the board's way
        to learn anyway, AGAIN, in it), or None: something is new, or there is no folder. unknown: the count of
        changes the status has made already (self.unknown), else None."""
        return None if folder is None else learn.nothing_new(self.plan.to(folder, self.kept), again=AGAIN,
                                                             unknown=unknown)

    def one_digit(self):
        """The digit all kept digits are (the page warns before a learn: learn.one_digit), or None."""
        try:
            digits = {digit for _, digit in self.kept.entries()}
        except (DataError, OSError):
            return None
        return digits.pop() if len(digits) == 1 else None

    def new_lines(self, job, folder, unknown):
        """{"nothing_new": the line a learn would be refused with (nothing_new, from the status's count of unknown
        changes), or None while one runs or when something is new, "nothing_new_zh": its zh twin}: the page says it
        and offers to learn anyway."""
        said = None if job["state"] == "running" else self.nothing_new(folder, unknown)
        return {"nothing_new": said or None, "nothing_new_zh": zh.twin(said, 409) if said else None}

    def doing(self, job):
        """{"doing": a key of learn.DOING or None, "taken": seconds it has taken, "left": seconds left or None} of
        the learn running (its Watch), so that the page's line moves while a script prints nothing."""
        watch = self.watch
        if job["state"] != "running" or watch is None:
            return {"doing": None, "taken": None, "left": None}
        doing, taken, left = watch.where()
        return {"doing": doing, "taken": round(taken), "left": None if left is None else round(left)}

    def start(self, model, slot="first", again=False):
        """Start learning into the checkpoint folder of `model` (a model.Model, served in `slot`); returns the
        status. BoardError 409 when one runs on this board (either network), one waits for a choice, there is
        no checkpoint folder to learn into (an export: learn_folder; a served folder gone), or, unless `again`,
        the model in service learned every kept digit already (learn.nothing_new's line); 400 when nothing is
        kept."""
        folder = learn_folder(model)
        count = store_call(self.kept.count)
        if not count:
            raise BoardError(400, f"{self.kept.folder}: no kept digits yet; keep some with the digit buttons first")
        if promotion.standing(folder)["held"]:
            raise BoardError(409, f"{folder}: a learned checkpoint waits for your choice: use it anyway or discard "
                                  "it, then learn again")
        said = not again and self.nothing_new(folder)
        if said:  # the same digits again: refused with the terminal's line, nothing trained
            raise BoardError(409, said)
        with self.lock:
            if self.job["state"] == "running":
                raise self.busy()
            start = checkpoints.step_of(newest_in(folder))
            self.job = {"state": "running", "stage": learn.STAGES[0], "line": f"learning from {count} kept digits "
                        f"into {folder}", "step": start, "steps": start + self.plan.steps, "folder": folder}
            self.watch = learn.Watch(self.said, self.moved)
            self.thread = threading.Thread(target=self.run, args=(folder, model, self.watch, self.followers[slot]),
                                           name="learn", daemon=True)
        self.thread.start()
        return self.status(model)

    def run(self, folder, model, watch, follower=None):
        """Learn into `folder`; "done" once `follower` (the Follower of the slot `model` is served in) answers with
        the learned checkpoint, or after TAKEN_SECS; "failed" with the error's line; a held learn: the record's."""
        try:
            learned = learn.learn(self.plan.to(folder, self.kept), watch=watch)
            step = checkpoints.step_of(learned)
            with self.lock:
                self.job["step"] = step
            if model.form == "checkpoint" and follower is not None:  # an export's folder is not followed
                follower.wait_until(lambda answering: answering.global_step == step, TAKEN_SECS)
            ended = "done"
        except learn.LearnHeld as e:
            self.said(str(e))
            ended = "held"
        except (DataError, OSError, KeyboardInterrupt) as e:
            self.said(f"error: {e}")
            ended = "failed"
        with self.lock:
            self.job["state"] = ended
            self.ended_at = mark(promotion.standing(folder))
            self.failed_at = self.ended_at if ended == "failed" else None

    def said(self, line):
        """One line of the learn's output: the page shows the last."""
        with self.lock:
            self.job["line"] = line

    def moved(self, stage, step, steps):
        """A stage begun, or a trainer's step (learn.Watch's progress)."""
        with self.lock:
            self.job["stage"] = stage
            if step is not None:
                self.job["step"] = step
            if steps is not None:
                self.job["steps"] = steps

    def busy(self):
        """The BoardError 409 of the learn running (self.job's folder), to a second learn or a choice; call it holding
        self.lock."""
        return BoardError(409, f"a learn is running on {self.job['folder']}; wait until it ends (one learn at a time "
                               "on a board)")

    def choose(self, model, slot, choice):
        """choice(folder) (promotion.undo, redo, accept or discard) on the folder of `model` (served in `slot`), that
        slot's Follower told at once; the status, its "line" the choice's (the one mnist_learn.py prints: `back to
        ...`), kept while the folder's learns stay as the choice left them. BoardError 409 for what cannot be done
        (one line: a learn running, nothing to undo, the folder trained further since, ...)."""
        folder = learn_folder(model)
        with self.lock:  # a learn running on the other network's folder keeps its line
            running = self.job["state"] == "running"
            if running and os.path.realpath(self.job["folder"]) == os.path.realpath(folder):
                raise self.busy()  # until its thread ends, promoting included: its checkpoint is not yet shown
        said = []
        try:
            choice(folder, out=said.append)
        except DataError as e:
            raise BoardError(409, str(e)) from None
        with self.lock:
            self.chosen[os.path.realpath(folder)] = (mark(promotion.standing(folder)), " ".join(said))
        follower = self.followers[slot]
        if follower is not None:
            follower.poll()  # the board answers with the checkpoint now in service without waiting a poll
        return self.status(follower.model.current if follower is not None else model)

    def stop(self):
        """The server stops: the learn running is told to stop (its script gets SIGTERM); see end()."""
        with self.lock:
            self.stopped = self.stopped or self.job["state"] == "running"
        watch = self.watch
        if watch is not None:
            watch.stop()

    def end(self, grace):
        """Wait up to `grace` seconds for a stopped learn to clean up (its staging folder removed, the folder's lock
        released), its script killed (SIGKILL) if it is still running then. Returns whether a learn was running
        (then stopped: its model folder as it was)."""
        thread, watch = self.thread, self.watch
        if thread is None:
            return False
        self.stop()
        thread.join(grace)
        if thread.is_alive() and watch is not None:
            watch.stop(kill=True)
            thread.join(grace)
        return self.stopped


def line_zh(answer):
    """The Chinese twin of a status's line (str; "" when it has none): every line a user sees comes in both
    languages. A failed learn's error line: zh.twin; a running learn's: said whole by zh's phrases, else what the
    page shows of the learn in Chinese (its stage and step: zh.running), never half English."""
    line = answer["line"]
    if not line:
        return ""
    if answer["state"] != "running":
        return zh.twin(line, 500 if answer["state"] == "failed" else 409)
    return zh.phrased(line) or zh.running(answer["stage"], answer["step"], answer["steps"])


# how to learn anyway on the board, in learn.nothing_new's line: the page's button (board.js's learnAgain), the route
AGAIN = 'click "Learn again anyway" (POST /board/learn?again=1)'
SLOTS = ("first", "compare")  # the networks a board learns on: --model-dir's, --compare's (table.chosen's names)
IDLE = {"state": "idle", "stage": None, "line": "", "step": None, "steps": None, "folder": None}  # no learn yet


def mark(stand):
    """Which change of a folder's learns `stand` (promotion.standing's) is the last: (its learn, its time), or None."""
    last = stand["last"]
    return None if last is None else (last.get("learn"), last.get("changed"))


def served_folder(model):
    """The checkpoint folder of the served `model` whose learns GET /board/learn tells (learn_folder), or None."""
    try:
        return learn_folder(model)
    except BoardError:
        return None


TAKEN_SECS = 5 * POLL_SECS  # how long a finished learn waits for the Follower to serve its checkpoint


def learn_folder(model):
    """The checkpoint folder a learn on `model` (a model.Model) trains: a checkpoint's own folder. BoardError 409 for
    an export (a SavedModel, a .tflite): a learn trains checkpoints, and the export served would answer as before
    whatever it learned; the line names the folder its record names to serve instead (when it holds checkpoints)
    and says to export again, else that the folder is needed."""
    if model.form == "checkpoint":
        return os.path.dirname(str(model.predictor.source)) or "."
    record = getattr(model.predictor, "record", None) or {}
    folder = os.path.dirname(str(record.get("checkpoint", "")))
    if folder and checkpoints.latest(folder) is not None:
        raise BoardError(409, f"{model.predictor.source}: a learn trains the checkpoint folder {folder}, not this "
                              "export, which would answer as before; serve that folder "
                              f"(mnist_app.py --serve --model-dir {folder}), learn there, then export again "
                              "(mnist_export.py)")
    raise BoardError(409, f"{model.predictor.source}: learning needs the checkpoint folder this export came from"
                          + (f" ({folder} holds no checkpoint)" if folder else "") +
                          "; serve that folder (mnist_app.py --serve --model-dir FOLDER) and learn there")


def newest_in(folder):
    """The newest checkpoint's prefix in the served folder; BoardError 409 naming the folder when it is gone or
    holds none any more (moved or deleted while the board served it)."""
    newest = checkpoints.latest(folder)
    if newest is None:
        gone = "is gone" if not os.path.isdir(folder) else "holds no checkpoint any more"
        raise BoardError(409, f"{folder}: the model folder the board serves {gone}; put it back, or serve another "
                              "(mnist_app.py --serve --model-dir FOLDER)")
    return newest

"""The drawing board's assembly: its route table, what it serves, and serve().

Used by `mnist_app.py --serve`, which passes in its loader (load_predictor:
a checkpoint, a SavedModel or a .tflite file) and its own preparation of a
picture (prepared_pixels, the same as --show-input writes): the board never
imports a course script. open_board() builds what is served in one place
(Served: the Model, the Follower that keeps it the newest model of
--model-dir, the kept digits and the learn, which waits on that Follower,
the test set's mistakes, and with --compare a second Model and its own
Follower); create_app() gives it its routes; serve() listens until Ctrl-C.

The routes, each one entry of ROUTES (tests/test_board_routes.py checks
this list and docs/deploy.md's table against it):

  GET     /                                              the page (static/index.html)
  GET     /board.js                                      the page's script
  GET     /board.css                                     the page's style
  GET     /inside.js                                     the Inside panel's script
  GET     /inside.css                                    the Inside panel's style
  GET     /why.js                                        the Why panel's script
  GET     /history.js                                    the playback's script
  GET     /board/model                                   which model answers: network, global_step, form, source
  POST    /board/predict                                 a picture's bytes (PNG, JPEG, ...) -> digit, probabilities
  POST    /board/inside                                  a picture's bytes -> the same, and forward()'s layers
  GET     /board/inside/unit                             ?layer=L&unit=N: a unit's incoming and outgoing weights
  POST    /board/why                                     a picture's bytes -> each pixel's share of a logit (why.py)
  GET     /board/atlas                                   the test digits on a 2-D map of the last hidden layer
  GET     /board/mistakes                                the test set's confusion matrix, a cell, a digit's inside
  GET     /board/history                                 the served folder's training snapshots, with their accuracy
  GET     /board/history/unit                            ?step=S&layer=L&unit=N: a unit's incoming weights then
  POST    /board/playback                                a picture's bytes -> every snapshot's probabilities
  POST    /board/keep                                    a corrected digit kept (teach.py)
  GET     /board/kept                                    the kept digits
  GET     /board/kept/<name>                             one kept digit's JPG
  DELETE  /board/kept/<name>                             one kept digit removed
  GET     /board/learn                                   the learn's state, its stage and its check (?model=compare)
  POST    /board/learn                                   a learn started on the served folder (?model=compare)
  POST    /board/learn/undo                              the last learn undone
  POST    /board/learn/redo                              the last undone learn put back
  POST    /board/learn/accept                            a learn held for a choice used anyway
  POST    /board/learn/discard                           a learn held for a choice removed
  POST    /v1/models/<name>[/versions/<N>]:predict       TF Serving's predict: {"instances": ...} or {"inputs": ...}
  GET     /v1/models/<name>[/versions/<N>][/metadata]    TF Serving's version status, or its metadata
  ANY     /v1/...                                        anything else there: TF Serving's 400 "Malformed request"

Every route passes the table's guard, body limit and error form
(table.Board). Requests run on several threads; the predictors are
thread-safe (mnistkit.deployed, mnist_app.Predictor).
"""
import dataclasses
import signal
import sys

from .. import learn, listener
from ..errors import DataError, Interrupted
from . import atlas, inside, memory, mistakes, page, playback, serving, teach, threads, why
from .guard import Access
from .mistakes import STOP_WAIT, Mistakes
from .model import Follower, Model
from .table import ANY, JSON, LOOP, MAX_BODY, Board, Route

HOST, PORT = listener.LOOPBACK[0], 8501  # 8501: TF Serving's REST port
OPEN_WARNING = ("warning: --host {host}: anyone on your network can use this server (draw, send pictures); "
                "the default --host 127.0.0.1 keeps it to this computer")

ROUTES = (
    Route("GET", "/", page.page, runs=LOOP),
    Route("GET", "/board.js", page.page, runs=LOOP),
    Route("GET", "/board.css", page.page, runs=LOOP),
    Route("GET", "/inside.js", page.page, runs=LOOP),
    Route("GET", "/inside.css", page.page, runs=LOOP),
    Route("GET", "/why.js", page.page, runs=LOOP),
    Route("GET", "/history.js", page.page, runs=LOOP),
    Route("GET", "/board/model", page.model_line, runs=LOOP),
    Route("POST", "/board/predict", page.predict, body=MAX_BODY),
    Route("POST", "/board/inside", inside.inside, body=MAX_BODY),
    Route("GET", "/board/inside/unit", inside.unit),
    Route("POST", "/board/why", why.why, body=MAX_BODY),
    Route("GET", "/board/atlas", atlas.atlas),
    Route("GET", "/board/mistakes", mistakes.mistakes),
    Route("GET", "/board/history", playback.history_answer),
    Route("GET", "/board/history/unit", playback.unit),
    Route("POST", "/board/playback", playback.playback, body=MAX_BODY),
    Route("POST", "/board/keep", teach.keep_digit, body=MAX_BODY, takes=JSON, form=teach.KEEP_FORM),
    Route("GET", "/board/kept", teach.kept_list),
    Route("GET", "/board/kept/<name>", teach.kept_jpg),
    Route("DELETE", "/board/kept/<name>", teach.kept_remove),
    Route("GET", "/board/learn", teach.learn_status),
    Route("POST", "/board/learn", teach.learn_start),
    Route("POST", "/board/learn/undo", teach.learn_undo),
    Route("POST", "/board/learn/redo", teach.learn_redo),
    Route("POST", "/board/learn/accept", teach.learn_accept),
    Route("POST", "/board/learn/discard", teach.learn_discard),
    Route("POST", "/v1/models/<name>[/versions/<N>]:predict", serving.predict, body=MAX_BODY, takes=JSON,
          pattern=serving.PREDICT_PATH, raw=True),
    Route("GET", "/v1/models/<name>[/versions/<N>][/metadata]", serving.status, body=MAX_BODY, runs=LOOP,
          pattern=serving.STATUS_PATH, raw=True),  # a body sent with it: read, ignored (TF Serving)
    Route(ANY, "/v1/...", serving.malformed, body=MAX_BODY, runs=LOOP, pattern=serving.ANY_PATH, raw=True),
)


@dataclasses.dataclass
class Served:
    """What one board serves, handed to every handler (table.Call.served).

    model: the model.Model whose `current` answers; follower: the
    model.Follower that keeps it the newest, or None; kept: the
    keep.KeptDigits store of the page's corrected digits, or None (no keep
    routes: 404); learning: the teach.Learning on them, or None;
    mistakes: the test set's scorings (mistakes.Mistakes); compare: the
    second Model (--compare), or None, and compare_follower its Follower.
    The kept digits are one store for both models; a learn goes into the
    folder of the model the request's query names (teach.learn_side).
    """
    model: Model
    follower: Follower = None
    kept: object = None
    learning: teach.Learning = None
    mistakes: Mistakes = dataclasses.field(default_factory=Mistakes)
    compare: Model = None
    compare_follower: Follower = None
    atlases: object = None  # atlas.Atlases: the test digits' map per model slot (made on first use when None)

    def followers(self):
        """The Followers to start and stop with the server."""
        return [f for f in (self.follower, self.compare_follower) if f is not None]

    def close(self, wait=STOP_WAIT):
        """Stop the board's background work: the Followers' polling, the mistakes' scorings and the atlases'
        references, each after its batch, waiting at most `wait` seconds for each thread under way (so that no
        model run is cut by the process's end). serve() calls it as the server stops; a board made without a
        server (a test's) is closed the same way. A learn running is not stopped here (teach.Learning.end)."""
        for follower in self.followers():
            follower.stop()
        self.mistakes.stop(wait)
        if self.atlases is not None:
            self.atlases.stop(wait)


def open_board(load, prepare, path, kept=None, plan=None, compare=None, data_dir=None):
    """Served for the model at `path`: its Model, the Follower of `path` and, with a store, the learn on it.

    load(): the predictor of the newest model at `path` (raises DataError
    when it cannot be served); prepare(data, name): a picture's bytes ->
    uint8 [28, 28] (Model's); kept: a keep.KeptDigits store or None; plan:
    the learn's settings, a learn.Plan (mnist_app.py's --learn-* flags,
    learn.Plan.of; None: the defaults), handed whole to teach.Learning;
    its data_dir's test records are the mistakes' (data_dir: another);
    compare: (load, path) of a second model served beside the first, with a
    Follower of its own, or None. Raises DataError as load() does (the
    second's said as --compare's).
    """
    threads.one_blas_thread()  # the board's NumPy products (playback, reasons) on the threads asking for them
    plan = plan or learn.Plan()
    if data_dir is not None:
        plan = dataclasses.replace(plan, data_dir=data_dir)
    model = Model(load(), prepare)
    follower = Follower(model, load, path)
    learning = None if kept is None else teach.Learning(kept, follower, plan)
    data_dir = plan.data_dir
    served = Served(model, follower, kept, learning, Mistakes(data_dir), atlases=atlas.Atlases(data_dir))
    if compare:
        second_load, second_path = compare
        try:
            second = second_load()
        except DataError as e:
            raise DataError(f"--compare: {e}") from None
        served.compare = Model(second, prepare, model.preparing)
        served.compare_follower = Follower(served.compare, second_load, second_path)
        if learning is not None:  # a learn on the --compare network waits for its own Follower to serve it
            learning.followers["compare"] = served.compare_follower
    return served


def create_app(served, access=None, routes=ROUTES):
    """The ASGI application serving `served` (Served) through `routes` (table.Route, in order).

    access: a guard.Access, who may use it; None: Access(), the loopback
    names only. Each request reads served.model.current once (a Follower
    may put a newer Model there) and is answered by that Model to its end.
    """
    return Board(routes, served, access or Access())


def serve(served, host=HOST, port=PORT, out=print, access=None, grace=listener.SHUTDOWN_GRACE, routes=ROUTES,
          sock=None):
    """Serve `served` (Served) at host:port until Ctrl-C or SIGTERM, then raise errors.Interrupted with the stop line.

    access: a guard.Access (--allow-host, --allow-origin); None:
    Access(host); routes: create_app's; sock: the socket listener.bind made on host:port already (closed at the
    end), else bound here. Prints the address (`http://127.0.0.1:8501/`) once the
    socket listens, and for --host 0.0.0.0 a second line with the addresses
    a phone on the network opens; a one-line warning first when host is not
    a loopback address, one naming a line of the kept digits' label
    file the store cannot read, and a note for each staging folder and lock a learn killed between its
    scripts left (learn.leftovers: removed). The Followers poll while it serves. Raises
    DataError when the address cannot be bound. The connections are
    mnistkit.listener's: a first signal stops the server within `grace`
    seconds, whatever clients do, and is raised here afterwards as
    Interrupted (the script ends with 128 + its number), its line naming the
    requests the grace cut; a second one ends the process at once. A learn
    running is told to stop at that first signal, and given the grace to
    clean up (teach.Learning.stop, end).
    """
    sock = listener.bind(host, port) if sock is None else sock
    memory.map_large_allocations()  # a large picture's memory goes back to the system once it is read
    if host not in listener.LOOPBACK:
        print(OPEN_WARNING.format(host=host), file=sys.stderr, flush=True)
    app = create_app(served, access or Access(host), routes)
    here, network = listener.addresses(sock)
    model, second = served.model, served.compare
    beside = "" if second is None else (f" beside {second.name} ({second.predictor.network.label}, {second.form}: "
                                        f"{second.predictor.source})")
    out(f"serving {model.name} ({model.predictor.network.label}, {model.form}: {model.predictor.source}){beside} "
        f"at {here}  (Ctrl-C stops)")
    if sock.getsockname()[0] in listener.EVERY_INTERFACE:
        out(f"  from a phone on this network: {'  '.join(network)}" if network else
            "  no network address found for a phone: is this computer on a network?")
    sys.stdout.flush()
    problem = None if served.kept is None else served.kept.problem()
    if problem is not None:  # said once; the page lists the rest, and keeping waits for the fix
        print(f"warning: {problem}", file=sys.stderr, flush=True)
    for line in learn.leftovers([f.path for f in served.followers()], ours=True):  # a learn killed between scripts
        print(line, file=sys.stderr, flush=True)
    for follower in served.followers():
        follower.start()
    learning, learn_stopped = served.learning, False
    try:
        signum, cut = listener.run(app, sock, grace, stopping=learning and learning.stop)
    finally:
        sock.close()
        served.close()
        if learning is not None:
            learn_stopped = learning.end(grace)
    raise Interrupted(signum, stop_line(signum, cut, grace, learn_stopped))


def stop_line(signum, cut, grace, learn_stopped=False):
    """The server's last line: `SIGINT: stopped`, how many requests the grace cut, when it cut any, and that the
    learn running was stopped (learn_stopped), its model folder left as it was."""
    line = f"{signal.Signals(signum).name}: stopped"
    if cut:
        line += f": {cut} request{'s' if cut > 1 else ''} still running {'were' if cut > 1 else 'was'} cut after " \
                f"{grace:g} s"
    if learn_stopped:
        line += "; the learn running was stopped and its model folder left as it was (learn again to go on)"
    return line

"""Benchmark: the drawing board (`mnist_app.py --serve`) with a .tflite export and a checkpoint.

Usage (from the repository root, after `python mnist_backward.py` and `python mnist_export.py`,
or with --work naming a folder that holds model/ and export/):
  python bench/board.py                       # all four figures, both forms
  python bench/board.py --screenshot docs/board.png   # the checkpoint's page after a 7
  python bench/board.py --page-under-load     # figure 4 alone (no browser)
  python bench/board.py --inside              # figure 5 alone: the Inside panel open and closed
  python bench/board.py --inside-pictures docs --unit 332   # docs/inside.md's screenshots (unit: a y1 unit)
  python bench/board.py --why                 # figure 6 alone: why, inside with the map, playback (issue 52's speed)
  python bench/board.py --why --baseline /tmp/main --until-load 8   # the same beside another checkout, when quieter
  python bench/board.py --playback            # figure 7 alone: POST /board/playback over 20 snapshots
  python bench/board.py --playback-picture docs/history.png   # docs/inside.md's playback screenshot (LeNet-5's)

Four figures, for each form (.tflite: export/mnist.tflite; checkpoint: model/):
  1. Command to first answer: from starting `python mnist_app.py --serve --port 0`
     to the first 200 answer of POST /v1/models/mnist:predict (the interpreter's
     start, the imports, the restore; for a checkpoint, TensorFlow's import too).
  2. Stroke end to digit, in the browser (Debian's Chromium through Playwright):
     from the page's pointerup to the digit and bars shown (board.js's
     window.boardTimes), --strokes strokes of a 7 and a 0 drawn with the mouse.
  3. Requests per second at --clients concurrent clients (processes), each
     sending single-image TF Serving predict requests over its own kept-alive
     connection for --seconds (.tflite only; the clients share the machine).
  4. The page's answers under big predicts: GET /board/model, asked every
     PAGE_PAUSE s for --seconds while --big-clients processes post
     BIG_ROWS-row predicts (about 7.5 MB each) one after another: its median,
     90th percentile and slowest time (.tflite only).
  5. The Inside panel (--inside): stroke end to answer shown with the panel
     closed (POST /board/predict) and open (POST /board/inside, the layers
     drawn), alternating, --strokes strokes each, for the 784-500-10
     checkpoint (model/), LeNet-5's (model_lenet5/) and --compare with both;
     and the bytes of an inside answer.
  6. Why, the map and the playback (--why): POST /board/why?versus=E, POST
     /board/inside (with where the drawing falls on the map of the test
     digits), POST /board/playback (every snapshot of the folder's history/)
     and POST /board/predict, asked in turn for --strokes drawings
     (tests/handmade.py's pen), once the map is made, for the 784-500-10
     checkpoint and LeNet-5's: medians, slowest, the answers' KB, the load
     average sampled during the run, and how long the map took (the first
     start: later ones read it from the cache). --baseline DIR serves
     DIR's checkout beside this one, asked in turn, and prints the ratios;
     --until-load L first waits for a load average of at most L.
  7. Playback (--playback): POST /board/playback of a drawn 4, --strokes
     times after one to read the snapshots, for model/ and model_lenet5/
     (each trained with --history's default 20): the median and slowest
     time, POST /board/predict's median for the same picture (asked in
     turn: the picture's preparation and the request's own cost), the
     answer's bytes and the snapshots' megabytes on disk.
Beside them, what the page reads for the digits 0-9 drawn with the mouse from
tests/handmade.py's pen strokes (as a user draws them: one to two strokes each).
Targets: 1. <= 2 s (.tflite), import + 2 s (checkpoint); 2. <= 100 ms
(.tflite), <= 150 ms (checkpoint); 3. >= 500 requests/s; 4. a median of at
most 0.1 s; 5. panel open, median <= 100 ms (784-500-10), <= 150 ms
(LeNet-5), <= 200 ms (--compare), an answer <= 100 KB; 6. each <= 150 ms
median at a load <= 8 on 2 cores, an answer <= 150 KB; 7. a median of at
most 150 ms, an answer <= 150 KB, the 784-500-10 network's snapshots <= 60 MB.
Figures go to docs/performance.md (6: docs/inside.md).
"""
import http.client
import json
import multiprocessing
import os
import re
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]  # the browser tests' strokes and drawing
from mnistkit import cli  # noqa: E402
FORMS = {"tflite": os.path.join("export", "mnist.tflite"), "checkpoint": "model"}
ADDRESS = re.compile(r"at (http://\S+/)")
REQUEST = json.dumps({"instances": [[0.0] * 784]}).encode()
BIG_ROWS = 2400  # rows of a big predict: 7.5 MB of JSON, as in issue 46's measurement
PAGE_PAUSE = 0.05  # seconds between the page's GETs in figure 4


INSIDE_SERVERS = {"784-500-10": ("model",), "LeNet-5": ("model_lenet5",),
                  "--compare": ("model", "--compare", "model_lenet5")}  # figure 5's: --model-dir, more arguments


def start(work, model_dir, *more, root=ROOT):
    """(process, url, seconds from the command to its first predict answer) of `mnist_app.py --serve --port 0`,
    the one of the checkout at `root` (this one unless a baseline's)."""
    began = time.perf_counter()
    process = subprocess.Popen([sys.executable, os.path.join(root, "mnist_app.py"), "--serve", "--port", "0",
                                "--model-dir", model_dir, *more], cwd=work, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, encoding="utf-8", errors="replace")
    line = process.stdout.readline()
    found = ADDRESS.search(line)
    if found is None:
        raise SystemExit(f"error: {model_dir}: the server printed no address: {line!r}")
    url = found.group(1)
    host, port = url.split("//")[1].rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    name = "mnist_lenet5" if "lenet5" in model_dir else "mnist"
    connection.request("POST", f"/v1/models/{name}:predict", REQUEST)
    answer = connection.getresponse()
    answer.read()
    assert answer.status == 200, answer.status
    connection.close()
    return process, url, time.perf_counter() - began


def stop(process):
    process.send_signal(signal.SIGINT)
    process.wait(60)


def stroke_latencies(browser, url, strokes, screenshot=None):
    """Stroke end to digit shown (ms, floats) for `strokes` strokes; saves a screenshot after a 7 when asked."""
    from test_board_browser import SEVEN, ZERO, draw_with_mouse
    page = browser.new_context(locale="en-US", viewport={"width": 820, "height": 620}).new_page()
    page.goto(url)
    page.wait_for_function("document.getElementById('model').dataset.form !== undefined")
    for i in range(strokes):
        page.click("#clear")
        digit, _ = draw_with_mouse(page, SEVEN if i % 2 else ZERO)
    if screenshot:
        page.click("#clear")
        draw_with_mouse(page, SEVEN)
        page.screenshot(path=screenshot, full_page=True)
    times = page.evaluate("window.boardTimes")
    page.context.close()
    return [shown - ended for ended, shown in times[:strokes]]


def board_page(browser, url, width, height):
    """A new page of the board at url in a window of width x height, once its model line is shown."""
    page = browser.new_context(locale="en-US", viewport={"width": width, "height": height}).new_page()
    page.goto(url)
    page.wait_for_function("document.getElementById('model').dataset.form !== undefined")
    return page


def inside_latencies(browser, url, strokes):
    """({"closed": [ms], "open": [ms]}, bytes of an inside answer): stroke end to answer shown with the Inside
    panel closed and open, alternating, `strokes` of each (a 7 and a 0 in turn)."""
    from test_board_browser import SEVEN, ZERO, draw_with_mouse
    page = board_page(browser, url, 1100, 900)
    draw_with_mouse(page, SEVEN)  # the first answer brings the panel's button
    found = {"closed": [], "open": []}
    for i in range(2 * strokes):
        state = "open" if i % 2 else "closed"
        if (page.get_attribute("#inside-open", "aria-expanded") == "true") != (state == "open"):
            page.click("#inside-open")
        page.click("#clear")
        before = len(page.evaluate("window.boardTimes"))
        draw_with_mouse(page, SEVEN if i % 4 < 2 else ZERO)
        ended, shown = page.evaluate("window.boardTimes")[before]
        found[state].append(shown - ended)
    size = page.evaluate("""async () => {
        const blob = await new Promise(r => document.getElementById('board').toBlob(r, 'image/png'));
        const answer = await fetch('/board/inside', {method: 'POST', body: blob});
        return (await answer.arrayBuffer()).byteLength; }""")
    page.context.close()
    return found, size


def inside_figure(args):
    """Figure 5: print the stroke-to-answer times with the Inside panel closed and open, and an answer's size."""
    from playwright.sync_api import sync_playwright
    before = load_average()
    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        for name, served in INSIDE_SERVERS.items():
            process, url, _ = start(args.work, *served)
            try:
                found, size = inside_latencies(browser, url, args.strokes)
            finally:
                stop(process)
            rows.append((name, *(statistics.median(found[state]) for state in ("closed", "open")),
                         max(found["open"]), size))
        browser.close()
    load = " -> ".join("?" if value is None else f"{value:.1f}" for value in (before, load_average()))
    print(f"Inside panel, {args.strokes} strokes each way (load {load}):")
    print("| served | stroke end to answer, panel closed (median) | panel open (median) | open, slowest | "
          "inside answer |")
    print("|---|---|---|---|---|")
    for name, closed, opened, slowest, size in rows:
        print(f"| {name} | {closed:.0f} ms | {opened:.0f} ms | {slowest:.0f} ms | {size / 1000:.0f} KB |")


WHY_SERVERS = {"784-500-10": "model", "LeNet-5": "model_lenet5"}  # figure 6's --model-dir
ASKED = {"why": "/board/why?versus={versus}", "inside": "/board/inside", "playback": "/board/playback",
         "predict": "/board/predict"}  # figure 6's routes, asked in turn for each drawing
TARGET_MS, TARGET_KB, TARGET_LOAD = 150, 150, 8  # issue 52: each median <= 150 ms at a load <= 8, answers <= 150 KB


def timed_post(connection, path, body):
    """(seconds, bytes of the answer) of one POST on a kept-alive connection; the answer must be 200."""
    began = time.perf_counter()
    connection.request("POST", path, body, {"Content-Type": "image/png"})
    answer = connection.getresponse()
    data = answer.read()
    assert answer.status == 200, (path, answer.status, data[:200])
    return time.perf_counter() - began, len(data)


def connect(url, timeout=600):
    """A kept-alive connection to the server at url."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=timeout)


def map_made(connection):
    """(seconds until GET /board/atlas stops answering 202 "making", bytes of its answer)."""
    began = time.perf_counter()
    while True:
        connection.request("GET", "/board/atlas")
        answer = connection.getresponse()
        atlas = answer.read()
        if answer.status != 202:
            return time.perf_counter() - began, len(atlas)
        time.sleep(0.5)


def wait_for_load(most, minutes):
    """Wait until the 1-minute load average is at most `most` (None: do not wait), for `minutes` at most; the
    load it starts at (float, or None where the system does not tell it)."""
    stop_at = time.monotonic() + 60 * minutes
    while most is not None and (load_average() or 0) > most and time.monotonic() < stop_at:
        time.sleep(5)
    return load_average()


def why_figure(args):
    """Figure 6: issue 52's speed. For drawings (tests/handmade.py's pen), per network, once the map is made,
    POST /board/why?versus=E, /board/inside (with the drawing's place on the map), /board/playback (every
    snapshot, when the model folder has a history/) and /board/predict (the picture's preparation and the
    request's own cost), asked in turn; with --baseline, each also of the baseline checkout's server, in turn
    with this one's, so that both meet the same load. Prints each route's median and slowest time, its
    largest answer in KB, and the 1-minute load average sampled after every drawing."""
    import handmade
    from test_board import png_bytes
    pngs = [png_bytes(handmade.on_paper(handmade.draw_digit(d % 10, 200, 0.06, seed=d))) for d in range(args.strokes)]
    roots = {"this": ROOT, **({"baseline": os.path.abspath(args.baseline)} if args.baseline else {})}
    rows, loads = [], []
    for name, model_dir in WHY_SERVERS.items():
        routes = [r for r in ASKED if r != "playback" or os.path.isdir(os.path.join(args.work, model_dir, "history"))]
        loads.append(wait_for_load(args.until_load, args.until_minutes))
        servers = {}
        try:
            for code, root in roots.items():
                servers[code] = start(args.work, model_dir, root=root)[:2]
            connections = {code: connect(url) for code, (_, url) in servers.items()}
            made = {code: map_made(connection) for code, connection in connections.items()}
            for connection in connections.values():  # the snapshots read from disk, TensorFlow's first runs
                for route in routes:
                    timed_post(connection, ASKED[route].format(versus=1), pngs[0])
            found = {(code, route): [] for code in roots for route in routes}
            for i, png in enumerate(pngs):
                for route in routes:
                    for code, connection in list(connections.items())[::1 if i % 2 else -1]:  # each first in turn
                        found[code, route].append(timed_post(connection, ASKED[route].format(versus=(i + 1) % 10),
                                                             png))
                loads.append(load_average())
        finally:
            for process, _ in servers.values():
                stop(process)
        for code in roots:
            rows.append((name, code, made[code], {route: (statistics.median(t for t, _ in found[code, route]) * 1000,
                                                          max(t for t, _ in found[code, route]) * 1000,
                                                          max(b for _, b in found[code, route]) / 1000)
                                                  for route in routes}))
    print_why_figure(args, rows, [value for value in loads if value is not None])


def print_why_figure(args, rows, loads):
    """Figure 6's table (ms, KB), the load average during the run, and with a baseline its ratios to this."""
    during = (f"{min(loads):.1f} to {max(loads):.1f}, median {statistics.median(loads):.1f}" if loads else "unknown")
    print(f"Why, inside with the map, playback and predict, {args.strokes} drawings each, asked in turn (1-minute "
          f"load average during the run: {during}; targets: a median <= {TARGET_MS} ms at a load <= {TARGET_LOAD}, "
          f"an answer <= {TARGET_KB} KB):")
    print("| served | code | map ready after | " + " | ".join(f"{route} median | slowest | answer"
                                                         for route in ASKED) + " |")
    print("|---|---|---|" + "---|---|---|" * len(ASKED))
    for name, code, (made, atlas_bytes), figures in rows:
        cells = [f"{figures[route][0]:.0f} ms | {figures[route][1]:.0f} ms | {figures[route][2]:.1f} KB"
                 if route in figures else "- | - | -" for route in ASKED]
        print(f"| {name} | {code} | {made:.1f} s ({atlas_bytes / 1000:.0f} KB) | " + " | ".join(cells) + " |")
    ours = {name: figures for name, code, _, figures in rows if code == "this"}
    for name, code, _, figures in rows:
        if code == "baseline":
            print(f"{name}, baseline median / this median: " + ", ".join(
                f"{route} {figures[route][0] / ours[name][route][0]:.2f}" for route in figures))


def inside_pictures(args):
    """docs/inside.md's screenshots into args.inside_pictures, from --work's model/ beside model_lenet5/:
    inside-mlp.png and inside-lenet5.png (a 0 drawn: each network's layers, y1 unit args.unit's weights and
    conv1 map 0's filter),
    inside-compare.png (the answer to a narrow 9, which the two networks may read differently) and
    inside-mistakes.png (a cell of the test set's grid opened)."""
    import handmade
    from playwright.sync_api import sync_playwright
    from test_board_browser import ZERO, draw_with_mouse
    process, url, _ = start(args.work, *INSIDE_SERVERS["--compare"])

    def shot(selector, name):  # the element's screenshot, in 128 colours (a third of the bytes)
        from PIL import Image
        path = os.path.join(args.inside_pictures, name)
        page.locator(selector).screenshot(path=path)
        Image.open(path).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = board_page(browser, url, 900, 900)
            draw_with_mouse(page, [[(0.15 + 0.4 * x, 0.1 + 0.8 * y) for x, y in stroke]
                                   for stroke in handmade.STROKES[9]])
            shot(".answer", "inside-compare.png")
            page.click("#clear")
            draw_with_mouse(page, ZERO)
            page.click("#inside-open")
            page.wait_for_function("document.getElementById('inside').dataset.shown === '0'")
            page.mouse.move(0, 0)  # no unit hovered: the ones focused below show their weights
            page.focus(f'.net[data-slot="first"] button.unit[data-unit="{args.unit}"]')
            page.wait_for_function("document.querySelector('.net[data-slot=\"first\"] .detail').dataset.shown "
                                   f"=== 'y1 {args.unit}'")
            shot('.net[data-slot="first"]', "inside-mlp.png")
            page.focus('.net[data-slot="compare"] button.map[data-layer="conv1"][data-unit="0"]')
            page.wait_for_function("document.querySelector('.net[data-slot=\"compare\"] .detail').dataset.shown "
                                   "=== 'conv1 0'")
            shot('.net[data-slot="compare"]', "inside-lenet5.png")
            page.click("#inside .mistakes-open")
            page.wait_for_selector("#inside table.matrix", timeout=300_000)
            page.locator("#inside table.matrix td.wrong button").first.click()
            page.wait_for_selector("#inside .tests button.test")
            shot("#inside .mistakes", "inside-mistakes.png")
            browser.close()
    finally:
        stop(process)


def client(url, seconds, counts, i):
    """One client: single-image predict requests over one kept-alive connection for `seconds`; counts[i] answers."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    stop_at, done = time.perf_counter() + seconds, 0
    while time.perf_counter() < stop_at:
        connection.request("POST", "/v1/models/mnist:predict", REQUEST, {"Content-Type": "application/json"})
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 200
        done += 1
    connection.close()
    counts[i] = done


def digits_read(browser, url):
    """The digits the page shows for 0-9 drawn with the mouse from tests/handmade.py's pen strokes (str of 10)."""
    import handmade
    from test_board_browser import draw_with_mouse
    page = browser.new_context(locale="en-US").new_page()
    page.goto(url)
    page.wait_for_function("document.getElementById('model').dataset.form !== undefined")
    shown = ""
    for digit in range(10):
        page.click("#clear")
        strokes = [[(0.15 + 0.7 * x, 0.1 + 0.8 * y) for x, y in stroke] for stroke in handmade.STROKES[digit]]
        shown += draw_with_mouse(page, strokes)[0]
    page.context.close()
    return shown


def requests_per_second(url, clients, seconds):
    """Single-image predict answers per second from `clients` client processes (no shared GIL), together."""
    counts = multiprocessing.Array("l", clients)
    processes = [multiprocessing.Process(target=client, args=(url, seconds, counts, i)) for i in range(clients)]
    for p in processes:
        p.start()
    for p in processes:
        p.join()
    return sum(counts) / seconds


def big_client(url, seconds):
    """One client posting BIG_ROWS-row predicts (about 7.5 MB) one after another for `seconds`."""
    body = json.dumps({"instances": [[round(0.001 * (i % 997), 3) for i in range(784)]] * BIG_ROWS}).encode()
    host, port = url.split("//")[1].rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    stop_at = time.perf_counter() + seconds
    while time.perf_counter() < stop_at:
        connection.request("POST", "/v1/models/mnist:predict", body, {"Content-Type": "application/json"})
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 200, answer.status
    connection.close()


def page_under_big_predicts(url, clients, seconds):
    """Seconds (floats) each GET /board/model took while `clients` processes posted big predicts (figure 4)."""
    processes = [multiprocessing.Process(target=big_client, args=(url, seconds)) for _ in range(clients)]
    for p in processes:
        p.start()
    time.sleep(1)  # the big predicts under way
    host, port = url.split("//")[1].rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    took, stop_at = [], time.perf_counter() + seconds - 1
    while time.perf_counter() < stop_at:
        began = time.perf_counter()
        connection.request("GET", "/board/model")
        answer = connection.getresponse()
        answer.read()
        took.append(time.perf_counter() - began)
        time.sleep(PAGE_PAUSE)
    connection.close()
    for p in processes:
        p.join()
    return took


def load_average():
    """The 1-minute load average (float), or None where the system does not tell it."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def playback_figure(args):
    """Figure 7: POST /board/playback's time (ms: median, slowest), bytes, and the snapshots' MB, per network."""
    from test_board import drawn, png_bytes
    body = png_bytes(drawn(4))
    before = load_average()
    print("| network | snapshots | median ms | slowest ms | predict's median ms | answer KB | history/ MB |\n"
          "|---|---|---|---|---|---|---|")
    for label, model_dir in (("784-500-10", "model"), ("LeNet-5", "model_lenet5")):
        folder = os.path.join(args.work, model_dir, "history")
        if not os.path.isdir(folder):
            print(f"| {label} | none in {folder} | | | | | |")
            continue
        size = sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder)) / 1e6
        process, url, _ = start(args.work, model_dir)
        try:
            host, port = url.split("//")[1].rstrip("/").split(":")
            connection = http.client.HTTPConnection(host, int(port), timeout=120)
            times = {"/board/playback": [], "/board/predict": []}
            answer = b""
            for _ in range(args.strokes + 1):  # the first reads the snapshots from disk: not counted
                for path, kept in times.items():  # in turn, so that both see the same load
                    began = time.perf_counter()
                    connection.request("POST", path, body)
                    reply = connection.getresponse().read()
                    kept.append(1000 * (time.perf_counter() - began))
                    answer = reply if path == "/board/playback" else answer
            count, played = len(json.loads(answer)["snapshots"]), times["/board/playback"][1:]
            print(f"| {label} | {count} | {statistics.median(played):.0f} | {max(played):.0f} | "
                  f"{statistics.median(times['/board/predict'][1:]):.0f} | {len(answer) / 1000:.1f} | {size:.1f} |")
        finally:
            stop(process)
    print("1-minute load average: " + " -> ".join("?" if value is None else f"{value:.1f}"
                                                  for value in (before, load_average())))


def playback_picture(args):
    """docs/inside.md's playback screenshot: the board of --work's args.playback_model (a folder), a 4 drawn, the
    playback open at its 4th snapshot."""
    from playwright.sync_api import sync_playwright
    from test_board_browser import draw_with_mouse
    import handmade
    process, url, _ = start(args.work, args.playback_model)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = board_page(browser, url, 900, 900)
            draw_with_mouse(page, [[(0.15 + 0.7 * x, 0.1 + 0.8 * y) for x, y in stroke]
                                   for stroke in handmade.STROKES[4]])
            page.click("#history-open")
            page.wait_for_function("document.getElementById('history').dataset.state === 'played'", timeout=120_000)
            page.eval_on_selector("#history-slider", "s => { s.value = '3'; s.dispatchEvent(new Event('input')); }")
            page.wait_for_function("(document.querySelector('#history figure.unit').dataset.shown || '')"
                                   ".startsWith(document.getElementById('history').dataset.step + ' ')")
            page.locator("#history").screenshot(path=args.playback_picture)
            from PIL import Image
            Image.open(args.playback_picture).convert("RGB").quantize(colors=128).save(args.playback_picture,
                                                                                      optimize=True)
    finally:
        stop(process)


def tensorflow_import_seconds():
    """Seconds `import tensorflow.compat.v1` takes in a fresh process, through tf_compat as the scripts do."""
    code = "import time, tf_compat; t = time.perf_counter(); tf_compat.tf.Graph; print(time.perf_counter() - t)"
    return float(subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                                encoding="utf-8", errors="replace",
                                timeout=300, env={**os.environ, "PYTHONPATH": ROOT}).stdout)


def main():
    parser = cli.new_parser(__doc__)
    parser.add_argument("--work", default=".", help="the folder holding model/ and export/mnist.tflite")
    parser.add_argument("--strokes", type=int, default=20, help="strokes drawn per form")
    parser.add_argument("--starts", type=int, default=3, help="server starts per form (figure 1: the median)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (figure 3)")
    parser.add_argument("--seconds", type=float, default=10, help="seconds of requests (figure 3)")
    parser.add_argument("--screenshot", help="also save the page after a 7 as this PNG (the checkpoint's server)")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the browser Playwright drives")
    parser.add_argument("--big-clients", type=int, default=2, help="clients posting big predicts (figure 4)")
    parser.add_argument("--page-under-load", action="store_true", help="figure 4 alone, on the .tflite")
    parser.add_argument("--inside", action="store_true", help="figure 5 alone (--work holds model/ and model_lenet5/)")
    parser.add_argument("--inside-pictures", metavar="FOLDER", help="docs/inside.md's screenshots, into FOLDER")
    parser.add_argument("--unit", type=int, default=0, help="--inside-pictures: the y1 unit whose weights are shown")
    parser.add_argument("--why", action="store_true", help="figure 6 alone (--work holds model/ and model_lenet5/)")
    parser.add_argument("--baseline", metavar="DIR", help="figure 6: also serve from the checkout in DIR (e.g. "
                                                          "`git worktree add DIR main`), asked in turn with this one")
    parser.add_argument("--until-load", type=float, metavar="L", help="figure 6: before each network, wait until "
                                                                      "the 1-minute load average is at most L")
    parser.add_argument("--until-minutes", type=float, default=20, help="--until-load's longest wait, per network")
    parser.add_argument("--playback", action="store_true", help="figure 7 alone (--work's model/ and model_lenet5/)")
    parser.add_argument("--playback-picture", metavar="PNG", help="docs/inside.md's playback screenshot, as PNG")
    parser.add_argument("--playback-model", default="model_lenet5", help="--playback-picture's model folder")
    args = parser.parse_args()
    if args.why:
        return why_figure(args)
    if args.playback:
        return playback_figure(args)
    if args.playback_picture:
        return playback_picture(args)
    if args.inside_pictures:
        return inside_pictures(args)
    if args.inside:
        return inside_figure(args)
    page_figure(args)
    if args.page_under_load:
        return
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        for form, model_dir in FORMS.items():
            starts = []
            for _ in range(args.starts):
                process, url, seconds = start(args.work, model_dir)
                starts.append(seconds)
                stop(process)
            process, url, _ = start(args.work, model_dir)
            try:
                latencies = stroke_latencies(browser, url, args.strokes,
                                             args.screenshot if form == "checkpoint" else None)
                read = digits_read(browser, url)
                rate = requests_per_second(url, args.clients, args.seconds) if form == "tflite" else None
            finally:
                stop(process)
            rows.append((form, statistics.median(starts), statistics.median(latencies),
                         sorted(latencies)[int(0.9 * (len(latencies) - 1))], max(latencies), rate, read))
        browser.close()
    print(f"TensorFlow import: {tensorflow_import_seconds():.2f} s")
    print("| form | command to first answer | stroke end to digit, median | 90th percentile | slowest "
          f"| requests/s, {args.clients} clients | 0-9 drawn, read as |")
    print("|---|---|---|---|---|---|---|")
    for form, first, median, p90, slowest, rate, read in rows:
        print(f"| {form} | {first:.2f} s | {median:.0f} ms | {p90:.0f} ms | {slowest:.0f} ms | "
              f"{f'{rate:.0f}' if rate else '-'} | {read} |")


def page_figure(args):
    """Figure 4 on the .tflite: print the page's GET times under big predicts, with the load before and after."""
    before = load_average()
    process, url, _ = start(args.work, FORMS["tflite"])
    try:
        took = sorted(page_under_big_predicts(url, args.big_clients, args.seconds))
    finally:
        stop(process)
    load = " -> ".join("?" if value is None else f"{value:.1f}" for value in (before, load_average()))
    print(f"GET /board/model under {args.big_clients} clients' {BIG_ROWS}-row predicts ({len(took)} GETs, load "
          f"{load}): median {statistics.median(took) * 1000:.0f} ms, 90th percentile "
          f"{took[int(0.9 * (len(took) - 1))] * 1000:.0f} ms, slowest {took[-1] * 1000:.0f} ms")


if __name__ == "__main__":
    main()

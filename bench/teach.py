"""Benchmark: what teaching the board one person's digits gives (issue 37), one person simulated in Chromium.

Usage (from the repository root):
  python bench/teach.py                        train a 784-500-10 model on the bundled sample, then measure
  python bench/teach.py --train-steps 5000     a longer first training
  python bench/teach.py --style quirky         a person whose digits are further from MNIST's
  python bench/teach.py --idx-dir DIR          train on the 4 MNIST-format IDX files in DIR (full MNIST)
  python bench/teach.py --model-dir model      start from a model folder of yours (copied, never changed)
  python bench/teach.py --forgetting           the forgetting row: a hand whose corrections could pull another digit

One run, in the work folder (default bench/work/teach/sample, or a folder
named for --idx-dir; the data is kept for reuse, the model and the kept
digits are made anew):
  1. mnist_generateds.py, then mnist_backward.py --steps --train-steps (or
     a copy of --model-dir); mnist_test.py --once scores it on the official
     MNIST test set (--mnist-dir: the folder of its t10k-*.gz files, the
     10,000 digits written as TFRecords beside the training data), else on
     the data's own test records (the bundled sample's, or --idx-dir's).
  2. `mnist_app.py --serve --model-dir model --keep-dir my_digits` in the work
     folder; Chromium (Playwright) draws with the mouse, as a person does,
     --per-digit digits of each of 0-9 in one personal style (--style neat:
     a European 1 with a flag and a base, a 7 with a crossbar, a 9 with its
     stem as a second stroke, a 4 open at the top, all slanted right; quirky:
     further from MNIST's digits, e.g. a slashed 0, a flat-topped 3), each
     drawing jittered by its own seed (a shift, a scale, a turn, a wobble of
     each point). First the NEW drawings (other seeds), only read; then the
     TAUGHT ones, read, then kept under their true digit (the page's
     "That was a N" button).
  3. The page's "Learn from my digits" (#learn): from the click until GET
     /board/model reports the learned global_step (the model answering).
     A learn the check holds (a digit's recall fell past the limits) is
     noted, and used anyway ("Use it anyway") to measure it.
  4. The NEW drawings again, read by the learned model; mnist_test.py --once
     on the learned checkpoint.
--forgetting: the style "forgetting" (the quirky hand with a round,
snowman 8: two stacked circles, the 8 its slashed 0 is nearest to), only
its corrections taught (--taught 0:6,1:2,2:2,3:2,4:2: slashed zeros, long-
flagged 1s, looped 2s, flat-topped 3s, closed 4s; no 8) and 10 new
drawings of each digit (--new-per-digit), so that a pull of the zeros on
the 8s shows.
Prints a Markdown table: the reading of the new drawings and the MNIST test
accuracy before and after, the learn's wall time, each against its target
(new drawings >= 95% after; MNIST at most 0.5 points lower; learn <= 60 s);
then each digit: its new drawings read right and its MNIST recall, before
and after (no digit's recall should fall more than 2 points).
Figures go to docs/teach.md ("What it gives") and docs/performance.md.
A benchmark, not a test: the figures move with the model's training (unseeded)
and the machine's load.
"""
import datetime
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

from bench import ROOT, WORK_DIR, note
from mnistkit import cli, learn, records  # the board's learn: its steps and share, for the table (no TensorFlow)

sys.path.insert(0, os.path.join(ROOT, "tests"))  # the browser tests' mouse drawing

SAMPLE_TRAIN = os.path.join(ROOT, "data", "mnist_sample")  # the generator reads 4 IDX files: its train files fill in
ADDRESS = re.compile(r"at (http://\S+/)")
TARGETS = {"new_after": 0.95, "mnist_drop": 0.005, "learn_seconds": 60.0}
NEW_SEED = 1000  # the new drawings' seeds start here; the taught ones' at 0


def arc(cx, cy, rx, ry, start, end, points=14):
    """Points on an ellipse from angle `start` to `end` (degrees; 0 = right, 90 = down, as y grows downward)."""
    return [(cx + rx * math.cos(math.radians(start + (end - start) * i / (points - 1))),
             cy + ry * math.sin(math.radians(start + (end - start) * i / (points - 1)))) for i in range(points)]


# One person's way of writing 0-9: strokes as point lists in the board's unit square (x right, y down), upright;
# drawn() slants and jitters them. "neat": the example; "quirky": another person's, further from MNIST's
# American digits (a slashed 0, a 1 with a long flag, a flat-topped 3, a 2 with a loop, a closed 4, a stronger slant).
NEAT = {
    0: [arc(0.5, 0.5, 0.2, 0.33, -100, 265, 22)],
    1: [[(0.36, 0.36), (0.46, 0.24), (0.56, 0.12), (0.56, 0.5), (0.56, 0.86)], [(0.38, 0.87), (0.74, 0.87)]],
    2: [arc(0.5, 0.33, 0.2, 0.19, 200, 360, 10) + [(0.62, 0.5), (0.45, 0.66), (0.28, 0.86), (0.5, 0.86), (0.76, 0.85)]],
    3: [arc(0.48, 0.3, 0.2, 0.17, 210, 450, 12)[:-1] + arc(0.48, 0.67, 0.23, 0.2, -90, 150, 12)],
    4: [[(0.5, 0.14), (0.38, 0.4), (0.26, 0.62), (0.5, 0.62), (0.78, 0.61)], [(0.62, 0.34), (0.62, 0.62), (0.62, 0.9)]],
    5: [[(0.36, 0.15), (0.33, 0.46)] + arc(0.5, 0.64, 0.22, 0.21, -130, 150, 12), [(0.36, 0.15), (0.72, 0.14)]],
    6: [[(0.66, 0.12), (0.5, 0.25), (0.36, 0.45)] + arc(0.5, 0.66, 0.18, 0.2, 180, 530, 16)],
    7: [[(0.24, 0.18), (0.5, 0.17), (0.76, 0.17), (0.6, 0.5), (0.44, 0.88)], [(0.36, 0.53), (0.72, 0.52)]],
    8: [arc(0.5, 0.3, 0.17, 0.16, 30, -300, 14) + arc(0.5, 0.66, 0.21, 0.2, -90, 270, 16)],
    9: [arc(0.48, 0.33, 0.19, 0.19, 10, 370, 16), [(0.67, 0.3), (0.65, 0.6), (0.62, 0.9)]],
}
QUIRKY = {
    **NEAT,
    0: NEAT[0] + [[(0.68, 0.18), (0.5, 0.5), (0.32, 0.82)]],
    1: [[(0.2, 0.44), (0.38, 0.28), (0.56, 0.12), (0.56, 0.5), (0.56, 0.86)], [(0.36, 0.87), (0.76, 0.87)]],
    2: [arc(0.5, 0.33, 0.2, 0.19, 200, 360, 10) + [(0.6, 0.52), (0.42, 0.7), (0.3, 0.82)]
        + arc(0.36, 0.8, 0.07, 0.06, 180, 470, 8) + [(0.55, 0.86), (0.76, 0.84)]],
    3: [[(0.28, 0.15), (0.72, 0.15), (0.45, 0.42)] + arc(0.48, 0.64, 0.22, 0.22, -90, 150, 12)],
    4: [[(0.62, 0.9), (0.62, 0.5), (0.62, 0.14), (0.42, 0.38), (0.25, 0.6), (0.5, 0.6), (0.78, 0.6)]],
}
# The quirky hand with a round "snowman" 8, two stacked circles: what its slashed 0 is nearest to.
FORGETTING = {**QUIRKY, 8: [arc(0.5, 0.31, 0.2, 0.19, 90, 450, 16) + arc(0.5, 0.7, 0.22, 0.2, -90, 270, 16)]}
STYLES = {"neat": (NEAT, 0.22), "quirky": (QUIRKY, 0.35),  # strokes, slant: x moves right this much per unit of
          "forgetting": (FORGETTING, 0.35)}                # height upward (writing that leans right)
FORGETTING_TAUGHT = "0:6,1:2,2:2,3:2,4:2"  # --forgetting's corrections: its slashed 0s and the digits read wrong


def drawn(digit, seed, style="neat"):
    """STYLES[style]'s digit slanted and jittered by `seed`: a list of strokes of (x, y) in the unit square."""
    strokes_of, slant = STYLES[style]
    rng = random.Random(digit * 100_003 + seed)
    scale, turn = rng.uniform(0.88, 1.08), math.radians(rng.uniform(-6, 6))
    dx, dy, wobble = rng.uniform(-0.05, 0.05), rng.uniform(-0.04, 0.04), 0.012
    strokes = []
    for stroke in strokes_of[digit]:
        points = []
        for x, y in stroke:
            x, y = x - 0.5 + slant * (0.5 - y), y - 0.5
            x, y = x * math.cos(turn) - y * math.sin(turn), x * math.sin(turn) + y * math.cos(turn)
            points.append((min(0.97, max(0.03, 0.5 + dx + scale * x + rng.gauss(0, wobble))),
                           min(0.97, max(0.03, 0.5 + dy + scale * y + rng.gauss(0, wobble)))))
        strokes.append(points)
    return strokes


def run(script, *args, cwd):
    """Run a course script in cwd to its end; its stdout. Exits in one line on failure."""
    result = subprocess.run([sys.executable, os.path.join(ROOT, script), *args], cwd=cwd, capture_output=True,
                            text=True, encoding="utf-8", errors="replace")
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["?"])[-1]
        raise SystemExit(f"error: {script} {' '.join(args)} failed in {cwd}: {last}")
    return result.stdout


def official_files(mnist_dir):
    """The official MNIST test set's two files in the folder mnist_dir (--mnist-dir): [images, labels] paths."""
    return [os.path.join(mnist_dir, name) for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")]


def prepare(work, idx_dir, mnist_dir):
    """The work folder's data/ (training) and the folder whose mnist_test.tfrecords scores MNIST; (that folder, its
    name for the table). The official test set (mnist_dir's) is written with the training files of --idx-dir, else
    of the bundled sample, beside it (the generator reads 4 files); mnist_dir None: the data's own test records."""
    os.makedirs(work, exist_ok=True)
    if not os.path.isfile(os.path.join(work, "data", "mnist_test.tfrecords")):
        note(f"writing the training TFRecords in {work} ...")
        run("mnist_generateds.py", "--no-download", "--quiet", *(["--idx-dir", idx_dir] if idx_dir else []), cwd=work)
    if mnist_dir is None:
        return os.path.join(work, "data"), "the data's own test records"
    official = official_files(mnist_dir)
    scored = os.path.join(work, "official_data")
    if not os.path.isfile(os.path.join(scored, "mnist_test.tfrecords")):
        idx = os.path.join(work, "official_idx")
        os.makedirs(idx, exist_ok=True)
        train = [os.path.join(idx_dir or SAMPLE_TRAIN, n) for n in ("train-images-idx3-ubyte.gz",
                                                                    "train-labels-idx1-ubyte.gz")]
        for path in official + train:
            link = os.path.join(idx, os.path.basename(path))
            if not os.path.lexists(link):
                os.symlink(os.path.abspath(path), link)
        note("writing the official MNIST test set as TFRecords ...")
        run("mnist_generateds.py", "--no-download", "--quiet", "--idx-dir", idx, "--jpg-dir", "official_jpg",
            "--data-dir", "official_data", cwd=work)
    return scored, "the official MNIST test set (10,000)"


def mnist_accuracy(work, scored):
    """mnist_test.py --once on work/model's newest checkpoint over scored/mnist_test.tfrecords: (accuracy, step,
    each digit's recall)."""
    report = os.path.join(work, "report.json")
    run("mnist_test.py", "--once", "--model-dir", "model", "--data-dir", scored, "--report-json", report, cwd=work)
    with open(report, encoding="utf-8") as f:
        numbers = json.load(f)
    return numbers["accuracy"], numbers["global_step"], [d["recall"] for d in numbers["per_digit"]]


def start_board(work, steps=learn.DEFAULT_STEPS, share=records.MIX_SHARE):
    """(process, url) of `mnist_app.py --serve --port 0 --model-dir model --keep-dir my_digits` in work, learning
    `steps` steps at `share` (--learn-steps, --learn-share)."""
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_app.py"), "--serve", "--port", "0",
                                "--model-dir", "model", "--keep-dir", "my_digits", "--learn-steps", str(steps),
                                "--learn-share", str(share)], cwd=work,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               encoding="utf-8", errors="replace")
    found = ADDRESS.search(process.stdout.readline())
    if found is None:
        process.kill()
        raise SystemExit(f"error: {work}: mnist_app.py --serve printed no address")
    return process, found.group(1)


def get(url):
    with urllib.request.urlopen(url, timeout=60) as answer:
        return json.load(answer)


def on_top(page):
    """Clear the board and scroll back to it: the mouse draws only inside the window, and #learn's click scrolls
    the page down to the button, below the list of kept digits."""
    page.click("#clear")
    page.evaluate("window.scrollTo(0, 0)")


def read_all(page, drawings):
    """Draw each (digit, strokes) on a cleared board with the mouse; the digits the page answered (ints)."""
    from test_board_browser import draw_with_mouse
    answers = []
    for _, strokes in drawings:
        on_top(page)
        shown, error = draw_with_mouse(page, strokes)
        if error:
            raise SystemExit(f"error: the board answered a drawing with an error: {error}")
        answers.append(int(shown))
    return answers


def teach(page, drawings):
    """Draw each (digit, strokes), read it, keep it as its true digit; the digits read before keeping."""
    from test_board_browser import ANSWER_TIMEOUT, draw_with_mouse
    answers = []
    for count, (digit, strokes) in enumerate(drawings, 1):
        on_top(page)
        answers.append(int(draw_with_mouse(page, strokes)[0]))
        page.click(f'#teach button[data-digit="{digit}"]')
        page.wait_for_function(f"document.getElementById('kept').textContent === '{count}'", timeout=ANSWER_TIMEOUT)
    return answers


def press_learn(page, url, timeout):
    """Click #learn; (seconds from the click until /board/model reports the learned step, that step, the learn line
    of a learn the check held, else None). A held learn is used anyway (#learn-accept) once the page offers it."""
    page.wait_for_function("!document.getElementById('learn').hidden")
    began = time.perf_counter()
    page.click("#learn")
    target, held = None, None
    while time.perf_counter() - began < timeout:
        status = get(url + "board/learn")
        if status["state"] == "failed":
            raise SystemExit(f"error: the learn failed: {status['line']}")
        target = status["steps"] or target
        if status["state"] == "held" and held is None:
            page.wait_for_function("document.getElementById('learn-progress').dataset.state === 'held'")
            held = page.text_content("#learn-progress")
            page.click("#learn-accept")
        if target and get(url + "board/model")["global_step"] == target:
            return time.perf_counter() - began, target, held
        time.sleep(0.2)
    raise SystemExit(f"error: no learned model answering {timeout:.0f} s after #learn; last: {status}")


def right(answers, drawings, digit=None):
    """How many drawings (of `digit` only, when given) the answers read right."""
    return sum(a == d for a, (d, _) in zip(answers, drawings) if digit is None or d == digit)


def misread(answers, drawings):
    """The misread drawings as `true->read` (e.g. `1->7`), in order."""
    return " ".join(f"{d}->{a}" for a, (d, _) in zip(answers, drawings) if a != d) or "none"


def table(r):
    """The Markdown report of one run's figures (a dict)."""
    n, t = len(r["new"]), sum(r["taught_count"])
    drop = r["mnist_before"] - r["mnist_after"]
    met = {"new": r["new_after"] / n >= TARGETS["new_after"], "mnist": drop <= TARGETS["mnist_drop"],
           "learn": r["learn_seconds"] <= TARGETS["learn_seconds"]}
    yes = {True: "met", False: "**missed**"}
    return "\n".join([
        f"One person's style ({r['style']}), {t} taught and {n} new drawings drawn with the mouse in Chromium; "
        f"model: {r['model']}; MNIST scored on {r['scored']}; learn: the board's ({r['learn_steps']} steps, "
        f"{r['learn_share']:.0%} of each batch from the kept digits); {datetime.date.today()}, "
        f"{os.cpu_count()} CPUs, load average {r['load']:.1f} at the end; {r['seconds']:.0f} s in all.", "",
        "| figure | before learning | after | target | |",
        "|---|---|---|---|---|",
        f"| new drawings read right | {r['new_before']}/{n} ({r['new_before'] / n:.0%}) | "
        f"{r['new_after']}/{n} ({r['new_after'] / n:.0%}) | >= 95% after | {yes[met['new']]} |",
        f"| taught drawings read right (before keeping) | {r['taught_before']}/{t} ({r['taught_before'] / t:.0%}) "
        f"| | | |",
        f"| MNIST test accuracy | {r['mnist_before']:.4f} (step {r['step_before']}) | {r['mnist_after']:.4f} "
        f"(step {r['step_after']}) | at most 0.5 points lower | {yes[met['mnist']]} ({-100 * drop:+.2f} points) |",
        f"| #learn to the learned model answering | | {r['learn_seconds']:.1f} s | <= 60 s | {yes[met['learn']]} |",
        "", f"Misread new drawings (true->read), before: {r['misread_before']}; after: {r['misread_after']}.",
        f"Misread taught drawings before keeping: {r['misread_taught']}.",
        f"The check: {r['held'] or 'used (no digit past the limits)'}.", "",
        "| digit | taught | new drawings read right, before | after | MNIST recall, before | after | change |",
        "|---|---|---|---|---|---|---|",
        *[f"| {d} | {r['taught_count'][d]} | {r['new_digit_before'][d]}/{r['new_count'][d]} | "
          f"{r['new_digit_after'][d]}/{r['new_count'][d]} | {r['recall_before'][d]:.3f} | {r['recall_after'][d]:.3f} | "
          f"{100 * (r['recall_after'][d] - r['recall_before'][d]):+.1f} points |" for d in range(10)],
        f"Largest fall of a digit's MNIST recall: {worst_fall(r):.1f} points (at most 2: "
        f"{yes[worst_fall(r) <= 2.0]})."])


def worst_fall(r):
    """The largest fall of a digit's MNIST recall in one run, in points (0 when none fell)."""
    return max([0.0] + [100 * (b - a) for b, a in zip(r["recall_before"], r["recall_after"])])


def taught_of(spec, per_digit):
    """The (digit, seed) pairs to teach: `spec` "0:6,1:2" (digit:count), or per_digit of each digit."""
    if not spec:
        return [(d, s) for s in range(per_digit) for d in range(10)]
    try:
        counts = [(int(d), int(n)) for d, n in (part.split(":") for part in spec.split(","))]
    except ValueError:
        raise SystemExit(f"error: --taught {spec!r}: give DIGIT:COUNT,..., e.g. {FORGETTING_TAUGHT}") from None
    return [(d, s) for d, n in counts for s in range(n)]


def main(argv=None):
    parser = cli.new_parser(__doc__)
    parser.add_argument("--train-steps", type=int, default=2000, help="steps of the first training (784-500-10)")
    parser.add_argument("--idx-dir", help="train on the 4 MNIST-format IDX files in this folder (default: the "
                                          "bundled sample); use MNIST, not Fashion-MNIST")
    parser.add_argument("--model-dir", help="start from this checkpoint folder (copied) instead of training one; "
                                            "its network must match the work folder's data")
    parser.add_argument("--mnist-dir",
                        help="folder of the official MNIST t10k-*.gz files, for the MNIST test accuracy (default: "
                             "the data's own test records: the bundled sample's 2,000, or --idx-dir's)")
    parser.add_argument("--style", choices=sorted(STYLES), default="neat",
                        help="the person's way of writing (quirky: further from MNIST's digits)")
    parser.add_argument("--per-digit", type=int, default=3, help="drawings of each digit, taught and new alike")
    parser.add_argument("--taught", help=f"the drawings taught, DIGIT:COUNT,... (e.g. {FORGETTING_TAUGHT}); "
                                         "default: --per-digit of each")
    parser.add_argument("--new-per-digit", type=int, help="new drawings of each digit (default: --per-digit)")
    parser.add_argument("--forgetting", action="store_true",
                        help=f"the forgetting row: --style forgetting --taught {FORGETTING_TAUGHT} --new-per-digit 10")
    parser.add_argument("--learn-timeout", type=float, default=600, help="seconds to wait for the learned model")
    parser.add_argument("--learn-steps", type=int, default=learn.DEFAULT_STEPS, help="the board's learn: its steps")
    parser.add_argument("--learn-share", type=float, default=records.MIX_SHARE,
                        help="the board's learn: the part of each batch from the kept digits")
    parser.add_argument("--work-dir", default=os.path.join(WORK_DIR, "teach"),
                        help="data (kept for reuse), the model and the kept digits (made anew)")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the browser Playwright drives")
    args = parser.parse_args(argv)
    if args.forgetting:
        args.style, args.taught, args.new_per_digit = "forgetting", args.taught or FORGETTING_TAUGHT, \
            args.new_per_digit or 10
    if args.per_digit < 1 or args.train_steps < 1 or (args.new_per_digit or 1) < 1:
        parser.error("--per-digit, --new-per-digit and --train-steps must be >= 1")
    absent = [path for path in official_files(args.mnist_dir) if not os.path.isfile(path)] if args.mnist_dir else []
    if absent:
        parser.error(f"--mnist-dir: {absent[0]} is not there; give the folder of MNIST's t10k-*.gz files")
    from playwright.sync_api import sync_playwright

    began = time.perf_counter()
    source = os.path.abspath(args.idx_dir) if args.idx_dir else None  # each source its own data, like lenet5_vs_mlp
    work = os.path.join(os.path.abspath(args.work_dir), re.sub(r"\W+", "_", source).strip("_") if source else "sample")
    scored, scored_name = prepare(work, args.idx_dir, args.mnist_dir)
    model = os.path.join(work, "model")
    shutil.rmtree(model, ignore_errors=True)
    shutil.rmtree(os.path.join(work, "my_digits"), ignore_errors=True)
    if os.path.exists(os.path.join(work, "my_digits.txt")):
        os.remove(os.path.join(work, "my_digits.txt"))
    if args.model_dir:
        shutil.copytree(args.model_dir, model, ignore=shutil.ignore_patterns("undone", ".*"))
        described = f"{args.model_dir} (copied)"
    else:
        note(f"training the 784-500-10 network {args.train_steps} steps ...")
        run("mnist_backward.py", "--steps", str(args.train_steps), "--model-dir", "model", "--data-dir", "data",
            "--quiet", cwd=work)
        described = (f"784-500-10 trained {args.train_steps} steps on "
                     f"{os.path.abspath(args.idx_dir) if args.idx_dir else 'the bundled sample (8,000)'}")
    r = {"model": described, "scored": scored_name, "style": args.style, "learn_steps": args.learn_steps,
         "learn_share": args.learn_share}
    r["mnist_before"], r["step_before"], r["recall_before"] = mnist_accuracy(work, scored)
    taught = [(d, drawn(d, s, args.style)) for d, s in taught_of(args.taught, args.per_digit)]
    new = [(d, drawn(d, NEW_SEED + s, args.style)) for s in range(args.new_per_digit or args.per_digit)
           for d in range(10)]
    r["new"] = new
    process, url = start_board(work, args.learn_steps, args.learn_share)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 1000}).new_page()
            page.goto(url)
            page.wait_for_function("document.getElementById('model').dataset.form !== undefined")
            note("drawing the new digits on the model before learning ...")
            before = read_all(page, new)
            note("drawing the digits to teach, keeping each ...")
            taught_read = teach(page, taught)
            note("learning ...")
            r["learn_seconds"], _, r["held"] = press_learn(page, url, args.learn_timeout)
            note("drawing the new digits on the learned model ...")
            after = read_all(page, new)
            browser.close()
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(60)
    r["mnist_after"], r["step_after"], r["recall_after"] = mnist_accuracy(work, scored)
    r.update(new_digit_before=[right(before, new, d) for d in range(10)],
             new_digit_after=[right(after, new, d) for d in range(10)],
             new_count=[sum(d == digit for d, _ in new) for digit in range(10)],
             taught_count=[sum(d == digit for d, _ in taught) for digit in range(10)])
    r.update(new_before=right(before, new), new_after=right(after, new), taught_before=right(taught_read, taught),
             misread_before=misread(before, new), misread_after=misread(after, new),
             misread_taught=misread(taught_read, taught), load=os.getloadavg()[0],
             seconds=time.perf_counter() - began)
    print(table(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())

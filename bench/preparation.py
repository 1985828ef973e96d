"""Benchmark: the app's preparation of a picture (mnist_app.prepared_pixels), this checkout against another.

Usage (from the repository root):
  git worktree add --detach /tmp/base 5819f1e        # or any other checkout
  python bench/preparation.py --base /tmp/base       # 5 runs a side, 20 digits of each kind
  python bench/preparation.py --base /tmp/base --count 40 --repeats 7

The pictures are made once, by this checkout's tests/framed.py,
tests/penned.py, tests/painted.py and tests/glance.py (frames, shading,
photos of pen and pencil on plain, squared and ruled paper, a paint
program's brush, filled loops, tiny pictures, tight crops), from
--count of the bundled sample's test digits per kind, and written to a
temporary folder. Each run is a fresh process of one side that imports that
side's mnist_app.py, prepares WARM_UP pictures (NumPy's and Pillow's first
calls), then every picture, timed in CPU seconds of the process; the sides alternate, so a change in the machine's load touches
both alike. Printed: each side's median milliseconds per picture, the
ratio this / base (under 1: this checkout is faster), and how many
pictures' 28x28 inputs (or refusals) differ between the sides: 0 for a
change meant to leave every answer as it was. Figures go to docs/performance.md.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARM_UP = 5  # pictures prepared before the timed pass: NumPy's and Pillow's first calls


def make_pictures(folder, count):
    """Write count pictures of every kind of tests/framed.py, penned.py, painted.py and glance.py into folder; their
    number."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import framed
    import glance
    import painted
    import penned
    images, labels = framed.sample_digits(count, 100)
    made = 0
    for kind, make in framed.KINDS.items():
        for i, image in enumerate(images):
            data = make(framed.coverage_of_mnist(image), i, np.random.default_rng([sum(map(ord, kind)), i]))
            made = _write(folder, made, data)
    for module in (penned, painted, glance):
        for kind in module.KINDS:
            for data, _ in module.pictures(kind, images, labels):
                made = _write(folder, made, data)
    return made


def _write(folder, made, data):
    with open(os.path.join(folder, f"{made:05d}.picture"), "wb") as f:
        f.write(data)
    return made + 1


def child(checkout, folder, out):
    """In a fresh process: prepare every picture of folder with checkout's mnist_app; write the CPU seconds of the
    timed pass and each picture's input (or refusal) to out (.npz)."""
    sys.path.insert(0, checkout)
    os.chdir(checkout)
    import time
    import mnist_app
    files = sorted(os.listdir(folder))
    inputs = {}
    for timed in (files[:WARM_UP], files):
        start = time.process_time()
        for name in timed:
            try:
                inputs[name] = mnist_app.prepared_pixels(os.path.join(folder, name))
            except Exception as e:  # a refusal (DataError): compared as its text
                inputs[name] = np.array(str(e))
        seconds = time.process_time() - start
    np.savez(out, seconds=seconds, **inputs)


def run_side(checkout, folder, out):
    """One fresh process of one side; (CPU seconds, {picture: input}). RuntimeError with its stderr's last line."""
    result = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", checkout, folder, out],
                            capture_output=True, encoding="utf-8", errors="replace")
    if result.returncode != 0:
        raise RuntimeError(f"{checkout}: {(result.stderr.strip().splitlines() or ['?'])[-1]}")
    with np.load(out) as found:
        return float(found["seconds"]), {k: found[k] for k in found.files if k != "seconds"}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--child"] and len(argv) == 4:  # a side's process: no mnistkit of ours imported before its own
        child(*argv[1:])
        return 0
    sys.path.insert(0, ROOT)
    from mnistkit import cli  # the course scripts' parser: one line for a wrong flag
    parser = cli.new_parser(__doc__)
    parser.add_argument("--base", help="the other checkout's folder (its mnist_app.py prepares the pictures)")
    parser.add_argument("--count", type=int, default=20, help="the sample's test digits per kind")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each side")
    args = parser.parse_args(argv)
    if not args.base:
        parser.error("--base is required: the other checkout's folder")
    sides = {"base": os.path.abspath(args.base), "this": ROOT}
    work = tempfile.mkdtemp(prefix="bench_preparation_")
    try:
        folder = os.path.join(work, "pictures")
        os.mkdir(folder)
        made = make_pictures(folder, args.count)
        seconds = {side: [] for side in sides}
        inputs = {}
        for repeat in range(args.repeats):
            for side in (list(sides) if repeat % 2 == 0 else list(sides)[::-1]):
                spent, inputs[side] = run_side(sides[side], folder, os.path.join(work, f"{side}.npz"))
                seconds[side].append(spent / made * 1000)
                print(f"run {repeat + 1} {side}: {seconds[side][-1]:.1f} ms a picture", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base, this = (statistics.median(seconds[side]) for side in sides)
    differ = sum(not np.array_equal(inputs["base"][k], inputs["this"][k]) for k in inputs["base"])
    print(f"{made} pictures, load average at the end {os.getloadavg()[0]:.1f}; medians of {args.repeats} runs a side")
    print(f"CPU ms a picture: base {base:.1f}, this {this:.1f}, this/base {this / base:.2f}")
    print(f"inputs or refusals that differ: {differ} of {made}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

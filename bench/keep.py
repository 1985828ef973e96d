"""Benchmark: keeping a digit on the board, with few and with thousands of digits kept already.

Usage (from the repository root; no model needed):
  python bench/keep.py                    # 5,000 kept, 30 keeps timed at each size
  python bench/keep.py --kept 9000 --keeps 50

The board's app (mnistkit.board) with a keep store in a temporary folder and a
stand-in model, served by uvicorn on a free port in this process; each keep is
a POST /board/keep with a prepared input, over one kept-alive connection, as
the page sends it. Timed: the keeps when 1 digit is kept, then the folder
filled to --kept digits (written straight in the store's layout, as a long
use of the board leaves it, and synced to the disk), the board started
again on it, and the same keeps timed. Also: each keep's answer size, and GET /board/kept's (its first
page). Target (issue 46): the keep's median at --kept within 2x of its median
at 1, and its answer the same size. Figures go to docs/performance.md.
"""
import asyncio
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from mnistkit import cli, keep, listener  # noqa: E402
from mnistkit.board import app, model  # noqa: E402
from mnistkit.networks import MLP  # noqa: E402


def digit_pixels(seed):
    """A prepared input of a bar, stroke bright on black: uint8 [28, 28]."""
    pixels = np.zeros((28, 28), np.uint8)
    pixels[6:22, 11 + seed % 5:14 + seed % 5] = 255
    return pixels


def fill(folder, count, start):
    """Write `count` kept digits straight into the keep folder, numbered from `start`, in the store's layout."""
    data, lines = keep.LAYOUT.encode(digit_pixels(0)), []
    for number in range(start, start + count):
        name = keep.LAYOUT.name(number, 1)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        lines.append(f"{name} 1\n")
    with open(folder + keep.LAYOUT.labels, "a", encoding="utf-8") as f:
        f.write("".join(lines))
    with open(os.path.join(folder, keep.COUNTER_FILE), "w", encoding="utf-8") as f:
        f.write(f"{start + count}\n")


class Serving:
    """The board's app on a store in `folder`, served by uvicorn on a free port in a thread, while in a with."""

    def __init__(self, folder):
        predictor = types.SimpleNamespace(network=MLP, source="stand/mnist_model-1",
                                          predict=lambda rows: np.full((len(rows), 10), 0.1, np.float32))
        served = app.Served(model.Model(predictor, None), kept=keep.KeptDigits(folder))
        self.app = app.create_app(served)

    def __enter__(self):
        import uvicorn
        self.sock = listener.bind("127.0.0.1", 0)
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off"))
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])))
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return self.sock.getsockname()[1]

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(60)
        self.sock.close()


def timed_keeps(port, keeps):
    """([seconds of each keep], answer bytes of the last, GET /board/kept's seconds and bytes)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times, size = [], 0
    for i in range(keeps):
        body = json.dumps({"digit": 1, "input": digit_pixels(i).reshape(-1).tolist()})
        began = time.perf_counter()
        connection.request("POST", "/board/keep", body, {"Content-Type": "application/json"})
        answer = connection.getresponse()
        content = answer.read()
        times.append(time.perf_counter() - began)
        assert answer.status == 200, content
        size = len(content)
    began = time.perf_counter()
    connection.request("GET", "/board/kept")
    listed = connection.getresponse().read()
    listed_secs = time.perf_counter() - began
    connection.close()
    return times, size, listed_secs, len(listed)


def main():
    parser = cli.new_parser(__doc__)
    parser.add_argument("--kept", type=int, default=5000, help="digits kept before the second timing")
    parser.add_argument("--keeps", type=int, default=30, help="keeps timed at each size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-keep-") as work:
        folder = os.path.join(work, "my_digits")
        keep.KeptDigits(folder).keep(digit_pixels(0), 1)
        os.sync()
        with Serving(folder) as port:
            few = timed_keeps(port, args.keeps)
        fill(folder, args.kept, start=args.keeps + 2)
        os.sync()  # the fill's writes on the disk before the timing, not the disk's writeback during it
        began = time.perf_counter()
        with Serving(folder) as port:
            opened = time.perf_counter() - began
            many = timed_keeps(port, args.keeps)
    for label, (times, size, listed_secs, listed_size) in (("1 kept", few), (f"{args.kept:,} kept", many)):
        print(f"{label:>12}: keep median {1000 * statistics.median(times):6.1f} ms, 90th percentile "
              f"{1000 * statistics.quantiles(times, n=10)[-1]:6.1f} ms; answer {size} bytes; GET /board/kept "
              f"{1000 * listed_secs:.1f} ms, {listed_size:,} bytes")
    ratio = statistics.median(many[0]) / statistics.median(few[0])
    print(f"the board opened on {args.kept:,} kept digits in {opened:.2f} s; keep at {args.kept:,} / keep at 1: "
          f"{ratio:.2f} (target: at most 2)")
    return 0 if ratio <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())

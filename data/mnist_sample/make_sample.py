"""Rebuild the bundled sample from ../shared/data/mnist-first10k (run once, by a maintainer).

The first 8,000 of the first 10,000 official MNIST training digits become the
sample's training split, the last 2,000 its test split, written under the
four standard IDX names so that mnist_idx.read_idx_split reads them like any
other MNIST folder. gzip timestamps are zeroed so a rebuild is byte-identical.
"""
import gzip
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN_COUNT = 8000


def read(path):
    with gzip.open(path, "rb") as f:
        return f.read()


def write(path, header, payload):
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        f.write(header + payload)


def main(source):
    images = read(os.path.join(source, "train-images-idx3-ubyte.gz"))[16:]
    labels = read(os.path.join(source, "train-labels-idx1-ubyte.gz"))[8:]
    count = len(labels)
    splits = {"train": (0, TRAIN_COUNT), "t10k": (TRAIN_COUNT, count)}
    for prefix, (start, stop) in splits.items():
        n = stop - start
        write(os.path.join(HERE, f"{prefix}-images-idx3-ubyte.gz"),
              struct.pack(">IIII", 2051, n, 28, 28), images[start * 784:stop * 784])
        write(os.path.join(HERE, f"{prefix}-labels-idx1-ubyte.gz"),
              struct.pack(">II", 2049, n), labels[start:stop])
        print(f"{prefix}: {n} digits")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "shared", "data", "mnist-first10k"))

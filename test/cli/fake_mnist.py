#!/usr/bin/env python3
"""fake_mnist.py DIR [SEED]: writes the four MNIST-format IDX files of a tiny random data set
(64 training and 16 test images of 28 x 28, labels 0-9) into DIR, for tests that run the
trainer without downloading MNIST: enough for a few steps and an evaluation."""
import os
import random
import struct
import sys

d = sys.argv[1]
rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
os.makedirs(d)
for prefix, n in (("train", 64), ("t10k", 16)):
    with open(f"{d}/{prefix}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + bytes(rng.randrange(256) for _ in range(n * 784)))
    with open(f"{d}/{prefix}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(rng.randrange(10) for _ in range(n)))

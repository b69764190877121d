#!/usr/bin/env python3
"""Throughput peer of train_lenet5: the same LeNet-5 (C1 6@5x5 pad 2, ReLU, 2x2 max pool,
C3 16@5x5, ReLU, max pool, F5 120, ReLU, F6 84, ReLU, F7 10, softmax cross-entropy) trained
with plain SGD in PyTorch on one CPU thread, on synthetic 28x28 batches. Prints images/s of
training steps (forward, backward, SGD update), after a warm-up.

    python3 example/lenet5/peer/lenet5_torch.py --batch 32 --iterations 400

Debian: apt-get install python3-torch (PyTorch 1.13, CPU).
"""
import argparse
import os
import sys
import time


def parse_args():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                    "benchmark"))
    from report import Parser  # gcl's command-line conventions (doc/cli.md)

    ap = Parser(prog="lenet5_torch.py", description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iterations", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()
    for name in ("batch", "iterations", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"argument --{name}: must be >= 1")
    if args.warmup < 0 or args.lr <= 0:
        ap.error("argument --warmup: must be >= 0, --lr: > 0")
    return args


# Before torch is imported: --help, --version and errors need no torch (and are quick).
ARGS = parse_args() if __name__ == "__main__" else None

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5, padding=2)
        self.c3 = nn.Conv2d(6, 16, 5)
        self.f5 = nn.Linear(400, 120)
        self.f6 = nn.Linear(120, 84)
        self.f7 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c3(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.f5(x))
        x = F.relu(self.f6(x))
        return self.f7(x)


def main():
    args = ARGS

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = LeNet5()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    # A pool of synthetic batches, normalised like MNIST, so each step sees new data.
    pool = 16
    xs = torch.randn(pool, args.batch, 1, 28, 28)
    ys = torch.randint(0, 10, (pool, args.batch))

    def step(i):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xs[i % pool]), ys[i % pool])
        loss.backward()
        opt.step()

    for i in range(args.warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(args.iterations):
        step(i)
    dt = time.perf_counter() - t0
    ips = args.iterations * args.batch / dt
    print(f"pytorch {torch.__version__} lenet5: batch {args.batch}, {args.threads} thread(s), "
          f"{args.iterations} iterations in {dt:.3f} s: {ips:.0f} images/s")
    print(f"RESULT images_per_second={ips:.1f}")


if __name__ == "__main__":
    main()

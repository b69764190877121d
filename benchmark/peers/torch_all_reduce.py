#!/usr/bin/env python3
"""torch.distributed all_reduce (Gloo backend, TCP on loopback), timed the way gcl's all_reduce
benchmark times itself, so that the two can be compared row by row:

  - one process per rank, rendezvous on 127.0.0.1;
  - per size: one checked call (rank r holds r + 1 everywhere, the sum must be P(P+1)/2 in
    every element), `--warmup` calls, then `--iters` timed calls, each after a barrier;
  - a call's time is the slowest rank's; the row shows the median over iterations;
  - float32, sum; sizes from --min-bytes to --max-bytes by --factor.

Prints the columns of gcl's benchmarks (`--csv`: the same CSV header, impl "torch gloo").

    python3 benchmark/peers/torch_all_reduce.py --world-size 4 --min-bytes 8 --max-bytes 64M
"""
import argparse
import csv
import datetime
import os
import socket
import statistics
import sys
import time


def parse_size(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    try:
        if t and t[-1] in units and not t[-1].isdigit():
            v = int(float(t[:-1]) * units[t[-1]])
        else:
            v = int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size such as 8, 64K, 64M, 1G")
    if v < 0:
        raise argparse.ArgumentTypeError(f"'{text}' is negative")
    return v


def sizes(lo, hi, factor):
    out, b = [], max(lo, 4)
    while b <= hi:
        out.append(b)
        b *= factor
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, world, port, args):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)  # one core per rank, as gcl's ranks
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=args.timeout))
    busbw_factor = 2.0 * (world - 1) / world
    if rank == 0:
        if args.csv:
            print("collective,impl,algorithm,label,ranks,size_B,count,type,redop,root,time_us,"
                  "algbw_GBps,busbw_GBps,wrong,pred_us", flush=True)
        else:
            print(f"# all_reduce: torch.distributed {torch.__version__} gloo, {world} ranks, float, "
                  f"op sum, {args.warmup} warmup + {args.iters} timed iterations", flush=True)
            print("#       size        count    type  redop  root        time    algbw    busbw  #wrong")
    total_wrong = 0
    for nbytes in sizes(args.min_bytes, args.max_bytes, args.factor):
        count = nbytes // 4
        x = torch.full((count,), float(rank + 1), dtype=torch.float32)
        dist.all_reduce(x)
        wrong = int((x != world * (world + 1) / 2).sum().item())
        x.zero_()  # timed calls reduce zeros: no overflow, no denormals
        for _ in range(args.warmup):
            dist.all_reduce(x)
        times = []
        for _ in range(args.iters):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            times.append(time.perf_counter() - t0)
        slowest = torch.tensor(times, dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        w = torch.tensor([wrong], dtype=torch.int64)
        dist.all_reduce(w)
        total_wrong += int(w.item())
        if rank == 0:
            t = statistics.median(slowest.tolist())
            algbw = nbytes / t / 1e9
            if args.csv:
                csv.writer(sys.stdout, lineterminator="\n").writerow(  # quotes the label if needed
                    ["all_reduce", "torch gloo", "gloo", args.label, world, nbytes, count, "float",
                     "sum", -1, f"{t * 1e6:.3f}", f"{algbw:.6f}", f"{algbw * busbw_factor:.6f}",
                     int(w.item()), ""])
                sys.stdout.flush()
            else:
                print(f"{nbytes:12d} {count:12d}   float    sum    -1 {t * 1e6:11.2f} {algbw:8.3f} "
                      f"{algbw * busbw_factor:8.3f} {int(w.item()):7d}", flush=True)
    dist.destroy_process_group()
    if total_wrong:  # every rank knows the sum, so every rank fails alike
        sys.exit(f"torch_all_reduce: rank {rank}: {total_wrong} wrong elements")


def main():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from report import Parser  # benchmark/report.py: gcl's command-line conventions

    ap = Parser(prog="torch_all_reduce.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("-p", "--world-size", type=int, default=2, help="ranks (processes), >= 1")
    ap.add_argument("-b", "--min-bytes", type=parse_size, default=8)
    ap.add_argument("-e", "--max-bytes", type=parse_size, default=64 << 20)
    ap.add_argument("-f", "--factor", type=int, default=2, help=">= 2")
    ap.add_argument("-n", "--iters", type=int, default=20, help=">= 1")
    ap.add_argument("-w", "--warmup", type=int, default=3, help=">= 0")
    ap.add_argument("--timeout", type=float, default=60, help="seconds any call may wait (> 0)")
    ap.add_argument("--csv", action="store_true")
    ap.add_argument("--label", default="torchgloo")
    args = ap.parse_args()
    for name, ok, want in (("--world-size", args.world_size >= 1, ">= 1"),
                           ("--factor", args.factor >= 2, ">= 2"),
                           ("--iters", args.iters >= 1, ">= 1"),
                           ("--warmup", args.warmup >= 0, ">= 0"),
                           ("--timeout", args.timeout > 0, "> 0"),
                           ("--max-bytes", args.min_bytes <= args.max_bytes, ">= --min-bytes")):
        if not ok:
            ap.error(f"argument {name}: must be {want}")
    try:
        import torch.multiprocessing as mp
    except ImportError:
        sys.exit("torch_all_reduce: python3 cannot import torch (Debian: apt-get install python3-torch)")
    port = free_port()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=rank_main, args=(r, args.world_size, port, args))
             for r in range(args.world_size)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + args.timeout * 20
    failed = 0
    for p in procs:
        p.join(max(deadline - time.monotonic(), 1))
        if p.is_alive():
            p.terminate()
            failed = failed or 124
        elif p.exitcode:
            failed = failed or p.exitcode
    if failed:
        sys.exit(f"torch_all_reduce: a rank failed (exit {failed})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Turns the CSV rows of scripts/bench.sh into doc/benchmarks.md tables and gnuplot data.

  benchmark/report.py RESULTS_DIR DOC_MD IMG_DIR

RESULTS_DIR holds *.csv files written by the sweep programs (gcl's, Open MPI's and Gloo's, same
columns: collective,impl,algorithm,label,ranks,size_B,...,mode,iters,mean_us), limits.csv from
machine_limits, and meta.txt (key=value lines: date, machine, commands, load). For every
(collective, ranks, label, algorithm) the time per size is the median over the repetitions
(each repetition's value already being the median over calls of the slowest rank's time).
Ratios are gcl busbw / peer busbw in the same run, i.e. peer time / gcl time, per peer (Open
MPI; over TCP also Gloo): above 1 means gcl is faster. Beside each ratio of the medians, the
lowest and highest ratio within one repetition (files r<N>_..., gcl's and the peer's run of the
same N, minutes apart), where two or more repetitions pair up. Standard library only.
"""
import collections
import argparse
import csv
import glob
import math
import os
import re
import statistics
import subprocess
import sys

DATDIR = "."
# gcl's label, its peers (label, name in the tables, name in the plots), the section's title.
SECTIONS = [("inproc", [("vader", "Open MPI", "Open MPI vader")],
             "threads (gcl inproc) vs Open MPI shared memory (btl vader)"),
            ("shm", [("vader", "Open MPI", "Open MPI vader"), ("inproc", "gcl threads", "gcl threads")],
             "processes over shared memory (gcl shm, one process per rank) vs Open MPI shared "
             "memory (btl vader), and gcl's own threads"),
            ("shm-pool", [("vader", "Open MPI", "Open MPI vader"), ("inproc", "gcl threads", "gcl threads")],
             "processes over shared memory with the buffers in the job's pool (gcl shm --pool, "
             "doc/shm.md) vs Open MPI shared memory (btl vader), and gcl's own threads"),
            ("tcp", [("mpitcp", "Open MPI", "Open MPI TCP"), ("gloo", "Gloo", "Gloo TCP")],
             "TCP loopback (gcl tcp, one process per rank) vs Open MPI TCP (btl tcp, lo) and Gloo TCP")]
TRANSPORT = {"inproc": "threads", "shm": "shared memory", "shm-pool": "shared memory, pool",
             "tcp": "TCP loopback"}
# gcl's curves in the plots: "gcl threads by_size", "gcl shm by_size", "gcl TCP ring", ...
PLOT_NAME = {"inproc": "gcl threads", "shm": "gcl shm", "shm-pool": "gcl shm pool",
             "tcp": "gcl TCP"}
# When a peer is gcl itself (its threads beside its processes), the algorithm compared.
PEER_ALGORITHM = "by_size"
MODES = {"b2b": "back to back: one barrier, then the calls with nothing in between, a timestamp "
                "after each",
         "barrier": "a barrier before every call, each call timed alone"}

def gcl_version():
    """"X.Y.Z" from include/gcl/version.hpp, the version's one source."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include", "gcl",
                          "version.hpp")
    parts = {}
    with open(header) as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "#define" and w[1].startswith("GCL_VERSION_"):
                parts[w[1][len("GCL_VERSION_"):]] = w[2]
    return ".".join(parts.get(k, "?") for k in ("MAJOR", "MINOR", "PATCH"))


class Parser(argparse.ArgumentParser):
    """argparse with gcl's conventions (doc/cli.md): --version, one-line errors, exit code 2."""

    def __init__(self, **kw):
        super().__init__(allow_abbrev=False, **kw)
        self.add_argument("--version", action="version",
                          version=f"{self.prog} (gcl {gcl_version()})")

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see --help)\n")

    def parse_args(self, args=None, namespace=None):
        # An unknown option is named first, not hidden behind "arguments are required".
        args = sys.argv[1:] if args is None else list(args)
        for a in args:
            if a == "--":
                break
            if a.startswith("-") and len(a) > 1 and not a[1].isdigit() and \
                    a.split("=", 1)[0] not in self._option_string_actions:
                self.error(f"unrecognized argument {a}")
        return super().parse_args(args, namespace)



def load(results):
    runs = collections.defaultdict(list)  # (coll, ranks, label, alg) -> list of {size: row}
    for path in sorted(glob.glob(os.path.join(results, "*.csv"))):
        if os.path.basename(path) == "limits.csv":
            continue
        with open(path) as f:
            rows = [r for r in csv.DictReader(f) if r.get("collective") not in (None, "", "collective")]
        # The repetition a file belongs to (scripts/bench.sh names them r<N>_...), so that each
        # repetition's gcl and peer runs can be compared with each other.
        m = re.match(r"(r\d+)_", os.path.basename(path))
        for r in rows:
            r["_rep"] = m.group(1) if m else path
        sweep = collections.defaultdict(dict)
        for r in rows:
            key = (r["collective"], int(r["ranks"]), r["label"], r["algorithm"])
            sweep[key][int(r["size_B"])] = r
        for key, by_size in sweep.items():
            runs[key].append(by_size)
    return runs


def timing_modes(runs):
    """The timing modes of every row ("b2b", "barrier"); rows from before the mode column, and
    torch_all_reduce.py's, were timed with a barrier before every call."""
    return {r.get("mode") or "barrier" for sweeps in runs.values() for sw in sweeps for r in sw.values()}


def medians(sweeps):
    """size -> (median time_us, median busbw, total wrong, n reps, pred_us or None)."""
    out = {}
    sizes = sorted({s for sw in sweeps for s in sw})
    for s in sizes:
        rs = [sw[s] for sw in sweeps if s in sw]
        t = statistics.median(float(r["time_us"]) for r in rs)
        bw = statistics.median(float(r["busbw_GBps"]) for r in rs)
        wrong = sum(int(r["wrong"]) for r in rs if r["wrong"] not in ("", "N/A"))
        pred = rs[0]["pred_us"]
        out[s] = (t, bw, wrong, len(rs), float(pred) if pred else None)
    return out


def spread(peer_sweeps, gcl_sweeps, s):
    """(lowest, highest) of peer time / gcl time within one repetition at size s, over the
    repetitions both have; None where fewer than two pair up."""
    def times(sweeps):
        return {sw[s]["_rep"]: float(sw[s]["time_us"]) for sw in sweeps if s in sw}
    peer, gcl = times(peer_sweeps), times(gcl_sweeps)
    ratios = [peer[r] / gcl[r] for r in peer if r in gcl and gcl[r] > 0]
    return (min(ratios), max(ratios)) if len(ratios) >= 2 else None


def ratio_cell(median_ratio, rng):
    """ **1.23** (1.10-1.31) |: the ratio of the medians, and the repetitions' range."""
    return f" **{median_ratio:.2f}**" + (f" ({rng[0]:.2f}-{rng[1]:.2f})" if rng else "") + " |"


def human(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


def limit(rows, test):
    """GB/s (per connection, i.e. per direction) of a machine_limits test, or None."""
    for r in rows:
        if r["test"] == test:
            return float(r["GBps_copied"])
    return None


def switch_us(rows, test, tasks):
    """Microseconds per switch of a machine_limits switch test with `tasks` tasks on one core,
    or None."""
    for r in rows:
        if r["test"] == test and int(r["threads"]) == tasks and r.get("ns"):
            return float(r["ns"]) / 1000
    return None


def main():
    global DATDIR
    ap = Parser(prog="report.py", description="Writes doc/benchmarks.md and its plots from the "
                "CSV files of scripts/bench.sh.")
    ap.add_argument("results", help="directory of the sweeps' *.csv (and limits.csv, meta.txt)")
    ap.add_argument("doc", help="the Markdown file to write")
    ap.add_argument("img", help="directory of the plots")
    a = ap.parse_args()
    if not os.path.isdir(a.results):
        ap.error(f"RESULTS: '{a.results}' is not a directory")
    results, doc, img = a.results, a.doc, a.img
    DATDIR = results
    os.makedirs(img, exist_ok=True)
    meta = {}
    if os.path.exists(os.path.join(results, "meta.txt")):
        for line in open(os.path.join(results, "meta.txt")):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = meta.get(k, "") + (("\n" if k == "commands" else " | ") if k in meta else "") + v
    runs = load(results)
    modes = timing_modes(runs)
    colls = [c for c in ("all_reduce", "broadcast", "reduce_scatter", "all_gather", "all_to_all")
             if any(k[0] == c for k in runs)]
    ranks = sorted({k[1] for k in runs})
    limits_path = os.path.join(results, "limits.csv")
    limits = []
    if os.path.exists(limits_path):
        limits = [r for r in csv.DictReader(open(limits_path)) if r["test"] != "test"]
    one_way, duplex = limit(limits, "tcp_loopback"), limit(limits, "tcp_loopback_duplex")
    duplex_32m = limit(limits, "tcp_loopback_duplex_32m")
    # The same with reno, which gcl's connections within a host use (rows "..._reno", present
    # where the system's congestion control is another one).
    one_way_reno, duplex_reno = limit(limits, "tcp_loopback_reno"), limit(limits, "tcp_loopback_duplex_reno")
    duplex_32m_reno = limit(limits, "tcp_loopback_duplex_32m_reno")

    md = []
    w = md.append
    w("# Benchmarks: gcl side by side with Open MPI and Gloo")
    w("")
    w("Generated by `scripts/bench.sh` (do not edit by hand; rerun it). Every number below was")
    w("measured in the same run, gcl, Open MPI and Gloo interleaved per repetition, on the")
    w("machine described here.")
    w("")
    w("## Machine and run")
    w("")
    for k in ("date", "machine", "cpu", "cores", "memory", "kernel", "compiler", "openmpi", "gloo",
              "load_before", "load_after", "reps", "timing", "mode"):
        if k in meta:
            w(f"- **{k.replace('_', ' ')}**: {meta[k]}")
    w("")
    if len(modes) > 1:
        print(f"report: results mix timing modes {sorted(modes)}; the tables mix them too",
              file=sys.stderr)
        w(f"**Warning**: these results mix timing modes ({', '.join(sorted(modes))}); the medians "
          "below mix them too. Rerun without `--keep` to compare like with like.")
        w("")
    how = "; or ".join(MODES.get(m, m) for m in sorted(modes)) or MODES["b2b"]
    w("How to read the tables: *time* is the median over repetitions of the median over calls")
    w("of the slowest rank's time per call. Timing:")
    w(f"{how}.")
    w("*busbw* uses nccl-tests' factors (all_reduce 2(P-1)/P, reduce_scatter, all_gather and")
    w("all_to_all (P-1)/P, broadcast 1).")
    w("*pred us* (all_reduce): what gcl's cost model (`gcl::cost_model`, doc/algorithms.md)")
    w("predicts for the algorithm run at that size, from the latency, bandwidth and reduction")
    w("rate `gcl::calibrate` measured on the same transport at the start of the sweep. The model")
    w("has no term for ranks that share cores (P = 4 and 8 on this machine's 2 cores), nor for")
    w("caches: it is a check of the homework's formulas, not a forecast, and is furthest off there.")
    w("**vs Open MPI = gcl busbw / Open MPI busbw = Open MPI time / gcl time**, and **vs Gloo**")
    w("likewise: above 1.00 gcl is faster. In parentheses beside it, where two or more repetitions")
    w("pair up: the lowest and highest of the same ratio within one repetition (gcl's run and the")
    w("peer's of the same repetition, minutes apart), which shows how far the machine moved the")
    w("ratio during the run. Gloo (the library torch.distributed runs on CPUs) is")
    w("measured over TCP only and has no reduce_scatter. #wrong sums the exact result checks")
    w("(integer-valued data) of every repetition and implementation; it must be 0.")
    w("")

    if limits:
        w("## The machine's limits")
        w("")
        w("`machine_limits` (benchmark/memcpy.cpp): a STREAM-like memcpy of buffers far larger")
        w("than the caches, one buffer pair per thread (GB/s of bytes copied; memory traffic is")
        w("twice that); `cross_memory_attach`, one process copying another's buffer of that size")
        w("into its own with `process_vm_readv` (the kernel's one copy, which shared memory can use")
        w("for large messages: doc/shm.md); one loopback TCP connection carrying data one way; and two connections")
        w("carrying data in opposite directions at once (duplex: GB/s per direction, traffic both")
        w("directions), as a ring's steps do. For TCP, *threads* is the number of connections;")
        w("the first two send from and receive into a 1 MiB buffer, which stays in the caches,")
        w("`tcp_loopback_duplex_32m` from and into 32 MiB buffers, as a large message's are.")
        if one_way_reno is not None:
            w("Rows ending in `_reno` are the same connections with the reno congestion control,")
            w("which gcl's TCP transport sets on connections within a host (doc/tcp.md, \"Congestion")
            w("control within a host\"); the others have the system's, which Open MPI and Gloo keep.")
        w("")
        w("| test | threads | bytes | copied GB/s | traffic GB/s |")
        w("|---|---:|---:|---:|---:|")
        for r in limits:
            if not r["GBps_copied"]:
                continue  # a latency (column ns), below
            w(f"| {r['test']} | {r['threads']} | {human(int(r['bytes']))} | {float(r['GBps_copied']):.2f} "
              f"| {float(r['GBps_traffic']):.2f} |")
        w("")
        trip = next((r for r in limits if r["test"] == "line_round_trip" and r.get("ns")), None)
        if trip is not None:
            w(f"A cache line's round trip between two cores (`line_round_trip`, two threads pinned to")
            w(f"two cores passing a counter through one line): **{float(trip['ns']):.0f} ns**, the least")
            w("that a small message between threads and its answer can cost; a back-to-back all_reduce")
            w("of a few bytes at P = 2 moves a line each way per call.")
            w("")
        switches = {(kind, n): switch_us(limits, f"switch_{kind}", n)
                    for kind in ("threads", "processes") for n in (2, 4)}
        if all(v is not None for v in switches.values()):
            found = re.search(r"(\d+) cores", meta.get("machine", ""))
            cores = int(found.group(1)) if found else None
            w("A switch between tasks sharing one core (`switch_threads`, `switch_processes`, benchmark/")
            w("switch_cost.hpp: 2 or 4 tasks pinned to one CPU hand it round by `sched_yield`): between")
            w(f"threads **{switches['threads', 2]:.1f} us** (2 tasks) and **{switches['threads', 4]:.1f} us** (4),")
            w(f"between processes **{switches['processes', 2]:.1f} us** and **{switches['processes', 4]:.1f} us**.")
            w("Where ranks outnumber the cores, a back-to-back call of a few bytes ends only when every")
            w("rank has run once more, so each core switches at least as many times a call as it has")
            tail = "ranks, whatever the transport does between them"
            if cores:
                floors = []
                for per_core in (2, 4):
                    p = per_core * cores
                    if p in ranks:
                        floors.append(f"at P = {p} on {cores} cores, {per_core} x {switches['processes', per_core]:.1f}"
                                      f" = {per_core * switches['processes', per_core]:.0f} us a call for processes"
                                      f" (gcl shm, Open MPI) against {per_core} x {switches['threads', per_core]:.1f}"
                                      f" = {per_core * switches['threads', per_core]:.0f} us for threads (gcl inproc)")
                if floors:
                    tail += ": " + "; ".join(floors)
            w(tail + ".")
            w("")

    summary = []
    for coll in colls:
        w(f"## {coll}")
        w("")
        for gl, peer_defs, title in SECTIONS:
            for p in ranks:
                gkeys = sorted(k for k in runs if k[0] == coll and k[1] == p and k[2] == gl)
                peers = []  # (table name, plot name, {size: medians})
                peer_runs = {}  # table name -> its repetitions' sweeps
                for label, name, plot_name in peer_defs:
                    keys = sorted(k for k in runs if k[0] == coll and k[1] == p and k[2] == label)
                    keys.sort(key=lambda k: k[3] != PEER_ALGORITHM)  # gcl's default first
                    if keys:
                        peers.append((name, plot_name, medians(runs[keys[0]])))
                        peer_runs[name] = runs[keys[0]]
                if not gkeys or not peers:
                    continue
                gcls = [(k[3], medians(runs[k])) for k in gkeys]
                gcl_runs = {k[3]: runs[k] for k in gkeys}
                sizes = sorted({s for _, _, m in peers for s in m})
                w(f"### {coll}, P = {p}: {title}")
                w("")
                if gl == "tcp" and one_way is not None:
                    ceil = f"one way {one_way:.2f} GB/s"
                    if duplex is not None:
                        ceil += f", duplex {duplex:.2f} GB/s per direction (both directions busy, as in a ring)"
                    if duplex_32m is not None:
                        ceil += f", duplex from and into 32 MiB buffers {duplex_32m:.2f} GB/s per direction"
                    if one_way_reno is not None:
                        ceil += f"; with reno, as gcl's connections: one way {one_way_reno:.2f}"
                        if duplex_reno is not None:
                            ceil += f", duplex {duplex_reno:.2f}"
                        if duplex_32m_reno is not None:
                            ceil += f", from and into 32 MiB buffers {duplex_32m_reno:.2f}"
                    w(f"Loopback TCP ceiling (machine_limits): {ceil}.")
                    w("")
                head, sep = "| size |", "|---:|"
                for name, _, _ in peers:
                    head += f" {name} us | {name} busbw |"
                    sep += "---:|---:|"
                for alg, _ in gcls:
                    head += f" gcl {alg} us | busbw | pred us |" + "".join(f" vs {n} |" for n, _, _ in peers)
                    sep += "---:|---:|---:|" + "---:|" * len(peers)
                w(head + " #wrong |")
                w(sep + "---:|")
                for s in sizes:
                    line, wrong = f"| {human(s)} |", 0
                    for _, _, m in peers:
                        if s in m:
                            line += f" {m[s][0]:.2f} | {m[s][1]:.3f} |"
                            wrong += m[s][2]
                        else:
                            line += " - | - |"
                    for alg, g in gcls:
                        if s not in g:
                            line += " - | - | - |" + " - |" * len(peers)
                            continue
                        gt, gb, gw, _, gp = g[s]
                        wrong += gw
                        pred = f"{gp:.1f}" if gp is not None else "-"
                        line += f" {gt:.2f} | {gb:.3f} | {pred} |"
                        for name, _, m in peers:
                            line += (ratio_cell(m[s][0] / gt, spread(peer_runs[name], gcl_runs[alg], s))
                                     if s in m and gt > 0 else " - |")
                    w(line + f" {wrong} |")
                w("")
                # gnuplot data: size, then time and busbw per peer, then per gcl algorithm
                dat = os.path.join(DATDIR, f"bench_{coll}_{gl}_p{p}.dat")
                with open(dat, "w") as f:
                    # A peer that is gcl itself (its threads beside its shm) gets the name of
                    # that curve in its own section, so that the plot draws it once.
                    cols = [f"{plot_name} {PEER_ALGORITHM}" if plot_name.startswith("gcl ") else plot_name
                            for _, plot_name, _ in peers] + [f"{PLOT_NAME[gl]} {a}" for a, _ in gcls]
                    f.write("# size " + " ".join(f"{c.replace(' ', '_')}_time {c.replace(' ', '_')}_busbw"
                                                 for c in cols) + "\n")
                    for s in sizes:
                        vals = [s]
                        for m in [m for _, _, m in peers] + [g for _, g in gcls]:
                            vals += [m[s][0], m[s][1]] if s in m else ["NaN", "NaN"]
                        f.write(" ".join(str(v) for v in vals) + "\n")
                big = max(sizes)
                for alg, g in gcls:
                    small = min(s for s in g if s >= 8) if any(s >= 8 for s in g) else min(g)
                    if big in g and small in g:
                        summary.append((coll, TRANSPORT[gl], p, alg, big, small, g,
                                        {name: m for name, _, m in peers}))
        for kind in ("busbw", "latency"):
            png = f"bench_{coll}_{kind}.png"
            if plot(img, coll, ranks, kind, png):
                w(f"![{coll} {kind}](img/{png})")
                w("")

    if summary:
        def ratio(m, g, s):
            return f"**{m[s][0] / g[s][0]:.2f}**" if m is not None and s in m and g[s][0] > 0 else "-"

        def val(m, s, i, fmt):
            return format(m[s][i], fmt) if m is not None and s in m else "-"

        s = ["## Summary: the targets", "",
             "Largest and smallest (>= 8 B) size of each sweep; vs X = X's time / gcl's time (above 1: "
             "gcl is faster).", "",
             "| collective | transport | P | gcl algorithm | large | vs Open MPI | vs Gloo | gcl busbw "
             "| MPI busbw | Gloo busbw | small | vs Open MPI | vs Gloo | gcl us | MPI us | Gloo us |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for (c, t, p, a, big, small, g, peers) in summary:
            mpi, gloo = peers.get("Open MPI"), peers.get("Gloo")
            s.append(f"| {c} | {t} | {p} | {a} | {human(big)} | {ratio(mpi, g, big)} | {ratio(gloo, g, big)} "
                     f"| {g[big][1]:.2f} | {val(mpi, big, 1, '.2f')} | {val(gloo, big, 1, '.2f')} "
                     f"| {human(small)} | {ratio(mpi, g, small)} | {ratio(gloo, g, small)} "
                     f"| {g[small][0]:.2f} | {val(mpi, small, 0, '.2f')} | {val(gloo, small, 0, '.2f')} |")
        s.append("")
        # put the summary right after the machine section
        idx = next(i for i, l in enumerate(md) if l.startswith("## ") and "limits" not in l and "Machine" not in l)
        md[idx:idx] = s
    if "commands" in meta:
        w("## Commands")
        w("")
        w("```")
        w(meta["commands"])
        w("```")
        w("")
    notes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analysis.md")
    if os.path.exists(notes):
        w(open(notes).read())
    with open(doc, "w") as f:
        f.write("\n".join(md) + "\n")


# Line colours and point types of the plots' curves, in order: distinguishable on white, no
# yellow (gnuplot's default 5th colour is unreadable on white).
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
           "#000000"]
POINTS = [7, 5, 9, 11, 13, 1, 2, 3]


def size_tics(lo, hi):
    """Tick marks for a log2 size axis from lo to hi bytes: every 2^step-th power of 2 (at most
    9 labels; a step that lands on both ends if there is one), from the first at or below lo to
    the first at or above hi, labelled in one unit family (B, KiB, MiB, GiB), no exponents."""
    lo_k = max(0, (max(lo, 1)).bit_length() - 1)
    hi_k = max(lo_k, (max(hi, 1) - 1).bit_length())
    span = hi_k - lo_k
    fits = [k for k in range(1, 9) if span / k <= 8]
    step = next((k for k in fits if span % k == 0), fits[0])
    ks = list(range(lo_k, hi_k + 1, step))
    if ks[-1] < hi_k:
        ks.append(ks[-1] + step)
    return [(human(1 << k), 1 << k) for k in ks]


def time_tics(lo, hi):
    """Decade ticks for a log time axis in microseconds, labelled in us, ms or s."""
    out, v = [], 10.0 ** math.floor(math.log10(max(lo, 1e-3)))
    while True:
        label = (f"{v:g} us" if v < 1e3 else f"{v / 1e3:g} ms" if v < 1e6 else f"{v / 1e6:g} s")
        out.append((label, v))
        if v >= hi:
            return out
        v *= 10


def plot(img, coll, ranks, kind, png):
    """One PNG per collective and metric, one panel per P, gcl and its peers on both transports."""
    panels = []
    sizes, values = [], []
    for p in ranks:
        curves = []
        for gl, _, _ in SECTIONS:
            dat = os.path.join(DATDIR, f"bench_{coll}_{gl}_p{p}.dat")
            if not os.path.exists(dat):
                continue
            lines = open(dat).read().split("\n")
            header = lines[0].split()[1:]  # after "#": size, then NAME_time NAME_busbw ...
            rows = [l.split() for l in lines[1:] if l.strip() and not l.startswith("#")]
            suffix = "_time" if kind == "latency" else "_busbw"
            for i, h in enumerate(header[1:]):
                if h.endswith(suffix):
                    title = h[:-len(suffix)].replace("_", " ")
                    if any(t == title for t, _ in curves):
                        continue  # the same data in two sections (Open MPI vader, gcl threads)
                    curves.append((title, f"'{dat}' using 1:{i + 2}"))
                    for r in rows:
                        try:
                            size, value = int(float(r[0])), float(r[i + 1])
                        except (ValueError, IndexError):
                            continue
                        if math.isfinite(value):
                            sizes.append(size)
                            values.append(value)
        if curves:
            panels.append((p, curves))
    if not panels or not sizes:
        return False
    # The same colour and point for the same curve in every panel.
    titles = []
    for _, curves in panels:
        for title, _ in curves:
            if title not in titles:
                titles.append(title)
    ylabel = "time per call" if kind == "latency" else "busbw (GB/s)"
    lo, hi = min(sizes), max(sizes)
    tics = size_tics(lo, hi)
    script = [f"set terminal pngcairo size {700 * len(panels)},500 noenhanced" if has_cairo() else
              f"set terminal png size {700 * len(panels)},500 noenhanced",
              f"set output '{os.path.join(img, png)}'",
              f"set multiplot layout 1,{len(panels)}",
              "set logscale x 2", "set xlabel 'size per rank'",
              f"set xrange [{tics[0][1] / 1.3}:{tics[-1][1] * 1.3}]",
              "set xtics (" + ", ".join(f"'{label}' {v}" for label, v in tics) + ")",
              "set mxtics default",
              f"set ylabel '{ylabel}'", "set key top left", "set grid"]
    if kind == "latency":
        positive = [v for v in values if v > 0]
        script.append("set logscale y 10")
        if positive:
            yt = time_tics(min(positive), max(positive))
            script.append(f"set yrange [{yt[0][1]}:{yt[-1][1]}]")
            script.append("set ytics (" + ", ".join(f"'{label}' {v}" for label, v in yt) + ")")
    else:
        script.append("set yrange [0:*]")
        script.append("set format y '%g'")
    for p, curves in panels:
        script.append(f"set title '{coll}, P = {p}'")
        plots = []
        for title, using in curves:
            k = titles.index(title)
            plots.append(f"{using} with linespoints lw 1.5 pt {POINTS[k % len(POINTS)]} ps 0.8 "
                         f"lc rgb '{PALETTE[k % len(PALETTE)]}' title '{title}'")
        script.append("plot " + ", ".join(plots))
    script.append("unset multiplot")
    try:
        subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"report: gnuplot failed for {png}: {e}", file=sys.stderr)
        return False
    return True


_cairo = None


def has_cairo():
    global _cairo
    if _cairo is None:
        try:
            out = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True).stderr
            out += subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True).stdout
            _cairo = "pngcairo" in out
        except OSError:
            _cairo = False
    return _cairo


if __name__ == "__main__":
    main()

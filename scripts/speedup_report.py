#!/usr/bin/env python3
"""The table, the CSV and the plots of scripts/speedup.sh (the homework's speedup experiment).

  speedup_report.py table OUT --sizes "1 2 4 8" --seeds "1" [--batch ... --lr ... ...]
      reads OUT/nN-seedS.json (train_lenet5 --json) and OUT/nN-seedS.txt (its stderr), writes
      OUT/speedup.txt (the table, also printed) and OUT/speedup.csv (one row per N)
  speedup_report.py curves OUT --sizes "1 2 4 8" --seed 1 --png FILE [--title ...]
      test accuracy against iterations, one curve per N, from OUT/nN-seedS.csv (--log)
  speedup_report.py speedup CSV [CSV ...] --png FILE
      the headline picture: k*(1)/k*(N) against N, one line per CSV (e.g. the run with the
      homework's fixed step size and the one with the step scaled linearly with N), with the
      ideal line k*(1)/k*(N) = N; a world size that did not reach the target is marked and says
      why (not reached in M iterations, diverged, failed)

k*(N): the iterations N workers need to reach the target test accuracy (the median over seeds
of the runs that reached it). A run "diverged" if it did not reach the target and its last test
accuracy is below 0.5 (a dead network sits near 0.1), or if the trainer stopped on a non-finite
loss. The CSV is written with Python's csv module (RFC 4180 quoting). The plots need matplotlib
(Debian: python3-matplotlib); the table and the CSV need only the standard library.
"""
import csv
import json
import os
import statistics
import sys
import textwrap

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmark"))
from report import Parser  # noqa: E402  (benchmark/report.py: gcl's command-line conventions)

# Distinguishable on white and in print, no yellow (Tableau's, less olive and yellow).
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf",
           "#000000"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
DIVERGED_BELOW = 0.5
CSV_FIELDS = ["world_size", "lr", "lr_scaling", "batch", "target_accuracy", "k_star", "speedup",
              "seconds", "train_seconds", "images_per_second", "comm_share", "k_star_per_seed",
              "final_accuracy", "status"]


def median(values):
    return statistics.median(values) if values else None


def run_of(out, n, seed, max_iterations):
    """One run's result: the JSON's fields, or a failure read from the trainer's stderr."""
    base = os.path.join(out, f"n{n}-seed{seed}")
    try:
        with open(base + ".json") as f:
            r = json.load(f)
    except (OSError, ValueError):
        why = "no result"
        try:
            lines = [l.strip() for l in open(base + ".txt") if l.strip()]
            if lines:
                why = lines[-1]
        except OSError:
            pass
        diverged = "non-finite" in why or "loss is" in why
        return {"k_star": -1, "accuracy": None, "lr": None,
                "status": ("diverged: " if diverged else "failed: ") + why}
    k = r["k_star"]
    acc = r.get("accuracy")
    if k >= 0:
        status = "reached"
    elif acc is not None and acc < DIVERGED_BELOW:
        status = f"diverged: test accuracy {acc:.2f} after {r.get('iterations', max_iterations)} iterations"
    else:
        status = f"not reached in {r.get('iterations', max_iterations)} iterations (test accuracy {acc:.4f})"
    r["status"] = status
    return r


def table(a):
    sizes, seeds = a.sizes.split(), a.seeds.split()
    runs = {(n, s): run_of(a.out, n, s, a.max_iterations) for n in sizes for s in seeds}

    def values(n, key):
        return [runs[n, s][key] for s in seeds
                if runs[n, s].get("k_star", -1) >= 0 and runs[n, s].get(key) is not None]

    k1 = median(values(sizes[0], "k_star")) if sizes[0] == "1" else None
    rows = []
    for n in sizes:
        k = median(values(n, "k_star"))
        per_seed = " ".join(str(runs[n, s]["k_star"]) if runs[n, s]["k_star"] >= 0 else "-"
                            for s in seeds)
        # Throughput and communication: of every run that produced a result.
        done = [runs[n, s] for s in seeds if "images_per_second" in runs[n, s]]
        ips = median([r["images_per_second"] for r in done])
        comm = median([r["comm_share"] for r in done])
        accs = [r["accuracy"] for r in done if r.get("accuracy") is not None]
        statuses = sorted({runs[n, s]["status"] for s in seeds})
        missed = sorted({runs[n, s]["status"] for s in seeds if runs[n, s]["status"] != "reached"})
        if k is None:
            status = "; ".join(statuses)
        elif missed:
            # k* is the median of the seeds that reached the target: say how many did not, and why.
            reached = sum(runs[n, s]["status"] == "reached" for s in seeds)
            status = f"reached by {reached} of {len(seeds)} seeds; the others: " + "; ".join(missed)
        else:
            status = "reached"
        lr_n = next((r["lr"] for r in done if r.get("lr") is not None),
                    a.lr * (int(n) if a.lr_scaling == "linear" else 1))
        rows.append({
            "world_size": int(n), "lr": lr_n, "lr_scaling": a.lr_scaling, "batch": a.batch,
            "target_accuracy": a.target, "k_star": k,
            "speedup": (k1 / k) if (k1 and k) else None,
            "seconds": median(values(n, "seconds")), "train_seconds": median(values(n, "train_seconds")),
            "images_per_second": ips, "comm_share": comm, "k_star_per_seed": per_seed,
            "final_accuracy": median(accs), "status": status})

    lines = [f"# LeNet-5 / MNIST, distributed SGD (sync {a.sync}, {a.algorithm} all_reduce, "
             f"{a.transport}), batch {a.batch} per worker, lr {a.lr:g} (scaling: {a.lr_scaling}), "
             f"target {a.target:g}, evaluation every {a.eval_every} iterations, seeds: {' '.join(seeds)}",
             "%4s %8s %8s %9s %9s %10s %6s   %s" % ("N", "k*(N)", "k*1/k*N", "seconds", "training",
                                                   "images/s", "comm", "k* per seed")]
    for r in rows:
        ips = "%10.0f" % r["images_per_second"] if r["images_per_second"] is not None else "%10s" % "-"
        comm = "%5.0f%%" % (100 * r["comm_share"]) if r["comm_share"] is not None else "%6s" % "-"
        if r["k_star"] is not None:
            speedup = "%8.2f" % r["speedup"] if r["speedup"] is not None else "%8s" % "-"
            lines.append("%4d %8g %s %9.1f %9.1f %s %s  %s" % (
                r["world_size"], r["k_star"], speedup, r["seconds"], r["train_seconds"], ips, comm,
                r["k_star_per_seed"]))
        else:
            lines.append("%4d %8s %8s %9s %9s %s %s  %s (%s)" % (
                r["world_size"], "-", "-", "-", "-", ips, comm, r["k_star_per_seed"], r["status"]))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(a.out, "speedup.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "speedup.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else (f"{v:.6g}" if isinstance(v, float) else v))
                        for k, v in r.items()})
    print(f"speedup: table in {os.path.join(a.out, 'speedup.txt')}, "
          f"CSV in {os.path.join(a.out, 'speedup.csv')}", file=sys.stderr)


def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        sys.exit("speedup_report.py: matplotlib not found (Debian: python3-matplotlib): no plot")


def curves(a):
    """Test accuracy against iterations, one curve per N; a run below the axis says so."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    low, notes = 0.85, []
    top_k = 0
    for i, n in enumerate(a.sizes.split()):
        its, accs = [], []
        path = os.path.join(a.out, f"n{n}-seed{a.seed}.csv")
        try:
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    its.append(int(row["iteration"]))
                    accs.append(float(row["test_accuracy"]))
        except OSError:
            pass
        run = run_of(a.out, n, a.seed, a.max_iterations)
        label = f"N = {n}"
        if run.get("lr") is not None:
            label += f" (lr {run['lr']:g})"
        if run["k_star"] >= 0:
            label += f": k* = {run['k_star']}"
        else:
            label += ": " + run["status"]
        # A diverged run (below the axis anyway) does not stretch the axis for the others.
        if its and not run["status"].startswith("diverged"):
            top_k = max(top_k, its[-1])
        if accs and max(accs) < low:
            label += " (below this axis)"
            notes.append(f"N = {n}: {run['status']}")
        ax.plot(its, accs, color=COLOURS[i % len(COLOURS)], marker=MARKERS[i % len(MARKERS)],
                markersize=3, linewidth=1.2, label=label)
    ax.axhline(a.target, color="gray", linestyle="--", linewidth=1, label=f"target {a.target:g}")
    ax.set_ylim(low, 1.0)
    ax.set_xlim(0, max(top_k, 1) * 1.02)
    ax.set_xlabel("iteration k")
    ax.set_ylabel("test accuracy (10000 images)")
    ax.set_title(a.title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    if notes:
        ax.text(0.02, 0.97, "\n".join(notes), transform=ax.transAxes, va="top", fontsize=9,
                bbox=dict(boxstyle="round", facecolor="white", edgecolor="#d62728"))
    fig.tight_layout()
    fig.savefig(a.png)
    print(f"speedup: accuracy curves in {a.png}", file=sys.stderr)


def speedup(a):
    """k*(1)/k*(N) against N, one line per CSV, and the ideal N."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 5), dpi=100)
    all_n, notes = set(), []
    for i, path in enumerate(a.csv):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        if not rows:
            continue
        scaling = rows[0]["lr_scaling"]
        base_lr = float(rows[0]["lr"]) / (int(rows[0]["world_size"]) if scaling == "linear" else 1)
        name = (f"step {base_lr:g}, the same for every N" if scaling == "none"
                else f"step {base_lr:g} x N (linear scaling)")
        seeds = max(len(r["k_star_per_seed"].split()) for r in rows)
        name += f" (median of {seeds} seeds)" if seeds > 1 else " (1 seed)"
        colour, marker = COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)]
        xs, ys = [], []
        for r in rows:
            n = int(r["world_size"])
            all_n.add(n)
            if r["speedup"]:
                xs.append(n)
                ys.append(float(r["speedup"]))
                partly = r["status"] not in ("", "reached")
                ax.annotate(f"{float(r['speedup']):.2f}" + (" (!)" if partly else ""),
                            (n, float(r["speedup"])),
                            textcoords="offset points", xytext=(-6, 6) if i % 2 else (6, -13),
                            ha="right" if i % 2 else "left", fontsize=8, color=colour)
                if partly:  # some seeds did not reach the target: the point is not the whole story
                    notes.append((colour, f"(!)  N = {n}, step {float(r['lr']):g}: {r['status']}"))
            else:
                # Not reached: a cross on the axis, and the reason in the box below.
                ax.plot([n], [0], marker="x", color=colour, markersize=10, mew=2, clip_on=False)
                notes.append((colour, f"x  N = {n}, step {float(r['lr']):g}: {r['status'] or 'not reached'}"))
        ax.plot(xs, ys, color=colour, marker=marker, linewidth=1.5, label=name)
    if not all_n:
        sys.exit("speedup_report.py: no rows in " + " ".join(a.csv))
    ns = sorted(all_n)
    ax.plot(ns, ns, color="gray", linestyle="--", linewidth=1, label="ideal: k*(1)/k*(N) = N")
    # Linear axes: the ideal is the diagonal.
    ax.set_xticks(ns)
    ax.set_xlim(0, ns[-1] + 0.5)
    ax.set_ylim(0, ns[-1] + 0.5)
    ax.set_xlabel("workers N")
    ax.set_ylabel("speedup in iterations, k*(1) / k*(N)")
    ax.set_title(a.title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    if notes:
        # One note per world size that some run did not reach the target with, in its run's
        # colour, wrapped, under the legend (above the ideal line, where no point is drawn).
        ax.text(0.02, 0.79, "not every run reached the target:", transform=ax.transAxes,
                ha="left", va="top", fontsize=8)
        y = 0.79 - 0.045
        for colour, text in notes:
            wrapped = textwrap.fill(text, 52, subsequent_indent="     ")
            ax.text(0.02, y, wrapped, transform=ax.transAxes, ha="left", va="top", fontsize=8,
                    color=colour)
            y -= 0.04 * (wrapped.count("\n") + 1) + 0.01
    fig.tight_layout()
    fig.savefig(a.png)
    print(f"speedup: speedup plot in {a.png}", file=sys.stderr)


def main():
    ap = Parser(prog="speedup_report.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["table", "curves", "speedup"])
    ap.add_argument("paths", nargs="+", metavar="PATH",
                    help="table, curves: the output directory of speedup.sh; speedup: CSV files")
    ap.add_argument("--sizes", default="1 2 4 8", help="world sizes, as speedup.sh ran them")
    ap.add_argument("--seeds", default="1", help="table: the seeds; curves: the first is drawn")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05, help="the step size of N = 1")
    ap.add_argument("--lr-scaling", default="none", choices=["none", "linear"])
    ap.add_argument("--target", type=float, default=0.97)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--max-iterations", type=int, default=4000)
    ap.add_argument("--sync", default="params")
    ap.add_argument("--algorithm", default="ring")
    ap.add_argument("--transport", default="inproc")
    ap.add_argument("--png", help="curves, speedup: the image to write")
    ap.add_argument("--title", help="curves, speedup: the plot's title")
    a = ap.parse_args()
    if a.command != "speedup" and len(a.paths) != 1:
        ap.error(f"{a.command}: one output directory, got {len(a.paths)} paths")
    if a.command != "table" and not a.png:
        ap.error(f"{a.command}: --png is required")
    if a.command == "speedup":
        for path in a.paths:
            if not os.path.isfile(path):
                ap.error(f"CSV: '{path}' is not a file")
    elif not os.path.isdir(a.paths[0]):
        ap.error(f"OUT: '{a.paths[0]}' is not a directory")
    a.out, a.csv, a.seed = a.paths[0], a.paths, a.seeds.split()[0]
    if a.title is None:
        a.title = ("LeNet-5 / MNIST, distributed SGD: speedup to %g%% test accuracy" % (100 * a.target)
                   if a.command == "speedup" else
                   f"Distributed SGD on LeNet-5 / MNIST: batch {a.batch} per worker, lr {a.lr:g}, "
                   f"lr scaling {a.lr_scaling} (seed {a.seed})")
    {"table": table, "curves": curves, "speedup": speedup}[a.command](a)


if __name__ == "__main__":
    main()

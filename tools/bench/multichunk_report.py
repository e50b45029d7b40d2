#!/usr/bin/env python3
"""Summarises multichunk.csv files from tools/bench/device_run.sh (size,case,run,wall_s,valid).

For each file and input size: the median wall of every case, its seconds per GiB and its
ratio to the one-chunk case of the same size in the same file (the baseline measured beside
it). Writes a Markdown table to stdout, and with --plot a PNG of seconds per GiB against size
(matplotlib). Usage: multichunk_report.py [--plot out.png] FILE.csv...
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def gib(size: str) -> float:
    units = {"K": 2**-20, "M": 2**-10, "G": 1.0, "T": 1024.0}
    return float(size[:-1]) * units[size[-1].upper()] if size[-1].isalpha() else float(size) / 2**30


def load(path: Path):
    walls = defaultdict(list)  # (size, case) -> walls
    invalid = defaultdict(int)
    with path.open() as f:
        for row in csv.DictReader(f):
            key = (row["size"], row["case"])
            walls[key].append(float(row["wall_s"]))
            if row["valid"] != "yes":
                invalid[key] += 1
    return walls, invalid


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plot", type=Path, help="PNG of seconds per GiB against input size")
    ap.add_argument("files", type=Path, nargs="+")
    args = ap.parse_args()

    print("| file | size | case | runs | walls s | median s | s per GiB | x one-chunk | valid |")
    print("|---|---|---|---|---|---|---|---|---|")
    series = defaultdict(list)  # (file, case) -> [(GiB, s per GiB)]
    for path in args.files:
        walls, invalid = load(path)
        for size in sorted({s for s, _ in walls}, key=gib):
            base = walls.get((size, "one-chunk"))
            base_median = statistics.median(base) if base else None
            for (s, case), w in sorted(walls.items()):
                if s != size:
                    continue
                m = statistics.median(w)
                ratio = f"{m / base_median:.2f}" if base_median else "-"
                valid = "all" if invalid[(s, case)] == 0 else f"{invalid[(s, case)]} invalid"
                print(f"| {path.name} | {size} | {case} | {len(w)} | "
                      f"{' '.join(f'{x:.3f}' for x in w)} | {m:.3f} | {m / gib(size):.3f} | "
                      f"{ratio} | {valid} |")
                series[(path.stem, case)].append((gib(size), m / gib(size)))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for (stem, case), pts in sorted(series.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{case} ({stem})")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("input size (GiB)")
        ax.set_ylabel("median wall per GiB (s)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())

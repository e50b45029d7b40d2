#!/usr/bin/env python3
"""Report of tools/bench/auto/sweep.sh: per case (size, key type, distribution), the median wall
time of each --algorithm, the fastest fixed backend, and auto's time against it (target: within
5%). Writes Markdown to stdout. Standard library only (the GPU machine has no numpy).
Usage: report.py CSV...   (several CSVs: their rows are pooled, as rounds of one sweep)"""
import csv
import statistics
import sys
from collections import defaultdict

SIZE_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size_bytes(text):
    return int(text[:-1]) * SIZE_UNITS[text[-1]] if text[-1] in SIZE_UNITS else int(text)


FIXED = ["cpu", "onesweep", "hrs"]


def read(paths):
    """Wall times per (size, type, dist, algorithm), and per case auto's choice and validity."""
    walls = defaultdict(list)
    sorter = {}
    strategy = {}
    valid = defaultdict(set)
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                key = (row["size"], row["type"], row["dist"])
                walls[key + (row["algorithm"],)].append(float(row["wall_s"]))
                if row["valid"] != "-":
                    valid[key].add(row["valid"])
                if row["algorithm"] == "auto":
                    sorter[key] = row["gpu_sorter"] or "cpu"
                    strategy[key] = row["strategy"]
    return walls, sorter, strategy, valid


def medians(walls, case):
    return {a: statistics.median(walls[case + (a,)]) for a in FIXED + ["auto"]
            if walls.get(case + (a,))}


def cases_of(walls):
    return sorted({k[:3] for k in walls}, key=lambda k: (size_bytes(k[0]), k[1], k[2]))


def ratios(paths):
    """(size, type, dist, auto / fastest) for every case of the CSVs, their rows pooled."""
    walls = read(paths)[0]
    out = []
    for case in cases_of(walls):
        med = medians(walls, case)
        best = min((a for a in FIXED if a in med), key=lambda a: med[a])
        out.append(case + (med["auto"] / med[best],))
    return out


def main(paths):
    walls, sorter, strategy, valid = read(paths)
    print("| size | keys | distribution | cpu s | onesweep s | hrs s | fastest | auto s | "
          "auto / fastest | auto chose | valid |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    worst = 0.0
    misses = 0
    cases = cases_of(walls)
    for case in cases:
        med = medians(walls, case)
        present = [a for a in FIXED if a in med]
        best = min(present, key=lambda a: med[a])
        ratio = med["auto"] / med[best] if "auto" in med else float("nan")
        worst = max(worst, ratio)
        misses += ratio > 1.05
        cells = [f"{med[a]:.3f}" if a in med else "-" for a in FIXED]
        ok = "yes" if valid[case] == {"yes"} else ",".join(sorted(valid[case])) or "-"
        print(f"| {case[0]} | {case[1]} | {case[2]} | " + " | ".join(cells) +
              f" | {best} | {med.get('auto', float('nan')):.3f} | "
              f"{'**' if ratio > 1.05 else ''}{ratio:.2f}{'**' if ratio > 1.05 else ''} | "
              f"{strategy.get(case, '')}: {sorter.get(case, '')} | {ok} |")
    print(f"\n{len(cases)} cases; auto within 5% of the fastest in {len(cases) - misses}; "
          f"worst auto / fastest {worst:.2f}.")


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env python3
"""Plots replace_output.sh's CSV: per binary and case, the median wall and the part of it that
came after --stats's own wall (at exit), with commit marked.

Usage: plot.py RESULTS.csv OUT.png"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    by = defaultdict(list)
    for r in rows:
        by[(r["binary"], r["case"])].append(r)
    keys = sorted(by, key=lambda k: (k[1], k[0]))
    med = {k: {f: statistics.median(float(r[f]) for r in by[k])
               for f in ("wall_s", "stats_wall_s", "commit_s")} for k in keys}
    labels = [f"{case}\n{binary}" for binary, case in keys]
    before_commit = [med[k]["stats_wall_s"] - med[k]["commit_s"] for k in keys]
    commit = [med[k]["commit_s"] for k in keys]
    after = [med[k]["wall_s"] - med[k]["stats_wall_s"] for k in keys]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.bar(labels, before_commit, label="sort (--stats wall before commit)")
    ax.bar(labels, commit, bottom=before_commit, label="commit (the rename)")
    ax.bar(labels, after, bottom=[a + b for a, b in zip(before_commit, commit)],
           label="after --stats ended (exit)")
    ax.set_ylabel("wall s, median")
    ax.set_title("sorting onto a new file, over a cached output, and in place")
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()

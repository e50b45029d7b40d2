#!/usr/bin/env python3
"""Plots the rounds of exp2.sh / exp3.sh (case,round,wall_s,valid): every round as a dot and
the median as a bar, per case, for each CSV given.

Usage: plot.py OUT.png CALL.csv [CALL.csv ...]"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    out, files = sys.argv[1], sys.argv[2:]
    fig, axes = plt.subplots(1, len(files), figsize=(6 * len(files), 4.5), squeeze=False)
    for ax, path in zip(axes[0], files):
        rounds = defaultdict(list)
        for row in csv.DictReader(open(path)):
            if "G" in row["case"].split("-")[-1]:
                continue  # the smaller sizes of exp3.sh: a table is enough
            rounds[row["case"]].append(float(row["wall_s"]))
        cases = list(rounds)
        medians = [statistics.median(rounds[c]) for c in cases]
        ax.bar(cases, medians, color="#9ecae1", label="median")
        for i, c in enumerate(cases):
            ax.plot([i] * len(rounds[c]), rounds[c], "k.", label="rounds" if i == 0 else None)
        ax.set_title(path.rsplit("/", 1)[-1] + ": 24 GiB u64, --gpu-memory 4G")
        ax.set_ylabel("wall (s)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()

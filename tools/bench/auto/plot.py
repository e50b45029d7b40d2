#!/usr/bin/env python3
"""Plot of tools/bench/auto/sweep.sh results: for every case (size, key type, distribution) of
the CSVs given, auto's median wall time over the fastest fixed backend's (report.py's ratio),
one dot per case, grouped by size, with the 5% band. Needs matplotlib (/usr/bin/python3).
Usage: plot.py OUT.png CSV...   (A.csv+B.csv: the rows of both pooled, as report.py does)"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from report import ratios, size_bytes  # noqa: E402


def main(out, paths):
    points = []
    for path in paths:
        points += ratios(path.split("+"))
    sizes = sorted({p[0] for p in points}, key=size_bytes)
    fig, ax = plt.subplots(figsize=(9, 4))
    for x, size in enumerate(sizes):
        here = [p for p in points if p[0] == size]
        for i, (_, key_type, _, ratio) in enumerate(here):
            offset = (i - len(here) / 2) * 0.6 / max(len(here), 1)
            ax.plot(x + offset, ratio, "o" if key_type == "u64" else "s", ms=4,
                    color="tab:blue" if key_type == "u64" else "tab:orange")
    ax.axhline(1.05, color="tab:red", lw=1, ls="--", label="5% above the fastest")
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_xticks(range(len(sizes)), sizes)
    ax.set_xlabel("input size (dots: u64 circles, u32 squares; one per distribution)")
    ax.set_ylabel("auto / fastest backend (median wall)")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

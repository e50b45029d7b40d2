#!/usr/bin/env python3
"""Plots device_multi.sh's results: the device-resident multi-GPU sort's phases per GPU count
and distribution (multi.csv), and the end-to-end walls against the I/O floor (e2e.csv, the
floor read from e2e.log).

Usage: plot.py RESULTS_DIR   (writes RESULTS_DIR/multi-gpu.png)"""
import csv
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PHASES = ("histogram_ms", "scatter_ms", "exchange_ms", "local_sort_ms")


def main():
    d = Path(sys.argv[1])
    multi = list(csv.DictReader(open(d / "multi.csv")))
    e2e = list(csv.DictReader(open(d / "e2e.csv")))
    floor = re.search(r"measured end to end: ([0-9.]+) s", (d / "e2e.log").read_text())
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))

    labels = [f"{r['slots']} GPU{'s' if r['slots'] != '1' else ''}\n{r['dist']}"
              + (f"\n{r['local']}" if r.get("local") else "") for r in multi]
    bottom = [0.0] * len(multi)
    for phase in PHASES:
        values = [float(r[phase]) for r in multi]
        left.bar(labels, values, bottom=bottom, label=phase.removesuffix("_ms").replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, values)]
    for x, r in enumerate(multi):
        left.text(x, float(r["total_ms"]) + 2, f"{float(r['total_ms']):.0f}", ha="center")
    left.set_ylabel("ms (slowest GPU per phase)")
    left.set_title(f"device-resident sort, {int(multi[0]['keys']) >> 30} Gi u64 keys")
    left.legend()

    names = [f"{i + 1}\n{r['devices']}\n{r['gpu_memory']}" for i, r in enumerate(e2e)]
    right.bar(names, [float(r["wall_s"]) for r in e2e], color="tab:gray")
    if floor:
        right.axhline(float(floor.group(1)), color="tab:red", linestyle="--",
                      label=f"I/O floor {float(floor.group(1)):.2f} s")
        right.legend()
    right.set_ylabel("wall s (in the order run)")
    size = re.search(r"records \(([0-9.]+ [KMGT]iB)\) in", (d / "e2e.log").read_text())
    right.set_title(f"{size.group(1) if size else 'a'} u64 file end to end (page cache warm)")
    fig.tight_layout()
    fig.savefig(d / "multi-gpu.png", dpi=110)


if __name__ == "__main__":
    main()

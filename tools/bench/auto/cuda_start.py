#!/usr/bin/env python3
"""Where the GPU backends' end-to-end times at one size differ: reads a CSV of
tools/bench/auto/sweep.sh and the --stats=json it kept (AUTO_STATS), and prints per case the
median wall time of each algorithm, the median time at which its GPU stages began (CUDA's
start: every stage before it waits for the context), and the median time after that point.
Where auto runs the same backend as the fastest, the walls differ by CUDA's start alone.
Usage: cuda_start.py SWEEP_CSV STATS_JSONL[.xz]   (standard library only)"""
import csv
import json
import lzma
import statistics
import sys
from collections import defaultdict

FIRST_GPU_STAGE = "pin"


def main(csv_path, stats_path):
    walls = {}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            walls[(row["size"], row["type"], row["dist"], row["algorithm"], row["run"])] = \
                float(row["wall_s"])
    wall = defaultdict(list)
    start = defaultdict(list)
    after = defaultdict(list)
    opener = lzma.open if stats_path.endswith(".xz") else open
    with opener(stats_path, "rt") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("# ") or i + 1 >= len(lines):
            continue
        size, key_type, dist, algorithm, run = line[2:].split()
        stats = json.loads(lines[i + 1])
        case = (size, key_type, dist)
        if case + (algorithm, run) not in walls:
            continue  # a case of another CSV
        wall[case + (algorithm,)].append(walls[case + (algorithm, run)])
        stages = {s["name"]: s for s in stats["stages"]}
        began = stages[FIRST_GPU_STAGE]["start"] if FIRST_GPU_STAGE in stages else 0.0
        if FIRST_GPU_STAGE in stages:
            start[case + (algorithm,)].append(began)
        after[case + (algorithm,)].append(stats["wall_seconds"] - began)
    med = statistics.median
    print("| size | keys | distribution | algorithm | wall s | CUDA started at s | after it s |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(wall):
        started = f"{med(start[key]):.3f}" if start.get(key) else "-"
        print(f"| {' | '.join(key)} | {med(wall[key]):.3f} | {started} | {med(after[key]):.3f} |")
    print()
    print("Per case, auto's time after CUDA's start (the CPU's whole time where it ran there)")
    print("against the fastest fixed backend's:")
    print()
    for case in sorted({k[:3] for k in wall}):
        fixed = {a: med(after[case + (a,)]) for a in ("cpu", "onesweep", "hrs")
                 if after.get(case + (a,))}
        gpu_start = [s for a in ("onesweep", "hrs", "auto") for s in start.get(case + (a,), [])]
        # A GPU backend's expected wall: the pooled CUDA start plus its own time after it.
        expect = {a: t + (med(gpu_start) if a != "cpu" and gpu_start else 0.0)
                  for a, t in fixed.items()}
        auto_gpu = bool(start.get(case + ("auto",)))
        auto = med(after[case + ("auto",)]) + (med(gpu_start) if auto_gpu else 0.0)
        best = min(expect, key=expect.get)
        print(f"- {' '.join(case)}: auto {auto:.3f} s ({'GPU' if auto_gpu else 'CPU'}), "
              f"fastest {best} {expect[best]:.3f} s: {auto / expect[best]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

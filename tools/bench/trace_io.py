#!/usr/bin/env python3
"""What a spilled merge's disk did, from a gpusort --trace file (JSON, or .xz): per stage its
events, bytes and busy seconds; in the merge phase, how much of it the reads of runs and the
writes covered; and the median size, time and rate of a read batch and of a write.

Usage: trace_io.py TRACE.json[.xz]"""
import json
import lzma
import statistics
import sys


def read_events(path):
    """Every event of a trace file, JSON or .xz (also used by trace_tracks.py)."""
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        t = json.load(f)
    return t["traceEvents"] if isinstance(t, dict) else t


def load(path):
    return [e for e in read_events(path) if e.get("ph") == "X"]


def union_seconds(intervals):
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def main():
    events = load(sys.argv[1])
    by = {}
    for e in events:
        a = e["ts"] / 1e6
        by.setdefault(e["name"], []).append((a, a + e["dur"] / 1e6, e.get("args", {}).get("bytes", 0)))
    print("stage,events,GB,busy_s,first_s,last_s")
    for name, v in by.items():
        print(f"{name},{len(v)},{sum(x[2] for x in v) / 1e9:.2f},{sum(b - a for a, b, _ in v):.2f},"
              f"{min(a for a, _, _ in v):.2f},{max(b for _, b, _ in v):.2f}")
    if "merge" not in by:
        return
    m0 = min(a for a, _, _ in by["merge"])
    m1 = max(b for _, b, _ in by["merge"])
    print(f"merge phase {m1 - m0:.2f} s")
    for name in ("read runs", "write"):
        v = [x for x in by.get(name, []) if x[1] >= m0]
        if not v:
            continue
        covered = union_seconds([(a, b) for a, b, _ in v])
        print(f"  {name}: covers {covered:.2f} s; median {statistics.median(c for _, _, c in v) / 1e6:.1f} MB "
              f"in {statistics.median((b - a) * 1e3 for a, b, _ in v):.1f} ms, "
              f"{statistics.median(c / (b - a) / 1e9 for a, b, c in v if b > a):.2f} GB/s")


if __name__ == "__main__":
    main()

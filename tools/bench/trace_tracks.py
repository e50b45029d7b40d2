#!/usr/bin/env python3
"""Where a GPU sort's time went, from a gpusort --trace file (JSON, or .xz): per track its
events, first start, last end and busy seconds; when each chunk's sort began; and the H2D
copies that took longer than a normal one (more than 4 ms), which show what held pass 1 back.

Usage: trace_tracks.py TRACE.json[.xz]"""
import sys

from trace_io import read_events


def load(path):
    events = read_events(path)
    tracks = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    return tracks, sorted(spans, key=lambda e: e["ts"])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tracks, spans = load(sys.argv[1])
    by_track = {}
    for e in spans:
        by_track.setdefault(tracks.get(e["tid"], str(e["tid"])), []).append(e)
    print(f"{'track':14} {'events':>6} {'first s':>8} {'last s':>8} {'busy s':>8}")
    for name, es in by_track.items():
        first = es[0]["ts"] / 1e6
        last = max(e["ts"] + e["dur"] for e in es) / 1e6
        busy = sum(e["dur"] for e in es) / 1e6
        print(f"{name:14} {len(es):6d} {first:8.3f} {last:8.3f} {busy:8.3f}")
    sorts = by_track.get("sort", [])
    print("sorts began at (s):", " ".join(f"{e['ts'] / 1e6:.3f}" for e in sorts))
    slow = [e for e in by_track.get("H2D", []) if e["dur"] > 4000]
    print(f"H2D copies over 4 ms: {len(slow)}, {sum(e['dur'] for e in slow) / 1e6:.3f} s;",
          " ".join(f"{e['ts'] / 1e6:.3f}+{e['dur'] / 1e3:.0f}ms" for e in slow[:20]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Turns a merge sweep's CSV (tools/bench/merge/sweep.sh) into merge.md and merge.png beside it.

Usage: report.py merge.csv [--title TEXT]
"""
import argparse
import csv
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path)
    parser.add_argument("--title", default="gpusort-bench-merge")
    args = parser.parse_args()
    rows = list(csv.DictReader(args.csv.open()))
    if not rows:
        raise SystemExit(f"report.py: {args.csv} holds no rows")

    output = rows[0].get("output", "memory")
    lines = [f"# {args.title}", "",
             f"{rows[0]['threads']} threads; u64 keys; output into {output}; merge and memcpy "
             "GB/s are bytes of output per second, median of the sweep's repeats, both measured "
             "in the same process.", "",
             "| record bytes | runs | records | kernel | merge GB/s | loser tree GB/s | speed-up "
             "| memcpy GB/s | merge / memcpy | CPU ns per record |",
             "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        # Sweeps before the vector merge have no kernel columns: the loser tree merged.
        kernel = r.get("kernel") or "loser-tree"
        tree = r.get("loser_tree_gbs") or r["merge_gbs"]
        lines.append(f"| {r['record_size']} | {r['runs']} | {r['records']} | {kernel} "
                     f"| {r['merge_gbs']} | {tree} "
                     f"| {float(r['merge_gbs']) / float(tree):.2f}x "
                     f"| {r['memcpy_gbs']} | {float(r['merge_share_of_memcpy']):.0%} "
                     f"| {r['merge_cpu_ns_per_record']} |")
    md = args.csv.with_suffix(".md")
    md.write_text("\n".join(lines) + "\n")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"report.py: wrote {md}; no plot (matplotlib is not installed)")
        return
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for size in sorted({int(r["record_size"]) for r in rows}):
        pts = sorted((int(r["runs"]), float(r["merge_gbs"]))
                     for r in rows if int(r["record_size"]) == size)
        line = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                       label=f"merge, {size}-byte records")[0]
        tree = sorted((int(r["runs"]), float(r.get("loser_tree_gbs") or r["merge_gbs"]))
                      for r in rows if int(r["record_size"]) == size)
        if tree != pts:
            ax.plot([p[0] for p in tree], [p[1] for p in tree], marker="x", linestyle=":",
                    color=line.get_color(), label=f"loser tree, {size}-byte records")
    memcpy = sorted(float(r["memcpy_gbs"]) for r in rows)
    ax.axhline(memcpy[len(memcpy) // 2], color="gray", linestyle="--",
               label="memcpy (median of the sweep)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("runs merged")
    ax.set_ylabel("GB/s of output")
    ax.set_title(args.title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    png = args.csv.with_suffix(".png")
    fig.savefig(png, dpi=110)
    print(f"report.py: wrote {md} and {png}")


if __name__ == "__main__":
    main()

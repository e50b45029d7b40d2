#!/usr/bin/env python3
"""Seconds per GiB against size for issue 10's cost growth (growth.svg), from this folder's
CSVs and floors: --gpu-memory 4G and one chunk on host A (call 1), --gpu-memory 4G on host B
(call 3), and host A's I/O floor. Prints the medians, the spread of each series and a fit of
wall = fixed + slope x GiB over 4-16 GiB. Usage: growth_plot.py (in this folder)."""
import csv
import re
import statistics as st
from pathlib import Path

here = Path(__file__).resolve().parent


def medians(path, cases):
    walls = {}
    for r in csv.DictReader(open(path)):
        if r['case'] in cases:
            walls.setdefault((cases[r['case']], int(r['size'].rstrip('G'))), []).append(
                float(r['wall_s']))
    return {k: st.median(v) for k, v in walls.items()}


def floors(*paths):
    out = {}
    for path in paths:
        size = None
        for line in open(path):
            if m := re.match(r'### (\d+)G', line):
                size = int(m.group(1))
            elif m := re.match(r'floor: .* end to end: ([\d.]+) s', line):
                out[('I/O floor, host A', size)] = float(m.group(1))
    return out


walls = {}
walls.update(medians(here / 'growth-call1.csv',
                     {'g4': '--gpu-memory 4G, host A', 'one': 'one chunk, host A'}))
walls.update(medians(here / 'g16.csv',
                     {'g4': '--gpu-memory 4G, host A', 'one': 'one chunk, host A'}))
walls.update(medians(here / 'small-call3.csv', {'g4': '--gpu-memory 4G, host B'}))
walls.update(medians(here / 'g24-call3.csv', {'main': '--gpu-memory 4G, host B'}))
walls.update(floors(here / 'growth-floor-call1.txt', here / 'g16-floor.txt'))

series = {}
for (name, size), wall in sorted(walls.items()):
    series.setdefault(name, []).append((size, wall / size))
for name, points in series.items():
    per = [p for _, p in points]
    print(f'{name}: ' + ', '.join(f'{s} GiB {p:.3f}' for s, p in points) +
          f'; spread {max(per) / min(per):.2f}x')
g4 = [(s, walls[('--gpu-memory 4G, host A', s)]) for s in (4, 8, 16)]
n = len(g4)
mx = sum(s for s, _ in g4) / n
my = sum(w for _, w in g4) / n
slope = sum((s - mx) * (w - my) for s, w in g4) / sum((s - mx) ** 2 for s, _ in g4)
print(f'--gpu-memory 4G, host A, 4-16 GiB: wall = {my - slope * mx:.3f} s + {slope:.4f} s/GiB')

# The plot: seconds per GiB (y) against GiB (x), one polyline and its points per series.
W, H, L, B = 640, 400, 70, 50
xs, ys = (0, 26), (0.10, 0.28)
X = lambda v: L + (v - xs[0]) / (xs[1] - xs[0]) * (W - L - 20)
Y = lambda v: H - B - (v - ys[0]) / (ys[1] - ys[0]) * (H - B - 20)
colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728']
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
       'font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<line x1="{L}" y1="{Y(ys[0])}" x2="{W - 20}" y2="{Y(ys[0])}" stroke="black"/>',
       f'<line x1="{L}" y1="{Y(ys[0])}" x2="{L}" y2="{Y(ys[1])}" stroke="black"/>',
       f'<text x="{W / 2}" y="{H - 10}" text-anchor="middle">input (GiB), uniform u64, '
       'page cache warm</text>',
       f'<text x="15" y="{H / 2}" transform="rotate(-90 15 {H / 2})" '
       'text-anchor="middle">wall seconds per GiB (median)</text>']
for v in (4, 8, 16, 24):
    svg.append(f'<text x="{X(v)}" y="{Y(ys[0]) + 16}" text-anchor="middle">{v}</text>')
for i in range(10, 29, 2):
    v = i / 100
    svg.append(f'<text x="{L - 6}" y="{Y(v) + 4}" text-anchor="end">{v:.2f}</text>')
    svg.append(f'<line x1="{L}" y1="{Y(v)}" x2="{W - 20}" y2="{Y(v)}" stroke="#eee"/>')
for i, (name, points) in enumerate(series.items()):
    c = colors[i % len(colors)]
    path = ' '.join(f'{X(s):.1f},{Y(p):.1f}' for s, p in points)
    svg.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
    svg += [f'<circle cx="{X(s):.1f}" cy="{Y(p):.1f}" r="3" fill="{c}"/>' for s, p in points]
    svg.append(f'<text x="{L + 10}" y="{30 + 16 * i}" fill="{c}">{name}</text>')
svg.append('</svg>')
(here / 'growth.svg').write_text('\n'.join(svg) + '\n')

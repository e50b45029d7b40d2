#!/usr/bin/env python3
"""Summarizes an A/B file of HRS builds (tools/bench/hrs/ab.sh): for each key type and
distribution, the median HRS time of each build over its rounds, its ratio to the first build,
CUB's median (same runs) and the phase sums (histogram, scatter, local sorts) of the first round.
The same for runs of one build under several option sets: blocks headed "# variant: OPTIONS"
(no options: the policy's defaults), rows without the phase column.
Usage: ab_report.py AB.CSV"""
import re
import statistics
import sys


def main(path):
    build = None
    times, cub, phases, order = {}, {}, {}, []
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        if line.startswith('# variant:'):
            build = line.split(':', 1)[1].strip() or 'default'
            if build not in order:
                order.append(build)
            continue
        if line.startswith('#'):
            build = line.split()[1]
            if build not in order:
                order.append(build)
            continue
        f = line.split(',', 5)
        case = (f[0], f[1])
        times.setdefault((build, case), []).append(float(f[2]))
        cub.setdefault(case, []).append(float(f[3]))
        if (build, case) not in phases and len(f) > 5:
            sums = {}
            for name, ms in re.findall(r'(histogram|scatter|local|plan) [rc]\d ([0-9.]+)', f[5]):
                sums[name] = sums.get(name, 0.0) + float(ms)
            phases[(build, case)] = sums
    cases = sorted({c for (_, c) in times})
    with_phases = any(phases.values())
    split = ' (hist/scatter/local)' if with_phases else ''
    print('| keys | dist | CUB ms | ' + ' | '.join(f'{b} ms{split}' for b in order)
          + ' | ' + ' | '.join(f'{b}/{order[0]}' for b in order[1:]) + ' | CUB/' + order[-1] + ' |')
    print('|' + '---|' * (3 + 2 * len(order)))
    for c in cases:
        med = {b: statistics.median(times[(b, c)]) for b in order if (b, c) in times}
        cells = []
        for b in order:
            p = phases.get((b, c), {})
            cell = f"{med.get(b, float('nan')):.3f}"
            if with_phases:
                cell += (f" ({p.get('histogram', 0):.2f}/{p.get('scatter', 0):.2f}/"
                         f"{p.get('local', 0):.2f})")
            cells.append(cell)
        ratios = [f"{med[b] / med[order[0]]:.3f}" for b in order[1:]]
        c_med = statistics.median(cub[c])
        print(f"| {c[0]} | {c[1]} | {c_med:.3f} | " + ' | '.join(cells) + ' | '
              + ' | '.join(ratios) + f" | {c_med / med[order[-1]]:.3f} |")


if __name__ == '__main__':
    main(sys.argv[1])

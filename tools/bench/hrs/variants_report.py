#!/usr/bin/env python3
"""Summarizes runs of gpusort-bench-hrs under several option sets as one Markdown table.

Input: lines "# variant: OPTIONS" (empty options: the policy's defaults), each followed by the
benchmark's CSV rows cut to type, distribution, HRS ms, CUB ms, HRS/CUB (`cut -d, -f2,3,7,8,9`
of its '"NVIDIA' lines). Output: per type and distribution, CUB's time (of the first run that
has the row) and HRS's time under every option set. A set run twice is shown twice ("(again)").
Usage: variants_report.py FILE
"""
import sys


def read(path):
    """(type, distribution) -> {variant: (HRS ms, CUB ms)}, and the variants in order."""
    rows = {}
    order = []
    variant = None
    seen = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith('# variant'):
                variant = line.split(':', 1)[1].strip() or 'default'
                seen[variant] = seen.get(variant, 0) + 1
                if seen[variant] > 1:
                    variant += ' (again)'
                order.append(variant)
                continue
            fields = line.split(',')
            if variant is None or len(fields) < 5:
                continue
            rows.setdefault((fields[0], fields[1]), {})[variant] = (float(fields[2]),
                                                                   float(fields[3]))
    return rows, order


def main(path):
    rows, order = read(path)
    print('| keys | dist | CUB ms | ' + ' | '.join(order) + ' |')
    print('|' + '---|' * (len(order) + 3))
    for (keys, dist), by_variant in rows.items():
        cub = next(by_variant[v][1] for v in order if v in by_variant)
        cells = ['%.2f' % by_variant[v][0] if v in by_variant else '-' for v in order]
        print('| %s | %s | %.2f | %s |' % (keys, dist, cub, ' | '.join(cells)))


if __name__ == '__main__':
    main(sys.argv[1])

#!/usr/bin/env python3
"""Expected HRS counting passes per key on 2^28 u64 keys AND-ed of q uniform words: 8-bit digits,
and a zero digit that takes the next 8 bits too from round 0, 1 or 2 on (a joint histogram of
the top two digits keeps rounds 0 and 1 at 8 bits). The model of
../2026-11-29-vm-2core-hrs-digit-model/pass_model.py with the first extended round added."""
import math

N = 2**28
THRESHOLD = 6912


def passes(q, first_extended):
    p = 2.0**-q
    by_ones = [(p**k) * ((1 - p)**(8 - k)) for k in range(9)]
    work = 0.0

    def visit(share, bits_left, count, rnd):
        nonlocal work
        if bits_left <= 0 or share * N <= THRESHOLD:
            return
        work += share * count
        for k in range(1, 9):
            visit(share * by_ones[k], bits_left - 8, count * math.comb(8, k), rnd + 1)
        if first_extended is not None and rnd >= first_extended and bits_left > 8:
            for k in range(9):
                visit(share * by_ones[0] * by_ones[k], bits_left - 16, count * math.comb(8, k),
                      rnd + 1)
        else:
            visit(share * by_ones[0], bits_left - 8, count, rnd + 1)

    visit(1.0, 64, 1, 0)
    return work


if __name__ == "__main__":
    print("q  8-bit  from round 0  from round 1  from round 2")
    for q in (1, 2, 3, 4, 5):
        print(f"{q}  {passes(q, None):5.2f}  {passes(q, 0):12.2f}  {passes(q, 1):12.2f}"
              f"  {passes(q, 2):12.2f}")

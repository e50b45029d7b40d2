#!/usr/bin/env python3
"""Expected counting passes per key of HRS on 2^28 u64 keys AND-ed of q uniform words, with
8-bit digits (what HRS does) and with a digit that takes the next 8 bits as well where the top
8 are zero (the idea this model weighs). A bucket of more than `threshold` keys is partitioned
by one pass; buckets at or below it go to a local sort. Each bit of an AND of q words is 1 with
probability 2^-q, independently, so a digit's probability depends only on its popcount."""
import math

N = 2**28
THRESHOLD = 6912  # HRS's local threshold for 64-bit keys


def passes(q, extend_zero):
    p = 2.0**-q
    by_ones = [(p**k) * ((1 - p)**(8 - k)) for k in range(9)]  # one digit with k ones
    work = 0.0

    def visit(share, bits_left, count):
        # `count` buckets alike, each holding `share` of the keys, with `bits_left` bits to go
        nonlocal work
        if bits_left <= 0 or share * N <= THRESHOLD:
            return
        work += share * count
        for k in range(1, 9):  # digits that are not zero take 8 bits
            visit(share * by_ones[k], bits_left - 8, count * math.comb(8, k))
        if extend_zero and bits_left > 8:  # a zero digit takes the next 8 bits too
            for k in range(9):
                visit(share * by_ones[0] * by_ones[k], bits_left - 16, count * math.comb(8, k))
        else:
            visit(share * by_ones[0], bits_left - 8, count)

    visit(1.0, 64, 1)
    return work


if __name__ == "__main__":
    print("q  8-bit digits  zero digit extended")
    for q in (1, 2, 3, 4, 5):
        print(f"{q}  {passes(q, False):12.2f}  {passes(q, True):19.2f}")

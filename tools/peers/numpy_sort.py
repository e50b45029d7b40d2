#!/usr/bin/env python3
"""numpy peer for the gpusort benchmark: np.fromfile, np.sort, tofile.

What a Python user would write to sort a binary file of fixed-size keys. Floats sort as numpy
sorts them (NaNs last), not by IEEE totalOrder; the benchmark uses u64 keys.
Exit status: 0 on success, 2 on trouble, 3 when numpy is missing.
"""
import argparse
import sys
import time

DTYPES = {"u32": "<u4", "u64": "<u8", "i32": "<i4", "i64": "<i8", "f32": "<f4", "f64": "<f8"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--dtype", default="u64",
                        help="u32 u64 i32 i64 f32 f64, or any numpy dtype string (default u64)")
    parser.add_argument("--timings", action="store_true",
                        help="print read, sort and write times on stderr")
    args = parser.parse_args()
    try:
        import numpy as np
    except ImportError as e:
        print(f"numpy_sort.py: numpy is not available: {e}", file=sys.stderr)
        return 3
    try:
        dtype = np.dtype(DTYPES.get(args.dtype, args.dtype))
        t0 = time.perf_counter()
        keys = np.fromfile(args.input, dtype=dtype)
        t1 = time.perf_counter()
        keys = np.sort(keys)
        t2 = time.perf_counter()
        keys.tofile(args.output)
        t3 = time.perf_counter()
    except (OSError, ValueError, TypeError, MemoryError) as e:
        print(f"numpy_sort.py: {e}", file=sys.stderr)
        return 2
    if args.timings:
        print(f"numpy_sort.py: {keys.size} keys: read {t1 - t0:.3f} s, sort {t2 - t1:.3f} s, "
              f"write {t3 - t2:.3f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

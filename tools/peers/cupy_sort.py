#!/usr/bin/env python3
"""cupy peer for the gpusort benchmark: np.fromfile, cp.asarray, cp.sort, cp.asnumpy, tofile.

What a Python user with a GPU would write to sort a binary file of fixed-size keys; the file
must fit on the GPU. Floats sort as cupy sorts them, not by IEEE totalOrder; the benchmark uses
u64 keys. Exit status: 0 on success, 2 on trouble, 3 when numpy or cupy is missing.
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
                        help="print read, H2D, sort, D2H and write times on stderr")
    args = parser.parse_args()
    try:
        import numpy as np
        import cupy as cp
    except ImportError as e:
        print(f"cupy_sort.py: not available: {e}", file=sys.stderr)
        return 3
    try:
        dtype = np.dtype(DTYPES.get(args.dtype, args.dtype))
        cp.cuda.runtime.free(0)  # start the CUDA context before timing, as a long-lived program would
        t0 = time.perf_counter()
        host = np.fromfile(args.input, dtype=dtype)
        t1 = time.perf_counter()
        device = cp.asarray(host)
        cp.cuda.Device().synchronize()
        t2 = time.perf_counter()
        device = cp.sort(device)
        cp.cuda.Device().synchronize()
        t3 = time.perf_counter()
        host = cp.asnumpy(device)
        t4 = time.perf_counter()
        host.tofile(args.output)
        t5 = time.perf_counter()
    except Exception as e:  # cupy raises its own error types (CUDA, out of memory)
        print(f"cupy_sort.py: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if args.timings:
        print(f"cupy_sort.py: {host.size} keys: read {t1 - t0:.3f} s, H2D {t2 - t1:.3f} s, "
              f"sort {t3 - t2:.3f} s, D2H {t4 - t3:.3f} s, write {t5 - t4:.3f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""SuiteSparse:GraphBLAS reference for the CPU SpMV benchmark.

Reads Matrix Market files (as written by `warpfit gen`), multiplies by the same
x as `warpfit run spmv` (x[i] = 1 + (i mod 7)/7, float32) with the plus_times
semiring, and prints the median time and GFLOP/s over repeated runs.

    pip install python-graphblas scipy
    python3 scripts/bench-graphblas.py FILE.mtx [FILE.mtx ...] [--runs 20]
"""
import argparse
import statistics
import time

import numpy as np
import scipy.io
import graphblas as gb


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--runs", type=int, default=20)
    args = p.parse_args()
    print(f"python-graphblas {gb.__version__}, threads {gb.ss.config['nthreads']}")
    for path in args.files:
        a = scipy.io.mmread(path).tocsr().astype(np.float32)
        a.sort_indices()
        n, m = a.shape
        A = gb.Matrix.ss.import_csr(
            nrows=n, ncols=m, indptr=a.indptr.astype(np.uint64),
            col_indices=a.indices.astype(np.uint64), values=a.data, sorted_cols=True,
        )
        x = gb.Vector.from_dense((1.0 + (np.arange(m) % 7) / 7.0).astype(np.float32))
        y = A.mxv(x, gb.semiring.plus_times).new()  # warm-up
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            y = A.mxv(x, gb.semiring.plus_times).new()
            y.wait()
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        print(f"{path}: {n} x {m}, {a.nnz} nnz: median {med * 1e3:.3f} ms, "
              f"{2 * a.nnz / med / 1e9:.2f} GFLOP/s (runs {args.runs})")


if __name__ == "__main__":
    main()

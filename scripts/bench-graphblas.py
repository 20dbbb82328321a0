#!/usr/bin/env python3
"""SuiteSparse:GraphBLAS reference for the CPU SpMV and PageRank benchmarks.

Reads Matrix Market files (as written by `warpfit gen`). By default multiplies
by the same x as `warpfit run spmv` (x[i] = 1 + (i mod 7)/7, float32) with the
plus_times semiring, and prints the median time and GFLOP/s over repeated runs.

With --pagerank, runs PageRank as `warpfit run pagerank` defines it: entry
(i, j) is the edge i -> j (values ignored), damping 0.85, the rank of
dangling vertices (no out-edge) spread uniformly, `--iters` iterations
(default 20) from 1/n, in float32 with the dangling sum in float64; prints
the end-to-end time (matrix import, degrees, iterations; the file read
excluded) and the iterations' time. `--out FILE` writes the ranks, one per
line, for scripts/compare-vectors.py.

    pip install python-graphblas scipy
    python3 scripts/bench-graphblas.py FILE.mtx [FILE.mtx ...] [--runs 20]
    python3 scripts/bench-graphblas.py --pagerank [--iters 20] [--out R.txt] FILE.mtx
"""
import argparse
import statistics
import time

import numpy as np
import scipy
import scipy.io
import graphblas as gb


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--pagerank", action="store_true", help="run PageRank instead of SpMV")
    p.add_argument("--iters", type=int, default=20, help="PageRank iterations")
    p.add_argument("--damping", type=float, default=0.85)
    p.add_argument("--out", help="PageRank: write the ranks of the (last) file here")
    args = p.parse_args()
    print(f"python-graphblas {gb.__version__}, threads {gb.ss.config['nthreads']}")
    if args.pagerank:
        for path in args.files:
            pagerank_file(path, args.iters, args.damping, args.out)
        return
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


def pagerank(indptr, indices, n, iters, damping):
    """PageRank over the CSR pattern (row u lists the targets of u's edges);
    returns (ranks as a numpy float32 array, seconds of the iterations)."""
    FP32, FP64 = gb.dtypes.FP32, gb.dtypes.FP64
    A = gb.Matrix.ss.import_csr(
        nrows=n, ncols=n, indptr=indptr.astype(np.uint64),
        col_indices=indices.astype(np.uint64),
        values=np.ones(len(indices), dtype=np.float32), sorted_cols=False,
    )
    deg = np.diff(indptr)
    inv_deg = gb.Vector.from_dense(
        np.where(deg > 0, 1.0 / np.maximum(deg, 1), 0.0).astype(np.float32))
    dangling_idx = np.flatnonzero(deg == 0)
    dangling_set = gb.Vector.from_coo(
        dangling_idx, np.ones(len(dangling_idx), dtype=bool), size=n, dtype=bool)
    rank = gb.Vector.from_dense(np.full(n, 1.0 / n, dtype=np.float32))
    d = np.float32(damping)
    t0 = time.perf_counter()
    for _ in range(iters):
        contrib = rank.ewise_mult(inv_deg, gb.binary.times).new(dtype=FP32)
        dangling_rank = gb.Vector(FP64, size=n)
        dangling_rank(mask=dangling_set.S) << rank
        dangling = dangling_rank.reduce(gb.monoid.plus).new().value or 0.0
        base = np.float32((1.0 - damping) / n + damping * dangling / n)
        pulled = contrib.vxm(A, gb.semiring.plus_first).new(dtype=FP32)
        nxt = gb.Vector.from_scalar(base, n, dtype=FP32)
        nxt(accum=gb.binary.plus) << pulled.apply(gb.binary.times, right=d)
        nxt.wait()
        rank = nxt
    return rank.to_dense(dtype=np.float32), time.perf_counter() - t0


def read_pattern(path):
    """The matrix at `path` as scipy CSR. scipy >= 1.12 reads Matrix Market
    in C++ (fast_matrix_market); older scipy parses in Python, minutes for
    tens of millions of entries, so pandas' C parser reads the entries then."""
    major, minor = (int(v) for v in scipy.__version__.split(".")[:2])
    if (major, minor) >= (1, 12):
        return scipy.io.mmread(path).tocsr()
    try:
        import pandas as pd
    except ImportError:
        return scipy.io.mmread(path).tocsr()
    import scipy.sparse as sp
    with open(path) as f:
        header = 0
        line = f.readline()
        while line.startswith("%"):
            header += 1
            line = f.readline()
        n, m, _ = (int(v) for v in line.split())
    e = pd.read_csv(path, sep=r"\s+", skiprows=header + 1, header=None, usecols=[0, 1],
                    dtype=np.int64, engine="c").to_numpy()
    data = np.ones(len(e), dtype=np.float32)
    return sp.csr_matrix((data, (e[:, 0] - 1, e[:, 1] - 1)), shape=(n, m))


def pagerank_file(path, iters, damping, out):
    a = read_pattern(path)
    a.sum_duplicates()
    n, m = a.shape
    if n != m:
        raise SystemExit(f"{path}: PageRank needs a square matrix, got {n} x {m}")
    t = time.perf_counter()
    ranks, iter_s = pagerank(a.indptr, a.indices, n, iters, damping)
    total = time.perf_counter() - t
    print(f"{path}: {n} vertices, {a.nnz} edges: PageRank {iters} iterations end to end "
          f"{total:.3f} s (iterations {iter_s:.3f} s, {iter_s / max(iters, 1) * 1e3:.2f} ms each; "
          f"read excluded)")
    if out:
        np.savetxt(out, ranks, fmt="%.9g")


if __name__ == "__main__":
    main()

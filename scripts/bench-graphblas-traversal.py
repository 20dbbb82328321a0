#!/usr/bin/env python3
"""SuiteSparse:GraphBLAS reference for the CPU BFS and SSSP of `warpfit run bfs|sssp`.

Reads Matrix Market files (as written by `warpfit gen`); entry (i, j) is the
edge i -> j of weight |a(i, j)| (pattern files weigh 1), as in warpfit.

BFS: level-synchronous, the frontier pushed through `any_pair` under the
complement of the visited set (SuiteSparse picks push or pull per step
itself); levels as warpfit prints them (-1 unreachable).
SSSP: data-driven Bellman-Ford in float32 with the `min_plus` semiring, as
graphblas-algorithms' `single_source_bellman_ford_path_length` runs it: only
the vertices whose distance fell in the last step relax their out-edges, every
operation on the frontier's pattern (GraphBLAS has no priority-ordered SSSP);
the same f32 path sums as warpfit.

Prints the median time of the traversal over --runs runs (the matrix import
and the file read excluded), the steps and the vertices reached. `--out
PREFIX` writes PREFIX.bfs.txt / PREFIX.sssp.txt, one value per line, for
scripts/compare-vectors.py or `cmp` against `warpfit run … --output`.

    pip install python-graphblas scipy
    python3 scripts/bench-graphblas-traversal.py FILE.mtx [FILE.mtx ...] [--source V|hub] [--runs 5]

`--source hub` (the default) starts at the last vertex of the largest
out-degree, as `cargo run --example drivers_bench` does.
"""
import argparse
import statistics
import time

import numpy as np
import scipy.io
import graphblas as gb


def load(path):
    a = scipy.io.mmread(path).tocsr().astype(np.float32)
    a.sum_duplicates()
    a.sort_indices()
    n, m = a.shape
    if n != m:
        raise SystemExit(f"{path}: not square ({n} x {m})")
    A = gb.Matrix.ss.import_csr(
        nrows=n, ncols=n, indptr=a.indptr.astype(np.uint64),
        col_indices=a.indices.astype(np.uint64), values=np.abs(a.data), sorted_cols=True,
    )
    return a, A


def bfs(A, n, source):
    level = gb.Vector(gb.dtypes.INT32, n)
    frontier = gb.Vector(gb.dtypes.BOOL, n)
    frontier[source] = True
    level[source] = 0
    P = A.apply(gb.unary.one[bool]).new()
    depth = 0
    while frontier.nvals > 0:
        depth += 1
        frontier(~level.S, replace=True) << frontier.vxm(P, gb.semiring.any_pair[bool])
        level(frontier.S) << depth
    out = np.full(n, -1, dtype=np.int32)
    idx, vals = level.to_coo()
    out[idx] = vals
    return out, depth


def sssp(A, n, source):
    # graphblas-algorithms' single-source Bellman-Ford, in float32: the
    # frontier `cur` holds the distances that fell in the last step, and
    # every operation is on its pattern (no pass over all vertices).
    dist = gb.Vector(gb.dtypes.FP32, n)
    dist[source] = 0.0
    cur = dist.dup()
    mask = gb.Vector(gb.dtypes.BOOL, n)
    one = gb.unary.one[bool]
    steps = 0
    while cur.nvals > 0:
        steps += 1
        cur << cur.vxm(A, gb.semiring.min_plus[gb.dtypes.FP32])
        # True where cur is not in dist, or below it.
        mask << one(cur)
        mask(gb.binary.second) << gb.binary.lt(cur & dist)
        cur(mask.V, replace=True) << cur
        dist(cur.S) << cur
    out = np.full(n, np.inf, dtype=np.float32)
    idx, vals = dist.to_coo()
    out[idx] = vals
    return out, steps


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--source", default="hub")
    p.add_argument("--apps", default="bfs,sssp")
    p.add_argument("--out", help="write PREFIX.bfs.txt / PREFIX.sssp.txt (last file)")
    args = p.parse_args()
    print(f"python-graphblas {gb.__version__}, SuiteSparse:GraphBLAS "
          f"{gb.ss.about['library_version']}, threads {gb.ss.config['nthreads']}")
    for path in args.files:
        a, A = load(path)
        n = a.shape[0]
        deg = np.diff(a.indptr)
        source = n - 1 - int(np.argmax(deg[::-1])) if args.source == "hub" else int(args.source)
        for app in args.apps.split(","):
            run = {"bfs": bfs, "sssp": sssp}[app]
            times = []
            for _ in range(args.runs):
                t = time.perf_counter()
                values, steps = run(A, n, source)
                times.append(time.perf_counter() - t)
            reached = int(np.sum(values >= 0) if app == "bfs" else np.sum(np.isfinite(values)))
            print(f"{path}: {app} from {source}: median {statistics.median(times) * 1e3:.1f} ms, "
                  f"best {min(times) * 1e3:.1f} ms, {steps} steps, {reached} of {n} reached "
                  f"(runs {args.runs})")
            if args.out:
                with open(f"{args.out}.{app}.txt", "w") as f:
                    if app == "bfs":
                        f.writelines(f"{v}\n" for v in values)
                    else:
                        # float32's shortest round-trip form, as warpfit writes it.
                        f.writelines(("inf" if np.isinf(v) else str(v)) + "\n" for v in values)


if __name__ == "__main__":
    main()

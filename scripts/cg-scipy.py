#!/usr/bin/env python3
"""Compares `warpfit run cg` with scipy.sparse.linalg.cg on the same matrix,
right-hand side (b = A·1) and tolerance: both must converge, their iteration
counts agree within max(1, 2%) and their true relative residuals
‖b − A·x‖/‖b‖ lie within 10·tol.

Usage: scripts/cg-scipy.py [--warpfit BIN] [--backend cpu|cuda|auto]
           [--tol T] [--max-iters N] [--precision f32|f64]
           [--precond none|jacobi] MATRIX.mtx [MATRIX.mtx ...]
(a `--gen SPEC` argument in place of a file generates the matrix with
`warpfit gen` first). Exit status 0 when every case agrees, 1 otherwise.
Needs numpy and scipy."""
import argparse, os, re, subprocess, sys, tempfile

import numpy as np
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as sla


def scipy_cg(a, b, tol, max_iters, jacobi):
    """Runs scipy's CG from x = 0; returns (converged, iterations, x)."""
    iterations = [0]

    def count(_xk):
        iterations[0] += 1

    m = sp.diags(1.0 / a.diagonal()) if jacobi else None
    try:  # scipy >= 1.12: rtol/atol
        x, info = sla.cg(a, b, rtol=tol, atol=0.0, maxiter=max_iters, M=m, callback=count)
    except TypeError:  # older scipy: tol
        x, info = sla.cg(a, b, tol=tol, atol=0.0, maxiter=max_iters, M=m, callback=count)
    return info == 0, iterations[0], x


RESULT = re.compile(
    r"cg: (converged|NOT converged) after (\d+) iterations, relative residual (\S+) "
    r"\(‖b − A·x‖/‖b‖ (\S+)\), (\S+) ms per iteration"
)


def warpfit_cg(args, matrix_args):
    cmd = [args.warpfit, "run", "cg", *matrix_args, "--backend", args.backend,
           "--tol", str(args.tol), "--max-iters", str(args.max_iters),
           "--precision", args.precision, "--precond", args.precond]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()}")
    m = RESULT.search(out.stdout)
    if not m:
        raise RuntimeError(f"no cg summary in: {out.stdout}")
    return m.group(1) == "converged", int(m.group(2)), float(m.group(4)), float(m.group(5))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warpfit", default=os.environ.get("WARPFIT", "target/release/warpfit"))
    p.add_argument("--backend", default="auto")
    p.add_argument("--tol", type=float, default=1e-6)
    p.add_argument("--max-iters", type=int, default=20000)
    p.add_argument("--precision", default="f64", choices=["f32", "f64"])
    p.add_argument("--precond", default="none", choices=["none", "jacobi"])
    p.add_argument("--gen", action="append", default=[], help="a generator spec")
    p.add_argument("matrices", nargs="*")
    args = p.parse_args()
    cases = [(path, ["--matrix", path], path) for path in args.matrices]
    tmp = tempfile.mkdtemp(prefix="cg-scipy-")
    for spec in args.gen:
        path = os.path.join(tmp, re.sub(r"[^A-Za-z0-9]+", "_", spec) + ".mtx")
        kind, _, params = spec.partition(":")
        gen_args = [args.warpfit, "gen", kind]
        for kv in filter(None, params.split(",")):
            k, _, v = kv.partition("=")
            gen_args += ["--" + k.replace("_", "-"), v]
        subprocess.run(gen_args + ["-o", path], check=True, capture_output=True)
        cases.append((spec, ["--gen", spec], path))
    if not cases:
        p.error("give at least one MATRIX.mtx or --gen SPEC")
    ok = True
    print(f"tol {args.tol}, {args.precision}, precond {args.precond}, backend {args.backend}")
    print(f"{'matrix':40} {'rows':>8} {'scipy it':>9} {'warpfit it':>10} "
          f"{'scipy res':>10} {'warpfit res':>11} {'ms/iter':>8}  verdict")
    for name, matrix_args, path in cases:
        a = scipy.io.mmread(path).tocsr().astype(np.float64)
        b = a @ np.ones(a.shape[0])
        s_conv, s_it, x = scipy_cg(a, b, args.tol, args.max_iters, args.precond == "jacobi")
        s_res = np.linalg.norm(b - a @ x) / np.linalg.norm(b)
        try:
            w_conv, w_it, w_res, ms = warpfit_cg(args, matrix_args)
        except RuntimeError as e:
            print(f"{name:40} error: {e}")
            ok = False
            continue
        agree = (s_conv and w_conv and abs(s_it - w_it) <= max(1, s_it // 50)
                 and w_res <= 10 * args.tol)
        ok &= agree
        print(f"{name:40} {a.shape[0]:>8} {s_it:>9} {w_it:>10} {s_res:>10.2e} {w_res:>11.2e} "
              f"{ms:>8.3f}  {'ok' if agree else 'DIFFERENT'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

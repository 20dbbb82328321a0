//! The built-in apps on the CPU backend against straightforward references,
//! on generated and real matrices; task-list launches against whole-task ones.

use std::collections::{BinaryHeap, VecDeque};
use warpfit::apps::{self, Graph, PageRankOptions};
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::sparse::{mm, Csr};
use warpfit::{Device, LaunchConfig, Segment, TaskList};

/// The written-out SpMV functor the `spmv_bench` example times.
#[path = "../gpu/tests/fixtures/spmv_f32.rs"]
mod spmv_fixture;

/// Its `y += A·x` twin, for the benchmark's cache-fit slices.
#[path = "../gpu/tests/fixtures/spmv_add_f32.rs"]
mod spmv_add_fixture;

fn generated() -> Vec<(String, Csr<f32>)> {
    [
        "rmat:scale=12,edge_factor=16,seed=3",
        "uniform:n=3000,per_row=9,seed=4",
        "rgg:n=4000,seed=5",
        "grid2d:side=40",
    ]
    .iter()
    .map(|s| {
        (
            s.to_string(),
            s.parse::<GenSpec>().unwrap().generate().unwrap(),
        )
    })
    .collect()
}

fn real() -> Vec<(String, Csr<f32>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "mtx") {
            out.push((
                path.display().to_string(),
                mm::read_csr::<f32>(&path).unwrap(),
            ));
        }
    }
    assert!(out.len() >= 3, "tests/data should hold real matrices");
    out
}

fn all_matrices() -> Vec<(String, Csr<f32>)> {
    let mut m = generated();
    m.extend(real());
    m
}

/// Plain loop, accumulated in f64: the independent reference.
fn spmv_reference(a: &Csr<f32>, x: &[f32]) -> Vec<f64> {
    (0..a.nrows())
        .map(|r| {
            a.row_range(r)
                .map(|k| a.values()[k] as f64 * x[a.col_idx()[k] as usize] as f64)
                .sum()
        })
        .collect()
}

/// Σ |a_rk · x_k| per row: the scale of f32 rounding error under cancellation.
fn abs_sums(a: &Csr<f32>, x: &[f32]) -> Vec<f64> {
    (0..a.nrows())
        .map(|r| {
            a.row_range(r)
                .map(|k| (a.values()[k] as f64 * x[a.col_idx()[k] as usize] as f64).abs())
                .sum()
        })
        .collect()
}

fn assert_close(what: &str, got: &[f32], want: &[f64], a: &Csr<f32>, x: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = abs_sums(a, x);
    for (r, (&g, &w)) in got.iter().zip(want).enumerate() {
        // f32 accumulation: error bound grows with the row length and Σ|terms|.
        let len = a.row_range(r).len();
        let tol = 1.2e-7 * (len as f64 + 2.0) * scale[r].max(w.abs()) + 1e-30;
        assert!(
            (g as f64 - w).abs() <= tol,
            "{what}: row {r}: got {g}, want {w} (tol {tol})"
        );
    }
}

#[test]
fn spmv_matches_plain_loop_on_generated_and_real_matrices() {
    let dev = Device::cpu();
    for (name, a) in all_matrices() {
        let x = apps::spmv_input(a.ncols());
        let y = apps::spmv_csr(&dev, &LaunchConfig::default(), &a, &x).unwrap();
        assert_close(&name, &y, &spmv_reference(&a, &x), &a, &x);
    }
}

#[test]
fn split_task_lists_equal_whole_task_launches() {
    let dev = Device::cpu();
    for (name, a) in all_matrices() {
        let x = apps::spmv_input(a.ncols());
        let mut whole = vec![0.0f32; a.nrows()];
        apps::spmv::f32::launch(
            &dev,
            a.nrows(),
            a.row_ptr(),
            a.col_idx(),
            a.values(),
            &x,
            &mut whole,
        )
        .unwrap();
        for max_len in [1, 3, 32] {
            let list = TaskList::chunked(a.row_ptr(), max_len).unwrap();
            let mut split = vec![f32::NAN; a.nrows()];
            apps::spmv::f32::launch(
                &dev,
                &list,
                a.row_ptr(),
                a.col_idx(),
                a.values(),
                &x,
                &mut split,
            )
            .unwrap();
            // Partials fold in list order: the same sums up to reassociation.
            assert_close(
                &format!("{name}, segments of {max_len}"),
                &split,
                &whole.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                &a,
                &x,
            );
        }
    }
}

#[test]
fn reversed_segment_order_folds_in_list_order() {
    // (min, +) is exact in any order: a task split into segments listed
    // backwards and interleaved with other tasks gives the whole result.
    let a = "rmat:scale=10,edge_factor=8,seed=9"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let g = Graph::from_matrix(&a).unwrap();
    let inc = &g.incoming;
    let dist: Vec<f32> = (0..g.len()).map(|v| (v % 13) as f32).collect();
    let dev = Device::cpu();
    let mut whole = vec![0.0; g.len()];
    apps::relax::launch(
        &dev,
        g.len(),
        inc.row_ptr(),
        inc.col_idx(),
        inc.values(),
        &dist,
        &mut whole,
    )
    .unwrap();
    let mut segs = Vec::new();
    for t in (0..g.len()).rev() {
        let (lo, hi) = (inc.row_ptr()[t], inc.row_ptr()[t + 1]);
        let mid = lo + (hi - lo) / 2;
        segs.push(Segment::new(t as u32, mid, hi));
        segs.push(Segment::new(t as u32, lo, mid));
    }
    let list = TaskList::new(segs).unwrap();
    let mut split = vec![0.0; g.len()];
    apps::relax::launch(
        &dev,
        &list,
        inc.row_ptr(),
        inc.col_idx(),
        inc.values(),
        &dist,
        &mut split,
    )
    .unwrap();
    assert_eq!(whole, split);
}

fn pagerank_reference(a: &Csr<f32>, iters: usize, d: f64) -> Vec<f64> {
    let n = a.nrows();
    let mut rank = vec![1.0 / n as f64; n];
    for _ in 0..iters {
        let mut next = vec![0.0; n];
        let mut dangling = 0.0;
        for (i, &ri) in rank.iter().enumerate() {
            let r = a.row_range(i);
            if r.is_empty() {
                dangling += ri;
            }
            for k in r.clone() {
                next[a.col_idx()[k] as usize] += ri / r.len() as f64;
            }
        }
        for v in next.iter_mut() {
            *v = (1.0 - d) / n as f64 + d * (*v + dangling / n as f64);
        }
        rank = next;
    }
    rank
}

#[test]
fn pagerank_matches_push_reference() {
    let dev = Device::cpu();
    for (name, a) in all_matrices() {
        if a.nrows() != a.ncols() {
            continue;
        }
        let g = Graph::from_matrix(&a).unwrap();
        let opts = PageRankOptions {
            iterations: 15,
            ..Default::default()
        };
        let got = apps::pagerank(&dev, &LaunchConfig::default(), &g, opts).unwrap();
        let want = pagerank_reference(&a, 15, 0.85);
        let sum: f64 = got.iter().map(|&r| r as f64).sum();
        assert!((sum - 1.0).abs() < 1e-3, "{name}: rank sum {sum}");
        for (v, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g as f64 - w).abs() <= 1e-4 * w.max(1.0 / a.nrows() as f64) + 1e-7,
                "{name}: vertex {v}: {g} vs {w}"
            );
        }
    }
}

/// An iterative app's per-iteration record is bounded: past
/// `KEPT_ITERATIONS` iterations the times go into a fixed histogram, so a
/// huge `--iters` costs no memory per iteration; the count and total stay
/// exact.
#[test]
fn pagerank_keeps_bounded_timings_however_many_iterations() {
    let a = "rmat:scale=0"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let g = Graph::from_matrix(&a).unwrap();
    let iterations = apps::KEPT_ITERATIONS + 100;
    let opts = PageRankOptions {
        iterations,
        ..Default::default()
    };
    let (_, timings) = apps::pagerank_observed(
        &Device::cpu(),
        &LaunchConfig::default(),
        &g,
        opts,
        &mut |_| {},
    )
    .unwrap();
    let t = &timings.iterations;
    assert_eq!(t.len(), iterations);
    assert_eq!(t.kept().len(), apps::KEPT_ITERATIONS);
    assert_eq!(t.after_kept().0, 100);
    let sum: std::time::Duration = t.kept().iter().sum::<std::time::Duration>() + t.after_kept().1;
    assert_eq!(sum, t.total());
    assert!(t.median().is_some());
}

#[derive(PartialEq)]
struct Item(f64, usize);
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
    }
}

fn dijkstra(a: &Csr<f32>, s: usize) -> Vec<f64> {
    let mut dist = vec![f64::INFINITY; a.nrows()];
    dist[s] = 0.0;
    let mut heap = BinaryHeap::from([Item(0.0, s)]);
    while let Some(Item(d, u)) = heap.pop() {
        if d > dist[u] {
            continue;
        }
        for k in a.row_range(u) {
            let v = a.col_idx()[k] as usize;
            let nd = d + a.values()[k].abs() as f64;
            if nd < dist[v] {
                dist[v] = nd;
                heap.push(Item(nd, v));
            }
        }
    }
    dist
}

#[test]
fn sssp_matches_dijkstra() {
    let dev = Device::cpu();
    for (name, a) in all_matrices() {
        if a.nrows() != a.ncols() || a.nrows() == 0 {
            continue;
        }
        let g = Graph::from_matrix(&a).unwrap();
        let (got, _) = apps::sssp(&dev, &LaunchConfig::default(), &g, 0).unwrap();
        let want = dijkstra(&a, 0);
        for (v, (&g, &w)) in got.iter().zip(&want).enumerate() {
            if w.is_infinite() {
                assert!(
                    g.is_infinite(),
                    "{name}: vertex {v} should be unreachable, got {g}"
                );
            } else {
                assert!(
                    (g as f64 - w).abs() <= 1e-4 * w.max(1.0),
                    "{name}: vertex {v}: {g} vs {w}"
                );
            }
        }
    }
}

#[test]
fn bfs_matches_queue_bfs() {
    let dev = Device::cpu();
    for (name, a) in all_matrices() {
        if a.nrows() != a.ncols() || a.nrows() == 0 {
            continue;
        }
        let g = Graph::from_matrix(&a).unwrap();
        let (got, _) = apps::bfs(&dev, &LaunchConfig::default(), &g, 0).unwrap();
        let mut want = vec![-1i32; a.nrows()];
        want[0] = 0;
        let mut q = VecDeque::from([0usize]);
        while let Some(u) = q.pop_front() {
            for k in a.row_range(u) {
                let v = a.col_idx()[k] as usize;
                if want[v] < 0 {
                    want[v] = want[u] + 1;
                    q.push_back(v);
                }
            }
        }
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn bad_sources_and_shapes_are_errors() {
    let dev = Device::cpu();
    let a = "grid2d:side=4"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let g = Graph::from_matrix(&a).unwrap();
    let e = apps::sssp(&dev, &LaunchConfig::default(), &g, 16).unwrap_err();
    assert!(e.to_string().contains("source vertex"), "{e}");
    let rect = Csr::new(1, 2, vec![0, 1], vec![1], vec![1.0f32]).unwrap();
    assert!(Graph::from_matrix(&rect)
        .unwrap_err()
        .to_string()
        .contains("square"));
    let x = vec![1.0; 3];
    assert!(apps::spmv_csr(&dev, &LaunchConfig::default(), &rect, &x).is_err());
}

#[test]
fn the_gpu_benchmark_times_a_kernel_of_the_generated_shape() {
    // `warpfit bench spmv` passes the generated SPEC; binaries that cannot
    // link the macros use the written-out functor: both must agree.
    let shape = |k: &warpfit::__private::KernelSpec| -> Vec<_> {
        k.params.iter().map(|p| (p.name, p.ty, p.kind)).collect()
    };
    assert_eq!(
        shape(&apps::spmv::f32::SPEC),
        shape(&spmv_fixture::SPMV_F32)
    );
    assert_eq!(apps::spmv::f32::SPEC.acc, spmv_fixture::SPMV_F32.acc);
    let add = &spmv_add_fixture::SPMV_ADD_F32;
    assert_eq!(shape(&apps::spmv_add::SPEC), shape(add));
    assert_eq!(apps::spmv_add::SPEC.acc, add.acc);
    // Both read `y` back in the epilogue (`y[row] += …`); `spmv` does not.
    for src in [apps::spmv_add::SPEC.cuda_source, add.cuda_source] {
        assert!(src.contains("ld_out("), "{src}");
    }
    assert!(!apps::spmv::f32::SPEC.cuda_source.contains("ld_out("));
}

/// Textbook preconditioned CG in f64 with a plain CSR loop: the reference
/// for `apps::cg` (same start `x = 0`, same test `‖r‖ ≤ tol·‖b‖` on the
/// recurrence residual). Returns the solution and the iterations.
fn cg_reference(a: &Csr<f64>, b: &[f64], tol: f64, jacobi: bool) -> (Vec<f64>, usize) {
    let n = a.nrows();
    let spmv = |x: &[f64]| -> Vec<f64> {
        (0..n)
            .map(|r| {
                a.row_range(r)
                    .map(|k| a.values()[k] * x[a.col_idx()[k] as usize])
                    .sum()
            })
            .collect()
    };
    let dot = |x: &[f64], y: &[f64]| -> f64 { x.iter().zip(y).map(|(a, b)| a * b).sum() };
    let inv_diag: Vec<f64> = (0..n)
        .map(|r| {
            if jacobi {
                1.0 / a.get(r, r).unwrap()
            } else {
                1.0
            }
        })
        .collect();
    let b_norm = dot(b, b).sqrt();
    let mut x = vec![0.0; n];
    let mut r = b.to_vec();
    let mut z: Vec<f64> = r.iter().zip(&inv_diag).map(|(r, d)| r * d).collect();
    let mut p = z.clone();
    let mut rho = dot(&r, &z);
    for k in 1..=100_000 {
        let q = spmv(&p);
        let alpha = rho / dot(&p, &q);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
            z[i] = r[i] * inv_diag[i];
        }
        if dot(&r, &r).sqrt() <= tol * b_norm {
            return (x, k);
        }
        let rho_new = dot(&r, &z);
        for i in 0..n {
            p[i] = z[i] + rho_new / rho * p[i];
        }
        rho = rho_new;
    }
    panic!("the reference CG did not converge");
}

/// SPD test matrices: generated ones, 494_bus from tests/data, and the
/// shared collection's bcsstk16 when it is there (f64 values).
fn spd_matrices() -> Vec<(String, Csr<f64>)> {
    let mut out: Vec<(String, Csr<f64>)> =
        ["poisson2d:side=24", "poisson3d:side=7,order=random,seed=3"]
            .iter()
            .map(|s| {
                let a = s.parse::<GenSpec>().unwrap().generate().unwrap();
                (s.to_string(), a.map_values(|&v| v as f64))
            })
            .collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for path in [
        root.join("tests/data/494_bus.mtx"),
        root.join("../shared/data/matrices/bcsstk16.mtx"),
    ] {
        if path.exists() {
            out.push((
                path.display().to_string(),
                mm::read_csr::<f64>(&path).unwrap(),
            ));
        }
    }
    out
}

#[test]
fn cg_f64_matches_the_reference_cg() {
    let dev = Device::cpu();
    let config = LaunchConfig::default();
    for (name, a) in spd_matrices() {
        let b = apps::rhs_for_ones(&a).unwrap();
        for precond in [apps::Preconditioner::None, apps::Preconditioner::Jacobi] {
            let jacobi = precond == apps::Preconditioner::Jacobi;
            let tol = 1e-8;
            let opts = apps::CgOptions {
                tol,
                max_iters: 5000,
                precond,
                ..Default::default()
            };
            let got = apps::cg(&dev, &config, &a, &b, &opts).unwrap();
            let (want_x, want_iters) = cg_reference(&a, &b, tol, jacobi);
            let what = format!("{name}, {precond:?}");
            assert!(got.converged, "{what}");
            assert!(got.relative_residual <= tol, "{what}");
            // Same algorithm, other summation orders in the dot products:
            // within 1 on well-conditioned matrices, and within 2% where the
            // condition number (bcsstk16's is about 1e9) magnifies rounding.
            assert!(
                got.iterations.abs_diff(want_iters) <= (want_iters / 50).max(1),
                "{what}: {} iterations, reference {want_iters}",
                got.iterations
            );
            assert_eq!(got.timings.iterations.len(), got.iterations, "{what}");
            let true_res = apps::relative_residual(&a, &got.x, &b).unwrap();
            assert!(true_res <= 10.0 * tol, "{what}: ‖b − A·x‖/‖b‖ = {true_res}");
            let scale = want_x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let diff = got
                .x
                .iter()
                .zip(&want_x)
                .fold(0.0f64, |m, (g, w)| m.max((g - w).abs()));
            assert!(diff <= 1e-4 * scale, "{what}: max |x − x_ref| = {diff}");
        }
    }
}

#[test]
fn cg_f32_converges_to_the_ones_vector() {
    let dev = Device::cpu();
    let config = LaunchConfig::default();
    for spec in [
        "poisson2d:side=24",
        "poisson3d:side=7,order=natural,seed=1",
        "poisson3d:side=7,order=random,seed=3",
    ] {
        let a = spec.parse::<GenSpec>().unwrap().generate().unwrap();
        let b = apps::rhs_for_ones(&a).unwrap();
        let a64 = a.map_values(|&v| v as f64);
        let b64: Vec<f64> = b.iter().map(|&v| v as f64).collect();
        for precond in [apps::Preconditioner::None, apps::Preconditioner::Jacobi] {
            let jacobi = precond == apps::Preconditioner::Jacobi;
            let tol = 1e-5;
            let opts = apps::CgOptions {
                tol,
                max_iters: 1000,
                precond,
                ..Default::default()
            };
            let got = apps::cg(&dev, &config, &a, &b, &opts).unwrap();
            let (_, want_iters) = cg_reference(&a64, &b64, tol, jacobi);
            let what = format!("{spec}, {precond:?}");
            assert!(got.converged, "{what}");
            // f32 rounding moves the trajectory a little on these
            // well-conditioned matrices.
            assert!(
                got.iterations.abs_diff(want_iters) <= 2,
                "{what}: {} iterations, reference {want_iters}",
                got.iterations
            );
            let err = got.x.iter().fold(0.0f32, |m, v| m.max((v - 1.0).abs()));
            assert!(err < 1e-3, "{what}: max |x − 1| = {err}");
        }
    }
}

#[test]
fn cg_reports_breakdown_and_bad_input_as_errors() {
    let dev = Device::cpu();
    let config = LaunchConfig::default();
    let opts = apps::CgOptions::default();
    // Symmetric but indefinite: b = A·1 = (1, -1) gives pᵀA·p = 0.
    let indefinite = Csr::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0f64, -1.0]).unwrap();
    let b = apps::rhs_for_ones(&indefinite).unwrap();
    let e = apps::cg(&dev, &config, &indefinite, &b, &opts).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("broke down at iteration 1")
            && msg.contains("not symmetric positive definite"),
        "{msg}"
    );
    // Negative definite, f32: pᵀA·p < 0.
    let negative = Csr::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![-2.0f32, -3.0]).unwrap();
    let b = [1.0f32, 1.0];
    let e = apps::cg(&dev, &config, &negative, &b, &opts).unwrap_err();
    assert!(e.to_string().contains("pᵀA·p = -"), "{e}");
    // Jacobi needs a positive diagonal.
    let jacobi = apps::CgOptions {
        precond: apps::Preconditioner::Jacobi,
        ..opts
    };
    let e = apps::cg(&dev, &config, &negative, &b, &jacobi).unwrap_err();
    assert!(e.to_string().contains("a(1, 1) = -2"), "{e}");
    let no_diagonal = Csr::new(2, 2, vec![0, 1, 2], vec![1, 0], vec![1.0f32, 1.0]).unwrap();
    let e = apps::cg(&dev, &config, &no_diagonal, &b, &jacobi).unwrap_err();
    assert!(
        e.to_string()
            .contains("positive diagonal, but a(1, 1) is not stored"),
        "{e}"
    );
    // b = 0 solves at once, but not past a preconditioner that cannot be
    // made: a 1 x 1 matrix with nothing stored.
    let empty = Csr::new(1, 1, vec![0, 0], vec![], vec![]).unwrap();
    let e = apps::cg(&dev, &config, &empty, &[0.0f32], &jacobi).unwrap_err();
    assert!(e.to_string().contains("a(1, 1) is not stored"), "{e}");
    // Shapes and lengths.
    let rect = Csr::new(1, 2, vec![0, 1], vec![1], vec![1.0f32]).unwrap();
    let e = apps::cg(&dev, &config, &rect, &[1.0], &opts).unwrap_err();
    assert!(e.to_string().contains("square matrix, got 1 x 2"), "{e}");
    let empty = Csr::<f32>::new(0, 0, vec![0], vec![], vec![]).unwrap();
    let e = apps::cg(&dev, &config, &empty, &[], &opts).unwrap_err();
    assert!(e.to_string().contains("non-empty"), "{e}");
    let e = apps::cg(&dev, &config, &negative, &[1.0], &opts).unwrap_err();
    assert!(e.to_string().contains("right-hand side"), "{e}");
    let bad_tol = apps::CgOptions {
        tol: f64::NAN,
        ..opts
    };
    let e = apps::cg(&dev, &config, &negative, &b, &bad_tol).unwrap_err();
    assert!(e.to_string().contains("tol"), "{e}");
}

/// Convergence is confirmed by the true residual: in f32 the recurrence
/// residual drifts below `‖b − A·x‖`, and a run whose recurrence reached
/// `tol` first restarts from `b − A·x` (iterative refinement). Whatever the
/// tolerance, `converged` holds exactly when both residuals reached it, and
/// the reported true residual is `x`'s.
#[test]
fn cg_convergence_is_confirmed_by_the_true_residual() {
    let dev = Device::cpu();
    let config = LaunchConfig::default();
    let a = "poisson3d:side=14,order=random,seed=3"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let b = apps::rhs_for_ones(&a).unwrap();
    let mut restarted = false;
    for tol in [1e-4, 1e-5, 2e-6, 1e-6] {
        for precond in [apps::Preconditioner::None, apps::Preconditioner::Jacobi] {
            let opts = apps::CgOptions {
                tol,
                max_iters: 2000,
                precond,
                ..Default::default()
            };
            let got = apps::cg(&dev, &config, &a, &b, &opts).unwrap();
            let what = format!("tol {tol:e} {precond:?}: {} restarts", got.restarts);
            let true_res = apps::relative_residual(&a, &got.x, &b).unwrap();
            assert!(
                (got.true_residual - true_res).abs() <= 1e-9 * true_res,
                "{what}: {} vs {true_res}",
                got.true_residual
            );
            assert_eq!(
                got.converged,
                got.relative_residual <= tol && true_res <= tol,
                "{what}: {} / {true_res}",
                got.relative_residual
            );
            assert!(got.restarts <= apps::MAX_RESTARTS, "{what}");
            assert_eq!(got.timings.iterations.len(), got.iterations, "{what}");
            if tol >= 1e-5 {
                assert!(got.converged, "{what}: {true_res}");
            }
            restarted |= got.restarts > 0;
        }
    }
    assert!(restarted, "some f32 run restarted from its true residual");
}

#[test]
fn cg_stops_at_max_iters_and_solves_zero_rhs_at_once() {
    let dev = Device::cpu();
    let config = LaunchConfig::default();
    let a = "poisson2d:side=16"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let b = apps::rhs_for_ones(&a).unwrap();
    let opts = apps::CgOptions {
        tol: 1e-6,
        max_iters: 3,
        precond: apps::Preconditioner::None,
        ..Default::default()
    };
    let got = apps::cg(&dev, &config, &a, &b, &opts).unwrap();
    assert!(!got.converged);
    assert_eq!(got.iterations, 3);
    assert_eq!(got.timings.iterations.len(), 3);
    assert!(got.relative_residual > 1e-6 && got.relative_residual < 1.0);
    assert!(got.true_residual > 1e-6, "{}", got.true_residual);
    let zero = vec![0.0f32; a.nrows()];
    let got = apps::cg(&dev, &config, &a, &zero, &opts).unwrap();
    assert!(got.converged);
    assert_eq!((got.iterations, got.relative_residual), (0, 0.0));
    assert!(got.x.iter().all(|&v| v == 0.0));
}

/// The generated CUDA of every app kernel compiles with NVRTC (skipped
/// without NVRTC, a failure under `CI=true`; `scripts/install-nvrtc` gets it).
#[test]
fn app_kernels_compile_with_nvrtc() {
    use warpfit::__private::compile::{compile_uncached, translation_unit, Arch};
    use warpfit::gpu::probe::{self, Library};
    if let Err(e) = probe::require(Library::Nvrtc) {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true and NVRTC cannot be loaded: {e}");
        }
        eprintln!("skipping: {e}");
        return;
    }
    let specs: &[&warpfit::__private::KernelSpec] = &[
        &apps::spmv::f32::SPEC,
        &apps::spmv_add::SPEC,
        &apps::spmv::f64::SPEC,
        &apps::dot::f32::SPEC,
        &apps::dot::f64::SPEC,
        &apps::cg_step::f32::SPEC,
        &apps::cg_step::f64::SPEC,
        &apps::cg_step_jacobi::f32::SPEC,
        &apps::cg_step_jacobi::f64::SPEC,
        &apps::cg_direction::f32::SPEC,
        &apps::cg_direction::f64::SPEC,
        &apps::cg_publish::f32::SPEC,
        &apps::cg_publish::f64::SPEC,
        &apps::permute::f32::SPEC,
        &apps::permute::f64::SPEC,
        &apps::permute::u32::SPEC,
        &apps::permute::i32::SPEC,
        &apps::copy::f32::SPEC,
        &apps::copy::f64::SPEC,
        &apps::pagerank_contrib::SPEC,
        &apps::dangling_rank::SPEC,
        &apps::pagerank_pull_resident::SPEC,
        &apps::pagerank_pull_add::SPEC,
        &apps::relax::SPEC,
        &apps::count_changed::f32::SPEC,
        &apps::count_changed::i32::SPEC,
        &apps::bfs_pull::SPEC,
        &apps::cc_pull_min::SPEC,
        &apps::count_changed::u32::SPEC,
        &apps::push_kernels::sssp_push::SPEC,
        &apps::push_kernels::sssp_pull::SPEC,
        &apps::push_kernels::bfs_top_down::SPEC,
        &apps::push_kernels::bfs_bottom_up::SPEC,
        &apps::push_kernels::cc_push::SPEC,
        &apps::push_kernels::cc_pull::SPEC,
        &apps::bfs_next_depth::SPEC,
        &apps::bfs_clear_words::SPEC,
        &apps::bfs_frontier_bits::SPEC,
        &apps::bfs_bits_bottom_up::SPEC,
        &apps::bfs_bits_top_down::SPEC,
        &apps::bfs_bits_apply::SPEC,
        &apps::bfs_count_level::SPEC,
    ];
    for spec in specs {
        let tu = translation_unit(spec);
        let c = compile_uncached(spec.name, &tu, Arch::new(9, 0))
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        assert_eq!(&c.cubin[..4], b"\x7fELF", "{}", spec.name);
    }
    // The spanning forest's and the CFD solver's kernels, for the entry
    // points their launches use (the per-cell and per-vertex maps run
    // one thread per task; the folds every decomposition over all tasks,
    // and the one-task count its split list and merges): each entry point
    // costs NVRTC 50 to 200 ms.
    let folds = [
        "wf_thread_all",
        "wf_sub4_all",
        "wf_cte_all",
        "wf_cte_list",
        "wf_sizes",
        "wf_merge",
        "wf_merge_wide",
        "wf_merge_block",
    ];
    let maps = ["wf_thread_all"];
    let forms: &[(&warpfit::__private::KernelSpec, &[&str])] = &[
        (&apps::mst_lightest::SPEC, &folds),
        (&apps::mst_moved::SPEC, &folds),
        (&apps::cfd_flux::SPEC, &folds),
        (&apps::mst_hook::SPEC, &maps),
        (&apps::mst_break::SPEC, &maps),
        (&apps::mst_jump::SPEC, &maps),
        (&apps::mst_relabel::SPEC, &maps),
        (&apps::cfd_step_factor::SPEC, &maps),
        (&apps::cfd_time_step::SPEC, &maps),
        (&apps::cfd_save::SPEC, &maps),
    ];
    for (spec, entries) in forms {
        let tu = warpfit::__private::compile::entry_point_unit(spec, entries).unwrap();
        let c = compile_uncached(spec.name, &tu, Arch::new(9, 0))
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        assert_eq!(&c.cubin[..4], b"\x7fELF", "{}", spec.name);
    }
}

/// CG renumbered by levels (planned first, and pipelined: switching
/// whenever the order is in) solves the same system as CG in the given
/// order, in f64 and f32, plain and with Jacobi, and returns `x` in the
/// caller's order; it refuses to combine with a throttled SpMV.
#[test]
fn cg_renumbered_by_levels_solves_the_same_system() {
    let dev = Device::cpu();
    let config = LaunchConfig::default();
    let a: Csr<f64> = "poisson3d:side=14,order=random,seed=3"
        .parse::<warpfit::runtime::gen::GenSpec>()
        .unwrap()
        .generate()
        .unwrap()
        .map_values(|&v| v as f64);
    let b = apps::rhs_for_ones(&a).unwrap();
    for precond in [apps::Preconditioner::None, apps::Preconditioner::Jacobi] {
        let given = apps::CgOptions {
            tol: 1e-9,
            max_iters: 2000,
            precond,
            ..Default::default()
        };
        let want = apps::cg(&dev, &config, &a, &b, &given).unwrap();
        for plan_first in [true, false] {
            let opts = apps::CgOptions {
                order: apps::CgOrder::Levels,
                plan_first,
                ..given
            };
            let what = format!("{precond:?}, plan first {plan_first}");
            let got = apps::cg(&dev, &config, &a, &b, &opts).unwrap();
            assert!(got.converged, "{what}");
            assert!(
                got.iterations.abs_diff(want.iterations) <= 1,
                "{what}: {} iterations, {} in the given order",
                got.iterations,
                want.iterations
            );
            if plan_first {
                let r = got.renumbered.as_ref().expect("switched");
                assert_eq!(r.iterations_before, 0, "{what}");
                assert!(!r.on_device, "{what}: the CPU backend orders on the host");
            }
            // The exact solution is all ones.
            let err = got.x.iter().fold(0.0f64, |m, v| m.max((v - 1.0).abs()));
            assert!(err < 1e-6, "{what}: max |x − 1| = {err}");
            let true_res = apps::relative_residual(&a, &got.x, &b).unwrap();
            assert!(true_res < 1e-8, "{what}: ‖b − A·x‖/‖b‖ = {true_res}");
        }
        let a32 = a.map_values(|&v| v as f32);
        let b32 = apps::rhs_for_ones(&a32).unwrap();
        let opts = apps::CgOptions {
            tol: 1e-5,
            order: apps::CgOrder::Levels,
            plan_first: true,
            ..given
        };
        let got = apps::cg(&dev, &config, &a32, &b32, &opts).unwrap();
        assert!(got.converged, "f32 {precond:?}");
        let err = got.x.iter().fold(0.0f32, |m, v| m.max((v - 1.0).abs()));
        assert!(err < 1e-3, "f32 {precond:?}: max |x − 1| = {err}");
    }
    let both = apps::CgOptions {
        order: apps::CgOrder::Levels,
        throttle: Some(apps::spmv::f64::throttle_options().unwrap()),
        ..Default::default()
    };
    let e = apps::cg(&dev, &config, &a, &b, &both)
        .unwrap_err()
        .to_string();
    assert!(e.contains("do not combine"), "{e}");
    assert!("bfs"
        .parse::<apps::CgOrder>()
        .unwrap_err()
        .to_string()
        .contains("levels"));
}

//! Every built-in app on CUDA against the CPU backend, with their data on
//! the device and their launches prepared: SpMV, PageRank, SSSP, BFS and CG.
//! Integers, booleans and (min, +) results must be equal; float sums within
//! the tolerances stated at each comparison; CG's iteration count within 1
//! of the CPU run's in f64 on the generated matrices, within 1 or 2% on the
//! ill-conditioned real ones and in f32.
//! Needs a CUDA GPU; skipped without one, unless `WARPFIT_REQUIRE_GPU=1`
//! (scripts/gpu-check runs it so).

use std::path::PathBuf;
use warpfit::apps::{self, CgOptions, Graph, PageRankOptions, Preconditioner};
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::sparse::{mm, Csr};
use warpfit::{Decomposition, Device, LaunchConfig};

mod gpu_common;

use gpu_common::gpu;

fn configs() -> Vec<LaunchConfig> {
    [
        Decomposition::Cte,
        Decomposition::Thread,
        Decomposition::SubWarp(8),
    ]
    .into_iter()
    .map(LaunchConfig::new)
    .collect()
}

/// tests/data (`WARPFIT_TEST_DATA` on the GPU machine, else the source tree).
fn test_data() -> PathBuf {
    std::env::var("WARPFIT_TEST_DATA").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data"),
        PathBuf::from,
    )
}

fn generated(spec: &str) -> Csr<f32> {
    spec.parse::<GenSpec>().unwrap().generate().unwrap()
}

fn graphs() -> Vec<(String, Csr<f32>)> {
    let mut out: Vec<(String, Csr<f32>)> = [
        "rmat:scale=15,edge_factor=16,seed=2",
        "rgg:n=60000,seed=3",
        "uniform:n=40000,per_row=9,seed=4",
        "grid2d:side=90",
    ]
    .iter()
    .map(|s| (s.to_string(), generated(s)))
    .collect();
    for name in ["494_bus.mtx", "karate.mtx", "dwt_992.mtx"] {
        let path = test_data().join(name);
        out.push((name.to_string(), mm::read_csr::<f32>(&path).unwrap()));
    }
    out
}

/// Entry-wise `|got − want| ≤ rel · |want| + abs`.
fn assert_close(what: &str, got: &[f32], want: &[f32], rel: f32, abs: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * w.abs() + abs,
            "{what}: entry {i}: {g} on CUDA, {w} on the CPU"
        );
    }
}

#[test]
fn graph_apps_on_cuda_equal_the_cpu_backend() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    for (name, a) in graphs() {
        let g = Graph::from_matrix(&a).unwrap();
        let opts = PageRankOptions {
            iterations: 20,
            ..PageRankOptions::default()
        };
        let default = LaunchConfig::default();
        let rank_cpu = apps::pagerank(&cpu, &default, &g, opts).unwrap();
        let (dist_cpu, rounds_cpu) = apps::sssp(&cpu, &default, &g, 0).unwrap();
        let (level_cpu, steps_cpu) = apps::bfs(&cpu, &default, &g, 0).unwrap();
        let x = apps::spmv_input(a.ncols());
        let y_cpu = apps::spmv_csr(&cpu, &default, &a, &x).unwrap();
        for cfg in configs() {
            let what = format!("{name}, {:?}", cfg.decomposition);
            // Float sums in another order: ranks are about 1/n and each
            // iteration rounds a sum of f32 shares, 20 iterations.
            let rank = apps::pagerank(&dev, &cfg, &g, opts).unwrap();
            assert_close(&format!("pagerank {what}"), &rank, &rank_cpu, 1e-4, 1e-9);
            // (min, +): every candidate is computed alike and min is exact.
            let (dist, rounds) = apps::sssp(&dev, &cfg, &g, 0).unwrap();
            assert_eq!(dist, dist_cpu, "sssp {what}");
            assert_eq!(rounds, rounds_cpu, "sssp rounds {what}");
            let (level, steps) = apps::bfs(&dev, &cfg, &g, 0).unwrap();
            assert_eq!(level, level_cpu, "bfs {what}");
            assert_eq!(steps, steps_cpu, "bfs steps {what}");
            // Row sums of f32 products in another order.
            let y = apps::spmv_csr(&dev, &cfg, &a, &x).unwrap();
            let scale = a.values().iter().fold(0.0f32, |m, v| m.max(v.abs()));
            assert_close(&format!("spmv {what}"), &y, &y_cpu, 1e-4, 1e-4 * scale);
        }
    }
}

/// SPD matrices: generated, 494_bus, and bcsstk16 when scripts/gpu-build
/// carried it (`.gpu/mtx`) or the shared collection is beside the checkout.
/// The flag says whether the matrix is ill-conditioned.
fn spd_matrices() -> Vec<(String, Csr<f64>, bool)> {
    let mut out: Vec<(String, Csr<f64>, bool)> = [
        "poisson2d:side=100",
        "poisson3d:side=24,order=random,seed=5",
    ]
    .iter()
    .map(|s| (s.to_string(), generated(s).map_values(|&v| v as f64), false))
    .collect();
    out.push((
        "494_bus".to_string(),
        mm::read_csr::<f64>(&test_data().join("494_bus.mtx")).unwrap(),
        true,
    ));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        PathBuf::from(".gpu/mtx/bcsstk16.mtx"),
        root.join("../shared/data/matrices/bcsstk16.mtx"),
    ];
    if let Some(path) = candidates.iter().find(|p| p.exists()) {
        out.push((
            "bcsstk16".to_string(),
            mm::read_csr::<f64>(path).unwrap(),
            true,
        ));
    }
    out
}

#[test]
fn cg_on_cuda_matches_the_cpu_backend() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let config = LaunchConfig::default();
    for (name, a, ill_conditioned) in spd_matrices() {
        let b = apps::rhs_for_ones(&a).unwrap();
        let a32 = a.map_values(|&v| v as f32);
        let b32 = apps::rhs_for_ones(&a32).unwrap();
        for precond in [Preconditioner::None, Preconditioner::Jacobi] {
            // f64 to 1e-8.
            let opts = CgOptions {
                tol: 1e-8,
                max_iters: 20_000,
                precond,
                ..Default::default()
            };
            let what = format!("{name}, f64, {precond:?}");
            let want = apps::cg(&cpu, &config, &a, &b, &opts).unwrap();
            let got = apps::cg(&dev, &config, &a, &b, &opts).unwrap();
            assert!(got.converged && want.converged, "{what}");
            let slack = if ill_conditioned {
                (want.iterations / 50).max(1)
            } else {
                1
            };
            assert!(
                got.iterations.abs_diff(want.iterations) <= slack,
                "{what}: {} iterations on CUDA, {} on the CPU",
                got.iterations,
                want.iterations
            );
            let res = apps::relative_residual(&a, &got.x, &b).unwrap();
            assert!(res <= 1e-7, "{what}: ‖b − A·x‖/‖b‖ = {res}");
            if !ill_conditioned {
                // cond(A)·tol bounds the error: about 4e3 · 1e-8 here.
                let err = got.x.iter().fold(0.0f64, |m, v| m.max((v - 1.0).abs()));
                assert!(err <= 1e-4, "{what}: max |x − 1| = {err}");
            }
            // f32 to 1e-5, on the well-conditioned matrices only (f32 CG
            // stalls above 1e-5 on the others).
            if ill_conditioned {
                continue;
            }
            let opts = CgOptions { tol: 1e-5, ..opts };
            let what = format!("{name}, f32, {precond:?}");
            let want = apps::cg(&cpu, &config, &a32, &b32, &opts).unwrap();
            let got = apps::cg(&dev, &config, &a32, &b32, &opts).unwrap();
            assert!(got.converged && want.converged, "{what}");
            // f32 rounding in other orders moves the trajectory a little
            // more than f64's: within 1 iteration or 2%.
            assert!(
                got.iterations.abs_diff(want.iterations) <= (want.iterations / 50).max(1),
                "{what}: {} iterations on CUDA, {} on the CPU",
                got.iterations,
                want.iterations
            );
            let res = apps::relative_residual(&a32, &got.x, &b32).unwrap();
            assert!(res <= 1e-4, "{what}: ‖b − A·x‖/‖b‖ = {res}");
        }
    }
}

#[test]
fn cg_breakdown_on_cuda_is_an_error() {
    let Some(dev) = gpu() else { return };
    // Symmetric, indefinite: pᵀA·p = 0 at the first iteration.
    let a = Csr::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0f64, -1.0]).unwrap();
    let b = apps::rhs_for_ones(&a).unwrap();
    let e = apps::cg(
        &dev,
        &LaunchConfig::default(),
        &a,
        &b,
        &CgOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("broke down at iteration 1"), "{e}");
    // Negative definite in f32 on a larger matrix: pᵀA·p < 0.
    let neg = generated("poisson2d:side=30").map_values(|&v| -v);
    let b = apps::rhs_for_ones(&neg).unwrap();
    let e = apps::cg(
        &dev,
        &LaunchConfig::default(),
        &neg,
        &b,
        &CgOptions::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("not symmetric positive definite"),
        "{e}"
    );
}

/// sssp, bfs and cc through the driver choice on CUDA: `topo` (and `auto`,
/// which runs it on CUDA) equal the sequential references bit for bit, and
/// the worklist drivers, CPU-only so far, are a clear error.
#[test]
fn driven_apps_on_cuda_equal_the_references() {
    use warpfit::apps::{DriveOptions, DriverChoice};
    use warpfit::runtime::reference;
    let Some(dev) = gpu() else { return };
    let mut inputs = graphs();
    inputs.push((
        "road:side=120".into(),
        generated("road:side=120,drop=0.15,seed=1,order=random"),
    ));
    inputs.push((
        "rmat:scale=13,sym=true".into(),
        generated("rmat:scale=13,edge_factor=16,seed=1,sym=true"),
    ));
    for (name, a) in inputs {
        let dist = reference::dijkstra(&a, 0).unwrap();
        let levels = reference::bfs_levels(&a, 0).unwrap();
        let comps = reference::components(&a).unwrap();
        for cfg in configs() {
            for driver in [DriverChoice::Topo, DriverChoice::Auto] {
                let o = DriveOptions::new(driver);
                let what = format!("{name}, {:?}, {driver:?}", cfg.decomposition);
                let (got, _) = apps::sssp_driven(&dev, &cfg, &a, 0, &o).unwrap();
                assert!(
                    got.iter()
                        .zip(&dist)
                        .all(|(g, w)| g.to_bits() == w.to_bits()),
                    "sssp {what}"
                );
                let (got, _) = apps::bfs_driven(&dev, &cfg, &a, 0, &o).unwrap();
                assert_eq!(got, levels, "bfs {what}");
                let (got, r) = apps::cc_driven(&dev, &cfg, &a, &o).unwrap();
                assert_eq!(got, comps, "cc {what}");
                assert!(r.rounds >= 1, "cc {what}");
            }
        }
    }
    // The worklist drivers run on CUDA too (tests/drivers_gpu.rs covers
    // every one of them).
    let a = generated("grid2d:side=8");
    let o = DriveOptions::new(DriverChoice::Data(None));
    let (got, r) = apps::sssp_driven(&dev, &LaunchConfig::default(), &a, 0, &o).unwrap();
    assert_eq!(got, reference::dijkstra(&a, 0).unwrap());
    assert!(r.rounds_report.is_some(), "{r:?}");
}

/// PageRank and CG with their SpMV-shaped kernel throttled over caches
/// small enough to split these graphs: every launched policy against the
/// unthrottled run on CUDA (float sums in another order, same tolerances as
/// above; CG within one iteration). Planned first, so that every iteration
/// runs the policy.
#[test]
fn throttled_pagerank_and_cg_on_cuda_equal_the_unthrottled_runs() {
    use warpfit::{CacheSize, ThrottlePolicy};
    let Some(dev) = gpu() else { return };
    let config = LaunchConfig::default();
    let policies = [
        ThrottlePolicy::Cf,
        ThrottlePolicy::Cfq,
        ThrottlePolicy::Sj,
        ThrottlePolicy::Sjq,
        ThrottlePolicy::Auto,
    ];
    for spec in [
        "rmat:scale=14,edge_factor=16,seed=2",
        "uniform:n=30000,per_row=9,seed=4",
    ] {
        let g = Graph::from_matrix(&generated(spec)).unwrap();
        let plain = PageRankOptions {
            iterations: 12,
            ..PageRankOptions::default()
        };
        let want = apps::pagerank(&dev, &config, &g, plain).unwrap();
        for policy in policies {
            let opts = PageRankOptions {
                throttle: Some(
                    apps::pagerank_pull_resident::throttle_options()
                        .unwrap()
                        .with_policy(policy)
                        .with_exhaustive(true)
                        .with_cache(CacheSize::Bytes(16 << 10)),
                ),
                plan_first: true,
                ..plain
            };
            let (rank, _, run) =
                apps::pagerank_throttled(&dev, &config, &g, opts, &mut |_| {}).unwrap();
            let run = run.unwrap();
            assert!(
                run.report.partitions > 1,
                "{spec} {policy}: {:?}",
                run.report
            );
            assert_eq!(run.planned_from, Some(0), "{spec} {policy}");
            assert_close(
                &format!("pagerank {spec} {policy}"),
                &rank,
                &want,
                1e-4,
                1e-9,
            );
        }
    }
    let a = generated("poisson3d:side=20,order=random,seed=5").map_values(|&v| v as f64);
    let b = apps::rhs_for_ones(&a).unwrap();
    let plain = CgOptions {
        tol: 1e-8,
        ..CgOptions::default()
    };
    let want = apps::cg(&dev, &config, &a, &b, &plain).unwrap();
    for policy in policies {
        let opts = CgOptions {
            throttle: Some(
                apps::spmv::f64::throttle_options()
                    .unwrap()
                    .with_policy(policy)
                    .with_exhaustive(true)
                    .with_cache(CacheSize::Bytes(32 << 10)),
            ),
            plan_first: true,
            ..plain
        };
        let got = apps::cg(&dev, &config, &a, &b, &opts).unwrap();
        let run = got.throttle.as_ref().unwrap();
        assert!(run.report.partitions > 1, "cg {policy}: {:?}", run.report);
        assert_like_the_unthrottled_cg(&format!("cg {policy}"), &got, &want);
    }
}

/// A throttled CG run `got` converged within one iteration of the
/// unthrottled run `want`, at its solution (within 1e-6).
fn assert_like_the_unthrottled_cg(
    what: &str,
    got: &apps::CgResult<f64>,
    want: &apps::CgResult<f64>,
) {
    assert!(got.converged, "{what}");
    assert!(
        got.iterations.abs_diff(want.iterations) <= 1,
        "{what}: {} iterations, {} unthrottled",
        got.iterations,
        want.iterations
    );
    let err = got
        .x
        .iter()
        .zip(&want.x)
        .fold(0.0f64, |m, (g, w)| m.max((g - w).abs()));
    assert!(err < 1e-6, "{what}: max |x − x_unthrottled| = {err}");
}

/// CG with the model-driven `auto`: the level order the throttled SpMV
/// chooses is left to the solve (`ThrottleOptions::caller_renumbers`),
/// which renumbers itself by it and times its first renumbered SpMV against
/// `org`'s timed run. Kept, or refused (forced: `reject_order`) and the
/// solve back in the given order with the handle on `org`, it ends where
/// the unthrottled run does.
#[test]
fn cg_confirms_the_level_order_auto_leaves_to_it_or_goes_back() {
    use warpfit::{CacheSize, RemapOrder};
    let Some(dev) = gpu() else { return };
    let config = LaunchConfig::default();
    // `x` (500 KiB) just over the 480 KiB a partition may fill: the model
    // keeps the level order, whose levels (from 128 roots) stay under the
    // third of that it allows.
    let a = generated("poisson3d:side=40,order=random,seed=5").map_values(|&v| v as f64);
    let b = apps::rhs_for_ones(&a).unwrap();
    let plain = CgOptions {
        tol: 1e-8,
        ..CgOptions::default()
    };
    let want = apps::cg(&dev, &config, &a, &b, &plain).unwrap();
    for reject in [false, true] {
        let what = format!("reject_order {reject}");
        let opts = CgOptions {
            throttle: Some(
                apps::spmv::f64::throttle_options()
                    .unwrap()
                    .with_cache(CacheSize::Bytes(960 << 10))
                    .with_plan_cache(false)
                    .with_expected_launches(1 << 40),
            ),
            reject_order: reject,
            ..plain
        };
        let got = apps::cg(&dev, &config, &a, &b, &opts).unwrap();
        let run = got.throttle.as_ref().unwrap();
        let model = run.report.model.as_ref().unwrap();
        assert!(
            model.reason.contains("left to the caller"),
            "{what}: {model:?}"
        );
        let r = got
            .renumbered
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: the solve renumbered itself"));
        let c = r.confirmation.expect("timed against org");
        assert!(c.renumbered_ms > 0.0 && c.org_ms > 0.0, "{what}: {c:?}");
        assert_eq!(
            c.kept,
            !reject && c.renumbered_ms < c.org_ms,
            "{what}: {c:?}"
        );
        let order = c.kept.then_some(RemapOrder::Levels);
        assert_eq!(run.report.remap_order, order, "{what}: {:?}", run.report);
        assert_like_the_unthrottled_cg(&what, &got, &want);
    }
}

/// CG renumbered by levels on CUDA: the same iterations (within 1) and
/// solution as the CPU backend's renumbered run and as CUDA in the given
/// order, planned first and pipelined, f64 and f32, plain and Jacobi.
/// `n` rows of up to 6 columns drawn from the row's own block of 40 (so
/// the pattern falls into many components): a quarter of the rows empty,
/// self loops, repeated columns, not symmetric.
fn scattered_pattern(n: usize, seed: u64) -> Csr<f64> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut ptr, mut col) = (vec![0u32], Vec::new());
    for v in 0..n {
        let block = v / 40 * 40;
        if next() % 4 != 0 {
            for _ in 0..1 + next() % 6 {
                let w = (block + (next() % 40) as usize).min(n - 1);
                col.push(w as u32);
            }
        }
        ptr.push(col.len() as u32);
    }
    let values = (0..col.len()).map(|i| i as f64).collect();
    Csr::new(n, n, ptr, col, values).unwrap()
}

/// The 1D Laplacian of `n` rows (2 on the diagonal, −1 beside it): SPD,
/// and a path of `n` levels from row 0.
fn laplacian_1d(n: usize) -> Csr<f64> {
    let (mut ptr, mut col, mut val) = (vec![0u32], Vec::new(), Vec::new());
    for v in 0..n {
        for (w, x) in [(v.wrapping_sub(1), -1.0), (v, 2.0), (v + 1, -1.0)] {
            if w < n {
                col.push(w as u32);
                val.push(x);
            }
        }
        ptr.push(col.len() as u32);
    }
    Csr::new(n, n, ptr, col, val).unwrap()
}

/// The device's level order is the host's, exactly, and so is the matrix
/// renumbered by it; bad input is an error, not a fault.
#[test]
fn device_level_order_equals_the_host_order() {
    use warpfit::gpu::levels;
    use warpfit::runtime::partition::{level_order, level_order_from_roots, Remapping};
    let Some(dev) = gpu() else { return };
    // Under a sanitizer (WARPFIT_SMALL=1): one generated case, one root.
    let small = std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1");
    let generated_cases: &[&str] = if small {
        &["poisson3d:side=10,order=random,seed=3"]
    } else {
        &[
            "poisson3d:side=20,order=random,seed=3",
            "grid2d:side=70",
            "rmat:scale=12,edge_factor=8,seed=4",
            // Levels of tens of thousands of rows: more tiles than the
            // round's blocks, each placed by a long look-back.
            "rmat:scale=18,edge_factor=8,seed=5",
        ]
    };
    let mut cases: Vec<(String, Csr<f64>)> = generated_cases
        .iter()
        .map(|s| (s.to_string(), generated(s).map_values(|&v| v as f64)))
        .collect();
    for seed in 1..if small { 2 } else { 4 } {
        cases.push((
            format!("scattered {seed}"),
            scattered_pattern(3000 + 77 * seed as usize, seed),
        ));
    }
    cases.push((
        "one row".into(),
        Csr::new(1, 1, vec![0, 1], vec![0], vec![2.0]).unwrap(),
    ));
    for (name, a) in &cases {
        let m = levels::DeviceCsr::upload(&dev, a).unwrap();
        let (ptr, col) = (&m.row_ptr, &m.col_idx);
        let roots = if small {
            vec![0]
        } else {
            vec![0, a.nrows() / 2, a.nrows() - 1]
        };
        for root in roots {
            let got = levels::level_order(&dev, ptr, col, root).unwrap();
            let want = level_order(a, root).unwrap();
            assert_eq!(got.order.to_vec().unwrap(), want, "{name}, root {root}");
            let pos = got.position.to_vec().unwrap();
            assert!(
                want.iter()
                    .enumerate()
                    .all(|(new, &old)| pos[old as usize] == new as u32),
                "{name}"
            );
        }
        // From spread roots: the host's order from the same roots.
        for count in [2usize, 7, 128] {
            let got = levels::level_order_from_roots(&dev, ptr, col, 0, count).unwrap();
            let roots = levels::spread_roots(a.nrows(), 0, count).unwrap();
            let want = level_order_from_roots(a, &roots).unwrap();
            assert_eq!(got.order.to_vec().unwrap(), want, "{name}, {count} roots");
        }
        let order = levels::level_order(&dev, ptr, col, 0).unwrap();
        let b = levels::renumber(&dev, &order.order, &order.position, &m).unwrap();
        let want = Remapping::levels(a).unwrap().apply_csr(a).unwrap();
        assert_eq!(b.row_ptr.to_vec().unwrap(), want.row_ptr(), "{name}");
        assert_eq!(b.col_idx.to_vec().unwrap(), want.col_idx(), "{name}");
        assert_eq!(b.values.to_vec().unwrap(), want.values(), "{name}");
    }
    // A path of 1000 vertices takes 1000 rounds: a budget of 64 gives up.
    let path = laplacian_1d(1000);
    let (ptr, col) = (
        dev.upload(path.row_ptr()).unwrap(),
        dev.upload(path.col_idx()).unwrap(),
    );
    assert!(levels::level_order_within(&dev, &ptr, &col, 0, 64)
        .unwrap()
        .is_none());
    let full = levels::level_order_within(&dev, &ptr, &col, 0, usize::MAX)
        .unwrap()
        .unwrap();
    assert_eq!(full.order.to_vec().unwrap(), level_order(&path, 0).unwrap());
    // One round a level, counted in whole batches.
    assert!(
        (1000..1000 + levels::ROUNDS_PER_CHECK).contains(&full.rounds),
        "{} rounds",
        full.rounds
    );
    // An order of another size does not renumber the path.
    let path_m = levels::DeviceCsr::upload(&dev, &path).unwrap();
    let two = levels::level_order(
        &dev,
        &dev.upload(&[0u32, 1, 2]).unwrap(),
        &dev.upload(&[1u32, 0]).unwrap(),
        0,
    )
    .unwrap();
    let e = levels::renumber(&dev, &two.order, &two.position, &path_m)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("does not match an order of 2 rows"), "{e}");
    // Empty, a root out of range, a column out of range, the CPU backend.
    let empty = levels::level_order(
        &dev,
        &dev.upload(&[0u32]).unwrap(),
        &dev.upload::<u32>(&[]).unwrap(),
        0,
    )
    .unwrap();
    assert!(empty.order.is_empty());
    let (ptr, col) = (
        dev.upload(&[0u32, 1, 2]).unwrap(),
        dev.upload(&[1u32, 0]).unwrap(),
    );
    let e = levels::level_order(&dev, &ptr, &col, 2)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("root 2"), "{e}");
    let bad = dev.upload(&[1u32, 7]).unwrap();
    let e = levels::level_order(&dev, &ptr, &bad, 0)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("out of range"), "{e}");
    let cpu = Device::cpu();
    let e = levels::level_order(
        &cpu,
        &cpu.upload(&[0u32, 1, 2]).unwrap(),
        &cpu.upload(&[1u32, 0]).unwrap(),
        0,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("CUDA"), "{e}");
    let e = levels::level_order(&dev, &ptr, &cpu.upload(&[1u32, 0]).unwrap(), 0)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("must be on CUDA device"), "{e}");
}

/// The level order `auto` runs under a width limit gives an expander up
/// before walking its widest level: two levels in a row that grew 4× or
/// more project the next past the limit. A geometric graph and a mesh,
/// whose levels grow slowly, are ordered to the end under the same limit.
#[test]
fn an_expanders_level_order_is_given_up_before_its_widest_level() {
    use warpfit::__private::{level_order_run, LevelRun};
    let Some(dev) = gpu() else { return };
    let run = |spec: &str, limit: u64| {
        let a = generated(spec);
        let ptr = dev.upload(a.row_ptr()).unwrap();
        let col = dev.upload(a.col_idx()).unwrap();
        level_order_run(&dev, &ptr, &col, 128, limit).unwrap()
    };
    // From 128 spread roots its levels hold 128, 1017, 7847, 46360, ...
    // rows: the third (7847, 7× the second, itself 8× the roots) projects
    // the fourth to 7 · 7847.
    let uniform = "uniform:n=131072,per_row=8,seed=3";
    assert_eq!(
        run(uniform, 20_000),
        LevelRun::Expanding {
            widest: 7847,
            projected: 7 * 7847
        }
    );
    // A limit the third level passes itself: too wide as it is found.
    assert_eq!(run(uniform, 5_000), LevelRun::TooWide { widest: 7847 });
    // Without a limit: every row numbered.
    assert!(matches!(run(uniform, u64::MAX), LevelRun::Done { .. }));
    // Levels of at most 9356 and 14754 rows, growing by 11× and 6× at
    // first, then by less than 2×.
    for spec in [
        "rgg:n=131072,seed=1,order=random",
        "poisson3d:side=50,order=random,seed=3",
    ] {
        assert!(
            matches!(run(spec, 20_000), LevelRun::Done { .. }),
            "{spec}: {:?}",
            run(spec, 20_000)
        );
    }
    // No root is an error.
    let a = generated(uniform);
    let (ptr, col) = (
        dev.upload(a.row_ptr()).unwrap(),
        dev.upload(a.col_idx()).unwrap(),
    );
    assert!(level_order_run(&dev, &ptr, &col, 0, 20_000).is_err());
}

/// On CUDA a graph with more levels than the device's round budget is
/// ordered on the host instead, with the same result.
#[test]
fn renumbered_cg_of_a_long_path_orders_on_the_host() {
    let Some(dev) = gpu() else { return };
    let config = LaunchConfig::default();
    let a = laplacian_1d(6000);
    let b = apps::rhs_for_ones(&a).unwrap();
    let given = CgOptions {
        tol: 0.0,
        max_iters: 300,
        ..Default::default()
    };
    let plain = apps::cg(&dev, &config, &a, &b, &given).unwrap();
    let opts = CgOptions {
        order: apps::CgOrder::Levels,
        ..given
    };
    let got = apps::cg(&dev, &config, &a, &b, &opts).unwrap();
    let run = got.renumbered.as_ref().unwrap();
    assert!(
        !run.on_device,
        "6000 levels exceed the device's 4096 rounds"
    );
    assert_eq!((got.iterations, run.iterations_before), (300, 0));
    let err = got
        .x
        .iter()
        .zip(&plain.x)
        .fold(0.0f64, |m, (u, v)| m.max((u - v).abs()));
    assert!(err < 1e-9, "max |x − x_given| = {err}");
}

#[test]
fn renumbered_cg_on_cuda_matches_the_cpu_backend_and_the_given_order() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let config = LaunchConfig::default();
    let a = generated("poisson3d:side=24,order=random,seed=9").map_values(|&v| v as f64);
    let b = apps::rhs_for_ones(&a).unwrap();
    for precond in [Preconditioner::None, Preconditioner::Jacobi] {
        let given = CgOptions {
            tol: 1e-9,
            max_iters: 5000,
            precond,
            ..Default::default()
        };
        let plain = apps::cg(&dev, &config, &a, &b, &given).unwrap();
        for plan_first in [true, false] {
            let opts = CgOptions {
                order: apps::CgOrder::Levels,
                plan_first,
                ..given
            };
            let what = format!("{precond:?}, plan first {plan_first}");
            let got = apps::cg(&dev, &config, &a, &b, &opts).unwrap();
            let want = apps::cg(&cpu, &config, &a, &b, &opts).unwrap();
            assert!(got.converged && want.converged, "{what}");
            for (other, n) in [("cpu", want.iterations), ("given order", plain.iterations)] {
                assert!(
                    got.iterations.abs_diff(n) <= 1,
                    "{what}: {} iterations, {other} {n}",
                    got.iterations
                );
            }
            // On CUDA the order is made on the device, before the first
            // iteration, pipelined or not.
            let run = got.renumbered.as_ref().unwrap();
            assert!(run.on_device, "{what}");
            assert_eq!(run.iterations_before, 0, "{what}");
            for (other, x) in [("cpu", &want.x), ("given order", &plain.x)] {
                let err = got
                    .x
                    .iter()
                    .zip(x)
                    .fold(0.0f64, |m, (u, v)| m.max((u - v).abs()));
                assert!(err < 1e-7, "{what}: max |x − x_{other}| = {err}");
            }
        }
        let a32 = a.map_values(|&v| v as f32);
        let b32 = apps::rhs_for_ones(&a32).unwrap();
        let opts = CgOptions {
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
}

/// Graphs numbered without locality under a renumbering schedule: PageRank
/// moves its run to the schedule's numbering after the first iteration and
/// numbers the ranks back (`org_r` with its plan waited for, and `auto` by
/// the model wherever it chooses the level order); the ranks are the
/// unthrottled run's.
#[test]
fn pagerank_runs_in_a_renumbering_schedules_numbering() {
    let Some(dev) = gpu() else { return };
    let config = LaunchConfig::default();
    for spec in [
        "rgg:n=65536,seed=3,order=random",
        "road:side=300,order=random,seed=5",
    ] {
        let g = Graph::from_matrix(&generated(spec)).unwrap();
        let plain = PageRankOptions {
            iterations: 9,
            ..PageRankOptions::default()
        };
        let want = apps::pagerank(&dev, &config, &g, plain).unwrap();
        let base = apps::pagerank_pull_resident::throttle_options()
            .unwrap()
            .with_cache(warpfit::CacheSize::Bytes(16 << 10))
            .with_plan_cache(false);
        for (options, plan_first) in [
            (base.with_policy(warpfit::ThrottlePolicy::OrgR), true),
            (base, false),
        ] {
            let what = format!("{spec} {}", options.policy);
            let opts = PageRankOptions {
                throttle: Some(options),
                plan_first,
                renumber_from: 1,
                ..plain
            };
            let (rank, times, run) =
                apps::pagerank_throttled(&dev, &config, &g, opts, &mut |_| {}).unwrap();
            let run = run.unwrap();
            assert_eq!(
                run.renumbered, run.report.remapped,
                "{what}: {:?}",
                run.report
            );
            if plan_first {
                assert!(run.renumbered, "{what}: {:?}", run.report);
            }
            assert_eq!(run.planned_from, Some(0), "{what}");
            assert_eq!(times.iterations.len(), 9, "{what}");
            assert_close(&format!("pagerank {what}"), &rank, &want, 1e-4, 1e-9);
        }
    }
}

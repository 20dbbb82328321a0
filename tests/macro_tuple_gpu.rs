//! Tuple folds on a CUDA GPU against their CPU twin: every decomposition
//! (CTE shuffles each element), split tasks and their merge, throttled
//! handles under every policy. Needs a CUDA GPU; skipped without one,
//! unless `WARPFIT_REQUIRE_GPU=1`.

mod gpu_common;
mod macro_common;
mod tuple_common;

use gpu_common::gpu;
use macro_common::{quarters, skewed_graph};
use tuple_common::*;
use warpfit::prelude::*;

/// Every decomposition, the serial fallback off (every CTE warp expands)
/// and on, and every way of splitting long tasks.
fn configs() -> Vec<LaunchConfig> {
    let mut out = Vec::new();
    for decomposition in [
        Decomposition::Cte,
        Decomposition::Thread,
        Decomposition::SubWarp(4),
        Decomposition::SubWarp(32),
    ] {
        out.push(LaunchConfig::new(decomposition));
    }
    for split in [
        Split::Never,
        Split::Budget(96),
        Split::Queued(96),
        Split::Max(48),
    ] {
        out.push(LaunchConfig {
            decomposition: Decomposition::Cte,
            split,
            cte_serial_max: 0,
        });
    }
    out
}

#[test]
fn tuple_folds_match_the_twin_under_every_decomposition() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    // WARPFIT_SMALL=1 (the compute-sanitizer runs): a smaller graph.
    let small = std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1");
    let (ptr, src) = skewed_graph(if small { 600 } else { 3000 }, 7);
    let n = ptr.len() - 1;
    let w = tied_weights(src.len());
    let x: Vec<f64> = quarters(n, 3).iter().map(|&v| v as f64).collect();
    let wf: Vec<f64> = quarters(src.len(), 5).iter().map(|&v| v as f64).collect();
    let xi: Vec<i64> = (0..n as i64).map(|i| (i * 37) % 101 - 50).collect();
    let f: Vec<f32> = (0..src.len()).map(|e| (e % 8) as f32 * 0.125).collect();
    let xf = quarters(n, 9);
    for cfg in configs() {
        let lists = [
            TaskList::from_ptr(&ptr).unwrap(),
            TaskList::chunked(&ptr, 7).unwrap(),
        ];
        for list in &lists {
            let want = lightest_reference(&ptr, &w);
            let (mut bw, mut be) = (vec![0.0f32; n], vec![0u32; n]);
            lightest::launch_with(&dev, &cfg, list, &ptr, &w, &mut bw, &mut be).unwrap();
            assert_eq!((&bw, &be), (&want.0, &want.1), "lightest {cfg:?}");
            let (mut bw, mut be) = (vec![0.0f32; n], vec![0u32; n]);
            lightest_fn::launch_with(&dev, &cfg, list, &ptr, &w, &mut bw, &mut be).unwrap();
            assert_eq!((&bw, &be), (&want.0, &want.1), "lightest_fn {cfg:?}");

            let mut a = (vec![0u32; n], vec![0.0; n], vec![0.0; n]);
            let mut b = (vec![1u32; n], vec![1.0; n], vec![1.0; n]);
            moments::launch_with(
                &cpu, &cfg, list, &ptr, &src, &x, &wf, &mut a.0, &mut a.1, &mut a.2,
            )
            .unwrap();
            moments::launch_with(
                &dev, &cfg, list, &ptr, &src, &x, &wf, &mut b.0, &mut b.1, &mut b.2,
            )
            .unwrap();
            assert_eq!(a, b, "moments {cfg:?}");

            let (mut ya, mut yb) = (vec![0.0f32; n], vec![1.0f32; n]);
            spmv_1::launch_with(&cpu, &cfg, list, &ptr, &src, &f, &xf, &mut ya).unwrap();
            spmv_1::launch_with(&dev, &cfg, list, &ptr, &src, &f, &xf, &mut yb).unwrap();
            assert_eq!(ya, yb, "spmv_1 {cfg:?}");

            let (mut pa, mut pb) = (vec![0u32; n], vec![1u32; n]);
            carried::launch_with(&cpu, &cfg, list, &ptr, &w, 0.5, &mut ya, &mut pa).unwrap();
            carried::launch_with(&dev, &cfg, list, &ptr, &w, 0.5, &mut yb, &mut pb).unwrap();
            assert_eq!((&ya, &pa), (&yb, &pb), "carried {cfg:?}");
        }
        let mut a = eight_outputs(n);
        let mut b = eight_outputs(n);
        eight_launch(&cpu, &cfg, &ptr, &src, &xi, &f, &mut a);
        eight_launch(&dev, &cfg, &ptr, &src, &xi, &f, &mut b);
        assert!(a == b, "eight {cfg:?}");
    }
}

type Eight = (
    Vec<i64>,
    Vec<i64>,
    Vec<u32>,
    Vec<bool>,
    Vec<f32>,
    Vec<u64>,
    Vec<u8>,
    Vec<f64>,
);

fn eight_outputs(n: usize) -> Eight {
    (
        vec![0; n],
        vec![0; n],
        vec![0; n],
        vec![false; n],
        vec![0.0; n],
        vec![0; n],
        vec![0; n],
        vec![0.0; n],
    )
}

fn eight_launch(
    dev: &Device,
    cfg: &LaunchConfig,
    ptr: &[u32],
    src: &[u32],
    x: &[i64],
    f: &[f32],
    o: &mut Eight,
) {
    let n = ptr.len() - 1;
    eight::launch_with(
        dev, cfg, n, ptr, src, x, f, &mut o.0, &mut o.1, &mut o.2, &mut o.3, &mut o.4, &mut o.5,
        &mut o.6, &mut o.7,
    )
    .unwrap();
}

#[test]
fn throttled_tuple_folds_match_the_twin_under_every_policy() {
    use warpfit::runtime::gen;
    use warpfit::{CacheSize, Partitioner};
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    for a in [
        gen::rmat(12, 16, 3).unwrap(),
        gen::uniform(4096, 16, 5).unwrap(),
    ] {
        let (n, m) = (a.nrows(), a.ncols());
        let (ptr, col) = (a.row_ptr(), a.col_idx());
        // Dyadic values in a small range: every order of the sums is exact.
        let val = quarters(a.nnz(), 3);
        let x = quarters(m, 9);
        let (mut want_y, mut want_s) = (vec![0f32; n], vec![0f32; n]);
        gather_pair::launch(
            &cpu,
            n,
            ptr,
            col,
            &val,
            &x,
            &mut want_y[..],
            &mut want_s[..],
        )
        .unwrap();
        let (mut want_d, mut want_at) = (vec![0f32; n], vec![0u32; n]);
        nearest::launch(
            &cpu,
            n,
            ptr,
            col,
            &val,
            &x,
            &mut want_d[..],
            &mut want_at[..],
        )
        .unwrap();
        for partitioner in [Partitioner::Columns, Partitioner::Kd] {
            for policy in ThrottlePolicy::ALL {
                let what = format!("{partitioner} {policy}");
                let opts = ThrottleOptions::default()
                    .with_policy(policy)
                    .with_exhaustive(true)
                    .with_partitioner(partitioner)
                    .with_cache(CacheSize::Bytes(16 << 10));
                let mut t = gather_pair::throttle(&dev, &opts, n, m, ptr, col, &val).unwrap();
                let (mut y, mut s) = (vec![f32::NAN; n], vec![f32::NAN; n]);
                t.launch(&x, &mut y[..], &mut s[..]).unwrap();
                assert_eq!((&y, &s), (&want_y, &want_s), "gather_pair {what}");
                // `nearest` returns column ids, which a remapped plan renames.
                if policy == ThrottlePolicy::OrgR {
                    let e = nearest::throttle(&dev, &opts, n, m, ptr, col, &val).unwrap_err();
                    assert!(e.to_string().contains("renames"), "{what}: {e}");
                    continue;
                }
                let mut t = nearest::throttle(&dev, &opts, n, m, ptr, col, &val).unwrap();
                let (mut d, mut at) = (vec![f32::NAN; n], vec![0u32; n]);
                t.launch(&x, &mut d[..], &mut at[..]).unwrap();
                assert_eq!((&d, &at), (&want_d, &want_at), "nearest {what}");
            }
        }
    }
}

#[test]
fn faults_in_tuple_folds_are_errors_on_the_gpu_too() {
    let Some(dev) = gpu() else { return };
    let (ptr, _) = skewed_graph(500, 3);
    let n = ptr.len() - 1;
    // `w` one short: the last edge's read is out of range.
    let w = tied_weights(*ptr.last().unwrap() as usize - 1);
    for cfg in configs() {
        let (mut bw, mut be) = (vec![0.0f32; n], vec![0u32; n]);
        let e = lightest::launch_with(&dev, &cfg, n, &ptr, &w, &mut bw, &mut be).unwrap_err();
        assert!(e.to_string().contains("`w`"), "{cfg:?}: {e}");
    }
}

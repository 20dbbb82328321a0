//! Generic kernels on a CUDA GPU: every instance against its CPU twin under
//! every decomposition and over split tasks, and a throttled instance's
//! handle per type. Needs a CUDA GPU; skipped without one, unless
//! `WARPFIT_REQUIRE_GPU=1`.

mod generic_common;
mod gpu_common;
mod macro_common;

use generic_common::*;
use gpu_common::gpu;
use macro_common::skewed_graph;
use warpfit::prelude::*;
use warpfit::CacheSize;

/// Every decomposition, and CTE with the serial fallback off and long tasks
/// split.
fn configs() -> Vec<LaunchConfig> {
    let mut out: Vec<LaunchConfig> = [
        Decomposition::Cte,
        Decomposition::Thread,
        Decomposition::SubWarp(4),
        Decomposition::SubWarp(32),
    ]
    .into_iter()
    .map(LaunchConfig::new)
    .collect();
    for split in [Split::Never, Split::Budget(96), Split::Max(48)] {
        out.push(LaunchConfig {
            decomposition: Decomposition::Cte,
            split,
            cte_serial_max: 0,
        });
    }
    out
}

fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

#[test]
fn spmv_and_gather_instances_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, col, val) = matrix(3000, 2000);
    let x = dyadic(2000, 3);
    let n = ptr.len() - 1;
    let (val32, x32) = (f32s(&val), f32s(&x));
    let ptr64: Vec<u64> = ptr.iter().map(|&p| p as u64).collect();
    let col64: Vec<u64> = col.iter().map(|&c| c as u64).collect();
    for cfg in configs() {
        for list in [
            TaskList::from_ptr(&ptr).unwrap(),
            TaskList::chunked(&ptr, 3).unwrap(),
        ] {
            let (mut a, mut b) = (vec![0.0f64; n], vec![1.0f64; n]);
            spmv::f64::launch_with(&cpu, &cfg, &list, &ptr, &col, &val, &x, &mut a).unwrap();
            spmv::f64::launch_with(&dev, &cfg, &list, &ptr, &col, &val, &x, &mut b).unwrap();
            assert_eq!(a, b, "spmv f64 {cfg:?}");
            let (mut a, mut b) = (vec![0.0f32; n], vec![1.0f32; n]);
            spmv::f32::launch_with(&cpu, &cfg, &list, &ptr, &col, &val32, &x32, &mut a).unwrap();
            spmv::f32::launch_with(&dev, &cfg, &list, &ptr, &col, &val32, &x32, &mut b).unwrap();
            assert_eq!(a, b, "spmv f32 {cfg:?}");
        }
        let (mut a, mut b) = (vec![0.0f64; n], vec![1.0f64; n]);
        gather::f64_u64::launch_with(&cpu, &cfg, n, &ptr64, &col64, &val, &x, &mut a).unwrap();
        gather::f64_u64::launch_with(&dev, &cfg, n, &ptr64, &col64, &val, &x, &mut b).unwrap();
        assert_eq!(a, b, "gather f64_u64 {cfg:?}");
        let (mut a, mut b) = (vec![0.0f32; n], vec![1.0f32; n]);
        gather::f32_u32::launch_with(&cpu, &cfg, n, &ptr, &col, &val32, &x32, &mut a).unwrap();
        gather::f32_u32::launch_with(&dev, &cfg, n, &ptr, &col, &val32, &x32, &mut b).unwrap();
        assert_eq!(a, b, "gather f32_u32 {cfg:?}");
        let (mut a, mut b) = (vec![0.0f32; n], vec![1.0f32; n]);
        gather::f32_u64::launch_with(&cpu, &cfg, n, &ptr64, &col64, &val32, &x32, &mut a).unwrap();
        gather::f32_u64::launch_with(&dev, &cfg, n, &ptr64, &col64, &val32, &x32, &mut b).unwrap();
        assert_eq!(a, b, "gather f32_u64 {cfg:?}");
        let (mut a, mut b) = (vec![0.0f64; n], vec![1.0f64; n]);
        gather::f64_u32::launch_with(&cpu, &cfg, n, &ptr, &col, &val, &x, &mut a).unwrap();
        gather::f64_u32::launch_with(&dev, &cfg, n, &ptr, &col, &val, &x, &mut b).unwrap();
        assert_eq!(a, b, "gather f64_u32 {cfg:?}");
    }
}

#[test]
fn min_plus_instances_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, src) = skewed_graph(3000, 7);
    let n = ptr.len() - 1;
    let m = src.len();
    let w: Vec<u32> = (0..m as u32).map(|e| e % 13 + 1).collect();
    let dist: Vec<u32> = (0..n as u32)
        .map(|v| if v % 3 == 0 { u32::MAX } else { v % 50 })
        .collect();
    let wf: Vec<f64> = w.iter().map(|&v| v as f64 * 0.5).collect();
    let df: Vec<f64> = dist
        .iter()
        .map(|&d| if d == u32::MAX { f64::MAX } else { d as f64 })
        .collect();
    let (wf32, df32): (Vec<f32>, Vec<f32>) = (
        f32s(&wf),
        df.iter()
            .map(|&d| if d == f64::MAX { f32::MAX } else { d as f32 })
            .collect(),
    );
    for cfg in configs() {
        let list = TaskList::chunked(&ptr, 5).unwrap();
        let (mut a, mut b) = (vec![0u32; n], vec![1u32; n]);
        min_plus::u32::launch_with(&cpu, &cfg, &list, &ptr, &src, &w, &dist, &mut a).unwrap();
        min_plus::u32::launch_with(&dev, &cfg, &list, &ptr, &src, &w, &dist, &mut b).unwrap();
        assert_eq!(a, b, "min_plus u32 {cfg:?}");
        assert_eq!(a, min_plus_reference(&ptr, &src, &w, &dist, u32::MAX));
        let (mut a, mut b) = (vec![0.0f64; n], vec![1.0f64; n]);
        min_plus::f64::launch_with(&cpu, &cfg, n, &ptr, &src, &wf, &df, &mut a).unwrap();
        min_plus::f64::launch_with(&dev, &cfg, n, &ptr, &src, &wf, &df, &mut b).unwrap();
        assert_eq!(a, b, "min_plus f64 {cfg:?}");
        let (mut a, mut b) = (vec![0.0f32; n], vec![1.0f32; n]);
        min_plus::f32::launch_with(&cpu, &cfg, n, &ptr, &src, &wf32, &df32, &mut a).unwrap();
        min_plus::f32::launch_with(&dev, &cfg, n, &ptr, &src, &wf32, &df32, &mut b).unwrap();
        assert_eq!(a, b, "min_plus f32 {cfg:?}");
    }
}

#[test]
fn dot_instances_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let n = 1 << 20;
    // Dyadic values of few bits: every order of the float sums is exact.
    let x = dyadic(n, 2);
    let y = dyadic(n, 5);
    let want: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
    let split = warpfit::split_one_task(&dev, 0, 0..n).unwrap();
    let mut out = [0.0f64];
    dot::f64::launch_with(
        &dev,
        &split.config,
        &split.tasks,
        n as u32,
        &x,
        &y,
        &mut out,
    )
    .unwrap();
    assert_eq!(out[0], want);
    let mut out32 = [0.0f32];
    let (x32, y32) = (f32s(&x), f32s(&y));
    dot::f32::launch_with(
        &dev,
        &split.config,
        &split.tasks,
        n as u32,
        &x32,
        &y32,
        &mut out32,
    )
    .unwrap();
    assert_eq!(out32[0], want as f32);
    // Integer sums wrap the same on both backends.
    let xi: Vec<i64> = (0..n as i64).map(|i| i * 3_000_000_007 - 17).collect();
    let yi: Vec<i64> = (0..n as i64).map(|i| i64::MAX - i * 1_000_003).collect();
    let cpu = Device::cpu();
    let cpu_split = warpfit::split_one_task(&cpu, 0, 0..n).unwrap();
    let (mut a, mut b) = ([0i64], [1i64]);
    dot::i64::launch_with(
        &cpu,
        &cpu_split.config,
        &cpu_split.tasks,
        n as u32,
        &xi,
        &yi,
        &mut a,
    )
    .unwrap();
    dot::i64::launch_with(
        &dev,
        &split.config,
        &split.tasks,
        n as u32,
        &xi,
        &yi,
        &mut b,
    )
    .unwrap();
    assert_eq!(a, b);
}

#[test]
fn map_instances_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let n = 100_003;
    let pick: Vec<bool> = (0..n).map(|i| i % 3 == 1).collect();
    let a: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    let b: Vec<u8> = (0..n).map(|i| (i % 7) as u8).collect();
    let (mut p, mut q) = (vec![0u8; n], vec![1u8; n]);
    select::u8::launch(&cpu, n, &pick, &a, &b, &mut p).unwrap();
    select::u8::launch(&dev, n, &pick, &a, &b, &mut q).unwrap();
    assert_eq!(p, q);
    let (ab, bb) = (vec![true; n], vec![false; n]);
    let mut q = vec![false; n];
    select::bool::launch(&dev, n, &pick, &ab, &bb, &mut q).unwrap();
    assert_eq!(q, pick);
    let (ai, bi): (Vec<i32>, Vec<i32>) = ((0..n as i32).collect(), vec![-1; n]);
    let (mut p, mut q) = (vec![0i32; n], vec![1i32; n]);
    select::i32::launch(&cpu, n, &pick, &ai, &bi, &mut p).unwrap();
    select::i32::launch(&dev, n, &pick, &ai, &bi, &mut q).unwrap();
    assert_eq!(p, q);
    let af: Vec<f32> = f32s(&dyadic(n, 1));
    let (mut p, mut q) = (vec![0.0f32; n], vec![1.0f32; n]);
    select::f32::launch(&cpu, n, &pick, &af, &af, &mut p).unwrap();
    select::f32::launch(&dev, n, &pick, &af, &af, &mut q).unwrap();
    assert_eq!(p, q);
    let x = dyadic(n, 4);
    let (mut p, mut q) = (vec![0.0f64; n], vec![1.0f64; n]);
    scaled::scale::f64::launch(&cpu, n, &x, &mut p).unwrap();
    scaled::scale::f64::launch(&dev, n, &x, &mut q).unwrap();
    assert_eq!(p, q);
    let x32 = f32s(&x);
    let (mut p, mut q) = (vec![0.0f32; n], vec![1.0f32; n]);
    scaled::scale::f32::launch(&cpu, n, &x32, &mut p).unwrap();
    scaled::scale::f32::launch(&dev, n, &x32, &mut q).unwrap();
    assert_eq!(p, q);
}

#[test]
fn throttled_instances_match_the_twin_under_every_policy() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, col, val) = matrix(20_000, 60_000);
    let x = dyadic(60_000, 6);
    let n = ptr.len() - 1;
    let (val32, x32) = (f32s(&val), f32s(&x));
    let mut want = vec![0.0f64; n];
    spmv::f64::launch(&cpu, n, &ptr, &col, &val, &x, &mut want).unwrap();
    let mut want32 = vec![0.0f32; n];
    spmv::f32::launch(&cpu, n, &ptr, &col, &val32, &x32, &mut want32).unwrap();
    for policy in [
        ThrottlePolicy::Cf,
        ThrottlePolicy::Cfq,
        ThrottlePolicy::Sj,
        ThrottlePolicy::Sjq,
        ThrottlePolicy::Auto,
    ] {
        let opts = spmv::f64::throttle_options()
            .unwrap()
            .with_policy(policy)
            .with_plan_cache(false)
            .with_cache(CacheSize::Bytes(256 << 10));
        let mut t = spmv::f64::throttle(&dev, &opts, n, x.len(), &ptr, &col, &val).unwrap();
        let mut y = vec![f64::NAN; n];
        t.launch(&x, &mut y[..]).unwrap();
        assert_eq!(y, want, "f64 {policy:?}");
        let mut t = spmv::f32::throttle(&dev, &opts, n, x32.len(), &ptr, &col, &val32).unwrap();
        let mut y = vec![f32::NAN; n];
        t.launch(&x32, &mut y[..]).unwrap();
        assert_eq!(y, want32, "f32 {policy:?}");
    }
}

#[test]
fn push_instances_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, dst) = skewed_graph(3000, 9);
    let n = ptr.len() - 1;
    let w: Vec<u32> = (0..dst.len() as u32).map(|e| (e * 37) % 101).collect();
    let wi: Vec<i64> = w.iter().map(|&v| v as i64 - 50).collect();
    let wf: Vec<f64> = w.iter().map(|&v| v as f64 * 0.5).collect();
    let wf32 = f32s(&wf);
    for cfg in configs() {
        // The pushed items as a set, and the shared array.
        macro_rules! both {
            ($t:ident, $w:expr, $init:expr) => {{
                let run = |d: &Device| {
                    let out = d.worklist(n, dst.len()).unwrap();
                    let mut best = vec![$init; n];
                    lower_heads::$t::launch_with(d, &cfg, n, &ptr, &dst, $w, &mut best, &out)
                        .unwrap();
                    let mut pushed = out.to_vec().unwrap();
                    pushed.sort_unstable();
                    pushed.dedup();
                    (best, pushed)
                };
                assert_eq!(run(&cpu), run(&dev), "{} {cfg:?}", stringify!($t));
            }};
        }
        both!(u32, &w, u32::MAX);
        both!(i64, &wi, i64::MAX);
        both!(f64, &wf, f64::INFINITY);
        both!(f32, &wf32, f32::INFINITY);
    }
}

//! Generic kernels (`#[nested_reduce(T = [..])]`) on the CPU: each instance's
//! twin against a plain loop, the generic plain function against the same,
//! the instances' specs, and a throttled generic kernel's handle per type.
// The plain loops index by task and edge as the kernels do.
#![allow(clippy::needless_range_loop)]

mod generic_common;
mod macro_common;

use generic_common::*;
use warpfit::__private::{AccType, ScalarType};
use warpfit::prelude::*;

#[test]
fn spmv_instances_match_a_plain_loop() {
    let (ptr, col, val) = matrix(300, 200);
    let x = dyadic(200, 3);
    let want = spmv_reference(&ptr, &col, &val, &x);
    let n = ptr.len() - 1;
    // f64, whole and over split tasks.
    let mut y = vec![f64::NAN; n];
    spmv::f64::launch(&Device::cpu(), n, &ptr, &col, &val, &x, &mut y).unwrap();
    assert_eq!(y, want);
    for list in [
        TaskList::from_ptr(&ptr).unwrap(),
        TaskList::chunked(&ptr, 2).unwrap(),
    ] {
        let mut y = vec![f64::NAN; n];
        spmv::f64::launch(&Device::cpu(), &list, &ptr, &col, &val, &x, &mut y).unwrap();
        assert_eq!(y, want, "{list:?}");
    }
    // f32: the values are exact in f32 too.
    let (val32, x32): (Vec<f32>, Vec<f32>) = (
        val.iter().map(|&v| v as f32).collect(),
        x.iter().map(|&v| v as f32).collect(),
    );
    let mut y32 = vec![f32::NAN; n];
    spmv::f32::launch(&Device::cpu(), n, &ptr, &col, &val32, &x32, &mut y32).unwrap();
    let want32: Vec<f32> = want.iter().map(|&v| v as f32).collect();
    assert_eq!(y32, want32);
}

#[test]
fn the_generic_plain_function_runs_each_instance() {
    let (ptr, col, val) = matrix(50, 40);
    let x = dyadic(40, 1);
    let want = spmv_reference(&ptr, &col, &val, &x);
    let n = ptr.len() - 1;
    // Inferred from the arguments.
    let mut y = vec![f64::NAN; n];
    for row in 0..n {
        spmv(row, &ptr, &col, &val, &x, &mut y);
    }
    assert_eq!(y, want);
    let (val32, x32): (Vec<f32>, Vec<f32>) = (
        val.iter().map(|&v| v as f32).collect(),
        x.iter().map(|&v| v as f32).collect(),
    );
    let mut y32 = vec![f32::NAN; n];
    for row in 0..n {
        spmv::<f32>(row, &ptr, &col, &val32, &x32, &mut y32);
    }
    assert_eq!(y32, want.iter().map(|&v| v as f32).collect::<Vec<_>>());
    // Two parameters, both inferred.
    let ptr64: Vec<u64> = ptr.iter().map(|&p| p as u64).collect();
    let col64: Vec<u64> = col.iter().map(|&c| c as u64).collect();
    let mut y = vec![f64::NAN; n];
    for row in 0..n {
        gather(row, &ptr64, &col64, &val, &x, &mut y);
    }
    assert_eq!(y, want);
    // A bound over the module's trait, as user code may write one.
    fn first_row<T: spmv::Elem + Default + Copy>(p: &[u32], c: &[u32], v: &[T], x: &[T]) -> T {
        let mut y = [T::default()];
        spmv(0, p, c, v, x, &mut y);
        y[0]
    }
    assert_eq!(first_row(&[0, 1], &[0], &[2.0f32], &[3.0]), 6.0);
}

#[test]
fn dot_instances_match_a_plain_loop() {
    let n = 5000;
    let x = dyadic(n, 2);
    let y = dyadic(n, 5);
    let want: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
    let dev = Device::cpu();
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
    let (x32, y32): (Vec<f32>, Vec<f32>) = (
        x.iter().map(|&v| v as f32).collect(),
        y.iter().map(|&v| v as f32).collect(),
    );
    let mut out32 = [0.0f32];
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
    // i64 wraps, as release-mode Rust does.
    let xi: Vec<i64> = (0..n as i64).map(|i| i * 3_000_000_007 - 17).collect();
    let yi: Vec<i64> = (0..n as i64).map(|i| i64::MAX - i * 1_000_003).collect();
    let wanti = xi
        .iter()
        .zip(&yi)
        .fold(0i64, |a, (p, q)| a.wrapping_add(p.wrapping_mul(*q)));
    let mut outi = [0i64];
    dot::i64::launch_with(
        &dev,
        &split.config,
        &split.tasks,
        n as u32,
        &xi,
        &yi,
        &mut outi,
    )
    .unwrap();
    assert_eq!(outi[0], wanti);
    // The plain function (debug builds check its arithmetic, as Rust's do).
    let small: Vec<i64> = (0..100).map(|i| i - 50).collect();
    let mut plain = [0i64];
    dot(0, 100, &small, &small, &mut plain);
    assert_eq!(plain[0], small.iter().map(|v| v * v).sum::<i64>());
}

#[test]
fn min_plus_instances_match_a_plain_loop() {
    let (ptr, src) = macro_common::skewed_graph(400, 11);
    let n = ptr.len() - 1;
    let m = src.len();
    // u32: unreached vertices hold u32::MAX and stay unreached through it.
    let w: Vec<u32> = (0..m as u32).map(|e| e % 13 + 1).collect();
    let dist: Vec<u32> = (0..n as u32)
        .map(|v| if v % 3 == 0 { u32::MAX } else { v % 50 })
        .collect();
    let want = min_plus_reference(&ptr, &src, &w, &dist, u32::MAX);
    let mut next = vec![0u32; n];
    min_plus::u32::launch(&Device::cpu(), n, &ptr, &src, &w, &dist, &mut next).unwrap();
    assert_eq!(next, want);
    let mut plain = vec![0u32; n];
    for v in 0..n {
        min_plus(v, &ptr, &src, &w, &dist, &mut plain);
    }
    assert_eq!(plain, want);
    // f32 and f64, with `MAX` for unreached.
    let wf: Vec<f64> = w.iter().map(|&v| v as f64 * 0.5).collect();
    let df: Vec<f64> = dist
        .iter()
        .map(|&d| if d == u32::MAX { f64::MAX } else { d as f64 })
        .collect();
    let want = min_plus_reference(&ptr, &src, &wf, &df, f64::MAX);
    let mut next = vec![0.0f64; n];
    min_plus::f64::launch(&Device::cpu(), n, &ptr, &src, &wf, &df, &mut next).unwrap();
    assert_eq!(next, want);
    let wf32: Vec<f32> = wf.iter().map(|&v| v as f32).collect();
    let df32: Vec<f32> = df
        .iter()
        .map(|&d| if d == f64::MAX { f32::MAX } else { d as f32 })
        .collect();
    let want32 = min_plus_reference(&ptr, &src, &wf32, &df32, f32::MAX);
    let mut next32 = vec![0.0f32; n];
    min_plus::f32::launch(&Device::cpu(), n, &ptr, &src, &wf32, &df32, &mut next32).unwrap();
    assert_eq!(next32, want32);
}

#[test]
fn two_parameters_give_every_combination() {
    let (ptr, col, val) = matrix(120, 90);
    let x = dyadic(90, 4);
    let want = spmv_reference(&ptr, &col, &val, &x);
    let n = ptr.len() - 1;
    let ptr64: Vec<u64> = ptr.iter().map(|&p| p as u64).collect();
    let col64: Vec<u64> = col.iter().map(|&c| c as u64).collect();
    let (val32, x32): (Vec<f32>, Vec<f32>) = (
        val.iter().map(|&v| v as f32).collect(),
        x.iter().map(|&v| v as f32).collect(),
    );
    let want32: Vec<f32> = want.iter().map(|&v| v as f32).collect();
    let cpu = Device::cpu();
    let mut y = vec![f64::NAN; n];
    gather::f64_u32::launch(&cpu, n, &ptr, &col, &val, &x, &mut y).unwrap();
    assert_eq!(y, want);
    let mut y = vec![f64::NAN; n];
    gather::f64_u64::launch(&cpu, n, &ptr64, &col64, &val, &x, &mut y).unwrap();
    assert_eq!(y, want);
    let mut y = vec![f32::NAN; n];
    gather::f32_u32::launch(&cpu, n, &ptr, &col, &val32, &x32, &mut y).unwrap();
    assert_eq!(y, want32);
    let mut y = vec![f32::NAN; n];
    gather::f32_u64::launch(&cpu, n, &ptr64, &col64, &val32, &x32, &mut y).unwrap();
    assert_eq!(y, want32);
    // A `u64` index array gathers as a `u32` one does.
    assert_eq!(gather::f32_u64::GATHERED, Some("x"));
}

#[test]
fn maps_over_every_kind_of_element() {
    let n = 37;
    let pick: Vec<bool> = (0..n).map(|i| i % 3 == 1).collect();
    let cpu = Device::cpu();
    let (a, b): (Vec<u8>, Vec<u8>) = (
        (0..n as u8).collect(),
        (0..n as u8).map(|i| 200 - i).collect(),
    );
    let mut out = vec![0u8; n];
    select::u8::launch(&cpu, n, &pick, &a, &b, &mut out).unwrap();
    let want: Vec<u8> = (0..n).map(|i| if pick[i] { a[i] } else { b[i] }).collect();
    assert_eq!(out, want);
    let (a, b) = (vec![true; n], vec![false; n]);
    let mut out = vec![false; n];
    select::bool::launch(&cpu, n, &pick, &a, &b, &mut out).unwrap();
    assert_eq!(out, pick);
    let (a, b): (Vec<i32>, Vec<i32>) = ((0..n as i32).collect(), vec![-1; n]);
    let mut out = vec![0i32; n];
    select::i32::launch(&cpu, n, &pick, &a, &b, &mut out).unwrap();
    assert_eq!(
        out,
        (0..n as i32)
            .map(|i| if pick[i as usize] { i } else { -1 })
            .collect::<Vec<_>>()
    );
    let x: Vec<f64> = dyadic(n, 0);
    let mut y = vec![0.0f64; n];
    scaled::scale::f64::launch(&cpu, n, &x, &mut y).unwrap();
    assert_eq!(y, x.iter().map(|v| v * 3.0).collect::<Vec<_>>());
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let mut y32 = vec![0.0f32; n];
    scaled::scale::f32::launch(&cpu, n, &x32, &mut y32).unwrap();
    assert_eq!(y32, x32.iter().map(|v| v * 3.0).collect::<Vec<_>>());
}

#[test]
fn each_instance_is_the_kernel_written_for_its_types() {
    assert_eq!(spmv::f32::SPEC.name, "spmv_f32");
    assert_eq!(spmv::f64::SPEC.name, "spmv_f64");
    assert_eq!(spmv::f32::SPEC.acc, AccType::Scalar(ScalarType::F32));
    assert_eq!(spmv::f64::SPEC.acc, AccType::Scalar(ScalarType::F64));
    assert_eq!(dot::i64::SPEC.acc, AccType::Scalar(ScalarType::I64));
    assert_eq!(min_plus::u32::SPEC.params[2].ty, ScalarType::U32);
    assert_eq!(gather::f64_u64::SPEC.name, "gather_f64_u64");
    assert_eq!(gather::f64_u64::SPEC.params[0].ty, ScalarType::U64);
    assert_eq!(gather::f64_u64::SPEC.params[2].ty, ScalarType::F64);
    assert!(spmv::f32::CUDA_SOURCE.contains("namespace wf_spmv_f32 {"));
    assert!(spmv::f32::CUDA_SOURCE.contains("typedef float acc_t;"));
    assert!(!spmv::f32::CUDA_SOURCE.contains("double"));
    assert!(spmv::f64::CUDA_SOURCE.contains("typedef double acc_t;"));
    assert_eq!(spmv::f64::GATHERED, Some("x"));
    // A launch error names the instance's kernel.
    let err = spmv::f64::launch(
        &Device::cpu(),
        2,
        &[0u32, 1, 2],
        &[0u32, 5],
        &[1.0, 1.0],
        &[1.0, 1.0],
        &mut [0.0; 2],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("spmv_f64"), "{err}");
}

#[test]
fn a_throttled_generic_kernel_throttles_each_instance() {
    let (ptr, col, val) = matrix(500, 300);
    let x = dyadic(300, 6);
    let want = spmv_reference(&ptr, &col, &val, &x);
    let n = ptr.len() - 1;
    let dev = Device::cpu();
    let opts = spmv::f64::throttle_options().unwrap();
    let mut t = spmv::f64::throttle(&dev, &opts, n, x.len(), &ptr, &col, &val).unwrap();
    let mut y = vec![f64::NAN; n];
    t.launch(&x, &mut y[..]).unwrap();
    assert_eq!(y, want);
    let (val32, x32): (Vec<f32>, Vec<f32>) = (
        val.iter().map(|&v| v as f32).collect(),
        x.iter().map(|&v| v as f32).collect(),
    );
    let opts = spmv::f32::throttle_options().unwrap();
    let mut t = spmv::f32::throttle(&dev, &opts, n, x32.len(), &ptr, &col, &val32).unwrap();
    let mut y32 = vec![f32::NAN; n];
    t.launch(&x32, &mut y32[..]).unwrap();
    assert_eq!(y32, want.iter().map(|&v| v as f32).collect::<Vec<_>>());
    // The attribute's arguments hold for every instance.
    assert_eq!(
        spmv::f32::throttle_options().unwrap().partitioner,
        spmv::f64::throttle_options().unwrap().partitioner
    );
}

#[test]
fn a_generic_push_kernel_updates_shared_arrays_of_each_type() {
    let (ptr, dst) = macro_common::skewed_graph(300, 5);
    let n = ptr.len() - 1;
    let w: Vec<u32> = (0..dst.len() as u32).map(|e| (e * 37) % 101).collect();
    let mut want = vec![u32::MAX; n];
    for e in 0..dst.len() {
        want[dst[e] as usize] = want[dst[e] as usize].min(w[e]);
    }
    let cpu = Device::cpu();
    let out = cpu.worklist(n, dst.len()).unwrap();
    let mut best = vec![u32::MAX; n];
    lower_heads::u32::launch(&cpu, n, &ptr, &dst, &w, &mut best, &out).unwrap();
    assert_eq!(best, want);
    let wf: Vec<f64> = w.iter().map(|&v| v as f64 * 0.5).collect();
    let mut bestf = vec![f64::INFINITY; n];
    let out = cpu.worklist(n, dst.len()).unwrap();
    lower_heads::f64::launch(&cpu, n, &ptr, &dst, &wf, &mut bestf, &out).unwrap();
    let wantf: Vec<f64> = want
        .iter()
        .map(|&v| {
            if v == u32::MAX {
                f64::INFINITY
            } else {
                v as f64 * 0.5
            }
        })
        .collect();
    assert_eq!(bestf, wantf);
    // Every vertex with an in-edge was lowered from its start, so pushed (the
    // list holds a push per edge: none spilled).
    let mut pushed = out.to_vec().unwrap();
    pushed.sort_unstable();
    pushed.dedup();
    let heads: Vec<u32> = (0..n as u32)
        .filter(|&v| want[v as usize] != u32::MAX)
        .collect();
    assert_eq!(pushed, heads);
}

//! Folds of several values: the CPU twin of tuple kernels against plain
//! loops, whole and over split tasks.
// The plain loops index by task and edge as the kernels do.
#![allow(clippy::needless_range_loop)]

mod macro_common;
mod tuple_common;

use macro_common::{graph, skewed_graph, task_lists};
use tuple_common::*;
use warpfit::prelude::*;

#[test]
fn argmin_with_a_tie_break_matches_a_plain_loop() {
    let (ptr, _) = skewed_graph(300, 7);
    let w = tied_weights(*ptr.last().unwrap() as usize);
    let want = lightest_reference(&ptr, &w);
    let n = ptr.len() - 1;
    let mut plain = (vec![0.0f32; n], vec![0u32; n]);
    for v in 0..n {
        lightest(v, &ptr, &w, &mut plain.0, &mut plain.1);
    }
    assert_eq!(plain, want);
    let (mut bw, mut be) = (vec![f32::NAN; n], vec![0u32; n]);
    lightest::launch(&Device::cpu(), n, &ptr, &w, &mut bw, &mut be).unwrap();
    assert_eq!((bw, be), want);
    let (mut bw, mut be) = (vec![f32::NAN; n], vec![0u32; n]);
    lightest_fn::launch(&Device::cpu(), n, &ptr, &w, &mut bw, &mut be).unwrap();
    assert_eq!((bw, be), want);
}

#[test]
fn tuple_folds_agree_over_split_tasks() {
    let (ptr, src) = graph();
    let n = ptr.len() - 1;
    let w = tied_weights(src.len());
    let want = lightest_reference(&ptr, &w);
    for list in task_lists(&ptr) {
        let (mut bw, mut be) = (vec![f32::NAN; n], vec![0u32; n]);
        lightest::launch(&Device::cpu(), &list, &ptr, &w, &mut bw, &mut be).unwrap();
        assert_eq!((bw, be), want, "{list:?}");
        let (mut bw, mut be) = (vec![f32::NAN; n], vec![0u32; n]);
        lightest_fn::launch(&Device::cpu(), &list, &ptr, &w, &mut bw, &mut be).unwrap();
        assert_eq!((bw, be), want, "{list:?}");
    }
}

#[test]
fn moments_match_a_plain_loop() {
    let (ptr, src) = skewed_graph(200, 3);
    let n = ptr.len() - 1;
    // Dyadic values: every order of the sums is exact.
    let x: Vec<f64> = (0..n).map(|i| (i % 9) as f64 * 0.25 - 1.0).collect();
    let w: Vec<f64> = (0..src.len()).map(|e| (e % 3) as f64 * 0.5).collect();
    let mut want = (vec![0u32; n], vec![0.0; n], vec![0.0; n]);
    for v in 0..n {
        let (mut sw, mut swx) = (0.0, 0.0);
        for e in ptr[v] as usize..ptr[v + 1] as usize {
            let xv = x[src[e] as usize];
            want.0[v] += 1;
            want.1[v] += xv;
            sw += w[e];
            swx += w[e] * xv;
        }
        want.2[v] = if sw > 0.0 { swx / sw } else { 0.0 };
    }
    for list in [
        TaskList::from_ptr(&ptr).unwrap(),
        TaskList::chunked(&ptr, 5).unwrap(),
    ] {
        let mut got = (vec![0u32; n], vec![0.0; n], vec![0.0; n]);
        moments::launch(
            &Device::cpu(),
            &list,
            &ptr,
            &src,
            &x,
            &w,
            &mut got.0,
            &mut got.1,
            &mut got.2,
        )
        .unwrap();
        assert_eq!(got, want);
    }
}

#[test]
fn a_one_tuple_is_the_scalar_fold() {
    let (ptr, col) = skewed_graph(100, 5);
    let n = ptr.len() - 1;
    let val: Vec<f32> = (0..col.len()).map(|e| (e % 4) as f32 * 0.5).collect();
    let x: Vec<f32> = (0..n).map(|i| (i % 3) as f32).collect();
    let mut want = vec![0.0f32; n];
    for (r, y) in want.iter_mut().enumerate() {
        for k in ptr[r] as usize..ptr[r + 1] as usize {
            *y += val[k] * x[col[k] as usize];
        }
    }
    let mut y = vec![f32::NAN; n];
    spmv_1::launch(&Device::cpu(), n, &ptr, &col, &val, &x, &mut y).unwrap();
    assert_eq!(y, want);
}

#[test]
fn eight_mixed_elements_fold_each_by_its_own_operator() {
    let (ptr, src) = skewed_graph(150, 11);
    let n = ptr.len() - 1;
    let x: Vec<i64> = (0..n as i64).map(|i| (i * 37) % 101 - 50).collect();
    let f: Vec<f32> = (0..src.len()).map(|e| (e % 8) as f32 * 0.125).collect();
    type Eight = (i64, i64, u32, bool, f32, u64, u8, f64);
    let want: Vec<Eight> = (0..n)
        .map(|v| {
            let mut a: Eight = (i64::MAX, i64::MIN, 0, false, 0.0, 0, u8::MAX, 1.0);
            for e in ptr[v] as usize..ptr[v + 1] as usize {
                let s = src[e] as usize;
                a = (
                    a.0.min(x[s]),
                    a.1.max(x[s]),
                    a.2 | 1 << (s % 32),
                    a.3 | (x[s] < 0),
                    a.4 + f[e],
                    a.5 ^ x[s] as u64,
                    a.6.min((s % 200) as u8),
                    a.7 * if f[e] > 0.5 { 2.0 } else { 0.5 },
                );
            }
            a
        })
        .collect();
    let mut o = (
        vec![0i64; n],
        vec![0i64; n],
        vec![0u32; n],
        vec![false; n],
        vec![0f32; n],
        vec![0u64; n],
        vec![0u8; n],
        vec![0f64; n],
    );
    eight::launch(
        &Device::cpu(),
        n,
        &ptr,
        &src,
        &x,
        &f,
        &mut o.0,
        &mut o.1,
        &mut o.2,
        &mut o.3,
        &mut o.4,
        &mut o.5,
        &mut o.6,
        &mut o.7,
    )
    .unwrap();
    for v in 0..n {
        let got = (
            o.0[v], o.1[v], o.2[v], o.3[v], o.4[v], o.5[v], o.6[v], o.7[v],
        );
        assert_eq!(got, want[v], "vertex {v}");
    }
}

#[test]
fn prologue_tuples_travel_to_the_epilogue() {
    let (ptr, _) = graph();
    let n = ptr.len() - 1;
    let w = tied_weights(*ptr.last().unwrap() as usize);
    let (mut y, mut pick) = (vec![0.0f32; n], vec![0u32; n]);
    carried::launch(&Device::cpu(), n, &ptr, &w, 2.0, &mut y, &mut pick).unwrap();
    for v in 0..n {
        let range = ptr[v] as usize..ptr[v + 1] as usize;
        let top = w[range.clone()].iter().fold(0.0f32, |a, &b| a.max(b));
        let sign = if v % 2 == 0 { 2.0 } else { -2.0 };
        assert_eq!(y[v], top * sign, "vertex {v}");
        assert_eq!(pick[v], if v % 2 == 0 { 1 } else { 2 } + range.len() as u32);
    }
}

#[test]
fn tuple_accumulators_are_described_to_the_device_layer() {
    use warpfit::__private::{AccType, ScalarType};
    assert_eq!(
        lightest::SPEC.acc,
        AccType::Tuple(&[ScalarType::F32, ScalarType::U32])
    );
    assert_eq!(spmv_1::SPEC.acc, AccType::Tuple(&[ScalarType::F32]));
    // Nested layout: each tail tuple aligned to its widest element.
    assert_eq!(eight::SPEC.acc.size(), 64);
    assert!(lightest::CUDA_SOURCE.contains("typedef warpfit::tuple<float, uint32_t> acc_t;"));
    assert!(lightest::CUDA_SOURCE.contains("static_assert(sizeof(acc_t) == 8"));
}

#[test]
fn throttled_tuple_handles_equal_plain_loops_on_the_cpu() {
    use warpfit::runtime::gen;
    let dev = Device::cpu();
    let a = gen::rmat(9, 8, 2).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let (ptr, col) = (a.row_ptr(), a.col_idx());
    let val = macro_common::quarters(a.nnz(), 3);
    let x = macro_common::quarters(m, 9);
    let mut want = (
        vec![0f32; n],
        vec![0f32; n],
        vec![f32::INFINITY; n],
        vec![u32::MAX; n],
    );
    for r in 0..n {
        for k in ptr[r] as usize..ptr[r + 1] as usize {
            let c = col[k] as usize;
            want.0[r] += val[k] * x[c];
            want.1[r] += val[k];
            let d = x[c] + val[k];
            if d < want.2[r] || (d == want.2[r] && (c as u32) < want.3[r]) {
                want.2[r] = d;
                want.3[r] = c as u32;
            }
        }
    }
    for policy in ThrottlePolicy::ALL {
        let opts = ThrottleOptions::default().with_policy(policy);
        let mut t = gather_pair::throttle(&dev, &opts, n, m, ptr, col, &val).unwrap();
        let (mut y, mut s) = (vec![f32::NAN; n], vec![f32::NAN; n]);
        t.launch(&x, &mut y[..], &mut s[..]).unwrap();
        assert_eq!((&y, &s), (&want.0, &want.1), "{policy}");
        // `nearest` returns column ids, which a remapped plan renames.
        if policy == ThrottlePolicy::OrgR {
            let e = nearest::throttle(&dev, &opts, n, m, ptr, col, &val).unwrap_err();
            assert!(e.to_string().contains("values of `col`"), "{e}");
            continue;
        }
        let mut t = nearest::throttle(&dev, &opts, n, m, ptr, col, &val).unwrap();
        let (mut d, mut at) = (vec![f32::NAN; n], vec![0u32; n]);
        t.launch(&x, &mut d[..], &mut at[..]).unwrap();
        assert_eq!((&d, &at), (&want.2, &want.3), "{policy}");
    }
}

#[test]
fn faults_in_tuple_folds_are_errors_naming_the_array() {
    // `w` one short: the last row's last edge reads past it.
    let (ptr, _) = graph();
    let n = ptr.len() - 1;
    let w = tied_weights(*ptr.last().unwrap() as usize - 1);
    let (mut bw, mut be) = (vec![0.0f32; n], vec![0u32; n]);
    let e = lightest::launch(&Device::cpu(), n, &ptr, &w, &mut bw, &mut be).unwrap_err();
    assert!(e.to_string().contains("`w`"), "{e}");
    let e = lightest_fn::launch(&Device::cpu(), n, &ptr, &w, &mut bw, &mut be).unwrap_err();
    assert!(e.to_string().contains("`w`"), "{e}");
}

//! 2-D kernels (`#[nested_reduce(columns = k)]`) on the CPU: each twin
//! against a plain loop, for column counts that are and are not multiples
//! of a warp, the plain function as written, the launch's errors, and the
//! apps' `spmm` and `sparse_layer`.
// The plain loops index by row, column and edge as the kernels do.
#![allow(clippy::needless_range_loop)]

mod columns_common;

use columns_common::*;
use warpfit::prelude::*;

const COLUMN_COUNTS: [usize; 6] = [1, 3, 8, 32, 33, 150];

#[test]
fn spmm_matches_a_plain_loop_for_every_column_count() {
    let (ptr, col, val) = matrix(200, 90);
    let n = ptr.len() - 1;
    for k in COLUMN_COUNTS {
        let x = dense(90, k, k);
        let want = spmm_reference(&ptr, &col, &val, &x, k);
        let mut y = vec![f64::NAN; n * k];
        spmm::f64::launch(&Device::cpu(), n, &ptr, &col, &val, &x, k as u32, &mut y).unwrap();
        assert_eq!(y, want, "k = {k}");
        let mut y32 = vec![f32::NAN; n * k];
        let (val32, x32) = (f32s(&val), f32s(&x));
        spmm::f32::launch(
            &Device::cpu(),
            n,
            &ptr,
            &col,
            &val32,
            &x32,
            k as u32,
            &mut y32,
        )
        .unwrap();
        assert_eq!(y32, f32s(&want), "k = {k}");
        // The apps' kernel is the same.
        let mut y_app = vec![f32::NAN; n * k];
        warpfit::apps::spmm::f32::launch(
            &Device::cpu(),
            n,
            &ptr,
            &col,
            &val32,
            &x32,
            k as u32,
            &mut y_app,
        )
        .unwrap();
        assert_eq!(y_app, y32, "k = {k}");
    }
}

#[test]
fn the_plain_function_computes_one_element() {
    let (ptr, col, val) = matrix(40, 30);
    let k = 5;
    let x = dense(30, k, 1);
    let want = spmm_reference(&ptr, &col, &val, &x, k);
    let mut y = vec![f64::NAN; 40 * k];
    for row in 0..40 {
        for j in 0..k {
            spmm(row, j, &ptr, &col, &val, &x, k as u32, &mut y);
        }
    }
    assert_eq!(y, want);
}

#[test]
fn a_semiring_a_tuple_fold_and_a_per_element_map() {
    let (ptr, col, val) = matrix(120, 50);
    let n = ptr.len() - 1;
    for k in [1usize, 7, 40] {
        let (w, x) = (f32s(&val), f32s(&dense(50, k, 2)));
        // (max, +), the count a u64.
        let mut out = vec![0.0f32; n * k];
        max_plus_columns::launch(&Device::cpu(), n, &ptr, &col, &w, &x, k as u64, &mut out)
            .unwrap();
        for r in 0..n {
            for c in 0..k {
                let want = (ptr[r] as usize..ptr[r + 1] as usize)
                    .map(|e| w[e] + x[col[e] as usize * k + c])
                    .fold(f32::NEG_INFINITY, f32::max);
                assert_eq!(out[r * k + c], want, "k = {k}, ({r}, {c})");
            }
        }
        // A map whose load of `w[e]` runs only for even columns.
        let mut out = vec![1.0f32; n * k];
        masked_columns::launch(&Device::cpu(), n, &ptr, &col, &w, &x, k as u32, &mut out).unwrap();
        for r in 0..n {
            for c in 0..k {
                let want: f32 = (ptr[r] as usize..ptr[r + 1] as usize)
                    .filter(|&e| col[e] % 2 == 0)
                    .map(|e| w[e] * x[col[e] as usize * k + c])
                    .sum();
                assert_eq!(out[r * k + c], want, "masked k = {k}, ({r}, {c})");
            }
        }
        // The argmax, ties to the lower edge, floored per column.
        let floor: Vec<f32> = (0..k).map(|c| c as f32 - 3.0).collect();
        let (mut best, mut edge) = (vec![0.0f32; n * k], vec![0u32; n * k]);
        argmax_columns::launch(
            &Device::cpu(),
            n,
            &ptr,
            &col,
            &w,
            &x,
            &floor,
            k as u32,
            &mut best,
            &mut edge,
        )
        .unwrap();
        for r in 0..n {
            for c in 0..k {
                let (mut b, mut e) = (f32::NEG_INFINITY, u32::MAX);
                for i in ptr[r] as usize..ptr[r + 1] as usize {
                    let v = w[i] * x[col[i] as usize * k + c];
                    if v > b {
                        (b, e) = (v, i as u32);
                    }
                }
                assert_eq!(best[r * k + c], b.max(floor[c]), "k = {k}, ({r}, {c})");
                assert_eq!(edge[r * k + c], e, "k = {k}, ({r}, {c})");
            }
        }
        // A map over the dense matrix, added onto the output.
        let a = f32s(&dense(n, k, 3));
        let s: Vec<f32> = (0..k).map(|c| 0.5 * c as f32).collect();
        let mut out = vec![1.0f32; n * k];
        scale_columns::launch(&Device::cpu(), n, &a, &s, k as u32, &mut out).unwrap();
        for i in 0..n * k {
            assert_eq!(out[i], 1.0 + a[i] * s[i % k]);
        }
    }
}

#[test]
fn the_sparse_layer_adds_the_bias_and_applies_relu() {
    let (ptr, col, val) = matrix(64, 48);
    let n = ptr.len() - 1;
    let k = 10;
    let (w, x) = (f32s(&val), f32s(&dense(48, k, 5)));
    let bias: Vec<f32> = (0..n).map(|r| (r % 5) as f32 - 2.0).collect();
    let want = spmm_reference(&ptr, &col, &val, &dense(48, k, 5), k);
    for relu in [false, true] {
        let mut y = vec![f32::NAN; n * k];
        warpfit::apps::sparse_layer::launch(
            &Device::cpu(),
            n,
            &ptr,
            &col,
            &w,
            &bias,
            &x,
            k as u32,
            relu,
            &mut y,
        )
        .unwrap();
        for r in 0..n {
            for j in 0..k {
                let v = want[r * k + j] as f32 + bias[r];
                let v = if relu { v.max(0.0) } else { v };
                assert_eq!(y[r * k + j], v, "({r}, {j}) relu {relu}");
            }
        }
    }
}

#[test]
fn launch_errors_name_the_problem() {
    let (ptr, col, val) = matrix(20, 10);
    let n = ptr.len() - 1;
    let k = 4;
    let x = dense(10, k, 0);
    // x one row short: the gather past its end is a fault naming `x`.
    let mut y = vec![0.0f64; n * k];
    let e = spmm::f64::launch(
        &Device::cpu(),
        n,
        &ptr,
        &col,
        &val,
        &x[..9 * k],
        k as u32,
        &mut y,
    )
    .unwrap_err();
    assert!(e.to_string().contains("`x`"), "{e}");
    // y too short for rows × columns: the first element past it.
    let mut short = vec![0.0f64; n * k - 1];
    let e = spmm::f64::launch(
        &Device::cpu(),
        n,
        &ptr,
        &col,
        &val,
        &x,
        k as u32,
        &mut short,
    )
    .unwrap_err();
    assert!(e.to_string().contains("`y`"), "{e}");
    // A task list is refused: a 2-D kernel runs over a row count.
    let list = TaskList::from_ptr(&ptr).unwrap();
    let e = spmm::f64::launch(
        &Device::cpu(),
        &list,
        &ptr,
        &col,
        &val,
        &x,
        k as u32,
        &mut y,
    )
    .unwrap_err();
    assert!(e.to_string().contains("row count"), "{e}");
    // Rows × columns past usize.
    let e =
        spmm::f64::launch(&Device::cpu(), usize::MAX, &ptr, &col, &val, &x, 2, &mut y).unwrap_err();
    assert!(e.to_string().contains("more tasks"), "{e}");
    // No columns: nothing runs, nothing is written.
    let mut untouched = vec![7.0f64; 3];
    spmm::f64::launch(&Device::cpu(), n, &ptr, &col, &val, &x, 0, &mut untouched).unwrap();
    assert_eq!(untouched, [7.0; 3]);
}

#[test]
fn prepared_launches_run_over_rows_too() {
    let dev = Device::cpu();
    let (ptr, col, val) = matrix(90, 60);
    let n = ptr.len() - 1;
    let k = 33;
    let x = dense(60, k, 4);
    let want = spmm_reference(&ptr, &col, &val, &x, k);
    let (dp, dc) = (dev.upload(&ptr).unwrap(), dev.upload(&col).unwrap());
    let (dv, dx) = (dev.upload(&val).unwrap(), dev.upload(&x).unwrap());
    let dy = dev.upload(&vec![0.0f64; n * k]).unwrap();
    let run = spmm::f64::prepare(
        &dev,
        &LaunchConfig::default(),
        n,
        &dp,
        &dc,
        &dv,
        &dx,
        k as u32,
        &dy,
    )
    .unwrap();
    run.run().unwrap();
    run.check().unwrap();
    assert_eq!(dy.to_vec().unwrap(), want);
}

/// The plain loop of `max_plus_columns`: per (row, column) the largest
/// `w + dist`.
fn max_plus_reference((ptr, src, w): (&[u32], &[u32], &[f32]), dist: &[f32], n: usize) -> Vec<f32> {
    let rows = ptr.len() - 1;
    let mut out = vec![0.0; rows * n];
    for v in 0..rows {
        for c in 0..n {
            out[v * n + c] = (ptr[v] as usize..ptr[v + 1] as usize)
                .map(|e| w[e] + dist[src[e] as usize * n + c])
                .fold(f32::NEG_INFINITY, f32::max);
        }
    }
    out
}

#[test]
fn throttled_2d_kernels_match_a_plain_loop_under_every_policy() {
    let (ptr, col, val) = matrix(300, 120);
    let n = ptr.len() - 1;
    let cpu = Device::cpu();
    for k in [1usize, 5, 33] {
        let x = dense(120, k, k);
        let want = spmm_reference(&ptr, &col, &val, &x, k);
        for policy in ["auto", "org", "cf"] {
            let options = spmm::f64::throttle_options()
                .unwrap()
                .with_policy(policy.parse().unwrap());
            let mut t =
                spmm::f64::throttle(&cpu, &options, n, 120, k as u32, &ptr, &col, &val).unwrap();
            for _ in 0..2 {
                let mut y = vec![f64::NAN; n * k];
                t.launch(&x, k as u32, &mut y).unwrap();
                assert_eq!(y, want, "k = {k} {policy}");
            }
        }
    }
    let (w, dist) = (f32s(&val), f32s(&dense(120, 4, 3)));
    // No rows: nothing to run.
    let options = spmm::f64::throttle_options().unwrap();
    let mut t = spmm::f64::throttle(&cpu, &options, 0, 120, 4, &[0], &[], &[]).unwrap();
    t.launch(&dense(120, 4, 0), 4, &mut []).unwrap();
    // Rows with no entries: every output the fold's start.
    let mut t = spmm::f64::throttle(&cpu, &options, 6, 120, 4, &[0; 7], &[], &[]).unwrap();
    let mut y = vec![f64::NAN; 24];
    t.launch(&dense(120, 4, 0), 4, &mut y).unwrap();
    assert!(y.iter().all(|&v| v == 0.0), "{y:?}");
    let options = max_plus_columns::throttle_options().unwrap();
    let mut t = max_plus_columns::throttle(&cpu, &options, n, 120, 4, &ptr, &col, &w).unwrap();
    let mut out = vec![0.0f32; n * 4];
    t.launch(&dist, 4, &mut out).unwrap();
    assert_eq!(out, max_plus_reference((&ptr, &col, &w), &dist, 4));
}

#[test]
fn throttled_2d_kernels_refuse_what_they_do_not_run() {
    let (ptr, col, val) = matrix(50, 20);
    let n = ptr.len() - 1;
    let cpu = Device::cpu();
    let base = spmm::f64::throttle_options().unwrap();
    let make = |o: &ThrottleOptions, k: u32| {
        spmm::f64::throttle(&cpu, o, n, 20, k, &ptr, &col, &val).map(|_| ())
    };
    for (policy, why) in [
        ("cfq", "take CTE groups from a queue"),
        ("sjq", "take CTE groups from a queue"),
        ("sj", "SJ-tree"),
        ("org_r", "renumbers gathered elements"),
    ] {
        let e = make(&base.with_policy(policy.parse().unwrap()), 4)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("runs policies auto, org and cf") && e.contains(why),
            "{e}"
        );
    }
    let e = make(&base.with_exhaustive(true), 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("exhaustive"), "{e}");
    let e = make(&base.with_remap(true), 4).unwrap_err().to_string();
    assert!(e.contains("remap"), "{e}");
    let e = make(&base, 0).unwrap_err().to_string();
    assert!(e.contains("at least one column, got 0"), "{e}");
    let e = spmm::f64::throttle(&cpu, &base, usize::MAX / 2, 20, 4, &ptr, &col, &val)
        .unwrap_err()
        .to_string();
    assert!(e.contains("more elements than a launch can number"), "{e}");
    // A launch with another column count than the handle's plan.
    let mut t = spmm::f64::throttle(&cpu, &base, n, 20, 4, &ptr, &col, &val).unwrap();
    let x = dense(20, 5, 0);
    let mut y = vec![0.0; n * 5];
    let e = t.launch(&x, 5, &mut y).unwrap_err().to_string();
    assert!(
        e.contains("k = 5 columns, and the handle was made for 4"),
        "{e}"
    );
    // A fine array shorter than the range says: the launch's fault.
    let short = &val[..val.len() - 1];
    let mut t = spmm::f64::throttle(&cpu, &base, n, 20, 4, &ptr, &col, short).unwrap();
    let (x, mut y) = (dense(20, 4, 0), vec![0.0; n * 4]);
    let e = t.launch(&x, 4, &mut y).unwrap_err().to_string();
    assert!(e.contains("`val`"), "{e}");
}

/// Which 2-D kernels a launch of many columns may validate at each row's
/// end columns and then fold unchecked (`KernelSpec::checks_at_end_columns`):
/// those whose loads are the same for every column or at `base + j`, with a
/// reduce that cannot fault; not a `#[device_fn]` reduce, not a per-element
/// map, not a 1-D kernel.
#[test]
fn maps_whose_loads_their_end_columns_cover_are_validated() {
    for (spec, validated) in [
        (&spmm::f32::SPEC, true),
        (&spmm::f64::SPEC, true),
        (&argmax_columns::SPEC, true),
        (&masked_columns::SPEC, true),
        (&permuted_columns::SPEC, true),
        (&widths_columns::SPEC, true),
        (&warpfit::apps::sparse_layer::SPEC, true),
        (&warpfit::apps::spmm::f32::SPEC, true),
        (&max_plus_columns::SPEC, false),
        (&scale_columns::SPEC, false),
        (&warpfit::apps::spmv::f32::SPEC, false),
    ] {
        assert_eq!(spec.checks_at_end_columns, validated, "{}", spec.name);
    }
    // Their validations check the gathers' indices without loading where
    // the gathered values are only used as values.
    let leaves = "static constexpr bool leaf_gathers = true;";
    assert!(spmm::f32::SPEC.cuda_source.contains(leaves));
    assert!(warpfit::apps::sparse_layer::SPEC
        .cuda_source
        .contains(leaves));
    assert!(!max_plus_columns::SPEC.cuda_source.contains(leaves));
    assert!(!permuted_columns::SPEC.cuda_source.contains(leaves));
    assert!(!warpfit::apps::spmv::f32::SPEC.cuda_source.contains(leaves));
}

//! 2-D kernels (`columns = k`) on a CUDA GPU against their CPU twins: every
//! decomposition, column counts that are and are not multiples of a warp,
//! rows of very different lengths (hubs), a semiring, a tuple fold, a
//! per-element map, the apps' layer, prepared launches and faults. Needs a
//! CUDA GPU; skipped without one, unless `WARPFIT_REQUIRE_GPU=1`.

mod columns_common;
mod gpu_common;

use columns_common::*;
use gpu_common::gpu;
use warpfit::prelude::*;
use warpfit::{CacheSize, DevicePlan, ThrottleReport};

fn configs() -> Vec<LaunchConfig> {
    [
        Decomposition::Cte,
        Decomposition::Thread,
        Decomposition::SubWarp(4),
        Decomposition::SubWarp(32),
    ]
    .into_iter()
    .map(LaunchConfig::new)
    .collect()
}

/// `argmax_columns` over the pattern `(ptr, col)` with `k = floor.len()`
/// columns: the GPU's values and edges equal the CPU twin's.
fn argmax_matches_the_twin(
    dev: &Device,
    cfg: &LaunchConfig,
    (ptr, col): (&[u32], &[u32]),
    w: &[f32],
    x: &[f32],
    floor: &[f32],
    what: &str,
) {
    let (n, k) = (ptr.len() - 1, floor.len());
    let mut cpu = (vec![0.0f32; n * k], vec![0u32; n * k]);
    let mut gpu = (vec![1.0f32; n * k], vec![1u32; n * k]);
    for (device, (best, edge)) in [(&Device::cpu(), &mut cpu), (dev, &mut gpu)] {
        argmax_columns::launch_with(device, cfg, n, ptr, col, w, x, floor, k as u32, best, edge)
            .unwrap();
    }
    assert_eq!(cpu, gpu, "{what}");
}

#[test]
fn spmm_matches_the_twin_for_every_column_count_and_decomposition() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    // Rows of 0 to 6 entries, and a few hubs of thousands.
    let (ptr, col, val) = matrix_with(1500, 700, |r| if r % 500 == 7 { 3000 + r } else { r % 9 });
    let n = ptr.len() - 1;
    for k in [1usize, 2, 8, 31, 32, 33, 150, 256] {
        let x = dense(700, k, k);
        let want = spmm_reference(&ptr, &col, &val, &x, k);
        for cfg in configs() {
            let mut y = vec![f64::NAN; n * k];
            spmm::f64::launch_with(&dev, &cfg, n, &ptr, &col, &val, &x, k as u32, &mut y).unwrap();
            assert_eq!(y, want, "f64 k = {k} {cfg:?}");
            let (val32, x32) = (f32s(&val), f32s(&x));
            let (mut a, mut b) = (vec![0.0f32; n * k], vec![1.0f32; n * k]);
            spmm::f32::launch_with(&cpu, &cfg, n, &ptr, &col, &val32, &x32, k as u32, &mut a)
                .unwrap();
            spmm::f32::launch_with(&dev, &cfg, n, &ptr, &col, &val32, &x32, k as u32, &mut b)
                .unwrap();
            assert_eq!(a, b, "f32 k = {k} {cfg:?}");
        }
    }
}

#[test]
fn semirings_tuples_and_maps_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, col, val) = matrix(2000, 300);
    let n = ptr.len() - 1;
    for k in [3usize, 40, 150] {
        let (w, x) = (f32s(&val), f32s(&dense(300, k, 2)));
        for cfg in configs() {
            let (mut a, mut b) = (vec![0.0f32; n * k], vec![1.0f32; n * k]);
            max_plus_columns::launch_with(&cpu, &cfg, n, &ptr, &col, &w, &x, k as u64, &mut a)
                .unwrap();
            max_plus_columns::launch_with(&dev, &cfg, n, &ptr, &col, &w, &x, k as u64, &mut b)
                .unwrap();
            assert_eq!(a, b, "max-plus k = {k} {cfg:?}");
            let (mut a, mut b) = (vec![0.0f32; n * k], vec![1.0f32; n * k]);
            masked_columns::launch_with(&cpu, &cfg, n, &ptr, &col, &w, &x, k as u32, &mut a)
                .unwrap();
            masked_columns::launch_with(&dev, &cfg, n, &ptr, &col, &w, &x, k as u32, &mut b)
                .unwrap();
            assert_eq!(a, b, "masked k = {k} {cfg:?}");
            let floor: Vec<f32> = (0..k).map(|c| c as f32 - 3.0).collect();
            let what = format!("argmax k = {k} {cfg:?}");
            argmax_matches_the_twin(&dev, &cfg, (&ptr, &col), &w, &x, &floor, &what);
            let a_in = f32s(&dense(n, k, 3));
            let s: Vec<f32> = (0..k).map(|c| 0.5 * c as f32).collect();
            let (mut a, mut b) = (vec![1.0f32; n * k], vec![1.0f32; n * k]);
            scale_columns::launch_with(&cpu, &cfg, n, &a_in, &s, k as u32, &mut a).unwrap();
            scale_columns::launch_with(&dev, &cfg, n, &a_in, &s, k as u32, &mut b).unwrap();
            assert_eq!(a, b, "scale k = {k} {cfg:?}");
        }
    }
}

#[test]
fn the_sparse_layer_and_prepared_launches_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, col, val) = matrix(3000, 900);
    let n = ptr.len() - 1;
    let k = 150;
    let (w, x) = (f32s(&val), f32s(&dense(900, k, 5)));
    let bias: Vec<f32> = (0..n).map(|r| (r % 5) as f32 - 2.0).collect();
    for relu in [false, true] {
        let (mut a, mut b) = (vec![0.0f32; n * k], vec![1.0f32; n * k]);
        warpfit::apps::sparse_layer::launch(
            &cpu, n, &ptr, &col, &w, &bias, &x, k as u32, relu, &mut a,
        )
        .unwrap();
        warpfit::apps::sparse_layer::launch(
            &dev, n, &ptr, &col, &w, &bias, &x, k as u32, relu, &mut b,
        )
        .unwrap();
        assert_eq!(a, b, "relu {relu}");
    }
    // Prepared over device-resident arrays, run twice.
    let want = spmm_reference(&ptr, &col, &val, &dense(900, k, 5), k);
    let (dp, dc) = (dev.upload(&ptr).unwrap(), dev.upload(&col).unwrap());
    let (dv, dx) = (
        dev.upload(&val).unwrap(),
        dev.upload(&dense(900, k, 5)).unwrap(),
    );
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
    for _ in 0..2 {
        run.run().unwrap();
        run.check().unwrap();
        assert_eq!(dy.to_vec().unwrap(), want);
    }
}

#[test]
fn faults_are_the_twins() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, col, val) = matrix(400, 100);
    let n = ptr.len() - 1;
    let k = 40;
    let x = dense(100, k, 0);
    for cfg in configs() {
        // x one row short: the gather past its end names `x`.
        let mut y = vec![0.0f64; n * k];
        let short = &x[..99 * k];
        let e_cpu =
            spmm::f64::launch_with(&cpu, &cfg, n, &ptr, &col, &val, short, 40, &mut y).unwrap_err();
        let e_gpu =
            spmm::f64::launch_with(&dev, &cfg, n, &ptr, &col, &val, short, 40, &mut y).unwrap_err();
        assert!(e_cpu.to_string().contains("`x`"), "{e_cpu}");
        assert!(e_gpu.to_string().contains("`x`"), "{e_gpu}");
    }
}

/// `x` one element short of its last row, gathered at that row by one
/// entry: only the last column of one task reads past the end. The thread
/// folding it raises the lean fault flag and folds again with the full
/// record, so the error is the twin's word for word; with `x` whole the
/// result is the reference's. Column counts on both sides of a warp.
#[test]
fn a_gather_past_the_end_in_one_task_is_the_twins_fault() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, mut col, val) = matrix(400, 100);
    for c in col.iter_mut() {
        *c %= 99;
    }
    let hit = col.len() / 2;
    col[hit] = 99;
    let n = ptr.len() - 1;
    for k in [8usize, 15, 16, 40, 150] {
        let x = dense(100, k, k);
        let short = &x[..100 * k - 1];
        for cfg in configs() {
            let mut y = vec![0.0f64; n * k];
            let e_cpu =
                spmm::f64::launch_with(&cpu, &cfg, n, &ptr, &col, &val, short, k as u32, &mut y)
                    .unwrap_err();
            let e_gpu =
                spmm::f64::launch_with(&dev, &cfg, n, &ptr, &col, &val, short, k as u32, &mut y)
                    .unwrap_err();
            assert!(
                matches!(e_gpu, Error::IndexOutOfRange { index, len, .. }
                    if index == (100 * k - 1) as u64 && len == (100 * k - 1) as u64),
                "k = {k} {cfg:?}: {e_gpu}"
            );
            assert_eq!(e_cpu.to_string(), e_gpu.to_string(), "k = {k} {cfg:?}");
            spmm::f64::launch_with(&dev, &cfg, n, &ptr, &col, &val, &x, k as u32, &mut y).unwrap();
            assert_eq!(
                y,
                spmm_reference(&ptr, &col, &val, &x, k),
                "k = {k} {cfg:?}"
            );
        }
    }
}

/// A launch of 16 columns or more of a kernel whose loads its rows' end
/// columns cover runs the validation, then the unchecked fold (two columns
/// a thread) and the checked one (over a strided grid) behind its gate (the
/// shut one returns at once), unless its rows were cut for hubs; fewer
/// columns, or a kernel the rule refuses (a `#[device_fn]` reduce), run the
/// checked fold alone. Each is the reference, run twice from one
/// preparation (the gate is cleared before each run).
#[test]
fn launches_of_many_columns_validate_first_and_fold_unchecked() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let plain = |r: usize| r % 9;
    let hubs = |r: usize| if r % 700 == 3 { 5000 + r } else { r % 9 };
    let all = ["wf_validate_all", "wf_pair_all", "wf_recheck_all"];
    let cut = [
        "wf_validate_columns",
        "wf_pair_columns",
        "wf_recheck_columns",
        "wf_merge_columns",
    ];
    for (len, k, want_entries) in [
        (&plain as &dyn Fn(usize) -> usize, 64usize, &all[..]),
        (&plain, 150, &all[..]),
        (&plain, 33, &all[..]),
        (&plain, 8, &["wf_thread_all"][..]),
        (&hubs, 64, &cut[..]),
        // 3000 rows of 150 columns are more (row, column) items than the
        // GPU's thread slots: only the hubs are cut, and rows whose lengths
        // vary within every warp are not validated.
        (&hubs, 150, &["wf_thread_columns", "wf_merge_columns"][..]),
    ] {
        let (ptr, col, val) = matrix_with(3000, 1200, len);
        let n = ptr.len() - 1;
        let x = dense(1200, k, k);
        let want = spmm_reference(&ptr, &col, &val, &x, k);
        let (dp, dc, dv, dx) = (
            dev.upload(&ptr).unwrap(),
            dev.upload(&col).unwrap(),
            dev.upload(&val).unwrap(),
            dev.upload(&x).unwrap(),
        );
        let dy = dev.upload(&vec![f64::NAN; n * k]).unwrap();
        let cfg = LaunchConfig::default();
        let run = spmm::f64::prepare(&dev, &cfg, n, &dp, &dc, &dv, &dx, k as u32, &dy).unwrap();
        assert_eq!(run.entry_points(), want_entries, "k = {k}");
        for _ in 0..2 {
            run.run().unwrap();
            run.check().unwrap();
            assert_eq!(dy.to_vec().unwrap(), want, "k = {k}");
        }
    }
    // Through a permutation: validated with the gathers loaded (a gathered
    // value is an index); the twin's result, and a fault naming `x` where a
    // permuted row lies past its end.
    let (ptr, col, val) = matrix(2000, 300);
    let n = ptr.len() - 1;
    let k = 40;
    let perm: Vec<u32> = (0..300u32).map(|c| (c * 7 + 3) % 300).collect();
    let (w, x) = (f32s(&val), f32s(&dense(300, k, 4)));
    for bad in [false, true] {
        let mut perm = perm.clone();
        if bad {
            perm[col[col.len() / 3] as usize] = 300;
        }
        let (mut a, mut b) = (vec![0.0f32; n * k], vec![1.0f32; n * k]);
        let cfg = LaunchConfig::default();
        let r_cpu = permuted_columns::launch_with(
            &cpu, &cfg, n, &ptr, &col, &perm, &w, &x, k as u32, &mut a,
        );
        let r_gpu = permuted_columns::launch_with(
            &dev, &cfg, n, &ptr, &col, &perm, &w, &x, k as u32, &mut b,
        );
        match bad {
            false => {
                r_gpu.unwrap();
                r_cpu.unwrap();
                assert_eq!(a, b);
            }
            // Every column of several tasks reads past the end: the
            // first task to claim the record is any of them.
            true => {
                let (e_cpu, e_gpu) = (r_cpu.unwrap_err(), r_gpu.unwrap_err());
                assert!(e_cpu.to_string().contains("`x`"), "{e_cpu}");
                assert!(e_gpu.to_string().contains("`x`"), "{e_gpu}");
            }
        }
    }
    // A `#[device_fn]` reduce is not validated, and matches its twin.
    let (ptr, col, val) = matrix(2000, 300);
    let n = ptr.len() - 1;
    let k = 64;
    let (w, x) = (f32s(&val), f32s(&dense(300, k, 2)));
    let dy = dev.upload(&vec![0.0f32; n * k]).unwrap();
    let (dp, dc, dw, dx) = (
        dev.upload(&ptr).unwrap(),
        dev.upload(&col).unwrap(),
        dev.upload(&w).unwrap(),
        dev.upload(&x).unwrap(),
    );
    let cfg = LaunchConfig::default();
    let run = max_plus_columns::prepare(&dev, &cfg, n, &dp, &dc, &dw, &dx, k as u64, &dy).unwrap();
    assert_eq!(run.entry_points(), ["wf_thread_all"]);
    run.run().unwrap();
    run.check().unwrap();
    let mut a = vec![0.0f32; n * k];
    max_plus_columns::launch(&cpu, n, &ptr, &col, &w, &x, k as u64, &mut a).unwrap();
    assert_eq!(dy.to_vec().unwrap(), a);
}

#[test]
fn gathers_of_every_width_fold_unchecked_as_the_twin() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, col, _) = matrix(3000, 500);
    let n = ptr.len() - 1;
    for k in [8usize, 40, 64] {
        let m = 500 * k;
        let bytes: Vec<u8> = (0..m).map(|i| (i * 7 % 251) as u8).collect();
        let flags: Vec<bool> = (0..m).map(|i| i % 3 == 0).collect();
        let ints: Vec<i32> = (0..m).map(|i| (i * 13 % 100_003) as i32).collect();
        let words: Vec<u64> = (0..m).map(|i| (i as u64) << 33 | 5).collect();
        let want: Vec<u64> = (0..n * k)
            .map(|t| {
                let (r, j) = (t / k, t % k);
                (ptr[r] as usize..ptr[r + 1] as usize)
                    .map(|e| {
                        let at = col[e] as usize * k + j;
                        bytes[at] as u64 + flags[at] as u64 + ints[at] as u64 + words[at]
                    })
                    .sum()
            })
            .collect();
        let cfg = LaunchConfig::default();
        let mut twin = vec![0u64; n * k];
        widths_columns::launch_with(
            &cpu, &cfg, n, &ptr, &col, &bytes, &flags, &ints, &words, k as u32, &mut twin,
        )
        .unwrap();
        assert_eq!(twin, want, "k = {k}");
        let up = |v: &[u32]| dev.upload(v).unwrap();
        let (dp, dc) = (up(&ptr), up(&col));
        let (db, df) = (dev.upload(&bytes).unwrap(), dev.upload(&flags).unwrap());
        let (di, dw) = (dev.upload(&ints).unwrap(), dev.upload(&words).unwrap());
        let dy = dev.upload(&vec![u64::MAX; n * k]).unwrap();
        let run =
            widths_columns::prepare(&dev, &cfg, n, &dp, &dc, &db, &df, &di, &dw, k as u32, &dy)
                .unwrap();
        let validated = run.entry_points().contains(&"wf_pair_all");
        assert_eq!(validated, k >= 16, "k = {k}: {:?}", run.entry_points());
        run.run().unwrap();
        run.check().unwrap();
        assert_eq!(dy.to_vec().unwrap(), want, "k = {k}");
    }
}

#[test]
fn hub_rows_are_cut_into_pieces_and_merged_in_order() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    // 3000 rows of 0 to 8 entries, every 700th a hub of 5000 and more,
    // and an empty row after each hub.
    let len = |r: usize| match r % 700 {
        3 => 5000 + r,
        4 => 0,
        _ => r % 9,
    };
    let (ptr, col, val) = matrix_with(3000, 1200, len);
    let n = ptr.len() - 1;
    let (dp, dc, dv) = (
        dev.upload(&ptr).unwrap(),
        dev.upload(&col).unwrap(),
        dev.upload(&val).unwrap(),
    );
    for k in [2usize, 33, 64, 150] {
        let x = dense(1200, k, k + 1);
        let want = spmm_reference(&ptr, &col, &val, &x, k);
        let dx = dev.upload(&x).unwrap();
        // Auto cuts the hubs (its piece length depends on the GPU's size);
        // a configured bound cuts at that length, even every entry apart;
        // `Never` runs every row whole. Each is the reference exactly (the
        // values are dyadic), run twice from one preparation.
        for (split, chosen) in [
            (Split::Auto, true),
            (Split::Max(1), false),
            (Split::Max(100), false),
            (Split::Never, false),
        ] {
            let cfg = LaunchConfig {
                split,
                ..LaunchConfig::default()
            };
            let dy = dev.upload(&vec![f64::NAN; n * k]).unwrap();
            let run = spmm::f64::prepare(&dev, &cfg, n, &dp, &dc, &dv, &dx, k as u32, &dy).unwrap();
            let cut = matches!(run.chosen_split(), Some(Split::Max(_)));
            assert_eq!(cut, chosen, "k = {k} {split:?}");
            for _ in 0..2 {
                run.run().unwrap();
                run.check().unwrap();
                assert_eq!(dy.to_vec().unwrap(), want, "k = {k} {split:?}");
            }
        }
        // Ties between pieces go to the lower edge, as in the twin's order.
        let (w, x32) = (f32s(&val), f32s(&x));
        let floor = vec![f32::NEG_INFINITY; k];
        let cfg = LaunchConfig::default();
        let what = format!("argmax k = {k}");
        argmax_matches_the_twin(&dev, &cfg, (&ptr, &col), &w, &x32, &floor, &what);
    }
    // A gather past `x`'s end inside a hub's piece is the twin's fault.
    let k = 40;
    let x = dense(1200, k, 0);
    let short = &x[..1100 * k];
    let mut y = vec![0.0f64; n * k];
    let cfg = LaunchConfig::default();
    let e_cpu =
        spmm::f64::launch_with(&cpu, &cfg, n, &ptr, &col, &val, short, 40, &mut y).unwrap_err();
    let e_gpu =
        spmm::f64::launch_with(&dev, &cfg, n, &ptr, &col, &val, short, 40, &mut y).unwrap_err();
    assert!(e_cpu.to_string().contains("`x`"), "{e_cpu}");
    assert!(e_gpu.to_string().contains("`x`"), "{e_gpu}");
}

/// A throttled 2-D handle under `options` over the pattern, launched
/// twice (the second launch runs the prepared schedule), against the
/// exact reference; its report.
fn throttled_spmm_matches(
    dev: &Device,
    options: &ThrottleOptions,
    (ptr, col, val): (&[u32], &[u32], &[f64]),
    x_rows: usize,
    k: usize,
    pin: Option<DevicePlan>,
) -> ThrottleReport {
    let n = ptr.len() - 1;
    let x = dense(x_rows, k, k + 1);
    let want = spmm_reference(ptr, col, val, &x, k);
    let what = format!("k = {k} {:?} {pin:?}", options.policy);
    let mut t = spmm::f64::throttle(dev, options, n, x_rows, k as u32, ptr, col, val).unwrap();
    if let Some(plan) = pin {
        t.pin_device_plan(plan).unwrap();
    }
    for launch in 0..2 {
        let mut y = vec![f64::NAN; n * k];
        t.launch(&x, k as u32, &mut y).unwrap();
        assert_eq!(y, want, "{what}, launch {launch}");
    }
    t.report().clone()
}

#[test]
fn throttled_spmm_matches_the_reference_under_every_policy_and_plan() {
    let Some(dev) = gpu() else { return };
    // Rows of 0 to 8 entries and a few hubs; 900 rows of `x`.
    let (ptr, col, val) = matrix_with(1200, 900, |r| if r % 400 == 3 { 2500 + r } else { r % 9 });
    let shape = (&ptr[..], &col[..], &val[..]);
    // 8 KiB: a partition holds a few rows of `x` (each 8·k bytes).
    let small = ThrottleOptions::default()
        .with_cache(CacheSize::Bytes(8 << 10))
        .with_plan_cache(false);
    for k in [1usize, 8, 33, 150] {
        for policy in [
            ThrottlePolicy::Auto,
            ThrottlePolicy::Org,
            ThrottlePolicy::Cf,
        ] {
            let r = throttled_spmm_matches(&dev, &small.with_policy(policy), shape, 900, k, None);
            let what = format!("k = {k} {policy}: {r:?}");
            match policy {
                ThrottlePolicy::Auto => assert!(r.model.is_some(), "{what}"),
                p => assert_eq!(r.chosen, p, "{what}"),
            }
            if policy == ThrottlePolicy::Cf {
                // 900 rows of 8·k bytes over 8 KiB: the most blocks a
                // device plan makes (32) from k = 33 on.
                let budget = ((8 << 10) as f64 * small.safety) as usize;
                let want = 900usize.div_ceil((budget / (8 * k)).max(1));
                assert_eq!(r.partitions, want.clamp(2, 32), "{what}");
            }
        }
        for blocks in [2usize, 7, 32] {
            let pin = Some(DevicePlan::ColumnBlocks { k: blocks });
            let r = throttled_spmm_matches(&dev, &small, shape, 900, k, pin);
            assert_eq!(
                (r.chosen, r.partitions),
                (ThrottlePolicy::Cf, blocks),
                "{r:?}"
            );
        }
    }
    // No rows, and no rows of `x` either: nothing to run, under every policy.
    for policy in [
        ThrottlePolicy::Auto,
        ThrottlePolicy::Org,
        ThrottlePolicy::Cf,
    ] {
        for (x_rows, k) in [(900usize, 8usize), (0, 3)] {
            let opts = small.with_policy(policy);
            let what = format!("no rows, {x_rows} rows of x, k = {k}, {policy}");
            let mut t = spmm::f64::throttle(&dev, &opts, 0, x_rows, k as u32, &[0], &[], &[])
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let x = dense(x_rows, k, 0);
            let mut y: Vec<f64> = Vec::new();
            for _ in 0..2 {
                t.launch(&x, k as u32, &mut y)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            }
        }
        // Rows, but no entries in any of them: every output the fold's
        // start (zero), whatever the plan.
        for (rows, x_rows, k) in [(5usize, 900usize, 8usize), (40, 0, 3), (1, 2000, 150)] {
            let opts = small.with_policy(policy);
            let what = format!("{rows} empty rows, {x_rows} rows of x, k = {k}, {policy}");
            let ptr = vec![0u32; rows + 1];
            let mut t = spmm::f64::throttle(&dev, &opts, rows, x_rows, k as u32, &ptr, &[], &[])
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let x = dense(x_rows, k, 0);
            let mut y = vec![f64::NAN; rows * k];
            for _ in 0..2 {
                t.launch(&x, k as u32, &mut y)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(y.iter().all(|&v| v == 0.0), "{what}: {y:?}");
            }
        }
    }
    // `cf` where `x` fits one block: two blocks, as `cf` always has.
    let fits = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::Cf)
        .with_plan_cache(false);
    for k in [1usize, 8] {
        let r = throttled_spmm_matches(&dev, &fits, shape, 900, k, None);
        assert_eq!((r.chosen, r.partitions), (ThrottlePolicy::Cf, 2), "{r:?}");
    }
    // A 2-D kernel is not renumbered: the level order is refused when pinned.
    let mut t = spmm::f64::throttle(&dev, &small, 1200, 900, 8, &ptr, &col, &val).unwrap();
    let e = t
        .pin_device_plan(DevicePlan::Levels)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot be renumbered") && e.contains("2-D kernel"),
        "{e}"
    );
    // `x` fits the cache: `auto` runs `org` from the sizes alone.
    let r = throttled_spmm_matches(&dev, &ThrottleOptions::default(), shape, 900, 8, None);
    assert_eq!(r.chosen, ThrottlePolicy::Org, "{r:?}");
    let why = &r.model.as_ref().unwrap().reason;
    assert!(why.contains("fits the cache"), "{why}");
}

#[test]
fn throttled_2d_kernels_run_resident_enqueued_and_with_a_semiring() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, col, val) = matrix(3000, 500);
    let n = ptr.len() - 1;
    let k = 40;
    let (val32, x32) = (f32s(&val), f32s(&dense(500, k, 5)));
    let small = ThrottleOptions::default()
        .with_cache(CacheSize::Bytes(16 << 10))
        .with_plan_cache(false);
    // The f32 handle on the CPU twin and on the device from resident
    // arrays, launched without waiting over DeviceVecs.
    let mut want = vec![0.0f32; n * k];
    let mut t = spmm::f32::throttle(&cpu, &small, n, 500, k as u32, &ptr, &col, &val32).unwrap();
    t.launch(&x32, k as u32, &mut want).unwrap();
    let (dp, dc, dv) = (
        dev.upload(&ptr).unwrap(),
        dev.upload(&col).unwrap(),
        dev.upload(&val32).unwrap(),
    );
    for policy in [ThrottlePolicy::Auto, ThrottlePolicy::Cf] {
        let opts = small.with_policy(policy);
        let mut t =
            spmm::f32::throttle_resident(&dev, &opts, n, 500, k as u32, &dp, &dc, &dv).unwrap();
        let x = dev.upload(&x32).unwrap();
        let y = dev.alloc::<f32>(n * k).unwrap();
        for _ in 0..3 {
            t.enqueue(&x, k as u32, &y).unwrap();
        }
        t.check().unwrap();
        assert_eq!(y.to_vec().unwrap(), want, "{policy}: {:?}", t.report());
    }
    // The (max, +) semiring, `cf` from its attribute.
    let n_cols = 12;
    let dist = f32s(&dense(500, n_cols, 1));
    let opts = max_plus_columns::throttle_options()
        .unwrap()
        .with_cache(CacheSize::Bytes(4 << 10));
    let mut outs = [vec![0.0f32; n * n_cols], vec![1.0f32; n * n_cols]];
    for (d, out) in [&cpu, &dev].into_iter().zip(outs.iter_mut()) {
        let mut t = max_plus_columns::throttle(d, &opts, n, 500, n_cols as u64, &ptr, &col, &val32)
            .unwrap();
        t.launch(&dist, n_cols as u64, out).unwrap();
        if d.cuda().is_some() {
            assert_eq!(t.report().chosen, ThrottlePolicy::Cf, "{:?}", t.report());
            assert!(t.report().partitions > 2, "{:?}", t.report());
        }
    }
    assert_eq!(outs[0], outs[1]);
    // A fault: `x` shorter than the rows the handle was made for.
    let mut t = spmm::f32::throttle(
        &dev,
        &small.with_policy(ThrottlePolicy::Cf),
        n,
        500,
        k as u32,
        &ptr,
        &col,
        &val32,
    )
    .unwrap();
    let mut y = vec![0.0f32; n * k];
    let e = t
        .launch(&x32[..x32.len() - k], k as u32, &mut y)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`x`"), "{e}");
}

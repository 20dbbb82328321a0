//! Generated kernels on a CUDA GPU against their CPU twin: every
//! decomposition, all tasks and split task lists, integer wrapping, faults.
//! Needs a CUDA GPU; skipped without one, unless `WARPFIT_REQUIRE_GPU=1`.

mod macro_common;

use macro_common::*;
use warpfit::prelude::*;

mod gpu_common;

use gpu_common::gpu;

fn configs() -> Vec<LaunchConfig> {
    [
        Decomposition::Cte,
        Decomposition::Thread,
        Decomposition::SubWarp(4),
        Decomposition::SubWarp(32),
    ]
    .into_iter()
    .map(|decomposition| LaunchConfig {
        decomposition,
        ..LaunchConfig::default()
    })
    .collect()
}

fn lists(ptr: &[u32]) -> Vec<TaskList> {
    vec![
        TaskList::from_ptr(ptr).unwrap(),
        TaskList::chunked(ptr, 7).unwrap(),
        TaskList::chunked(ptr, 64).unwrap(),
    ]
}

#[test]
fn float_semirings_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let (ptr, src) = skewed_graph(3000, 7);
    let n = ptr.len() - 1;
    let w = quarters(src.len(), 3);
    let x: Vec<f32> = quarters(n, 11).iter().map(|v| v * 2.0).collect();
    let inv: Vec<f32> = quarters(n, 5);
    let cpu = Device::cpu();
    for cfg in configs() {
        for list in lists(&ptr) {
            let (mut a, mut b) = (vec![0.0f32; n], vec![1.0f32; n]);
            spmv::launch_with(&cpu, &cfg, &list, &ptr, &src, &w, &x, &mut a).unwrap();
            spmv::launch_with(&dev, &cfg, &list, &ptr, &src, &w, &x, &mut b).unwrap();
            assert_eq!(a, b, "spmv {cfg:?}");
            relax::launch_with(&cpu, &cfg, &list, &ptr, &src, &w, &x, &mut a).unwrap();
            relax::launch_with(&dev, &cfg, &list, &ptr, &src, &w, &x, &mut b).unwrap();
            assert_eq!(a, b, "relax {cfg:?}");
            longest::launch_with(&cpu, &cfg, &list, &ptr, &src, &w, &x, &mut a).unwrap();
            longest::launch_with(&dev, &cfg, &list, &ptr, &src, &w, &x, &mut b).unwrap();
            assert_eq!(a, b, "longest {cfg:?}");
            pagerank::launch_with(&cpu, &cfg, &list, &ptr, &src, &x, &inv, 0.25, 0.5, &mut a)
                .unwrap();
            pagerank::launch_with(&dev, &cfg, &list, &ptr, &src, &x, &inv, 0.25, 0.5, &mut b)
                .unwrap();
            assert_eq!(a, b, "pagerank {cfg:?}");
        }
    }
}

#[test]
fn integer_kernels_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let (ptr, src) = skewed_graph(2000, 3);
    let n = ptr.len() - 1;
    let level: Vec<i32> = (0..n as i32)
        .map(|v| if v % 5 == 0 { v % 3 } else { -1 })
        .collect();
    let val: Vec<i32> = src
        .iter()
        .map(|&s| (s as i32).wrapping_mul(40503) - 7_000_000)
        .collect();
    let cpu = Device::cpu();
    for cfg in configs() {
        let list = TaskList::chunked(&ptr, 16).unwrap();
        let (mut a, mut b) = (vec![0i32; n], vec![9i32; n]);
        let (mut ca, mut cb) = (vec![0u32; n], vec![9u32; n]);
        bfs_step::launch_with(&cpu, &cfg, &list, &ptr, &src, &level, 1, &mut a, &mut ca).unwrap();
        bfs_step::launch_with(&dev, &cfg, &list, &ptr, &src, &level, 1, &mut b, &mut cb).unwrap();
        assert_eq!((&a, &ca), (&b, &cb), "bfs {cfg:?}");
        let (mut za, mut zb) = (vec![0u8; n], vec![1u8; n]);
        for shift in [0u32, 5, 37] {
            wrap_sum::launch_with(&cpu, &cfg, n, &ptr, &val, shift, &mut a, &mut za).unwrap();
            wrap_sum::launch_with(&dev, &cfg, n, &ptr, &val, shift, &mut b, &mut zb).unwrap();
            assert_eq!((&a, &za), (&b, &zb), "wrap_sum {cfg:?} shift {shift}");
        }
        for list in lists(&ptr) {
            for cur in [0, 1, 2] {
                let (mut fa, mut fb) = (vec![0u8; n], vec![9u8; n]);
                has_parent::launch_with(&cpu, &cfg, &list, &ptr, &src, &level, cur, &mut fa)
                    .unwrap();
                has_parent::launch_with(&dev, &cfg, &list, &ptr, &src, &level, cur, &mut fb)
                    .unwrap();
                assert_eq!(fa, fb, "any {cfg:?} level {cur}");
            }
            let (mut da, mut db) = (vec![false; n], vec![true; n]);
            all_reached::launch_with(&cpu, &cfg, &list, &ptr, &src, &level, &mut da).unwrap();
            all_reached::launch_with(&dev, &cfg, &list, &ptr, &src, &level, &mut db).unwrap();
            assert_eq!(da, db, "all {cfg:?}");
        }
        let (mut ua, mut ub) = (vec![0u64; n], vec![1u64; n]);
        index_sum::launch_with(&cpu, &cfg, &list, &ptr, &mut ua).unwrap();
        index_sum::launch_with(&dev, &cfg, &list, &ptr, &mut ub).unwrap();
        assert_eq!(ua, ub, "index_sum {cfg:?}");
    }
}

/// `launch` over all tasks of `ptr` and over each of `lists(ptr)` gives
/// `want` (under `cfg`, for the message).
fn whole_and_listed_give(
    ptr: &[u32],
    want: &[u32],
    cfg: &LaunchConfig,
    launch: impl Fn(Tasks<'_>, &mut [u32]),
) {
    let mut got = vec![1u32; want.len()];
    launch(Tasks::All(want.len()), &mut got);
    assert_eq!(got, want, "{cfg:?}");
    for list in lists(ptr) {
        let mut got = vec![1u32; want.len()];
        launch(Tasks::List(&list), &mut got);
        assert_eq!(got, want, "{cfg:?} over a task list");
    }
}

/// CTE at every split with the serial fallback off, so that every warp
/// expands.
fn expanding_configs() -> [LaunchConfig; 5] {
    [
        Split::Auto,
        Split::Never,
        Split::Budget(96),
        Split::Queued(96),
        Split::Max(48),
    ]
    .map(|split| LaunchConfig {
        decomposition: Decomposition::Cte,
        split,
        cte_serial_max: 0,
    })
}

/// CTE regroups a task's fold but keeps its fine-task order, and its rounds
/// start up to 31 idle lanes before a warp's first fine task: a fold that is
/// associative but not commutative gives the twin's bits under every split
/// with the serial fallback off (every warp expands), at the default and
/// under Thread, with warps whose first rows start at every offset modulo
/// 32 (`offset_rows`).
#[test]
fn order_keeping_decompositions_fold_a_non_commutative_operator_exactly() {
    let Some(dev) = gpu() else { return };
    let n = 4099;
    let (ptr, val) = offset_rows(n);
    let mut want = vec![0u32; n];
    first_odd::launch(&Device::cpu(), n, &ptr, &val, &mut want).unwrap();
    let others = [
        LaunchConfig::default(),
        LaunchConfig::new(Decomposition::Thread),
    ];
    for cfg in expanding_configs().into_iter().chain(others) {
        whole_and_listed_give(&ptr, &want, &cfg, |tasks, y| {
            first_odd::launch_with(&dev, &cfg, tasks, &ptr, &val, y).unwrap()
        });
    }
}

/// A commuting fold (`u32::min`, wrapping `i32` addition) lets CTE fold a
/// round that one row owns whole onto each lane's carry, without a scan,
/// and join the carries to the row's run in the next round that has an end.
/// Exact against the twin with warps starting at every offset modulo 32,
/// rows spanning many rounds (aligned warps' first rounds included),
/// every split and the serial fallback off; no idle lane's 0 reaches a
/// minimum.
#[test]
fn commuting_folds_carry_whole_rounds_exactly() {
    let Some(dev) = gpu() else { return };
    let n = 4099;
    let (ptr, val) = long_offset_rows(n);
    let ints: Vec<i32> = val.iter().map(|&v| (v as i32) * 2_000_003).collect();
    let cpu = Device::cpu();
    let mut want = vec![0u32; n];
    row_min::launch(&cpu, n, &ptr, &val, &mut want).unwrap();
    let (mut want_sum, mut want_z) = (vec![0i32; n], vec![0u8; n]);
    wrap_sum::launch(&cpu, n, &ptr, &ints, 3, &mut want_sum, &mut want_z).unwrap();
    for cfg in expanding_configs()
        .into_iter()
        .chain([LaunchConfig::default()])
    {
        whole_and_listed_give(&ptr, &want, &cfg, |tasks, y| {
            row_min::launch_with(&dev, &cfg, tasks, &ptr, &val, y).unwrap()
        });
        let (mut sum, mut z) = (vec![1i32; n], vec![1u8; n]);
        wrap_sum::launch_with(&dev, &cfg, n, &ptr, &ints, 3, &mut sum, &mut z).unwrap();
        assert_eq!((&sum, &z), (&want_sum, &want_z), "wrap_sum {cfg:?}");
    }
}

#[test]
fn literal_arguments_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let (ptr, _) = skewed_graph(2000, 5);
    let n = ptr.len() - 1;
    let val = quarters(ptr[n] as usize, 11);
    let (want_y, want_z) = literal_args_reference(&ptr, &val);
    for cfg in configs() {
        let (mut y, mut z) = (vec![0.0f32; n], vec![0i64; n]);
        literal_args::launch_with(&dev, &cfg, n, &ptr, &val, &mut y, &mut z).unwrap();
        assert_eq!(z, want_z, "{cfg:?}");
        // Quarters sum exactly in any order.
        assert_eq!(y, want_y, "{cfg:?}");
    }
}

#[test]
fn methods_and_casts_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let (ptr, _) = skewed_graph(500, 9);
    let n = ptr.len() - 1;
    let m = *ptr.last().unwrap() as usize;
    let val: Vec<f32> = (0..m)
        .map(|i| {
            if i % 97 == 0 {
                f32::NAN
            } else {
                (i % 13) as f32 * 0.75 - 4.0
            }
        })
        .collect();
    let (mut y, mut s, mut d) = (vec![0.0f32; n], vec![0i32; n], vec![0.0f64; n]);
    let (mut gy, mut gs, mut gd) = (vec![1.0f32; n], vec![1i32; n], vec![1.0f64; n]);
    forms::launch(&Device::cpu(), n, &ptr, &val, 1.5, &mut y, &mut s, &mut d).unwrap();
    forms::launch(&dev, n, &ptr, &val, 1.5, &mut gy, &mut gs, &mut gd).unwrap();
    // sqrt/powi may differ by an ulp between libm and CUDA's math library.
    fn close(a: f64, b: f64) -> bool {
        a == b || (a - b).abs() <= 1e-5 * a.abs().max(1.0) || (a.is_nan() && b.is_nan())
    }
    for t in 0..n {
        assert!(
            close(y[t] as f64, gy[t] as f64),
            "row {t}: {} vs {}",
            y[t],
            gy[t]
        );
        assert!(close(d[t], gd[t]), "row {t}: {} vs {}", d[t], gd[t]);
        // The saturating cast agrees wherever its input does.
        if y[t] == gy[t] {
            assert_eq!(s[t], gs[t], "row {t}");
        }
    }
}

#[test]
fn faults_are_errors_on_the_gpu_too() {
    let Some(dev) = gpu() else { return };
    let ptr = [0u32, 2, 3];
    let err = spmv::launch(
        &dev,
        2,
        &ptr,
        &[0, 7, 1],
        &[1.0; 3],
        &[1.0, 2.0],
        &mut [0.0; 2],
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::IndexOutOfRange {
                index: 7,
                len: 2,
                ..
            }
        ),
        "{err}"
    );
    let err =
        quotient::launch(&dev, 2, &ptr, &[i32::MIN, 7, 9], &[-1, 2, 0], &mut [0; 2]).unwrap_err();
    assert!(
        matches!(err, Error::DivisionByZero { task: 1, .. }),
        "{err}"
    );
    let mut y = [0i32; 1];
    quotient::launch(&dev, 1, &ptr, &[i32::MIN, 7, 9], &[-1, 2, 0], &mut y).unwrap();
    assert_eq!(y, [(i32::MIN % 1000).wrapping_add(3)]);
    let err = ratios::launch(&dev, 2, &ptr, &[1, 2, 3], &[1, 1, 0], &mut [0; 2]).unwrap_err();
    assert!(
        matches!(err, Error::DivisionByZero { task: 1, .. }),
        "{err}"
    );
}

/// Uploads `v` to `dev`.
fn up<T: warpfit::Scalar>(dev: &Device, v: &[T]) -> DeviceVec<T> {
    dev.upload(v).unwrap()
}

#[test]
fn device_resident_arguments_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, src) = skewed_graph(3000, 9);
    let n = ptr.len() - 1;
    let w = quarters(src.len(), 3);
    let x = quarters(n, 11);
    let (ptr_d, src_d, w_d, x_d) = (up(&dev, &ptr), up(&dev, &src), up(&dev, &w), up(&dev, &x));
    for cfg in configs() {
        for list in lists(&ptr) {
            let mut want = vec![0.0f32; n];
            spmv::launch_with(&cpu, &cfg, &list, &ptr, &src, &w, &x, &mut want).unwrap();
            // All resident: asynchronous, read back once.
            let mut y = dev.alloc::<f32>(n).unwrap();
            spmv::launch_with(&dev, &cfg, &list, &ptr_d, &src_d, &w_d, &x_d, &mut y).unwrap();
            dev.synchronize().unwrap();
            assert_eq!(y.to_vec().unwrap(), want, "resident {cfg:?}");
            // Mixed: resident inputs, a host input and a host output.
            let mut h = vec![1.0f32; n];
            spmv::launch_with(&dev, &cfg, &list, &ptr_d, &src, &w_d, &x, &mut h).unwrap();
            assert_eq!(h, want, "mixed {cfg:?}");
        }
        // Over all tasks (the size kernel reads resident arrays too).
        let mut want = vec![0.0f32; n];
        spmv::launch_with(&cpu, &cfg, n, &ptr, &src, &w, &x, &mut want).unwrap();
        let mut y = dev.alloc::<f32>(n).unwrap();
        spmv::launch_with(&dev, &cfg, n, &ptr_d, &src_d, &w_d, &x_d, &mut y).unwrap();
        assert_eq!(y.to_vec().unwrap(), want, "all tasks {cfg:?}");
    }
    // fill and copy_from on the device.
    let mut v = dev.alloc::<f64>(5).unwrap();
    v.fill(-2.5).unwrap();
    assert_eq!(v.to_vec().unwrap(), [-2.5; 5]);
    let mut b = dev.alloc::<u8>(3).unwrap();
    b.fill(7).unwrap();
    b.copy_from(&[1, 2, 3]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [1, 2, 3]);
    let mut i = dev.alloc::<i32>(4).unwrap();
    i.fill(-9).unwrap();
    assert_eq!(i.to_vec().unwrap(), [-9; 4]);
}

#[test]
fn prepared_launches_run_many_times_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (ptr, src) = skewed_graph(4000, 4);
    let n = ptr.len() - 1;
    // Real PageRank weights (1 / out-degree), so the ranks stay bounded over
    // the iterations; the fold orders differ, so floats agree within rounding.
    let mut out_degree = vec![0u32; n];
    src.iter().for_each(|&u| out_degree[u as usize] += 1);
    let inv: Vec<f32> = out_degree
        .iter()
        .map(|&d| if d == 0 { 0.0 } else { 1.0 / d as f32 })
        .collect();
    let (base, damping) = (0.15 / n as f32, 0.85f32);
    for cfg in configs() {
        for list in [None, Some(TaskList::chunked(&ptr, 7).unwrap())] {
            let t = match &list {
                Some(l) => Tasks::List(l),
                None => Tasks::All(n),
            };
            // The same ping-pong on both backends, prepared once each.
            let mut got = Vec::new();
            for d in [&cpu, &dev] {
                let (ptr_d, src_d, inv_d) = (up(d, &ptr), up(d, &src), up(d, &inv));
                let r0 = up(d, &vec![1.0f32 / n as f32; n]);
                let r1 = d.alloc::<f32>(n).unwrap();
                let a =
                    pagerank::prepare(d, &cfg, t, &ptr_d, &src_d, &r0, &inv_d, base, damping, &r1)
                        .unwrap();
                let b =
                    pagerank::prepare(d, &cfg, t, &ptr_d, &src_d, &r1, &inv_d, base, damping, &r0)
                        .unwrap();
                for _ in 0..25 {
                    a.run().unwrap();
                    b.run().unwrap();
                }
                b.check().unwrap();
                got.push(r0.to_vec().unwrap());
            }
            for (v, (c, g)) in got[0].iter().zip(&got[1]).enumerate() {
                assert!(
                    c.is_finite() && (c - g).abs() <= 1e-5 * c.abs().max(1e-6),
                    "pagerank {cfg:?} list {}: vertex {v}: cpu {c}, cuda {g}",
                    list.is_some()
                );
            }
        }
    }
}

#[test]
fn arrays_of_another_device_are_errors_naming_the_parameter() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let ptr = [0u32, 2, 3];
    let on_cpu = up(&cpu, &[1.0f32, 2.0]);
    let on_gpu = up(&dev, &[1.0f32, 2.0]);
    let mut y = vec![0.0f32; 2];
    let e = spmv::launch(&dev, 2, &ptr, &[0, 1, 1], &[1.0; 3], &on_cpu, &mut y)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("kernel `spmv`: argument 3 (`x`) is a DeviceVec of the CPU, but the launch runs on CUDA device 0"),
        "{e}"
    );
    let e = spmv::launch(&cpu, 2, &ptr, &[0, 1, 1], &[1.0; 3], &on_gpu, &mut y)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("argument 3 (`x`) is a DeviceVec of CUDA device 0")
            && e.contains("runs on the CPU"),
        "{e}"
    );
    let mut out = dev.alloc::<f32>(2).unwrap();
    let e = spmv::launch(&cpu, 2, &ptr, &[0, 1, 1], &[1.0; 3], &[1.0; 2], &mut out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("argument 4 (`y`)"), "{e}");
    let (p, c, v) = (
        up(&dev, &ptr),
        up(&dev, &[0u32, 1, 1]),
        up(&dev, &[1.0f32; 3]),
    );
    let e = spmv::prepare(&dev, &LaunchConfig::default(), 2, &p, &c, &v, &on_cpu, &out)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("argument 3 (`x`) is a DeviceVec of the CPU"),
        "{e}"
    );
    let e = spmv::prepare(&cpu, &LaunchConfig::default(), 2, &p, &c, &v, &on_cpu, &out)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("argument 0 (`row_ptr`) is a DeviceVec of CUDA device 0"),
        "{e}"
    );
    // A second GPU, when there is one.
    if let Ok(other) = Device::open_cuda(1) {
        let far = up(&other, &[1.0f32, 2.0]);
        let e = spmv::launch(&dev, 2, &p, &c, &v, &far, &mut out)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("argument 3 (`x`) is a DeviceVec of CUDA device 1"),
            "{e}"
        );
    }
}

#[test]
fn faults_of_asynchronous_and_prepared_launches_are_reported_at_the_next_check() {
    let Some(dev) = gpu() else { return };
    let ptr = up(&dev, &[0u32, 2, 3]);
    let num = up(&dev, &[i32::MIN, 7, 9]);
    let den = up(&dev, &[-1, 2, 0]);
    let ok_den = up(&dev, &[-1, 2, 1]);
    let y = dev.alloc::<i32>(2).unwrap();
    for cfg in configs() {
        // Prepared: runs only enqueue; the check reports the fault, once.
        let k = quotient::prepare(&dev, &cfg, 2, &ptr, &num, &den, &y).unwrap();
        for _ in 0..3 {
            k.run().unwrap();
        }
        let e = k.check().unwrap_err();
        assert!(
            matches!(e, Error::DivisionByZero { task: 1, .. }),
            "{cfg:?}: {e}"
        );
        k.check().unwrap();
        k.run().unwrap();
        assert!(k.check().is_err(), "{cfg:?}: a later run faults again");
        let good = quotient::prepare(&dev, &cfg, 2, &ptr, &num, &ok_den, &y).unwrap();
        good.run().unwrap();
        good.check().unwrap();
        // Plain launch, all resident: returns before the fault is known.
        let mut out = dev.alloc::<i32>(2).unwrap();
        quotient::launch_with(&dev, &cfg, 2, &ptr, &num, &den, &mut out).unwrap();
        let e = dev.synchronize().unwrap_err();
        assert!(
            matches!(e, Error::DivisionByZero { task: 1, .. }),
            "{cfg:?}: {e}"
        );
        dev.synchronize().unwrap();
        // ... or at the next download.
        quotient::launch_with(&dev, &cfg, 2, &ptr, &num, &den, &mut out).unwrap();
        let e = out.to_vec().unwrap_err();
        assert!(
            matches!(e, Error::DivisionByZero { task: 1, .. }),
            "{cfg:?}: {e}"
        );
        // An index fault in a resident array names it and its length.
        let short = up(&dev, &[1.0f32]);
        let mut o = dev.alloc::<f32>(2).unwrap();
        let (c, v) = (up(&dev, &[0u32, 1, 1]), up(&dev, &[1.0f32; 3]));
        spmv::launch_with(&dev, &cfg, 2, &ptr, &c, &v, &short, &mut o).unwrap();
        let e = dev.synchronize().unwrap_err();
        assert!(
            matches!(
                e,
                Error::IndexOutOfRange {
                    index: 1,
                    len: 1,
                    ..
                }
            ),
            "{cfg:?}: {e}"
        );
    }
}

/// `#[throttled]` handles on the GPU against the CPU twin: every policy the
/// handle launches, column blocks and K-D tiles of a cache small enough
/// for several partitions, hubs split inside partitions (RMAT) and rows
/// that are not: the u32 and min-plus kernels exactly, the float SpMV
/// within rounding of its reordered folds; host and device-resident
/// arguments; a fault is an error and the handle runs on.
#[test]
fn throttled_handles_match_the_twin() {
    use warpfit::runtime::gen;
    use warpfit::{CacheSize, Partitioner};
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let (sptr, ssrc) = skewed_graph(3000, 7);
    let skewed = warpfit::runtime::Csr::new(
        sptr.len() - 1,
        sptr.len() - 1,
        sptr.clone(),
        ssrc.clone(),
        quarters(ssrc.len(), 3),
    )
    .unwrap();
    // WARPFIT_SMALL=1 (the compute-sanitizer runs): the skewed graph only.
    let small = std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1");
    let mut matrices = vec![("skewed 3000", skewed)];
    if !small {
        matrices.push(("rmat:scale=12", gen::rmat(12, 16, 3).unwrap()));
        matrices.push(("uniform 4096x16", gen::uniform(4096, 16, 5).unwrap()));
    }
    for (name, a) in matrices {
        let (n, m) = (a.nrows(), a.ncols());
        let x = quarters(m, 9);
        let mut want = vec![0f32; n];
        spmv::launch(
            &cpu,
            n,
            a.row_ptr(),
            a.col_idx(),
            a.values(),
            &x,
            &mut want[..],
        )
        .unwrap();
        let val: Vec<u32> = (0..a.nnz() as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        let xu: Vec<u32> = (0..m as u32).map(|i| i ^ 0x5bd1_e995).collect();
        let mut want_u = vec![0u32; n];
        spmv_u32::launch(
            &cpu,
            n,
            a.row_ptr(),
            a.col_idx(),
            &val,
            &xu,
            &mut want_u[..],
        )
        .unwrap();
        let mut want_min = vec![0f32; n];
        relax::launch(
            &cpu,
            n,
            a.row_ptr(),
            a.col_idx(),
            a.values(),
            &x,
            &mut want_min[..],
        )
        .unwrap();
        for partitioner in [Partitioner::Columns, Partitioner::Kd] {
            for (policy, remap) in ThrottlePolicy::ALL.into_iter().map(|p| (p, false)).chain(
                [
                    ThrottlePolicy::Cf,
                    ThrottlePolicy::Cfq,
                    ThrottlePolicy::Sj,
                    ThrottlePolicy::Sjq,
                ]
                .map(|p| (p, true)),
            ) {
                let what = format!("{name} {partitioner} {policy} remap={remap}");
                let opts = ThrottleOptions::default()
                    .with_policy(policy)
                    .with_exhaustive(true)
                    .with_partitioner(partitioner)
                    .with_cache(CacheSize::Bytes(16 << 10))
                    .with_remap(remap);
                let mut t = spmv::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values())
                    .unwrap();
                let mut y = vec![f32::NAN; n];
                t.launch(&x, &mut y[..]).unwrap();
                for (r, (g, w)) in y.iter().zip(&want).enumerate() {
                    let mag: f32 = a
                        .row_range(r)
                        .map(|k| (a.values()[k] * x[a.col_idx()[k] as usize]).abs())
                        .sum();
                    assert!(
                        (g - w).abs() <= 1e-5 * (1.0 + mag),
                        "{what}: row {r}: {g} vs {w}"
                    );
                }
                let report = t.report().clone();
                // `org` plans nothing.
                assert_eq!(
                    report.partitions > 1,
                    policy != ThrottlePolicy::Org,
                    "{what}: {report:?}"
                );
                match policy {
                    ThrottlePolicy::Auto => {
                        // org, org_r, cf, cfq, sj, sjq
                        assert_eq!(report.profile.len(), 6, "{what}: {report:?}");
                        // Square, order not pinned: org_r by both orders.
                        assert_eq!(report.remap_profile.len(), 2, "{what}: {report:?}");
                    }
                    p => assert_eq!(report.chosen, p, "{what}: {report:?}"),
                }
                if matches!(policy, ThrottlePolicy::Sj | ThrottlePolicy::Sjq) {
                    assert!(!report.sj_launches.is_empty(), "{what}: {report:?}");
                }
                assert_eq!(
                    report.remapped,
                    remap || report.chosen == ThrottlePolicy::OrgR,
                    "{what}"
                );
                // Fewer than 2^15 rows and columns: every offset from the
                // row fits 16 bits, so every layout of the plan is narrow;
                // `org` reads the arrays as given.
                assert_eq!(
                    report.narrow_index,
                    report.chosen != ThrottlePolicy::Org,
                    "{what}: {report:?}"
                );
                // Device-resident arguments: the same result bit for bit.
                let xd = dev.upload(&x).unwrap();
                let mut yd = dev.alloc::<f32>(n).unwrap();
                t.launch(&xd, &mut yd).unwrap();
                assert_eq!(yd.to_vec().unwrap(), y, "{what}: DeviceVecs");
                // A fault (`x` too short) is an error; the handle runs on.
                assert!(t.launch(&x[..m / 2], &mut y[..]).is_err(), "{what}");
                t.launch(&x, &mut y[..]).unwrap();
                assert_eq!(yd.to_vec().unwrap(), y, "{what}: after a fault");
                // The chosen schedule was kept: no profiling again.
                assert_eq!(t.report().profile, report.profile, "{what}");

                let mut tu =
                    spmv_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
                let mut got = vec![0u32; n];
                tu.launch(&xu, &mut got[..]).unwrap();
                assert_eq!(got, want_u, "{what}: u32");
                // `relax` folds from `dist[v]` beside `dist[src[e]]`: remapped
                // only by one permutation of tasks and gathered elements alike,
                // so only with as many of each (these matrices are square).
                if remap || policy == ThrottlePolicy::OrgR {
                    let e = relax::throttle(
                        &dev,
                        &opts,
                        n,
                        m + 5,
                        a.row_ptr(),
                        a.col_idx(),
                        a.values(),
                    )
                    .unwrap_err()
                    .to_string();
                    assert!(
                        e.contains(&format!("{n} tasks but {} gathered elements", m + 5)),
                        "{what}: {e}"
                    );
                }
                let mut tm =
                    relax::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values())
                        .unwrap();
                let mut got = vec![0f32; n];
                tm.launch(&x, &mut got[..]).unwrap();
                assert_eq!(got, want_min, "{what}: min-plus");
                if policy == ThrottlePolicy::Auto {
                    // Square: `org_r` is a candidate like the others.
                    let r = tm.report();
                    assert!(
                        r.skipped.iter().all(|(p, _)| *p != ThrottlePolicy::OrgR),
                        "{what}: {r:?}"
                    );
                }
            }
        }
    }
}

/// Remapped launches of kernels whose output keeps old values (`y += A x`,
/// and `A x` stored only where nonzero): the old values travel into the
/// plan's order and back, under both remapping orders; spmv overwrites `y`
/// and skips that, which the same result shows harmless.
#[test]
fn remapped_launches_keep_the_outputs_old_values() {
    use warpfit::runtime::gen;
    use warpfit::{CacheSize, Partitioner, RemapOrder};
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let a = gen::uniform(1 << 13, 3, 21).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    // Every third value 0, so that some rows sum to 0.
    let val: Vec<u32> = (0..a.nnz() as u32).map(|i| i % 3).collect();
    let x: Vec<u32> = (0..m as u32).map(|i| i % 5).collect();
    let old: Vec<u32> = (0..n as u32).map(|i| 1000 + i).collect();
    let mut want_add = old.clone();
    spmv_add_u32::launch(
        &cpu,
        n,
        a.row_ptr(),
        a.col_idx(),
        &val,
        &x,
        &mut want_add[..],
    )
    .unwrap();
    let mut want_nz = old.clone();
    spmv_nonzero_u32::launch(
        &cpu,
        n,
        a.row_ptr(),
        a.col_idx(),
        &val,
        &x,
        &mut want_nz[..],
    )
    .unwrap();
    assert!(
        want_nz.iter().zip(&old).any(|(w, o)| w == o),
        "some row sums to 0"
    );
    assert!(
        want_nz.iter().zip(&old).any(|(w, o)| w != o),
        "some row does not"
    );
    for order in RemapOrder::ALL {
        let opts = ThrottleOptions::default()
            .with_policy(ThrottlePolicy::OrgR)
            .with_exhaustive(true)
            .with_partitioner(Partitioner::Kd)
            .with_cache(CacheSize::Bytes(8 << 10))
            .with_remap_order(order);
        let mut t =
            spmv_add_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
        let mut y = old.clone();
        t.launch(&x, &mut y[..]).unwrap();
        assert_eq!(t.report().chosen, ThrottlePolicy::OrgR);
        assert!(y == want_add, "{order}: y += A x");
        let mut t =
            spmv_nonzero_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
        let mut y = old.clone();
        t.launch(&x, &mut y[..]).unwrap();
        assert!(y == want_nz, "{order}: stored where nonzero");
        // Device-resident, enqueued: the same.
        let xd = dev.upload(&x).unwrap();
        let yd = dev.upload(&old).unwrap();
        t.enqueue(&xd, &yd).unwrap();
        t.check().unwrap();
        assert!(yd.to_vec().unwrap() == want_nz, "{order}: enqueued");
    }
}

/// A pipelined handle runs the unthrottled schedule while its plan is made
/// on a CPU thread, then switches: the results agree with the twin before
/// and after, and the status and report follow.
#[test]
fn pipelined_throttling_switches_once_the_plan_is_in() {
    use warpfit::runtime::gen;
    use warpfit::{CacheSize, Partitioner, ThrottleStatus};
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let a = gen::uniform(1 << 15, 12, 4).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let val: Vec<u32> = (0..a.nnz() as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let xu: Vec<u32> = (0..m as u32).map(|i| i ^ 0x5bd1_e995).collect();
    let mut want = vec![0u32; n];
    spmv_u32::launch(&cpu, n, a.row_ptr(), a.col_idx(), &val, &xu, &mut want[..]).unwrap();
    for policy in [ThrottlePolicy::Cf, ThrottlePolicy::Auto] {
        let opts = ThrottleOptions::default()
            .with_policy(policy)
            .with_exhaustive(true)
            .with_partitioner(Partitioner::Columns)
            .with_cache(CacheSize::Bytes(32 << 10));
        let mut t = spmv_u32::throttle_pipelined(
            &dev,
            &opts,
            n,
            m,
            a.row_ptr().to_vec(),
            a.col_idx().to_vec(),
            val.clone(),
        )
        .unwrap();
        let mut got = vec![0u32; n];
        let mut launches = 0;
        while t.status() == ThrottleStatus::Planning && launches < 10_000 {
            t.launch(&xu, &mut got[..]).unwrap();
            assert_eq!(got, want, "{policy}: before the plan");
            launches += 1;
        }
        t.wait_for_plan().unwrap();
        t.launch(&xu, &mut got[..]).unwrap();
        assert_eq!(got, want, "{policy}: after the plan");
        let r = t.report();
        assert!(r.partitions > 1, "{r:?}");
        assert!(r.launches_before_plan <= launches, "{r:?}");
        if policy == ThrottlePolicy::Cf {
            assert_eq!(t.status(), ThrottleStatus::Running(ThrottlePolicy::Cf));
        } else {
            assert_eq!(r.profile.len(), 6, "{r:?}");
            assert!(matches!(t.status(), ThrottleStatus::Running(_)));
        }
    }
}

#[test]
fn per_task_maps_match_the_twin_under_every_config() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let n = 100_003;
    let x: Vec<f32> = quarters(n, 3);
    let y0: Vec<f32> = quarters(n, 8);
    let xi: Vec<i32> = (0..n as i32)
        .map(|i| i.wrapping_mul(7919) % 201 - 100)
        .collect();
    // A map ignores the decomposition and split: one thread per task.
    for cfg in configs() {
        let (mut a, mut b) = (y0.clone(), y0.clone());
        axpy::launch_with(&cpu, &cfg, n, 1.5, &x, &mut a).unwrap();
        axpy::launch_with(&dev, &cfg, n, 1.5, &x, &mut b).unwrap();
        assert_eq!(a, b, "axpy {cfg:?}");
        let (mut da, mut ba) = (vec![0i32; n], vec![0u8; n]);
        let (mut db, mut bb) = (vec![1i32; n], vec![1u8; n]);
        diff_clamp::launch_with(&cpu, &cfg, n, &xi, -40, &mut da, &mut ba).unwrap();
        diff_clamp::launch_with(&dev, &cfg, n, &xi, -40, &mut db, &mut bb).unwrap();
        assert_eq!((&da, &ba), (&db, &bb), "diff_clamp {cfg:?}");
    }
    // A task list runs the tasks it names, each once, on both backends.
    let list = TaskList::new(vec![
        Segment::new(7, 0, 0),
        Segment::new(3, 0, 0),
        Segment::new(7, 0, 0),
    ])
    .unwrap();
    let (mut a, mut b) = (y0.clone(), y0.clone());
    axpy::launch(&cpu, &list, 1.5, &x, &mut a).unwrap();
    axpy::launch(&dev, &list, 1.5, &x, &mut b).unwrap();
    assert_eq!(a, b);
    // Faults: the same error as the twin.
    let e = axpy::launch(&dev, n + 1, 1.5, &x, &mut b).unwrap_err();
    assert!(
        matches!(e, Error::IndexOutOfRange { index, len, .. } if index == n as u64 && len == n as u64),
        "{e}"
    );
}

#[test]
fn global_reductions_match_the_twin() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    // WARPFIT_SMALL=1 (the compute-sanitizer runs) leaves out the 4M and 8M
    // cases. 100,000 elements are 48 pieces (the narrow merge); 1.2M are
    // 585, 4M 2048 and 8M 4096 (a block per split task, `wf_merge_block`).
    let small = std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1");
    let sizes: &[usize] = if small {
        &[0, 1, 4095, 100_000, 1_200_000]
    } else {
        &[0, 1, 4095, 100_000, 1_200_000, 4 << 20, 8 << 20]
    };
    for &n in sizes {
        // Exact in any order: the GPU's and the CPU's splits agree bit for bit.
        let x: Vec<f64> = quarters(n, 1).iter().map(|&v| f64::from(v)).collect();
        let y: Vec<f64> = quarters(n, 2).iter().map(|&v| f64::from(v) - 1.0).collect();
        let want: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
        let s = warpfit::split_one_task(&dev, 0, 0..n).unwrap();
        let mut got = [f64::NAN];
        dot::launch_with(&dev, &s.config, &s.tasks, n as u32, &x, &y, &mut got).unwrap();
        assert_eq!(got[0], want, "dot n = {n}");
        let xi: Vec<i64> = (0..n as i64).map(|i| i * 0x3fff_ffff_ffff - 17).collect();
        let want_i = xi.iter().fold(0i64, |a, &b| a.wrapping_add(b));
        let mut got_i = [0i64];
        isum::launch_with(&dev, &s.config, &s.tasks, n as u32, &xi, &mut got_i).unwrap();
        assert_eq!(got_i[0], want_i, "isum n = {n}");
        // Rounding-sensitive floats: the same bits on every run, and within
        // rounding of the CPU's.
        let xs: Vec<f32> = (0..n).map(|i| 1.0 + (i as f32).sin() * 1e-3).collect();
        let mut first = [0.0f32];
        norm::launch_with(&dev, &s.config, &s.tasks, n as u32, &xs, &mut first).unwrap();
        for _ in 0..3 {
            let mut again = [0.0f32];
            norm::launch_with(&dev, &s.config, &s.tasks, n as u32, &xs, &mut again).unwrap();
            assert_eq!(again[0].to_bits(), first[0].to_bits(), "norm n = {n}");
        }
        let c = warpfit::split_one_task(&cpu, 0, 0..n).unwrap();
        let mut on_cpu = [0.0f32];
        norm::launch_with(&cpu, &c.config, &c.tasks, n as u32, &xs, &mut on_cpu).unwrap();
        // Segments summed in other orders: a relative difference of a few
        // f32 roundings per level of the fold.
        let tol = 1e-4 * on_cpu[0].max(1.0);
        assert!(
            (first[0] - on_cpu[0]).abs() <= tol,
            "norm n = {n}: {} vs {}",
            first[0],
            on_cpu[0]
        );
    }
    // A read past the end is an index error; which segment reports first
    // is up to timing, on both backends (the index is at least the length).
    let s = warpfit::split_one_task(&dev, 0, 0..10_000).unwrap();
    let e = dot::launch_with(
        &dev,
        &s.config,
        &s.tasks,
        10_000,
        &[1.0; 10_000],
        &[1.0; 9_000],
        &mut [0.0],
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::IndexOutOfRange { index, len: 9_000, .. } if index >= 9_000),
        "{e}"
    );
}

/// Kernel times of the new forms on vectors of 4M and 16M elements, with the
/// arguments resident (a `CudaLaunch` launch run again): the wall time of 50
/// back-to-back runs, then one synchronising fault check, divided by 50 (what
/// a solver's loop sees; the enqueue of each launch overlaps the kernels
/// before it). `cargo test --release --test macro_gpu -- --ignored
/// --nocapture form_kernel_times`. Prints; asserts nothing about speed.
#[test]
#[ignore]
fn form_kernel_times() {
    use warpfit::__private::{Arg, CudaLaunch};
    let Some(dev) = gpu() else { return };
    let cuda = dev.cuda().expect("a CUDA device");
    let time = |p: &CudaLaunch| -> f64 {
        for _ in 0..3 {
            p.run().unwrap();
        }
        p.check_fault().unwrap();
        let runs = 50;
        let start = std::time::Instant::now();
        for _ in 0..runs {
            p.run().unwrap();
        }
        p.check_fault().unwrap();
        start.elapsed().as_secs_f64() * 1e6 / runs as f64
    };
    for n in [4usize << 20, 16 << 20] {
        let x64 = vec![0.5f64; n];
        let y64 = vec![0.25f64; n];
        let x32 = vec![0.5f32; n];
        let mut y32 = vec![0.25f32; n];
        let mut out64 = [0.0f64];
        let mut out32 = [0.0f32];
        let s = warpfit::split_one_task(&dev, 0, 0..n).unwrap();
        let dot = CudaLaunch::new(
            cuda,
            &dot::SPEC,
            &s.config,
            (&s.tasks).into(),
            &[
                Arg::scalar(n as u32),
                Arg::input(&x64),
                Arg::input(&y64),
                Arg::output(&mut out64),
            ],
        )
        .unwrap();
        let us = time(&dot);
        println!(
            "dot f64 n = {n}: {us:.1} us, {:.0} GB/s ({} segments)",
            (16 * n) as f64 / us / 1e3,
            s.tasks.len()
        );
        let norm = CudaLaunch::new(
            cuda,
            &norm::SPEC,
            &s.config,
            (&s.tasks).into(),
            &[
                Arg::scalar(n as u32),
                Arg::input(&x32),
                Arg::output(&mut out32),
            ],
        )
        .unwrap();
        let us = time(&norm);
        println!(
            "norm f32 n = {n}: {us:.1} us, {:.0} GB/s",
            (4 * n) as f64 / us / 1e3
        );
        let axpy = CudaLaunch::new(
            cuda,
            &axpy::SPEC,
            &LaunchConfig::default(),
            n.into(),
            &[Arg::scalar(1.5f32), Arg::input(&x32), Arg::output(&mut y32)],
        )
        .unwrap();
        let us = time(&axpy);
        println!(
            "axpy f32 n = {n}: {us:.1} us, {:.0} GB/s",
            (12 * n) as f64 / us / 1e3
        );
    }
}

/// `t`'s launches after its first, over host slices and then over device
/// vectors (the schedule prepared again), each exact.
fn launches_stay_exact(t: &mut spmv_u32::Throttle, dev: &Device, x: &[u32], want: &[u32]) {
    let mut y = vec![0u32; want.len()];
    for _ in 0..2 {
        t.launch(x, &mut y[..]).unwrap();
        assert_eq!(y, want, "again, under {:?}", t.report().chosen);
        y.fill(0);
    }
    let xd = dev.upload(x).unwrap();
    let yd = dev.alloc::<u32>(want.len()).unwrap();
    t.enqueue(&xd, &yd).unwrap();
    t.check().unwrap();
    assert!(
        yd.to_vec().unwrap() == want,
        "prepared again over device vectors"
    );
}

/// `p`'s entries of a budget or serial-bound profile.
fn profile_of(v: &[(ThrottlePolicy, u32, f64)], p: ThrottlePolicy) -> Vec<(u32, f64)> {
    v.iter()
        .filter(|t| t.0 == p)
        .map(|&(_, b, ms)| (b, ms))
        .collect()
}

/// `auto` on a launch large enough that the automatic split packs warps
/// by work (RMAT, rows over 64, about 1M fine tasks) also times the wider
/// warp budgets for `org` and `org_r`, keeps the fastest for each (its
/// time is the one in `profile`), and every launch stays exact.
#[test]
fn auto_times_wider_warp_budgets_for_packed_launches() {
    use warpfit::runtime::gen;
    use warpfit::CacheSize;
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let a = gen::rmat(16, 16, 5).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let val: Vec<u32> = (0..a.nnz() as u32).map(|i| i % 5 + 1).collect();
    let x: Vec<u32> = (0..m as u32).map(|i| i % 11).collect();
    let mut want = vec![0u32; n];
    spmv_u32::launch(&cpu, n, a.row_ptr(), a.col_idx(), &val, &x, &mut want[..]).unwrap();
    let opts = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::Auto)
        .with_exhaustive(true)
        .with_cache(CacheSize::Bytes(64 << 10));
    let mut t = spmv_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
    let mut y = vec![0u32; n];
    t.launch(&x, &mut y[..]).unwrap();
    assert_eq!(y, want);
    let r = t.report().clone();
    assert!(r.partitions > 1, "{r:?}");
    for p in [ThrottlePolicy::Org, ThrottlePolicy::OrgR] {
        let timed = profile_of(&r.budget_profile, p);
        let budgets: Vec<u32> = timed.iter().map(|t| t.0).collect();
        assert_eq!(budgets, [512, 1024, 2048], "{p}: {r:?}");
        // Where the split raised the serial-fallback bound, the configured
        // one too, at the fastest budget.
        let serial = profile_of(&r.serial_profile, p);
        if let [(raised, raised_ms), (configured, _)] = serial[..] {
            assert!(raised > configured && configured == 8, "{p}: {r:?}");
            let fastest_budget = timed.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
            assert_eq!(raised_ms, fastest_budget, "{p}: {r:?}");
        } else {
            assert!(serial.is_empty(), "{p}: {r:?}");
        }
        let unqueued = timed
            .iter()
            .chain(&serial)
            .map(|t| t.1)
            .fold(f64::INFINITY, f64::min);
        // Then the fastest once more with its groups from a queue.
        let queue: Vec<(f64, f64)> = r
            .queue_profile
            .iter()
            .filter(|q| q.0 == p)
            .map(|q| (q.1, q.2))
            .collect();
        assert_eq!(queue.len(), 1, "{p}: {r:?}");
        assert_eq!(queue[0].0, unqueued, "{p}: {r:?}");
        let fastest = unqueued.min(queue[0].1);
        let kept: Vec<f64> = r.profile.iter().filter(|q| q.0 == p).map(|q| q.1).collect();
        assert_eq!(
            kept,
            [fastest],
            "{p}: the fastest configuration's time: {r:?}"
        );
    }
    // The chosen schedule runs under its fastest budget (and serial
    // bound), also when it is prepared again over other arrays.
    let min_of = |v: &[(ThrottlePolicy, u32, f64)]| {
        v.iter()
            .filter(|t| t.0 == r.chosen)
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .map(|t| t.1)
    };
    let serial_kept = min_of(&r.serial_profile);
    assert_eq!(r.serial_bound, serial_kept, "{r:?}");
    // The serial bound is timed at the fastest budget: that budget stays.
    let kept = min_of(&r.budget_profile).filter(|&b| b != 512);
    assert_eq!(r.warp_budget, kept, "{r:?}");
    let queued = r.queue_profile.iter().any(|q| q.0 == r.chosen && q.2 < q.1);
    assert_eq!(r.queued, queued, "{r:?}");
    launches_stay_exact(&mut t, &dev, &x, &want);
    assert_eq!(t.report().warp_budget, kept, "prepared again");
    assert_eq!(t.report().queued, queued, "prepared again");
    assert_eq!(t.report().chosen, r.chosen);
}

/// A band of `n` rows (CSR row pointers and columns): every `every`-th row
/// `long` long, the others `short`; a row's columns start at its own index,
/// or (`behind`) a fifth of its length before it.
fn band(n: usize, every: usize, long: usize, short: usize, behind: bool) -> (Vec<u32>, Vec<u32>) {
    let mut row_ptr = vec![0u32];
    let mut col = Vec::new();
    for i in 0..n {
        let len = if i % every == 0 { long } else { short };
        let lo = if behind { i.saturating_sub(len / 5) } else { i };
        col.extend((lo..(lo + len).min(n)).map(|c| c as u32));
        row_ptr.push(col.len() as u32);
    }
    (row_ptr, col)
}

/// `auto` on a packed launch whose gathers are local (a band: each row's
/// columns start at its own index, every 1024th row 300 long) also times
/// the configured serial-fallback bound, at the fastest warp budget, after
/// the automatic split raised it; the schedule keeps the faster, and every
/// launch stays exact, also prepared again.
#[test]
fn auto_times_the_configured_serial_bound_where_the_split_raised_it() {
    use warpfit::CacheSize;
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let n = 1usize << 17;
    let (row_ptr, col) = band(n, 1024, 300, 16, false);
    let val: Vec<u32> = (0..col.len() as u32).map(|i| i % 7 + 1).collect();
    let x: Vec<u32> = (0..n as u32).map(|i| i % 13).collect();
    let mut want = vec![0u32; n];
    spmv_u32::launch(&cpu, n, &row_ptr, &col, &val, &x, &mut want[..]).unwrap();
    let opts = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::Auto)
        .with_exhaustive(true)
        .with_cache(CacheSize::Bytes(64 << 10));
    let mut t = spmv_u32::throttle(&dev, &opts, n, n, &row_ptr, &col, &val).unwrap();
    let mut y = vec![0u32; n];
    t.launch(&x, &mut y[..]).unwrap();
    assert_eq!(y, want);
    let r = t.report().clone();
    let serial = profile_of(&r.serial_profile, ThrottlePolicy::Org);
    let bounds: Vec<u32> = serial.iter().map(|t| t.0).collect();
    assert_eq!(
        bounds,
        [64, 8],
        "org's raised bound, then the configured one: {r:?}"
    );
    let budgets = profile_of(&r.budget_profile, ThrottlePolicy::Org);
    let fastest_budget = budgets.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
    assert_eq!(
        serial[0].1, fastest_budget,
        "timed at the fastest budget: {r:?}"
    );
    let fastest = serial.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
    let kept: Vec<f64> = r
        .profile
        .iter()
        .filter(|q| q.0 == ThrottlePolicy::Org)
        .map(|q| q.1)
        .collect();
    assert_eq!(kept, [fastest], "{r:?}");
    if r.chosen == ThrottlePolicy::Org {
        let bound = serial
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|t| t.0);
        assert_eq!(r.serial_bound, bound, "{r:?}");
    }
    launches_stay_exact(&mut t, &dev, &x, &want);
    assert_eq!(t.report().serial_bound, r.serial_bound);
}

/// Layouts whose index array is held as 16-bit offsets from the row
/// (`ThrottleOptions::narrow_index`) on a band of 2^17 rows (columns within
/// 160 of the row; every 4096th row 200 long), under every policy and
/// partitioner: exact, equal to the plain layouts' results, also prepared
/// again. The same band with one column 100000 away from its row keeps
/// every layout plain (one offset does not fit), and is exact too.
#[test]
fn narrow_index_layouts_match_the_twin() {
    use warpfit::{CacheSize, Partitioner};
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let n = 1usize << 17;
    let (row_ptr, col) = band(n, 4096, 200, 9, true);
    let mut far = col.clone();
    // Row 7's last column, 100000 away.
    let at = row_ptr[8] as usize - 1;
    far[at] = 100_007;
    let val: Vec<u32> = (0..col.len() as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let x: Vec<u32> = (0..n as u32).map(|i| i ^ 0x5bd1_e995).collect();
    for (name, col, narrow) in [("band", &col, true), ("band + far column", &far, false)] {
        let mut want = vec![0u32; n];
        spmv_u32::launch(&cpu, n, &row_ptr, col, &val, &x, &mut want[..]).unwrap();
        for partitioner in [Partitioner::Columns, Partitioner::Kd] {
            for policy in ThrottlePolicy::ALL {
                let what = format!("{name} {partitioner} {policy}");
                let opts = ThrottleOptions::default()
                    .with_policy(policy)
                    .with_exhaustive(true)
                    .with_partitioner(partitioner)
                    .with_cache(CacheSize::Bytes(128 << 10));
                let mut t = spmv_u32::throttle(&dev, &opts, n, n, &row_ptr, col, &val).unwrap();
                let mut y = vec![0u32; n];
                t.launch(&x, &mut y[..]).unwrap();
                assert_eq!(y, want, "{what}");
                let r = t.report().clone();
                // A remapped numbering moves columns (the far one may come
                // near its row); the original one keeps the band's offsets
                // within 200 and the far column 100000 away.
                if !r.remapped {
                    assert_eq!(
                        r.narrow_index,
                        narrow && r.chosen != ThrottlePolicy::Org,
                        "{what}: {r:?}"
                    );
                }
                launches_stay_exact(&mut t, &dev, &x, &want);
                let plain = opts.with_narrow_index(false);
                let mut tp = spmv_u32::throttle(&dev, &plain, n, n, &row_ptr, col, &val).unwrap();
                tp.launch(&x, &mut y[..]).unwrap();
                assert_eq!(y, want, "{what}: plain");
                assert!(!tp.report().narrow_index, "{what}: plain");
            }
        }
    }
}

/// `auto` with the remapping order left to it, on a square kernel: `org_r`
/// timed in both orders, the faster one's time in the profile, and when
/// `org_r` wins the handle runs in that order (its plan order the level
/// order exactly when levels won), whichever order won, every launch
/// exact. Pinned, or rectangular, one order.
#[test]
fn auto_times_org_r_in_both_remapping_orders() {
    use warpfit::runtime::gen;
    use warpfit::runtime::partition::level_order;
    use warpfit::{CacheSize, Partitioner, RemapOrder};
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let matrices = [
        ("uniform", gen::uniform(1 << 14, 8, 11).unwrap()),
        (
            "rgg random order",
            gen::rgg_with(16384, 3, gen::RggOrder::Random).unwrap(),
        ),
    ];
    let mut org_r_orders = Vec::new();
    for ((name, a), round) in matrices.iter().flat_map(|m| [0, 1].map(|r| (m, r))) {
        let (n, m) = (a.nrows(), a.ncols());
        let val: Vec<u32> = (0..a.nnz() as u32).map(|i| i % 7 + 1).collect();
        let x: Vec<u32> = (0..m as u32).map(|i| i % 13).collect();
        let mut want = vec![0u32; n];
        spmv_u32::launch(&cpu, n, a.row_ptr(), a.col_idx(), &val, &x, &mut want[..]).unwrap();
        let levels = level_order(a, 0).unwrap();
        let what = format!("{name}, round {round}");
        let opts = ThrottleOptions::default()
            .with_policy(ThrottlePolicy::Auto)
            .with_exhaustive(true)
            .with_partitioner(Partitioner::Kd)
            .with_cache(CacheSize::Bytes(16 << 10));
        let mut t = spmv_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
        let mut y = vec![0u32; n];
        t.launch(&x, &mut y[..]).unwrap();
        assert_eq!(y, want, "{what}");
        let r = t.report().clone();
        let orders: Vec<RemapOrder> = r.remap_profile.iter().map(|(o, _)| *o).collect();
        assert_eq!(orders, RemapOrder::ALL, "{what}: {r:?}");
        let (fast, fast_ms) = r
            .remap_profile
            .iter()
            .copied()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        let org_r: Vec<f64> = r
            .profile
            .iter()
            .filter(|(p, _)| *p == ThrottlePolicy::OrgR)
            .map(|(_, ms)| *ms)
            .collect();
        assert_eq!(org_r, [fast_ms], "{what}: the faster order in the profile");
        assert_eq!(r.profile.len(), 6, "{what}: {r:?}");
        if r.chosen == ThrottlePolicy::OrgR {
            org_r_orders.push(fast);
            assert_eq!(r.remap_order, Some(fast), "{what}: {r:?}");
            let order = t.plan_order().expect("org_r runs remapped");
            assert_eq!(
                order.tasks == &levels[..],
                fast == RemapOrder::Levels,
                "{what}: the plan order is the kept order's"
            );
            let perm = order.tasks.to_vec();
            let to_plan = |v: &[u32]| perm.iter().map(|&o| v[o as usize]).collect::<Vec<u32>>();
            let xr = dev.upload(&to_plan(&x)).unwrap();
            let mut yr = dev.alloc::<u32>(n).unwrap();
            t.launch_in_plan_order(&xr, &mut yr).unwrap();
            assert!(yr.to_vec().unwrap() == to_plan(&want), "{what}: plan order");
        } else {
            assert_eq!(r.remap_order, None, "{what}: {r:?}");
            assert!(t.plan_order().is_none(), "{what}");
        }
        // Enqueued over DeviceVecs, and on the host again: the same.
        let xd = dev.upload(&x).unwrap();
        let yd = dev.alloc::<u32>(n).unwrap();
        t.enqueue(&xd, &yd).unwrap();
        t.check().unwrap();
        assert!(yd.to_vec().unwrap() == want, "{what}: enqueued");
        let mut y = vec![0u32; n];
        t.launch(&x, &mut y[..]).unwrap();
        assert_eq!(y, want, "{what}: again");
        assert_eq!(
            t.report().remap_profile,
            r.remap_profile,
            "{what}: no second choice"
        );

        // Pinned: one order.
        for pinned in RemapOrder::ALL {
            let mut t = spmv_u32::throttle(
                &dev,
                &opts.with_remap_order(pinned),
                n,
                m,
                a.row_ptr(),
                a.col_idx(),
                &val,
            )
            .unwrap();
            t.launch(&x, &mut y[..]).unwrap();
            assert_eq!(y, want, "{what}: pinned {pinned}");
            let r = t.report();
            assert_eq!(r.remap_profile.len(), 1, "{what}: pinned {pinned}: {r:?}");
            assert_eq!(r.remap_profile[0].0, pinned, "{what}: {r:?}");
        }
    }
    eprintln!("auto kept org_r by {org_r_orders:?}");
    // Rectangular: Algorithm 5 only, and no error.
    let a = &matrices[0].1;
    let n = a.nrows();
    let val: Vec<u32> = (0..a.nnz() as u32).map(|i| i % 7 + 1).collect();
    let col: Vec<u32> = a.col_idx().iter().map(|&c| c + n as u32).collect();
    let x: Vec<u32> = (0..2 * n as u32).map(|i| i % 13).collect();
    let mut want = vec![0u32; n];
    spmv_u32::launch(&cpu, n, a.row_ptr(), &col, &val, &x, &mut want[..]).unwrap();
    let opts = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::Auto)
        .with_exhaustive(true)
        .with_partitioner(Partitioner::Kd)
        .with_cache(CacheSize::Bytes(16 << 10));
    let mut t = spmv_u32::throttle(&dev, &opts, n, 2 * n, a.row_ptr(), &col, &val).unwrap();
    let mut y = vec![0u32; n];
    t.launch(&x, &mut y[..]).unwrap();
    assert_eq!(y, want, "rectangular");
    let orders: Vec<RemapOrder> = t.report().remap_profile.iter().map(|(o, _)| *o).collect();
    assert_eq!(orders, [RemapOrder::Partitions], "rectangular");
}

/// A remapped schedule in the plan's numbering: the handle's permutations
/// turn the caller's vectors into plan order once, launches in plan order
/// give the permuted result, and for a square matrix (one permutation on
/// both sides) an output feeds the next launch as it is. Enqueued launches
/// over `DeviceVec`s agree with waiting ones. Both remapping orders; the
/// level order is the matrix's breadth-first order, and needs a square
/// kernel.
#[test]
fn remapped_handles_run_in_plan_order() {
    use warpfit::runtime::gen;
    use warpfit::runtime::partition::level_order;
    use warpfit::{CacheSize, Partitioner, RemapOrder};
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let a = gen::uniform(1 << 14, 8, 11).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    assert_eq!(n, m);
    let val: Vec<u32> = (0..a.nnz() as u32).map(|i| i % 7 + 1).collect();
    let x: Vec<u32> = (0..m as u32).map(|i| i % 13).collect();
    // Two steps of x ← A x in the caller's numbering, on the CPU.
    let mut y1 = vec![0u32; n];
    spmv_u32::launch(&cpu, n, a.row_ptr(), a.col_idx(), &val, &x, &mut y1[..]).unwrap();
    let mut y2 = vec![0u32; n];
    spmv_u32::launch(&cpu, n, a.row_ptr(), a.col_idx(), &val, &y1, &mut y2[..]).unwrap();
    let levels = level_order(&a, 0).unwrap();
    for (policy, order) in [ThrottlePolicy::OrgR, ThrottlePolicy::Cf, ThrottlePolicy::Sj]
        .into_iter()
        .flat_map(|p| RemapOrder::ALL.map(|o| (p, o)))
    {
        let opts = ThrottleOptions::default()
            .with_policy(policy)
            .with_exhaustive(true)
            .with_partitioner(Partitioner::Kd)
            .with_cache(CacheSize::Bytes(16 << 10))
            .with_remap(true)
            .with_remap_order(order);
        let policy = format!("{policy} {order}");
        let mut t = spmv_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
        let mut y = vec![0u32; n];
        // No plan order before the first launch chooses.
        assert!(t.plan_order().is_none());
        t.launch(&x, &mut y[..]).unwrap();
        assert_eq!(y, y1, "{policy}: the caller's numbering");
        let order = t
            .plan_order()
            .expect("a remapped schedule has a plan order");
        assert_eq!(
            order.tasks, order.gathered,
            "{policy}: square, one permutation"
        );
        if opts.remap_order == Some(RemapOrder::Levels) {
            assert_eq!(order.tasks, &levels[..], "{policy}: the level order");
        }
        let perm = order.tasks.to_vec();
        let to_plan = |v: &[u32]| perm.iter().map(|&o| v[o as usize]).collect::<Vec<u32>>();
        let xr = dev.upload(&to_plan(&x)).unwrap();
        let mut yr = dev.alloc::<u32>(n).unwrap();
        let mut zr = dev.alloc::<u32>(n).unwrap();
        t.launch_in_plan_order(&xr, &mut yr).unwrap();
        assert!(yr.to_vec().unwrap() == to_plan(&y1), "{policy}: plan order");
        t.launch_in_plan_order(&yr, &mut zr).unwrap();
        assert!(
            zr.to_vec().unwrap() == to_plan(&y2),
            "{policy}: two steps in plan order"
        );
        // Enqueued in plan order: x <- A x with no permutation between.
        t.enqueue_in_plan_order(&xr, &yr).unwrap();
        t.enqueue_in_plan_order(&yr, &zr).unwrap();
        t.check().unwrap();
        assert!(
            zr.to_vec().unwrap() == to_plan(&y2),
            "{policy}: enqueued in plan order"
        );
        // Enqueued, in the caller's numbering again.
        let xd = dev.upload(&x).unwrap();
        let yd = dev.alloc::<u32>(n).unwrap();
        for _ in 0..3 {
            t.enqueue(&xd, &yd).unwrap();
        }
        t.check().unwrap();
        assert!(yd.to_vec().unwrap() == y1, "{policy}: enqueued");
    }
    // A rectangular kernel has no level order: a clear error.
    let wide = warpfit::runtime::Csr::new(
        n,
        2 * n,
        a.row_ptr().to_vec(),
        a.col_idx().iter().map(|&c| c + n as u32).collect(),
        val.clone(),
    )
    .unwrap();
    let opts = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::OrgR)
        .with_exhaustive(true)
        .with_partitioner(Partitioner::Kd)
        .with_cache(CacheSize::Bytes(16 << 10))
        .with_remap_order(RemapOrder::Levels);
    let Err(e) = spmv_u32::throttle(
        &dev,
        &opts,
        n,
        2 * n,
        wide.row_ptr(),
        wide.col_idx(),
        wide.values(),
    ) else {
        panic!("levels on a rectangular kernel");
    };
    assert!(e.to_string().contains("remapping order `levels`"), "{e}");
}

/// `auto` by the cost model, plans made on the device: each device plan
/// pinned (column blocks of several counts, the level order) and the
/// model's own choice give the twin's results exactly (u32) and within
/// rounding (f32); the device level order is the host's; a kernel that
/// cannot be renumbered refuses the level order and still runs the rest;
/// launches over other arrays prepare the same plan again; a second handle
/// over the same arrays reads the decision from the plan cache.
#[test]
fn auto_by_the_model_plans_on_the_device_and_matches_the_twin() {
    use warpfit::__private::LEVEL_ROOTS;
    use warpfit::gpu::levels::spread_roots;
    use warpfit::runtime::gen;
    use warpfit::runtime::partition::level_order_from_roots;
    use warpfit::{CacheSize, DevicePlan, RemapOrder};
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let matrices = [
        ("uniform 2^14", gen::uniform(1 << 14, 8, 11).unwrap()),
        ("rmat 13", gen::rmat(13, 16, 5).unwrap()),
        (
            "rgg random order",
            gen::rgg_with(16384, 3, gen::RggOrder::Random).unwrap(),
        ),
    ];
    // Half of 16 KiB holds 2048 f32: 4 to 8 column blocks.
    let opts = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::Auto)
        .with_cache(CacheSize::Bytes(16 << 10))
        .with_plan_cache(false);
    for (name, a) in &matrices {
        let (n, m) = (a.nrows(), a.ncols());
        let val: Vec<u32> = (0..a.nnz() as u32).map(|i| i % 7 + 1).collect();
        let x: Vec<u32> = (0..m as u32).map(|i| i % 13).collect();
        let mut want = vec![0u32; n];
        spmv_u32::launch(&cpu, n, a.row_ptr(), a.col_idx(), &val, &x, &mut want[..]).unwrap();
        let xf: Vec<f32> = (0..m).map(|i| 1.0 + (i % 7) as f32 / 7.0).collect();
        let mut want_f = vec![0f32; n];
        spmv::launch(
            &cpu,
            n,
            a.row_ptr(),
            a.col_idx(),
            a.values(),
            &xf,
            &mut want_f[..],
        )
        .unwrap();
        let blocks = m.div_ceil(2048);
        let pins = [
            Some(DevicePlan::ColumnBlocks { k: 2 }),
            Some(DevicePlan::ColumnBlocks { k: blocks }),
            Some(DevicePlan::Levels),
            None,
        ];
        for pin in pins {
            let what = format!("{name} {pin:?}");
            let mut t =
                spmv_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
            if let Some(p) = pin {
                t.pin_device_plan(p).unwrap();
            }
            let mut y = vec![0u32; n];
            t.launch(&x, &mut y[..]).unwrap();
            assert_eq!(y, want, "{what}");
            let r = t.report().clone();
            let model = r.model.clone().expect("auto by the model reports");
            match pin {
                Some(DevicePlan::ColumnBlocks { k }) => {
                    assert_eq!(
                        (r.chosen, r.partitions),
                        (ThrottlePolicy::Cf, k),
                        "{what}: {r:?}"
                    );
                }
                Some(DevicePlan::Levels) => {
                    assert_eq!(r.chosen, ThrottlePolicy::OrgR, "{what}: {r:?}");
                    assert_eq!(r.remap_order, Some(RemapOrder::Levels), "{what}");
                    let order = t.plan_order().expect("a remapped plan has an order");
                    // The model's order starts from LEVEL_ROOTS spread roots.
                    let roots = spread_roots(a.nrows(), 0, LEVEL_ROOTS).unwrap();
                    let want = level_order_from_roots(a, &roots).unwrap();
                    assert_eq!(order.tasks, &want[..], "{what}");
                    assert_eq!(order.tasks, order.gathered, "{what}");
                }
                Some(DevicePlan::Org) => unreachable!(),
                None if name.starts_with("rmat") => {
                    // RMAT's hubs may make its gathers local enough for org.
                    if !model.timed.is_empty() {
                        assert_eq!(model.timed[0].0, DevicePlan::Org, "{what}: {model:?}");
                    }
                }
                None => {
                    // Random numbering, x beyond the cache: candidates timed,
                    // org first.
                    assert_eq!(
                        model.timed.first().map(|t| t.0),
                        Some(DevicePlan::Org),
                        "{what}: {model:?}"
                    );
                    // A kernel this small cannot pay for a candidate's
                    // preparation within 20 launches; otherwise it is timed.
                    assert!(
                        model.timed.len() >= 2 || model.reason.contains("would not pay back"),
                        "{what}: {model:?}"
                    );
                    assert!(model.sharing < 0.5, "{what}: {model:?}");
                }
            }
            // Device-resident arrays: prepared again, the same plan.
            let xd = dev.upload(&x).unwrap();
            let mut yd = dev.alloc::<u32>(n).unwrap();
            t.launch(&xd, &mut yd).unwrap();
            assert_eq!(yd.to_vec().unwrap(), want, "{what}: DeviceVecs");
            assert_eq!(t.report().chosen, r.chosen, "{what}");
            // A fault is an error; the handle runs on.
            assert!(t.launch(&x[..m / 2], &mut y[..]).is_err(), "{what}");
            t.launch(&x, &mut y[..]).unwrap();
            assert_eq!(y, want, "{what}: after a fault");

            let mut tf =
                spmv::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values()).unwrap();
            if let Some(p) = pin {
                tf.pin_device_plan(p).unwrap();
            }
            let mut yf = vec![f32::NAN; n];
            tf.launch(&xf, &mut yf[..]).unwrap();
            for (r, (g, w)) in yf.iter().zip(&want_f).enumerate() {
                let mag: f32 = a
                    .row_range(r)
                    .map(|k| (a.values()[k] * xf[a.col_idx()[k] as usize]).abs())
                    .sum();
                assert!(
                    (g - w).abs() <= 1e-5 * (1.0 + mag),
                    "{what}: row {r}: {g} vs {w}"
                );
            }

            // `relax` folds from dist[v] beside dist[src[e]]: on these square
            // matrices the level order renumbers both alike.
            let mut tm =
                relax::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values()).unwrap();
            if let Some(p) = pin {
                tm.pin_device_plan(p).unwrap();
            }
            let mut got = vec![0f32; n];
            tm.launch(&xf, &mut got[..]).unwrap();
            let mut want_min = vec![0f32; n];
            relax::launch(
                &cpu,
                n,
                a.row_ptr(),
                a.col_idx(),
                a.values(),
                &xf,
                &mut want_min[..],
            )
            .unwrap();
            assert_eq!(got, want_min, "{what}: min-plus");
        }
        // Over arrays already on the device: copied there, the same plans.
        let (dptr, dcol, dval) = (
            dev.upload(a.row_ptr()).unwrap(),
            dev.upload(a.col_idx()).unwrap(),
            dev.upload(&val).unwrap(),
        );
        for pin in [DevicePlan::ColumnBlocks { k: 3 }, DevicePlan::Levels] {
            let mut t =
                spmv_u32::throttle_resident(&dev, &opts, n, m, &dptr, &dcol, &dval).unwrap();
            t.pin_device_plan(pin).unwrap();
            let mut y = vec![0u32; n];
            t.launch(&x, &mut y[..]).unwrap();
            assert_eq!(y, want, "{name} resident {pin}");
            // Handed over by value: kept as they are, the same plans.
            let (optr, ocol, oval) = (
                dev.upload(a.row_ptr()).unwrap(),
                dev.upload(a.col_idx()).unwrap(),
                dev.upload(&val).unwrap(),
            );
            let mut t = spmv_u32::throttle_owned(&dev, &opts, n, m, optr, ocol, oval).unwrap();
            t.pin_device_plan(pin).unwrap();
            let mut y = vec![0u32; n];
            t.launch(&x, &mut y[..]).unwrap();
            assert_eq!(y, want, "{name} owned {pin}");
        }
        // Arrays in host memory are refused by name.
        let cpu_col = cpu.upload(a.col_idx()).unwrap();
        let e = spmv_u32::throttle_owned(
            &dev,
            &opts,
            n,
            m,
            dev.upload(a.row_ptr()).unwrap(),
            cpu_col,
            dev.upload(&val).unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`col` is in the CPU"), "{e}");
        let exhaustive = opts.with_exhaustive(true);
        let e = spmv_u32::throttle_resident(&dev, &exhaustive, n, m, &dptr, &dcol, &dval)
            .unwrap_err()
            .to_string();
        assert!(e.contains("throttle_resident plans on the device"), "{e}");
        // A pin is refused after the choice, and outside the model.
        let mut t = spmv_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
        let mut y = vec![0u32; n];
        t.launch(&x, &mut y[..]).unwrap();
        assert!(t.pin_device_plan(DevicePlan::Levels).is_err(), "{name}");
        let exhaustive = opts.with_exhaustive(true);
        let mut t =
            spmv_u32::throttle(&dev, &exhaustive, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
        assert!(t.pin_device_plan(DevicePlan::Levels).is_err(), "{name}");
        assert!(
            t.pin_device_plan(DevicePlan::ColumnBlocks { k: 99 })
                .is_err(),
            "{name}"
        );
    }

    // The plan cache: a device whose kernel cache is a fresh folder.
    let dir = std::env::temp_dir().join(format!("warpfit-plan-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cached = Device::Cuda(warpfit::CudaDevice::with_cache_dir(0, Some(dir.clone())).unwrap());
    let (_, a) = &matrices[0];
    let (n, m) = (a.nrows(), a.ncols());
    let val: Vec<u32> = (0..a.nnz() as u32).map(|i| i % 7 + 1).collect();
    let x: Vec<u32> = (0..m as u32).map(|i| i % 13).collect();
    let mut want = vec![0u32; n];
    spmv_u32::launch(&cpu, n, a.row_ptr(), a.col_idx(), &val, &x, &mut want[..]).unwrap();
    let with_cache = opts.with_plan_cache(true);
    let mut chosen = Vec::new();
    for round in 0..2 {
        let mut t =
            spmv_u32::throttle(&cached, &with_cache, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
        let mut y = vec![0u32; n];
        t.launch(&x, &mut y[..]).unwrap();
        assert_eq!(y, want, "round {round}");
        let model = t.report().model.clone().unwrap();
        assert_eq!(model.from_cache, round == 1, "round {round}: {model:?}");
        assert_eq!(model.cache_error, None, "round {round}");
        chosen.push(t.report().chosen);
    }
    assert_eq!(chosen[0], chosen[1]);
    // Another matrix of the same size is another key: decided again.
    let b = gen::uniform(1 << 14, 8, 12).unwrap();
    let mut t =
        spmv_u32::throttle(&cached, &with_cache, n, m, b.row_ptr(), b.col_idx(), &val).unwrap();
    let mut y = vec![0u32; n];
    t.launch(&x, &mut y[..]).unwrap();
    assert!(!t.report().model.clone().unwrap().from_cache);
    // A corrupt entry is decided again, never trusted.
    for e in std::fs::read_dir(dir.join("plans")).unwrap() {
        std::fs::write(
            e.unwrap().path(),
            "warpfit-plan-cache 1\nkey 0\nplan columns 3\nsum 0\n",
        )
        .unwrap();
    }
    let mut t =
        spmv_u32::throttle(&cached, &with_cache, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
    t.launch(&x, &mut y[..]).unwrap();
    assert_eq!(y, want, "after corruption");
    assert!(!t.report().model.clone().unwrap().from_cache);
    // A gathered array that fits the cache runs `org` from its sizes
    // alone: nothing hashed, sampled, timed or written to the cache.
    let _ = std::fs::remove_dir_all(dir.join("plans"));
    let fits = ThrottleOptions::default().with_plan_cache(true);
    let mut t = spmv_u32::throttle(&cached, &fits, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
    t.launch(&x, &mut y[..]).unwrap();
    assert_eq!(y, want, "fits");
    let model = t.report().model.clone().unwrap();
    assert_eq!(t.report().chosen, ThrottlePolicy::Org, "{model:?}");
    assert!(model.reason.contains("fits the cache"), "{model:?}");
    assert!(model.steps.is_empty() && model.timed.is_empty() && !model.from_cache);
    assert!(!dir.join("plans").exists(), "nothing cached");
    // Gathers already local run `org` from the sample, before the cache
    // key: sampled, but nothing hashed, timed or written to the cache.
    let g = gen::grid2d(128).unwrap();
    let (gn, gval) = (g.nrows(), vec![1u32; g.nnz()]);
    let gx: Vec<u32> = (0..gn as u32).map(|i| i % 13).collect();
    let mut gwant = vec![0u32; gn];
    spmv_u32::launch(
        &cpu,
        gn,
        g.row_ptr(),
        g.col_idx(),
        &gval,
        &gx,
        &mut gwant[..],
    )
    .unwrap();
    let mut t = spmv_u32::throttle(
        &cached,
        &with_cache,
        gn,
        gn,
        g.row_ptr(),
        g.col_idx(),
        &gval,
    )
    .unwrap();
    let mut gy = vec![0u32; gn];
    t.launch(&gx, &mut gy[..]).unwrap();
    assert_eq!(gy, gwant, "grid");
    let model = t.report().model.clone().unwrap();
    assert_eq!(t.report().chosen, ThrottlePolicy::Org, "{model:?}");
    assert!(model.reason.contains("already local"), "{model:?}");
    let steps: Vec<&str> = model.steps.iter().map(|(s, _)| *s).collect();
    assert_eq!(steps, ["sample"], "{model:?}");
    assert!(model.timed.is_empty() && !model.from_cache, "{model:?}");
    assert!(!dir.join("plans").exists(), "nothing cached");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A handle alternating between sets of arrays (`x1 → y1`, `x2 → y2`, as
/// an iterative driver swaps its vectors) prepares its schedule once and
/// rebinds it to the other arrays: every plan's rebound launches match the
/// twin, a fault in one is reported by it alone, and the handle runs on.
#[test]
fn rebound_schedules_match_the_twin_over_alternating_arrays() {
    use warpfit::runtime::gen;
    use warpfit::{CacheSize, DevicePlan};
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let a = gen::uniform(1 << 14, 8, 21).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let val: Vec<u32> = (0..a.nnz() as u32).map(|i| i % 5 + 1).collect();
    let xs: Vec<Vec<u32>> = (0..3u32)
        .map(|s| (0..m as u32).map(|i| (i * (s + 3)) % 17).collect())
        .collect();
    let wants: Vec<Vec<u32>> = xs
        .iter()
        .map(|x| {
            let mut y = vec![0u32; n];
            spmv_u32::launch(&cpu, n, a.row_ptr(), a.col_idx(), &val, x, &mut y[..]).unwrap();
            y
        })
        .collect();
    let small = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::Auto)
        .with_cache(CacheSize::Bytes(16 << 10))
        .with_plan_cache(false);
    let fits = small.with_cache(CacheSize::Bytes(64 << 20));
    let runs = [
        (small, Some(DevicePlan::ColumnBlocks { k: 3 })),
        (small, Some(DevicePlan::Levels)),
        (small, None),
        (fits, None),
    ];
    for (opts, pin) in runs {
        let what = format!("{pin:?}, {:?}", opts.cache);
        let mut t = spmv_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
        if let Some(p) = pin {
            t.pin_device_plan(p).unwrap();
        }
        let xd: Vec<DeviceVec<u32>> = xs.iter().map(|x| dev.upload(x).unwrap()).collect();
        let mut yd: Vec<DeviceVec<u32>> = (0..3).map(|_| dev.alloc::<u32>(n).unwrap()).collect();
        for round in 0..3 {
            for (i, (x, y)) in xd.iter().zip(yd.iter_mut()).enumerate() {
                t.launch(x, y).unwrap();
                assert_eq!(
                    y.to_vec().unwrap(),
                    wants[i],
                    "{what}: round {round}, set {i}"
                );
            }
        }
        let chosen = t.report().chosen;
        // Enqueued without waiting, then checked once.
        for (x, y) in xd.iter().zip(yd.iter_mut()).rev() {
            t.enqueue(x, y).unwrap();
        }
        t.check().unwrap();
        for (i, y) in yd.iter().enumerate() {
            assert_eq!(y.to_vec().unwrap(), wants[i], "{what}: enqueued set {i}");
        }
        // A gathered array too short faults in its own launch; the next
        // launches, over the other arrays and over it again, are exact.
        let short = dev.upload(&xs[0][..m / 2]).unwrap();
        assert!(t.launch(&short, &mut yd[0]).is_err(), "{what}");
        for (i, (x, y)) in xd.iter().zip(yd.iter_mut()).enumerate() {
            t.launch(x, y).unwrap();
            assert_eq!(
                y.to_vec().unwrap(),
                wants[i],
                "{what}: after the fault, set {i}"
            );
        }
        // A fault in the launch before the last, both enqueued, is
        // reported by the next check. A remapped plan refuses the short
        // array before it launches (its gathered length is the plan's).
        let remapped = t.plan_order().is_some();
        match t.enqueue(&short, &yd[0]) {
            Err(e) => assert!(remapped, "{what}: {e}"),
            Ok(()) => {
                t.enqueue(&xd[1], &yd[1]).unwrap();
                assert!(t.check().is_err(), "{what}: the fault of the launch before");
                t.check().unwrap();
            }
        }
        t.launch(&xd[0], &mut yd[0]).unwrap();
        assert_eq!(yd[0].to_vec().unwrap(), wants[0], "{what}: at the end");
        assert_eq!(t.report().chosen, chosen, "{what}: one choice");
    }
}

/// A cached decision `levels` keeps its level order beside the entry: the
/// first rerun makes the order and keeps it, the next reads it back (no
/// order made), and an order that fails its checks (a word changed, the
/// file cut) is made again, never trusted; every run matches the twin.
#[test]
fn a_cached_level_order_is_read_back_and_a_bad_one_made_again() {
    use warpfit::runtime::gen;
    use warpfit::CacheSize;
    let Some(_) = gpu() else { return };
    let cpu = Device::cpu();
    let dir = std::env::temp_dir().join(format!("warpfit-order-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dev = Device::Cuda(warpfit::CudaDevice::with_cache_dir(0, Some(dir.clone())).unwrap());
    let a = gen::rgg_with(16384, 3, gen::RggOrder::Random).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let val: Vec<u32> = (0..a.nnz() as u32).map(|i| i % 7 + 1).collect();
    let x: Vec<u32> = (0..m as u32).map(|i| i % 13).collect();
    let mut want = vec![0u32; n];
    spmv_u32::launch(&cpu, n, a.row_ptr(), a.col_idx(), &val, &x, &mut want[..]).unwrap();
    let opts = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::Auto)
        .with_cache(CacheSize::Bytes(16 << 10))
        .with_plan_cache(true);
    // What a run decided and did, from its report: the schedule, whether
    // the decision came from the cache, whether a kept order was read
    // back, and why not where it was not.
    let run_keeping = |what: &str| {
        let mut t = spmv_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
        let mut y = vec![0u32; n];
        t.launch(&x, &mut y[..]).unwrap();
        assert_eq!(y, want, "{what}");
        t.launch(&x, &mut y[..]).unwrap();
        assert_eq!(y, want, "{what}: again");
        let kept = t.wait_for_plan_cache().map_err(|e| e.to_string());
        let model = t.report().model.clone().unwrap();
        // The write's failure, where it failed, is the report's too.
        match (&model.cache_error, &kept) {
            (None, Ok(())) => {}
            (Some(said), Err(e)) => assert!(e.contains(said.as_str()), "{what}: {e}"),
            _ => panic!("{what}: {kept:?}, {model:?}"),
        }
        let steps: Vec<&str> = model.steps.iter().map(|(s, _)| *s).collect();
        let read = steps.contains(&"order read and uploaded");
        // Read back, or a reason why not; never both.
        assert!(
            !(read && model.order_not_read.is_some()),
            "{what}: {model:?}"
        );
        (
            (t.report().chosen, model.from_cache, read),
            model.order_not_read.unwrap_or_default(),
            kept,
        )
    };
    let run = |what: &str| {
        let (outcome, not_read, kept) = run_keeping(what);
        assert_eq!(kept, Ok(()), "{what}");
        (outcome, not_read)
    };
    let (decided, _) = run("decided");
    assert!(!decided.1, "{decided:?}");
    // The entry rewritten to the decision `levels`, as the cache writes it.
    let plans = dir.join("plans");
    let entry = std::fs::read_dir(&plans)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "plan"))
        .expect("a plan entry");
    let key = std::fs::read_to_string(&entry)
        .unwrap()
        .lines()
        .find_map(|l| u64::from_str_radix(l.strip_prefix("key ")?, 16).ok())
        .unwrap();
    let levels = warpfit::__private::plan_cache_entry(key, warpfit::DevicePlan::Levels);
    std::fs::write(&entry, levels).unwrap();
    let order = entry.with_extension("order");
    let _ = std::fs::remove_file(&order);
    // Made and kept (the report saying why it was made), then read back.
    let (made, why) = run("made");
    assert_eq!(made, (ThrottlePolicy::OrgR, true, false));
    assert!(
        why.contains("level order kept in") && why.contains(".order"),
        "{why}"
    );
    let kept = std::fs::read(&order).expect("the order kept beside the entry");
    assert!(kept.len() >= 4 * n && kept.starts_with(b"warpfit-level-order 1\n"));
    assert_eq!(
        run("read back"),
        ((ThrottlePolicy::OrgR, true, true), String::new())
    );
    // A word changed: made again (and kept again, then read back).
    let mut changed = kept.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    std::fs::write(&order, &changed).unwrap();
    let (again, why) = run("a word changed");
    assert_eq!(again, (ThrottlePolicy::OrgR, true, false));
    assert!(why.contains("digest"), "{why}");
    assert_eq!(std::fs::read(&order).unwrap(), kept, "kept again");
    assert_eq!(run("read back again").0, (ThrottlePolicy::OrgR, true, true));
    // Two rows swapped, the digest then wrong; the file cut; the header
    // edited to another row count (words cut to match), its checksum then
    // wrong: made again, each saying why. (A well-summed header of another
    // row count is refused by `order_cache`'s unit test.)
    let mut swapped = kept.clone();
    let words = kept.len() - 4 * n;
    swapped[words..words + 4].copy_from_slice(&kept[words + 4..words + 8]);
    swapped[words + 4..words + 8].copy_from_slice(&kept[words..words + 4]);
    let cut = kept[..kept.len() - 4].to_vec();
    let other_rows = String::from_utf8_lossy(&kept[..words])
        .replace(&format!("rows {n}\n"), &format!("rows {}\n", n - 1))
        .into_bytes()
        .into_iter()
        .chain(kept[words..kept.len() - 4].iter().copied())
        .collect::<Vec<u8>>();
    for (what, bytes, reason) in [
        ("swapped", swapped, "digest"),
        ("cut", cut, "where the header says"),
        ("header edited", other_rows, "checksum"),
    ] {
        std::fs::write(&order, &bytes).unwrap();
        let (again, why) = run(what);
        assert_eq!(again, (ThrottlePolicy::OrgR, true, false), "{what}");
        assert!(why.contains(reason), "{what}: {why}");
        assert_eq!(std::fs::read(&order).unwrap(), kept, "{what}: kept again");
    }
    // The order's path taken by a folder: not read, and not written
    // either, which the handle says when asked; the run is unaffected.
    std::fs::remove_file(&order).unwrap();
    std::fs::create_dir(&order).unwrap();
    let (again, why, write) = run_keeping("unwritable");
    assert_eq!(again, (ThrottlePolicy::OrgR, true, false));
    assert!(!why.is_empty());
    let e = write.unwrap_err();
    assert!(
        e.contains("keeping the level order in") && e.contains(".order"),
        "{e}"
    );
    assert!(std::fs::metadata(&order).unwrap().is_dir());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ThrottleOptions::caller_renumbers`: the level order `auto` chooses is
/// left to the caller. The handle runs `org` (the twin's results), lays
/// nothing out in the order and hands it over (`device_level_order`: the
/// host's order from the same roots), whether the model decided it, it was
/// pinned, or a rerun read it from the plan cache. Rejected by the caller,
/// the handle goes on with `org` and the plan cache says `org` from then on.
#[test]
fn a_level_order_left_to_the_caller_runs_org_until_rejected() {
    use warpfit::__private::LEVEL_ROOTS;
    use warpfit::gpu::levels::spread_roots;
    use warpfit::runtime::gen;
    use warpfit::runtime::partition::level_order_from_roots;
    use warpfit::{CacheSize, DevicePlan, RemapOrder};
    let Some(_) = gpu() else { return };
    let cpu = Device::cpu();
    let dir = std::env::temp_dir().join(format!("warpfit-caller-order-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dev = Device::Cuda(warpfit::CudaDevice::with_cache_dir(0, Some(dir.clone())).unwrap());
    // A mesh numbered at random, `x` (250 KiB) just over the 240 KiB a
    // partition may fill: the model keeps the level order, whose levels
    // (from 128 roots) stay under the third of that it allows.
    let a = gen::poisson3d(40, gen::Poisson3dOrder::Random, 3).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let val: Vec<u32> = (0..a.nnz() as u32).map(|i| i % 7 + 1).collect();
    let x: Vec<u32> = (0..m as u32).map(|i| i % 13).collect();
    let mut want = vec![0u32; n];
    spmv_u32::launch(&cpu, n, a.row_ptr(), a.col_idx(), &val, &x, &mut want[..]).unwrap();
    let roots = spread_roots(n, 0, LEVEL_ROOTS).unwrap();
    let host_order = level_order_from_roots(&a, &roots).unwrap();
    // So many launches expected that any candidate pays for itself (the
    // first launch's preparation includes compiling).
    let opts = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::Auto)
        .with_cache(CacheSize::Bytes(480 << 10))
        .with_expected_launches(1 << 40)
        .with_caller_renumbers(true);
    // A handle's run: twice the twin's results, `org` run, the order left
    // to the caller the host's; the handle itself.
    let run = |what: &str, pin: Option<DevicePlan>| {
        let mut t = spmv_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
        if let Some(p) = pin {
            t.pin_device_plan(p).unwrap();
        }
        let mut y = vec![0u32; n];
        for _ in 0..2 {
            t.launch(&x, &mut y[..]).unwrap();
            assert_eq!(y, want, "{what}");
        }
        t.wait_for_plan_cache().unwrap();
        let r = t.report().clone();
        assert_eq!(r.chosen, ThrottlePolicy::Org, "{what}: {r:?}");
        assert!(
            t.plan_order().is_none(),
            "{what}: org runs in the given order"
        );
        (t, r)
    };
    let left_to_caller = |what: &str, t: &spmv_u32::Throttle| {
        assert_eq!(t.report().remap_order, Some(RemapOrder::Levels), "{what}");
        let o = t
            .device_level_order()
            .unwrap()
            .expect("the order left to the caller");
        assert_eq!(o.order.to_vec().unwrap(), host_order, "{what}");
        let position = o.position.to_vec().unwrap();
        for (new, &old) in host_order.iter().enumerate() {
            assert_eq!(position[old as usize], new as u32, "{what}");
        }
    };
    // Decided by the model: only `org` timed, the order made and left.
    let (t, r) = run("decided", None);
    let model = r.model.clone().unwrap();
    assert!(!model.from_cache, "{model:?}");
    assert!(model.reason.contains("left to the caller"), "{model:?}");
    let timed: Vec<DevicePlan> = model.timed.iter().map(|(p, _)| *p).collect();
    assert_eq!(timed, [DevicePlan::Org], "{model:?}");
    left_to_caller("decided", &t);
    drop(t);
    // Read back from the plan cache with its kept order: no order made.
    let (t, r) = run("from the cache", None);
    let model = r.model.clone().unwrap();
    assert!(
        model.from_cache && model.reason.contains("left to the caller"),
        "{model:?}"
    );
    let steps: Vec<&str> = model.steps.iter().map(|(s, _)| *s).collect();
    assert!(steps.contains(&"order read and uploaded"), "{steps:?}");
    left_to_caller("from the cache", &t);
    drop(t);
    // Pinned, then rejected: `org` on, no order, and the cache says `org`.
    let (mut t, _) = run("pinned", Some(DevicePlan::Levels));
    left_to_caller("pinned", &t);
    t.reject_level_order().unwrap();
    assert_eq!(t.report().remap_order, None);
    assert!(t.device_level_order().unwrap().is_none());
    let mut y = vec![0u32; n];
    t.launch(&x, &mut y[..]).unwrap();
    assert_eq!(y, want, "after the rejection");
    drop(t);
    let (t, r) = run("after the rejection, from the cache", None);
    let model = r.model.clone().unwrap();
    assert!(model.from_cache, "{model:?}");
    assert_eq!(r.remap_order, None, "{model:?}");
    assert!(t.device_level_order().unwrap().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rows with no entries, with or without a gathered array: every policy,
/// by the model and exhaustive, remapped or not, plans and runs them (no
/// fine task to partition) and every output is the fold's start.
#[test]
fn throttled_handles_of_empty_rows_run_under_every_policy() {
    use warpfit::CacheSize;
    let Some(dev) = gpu() else { return };
    let must_run = [
        (ThrottlePolicy::Org, false),
        (ThrottlePolicy::Cf, false),
        (ThrottlePolicy::Auto, false),
    ];
    for (rows, m) in [(50usize, 3000usize), (7, 0), (1, 1)] {
        let mut ran = Vec::new();
        let ptr = vec![0u32; rows + 1];
        let x: Vec<u32> = (0..m as u32).collect();
        for exhaustive in [false, true] {
            for (policy, remap) in ThrottlePolicy::ALL
                .into_iter()
                .map(|p| (p, false))
                .chain([ThrottlePolicy::Cf, ThrottlePolicy::Sj].map(|p| (p, true)))
            {
                let what = format!(
                    "{rows} rows, {m} gathered, {policy} remap={remap} exhaustive={exhaustive}"
                );
                let opts = ThrottleOptions::default()
                    .with_policy(policy)
                    .with_exhaustive(exhaustive)
                    .with_remap(remap)
                    .with_cache(CacheSize::Bytes(1 << 10))
                    .with_plan_cache(false);
                let mut t = match spmv_u32::throttle(&dev, &opts, rows, m, &ptr, &[], &[]) {
                    Ok(t) => t,
                    // A policy this handle cannot run is an error, not a
                    // panic; `org`, `cf` and `auto` run every handle.
                    Err(e) => {
                        assert!(!e.to_string().is_empty(), "{what}");
                        assert!(!must_run.contains(&(policy, remap)), "{what}: {e}");
                        continue;
                    }
                };
                ran.push((policy, remap));
                let mut y = vec![7u32; rows];
                for _ in 0..2 {
                    t.launch(&x, &mut y[..])
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(y.iter().all(|&v| v == 0), "{what}: {y:?}");
                }
            }
        }
        for p in must_run {
            assert!(
                ran.contains(&p),
                "{rows} rows, {m} gathered: {p:?} did not run"
            );
        }
    }
}

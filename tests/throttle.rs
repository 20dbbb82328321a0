//! `#[throttled]` kernels' generated handles on the CPU backend: every
//! policy's launches equal a plain launch (the CPU runs the twin over the
//! original arrays), host and device-resident arguments alike; the
//! attribute's defaults and the parameter roles; errors for remapping a
//! kernel that cannot be remapped and for arguments that do not fit. (The CUDA schedules against the CPU
//! twin: tests/macro_gpu.rs.)

mod macro_common;

use macro_common::*;
use warpfit::prelude::*;
use warpfit::runtime::gen;
use warpfit::{CacheSize, Partitioner, ThrottleStatus};

const POLICIES: [ThrottlePolicy; 7] = ThrottlePolicy::ALL;

#[test]
fn every_policy_on_the_cpu_equals_a_plain_launch() {
    let dev = Device::cpu();
    for a in [
        gen::rmat(10, 8, 1).unwrap(),
        gen::uniform(700, 9, 2).unwrap(),
    ] {
        let (n, m) = (a.nrows(), a.ncols());
        let x = quarters(m, 5);
        let mut want = vec![0f32; n];
        spmv::launch(
            &dev,
            n,
            a.row_ptr(),
            a.col_idx(),
            a.values(),
            &x,
            &mut want[..],
        )
        .unwrap();
        for policy in POLICIES {
            let opts = spmv::throttle_options().unwrap().with_policy(policy);
            let mut t =
                spmv::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values()).unwrap();
            let mut y = vec![f32::NAN; n];
            t.launch(&x, &mut y[..]).unwrap();
            assert_eq!(y, want, "{policy}, host arrays");
            // Device-resident arguments, launched again on the same plan.
            let xd = dev.upload(&x).unwrap();
            let mut yd = dev.alloc::<f32>(n).unwrap();
            t.launch(&xd, &mut yd).unwrap();
            assert_eq!(yd.to_vec().unwrap(), want, "{policy}, DeviceVecs");
            let r = t.report();
            assert_eq!(r.asked, policy);
            assert_eq!(r.chosen, ThrottlePolicy::Org, "the CPU runs the twin");
        }
    }
}

#[test]
fn integer_and_min_plus_kernels_are_exact() {
    let dev = Device::cpu();
    let a = gen::rmat(9, 8, 3).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let val: Vec<u32> = (0..a.nnz() as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let xu: Vec<u32> = (0..m as u32).map(|i| i ^ 0x5bd1_e995).collect();
    let mut want = vec![0u32; n];
    spmv_u32::launch(&dev, n, a.row_ptr(), a.col_idx(), &val, &xu, &mut want[..]).unwrap();
    let opts = spmv_u32::throttle_options().unwrap();
    let mut t = spmv_u32::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), &val).unwrap();
    let mut got = vec![0u32; n];
    t.launch(&xu, &mut got[..]).unwrap();
    assert_eq!(got, want);

    let w = weights(a.nnz());
    let dist = quarters(m, 7);
    let mut want = vec![0f32; n];
    relax::launch(&dev, n, a.row_ptr(), a.col_idx(), &w, &dist, &mut want[..]).unwrap();
    let mut t = relax::throttle(
        &dev,
        &relax::throttle_options().unwrap(),
        n,
        m,
        a.row_ptr(),
        a.col_idx(),
        &w,
    )
    .unwrap();
    let mut got = vec![0f32; n];
    t.launch(&dist, &mut got[..]).unwrap();
    assert_eq!(got, want);
}

#[test]
fn the_attribute_sets_the_default_options() {
    let o = relax::throttle_options().unwrap();
    assert_eq!(o.policy, ThrottlePolicy::Cf);
    assert_eq!(o.cache, CacheSize::Bytes(4096));
    assert_eq!(o.partitioner, Partitioner::Columns);
    assert_eq!(
        spmv::throttle_options().unwrap(),
        ThrottleOptions::default()
    );
    assert_eq!(
        spmv_u32::throttle_options().unwrap().partitioner,
        Partitioner::Kd
    );
    assert_eq!(spmv::THROTTLE_ROLES.range, 0);
    assert_eq!(spmv::THROTTLE_ROLES.fine, &[1, 2]);
    // Remapping renames `col`'s values and permutes `y` by task.
    assert_eq!(spmv::THROTTLE_ROLES.gathered, 3);
    assert_eq!(spmv::THROTTLE_ROLES.index, Some(1));
    assert_eq!(spmv::THROTTLE_ROLES.task_indexed, &[4]);
    assert_eq!(spmv::THROTTLE_ROLES.overwritten, &[4]);
    // An output read (`+=`) or stored under a condition keeps old values
    // that a remapped launch must carry into the plan's order.
    assert_eq!(spmv_add_u32::THROTTLE_ROLES.task_indexed, &[4]);
    assert!(spmv_add_u32::THROTTLE_ROLES.overwritten.is_empty());
    assert_eq!(spmv_nonzero_u32::THROTTLE_ROLES.task_indexed, &[4]);
    assert!(spmv_nonzero_u32::THROTTLE_ROLES.overwritten.is_empty());
    assert_eq!(spmv::THROTTLE_ROLES.remap_refused, "");
    // `relax` folds from `dist[v]`: the gathered array read at the task.
    assert_eq!(relax::THROTTLE_ROLES.index, None);
    // Its gather still goes through `src`: plans made on the device group
    // each task's fine tasks by it.
    assert_eq!(relax::THROTTLE_ROLES.gather_index, Some(1));
    assert_eq!(spmv::THROTTLE_ROLES.gather_index, Some(1));
    // PageRank reads `dangling[0]`: the same element in any numbering, so
    // it can be remapped, with `dangling` passed as it is.
    let pr = warpfit::apps::pagerank_pull_resident::THROTTLE_ROLES;
    assert_eq!(pr.index, Some(1), "{}", pr.remap_refused);
    assert_eq!(pr.task_indexed, &[6]);
    assert!(
        relax::THROTTLE_ROLES.remap_refused.contains("`dist`"),
        "{}",
        relax::THROTTLE_ROLES.remap_refused
    );
}

#[test]
fn a_resident_handle_needs_a_cuda_device_and_the_model() {
    let dev = Device::cpu();
    let a = gen::uniform(64, 4, 1).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let (ptr, col, val) = (
        dev.upload(a.row_ptr()).unwrap(),
        dev.upload(a.col_idx()).unwrap(),
        dev.upload(a.values()).unwrap(),
    );
    let e = spmv::throttle_resident(&dev, &ThrottleOptions::default(), n, m, &ptr, &col, &val)
        .unwrap_err()
        .to_string();
    assert!(e.contains("CUDA device"), "{e}");
}

#[test]
fn remapping_an_unfit_kernel_and_unfit_arguments_are_errors() {
    let dev = Device::cpu();
    let a = gen::uniform(64, 4, 1).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    for opts in [
        ThrottleOptions::default().with_policy(ThrottlePolicy::OrgR),
        ThrottleOptions::default()
            .with_policy(ThrottlePolicy::Cf)
            .with_remap(true),
    ] {
        let e = relax::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values())
            .unwrap_err()
            .to_string();
        assert!(e.contains("a remapped plan") && e.contains("`dist`"), "{e}");
    }
    let bad = ThrottleOptions::default().with_safety(0.0);
    let e = spmv::throttle(&dev, &bad, n, m, a.row_ptr(), a.col_idx(), a.values()).unwrap_err();
    assert!(e.to_string().contains("safety"), "{e}");
    // A column index past the stated gathered length: the plan's index check.
    let e = spmv::throttle(
        &dev,
        &ThrottleOptions::default(),
        n,
        m / 2,
        a.row_ptr(),
        a.col_idx(),
        a.values(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("spmv"), "{e}");
    // A launch whose `x` is too short faults like a plain launch, and the
    // handle still works afterwards.
    let mut t = spmv::throttle(
        &dev,
        &ThrottleOptions::default(),
        n,
        m,
        a.row_ptr(),
        a.col_idx(),
        a.values(),
    )
    .unwrap();
    let mut y = vec![0f32; n];
    assert!(t.launch(&vec![1.0f32; m / 2], &mut y[..]).is_err());
    t.launch(&vec![1.0f32; m], &mut y[..]).unwrap();
    let sums: Vec<f32> = (0..n)
        .map(|r| a.values()[a.row_range(r)].iter().sum())
        .collect();
    assert_eq!(y, sums);
}

#[test]
fn a_pipelined_handle_on_the_cpu_runs_the_twin_at_once() {
    let dev = Device::cpu();
    let a = gen::rmat(9, 8, 2).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let x = quarters(m, 3);
    let mut want = vec![0f32; n];
    spmv::launch(
        &dev,
        n,
        a.row_ptr(),
        a.col_idx(),
        a.values(),
        &x,
        &mut want[..],
    )
    .unwrap();
    let opts = ThrottleOptions::default().with_policy(ThrottlePolicy::Cf);
    let mut t = spmv::throttle_pipelined(
        &dev,
        &opts,
        n,
        m,
        a.row_ptr().to_vec(),
        a.col_idx().to_vec(),
        a.values().to_vec(),
    )
    .unwrap();
    assert_eq!(t.status(), ThrottleStatus::Running(ThrottlePolicy::Org));
    let mut y = vec![0f32; n];
    t.launch(&x, &mut y[..]).unwrap();
    assert_eq!(y, want);
    t.wait_for_plan().unwrap();
    assert_eq!(t.report().launches_before_plan, 0);
}

#[test]
fn plan_order_and_enqueued_launches_on_the_cpu() {
    let dev = Device::cpu();
    let a = gen::uniform(300, 5, 4).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let x = quarters(m, 2);
    let mut want = vec![0f32; n];
    spmv::launch(
        &dev,
        n,
        a.row_ptr(),
        a.col_idx(),
        a.values(),
        &x,
        &mut want[..],
    )
    .unwrap();
    let opts = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::OrgR)
        .with_remap(true);
    let mut t = spmv::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values()).unwrap();
    // The CPU runs the twin: there is no plan order, and asking is an error.
    let mut y = vec![0f32; n];
    t.launch(&x, &mut y[..]).unwrap();
    assert!(t.plan_order().is_none());
    let e = t.launch_in_plan_order(&x, &mut y[..]).unwrap_err();
    assert!(e.to_string().contains("no plan order"), "{e}");
    // Enqueued launches take DeviceVecs and report faults at `check`.
    let xd = dev.upload(&x).unwrap();
    let yd = dev.alloc::<f32>(n).unwrap();
    t.enqueue(&xd, &yd).unwrap();
    t.check().unwrap();
    assert_eq!(yd.to_vec().unwrap(), want);
}

#[test]
fn throttled_pagerank_and_cg_on_the_cpu_equal_the_unthrottled_runs() {
    use warpfit::apps::{self, CgOptions, Graph, PageRankOptions};
    let dev = Device::cpu();
    let config = LaunchConfig::default();
    let g = Graph::from_matrix(&gen::rmat(10, 8, 3).unwrap()).unwrap();
    let plain = PageRankOptions {
        iterations: 7,
        ..PageRankOptions::default()
    };
    let want = apps::pagerank(&dev, &config, &g, plain).unwrap();
    let spd: warpfit::runtime::Csr<f64> = "poisson3d:side=7,order=random,seed=2"
        .parse::<gen::GenSpec>()
        .unwrap()
        .generate()
        .unwrap()
        .map_values(|&v| v as f64);
    let b = apps::rhs_for_ones(&spd).unwrap();
    let cg_want = apps::cg(&dev, &config, &spd, &b, &CgOptions::default()).unwrap();
    for policy in [ThrottlePolicy::Cf, ThrottlePolicy::Auto] {
        for plan_first in [false, true] {
            let what = format!("{policy}, plan first {plan_first}");
            let opts = PageRankOptions {
                throttle: Some(
                    apps::pagerank_pull_resident::throttle_options()
                        .unwrap()
                        .with_policy(policy),
                ),
                plan_first,
                ..plain
            };
            let (rank, timings, run) =
                apps::pagerank_throttled(&dev, &config, &g, opts, &mut |_| {}).unwrap();
            assert_eq!(rank, want, "pagerank {what}");
            let run = run.expect("a throttled run reports");
            assert_eq!(timings.iterations.len(), opts.iterations, "{what}");
            if let Some(from) = run.planned_from {
                assert!(from < timings.iterations.len(), "{what}: {from}");
            }
            if plan_first {
                assert_eq!(run.planned_from, Some(0), "{what}");
                assert!(
                    matches!(run.status, ThrottleStatus::Running(_)),
                    "{what}: {:?}",
                    run.status
                );
            }
            let cg_opts = CgOptions {
                throttle: Some(
                    apps::spmv_f64::throttle_options()
                        .unwrap()
                        .with_policy(policy),
                ),
                plan_first,
                ..CgOptions::default()
            };
            let got = apps::cg(&dev, &config, &spd, &b, &cg_opts).unwrap();
            assert_eq!(got.x, cg_want.x, "cg {what}");
            assert_eq!(got.iterations, cg_want.iterations, "cg {what}");
            assert!(
                got.throttle.is_some() && cg_want.throttle.is_none(),
                "{what}"
            );
        }
    }
}

//! The distributed apps on GPU groups against CPU groups and the
//! single-device apps: every GPU count from 1 to all the host has (NCCL
//! between them), both partition kinds, and the group primitives
//! (transfers, all-reduces) against their host versions. Skipped without a
//! GPU; on a machine with one GPU the groups of one still run.

use warpfit::apps::{self, cg_group, pagerank_group, spmv_group, Graph, PageRankOptions};
use warpfit::distributed::{DeviceGroup, GroupSize, PartitionKind, Transfer};
use warpfit::runtime::gen::{self, Poisson3dOrder};
use warpfit::{Device, LaunchConfig};

mod gpu_common;

/// GPU 0 and how many GPUs the host has; `None` to skip (a failure under
/// `WARPFIT_REQUIRE_GPU=1`).
fn gpus() -> Option<(Device, usize)> {
    let d = gpu_common::gpu()?;
    let all = DeviceGroup::like(&d, GroupSize::All)
        .expect("a group of every GPU (NCCL must load)")
        .len();
    Some((d, all))
}

macro_rules! need_gpu {
    () => {
        match gpus() {
            Some(g) => g,
            None => {
                eprintln!("skipped: no CUDA device");
                return;
            }
        }
    };
}

const KINDS: [PartitionKind; 2] = [PartitionKind::Rows, PartitionKind::Levels];

#[test]
fn spmv_on_gpu_groups_equals_cpu_groups() {
    let (dev, all) = need_gpu!();
    let cfg = LaunchConfig::default();
    for a in [
        gen::rmat(14, 16, 3).unwrap(),
        gen::poisson3d(24, Poisson3dOrder::Random, 5).unwrap(),
    ] {
        let x: Vec<f32> = (0..a.ncols()).map(|i| 1.0 + (i % 7) as f32 / 7.0).collect();
        let single = apps::spmv_csr(&dev, &cfg, &a, &x).unwrap();
        for n in 1..=all {
            let group = DeviceGroup::like(&dev, GroupSize::Count(n)).unwrap();
            for kind in KINDS {
                let run = spmv_group(&group, kind, &cfg, &a, &x, 3).unwrap();
                // Rows stay whole on one GPU with the same kernel: the same bits.
                assert_eq!(run.result, single, "{n} GPUs, {kind:?}");
                // Block by block, with the exchange beside the owned block.
                let run = apps::spmv_group_overlapped(&group, kind, &cfg, &a, &x, 3).unwrap();
                for (r, (y, w)) in run.result.iter().zip(&single).enumerate() {
                    assert!(
                        (y - w).abs() <= 1e-5 * w.abs().max(1.0),
                        "row {r}: {y} vs {w} ({n}, {kind:?})"
                    );
                }
            }
        }
    }
}

#[test]
fn pagerank_and_cg_on_gpu_groups_match_one_device() {
    let (dev, all) = need_gpu!();
    let cfg = LaunchConfig::default();
    let g = Graph::from_matrix(&gen::rmat(13, 16, 7).unwrap()).unwrap();
    let opts = PageRankOptions {
        iterations: 9,
        ..Default::default()
    };
    let want = apps::pagerank(&dev, &cfg, &g, opts).unwrap();
    let a = gen::poisson3d(20, Poisson3dOrder::Random, 2)
        .unwrap()
        .map_values(|v| *v as f64);
    let b = apps::rhs_for_ones(&a).unwrap();
    let cg_cpu = cg_group(
        &DeviceGroup::cpu(2).unwrap(),
        PartitionKind::Rows,
        &cfg,
        &a,
        &b,
        1e-10,
        400,
    )
    .unwrap();
    for n in 1..=all {
        let group = DeviceGroup::like(&dev, GroupSize::Count(n)).unwrap();
        for kind in KINDS {
            let run = pagerank_group(&group, kind, &cfg, &g, &opts).unwrap();
            for (v, (x, y)) in run.result.iter().zip(&want).enumerate() {
                assert!(
                    (x - y).abs() <= 1e-5 * y.abs(),
                    "vertex {v}: {x} vs {y} ({n}, {kind:?})"
                );
            }
            let beside = apps::pagerank_group_overlapped(&group, kind, &cfg, &g, &opts).unwrap();
            for (v, (x, y)) in beside.result.iter().zip(&want).enumerate() {
                assert!(
                    (x - y).abs() <= 1e-5 * y.abs(),
                    "overlapped, vertex {v}: {x} vs {y} ({n}, {kind:?})"
                );
            }
            let run = cg_group(&group, kind, &cfg, &a, &b, 1e-10, 400).unwrap();
            assert!(run.relative_residual <= 1e-10);
            assert!(run.iterations.abs_diff(cg_cpu.iterations) <= 3);
            for (x, y) in run.result.iter().zip(&cg_cpu.result) {
                assert!((x - y).abs() <= 1e-8, "{x} vs {y} ({n}, {kind:?})");
            }
        }
    }
}

#[test]
fn transfers_and_all_reduces_match_the_host_group() {
    let (dev, all) = need_gpu!();
    if all < 2 {
        eprintln!("skipped: one GPU");
        return;
    }
    let group = DeviceGroup::like(&dev, GroupSize::All).unwrap();
    let n = 1000;
    let src: Vec<_> = (0..all)
        .map(|p| {
            group.devices()[p]
                .upload(&(0..n).map(|i| (p * n + i) as f32).collect::<Vec<_>>())
                .unwrap()
        })
        .collect();
    let dst: Vec<_> = (0..all)
        .map(|p| group.devices()[p].alloc::<f32>(n).unwrap())
        .collect();
    // Member p sends 10 + p entries from offset p to member (p + 1) % all at offset 3p.
    let transfers: Vec<Transfer> = (0..all)
        .map(|p| Transfer {
            from: p,
            to: (p + 1) % all,
            src_offset: p,
            dst_offset: 3 * p,
            len: 10 + p,
        })
        .collect();
    let (s, d): (Vec<_>, Vec<_>) = (src.iter().collect(), dst.iter().collect());
    group.transfer(&s, &d, &transfers).unwrap();
    let sums: Vec<_> = (0..all)
        .map(|p| {
            group.devices()[p]
                .upload(&[p as f64 + 1.0, 2.0, 7.0])
                .unwrap()
        })
        .collect();
    let sr: Vec<_> = sums.iter().collect();
    group.all_reduce_sum(&sr, 0..2).unwrap();
    group.synchronize().unwrap();
    for t in &transfers {
        let got = dst[t.to].to_vec().unwrap();
        for i in 0..t.len {
            assert_eq!(
                got[t.dst_offset + i],
                (t.from * n + t.src_offset + i) as f32
            );
        }
    }
    let total: f64 = (1..=all).map(|p| p as f64).sum();
    for s in &sums {
        assert_eq!(s.to_vec().unwrap(), vec![total, 2.0 * all as f64, 7.0]);
    }
    // A transfer past an array, or between a member and itself, is refused.
    let bad = [Transfer {
        from: 0,
        to: 1,
        src_offset: n - 1,
        dst_offset: 0,
        len: 2,
    }];
    assert!(group.transfer(&s, &d, &bad).is_err());
    let selfish = [Transfer {
        from: 1,
        to: 1,
        src_offset: 0,
        dst_offset: 0,
        len: 1,
    }];
    assert!(group.transfer(&s, &d, &selfish).is_err());
    // An array on the wrong member is refused by name.
    let swapped: Vec<_> = s.iter().rev().copied().collect();
    let e = group
        .transfer(&swapped, &d, &transfers)
        .unwrap_err()
        .to_string();
    assert!(e.contains("member 0"), "{e}");
}

#[test]
fn bfs_on_gpu_groups_equals_one_device_exactly() {
    let (dev, all) = need_gpu!();
    let cfg = LaunchConfig::default();
    let g = Graph::from_matrix(&gen::rmat_symmetric(13, 8, 2).unwrap()).unwrap();
    let (want, _) = apps::bfs(&dev, &cfg, &g, 5).unwrap();
    for n in 1..=all {
        let group = DeviceGroup::like(&dev, GroupSize::Count(n)).unwrap();
        for kind in KINDS {
            for dir in [
                apps::BfsDirection::Auto,
                apps::BfsDirection::TopDown,
                apps::BfsDirection::BottomUp,
            ] {
                let run = apps::bfs_group(&group, kind, &cfg, &g, 5, dir).unwrap();
                assert_eq!(run.result, want, "{n} GPUs, {kind:?}, {dir}");
            }
        }
    }
}

/// A wait longer than the group's timeout is an `Err`, not a hang: the
/// communicators are aborted and every later call is refused with a
/// message saying so. (Several all-reduces of 256 MiB are still running
/// when the first poll finds the timeout of 1 µs spent.)
#[test]
fn a_group_that_times_out_is_aborted_and_refuses_later_calls() {
    let (dev, all) = need_gpu!();
    if all < 2 {
        eprintln!("skipped: one GPU has no communicator to abort");
        return;
    }
    let group = DeviceGroup::like(&dev, GroupSize::Count(2))
        .unwrap()
        .with_timeout(std::time::Duration::from_micros(1));
    let len = 1 << 26;
    let bufs: Vec<_> = group
        .devices()
        .iter()
        .map(|d| d.upload(&vec![1.0f32; len]).unwrap())
        .collect();
    let refs: Vec<_> = bufs.iter().collect();
    for _ in 0..8 {
        group.all_reduce_sum(&refs, 0..len).unwrap();
    }
    let e = group.synchronize().unwrap_err().to_string();
    assert!(e.contains("aborted"), "{e}");
    let e = group.all_reduce_sum(&refs, 0..len).unwrap_err().to_string();
    assert!(e.contains("aborted"), "{e}");
    let t = [Transfer {
        from: 0,
        to: 1,
        src_offset: 0,
        dst_offset: 0,
        len: 16,
    }];
    let e = group.transfer(&refs, &refs, &t).unwrap_err().to_string();
    assert!(e.contains("aborted"), "{e}");
}

/// Whole-block exchanges (every pair unpacked, as an all-gather) and exact
/// halos fill the same halos on GPUs as on the host, plain and beside the
/// launches.
#[test]
fn whole_block_exchanges_fill_the_same_halos_as_the_host() {
    use warpfit::distributed::{Distributed, Distribution};
    let (dev, all) = need_gpu!();
    let a = gen::rmat(13, 8, 4).unwrap();
    let x: Vec<f32> = (0..a.ncols()).map(|i| i as f32).collect();
    for n in 2..=all {
        let group = DeviceGroup::like(&dev, GroupSize::Count(n)).unwrap();
        for share in [1.0, 0.5, 0.0] {
            let dist =
                Distribution::new(PartitionKind::Rows, n, a.row_ptr(), a.col_idx(), a.ncols())
                    .unwrap()
                    .with_whole_blocks(share)
                    .unwrap();
            let want: Vec<Vec<f32>> = (0..n).map(|p| dist.x_part(p, &x).unwrap()).collect();
            let d = Distributed::from_distribution(&group, dist).unwrap();
            for beside in [false, true] {
                let mut xs = d.gathered_zeros::<f32>().unwrap();
                for (p, w) in want.iter().enumerate() {
                    let mut local = vec![-1.0f32; w.len()];
                    let owned = d.distribution().parts()[p].owned_x.len();
                    local[..owned].copy_from_slice(&w[..owned]);
                    xs.part_mut(p).copy_from(&local).unwrap();
                }
                let ex = d.exchange_of(&xs).unwrap();
                if beside {
                    ex.start().unwrap();
                    ex.join().unwrap();
                } else {
                    ex.run().unwrap();
                }
                group.synchronize().unwrap();
                ex.check().unwrap();
                for (p, w) in want.iter().enumerate() {
                    assert_eq!(
                        &xs.part(p).to_vec().unwrap(),
                        w,
                        "{n} GPUs, share {share}, member {p}"
                    );
                }
            }
        }
    }
}

/// Throttled parts on GPU groups: each member's handle decides by the
/// model over its local arrays (a small cache, so that the parts do not
/// fit it) and the product equals the single-device one within rounding.
#[test]
fn throttled_parts_on_gpu_groups_match_one_device() {
    use warpfit::ThrottlePolicy;
    let (dev, all) = need_gpu!();
    let cfg = LaunchConfig::default();
    let a = gen::rmat(16, 16, 3).unwrap();
    let x: Vec<f32> = (0..a.ncols()).map(|i| 1.0 + (i % 7) as f32 / 7.0).collect();
    let want = apps::spmv_csr(&dev, &cfg, &a, &x).unwrap();
    let auto = apps::spmv::f32::throttle_options()
        .unwrap()
        .with_policy(ThrottlePolicy::Auto)
        .with_cache("64KiB".parse().unwrap());
    for n in 1..=all {
        let group = DeviceGroup::like(&dev, GroupSize::Count(n)).unwrap();
        for kind in KINDS {
            let run = apps::spmv_group_throttled(&group, kind, &a, &x, 3, &auto).unwrap();
            for (r, (y, w)) in run.result.iter().zip(&want).enumerate() {
                assert!(
                    (y - w).abs() <= 1e-5 * w.abs().max(1.0),
                    "row {r}: {y} vs {w} ({n}, {kind:?}; {})",
                    run.detail
                );
            }
            eprintln!("{n} GPUs, {kind:?}: {}", run.detail);
        }
    }
}

/// Parts placed several to a GPU (`DeviceGroup::cuda_parts`, device and
/// peer copies, no NCCL): four parts of an RMAT graph on the host's GPUs,
/// two to a GPU where there are two, all on GPU 0 otherwise; the ranks
/// equal those of four CPU parts within rounding, and the transfers and
/// the all-reduce between members on one GPU move what they say.
#[test]
fn parts_placed_several_to_a_gpu_match_cpu_parts() {
    let (_, all) = need_gpu!();
    let placement: Vec<usize> = (0..4).map(|p| p * all.min(2) / 4).collect();
    let group = DeviceGroup::cuda_parts(&placement).unwrap();
    assert!(
        group.describe().contains("device copies"),
        "{}",
        group.describe()
    );
    let cfg = LaunchConfig::default();
    let opts = PageRankOptions {
        iterations: 7,
        ..Default::default()
    };
    let gp = apps::GraphParts::rmat(13, 8, 4, 4).unwrap();
    let want = apps::pagerank_group_parts(&DeviceGroup::cpu(4).unwrap(), &cfg, &gp, &opts).unwrap();
    let run = apps::pagerank_group_parts(&group, &cfg, &gp, &opts).unwrap();
    assert_eq!(run.exchange, want.exchange);
    for (v, (x, y)) in run.result.iter().zip(&want.result).enumerate() {
        assert!(
            (x - y).abs() <= 1e-5 * y.abs(),
            "vertex {v}: {x} vs {y} ({placement:?})"
        );
    }
    // Members 0 and 1 share a GPU: a transfer between them and a sum.
    let a: Vec<_> = group
        .devices()
        .iter()
        .enumerate()
        .map(|(p, d)| d.upload(&[p as f64 + 1.0; 4]).unwrap())
        .collect();
    let refs: Vec<_> = a.iter().collect();
    let t = Transfer {
        from: 0,
        to: 1,
        src_offset: 0,
        dst_offset: 2,
        len: 2,
    };
    group.transfer(&refs, &refs, &[t]).unwrap();
    assert_eq!(a[1].to_vec().unwrap(), [2.0, 2.0, 1.0, 1.0]);
    group.all_reduce_sum(&refs, 0..1).unwrap();
    for v in &a {
        assert_eq!(v.to_vec().unwrap()[0], 1.0 + 2.0 + 3.0 + 4.0);
    }
}

//! The distributed apps on CPU groups of 1 to 4 parts against the
//! single-device runs: the same partition and exchange code a GPU group
//! runs, with host copies for NCCL.

use warpfit::apps::{
    self, cg_group, pagerank_group, spmv_group, BfsDirection, Graph, PageRankOptions,
};
use warpfit::distributed::{DeviceGroup, Distributed, PartitionKind};
use warpfit::runtime::gen::{self, Poisson3dOrder};
use warpfit::{Device, LaunchConfig};

const KINDS: [PartitionKind; 2] = [PartitionKind::Rows, PartitionKind::Levels];
const DIRECTIONS: [BfsDirection; 3] = [
    BfsDirection::Auto,
    BfsDirection::TopDown,
    BfsDirection::BottomUp,
];

fn x_for(n: usize) -> Vec<f32> {
    (0..n).map(|i| 1.0 + (i % 13) as f32 / 13.0).collect()
}

#[test]
fn spmv_on_cpu_groups_equals_one_device_exactly() {
    let cfg = LaunchConfig::default();
    for a in [
        gen::rmat(9, 8, 3).unwrap(),
        gen::poisson3d(8, Poisson3dOrder::Random, 5).unwrap(),
    ] {
        let x = x_for(a.ncols());
        let want = apps::spmv_csr(&Device::cpu(), &cfg, &a, &x).unwrap();
        for parts in 1..=4 {
            for kind in KINDS {
                let group = DeviceGroup::cpu(parts).unwrap();
                let run = spmv_group(&group, kind, &cfg, &a, &x, 2).unwrap();
                // Rows stay whole and keep their order: the same sums.
                assert_eq!(run.result, want, "{parts} parts, {kind:?}");
                assert_eq!(run.steps.len(), 2);
                if parts == 1 {
                    assert_eq!(run.exchange.entries, 0);
                }
            }
        }
    }
}

#[test]
fn levels_exchange_less_than_row_blocks_on_a_shuffled_mesh() {
    let a = gen::poisson3d(16, Poisson3dOrder::Random, 9).unwrap();
    let group = DeviceGroup::cpu(4).unwrap();
    let stats = |kind| {
        Distributed::new(&group, kind, a.row_ptr(), a.col_idx(), a.ncols())
            .unwrap()
            .stats()
    };
    let (rows, levels) = (stats(PartitionKind::Rows), stats(PartitionKind::Levels));
    assert!(
        levels.entries * 3 < rows.entries,
        "levels {levels:?}, rows {rows:?}"
    );
    assert!(rows.fraction() > 0.5, "{rows:?}");
}

#[test]
fn pagerank_on_cpu_groups_matches_one_device() {
    let cfg = LaunchConfig::default();
    let g = Graph::from_matrix(&gen::rmat(10, 8, 7).unwrap()).unwrap();
    let opts = PageRankOptions {
        iterations: 7,
        ..Default::default()
    };
    let want = apps::pagerank(&Device::cpu(), &cfg, &g, opts).unwrap();
    for parts in [1, 2, 3] {
        for kind in KINDS {
            let group = DeviceGroup::cpu(parts).unwrap();
            let run = pagerank_group(&group, kind, &cfg, &g, &opts).unwrap();
            assert_eq!(run.steps.len(), 7);
            for (v, (a, b)) in run.result.iter().zip(&want).enumerate() {
                // Only the dangling rank's f64 sum is split by part.
                assert!(
                    (a - b).abs() <= 1e-6 * b.abs(),
                    "vertex {v}: {a} vs {b} ({parts}, {kind:?})"
                );
            }
            // The owned block pulled beside the exchange, the halo's
            // blocks added after: each vertex's sum split by source.
            let beside = apps::pagerank_group_overlapped(&group, kind, &cfg, &g, &opts).unwrap();
            assert_eq!(beside.exchange, run.exchange);
            for (v, (a, b)) in beside.result.iter().zip(&want).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-5 * b.abs(),
                    "overlapped, vertex {v}: {a} vs {b} ({parts}, {kind:?})"
                );
            }
        }
    }
}

#[test]
fn cg_on_cpu_groups_solves_the_system() {
    let cfg = LaunchConfig::default();
    let a = gen::poisson3d(10, Poisson3dOrder::Random, 2)
        .unwrap()
        .map_values(|v| *v as f64);
    let n = a.nrows();
    let b: Vec<f64> = (0..n).map(|i| 1.0 + (i % 5) as f64).collect();
    let one = cg_group(
        &DeviceGroup::cpu(1).unwrap(),
        PartitionKind::Rows,
        &cfg,
        &a,
        &b,
        1e-10,
        500,
    )
    .unwrap();
    for parts in [2, 4] {
        for kind in KINDS {
            let run = cg_group(
                &DeviceGroup::cpu(parts).unwrap(),
                kind,
                &cfg,
                &a,
                &b,
                1e-10,
                500,
            )
            .unwrap();
            assert!(run.relative_residual <= 1e-10, "{run:?}");
            // The same iteration up to the dots' rounding.
            assert!(
                run.iterations.abs_diff(one.iterations) <= 2,
                "{} vs {}",
                run.iterations,
                one.iterations
            );
            let r: f64 = (0..n)
                .map(|i| {
                    let lo = a.row_ptr()[i] as usize;
                    let hi = a.row_ptr()[i + 1] as usize;
                    let ax: f64 = (lo..hi)
                        .map(|e| a.values()[e] * run.result[a.col_idx()[e] as usize])
                        .sum();
                    (b[i] - ax).powi(2)
                })
                .sum();
            let bn: f64 = b.iter().map(|v| v * v).sum();
            assert!((r / bn).sqrt() < 1e-9, "true residual {}", (r / bn).sqrt());
            for (u, v) in run.result.iter().zip(&one.result) {
                assert!((u - v).abs() <= 1e-8 * v.abs().max(1.0));
            }
        }
    }
}

#[test]
fn bad_groups_and_inputs_are_errors() {
    assert!(DeviceGroup::cpu(0)
        .unwrap_err()
        .to_string()
        .contains("1 to"));
    let a = gen::rmat(6, 4, 1).unwrap();
    let group = DeviceGroup::cpu(2).unwrap();
    let e = spmv_group(
        &group,
        PartitionKind::Rows,
        &LaunchConfig::default(),
        &a,
        &[1.0; 3],
        1,
    )
    .unwrap_err();
    assert!(e.to_string().contains("x"), "{e}");
    // The error names the length SpMV wanted.
    assert!(e.to_string().contains(&a.ncols().to_string()), "{e}");
    let d = Distributed::new(
        &group,
        PartitionKind::Rows,
        a.row_ptr(),
        a.col_idx(),
        a.ncols(),
    )
    .unwrap();
    assert_eq!(d.tasks(0) + d.tasks(1), a.nrows());
    // Only a gathered array (with its send buffers) is exchanged.
    let outputs = d.outputs::<f32>().unwrap();
    let e = d.exchange(&outputs).unwrap_err().to_string();
    assert!(e.contains("gathered array"), "{e}");
    // A distribution made for three parts does not fit a group of two.
    let three = warpfit::distributed::Distribution::new(
        PartitionKind::Rows,
        3,
        a.row_ptr(),
        a.col_idx(),
        a.ncols(),
    )
    .unwrap();
    assert!(Distributed::from_distribution(&group, three).is_err());
    // Levels need a square pattern.
    let rect =
        warpfit::runtime::Csr::new(2, 5, vec![0, 1, 2], vec![4, 0], vec![1.0f32, 2.0]).unwrap();
    assert!(Distributed::new(
        &group,
        PartitionKind::Levels,
        rect.row_ptr(),
        rect.col_idx(),
        rect.ncols()
    )
    .is_err());
}

#[test]
fn bfs_on_cpu_groups_equals_one_device_exactly() {
    let cfg = LaunchConfig::default();
    for a in [
        gen::rmat(10, 8, 4).unwrap(),
        gen::poisson3d(9, Poisson3dOrder::Random, 3).unwrap(),
    ] {
        let g = Graph::from_matrix(&a).unwrap();
        let (want, _) = apps::bfs(&Device::cpu(), &cfg, &g, 3).unwrap();
        for parts in [1, 2, 3, 4] {
            let group = DeviceGroup::cpu(parts).unwrap();
            for kind in KINDS {
                for dir in DIRECTIONS {
                    let run = apps::bfs_group(&group, kind, &cfg, &g, 3, dir).unwrap();
                    assert_eq!(run.result, want, "{parts} parts, {kind:?}, {dir}");
                    assert!(run.detail.contains("top-down"), "{}", run.detail);
                }
            }
        }
    }
    let g = Graph::from_matrix(&gen::rmat(6, 4, 1).unwrap()).unwrap();
    let e = apps::bfs_group(
        &DeviceGroup::cpu(2).unwrap(),
        PartitionKind::Rows,
        &cfg,
        &g,
        1 << 20,
        BfsDirection::Auto,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not a vertex"), "{e}");
}

/// From a hub of a power-law graph the direction-optimising search turns
/// bottom-up for the large levels and back top-down for the tail.
#[test]
fn bfs_on_cpu_groups_switches_direction_on_a_power_law_graph() {
    let cfg = LaunchConfig::default();
    let g = Graph::from_matrix(&gen::rmat_symmetric(12, 8, 7).unwrap()).unwrap();
    let hub = (0..g.out_degree.len())
        .max_by_key(|&v| g.out_degree[v])
        .unwrap();
    let (want, _) = apps::bfs(&Device::cpu(), &cfg, &g, hub).unwrap();
    let group = DeviceGroup::cpu(3).unwrap();
    let run = apps::bfs_group(
        &group,
        PartitionKind::Rows,
        &cfg,
        &g,
        hub,
        BfsDirection::Auto,
    )
    .unwrap();
    assert_eq!(run.result, want);
    assert!(
        !run.detail.contains(" 0 top-down") && !run.detail.contains(" 0 bottom-up"),
        "{}",
        run.detail
    );
    assert_eq!(
        "bottom-up".parse::<BfsDirection>().unwrap(),
        BfsDirection::BottomUp
    );
    let e = "sideways".parse::<BfsDirection>().unwrap_err().to_string();
    assert!(e.contains("auto, top-down or bottom-up"), "{e}");
}

#[test]
fn overlapped_spmv_on_cpu_groups_equals_one_device_within_rounding() {
    let cfg = LaunchConfig::default();
    for a in [
        gen::rmat(10, 8, 3).unwrap(),
        gen::poisson3d(9, Poisson3dOrder::Random, 5).unwrap(),
    ] {
        let x = x_for(a.ncols());
        let want = apps::spmv_csr(&Device::cpu(), &cfg, &a, &x).unwrap();
        for parts in 1..=4 {
            for kind in KINDS {
                let group = DeviceGroup::cpu(parts).unwrap();
                let run = apps::spmv_group_overlapped(&group, kind, &cfg, &a, &x, 2).unwrap();
                for (r, (y, w)) in run.result.iter().zip(&want).enumerate() {
                    let (c, v) = a.row(r);
                    let scale: f32 = c
                        .iter()
                        .zip(v)
                        .map(|(&c, &v)| (v * x[c as usize]).abs())
                        .sum();
                    assert!(
                        (y - w).abs() <= 1e-6 * scale.max(1e-30),
                        "row {r}: {y} vs {w} ({parts}, {kind:?})"
                    );
                }
                if parts == 1 {
                    assert_eq!(run.result, want);
                }
            }
        }
    }
}

/// Whole blocks (every exchanging pair sent unpacked, as an all-gather)
/// and exact halos (every pair packed) give the same SpMV, bit for bit,
/// plain and overlapped; whole blocks move more and pack less.
#[test]
fn whole_block_exchanges_equal_exact_halos() {
    use warpfit::apps::spmv;
    use warpfit::distributed::Distribution;
    let cfg = LaunchConfig::default();
    let a = gen::rmat(11, 8, 9).unwrap();
    let x = x_for(a.ncols());
    let want = apps::spmv_csr(&Device::cpu(), &cfg, &a, &x).unwrap();
    for parts in [2, 3] {
        let group = DeviceGroup::cpu(parts).unwrap();
        let mut moved = Vec::new();
        for share in [1.0, 0.5, 0.0] {
            let dist = Distribution::new(
                PartitionKind::Rows,
                parts,
                a.row_ptr(),
                a.col_idx(),
                a.ncols(),
            )
            .unwrap()
            .with_whole_blocks(share)
            .unwrap();
            let d = Distributed::from_distribution(&group, dist).unwrap();
            let (val, mut xs, ys) = (
                d.fine(a.values()).unwrap(),
                d.gathered_zeros::<f32>().unwrap(),
                d.outputs::<f32>().unwrap(),
            );
            // Owned entries only, then the exchange fills every halo.
            for p in 0..parts {
                let owned = d.distribution().owned_x_part(p, &x).unwrap();
                let mut local = xs.part(p).to_vec().unwrap();
                local[..owned.len()].copy_from_slice(&owned);
                xs.part_mut(p).copy_from(&local).unwrap();
            }
            d.exchange(&xs).unwrap();
            for p in 0..parts {
                let (dev, rows) = (d.device(p), d.tasks(p));
                let l = spmv::f32::prepare(
                    dev,
                    &cfg,
                    rows,
                    d.row_ptr(p),
                    d.col(p),
                    val.part(p),
                    xs.part(p),
                    ys.part(p),
                )
                .unwrap();
                l.run().unwrap();
                l.check().unwrap();
            }
            assert_eq!(
                d.collect_tasks(&ys).unwrap(),
                want,
                "{parts} parts, share {share}"
            );
            moved.push(d.stats().entries);
        }
        assert!(moved[0] <= moved[1] && moved[1] <= moved[2], "{moved:?}");
        let owned_elsewhere = (parts - 1) * a.ncols();
        assert!(moved[2] <= owned_elsewhere, "{moved:?}");
    }
}

/// Each member's part run by its own throttled handle (`auto`) gives the
/// single-device product within rounding; another policy is refused.
#[test]
fn throttled_parts_on_cpu_groups_equal_one_device_within_rounding() {
    use warpfit::ThrottlePolicy;
    let cfg = LaunchConfig::default();
    let a = gen::rmat(11, 8, 5).unwrap();
    let x = x_for(a.ncols());
    let want = apps::spmv_csr(&Device::cpu(), &cfg, &a, &x).unwrap();
    let auto = apps::spmv::f32::throttle_options()
        .unwrap()
        .with_policy(ThrottlePolicy::Auto)
        .with_cache("16KiB".parse().unwrap());
    for parts in [1, 2, 3] {
        let group = DeviceGroup::cpu(parts).unwrap();
        for kind in KINDS {
            let run = apps::spmv_group_throttled(&group, kind, &a, &x, 2, &auto).unwrap();
            for (r, (y, w)) in run.result.iter().zip(&want).enumerate() {
                assert!(
                    (y - w).abs() <= 1e-5 * w.abs().max(1.0),
                    "row {r}: {y} vs {w}"
                );
            }
            assert!(
                run.detail.contains(&format!("member {}", parts - 1)),
                "{}",
                run.detail
            );
        }
    }
    let cf = auto.with_policy(ThrottlePolicy::Cf);
    let group = DeviceGroup::cpu(2).unwrap();
    let e = apps::spmv_group_throttled(&group, PartitionKind::Rows, &a, &x, 1, &cf)
        .unwrap_err()
        .to_string();
    assert!(e.contains("only `auto`"), "{e}");
}

/// A hub row whose entries are mostly another member's: its halo block is
/// launched over a task list (few rows read there), with the hub cut into
/// segments of at most 1024, and the overlapped product still equals the
/// single-device one within rounding.
#[test]
fn overlapped_spmv_cuts_a_hub_in_a_halo_task_list() {
    use warpfit::runtime::Csr;
    let n = 8000;
    let mut t: Vec<(usize, usize, f32)> = (0..n).map(|i| (i, i, 2.0)).collect();
    t.extend((4500..7700).map(|j| (0, j, 1.0 + (j % 5) as f32)));
    let a = Csr::from_triplets(n, n, t).unwrap();
    let cfg = LaunchConfig::default();
    let x = x_for(n);
    let want = apps::spmv_csr(&Device::cpu(), &cfg, &a, &x).unwrap();
    let group = DeviceGroup::cpu(2).unwrap();
    let d = Distributed::new(&group, PartitionKind::Rows, a.row_ptr(), a.col_idx(), n).unwrap();
    let blocks = d.source_blocks(a.values()).unwrap();
    let list = blocks[0][1]
        .tasks
        .as_ref()
        .expect("a task list for the halo block");
    // The pattern alone is cut the same way.
    let patterns = d.source_patterns().unwrap();
    assert_eq!(
        patterns[0][1].tasks.as_ref().map(|t| t.segments().to_vec()),
        Some(list.segments().to_vec())
    );
    assert!(list.len() >= 3, "{} segments", list.len());
    assert!(list.segments().iter().all(|s| s.hi - s.lo <= 1024));
    let run = apps::spmv_group_overlapped(&group, PartitionKind::Rows, &cfg, &a, &x, 1).unwrap();
    for (r, (y, w)) in run.result.iter().zip(&want).enumerate() {
        assert!(
            (y - w).abs() <= 1e-5 * w.abs().max(1.0),
            "row {r}: {y} vs {w}"
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Random directed graphs (isolated vertices, self-loops, duplicate
    /// edges, more members than vertices), any member count, partition,
    /// direction and source: the group's levels are the sequential BFS's.
    #[test]
    fn bfs_on_cpu_groups_equals_the_sequential_levels(
        n in 1usize..=40,
        edges in proptest::collection::vec((0u32..40, 0u32..40), 0..160),
        parts in 1usize..=6,
        levels in proptest::prelude::any::<bool>(),
        dir in 0usize..3,
        source in 0usize..40,
    ) {
        use warpfit::runtime::Csr;
        let t: Vec<(usize, usize, f32)> = edges
            .iter()
            .map(|&(u, v)| (u as usize % n, v as usize % n, 1.0))
            .collect();
        let a = Csr::from_triplets(n, n, t).unwrap();
        let g = Graph::from_matrix(&a).unwrap();
        let source = source % n;
        let want = warpfit::runtime::reference::bfs_levels(&a, source).unwrap();
        let kind = if levels { PartitionKind::Levels } else { PartitionKind::Rows };
        let group = DeviceGroup::cpu(parts).unwrap();
        let run = apps::bfs_group(&group, kind, &LaunchConfig::default(), &g, source, DIRECTIONS[dir])
            .unwrap();
        proptest::prop_assert_eq!(run.result, want);
    }
}

/// RMAT made block by block (`GraphParts::rmat`, no whole matrix held) is
/// the whole graph cut: PageRank over its blocks matches the single-device
/// run on the whole RMAT within rounding, for every block count.
#[test]
fn pagerank_on_a_graph_made_in_parts_matches_the_whole() {
    let cfg = LaunchConfig::default();
    let whole = gen::rmat(11, 8, 5).unwrap();
    let g = Graph::from_matrix(&whole).unwrap();
    let opts = PageRankOptions {
        iterations: 9,
        ..Default::default()
    };
    let want = apps::pagerank(&Device::cpu(), &cfg, &g, opts).unwrap();
    for parts in [1, 2, 3, 4] {
        let gp = apps::GraphParts::rmat(11, 8, 5, parts).unwrap();
        assert_eq!(
            (gp.vertices(), gp.edges()),
            (whole.nrows(), whole.nnz() as u64)
        );
        assert_eq!(gp.out_degree(), &g.out_degree[..]);
        let group = DeviceGroup::cpu(parts).unwrap();
        let run = apps::pagerank_group_parts(&group, &cfg, &gp, &opts).unwrap();
        for (v, (a, b)) in run.result.iter().zip(&want).enumerate() {
            assert!(
                (a - b).abs() <= 1e-6 * b.abs(),
                "vertex {v}: {a} vs {b} ({parts})"
            );
        }
        let beside = apps::pagerank_group_parts_overlapped(&group, &cfg, &gp, &opts).unwrap();
        for (v, (a, b)) in beside.result.iter().zip(&want).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs(),
                "overlapped, vertex {v}: {a} vs {b} ({parts})"
            );
        }
        let other = DeviceGroup::cpu(parts + 1).unwrap();
        let e = apps::pagerank_group_parts(&other, &cfg, &gp, &opts)
            .unwrap_err()
            .to_string();
        assert!(e.contains("one per member"), "{e}");
    }
    assert!(apps::GraphParts::rmat(4, 2, 1, 17).is_err());
    assert!(apps::GraphParts::rmat(4, 2, 1, 0).is_err());
}

/// A graph's distribution made once serves several groups in turn: the
/// ranks on each equal those of `pagerank_group_parts`, and a distribution
/// of another graph is refused.
#[test]
fn one_distribution_of_a_graph_in_parts_serves_several_groups() {
    use warpfit::distributed::Distributed;
    let cfg = LaunchConfig::default();
    let opts = PageRankOptions {
        iterations: 6,
        ..Default::default()
    };
    let gp = apps::GraphParts::rmat(10, 8, 3, 3).unwrap();
    let (a, b) = (DeviceGroup::cpu(3).unwrap(), DeviceGroup::cpu(3).unwrap());
    let want = apps::pagerank_group_parts(&a, &cfg, &gp, &opts).unwrap();
    let d = Distributed::from_distribution(&a, gp.distribution().unwrap()).unwrap();
    let first = apps::pagerank_on_parts(&d, &cfg, &gp, &opts).unwrap();
    let d = Distributed::from_distribution(&b, d.into_distribution()).unwrap();
    let second = apps::pagerank_on_parts(&d, &cfg, &gp, &opts).unwrap();
    assert_eq!(first.result, want.result);
    assert_eq!(second.result, want.result);
    assert_eq!(second.exchange, want.exchange);
    let other = apps::GraphParts::rmat(9, 8, 3, 3).unwrap();
    let e = apps::pagerank_on_parts(&d, &cfg, &other, &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("vertices"), "{e}");
}

//! Property tests of DBWP: capacity, exact cover, SJ-tree shape, and metrics
//! against brute-force counts, for both bisection methods.

use proptest::prelude::*;
use std::collections::{BTreeSet, HashMap};
use warpfit_runtime::partition::{
    column_blocks, dbwp, Bisection, CoarsenOptions, Metrics, Partition, PartitionOptions, WorkGraph,
};
use warpfit_runtime::Csr;

/// A random CSR with possibly empty rows and repeated columns in a row.
fn csr_strategy() -> impl Strategy<Value = Csr<f32>> {
    (1usize..24, 1usize..24).prop_flat_map(|(nrows, ncols)| {
        proptest::collection::vec(proptest::collection::vec(0..ncols as u32, 0..10), nrows)
            .prop_map(move |rows| {
                let mut ptr = vec![0u32];
                let mut cols = Vec::new();
                for r in &rows {
                    cols.extend_from_slice(r);
                    ptr.push(cols.len() as u32);
                }
                let vals = vec![1.0; cols.len()];
                Csr::new(nrows, ncols, ptr, cols, vals).unwrap()
            })
    })
}

fn methods(skip: u32) -> [Bisection; 3] {
    [
        Bisection::KdTiling,
        Bisection::Coarsened(CoarsenOptions::default()),
        Bisection::Coarsened(CoarsenOptions {
            skip_levels: skip,
            entity_tuples: 2,
            ..CoarsenOptions::default()
        }),
    ]
}

/// (task, gathered) of every tuple, brute force from the CSR.
fn tuples(csr: &Csr<f32>) -> Vec<(u32, u32)> {
    (0..csr.nrows())
        .flat_map(|r| csr.row_range(r).map(move |k| (r as u32, k)))
        .map(|(r, k)| (r, csr.col_idx()[k]))
        .collect()
}

fn check_partition(csr: &Csr<f32>, g: &WorkGraph, p: &Partition, t: u32) {
    let tup = tuples(csr);
    // Exact cover: every tuple in exactly one partition.
    let mut seen = vec![0u32; tup.len()];
    for part in 0..p.len() {
        let ids = p.part(part);
        assert!(!ids.is_empty(), "partition {part} is empty");
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "partition {part} not in CSR order"
        );
        for &id in ids {
            seen[id as usize] += 1;
        }
        // Capacity, brute force.
        let rows: BTreeSet<u32> = ids.iter().map(|&id| tup[id as usize].0).collect();
        let cols: BTreeSet<u32> = ids.iter().map(|&id| tup[id as usize].1).collect();
        let u = (rows.len() + cols.len()) as u32;
        assert!(u <= t, "partition {part}: {u} unique > T = {t}");
        assert_eq!(
            p.unique(part).total(),
            u,
            "recorded unique of partition {part}"
        );
    }
    assert!(
        seen.iter().all(|&c| c == 1),
        "tuples not covered exactly once: {seen:?}"
    );

    // Metrics against brute force: R = Σ over touched vertices (P(n) − 1).
    let m = Metrics::of(g, p).unwrap();
    let mut parts_of: HashMap<(bool, u32), BTreeSet<usize>> = HashMap::new();
    for part in 0..p.len() {
        for &id in p.part(part) {
            let (r, c) = tup[id as usize];
            parts_of.entry((false, r)).or_default().insert(part);
            parts_of.entry((true, c)).or_default().insert(part);
        }
    }
    let r: u64 = parts_of.values().map(|s| s.len() as u64 - 1).sum();
    assert_eq!(m.replication, r);
    let split = parts_of
        .iter()
        .filter(|((col, _), s)| !col && s.len() > 1)
        .count() as u64;
    assert_eq!(m.split_tasks, split);
    assert_eq!(m.partitions, p.len());
    assert!(m.max_unique <= t);

    // Assignments agree with the partition lists.
    let a = p.assignments();
    for part in 0..p.len() {
        assert!(p.part(part).iter().all(|&id| a[id as usize] == part as u32));
    }

    // SJ-tree: preorder, children nest and tile their parent, leaf ranges.
    let nodes = p.tree().nodes();
    if tup.is_empty() {
        assert!(nodes.is_empty() && p.is_empty());
        return;
    }
    assert_eq!((nodes[0].lo, nodes[0].hi), (0, tup.len() as u32));
    assert_eq!(nodes[0].leaves, 0..p.len() as u32);
    for (i, n) in nodes.iter().enumerate() {
        let ids = &p.order()[n.lo as usize..n.hi as usize];
        let rows: BTreeSet<u32> = ids.iter().map(|&id| tup[id as usize].0).collect();
        let cols: BTreeSet<u32> = ids.iter().map(|&id| tup[id as usize].1).collect();
        assert_eq!(n.unique.tasks as usize, rows.len());
        assert_eq!(n.unique.gathered as usize, cols.len());
        match n.children {
            None => {
                assert!(n.unique.total() <= t);
                assert_eq!(p.tree().leaf_node(n.leaves.start as usize), i as u32);
                assert_eq!(n.leaves.len(), 1);
            }
            Some([l, r]) => {
                assert!(n.unique.total() > t, "node {i} fits but was split");
                let (l, r) = (&nodes[l as usize], &nodes[r as usize]);
                assert!(l.edges() > 0 && r.edges() > 0);
                assert_eq!((l.lo, l.hi, r.lo, r.hi), (n.lo, r.lo, l.hi, n.hi));
                assert_eq!(
                    (l.leaves.start, l.leaves.end),
                    (n.leaves.start, r.leaves.start)
                );
                assert_eq!(r.leaves.end, n.leaves.end);
                assert_eq!((l.depth, r.depth), (n.depth + 1, n.depth + 1));
            }
        }
    }
}

/// Column blocks against brute force: every tuple in the block of its
/// column, blocks in CSR order, the balanced tree over the blocks with
/// every node's distinct tasks and columns counted.
fn check_columns(csr: &Csr<f32>, p: &Partition, cap: u32) {
    let tup = tuples(csr);
    if tup.is_empty() {
        assert!(p.is_empty() && p.tree().nodes().is_empty());
        return;
    }
    let k = csr.ncols().div_ceil(cap as usize).max(1);
    let width = csr.ncols().div_ceil(k).max(1);
    assert_eq!((p.len(), p.capacity() as usize), (k, width));
    for b in 0..k {
        let want: Vec<u32> = (0..tup.len() as u32)
            .filter(|&id| (tup[id as usize].1 as usize / width).min(k - 1) == b)
            .collect();
        assert_eq!(p.part(b), want.as_slice(), "block {b}");
    }
    // Preorder: a node over blocks [a, b) splits at (a + b) / 2.
    fn walk(p: &Partition, node: usize, blocks: std::ops::Range<u32>, depth: u32) {
        let n = &p.tree().nodes()[node];
        assert_eq!((n.leaves.clone(), n.depth), (blocks.clone(), depth));
        let pp = p.part_ptr();
        assert_eq!(
            (n.lo, n.hi),
            (pp[blocks.start as usize], pp[blocks.end as usize])
        );
        match n.children {
            None => assert_eq!(blocks.len(), 1),
            Some([l, r]) => {
                let mid = (blocks.start + blocks.end) / 2;
                assert_eq!(l as usize, node + 1);
                walk(p, l as usize, blocks.start..mid, depth + 1);
                walk(p, r as usize, mid..blocks.end, depth + 1);
            }
        }
    }
    walk(p, 0, 0..k as u32, 0);
    for n in p.tree().nodes() {
        let ids = &p.order()[n.lo as usize..n.hi as usize];
        let rows: BTreeSet<u32> = ids.iter().map(|&id| tup[id as usize].0).collect();
        let cols: BTreeSet<u32> = ids.iter().map(|&id| tup[id as usize].1).collect();
        assert_eq!(
            (n.unique.tasks as usize, n.unique.gathered as usize),
            (rows.len(), cols.len()),
            "node {n:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn column_blocks_hold_their_columns_and_count_every_node(
        csr in csr_strategy(),
        cap in 1u32..12,
    ) {
        let g = WorkGraph::from_csr(&csr).unwrap();
        let p = column_blocks(&g, cap).unwrap();
        check_columns(&csr, &p, cap);
    }

    #[test]
    fn partitions_fit_cover_and_count(csr in csr_strategy(), t in 2u32..30, skip in 0u32..3) {
        let g = WorkGraph::from_csr(&csr).unwrap();
        for bisection in methods(skip) {
            let p = dbwp(&g, &PartitionOptions { capacity: t, bisection }, None).unwrap();
            check_partition(&csr, &g, &p, t);
        }
    }
}

/// A larger mesh-like input where every bisection goes through several
/// coarsening levels.
#[test]
fn grid_partitions_are_valid_and_bisection_beats_tiling() {
    let csr = warpfit_runtime::gen::rgg(3000, 7).unwrap();
    let g = WorkGraph::from_csr(&csr).unwrap();
    let t = 600;
    let mut r = Vec::new();
    for bisection in [
        Bisection::KdTiling,
        Bisection::Coarsened(CoarsenOptions::default()),
    ] {
        let p = dbwp(
            &g,
            &PartitionOptions {
                capacity: t,
                bisection,
            },
            None,
        )
        .unwrap();
        check_partition(&csr, &g, &p, t);
        r.push(Metrics::of(&g, &p).unwrap().replication);
    }
    // Random vertex order: tiling sees no locality, bisection finds it.
    assert!(
        r[1] * 2 < r[0],
        "replication: tiling {}, bisection {}",
        r[0],
        r[1]
    );
}

#[test]
fn progress_reaches_every_tuple() {
    let csr = warpfit_runtime::gen::grid2d(40).unwrap();
    let g = WorkGraph::from_csr(&csr).unwrap();
    let max = std::sync::atomic::AtomicU64::new(0);
    let report = |done: u64| {
        max.fetch_max(done, std::sync::atomic::Ordering::Relaxed);
    };
    let opts = PartitionOptions {
        capacity: 100,
        bisection: Bisection::KdTiling,
    };
    let p = dbwp(&g, &opts, Some(&report)).unwrap();
    assert!(p.len() > 1);
    assert_eq!(max.into_inner(), g.n_tuples() as u64);
}

#[test]
fn a_graph_that_fits_is_one_partition_and_empty_graphs_work() {
    let csr = Csr::new(3, 3, vec![0, 1, 1, 3], vec![2, 0, 1], vec![1.0; 3]).unwrap();
    let g = WorkGraph::from_csr(&csr).unwrap();
    let p = dbwp(
        &g,
        &PartitionOptions {
            capacity: 5,
            bisection: Bisection::KdTiling,
        },
        None,
    )
    .unwrap();
    assert_eq!(p.len(), 1);
    assert_eq!(p.tree().depth(), 1);
    let m = Metrics::of(&g, &p).unwrap();
    assert_eq!((m.replication, m.split_tasks, m.max_unique), (0, 0, 5));

    let empty = Csr::<f32>::new(4, 4, vec![0; 5], vec![], vec![]).unwrap();
    let g = WorkGraph::from_csr(&empty).unwrap();
    let p = dbwp(
        &g,
        &PartitionOptions {
            capacity: 2,
            bisection: Bisection::KdTiling,
        },
        None,
    )
    .unwrap();
    assert!(p.is_empty());
    assert_eq!(Metrics::of(&g, &p).unwrap().replication, 0);
}

#[test]
fn bad_options_are_errors() {
    let csr = warpfit_runtime::gen::grid2d(4).unwrap();
    let g = WorkGraph::from_csr(&csr).unwrap();
    let err = dbwp(
        &g,
        &PartitionOptions {
            capacity: 1,
            bisection: Bisection::KdTiling,
        },
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("at least 2"), "{err}");
    let bad = Bisection::Coarsened(CoarsenOptions {
        imbalance: 1.5,
        ..CoarsenOptions::default()
    });
    assert!(dbwp(
        &g,
        &PartitionOptions {
            capacity: 8,
            bisection: bad
        },
        None
    )
    .is_err());
    assert!(WorkGraph::new(vec![0, 2], vec![0, 5], 3, 4, 4).is_err());
    assert!(WorkGraph::new(vec![0, 2, 1], vec![0], 3, 4, 4).is_err());
    assert!(WorkGraph::new(vec![0, 1], vec![0], 3, 0, 4).is_err());
}

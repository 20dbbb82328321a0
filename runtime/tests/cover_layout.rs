//! Cover layouts (the data of a schedule's launches laid out one after
//! another) checked by brute force on random matrices and partitions: each
//! launch's range array and its task lists read exactly the fine tasks the
//! plan gives that launch.

use proptest::prelude::*;
use warpfit_runtime::partition::{dbwp, Bisection, PartitionOptions, WorkGraph};
use warpfit_runtime::schedule::{profiling_passes, CacheFitPlan, CoverLayout, PartMajor};
use warpfit_runtime::Csr;

fn csr_strategy() -> impl Strategy<Value = Csr<u32>> {
    (1usize..30, 1usize..30).prop_flat_map(|(nrows, ncols)| {
        proptest::collection::vec(proptest::collection::vec(0..ncols as u32, 0..14), nrows)
            .prop_map(move |rows| {
                let mut ptr = vec![0u32];
                let mut cols = Vec::new();
                for r in &rows {
                    cols.extend_from_slice(r);
                    ptr.push(cols.len() as u32);
                }
                let vals = (0..cols.len() as u32).collect();
                Csr::new(nrows, ncols, ptr, cols, vals).unwrap()
            })
    })
}

/// The plan's order laid out by `layout`: what the device copy builds.
fn apply(layout: &CoverLayout, sorted: &[u32], n: usize) -> Vec<u32> {
    let mut out = vec![u32::MAX; sorted.len()];
    for j in 0..layout.len() {
        let (dst, src) = (layout.dst(j), layout.src(j));
        for t in 0..n {
            let len = (dst[t + 1] - dst[t]) as usize;
            let s = src[t] as usize;
            out[dst[t] as usize..][..len].copy_from_slice(&sorted[s..s + len]);
        }
    }
    out
}

/// Fine-task ids of task `t` in partitions `parts`, sorted.
fn plan_ids(plan: &CacheFitPlan, parts: std::ops::Range<usize>, t: u32) -> Vec<u32> {
    let mut ids: Vec<u32> = parts
        .flat_map(|p| plan.part(p).unwrap().to_vec())
        .filter(|s| s.task == t)
        .flat_map(|s| plan.fine_perm()[s.lo as usize..s.hi as usize].to_vec())
        .collect();
    ids.sort_unstable();
    ids
}

fn covers(plan: &CacheFitPlan) -> Vec<Vec<std::ops::Range<usize>>> {
    let mut c = vec![plan.cf_launches(), plan.single_launch()];
    for pass in profiling_passes(plan.tree()) {
        c.push(plan.node_launches(&pass).unwrap());
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_launch_of_every_cover_reads_its_partitions_share(a in csr_strategy(), cap in 2u32..12) {
        let g = WorkGraph::from_csr(&a).unwrap();
        let part = dbwp(&g, &PartitionOptions { capacity: cap, bisection: Bisection::KdTiling }, None).unwrap();
        let plan = CacheFitPlan::new(&g, &part).unwrap();
        let n = a.nrows();
        // The plan's order of the fine-task ids: what the device gathers first.
        let sorted: Vec<u32> = plan.fine_perm().to_vec();
        for launches in covers(&plan) {
            let layout = CoverLayout::new(&plan, &launches).unwrap();
            let laid = apply(&layout, &sorted, n);
            prop_assert!(laid.iter().all(|&v| v != u32::MAX), "a position was not written");
            for (j, r) in launches.iter().enumerate() {
                let dst = layout.dst(j);
                for t in 0..n {
                    let mut got = laid[dst[t] as usize..dst[t + 1] as usize].to_vec();
                    got.sort_unstable();
                    prop_assert_eq!(got, plan_ids(&plan, r.clone(), t as u32));
                }
                // The launch's task list over this layout, complete or not.
                for every in [false, true] {
                    let list = layout.segments(&plan, r.clone(), every).unwrap();
                    let mut seen = vec![0usize; n];
                    for t in 0..n as u32 {
                        let mut got: Vec<u32> = list.segments().iter()
                            .filter(|s| s.task == t)
                            .flat_map(|s| laid[s.lo as usize..s.hi as usize].to_vec())
                            .collect();
                        got.sort_unstable();
                        prop_assert_eq!(got, plan_ids(&plan, r.clone(), t));
                    }
                    for s in list.segments() {
                        seen[s.task as usize] += 1;
                    }
                    if every {
                        prop_assert!(seen.iter().all(|&c| c >= 1), "a task is missing");
                    }
                }
            }
        }
        // The cover of every partition alone is the part-major layout.
        let leaves = CoverLayout::new(&plan, &plan.cf_launches()).unwrap();
        let pm = PartMajor::new(&plan).unwrap();
        for p in 0..plan.len() {
            prop_assert_eq!(leaves.dst(p), pm.part_ptr(p));
        }
        prop_assert_eq!(apply(&leaves, &sorted, n), pm.fine_perm().to_vec());
    }
}

#[test]
fn launches_that_do_not_cover_the_partitions_are_refused() {
    let a = Csr::new(
        2,
        8,
        vec![0, 4, 8],
        vec![0, 7, 1, 6, 2, 5, 3, 4],
        vec![1.0f32; 8],
    )
    .unwrap();
    let g = WorkGraph::from_csr(&a).unwrap();
    let part = dbwp(
        &g,
        &PartitionOptions {
            capacity: 4,
            bisection: Bisection::KdTiling,
        },
        None,
    )
    .unwrap();
    let plan = CacheFitPlan::new(&g, &part).unwrap();
    assert!(plan.len() > 1);
    let first_only = vec![std::ops::Range { start: 0, end: 1 }];
    assert!(CoverLayout::new(&plan, &first_only).is_err());
    let e = CoverLayout::new(&plan, &plan.single_launch())
        .unwrap()
        .segments(&plan, 0..plan.len() + 1, false)
        .unwrap_err();
    assert!(e.to_string().contains("the plan has"), "{e}");
}

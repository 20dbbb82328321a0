//! Cache-fit plans, chunk queues, tree recombination and CPU plan execution,
//! checked by brute force on random matrices and random DBWP partitions.

use proptest::prelude::*;
use std::collections::BTreeSet;
use warpfit_runtime::exec::{cpu, Fault, NestedKernel, SharedOut};
use warpfit_runtime::partition::{
    column_blocks, dbwp, Bisection, CoarsenOptions, Partition, PartitionOptions, Remapping,
    WorkGraph,
};
use warpfit_runtime::schedule::{
    profiling_passes, recombine, run_plan, CacheFitPlan, ChunkQueue, PartMajor, PlanOrder,
};
use warpfit_runtime::{Csr, Segment, Tasks};

/// A random CSR with possibly empty rows, long rows and repeated columns.
fn csr_strategy() -> impl Strategy<Value = Csr<u32>> {
    (1usize..30, 1usize..30).prop_flat_map(|(nrows, ncols)| {
        proptest::collection::vec(
            proptest::collection::vec((0..ncols as u32, 0u32..1000), 0..14),
            nrows,
        )
        .prop_map(move |rows| {
            let mut ptr = vec![0u32];
            let (mut cols, mut vals) = (Vec::new(), Vec::new());
            for r in &rows {
                for &(c, v) in r {
                    cols.push(c);
                    vals.push(v);
                }
                ptr.push(cols.len() as u32);
            }
            Csr::new(nrows, ncols, ptr, cols, vals).unwrap()
        })
    })
}

fn bisection(which: u8) -> Bisection {
    match which % 4 {
        0 => Bisection::KdTiling,
        1 => Bisection::Coarsened(CoarsenOptions::default()),
        _ => Bisection::Coarsened(CoarsenOptions {
            entity_tuples: 2,
            skip_levels: 1,
            ..CoarsenOptions::default()
        }),
    }
}

/// A partition of `g`: K-D tiling, two coarsened bisections, or (`which`
/// 3) column blocks of `capacity` columns.
fn partition(g: &WorkGraph, capacity: u32, which: u8) -> Partition {
    if which % 4 == 3 {
        return column_blocks(g, capacity).unwrap();
    }
    dbwp(
        g,
        &PartitionOptions {
            capacity,
            bisection: bisection(which),
        },
        None,
    )
    .unwrap()
}

/// `out[t] = min_or_sum over k of val[k] * x[col[k]]` in wrapping u64
/// arithmetic: a commutative integer fold, exact under every order.
struct IntSpmv<'a> {
    ptr: &'a [u32],
    col: &'a [u32],
    val: &'a [u32],
    x: &'a [u64],
    out: SharedOut<'a, u64>,
    min: bool,
}

fn ld<T: Copy>(a: &[T], i: usize, name: &'static str) -> Result<T, Fault> {
    a.get(i).copied().ok_or(Fault::index(name, i, a.len()))
}

impl NestedKernel for IntSpmv<'_> {
    const NAME: &'static str = "int_spmv";
    type Acc = u64;
    type Ctx = ();
    fn prologue(&self, t: usize) -> Result<((), usize, usize), Fault> {
        let lo = ld(self.ptr, t, "ptr")? as usize;
        let hi = ld(self.ptr, t + 1, "ptr")? as usize;
        Ok(((), lo, hi))
    }
    fn init(&self, t: usize, _: &()) -> Result<u64, Fault> {
        Ok(if self.min {
            u64::MAX - t as u64
        } else {
            t as u64
        })
    }
    fn map(&self, _: usize, _: &(), k: usize) -> Result<u64, Fault> {
        let c = ld(self.col, k, "col")? as usize;
        Ok(u64::from(ld(self.val, k, "val")?).wrapping_mul(ld(self.x, c, "x")?))
    }
    fn reduce(&self, a: u64, b: u64) -> Result<u64, Fault> {
        Ok(if self.min {
            a.min(b)
        } else {
            a.wrapping_add(b)
        })
    }
    fn epilogue(&self, t: usize, _: &(), acc: u64) -> Result<(), Fault> {
        // SAFETY: each task writes only its own index.
        unsafe { self.out.set(t, acc ^ 0x5a5a, "out") }
    }
}

fn x_of(ncols: usize) -> Vec<u64> {
    (0..ncols as u64)
        .map(|c| c.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7)
        .collect()
}

/// The unthrottled result.
fn reference(a: &Csr<u32>, x: &[u64], min: bool) -> Vec<u64> {
    let mut out = vec![0u64; a.nrows()];
    let k = IntSpmv {
        ptr: a.row_ptr(),
        col: a.col_idx(),
        val: a.values(),
        x,
        out: SharedOut::new(&mut out),
        min,
    };
    cpu::run(&k, Tasks::All(a.nrows())).unwrap();
    out
}

/// The result of `launches` over `plan`, on arrays in plan order.
fn planned(
    a: &Csr<u32>,
    x: &[u64],
    min: bool,
    plan: &CacheFitPlan,
    launches: &[std::ops::Range<usize>],
) -> Vec<u64> {
    let col = plan.permute_fine(a.col_idx()).unwrap();
    let val = plan.permute_fine(a.values()).unwrap();
    let mut out = vec![0u64; a.nrows()];
    let k = IntSpmv {
        ptr: a.row_ptr(),
        col: &col,
        val: &val,
        x,
        out: SharedOut::new(&mut out),
        min,
    };
    let run = run_plan(&k, plan, launches).unwrap();
    assert_eq!(run.launch_seconds.len(), launches.len());
    out
}

/// The same through `PlanOrder`, on the original arrays.
fn planned_in_place(
    a: &Csr<u32>,
    x: &[u64],
    plan: &CacheFitPlan,
    launches: &[std::ops::Range<usize>],
) -> Vec<u64> {
    let mut out = vec![0u64; a.nrows()];
    let k = IntSpmv {
        ptr: a.row_ptr(),
        col: a.col_idx(),
        val: a.values(),
        x,
        out: SharedOut::new(&mut out),
        min: false,
    };
    run_plan(&PlanOrder::new(&k, plan), plan, launches).unwrap();
    out
}

/// Every structural property of a plan, by brute force.
fn check_plan(a: &Csr<u32>, p: &Partition, plan: &CacheFitPlan) {
    let ptr = a.row_ptr();
    let m = a.nnz();
    let n = a.nrows();
    let assign = p.assignments();
    let task_of = |id: usize| ptr.partition_point(|&q| q as usize <= id) - 1;
    assert_eq!((plan.n_fine(), plan.n_tasks(), plan.len()), (m, n, p.len()));

    // A permutation that keeps each fine task in its task, ordered by
    // partition, stable within one.
    let perm = plan.fine_perm();
    let mut sorted = perm.to_vec();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..m as u32).collect::<Vec<_>>());
    for t in 0..n {
        let r = ptr[t] as usize..ptr[t + 1] as usize;
        for i in r.clone() {
            assert!(r.contains(&(perm[i] as usize)), "task {t}: {perm:?}");
        }
        let keys: Vec<(u32, u32)> = perm[r].iter().map(|&o| (assign[o as usize], o)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "task {t}: {keys:?}");
    }

    // Every position in exactly one segment of exactly one partition; each
    // partition's share of a task is one segment holding its tuples.
    let mut cover = vec![0u32; m];
    let mut parts_of_task = vec![BTreeSet::new(); n];
    for q in 0..plan.len() {
        let segs = plan.part(q).unwrap();
        assert!(segs.windows(2).all(|w| w[0].task < w[1].task), "{segs:?}");
        let mut ids = Vec::new();
        for s in segs {
            assert!(s.lo < s.hi, "empty segment in partition {q}");
            let t = s.task as usize;
            assert!(ptr[t] <= s.lo && s.hi <= ptr[t + 1]);
            parts_of_task[t].insert(q);
            for i in s.lo..s.hi {
                cover[i as usize] += 1;
                ids.push(perm[i as usize]);
            }
        }
        ids.sort_unstable();
        assert_eq!(ids, p.part(q), "partition {q}");
    }
    assert!(cover.iter().all(|&c| c == 1), "{cover:?}");
    assert!((0..m).all(|id| parts_of_task[task_of(id)].contains(&(assign[id] as usize))));
    let split: Vec<u32> = (0..n as u32)
        .filter(|&t| parts_of_task[t as usize].len() > 1)
        .collect();
    assert_eq!(plan.split_tasks(), split.as_slice());
    let empty: Vec<Segment> = (0..n)
        .filter(|&t| ptr[t] == ptr[t + 1])
        .map(|t| Segment::new(t as u32, ptr[t], ptr[t]))
        .collect();
    assert_eq!(plan.empty_tasks(), empty.as_slice());
    assert_eq!(
        plan.segments().len(),
        *plan.part_ptr().last().unwrap() as usize + empty.len()
    );

    // A node's segments are its leaves' segments, concatenated.
    for (i, node) in plan.tree().nodes().iter().enumerate() {
        let concat: Vec<Segment> = node
            .leaves
            .clone()
            .flat_map(|q| plan.part(q as usize).unwrap().to_vec())
            .collect();
        assert_eq!(plan.segments_of_node(i).unwrap(), concat.as_slice());
    }
    assert!(plan.segments_of_node(plan.tree().nodes().len()).is_err());

    // Launch segments: CF's launches concatenate to the whole list.
    let all: Vec<Segment> = plan
        .cf_launches()
        .into_iter()
        .flat_map(|r| plan.launch_segments(r).unwrap().to_vec())
        .collect();
    assert_eq!(all, plan.segments());
}

/// Checks a chunk queue against its plan.
fn check_queue(plan: &CacheFitPlan, q: &ChunkQueue, chunk: u32) {
    let ptr = q.chunk_ptr();
    assert_eq!(ptr[0], 0);
    assert_eq!(*ptr.last().unwrap() as usize, q.segments().len());
    for c in 0..q.len() {
        let segs = q.chunk_segments(c).unwrap();
        assert!(!segs.is_empty(), "chunk {c} is empty");
        let work: u32 = segs.iter().map(|s| s.len().max(1)).sum();
        assert!(work <= chunk, "chunk {c}: {work} > {chunk}");
    }
    // The queue's segments, cut pieces glued back, are the plan's.
    let mut glued: Vec<Segment> = Vec::new();
    for s in q.segments() {
        match glued.last_mut() {
            Some(g) if g.task == s.task && g.hi == s.lo && s.lo < s.hi && g.lo < g.hi => {
                g.hi = s.hi
            }
            _ => glued.push(*s),
        }
    }
    let mut plan_glued: Vec<Segment> = Vec::new();
    for s in plan.segments() {
        match plan_glued.last_mut() {
            Some(g) if g.task == s.task && g.hi == s.lo && s.lo < s.hi && g.lo < g.hi => {
                g.hi = s.hi
            }
            _ => plan_glued.push(*s),
        }
    }
    assert_eq!(glued, plan_glued);
    // Chunks of each launch hold exactly that launch's segments.
    for r in plan.cf_launches() {
        let chunks = q.chunks_of(r.clone()).unwrap();
        let segs: Vec<Segment> = (chunks.start..chunks.end)
            .flat_map(|c| q.chunk_segments(c as usize).unwrap().to_vec())
            .collect();
        let want = plan.launch_segments(r).unwrap();
        let total = |s: &[Segment]| s.iter().map(|s| u64::from(s.len())).sum::<u64>();
        assert_eq!(total(&segs), total(want));
        assert_eq!(
            segs.iter().map(|s| s.task).collect::<BTreeSet<_>>(),
            want.iter().map(|s| s.task).collect::<BTreeSet<_>>()
        );
    }
    let everything = q.chunks_of(0..plan.len()).unwrap();
    assert_eq!(everything, 0..q.len() as u32);
}

/// The optimum set cover of the SJ-tree's leaves, by enumerating node
/// subsets (small trees only).
fn brute_force_cover(plan: &CacheFitPlan, stime: &[f64]) -> f64 {
    let nodes = plan.tree().nodes();
    let k = plan.len();
    let mut best = f64::INFINITY;
    for mask in 0u32..(1 << nodes.len()) {
        let mut count = vec![0; k];
        let mut time = 0.0;
        for (i, n) in nodes.iter().enumerate() {
            if mask & (1 << i) != 0 {
                time += stime[i];
                for l in n.leaves.clone() {
                    count[l as usize] += 1;
                }
            }
        }
        if count.iter().all(|&c| c == 1) {
            best = best.min(time);
        }
    }
    best
}

/// Launches that split `0..k` at the given cut flags.
fn launches_from_cuts(k: usize, cuts: &[bool]) -> Vec<std::ops::Range<usize>> {
    if k == 0 {
        return std::iter::once(0..0).collect();
    }
    let mut out = Vec::new();
    let mut start = 0;
    for p in 1..k {
        if cuts.get(p).copied().unwrap_or(false) {
            out.push(start..p);
            start = p;
        }
    }
    out.push(start..k);
    out
}

/// The plan as first built, the straightforward way: each task's fine
/// tasks stably sorted by partition; per partition, its run of every task
/// it touches, tasks ascending; then the empty tasks. Returns the
/// permutation, the segments, their partition pointers and the split tasks.
fn reference_plan(g: &WorkGraph, p: &Partition) -> (Vec<u32>, Vec<Segment>, Vec<u32>, Vec<u32>) {
    let ptr = g.ptr();
    let (n, m) = (g.n_tasks(), g.n_tuples());
    let assign = p.assignments();
    let mut perm: Vec<u32> = (0..m as u32).collect();
    let mut split = Vec::new();
    for t in 0..n {
        let r = ptr[t] as usize..ptr[t + 1] as usize;
        perm[r.clone()].sort_by_key(|&id| assign[id as usize]);
        let parts: BTreeSet<u32> = perm[r].iter().map(|&id| assign[id as usize]).collect();
        if parts.len() > 1 {
            split.push(t as u32);
        }
    }
    let (mut segments, mut part_ptr) = (Vec::new(), vec![0u32]);
    for q in 0..p.len() as u32 {
        for t in 0..n {
            let at: Vec<u32> = (ptr[t]..ptr[t + 1])
                .filter(|&i| assign[perm[i as usize] as usize] == q)
                .collect();
            if let (Some(&lo), Some(&hi)) = (at.first(), at.last()) {
                assert_eq!(
                    hi + 1 - lo,
                    at.len() as u32,
                    "a partition's share is one run"
                );
                segments.push(Segment::new(t as u32, lo, hi + 1));
            }
        }
        part_ptr.push(segments.len() as u32);
    }
    for t in 0..n {
        if ptr[t] == ptr[t + 1] {
            segments.push(Segment::new(t as u32, ptr[t], ptr[t]));
        }
    }
    (perm, segments, part_ptr, split)
}

/// The part-major layout the straightforward way: per partition, per task,
/// the task's tuples in that partition ascending; every partition's range
/// array of where each task's share starts.
fn reference_part_major(g: &WorkGraph, p: &Partition) -> (Vec<u32>, Vec<Vec<u32>>) {
    let ptr = g.ptr();
    let assign = p.assignments();
    let (mut perm, mut ptrs) = (Vec::new(), Vec::new());
    for q in 0..p.len().max(1) as u32 {
        let mut row = Vec::new();
        for t in 0..g.n_tasks() {
            row.push(perm.len() as u32);
            perm.extend((ptr[t]..ptr[t + 1]).filter(|&id| assign[id as usize] == q));
        }
        row.push(perm.len() as u32);
        ptrs.push(row);
    }
    (perm, ptrs)
}

/// The layout's fine permutation and range arrays.
fn layout_of(pm: &PartMajor) -> (Vec<u32>, Vec<Vec<u32>>) {
    (
        pm.fine_perm().to_vec(),
        (0..pm.len()).map(|q| pm.part_ptr(q).to_vec()).collect(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn plans_reorder_within_tasks_and_cover_every_fine_task_once(
        a in csr_strategy(),
        capacity in 2u32..16,
        which in 0u8..4,
        chunk in 1u32..9,
    ) {
        let g = WorkGraph::from_csr(&a).unwrap();
        let p = partition(&g, capacity, which);
        let plan = CacheFitPlan::new(&g, &p).unwrap();
        check_plan(&a, &p, &plan);
        let q = ChunkQueue::new(&plan, chunk).unwrap();
        check_queue(&plan, &q, chunk);
        // Reordered arrays go back to the original.
        let col = plan.permute_fine(a.col_idx()).unwrap();
        prop_assert_eq!(plan.unpermute_fine(&col).unwrap(), a.col_idx());
    }

    #[test]
    fn plans_and_layouts_equal_the_straightforward_ones(
        a in csr_strategy(),
        capacity in 2u32..16,
        which in 0u8..4,
        tail in 0usize..3,
    ) {
        let g = WorkGraph::from_csr(&a).unwrap();
        let p = partition(&g, capacity, which);
        let plan = CacheFitPlan::new(&g, &p).unwrap();
        let (perm, segments, part_ptr, split) = reference_plan(&g, &p);
        prop_assert_eq!(plan.fine_perm(), perm.as_slice());
        prop_assert_eq!(plan.segments(), segments.as_slice());
        prop_assert_eq!(plan.part_ptr(), part_ptr.as_slice());
        prop_assert_eq!(plan.split_tasks(), split.as_slice());
        let want = reference_part_major(&g, &p);
        let via_plan = PartMajor::new(&plan).unwrap();
        prop_assert_eq!(&layout_of(&via_plan), &want);
        let direct = PartMajor::from_partition(&g, p.clone()).unwrap();
        prop_assert_eq!(&direct, &via_plan);
        // Byte permutations of every element size, with elements past the
        // fine tasks, equal the typed one.
        let m = a.nnz();
        for size in [1usize, 2, 3, 4, 8, 16] {
            let src: Vec<u8> = (0..(m + tail) * size).map(|i| (i * 7 + i / size) as u8).collect();
            let got = direct.permute_bytes(&src, size).unwrap();
            let mut want = Vec::new();
            for &o in direct.fine_perm() {
                want.extend_from_slice(&src[o as usize * size..(o as usize + 1) * size]);
            }
            want.extend_from_slice(&src[m * size..]);
            prop_assert_eq!(&got, &want);
            // Piece by piece into a buffer: the same bytes.
            let n = m + tail;
            for (lo, hi) in [(0, n), (0, n / 2), (n / 3, n), (n / 2, n / 2), (n, n)] {
                let mut piece = vec![0xeeu8; (hi - lo) * size];
                direct.permute_bytes_into(&src, size, lo..hi, &mut piece).unwrap();
                prop_assert_eq!(&piece[..], &want[lo * size..hi * size]);
            }
            prop_assert!(direct.permute_bytes_into(&src, size, 0..n + 1, &mut vec![0; (n + 1) * size]).is_err());
            prop_assert!(direct.permute_bytes_into(&src, size, 0..n, &mut vec![0; n * size + 1]).is_err());
        }
        prop_assert!(direct.permute_bytes(&[0u8; 3], 2).is_err());
        prop_assert!(direct.permute_bytes(&[], 0).is_err());
        if m > 0 {
            prop_assert!(direct.permute_bytes(&vec![0u8; 4 * (m - 1)], 4).is_err());
        }
    }

    #[test]
    fn recombination_is_the_optimal_cover(
        a in csr_strategy(),
        capacity in 2u32..12,
        which in 0u8..4,
        times in proptest::collection::vec(0u32..64, 64),
    ) {
        let g = WorkGraph::from_csr(&a).unwrap();
        let p = partition(&g, capacity, which);
        let plan = CacheFitPlan::new(&g, &p).unwrap();
        let nodes = plan.tree().nodes();
        // A node costs its edges times a random factor, so that merged and
        // split nodes compete; integer-valued, so sums are exact in any order.
        let stime: Vec<f64> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.edges() * (1 + times[i % times.len()] % 4)) as f64)
            .collect();
        let r = recombine(plan.tree(), &stime).unwrap();
        // A cover, in partition order, whose time is the chosen nodes' sum.
        let launches = plan.node_launches(&r.nodes).unwrap();
        prop_assert_eq!(launches.len(), r.nodes.len().max(1));
        let sum: f64 = r.nodes.iter().map(|&i| stime[i as usize]).sum();
        prop_assert_eq!(sum, r.time);
        if nodes.len() <= 15 {
            prop_assert_eq!(r.time, brute_force_cover(&plan, &stime));
        }
        // Every profiling pass is a cover too, and every node is in one.
        let passes = profiling_passes(plan.tree());
        prop_assert_eq!(passes.len(), plan.tree().depth() as usize);
        let mut timed = vec![false; nodes.len()];
        for pass in &passes {
            plan.node_launches(pass).unwrap();
            for &i in pass {
                timed[i as usize] = true;
            }
        }
        prop_assert!(timed.iter().all(|&t| t));
    }

    #[test]
    fn cpu_plan_runs_equal_the_unthrottled_run(
        a in csr_strategy(),
        capacity in 2u32..16,
        which in 0u8..4,
        cuts in proptest::collection::vec(any::<bool>(), 0..40),
        min in any::<bool>(),
    ) {
        let g = WorkGraph::from_csr(&a).unwrap();
        let p = partition(&g, capacity, which);
        let plan = CacheFitPlan::new(&g, &p).unwrap();
        let x = x_of(a.ncols());
        let want = reference(&a, &x, min);
        let cf = plan.cf_launches();
        prop_assert_eq!(&planned(&a, &x, min, &plan, &cf), &want);
        prop_assert_eq!(&planned(&a, &x, min, &plan, &plan.single_launch()), &want);
        let random = launches_from_cuts(plan.len(), &cuts);
        prop_assert_eq!(&planned(&a, &x, min, &plan, &random), &want);
        let stime: Vec<f64> = plan
            .tree()
            .nodes()
            .iter()
            .enumerate()
            .map(|(i, n)| (n.edges() * (1 + i as u32 % 3)) as f64)
            .collect();
        let sj = plan.node_launches(&recombine(plan.tree(), &stime).unwrap().nodes).unwrap();
        prop_assert_eq!(&planned(&a, &x, min, &plan, &sj), &want);
        if !min {
            prop_assert_eq!(&planned_in_place(&a, &x, &plan, &cf), &want);
        }
        // The remapped plan on the remapped matrix.
        let remap = Remapping::new(&g, &p).unwrap();
        let b = remap.apply_csr(&a).unwrap();
        let rplan = plan.remapped(&g, &remap).unwrap();
        let bx = remap.gathered_to_new(&x).unwrap();
        for launches in [rplan.cf_launches(), random] {
            let by = planned(&b, &bx, min, &rplan, &launches);
            // B's own unthrottled run (the kernel's init depends on the task id).
            prop_assert_eq!(&by, &reference(&b, &bx, min));
        }
    }
}

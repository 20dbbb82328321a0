//! Cache-fit plans on fixed inputs: a float SpMV under every schedule, the
//! merge of tasks split across launches, edge cases and every error.

#![allow(clippy::single_range_in_vec_init, clippy::reversed_empty_ranges)]

use warpfit_runtime::exec::{cpu, Fault, NestedKernel, SharedOut};
use warpfit_runtime::partition::{dbwp, Bisection, Partition, PartitionOptions, WorkGraph};
use warpfit_runtime::schedule::{
    profiling_passes, recombine, run_plan, CacheFitPlan, ChunkQueue, PlanOrder, ThrottleOptions,
};
use warpfit_runtime::{gen, Csr, Segment, Tasks};

struct Spmv<'a> {
    ptr: &'a [u32],
    col: &'a [u32],
    val: &'a [f64],
    x: &'a [f64],
    y: SharedOut<'a, f64>,
}

fn ld<T: Copy>(a: &[T], i: usize, name: &'static str) -> Result<T, Fault> {
    a.get(i).copied().ok_or(Fault::index(name, i, a.len()))
}

impl NestedKernel for Spmv<'_> {
    const NAME: &'static str = "spmv";
    type Acc = f64;
    type Ctx = ();
    fn prologue(&self, t: usize) -> Result<((), usize, usize), Fault> {
        Ok((
            (),
            ld(self.ptr, t, "ptr")? as usize,
            ld(self.ptr, t + 1, "ptr")? as usize,
        ))
    }
    fn init(&self, _: usize, _: &()) -> Result<f64, Fault> {
        Ok(0.0)
    }
    fn map(&self, _: usize, _: &(), k: usize) -> Result<f64, Fault> {
        let c = ld(self.col, k, "col")? as usize;
        Ok(ld(self.val, k, "val")? * ld(self.x, c, "x")?)
    }
    fn reduce(&self, a: f64, b: f64) -> Result<f64, Fault> {
        Ok(a + b)
    }
    fn epilogue(&self, t: usize, _: &(), acc: f64) -> Result<(), Fault> {
        // SAFETY: each task writes only its own index.
        unsafe { self.y.set(t, acc, "y") }
    }
}

fn kd(g: &WorkGraph, capacity: u32) -> Partition {
    dbwp(
        g,
        &PartitionOptions {
            capacity,
            bisection: Bisection::KdTiling,
        },
        None,
    )
    .unwrap()
}

/// Values with a fractional part, so that fold order shows in the bits.
/// `A·x` with `a`'s pattern and the values `val`, every row whole.
fn unthrottled(a: &Csr<f32>, val: &[f64], x: &[f64]) -> Vec<f64> {
    let mut y = vec![0f64; a.nrows()];
    let k = Spmv {
        ptr: a.row_ptr(),
        col: a.col_idx(),
        val,
        x,
        y: SharedOut::new(&mut y),
    };
    cpu::run(&k, Tasks::All(a.nrows())).unwrap();
    y
}

fn float_data(a: &Csr<f32>) -> (Vec<f64>, Vec<f64>) {
    let val = (0..a.nnz()).map(|k| 1.0 / (1 + k % 13) as f64).collect();
    let x = (0..a.ncols()).map(|c| 0.1 + (c % 7) as f64 / 3.0).collect();
    (val, x)
}

#[test]
fn float_spmv_follows_every_schedule_within_rounding() {
    let a = gen::rmat(11, 8, 7).unwrap();
    let (val, x) = float_data(&a);
    let want = unthrottled(&a, &val, &x);

    let g = WorkGraph::from_csr(&a).unwrap();
    let p = kd(&g, 256);
    let plan = CacheFitPlan::new(&g, &p).unwrap();
    assert!(plan.len() > 8, "{} partitions", plan.len());
    assert!(!plan.split_tasks().is_empty());
    let col = plan.permute_fine(a.col_idx()).unwrap();
    let pval = plan.permute_fine(&val).unwrap();
    let stime: Vec<f64> = plan
        .tree()
        .nodes()
        .iter()
        .map(|n| n.edges() as f64)
        .collect();
    let sj = plan
        .node_launches(&recombine(plan.tree(), &stime).unwrap().nodes)
        .unwrap();
    for launches in [plan.cf_launches(), plan.single_launch(), sj] {
        let mut y = vec![f64::NAN; a.nrows()];
        let k = Spmv {
            ptr: a.row_ptr(),
            col: &col,
            val: &pval,
            x: &x,
            y: SharedOut::new(&mut y),
        };
        let run = run_plan(&k, &plan, &launches).unwrap();
        assert_eq!(run.launch_seconds.len(), launches.len());
        if launches.len() == plan.len() {
            // CF: every task split across partitions is merged at the end.
            assert_eq!(run.merged_tasks, plan.split_tasks().len());
        }
        if launches.len() == 1 {
            assert_eq!((run.merged_tasks, run.merge_seconds), (0, 0.0));
        }
        for r in 0..a.nrows() {
            let len = a.row_range(r).len().max(1) as f64;
            let tol = 4.0 * f64::EPSILON * len * want[r].abs().max(1.0);
            assert!(
                (y[r] - want[r]).abs() <= tol,
                "row {r}: {} vs {}",
                y[r],
                want[r]
            );
        }
        // The same plan run twice gives the same bits.
        let mut again = vec![0f64; a.nrows()];
        let k = Spmv {
            ptr: a.row_ptr(),
            col: &col,
            val: &pval,
            x: &x,
            y: SharedOut::new(&mut again),
        };
        run_plan(&k, &plan, &launches).unwrap();
        assert_eq!(
            y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            again.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_small_plan_by_hand() {
    // Row 0 reads columns 0, 5, 1, 4; row 1 is empty; row 2 reads 5, 0.
    let a = Csr::new(
        3,
        6,
        vec![0, 4, 4, 6],
        vec![0, 5, 1, 4, 5, 0],
        vec![1.0f32; 6],
    )
    .unwrap();
    let g = WorkGraph::from_csr(&a).unwrap();
    let p = kd(&g, 4);
    let plan = CacheFitPlan::new(&g, &p).unwrap();
    let assign = p.assignments();
    // Within row 0, fine tasks grouped by partition, original order kept.
    let row0: Vec<(u32, u32)> = plan.fine_perm()[..4]
        .iter()
        .map(|&o| (assign[o as usize], o))
        .collect();
    let mut sorted = row0.clone();
    sorted.sort();
    assert_eq!(row0, sorted);
    assert_eq!(plan.empty_tasks(), &[Segment::new(1, 4, 4)]);
    let total: u32 = (0..plan.len())
        .flat_map(|q| plan.part(q).unwrap().to_vec())
        .map(|s| s.len())
        .sum();
    assert_eq!(total, 6);
    assert!(plan.part(plan.len()).is_err());
    // The plan's task list runs every task, the empty one included.
    let list = plan.task_list().unwrap();
    assert_eq!(list.len(), plan.segments().len());
}

#[test]
fn a_graph_without_fine_tasks_has_one_launch_of_empty_tasks() {
    let a = Csr::new(3, 2, vec![0, 0, 0, 0], vec![], Vec::<f32>::new()).unwrap();
    let g = WorkGraph::from_csr(&a).unwrap();
    let p = kd(&g, 4);
    let plan = CacheFitPlan::new(&g, &p).unwrap();
    assert!(plan.is_empty());
    assert_eq!(plan.cf_launches(), vec![0..0]);
    assert_eq!(plan.launch_segments(0..0).unwrap().len(), 3);
    let r = recombine(plan.tree(), &[]).unwrap();
    assert!(r.nodes.is_empty() && r.time == 0.0);
    assert!(profiling_passes(plan.tree()).is_empty());
    assert_eq!(plan.node_launches(&r.nodes).unwrap(), vec![0..0]);
    assert_eq!(
        plan.check_launches(&[]).unwrap_err().to_string(),
        "a plan without partitions has exactly one launch, 0..0"
    );
    let q = ChunkQueue::new(&plan, 2).unwrap();
    assert_eq!((q.len(), q.part_chunk_ptr()), (2, &[0u32][..]));
    assert_eq!(q.chunks_of(0..0).unwrap(), 0..2);
    let (val, x) = (Vec::<f64>::new(), vec![1.0; 2]);
    let mut y = vec![f64::NAN; 3];
    let k = Spmv {
        ptr: a.row_ptr(),
        col: a.col_idx(),
        val: &val,
        x: &x,
        y: SharedOut::new(&mut y),
    };
    run_plan(&k, &plan, &plan.cf_launches()).unwrap();
    assert_eq!(y, vec![0.0; 3]);
}

#[test]
fn long_segments_are_cut_into_chunks_of_their_own() {
    // One row of 20 fine tasks over 2 columns, one short row: one partition.
    let a = Csr::new(
        2,
        2,
        vec![0, 20, 21],
        [0, 1].repeat(10).into_iter().chain([0]).collect(),
        vec![1.0f32; 21],
    )
    .unwrap();
    let g = WorkGraph::from_csr(&a).unwrap();
    let plan = CacheFitPlan::new(&g, &kd(&g, 8)).unwrap();
    assert_eq!(plan.len(), 1);
    let q = ChunkQueue::new(&plan, 8).unwrap();
    let chunks: Vec<Vec<(u32, u32, u32)>> = (0..q.len())
        .map(|c| {
            q.chunk_segments(c)
                .unwrap()
                .iter()
                .map(|s| (s.task, s.lo, s.hi))
                .collect()
        })
        .collect();
    assert_eq!(
        chunks,
        vec![
            vec![(0, 0, 8)],
            vec![(0, 8, 16)],
            vec![(0, 16, 20), (1, 20, 21)]
        ]
    );
    // Its task list merges the pieces of row 0.
    let list = q.task_list().unwrap();
    assert_eq!(list.split_tasks().len(), 1);
    assert!(ChunkQueue::new(&plan, 0).is_err());
    assert!(q.chunks_of(0..2).is_err());
    assert!(q.chunk_segments(3).is_err());
}

#[test]
fn errors_name_the_problem() {
    let a = gen::rmat(7, 4, 2).unwrap();
    let g = WorkGraph::from_csr(&a).unwrap();
    let p = kd(&g, 32);
    let plan = CacheFitPlan::new(&g, &p).unwrap();
    let k = plan.len();
    assert!(k > 2);

    // A partition of another graph.
    let other = WorkGraph::from_csr(&gen::rmat(6, 4, 2).unwrap()).unwrap();
    let e = CacheFitPlan::new(&other, &p).unwrap_err().to_string();
    assert!(e.contains("partition tuples"), "{e}");

    // Per-fine-task arrays of the wrong length.
    let e = plan.permute_fine(&[1u8; 3]).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "per-fine-task array (one element per fine task): expected length {}, got 3",
            a.nnz()
        )
    );
    assert!(plan.unpermute_fine(&[1u8; 3]).is_err());

    // Launches that are not an ordered cover.
    for bad in [
        vec![0..k - 1],
        vec![1..k],
        vec![0..1, 0..k],
        vec![0..0, 0..k],
        vec![0..k + 1],
    ] {
        let e = plan.check_launches(&bad).unwrap_err().to_string();
        assert!(e.contains("launch"), "{bad:?}: {e}");
        assert!(!e.contains('\n'));
    }
    assert!(plan.launch_segments(2..1).is_err());
    assert!(plan.launch_segments(0..k + 1).is_err());
    assert!(plan.node_launches(&[0, 0]).is_err());
    assert!(plan.node_launches(&[u32::MAX]).is_err());

    // Recombination inputs.
    let n = plan.tree().nodes().len();
    let e = recombine(plan.tree(), &vec![1.0; n - 1])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("expected length {n}, got {}", n - 1)),
        "{e}"
    );
    for bad in [f64::NAN, -1.0, f64::INFINITY] {
        let mut t = vec![1.0; n];
        t[n - 1] = bad;
        let e = recombine(plan.tree(), &t).unwrap_err().to_string();
        assert!(e.contains(&format!("node {}", n - 1)), "{e}");
    }
    // Ties keep the parent: one launch rather than two.
    let r = recombine(plan.tree(), &vec![0.0; n]).unwrap();
    assert_eq!(r.nodes, vec![0]);

    // A kernel fault comes back as an error naming the kernel and task.
    let (val, x) = float_data(&a);
    let short_x = &x[..x.len() / 2];
    let mut y = vec![0f64; a.nrows()];
    let kern = Spmv {
        ptr: a.row_ptr(),
        col: a.col_idx(),
        val: &val,
        x: short_x,
        y: SharedOut::new(&mut y),
    };
    let e = run_plan(&PlanOrder::new(&kern, &plan), &plan, &plan.cf_launches())
        .unwrap_err()
        .to_string();
    assert!(e.contains("kernel `spmv`") && e.contains("`x`"), "{e}");

    // Options resolve against the graph.
    let o = ThrottleOptions::default();
    assert!(o
        .partition_options(&g, None)
        .unwrap_err()
        .to_string()
        .contains("no L2 size"));
    assert!(o.partition_options(&g, Some(1 << 20)).unwrap().capacity > 1000);
}

#[test]
fn kernels_whose_ranges_do_not_tile_the_fine_tasks_are_refused() {
    // Task 1's range is 3..1 and task 2 re-reads fine tasks 1..4.
    struct Odd;
    impl NestedKernel for Odd {
        const NAME: &'static str = "odd";
        type Acc = u32;
        type Ctx = ();
        fn prologue(&self, t: usize) -> Result<((), usize, usize), Fault> {
            Ok(((), [0, 3, 1][t], [3, 1, 4][t]))
        }
        fn init(&self, _: usize, _: &()) -> Result<u32, Fault> {
            Ok(0)
        }
        fn map(&self, _: usize, _: &(), _: usize) -> Result<u32, Fault> {
            Ok(1)
        }
        fn reduce(&self, a: u32, b: u32) -> Result<u32, Fault> {
            Ok(a + b)
        }
        fn epilogue(&self, _: usize, _: &(), _: u32) -> Result<(), Fault> {
            Ok(())
        }
    }
    impl warpfit_runtime::exec::GatherKernel for Odd {
        const GATHERED: &'static str = "x";
        const GATHERED_ELEM_BYTES: usize = 4;
        const OUTPUT_ELEM_BYTES: usize = 4;
        fn gathered_len(&self) -> usize {
            4
        }
        fn gathered_index(&self, _: usize, _: &(), k: usize) -> Result<usize, Fault> {
            Ok(k)
        }
    }
    let g = WorkGraph::from_kernel(&Odd, 3).unwrap();
    let p = kd(&g, 3);
    let e = CacheFitPlan::new(&g, &p).unwrap_err().to_string();
    assert!(
        e.contains("task 1 starts at fine task 3 but at tuple 3")
            || e.contains("task 2 starts at fine task 1"),
        "{e}"
    );
    assert!(e.contains("CSR-shaped"), "{e}");
}

#[test]
fn a_remapped_plan_runs_the_remapped_matrix() {
    let a = gen::rmat(10, 8, 11).unwrap();
    let (val, x) = float_data(&a);
    // Integer-valued, so that every order gives the same bits.
    let val: Vec<f64> = val.iter().map(|v| (v * 13.0).round()).collect();
    let x: Vec<f64> = x.iter().map(|v| (v * 3.0).round()).collect();
    let want = unthrottled(&a, &val, &x);

    let g = WorkGraph::from_csr(&a).unwrap();
    let p = kd(&g, 200);
    let plan = CacheFitPlan::new(&g, &p).unwrap();
    let remap = warpfit_runtime::partition::Remapping::new(&g, &p).unwrap();
    let b = remap
        .apply_csr(&a.with_values(vec![0f32; a.nnz()]).unwrap())
        .unwrap();
    // The remapped matrix's values, in its own fine-task order.
    let mut bval = Vec::with_capacity(a.nnz());
    for &old in remap.task_perm() {
        bval.extend_from_slice(&val[a.row_range(old as usize)]);
    }
    let rplan = plan.remapped(&g, &remap).unwrap();
    assert_eq!(rplan.split_tasks().len(), plan.split_tasks().len());
    // Segments stay within the new rows, sorted by task within a partition.
    for q in 0..rplan.len() {
        let segs = rplan.part(q).unwrap();
        assert!(segs.windows(2).all(|w| w[0].task < w[1].task));
        for s in segs {
            let r = b.row_range(s.task as usize);
            assert!(r.start as u32 <= s.lo && s.hi as usize <= r.end);
        }
    }
    let col = rplan.permute_fine(b.col_idx()).unwrap();
    let pval = rplan.permute_fine(&bval).unwrap();
    let bx = remap.gathered_to_new(&x).unwrap();
    for launches in [rplan.cf_launches(), rplan.single_launch()] {
        let mut by = vec![f64::NAN; a.nrows()];
        let k = Spmv {
            ptr: b.row_ptr(),
            col: &col,
            val: &pval,
            x: &bx,
            y: SharedOut::new(&mut by),
        };
        run_plan(&k, &rplan, &launches).unwrap();
        assert_eq!(remap.tasks_to_old(&by).unwrap(), want);
    }
    // Another graph is refused.
    let other = WorkGraph::from_csr(&gen::rmat(9, 8, 11).unwrap()).unwrap();
    assert!(plan.remapped(&other, &remap).is_err());
}

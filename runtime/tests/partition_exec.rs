//! Partitions driving execution: work graphs from a kernel, segment lists run
//! by the CPU executor, and data remapping, each checked against plain SpMV.

use warpfit_runtime::exec::{cpu, Fault, GatherKernel, NestedKernel, SharedOut, Tasks};
use warpfit_runtime::partition::{
    dbwp, Bisection, CoarsenOptions, PartitionOptions, Remapping, SegmentList, WorkGraph,
};
use warpfit_runtime::Csr;

/// Hand-written twin of `#[nested_reduce] fn spmv`, with fine-task ranges
/// shifted by `offset` when asked (to exercise non-CSR index spaces).
struct Spmv<'a> {
    row_ptr: &'a [u32],
    col: &'a [u32],
    val: &'a [f32],
    x: &'a [f32],
    y: SharedOut<'a, f32>,
    /// Fine task `k` of every row is stored at `k - offset`.
    offset: usize,
}

fn ld<T: Copy>(a: &[T], i: usize, name: &'static str) -> Result<T, Fault> {
    a.get(i).copied().ok_or(Fault::index(name, i, a.len()))
}

impl NestedKernel for Spmv<'_> {
    const NAME: &'static str = "spmv";
    type Acc = f32;
    type Ctx = ();

    fn prologue(&self, task: usize) -> Result<((), usize, usize), Fault> {
        let lo = ld(self.row_ptr, task, "row_ptr")? as usize + self.offset;
        let hi = ld(self.row_ptr, task + 1, "row_ptr")? as usize + self.offset;
        Ok(((), lo, hi))
    }
    fn init(&self, _: usize, _: &()) -> Result<f32, Fault> {
        Ok(0.0)
    }
    fn map(&self, _: usize, _: &(), k: usize) -> Result<f32, Fault> {
        let k = k - self.offset;
        let c = ld(self.col, k, "col")? as usize;
        Ok(ld(self.val, k, "val")? * ld(self.x, c, "x")?)
    }
    fn reduce(&self, a: f32, b: f32) -> Result<f32, Fault> {
        Ok(a + b)
    }
    fn epilogue(&self, task: usize, _: &(), acc: f32) -> Result<(), Fault> {
        // SAFETY: the kernel writes y only at its own task index.
        unsafe { self.y.set(task, acc, "y") }
    }
}

impl GatherKernel for Spmv<'_> {
    const GATHERED: &'static str = "x";
    const GATHERED_ELEM_BYTES: usize = 4;
    const OUTPUT_ELEM_BYTES: usize = 4;
    fn gathered_len(&self) -> usize {
        self.x.len()
    }
    fn gathered_index(&self, _: usize, _: &(), k: usize) -> Result<usize, Fault> {
        Ok(ld(self.col, k - self.offset, "col")? as usize)
    }
}

/// Integer-valued data, so that every summation order gives the same float.
fn matrix_and_x(csr: &Csr<f32>) -> (Csr<f32>, Vec<f32>) {
    let vals = (0..csr.nnz()).map(|k| (k % 7) as f32 - 3.0).collect();
    let x = (0..csr.ncols()).map(|c| (c % 5) as f32 + 1.0).collect();
    (csr.with_values(vals).unwrap(), x)
}

fn spmv(csr: &Csr<f32>, x: &[f32], tasks: Tasks<'_>, offset: usize) -> Vec<f32> {
    let mut y = vec![f32::NAN; csr.nrows()];
    let k = Spmv {
        row_ptr: csr.row_ptr(),
        col: csr.col_idx(),
        val: csr.values(),
        x,
        y: SharedOut::new(&mut y),
        offset,
    };
    cpu::run(&k, tasks).unwrap();
    y
}

/// The K-D tiling partition of `g` at capacity `t`.
fn kd(g: &WorkGraph, t: u32) -> warpfit_runtime::partition::Partition {
    dbwp(
        g,
        &PartitionOptions {
            capacity: t,
            bisection: Bisection::KdTiling,
        },
        None,
    )
    .unwrap()
}

fn inputs() -> Vec<Csr<f32>> {
    vec![
        warpfit_runtime::gen::rgg(2000, 3).unwrap(),
        warpfit_runtime::gen::rmat(10, 8, 5).unwrap(),
        // Empty rows and a long row that must be split.
        Csr::new(
            5,
            64,
            vec![0, 0, 64, 64, 66, 66],
            (0..64).chain([3, 60]).collect(),
            vec![1.0; 66],
        )
        .unwrap(),
    ]
}

#[test]
fn work_graph_from_kernel_equals_from_csr() {
    for csr in inputs() {
        let (csr, x) = matrix_and_x(&csr);
        let mut y = vec![0f32; csr.nrows()];
        let k = Spmv {
            row_ptr: csr.row_ptr(),
            col: csr.col_idx(),
            val: csr.values(),
            x: &x,
            y: SharedOut::new(&mut y),
            offset: 0,
        };
        let from_kernel = WorkGraph::from_kernel(&k, csr.nrows()).unwrap();
        assert_eq!(from_kernel, WorkGraph::from_csr(&csr).unwrap());
    }
}

#[test]
fn from_kernel_reports_bad_gathered_indices() {
    let csr = Csr::new(2, 4, vec![0, 1, 2], vec![0, 3], vec![1.0, 1.0]).unwrap();
    let x = vec![1.0f32; 2]; // too short for column 3
    let mut y = vec![0f32; 2];
    let k = Spmv {
        row_ptr: csr.row_ptr(),
        col: csr.col_idx(),
        val: csr.values(),
        x: &x,
        y: SharedOut::new(&mut y),
        offset: 0,
    };
    let err = WorkGraph::from_kernel(&k, 2).unwrap_err().to_string();
    assert!(
        err.contains("spmv") && err.contains("task 1") && err.contains("`x`"),
        "{err}"
    );
    // A prologue fault names the task too.
    let err = WorkGraph::from_kernel(&k, 3).unwrap_err().to_string();
    assert!(err.contains("row_ptr") && err.contains("task 2"), "{err}");
}

#[test]
fn segment_lists_reproduce_whole_task_results() {
    for csr in inputs() {
        let (csr, x) = matrix_and_x(&csr);
        let want = spmv(&csr, &x, Tasks::All(csr.nrows()), 0);
        let g = WorkGraph::from_csr(&csr).unwrap();
        for bisection in [
            Bisection::KdTiling,
            Bisection::Coarsened(CoarsenOptions::default()),
        ] {
            for t in [4u32, 40, 400] {
                let p = dbwp(
                    &g,
                    &PartitionOptions {
                        capacity: t,
                        bisection: bisection.clone(),
                    },
                    None,
                )
                .unwrap();
                let segs = SegmentList::new(&g, &p).unwrap();
                // Segments cover each partition's tuples exactly, in order.
                for part in 0..p.len() {
                    let ids: Vec<u32> = segs.part(part).iter().flat_map(|s| s.lo..s.hi).collect();
                    assert_eq!(ids, p.part(part));
                }
                let empty = (0..csr.nrows())
                    .filter(|&r| csr.row_range(r).is_empty())
                    .count();
                assert_eq!(segs.empty_tasks().len(), empty);
                let list = segs.task_list().unwrap();
                assert_eq!(spmv(&csr, &x, Tasks::List(&list), 0), want, "T = {t}");
            }
        }
    }
}

#[test]
fn segments_use_the_kernels_fine_task_indices() {
    let (csr, x) = matrix_and_x(&inputs()[2]);
    let offset = 1000;
    let want = spmv(&csr, &x, Tasks::All(csr.nrows()), offset);
    let mut y = vec![0f32; csr.nrows()];
    let k = Spmv {
        row_ptr: csr.row_ptr(),
        col: csr.col_idx(),
        val: csr.values(),
        x: &x,
        y: SharedOut::new(&mut y),
        offset,
    };
    let g = WorkGraph::from_kernel(&k, csr.nrows()).unwrap();
    assert_eq!(g.fine_index(1, 0), offset as u32);
    let p = kd(&g, 12);
    assert!(p.len() > 2);
    let segs = SegmentList::new(&g, &p).unwrap();
    assert!(segs.segments().iter().all(|s| s.lo >= offset as u32));
    let list = segs.task_list().unwrap();
    assert_eq!(spmv(&csr, &x, Tasks::List(&list), offset), want);
}

#[test]
fn remapped_spmv_maps_back_to_the_original() {
    for csr in inputs() {
        let (csr, x) = matrix_and_x(&csr);
        let want = spmv(&csr, &x, Tasks::All(csr.nrows()), 0);
        let g = WorkGraph::from_csr(&csr).unwrap();
        let p = kd(&g, 64);
        let remap = Remapping::new(&g, &p).unwrap();
        let mut rp = remap.task_perm().to_vec();
        rp.sort_unstable();
        assert_eq!(rp, (0..csr.nrows() as u32).collect::<Vec<_>>());
        let b = remap.apply_csr(&csr).unwrap();
        let xb = remap.gathered_to_new(&x).unwrap();
        let yb = spmv(&b, &xb, Tasks::All(b.nrows()), 0);
        assert_eq!(remap.tasks_to_old(&yb).unwrap(), want);
        assert_eq!(remap.gathered_to_old(&xb).unwrap(), x);
        assert_eq!(remap.tasks_to_new(&want).unwrap(), yb);
    }
}

#[test]
fn remapping_packs_private_vertices_first() {
    // Two partitions by hand: rows 0,1 read cols 0,1; rows 2,3 read cols 2,3;
    // row 3 also reads col 0, a boundary column.
    let csr = Csr::new(
        4,
        4,
        vec![0, 2, 3, 4, 6],
        vec![0, 1, 1, 2, 3, 0],
        vec![1.0; 6],
    )
    .unwrap();
    let g = WorkGraph::from_csr(&csr).unwrap();
    let p = kd(&g, 4);
    let remap = Remapping::new(&g, &p).unwrap();
    let assign = p.assignments();
    // Columns touched by two partitions come after every private column.
    let mut parts_of_col = vec![std::collections::BTreeSet::new(); 4];
    for r in 0..4 {
        for k in csr.row_range(r) {
            parts_of_col[csr.col_idx()[k] as usize].insert(assign[k]);
        }
    }
    let boundary: Vec<bool> = parts_of_col.iter().map(|s| s.len() > 1).collect();
    let order: Vec<bool> = remap
        .gathered_perm()
        .iter()
        .map(|&c| boundary[c as usize])
        .collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
    assert!(Remapping::new(&g, &p)
        .unwrap()
        .tasks_to_old(&[1.0f32])
        .is_err());
}

#[test]
fn reversed_and_overlapping_kernel_ranges() {
    // Task 1's range is 3..1 (empty, as the executor runs it) and task 2
    // re-reads fine tasks 1..4: the work graph keeps each task's own `k`.
    let row_ptr = [0u32, 3, 1, 4];
    let col = [0u32, 2, 1, 3];
    let val = [1.0f32, 2.0, 3.0, 4.0];
    let x = [1.0f32, 10.0, 100.0, 1000.0];
    let run = |tasks: Tasks<'_>| {
        let mut y = vec![f32::NAN; 3];
        let k = Spmv {
            row_ptr: &row_ptr,
            col: &col,
            val: &val,
            x: &x,
            y: SharedOut::new(&mut y),
            offset: 0,
        };
        cpu::run(&k, tasks).unwrap();
        y
    };
    let mut y = vec![0f32; 3];
    let k = Spmv {
        row_ptr: &row_ptr,
        col: &col,
        val: &val,
        x: &x,
        y: SharedOut::new(&mut y),
        offset: 0,
    };
    let g = WorkGraph::from_kernel(&k, 3).unwrap();
    assert_eq!(g.ptr(), &[0, 3, 3, 6]);
    assert_eq!(g.gathered(), &[0, 2, 1, 2, 1, 3]);
    assert_eq!((g.fine_index(2, 3), g.fine_lo(1)), (1, 3));
    let p = kd(&g, 3);
    assert!(p.len() > 1);
    let segs = SegmentList::new(&g, &p).unwrap();
    assert_eq!(
        segs.empty_tasks(),
        &[warpfit_runtime::Segment::new(1, 3, 3)]
    );
    let list = segs.task_list().unwrap();
    assert_eq!(run(Tasks::List(&list)), run(Tasks::All(3)));
}

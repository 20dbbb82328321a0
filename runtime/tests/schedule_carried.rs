//! The CPU backend's carried passes over a part-major plan (`run_carried`)
//! against the unthrottled executor: exactly for integer sums and min folds,
//! within rounding for f32 SpMV, on random matrices and partitions, split
//! rows included; faults reported as the unthrottled run reports them.

use proptest::prelude::*;
use warpfit_runtime::exec::{cpu, Fault, NestedKernel, SharedOut};
use warpfit_runtime::partition::{
    column_blocks, dbwp, Bisection, CoarsenOptions, Partition, PartitionOptions, WorkGraph,
};
use warpfit_runtime::schedule::{
    run_carried, CacheFitPlan, CarriedLayout, CarriedParts, PartMajor,
};
use warpfit_runtime::{gen, Csr, Error, Tasks};

/// A random CSR with possibly empty rows, long rows and repeated columns.
fn csr_strategy() -> impl Strategy<Value = Csr<u32>> {
    (1usize..40, 1usize..40).prop_flat_map(|(nrows, ncols)| {
        proptest::collection::vec(
            proptest::collection::vec((0..ncols as u32, 0u32..1000), 0..20),
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

fn ld<T: Copy>(a: &[T], i: usize, name: &'static str) -> Result<T, Fault> {
    a.get(i).copied().ok_or(Fault::index(name, i, a.len()))
}

/// `out[t] = fold over k of val[k] * x[col[k]]` from an init that depends
/// on the task, in wrapping u64 arithmetic (`+` or `min`): exact under
/// every order. With `fast`, a precheck and an unchecked fold, as generated
/// kernels have.
struct IntSpmv<'a> {
    ptr: &'a [u32],
    col: &'a [u32],
    val: &'a [u32],
    x: &'a [u64],
    out: SharedOut<'a, u64>,
    min: bool,
    fast: bool,
}

impl NestedKernel for IntSpmv<'_> {
    const NAME: &'static str = "int_spmv";
    type Acc = u64;
    type Ctx = u64;
    fn prologue(&self, t: usize) -> Result<(u64, usize, usize), Fault> {
        let lo = ld(self.ptr, t, "ptr")? as usize;
        let hi = ld(self.ptr, t + 1, "ptr")? as usize;
        Ok((t as u64 * 3, lo, hi))
    }
    fn init(&self, t: usize, ctx: &u64) -> Result<u64, Fault> {
        Ok(if self.min { u64::MAX - t as u64 } else { *ctx })
    }
    fn map(&self, _: usize, _: &u64, k: usize) -> Result<u64, Fault> {
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
    fn epilogue(&self, t: usize, ctx: &u64, acc: u64) -> Result<(), Fault> {
        // SAFETY: each task writes only its own index.
        unsafe { self.out.set(t, acc ^ ctx, "out") }
    }
    fn precheck(&self, lo: usize, hi: usize) -> bool {
        self.fast
            && hi <= self.col.len()
            && hi <= self.val.len()
            && self.col[lo..hi]
                .iter()
                .all(|&c| (c as usize) < self.x.len())
    }
    unsafe fn fold_range_prechecked(
        &self,
        _: usize,
        _: &u64,
        lo: usize,
        hi: usize,
        mut acc: u64,
    ) -> Result<u64, Fault> {
        for k in lo..hi {
            let v = u64::from(self.val[k]).wrapping_mul(self.x[self.col[k] as usize]);
            acc = self.reduce(acc, v)?;
        }
        Ok(acc)
    }
}

/// `y[t] = Σ val[k] · x[col[k]]` in f32.
struct F32Spmv<'a> {
    ptr: &'a [u32],
    col: &'a [u32],
    val: &'a [f32],
    x: &'a [f32],
    y: SharedOut<'a, f32>,
}

impl NestedKernel for F32Spmv<'_> {
    const NAME: &'static str = "f32_spmv";
    type Acc = f32;
    type Ctx = ();
    fn prologue(&self, t: usize) -> Result<((), usize, usize), Fault> {
        Ok((
            (),
            ld(self.ptr, t, "ptr")? as usize,
            ld(self.ptr, t + 1, "ptr")? as usize,
        ))
    }
    fn init(&self, _: usize, _: &()) -> Result<f32, Fault> {
        Ok(0.0)
    }
    fn map(&self, _: usize, _: &(), k: usize) -> Result<f32, Fault> {
        let c = ld(self.col, k, "col")? as usize;
        Ok(ld(self.val, k, "val")? * ld(self.x, c, "x")?)
    }
    fn reduce(&self, a: f32, b: f32) -> Result<f32, Fault> {
        Ok(a + b)
    }
    fn epilogue(&self, t: usize, _: &(), acc: f32) -> Result<(), Fault> {
        // SAFETY: each task writes only its own index.
        unsafe { self.y.set(t, acc, "y") }
    }
}

fn x_of(ncols: usize) -> Vec<u64> {
    (0..ncols as u64)
        .map(|c| c.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7)
        .collect()
}

fn partition(g: &WorkGraph, capacity: u32, which: u8) -> Partition {
    let bisection = match which % 4 {
        0 => Bisection::KdTiling,
        1 => Bisection::Coarsened(CoarsenOptions::default()),
        2 => Bisection::Coarsened(CoarsenOptions {
            entity_tuples: 2,
            skip_levels: 1,
            ..CoarsenOptions::default()
        }),
        _ => return column_blocks(g, capacity).unwrap(),
    };
    dbwp(
        g,
        &PartitionOptions {
            capacity,
            bisection,
        },
        None,
    )
    .unwrap()
}

/// The unthrottled result over the original arrays.
fn reference(a: &Csr<u32>, x: &[u64], min: bool) -> Result<Vec<u64>, Error> {
    let mut out = vec![0u64; a.nrows()];
    let k = IntSpmv {
        ptr: a.row_ptr(),
        col: a.col_idx(),
        val: a.values(),
        x,
        out: SharedOut::new(&mut out),
        min,
        fast: true,
    };
    cpu::run(&k, Tasks::All(a.nrows()))?;
    Ok(out)
}

/// The carried run over `pm`, on its part-major arrays; the same over the
/// plan's compact layout must give the same result.
fn carried(
    a: &Csr<u32>,
    pm: &PartMajor,
    x: &[u64],
    min: bool,
    fast: bool,
) -> Result<Vec<u64>, Error> {
    let col = pm.permute_fine(a.col_idx())?;
    let val = pm.permute_fine(a.values())?;
    let mut out = vec![0u64; a.nrows()];
    let k = IntSpmv {
        ptr: a.row_ptr(),
        col: &col,
        val: &val,
        x,
        out: SharedOut::new(&mut out),
        min,
        fast,
    };
    let run = run_carried(&k, &CarriedParts::of_part_major(pm))?;
    assert_eq!(run.part_seconds.len(), pm.len());
    Ok(out)
}

/// The carried run over the plan's compact layout.
fn carried_compact(
    a: &Csr<u32>,
    plan: &CacheFitPlan,
    x: &[u64],
    min: bool,
    fast: bool,
) -> Result<Vec<u64>, Error> {
    let layout = CarriedLayout::new(plan)?;
    let (col, val) = (
        layout.permute_fine(a.col_idx())?,
        layout.permute_fine(a.values())?,
    );
    let mut out = vec![0u64; a.nrows()];
    let k = IntSpmv {
        ptr: a.row_ptr(),
        col: &col,
        val: &val,
        x,
        out: SharedOut::new(&mut out),
        min,
        fast,
    };
    let parts = layout.parts();
    assert_eq!(parts.len(), layout.len());
    run_carried(&k, &parts)?;
    Ok(out)
}

fn part_major(a: &Csr<u32>, capacity: u32, which: u8) -> (CacheFitPlan, PartMajor) {
    let g = WorkGraph::from_csr(a).unwrap();
    let plan = CacheFitPlan::new(&g, &partition(&g, capacity, which)).unwrap();
    let pm = PartMajor::new(&plan).unwrap();
    (plan, pm)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn integer_and_min_folds_equal_the_unthrottled_run_exactly(
        a in csr_strategy(),
        capacity in 2u32..16,
        which in 0u8..4,
        min in any::<bool>(),
        fast in any::<bool>(),
    ) {
        let (plan, pm) = part_major(&a, capacity, which);
        let x = x_of(a.ncols());
        let want = reference(&a, &x, min).unwrap();
        prop_assert_eq!(&carried(&a, &pm, &x, min, fast).unwrap(), &want);
        prop_assert_eq!(&carried_compact(&a, &plan, &x, min, fast).unwrap(), &want);
        // The compact layout orders fine tasks as PartMajor does, and its
        // partitions' active tasks are PartMajor's.
        let layout = CarriedLayout::new(&plan).unwrap();
        prop_assert_eq!(layout.fine_perm(), pm.fine_perm());
        let (dense, compact) = (CarriedParts::of_part_major(&pm), layout.parts());
        for p in 0..pm.len() {
            let (d, c) = (dense.active_tasks(p), compact.active_tasks(p));
            prop_assert!(d == c || (d.is_empty() && c.is_empty()), "{:?} {:?}", d, c);
        }
    }

    #[test]
    fn f32_spmv_agrees_within_rounding(
        a in csr_strategy(),
        capacity in 2u32..16,
        which in 0u8..4,
    ) {
        let (_, pm) = part_major(&a, capacity, which);
        let val: Vec<f32> = a.values().iter().map(|&v| v as f32 / 7.0 - 60.0).collect();
        let x: Vec<f32> = (0..a.ncols()).map(|c| 1.0 + (c % 11) as f32 / 3.0).collect();
        let mut want = vec![0f32; a.nrows()];
        let k = F32Spmv { ptr: a.row_ptr(), col: a.col_idx(), val: &val, x: &x, y: SharedOut::new(&mut want) };
        cpu::run(&k, Tasks::All(a.nrows())).unwrap();
        let (col, pval) = (pm.permute_fine(a.col_idx()).unwrap(), pm.permute_fine(&val).unwrap());
        let mut got = vec![f32::NAN; a.nrows()];
        let k = F32Spmv { ptr: a.row_ptr(), col: &col, val: &pval, x: &x, y: SharedOut::new(&mut got) };
        run_carried(&k, &CarriedParts::of_part_major(&pm)).unwrap();
        for t in 0..a.nrows() {
            let mag: f32 = a.row_range(t).map(|i| (val[i] * x[a.col_idx()[i] as usize]).abs()).sum();
            prop_assert!((got[t] - want[t]).abs() <= 1e-5 * mag + 1e-6, "row {}: {} vs {}", t, got[t], want[t]);
        }
    }
}

#[test]
fn split_rows_and_hubs_across_many_partitions_are_exact() {
    // RMAT's hub rows span every column block; with 64 columns per block
    // the plan has several partitions and many split rows.
    let a32 = gen::rmat(11, 16, 5).unwrap();
    let a = a32.map_values(|&v| v.to_bits() >> 9);
    for (capacity, which) in [(64, 3), (64, 0), (300, 1), (1 << 20, 3)] {
        let (plan, pm) = part_major(&a, capacity, which);
        if capacity < 1000 {
            assert!(plan.len() >= 3, "{} partitions", plan.len());
            assert!(
                plan.split_tasks().len() > 100,
                "{}",
                plan.split_tasks().len()
            );
        } else {
            assert_eq!(pm.len(), 1);
        }
        let x = x_of(a.ncols());
        for min in [false, true] {
            for fast in [false, true] {
                let want = reference(&a, &x, min).unwrap();
                let what =
                    format!("capacity {capacity}, partitioner {which}, min {min}, fast {fast}");
                assert_eq!(carried(&a, &pm, &x, min, fast).unwrap(), want, "{what}");
                assert_eq!(
                    carried_compact(&a, &plan, &x, min, fast).unwrap(),
                    want,
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn faults_are_the_unthrottled_runs() {
    let a = gen::uniform(3000, 9, 4)
        .unwrap()
        .map_values(|&v| v.to_bits());
    // `x` one short: the tasks reading the last column fault. It lies in
    // the last column block, so the first pass that faults is the last one,
    // and its lowest failing task is the unthrottled run's.
    let x = x_of(a.ncols() - 1);
    let want = reference(&a, &x, false).unwrap_err().to_string();
    assert!(want.contains("`x`"), "{want}");
    for which in [3, 0] {
        let (plan, pm) = part_major(&a, 500, which);
        assert!(plan.len() > 2);
        for fast in [false, true] {
            let compact = carried_compact(&a, &plan, &x, false, fast).unwrap_err();
            let got = carried(&a, &pm, &x, false, fast).unwrap_err().to_string();
            assert_eq!(compact.to_string(), got);
            if which == 3 {
                assert_eq!(got, want, "fast {fast}");
            } else {
                // K-D tiles are not column ranges: some task reading the
                // last column faults in the first pass that reads it.
                assert!(got.contains("`x`") && got.contains("index 2999"), "{got}");
            }
        }
    }
    // A range array shorter than the plan's tasks faults in the prologue.
    let (_, pm) = part_major(&a, 500, 3);
    let (col, val) = (
        pm.permute_fine(a.col_idx()).unwrap(),
        pm.permute_fine(a.values()).unwrap(),
    );
    let x = x_of(a.ncols());
    let mut out = vec![0u64; a.nrows()];
    let k = IntSpmv {
        ptr: &a.row_ptr()[..a.nrows()],
        col: &col,
        val: &val,
        x: &x,
        out: SharedOut::new(&mut out),
        min: false,
        fast: true,
    };
    let e = run_carried(&k, &CarriedParts::of_part_major(&pm))
        .unwrap_err()
        .to_string();
    assert!(e.contains("task 2999") && e.contains("`ptr`"), "{e}");
}

#[test]
fn empty_plans_and_bad_range_arrays() {
    // No tasks at all, and tasks without fine tasks.
    for (n, ptr) in [(0usize, vec![0u32]), (4, vec![0u32; 5])] {
        let a = Csr::new(n, 3, ptr, Vec::new(), Vec::<u32>::new()).unwrap();
        let (_, pm) = part_major(&a, 4, 0);
        assert_eq!(pm.len(), 1);
        let x = x_of(3);
        assert_eq!(
            carried(&a, &pm, &x, false, true).unwrap(),
            reference(&a, &x, false).unwrap()
        );
    }
    let e = CarriedParts::new(Vec::new()).unwrap_err().to_string();
    assert!(e.contains("at least one partition"), "{e}");
    let e = CarriedParts::new(vec![&[][..]]).unwrap_err().to_string();
    assert!(e.contains("one entry per task"), "{e}");
    let (p0, p1) = ([0u32, 1, 2], [2u32, 3]);
    let e = CarriedParts::new(vec![&p0[..], &p1[..]])
        .unwrap_err()
        .to_string();
    assert!(e.contains("partition 1"), "{e}");
    let bad = [0u32, 3, 2, 4];
    let e = CarriedParts::new(vec![&bad[..]]).unwrap_err().to_string();
    assert!(e.contains("decreases at task 1"), "{e}");
    // Hand-made range arrays: two passes over a 2-row matrix.
    let (q0, q1) = ([0u32, 1, 2], [2u32, 3, 4]);
    let parts = CarriedParts::new(vec![&q0[..], &q1[..]]).unwrap();
    // Part-major columns: row 0 reads 0 then 2, row 1 reads 1 then 3.
    let (ptr, col, val) = ([0u32, 2, 4], [0u32, 1, 2, 3], [1u32, 1, 1, 1]);
    let x = [10u64, 20, 30, 40];
    let mut out = vec![0u64; 2];
    let k = IntSpmv {
        ptr: &ptr,
        col: &col,
        val: &val,
        x: &x,
        out: SharedOut::new(&mut out),
        min: false,
        fast: true,
    };
    run_carried(&k, &parts).unwrap();
    assert_eq!(out, [40, (3 + 60) ^ 3]);
}

#[test]
fn k_d_tiles_keep_range_arrays_of_their_own_rows() {
    let a = gen::grid2d(64).unwrap().map_values(|&v| v.to_bits());
    let (plan, pm) = part_major(&a, 256, 0);
    let k = plan.len();
    assert!(k >= 16, "{k} tiles");
    let layout = CarriedLayout::new(&plan).unwrap();
    let dense = k * (a.nrows() + 1) * 4;
    assert!(
        layout.range_bytes() * 4 < dense,
        "{} bytes against {dense}",
        layout.range_bytes()
    );
    let x = x_of(a.ncols());
    let want = reference(&a, &x, false).unwrap();
    assert_eq!(carried_compact(&a, &plan, &x, false, true).unwrap(), want);
    assert_eq!(carried(&a, &pm, &x, false, true).unwrap(), want);
}

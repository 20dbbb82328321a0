//! Algorithm 5 (data remapping) against a straightforward sequential
//! implementation on random matrices and partitions: the parallel remapping
//! must give exactly the same permutations.

use proptest::prelude::*;
use warpfit_runtime::partition::{
    dbwp, Bisection, Partition, PartitionOptions, Remapping, WorkGraph,
};
use warpfit_runtime::Csr;

const NONE: u32 = u32::MAX;
const BOUNDARY: u32 = u32::MAX - 1;

/// The paper's loop as written: owners, then partitions ranked by unique
/// vertices, then a walk placing each vertex at its first appearance.
fn reference(g: &WorkGraph, p: &Partition) -> (Vec<u32>, Vec<u32>) {
    let owners = |n: usize, vertex: &dyn Fn(u32) -> u32| {
        let mut owner = vec![NONE; n];
        for q in 0..p.len() {
            for &id in p.part(q) {
                let o = &mut owner[vertex(id) as usize];
                *o = match *o {
                    NONE => q as u32,
                    x if x == q as u32 => x,
                    _ => BOUNDARY,
                };
            }
        }
        owner
    };
    let gathered = g.gathered();
    let task = |id: u32| g.task_of(id);
    let col = |id: u32| gathered[id as usize];
    let to = owners(g.n_tasks(), &task);
    let co = owners(g.n_gathered(), &col);
    let mut unique = vec![0u64; p.len()];
    for &o in to.iter().chain(&co) {
        if o < BOUNDARY {
            unique[o as usize] += 1;
        }
    }
    let mut ranked: Vec<u32> = (0..p.len() as u32).collect();
    ranked.sort_by_key(|&q| unique[q as usize]);
    let layout = |owner: &[u32], vertex: &dyn Fn(u32) -> u32| {
        let n = owner.len();
        let mut placed = vec![false; n];
        let mut perm = Vec::new();
        for boundary in [false, true] {
            for &q in &ranked {
                for &id in p.part(q as usize) {
                    let v = vertex(id) as usize;
                    if !placed[v] && (owner[v] == BOUNDARY) == boundary {
                        placed[v] = true;
                        perm.push(v as u32);
                    }
                }
            }
        }
        perm.extend((0..n as u32).filter(|&v| !placed[v as usize]));
        perm
    };
    (layout(&to, &task), layout(&co, &col))
}

fn csr_strategy() -> impl Strategy<Value = Csr<f32>> {
    (1usize..40, 1usize..40).prop_flat_map(|(nrows, ncols)| {
        proptest::collection::vec(proptest::collection::vec(0..ncols as u32, 0..12), nrows)
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn parallel_remapping_equals_the_sequential_walk(a in csr_strategy(), cap in 2u32..16) {
        let g = WorkGraph::from_csr(&a).unwrap();
        let p = dbwp(&g, &PartitionOptions { capacity: cap, bisection: Bisection::KdTiling }, None).unwrap();
        let r = Remapping::new(&g, &p).unwrap();
        let (tasks, cols) = reference(&g, &p);
        prop_assert_eq!(r.task_perm(), &tasks[..]);
        prop_assert_eq!(r.gathered_perm(), &cols[..]);
        for (new, &old) in r.task_perm().iter().enumerate() {
            prop_assert_eq!(r.task_inv()[old as usize] as usize, new);
        }
        for (new, &old) in r.gathered_perm().iter().enumerate() {
            prop_assert_eq!(r.gathered_inv()[old as usize] as usize, new);
        }
        // Square: one permutation on both sides, the gathered elements'.
        match Remapping::symmetric(&g, &p) {
            Ok(s) => {
                prop_assert_eq!(a.nrows(), a.ncols());
                prop_assert!(s.is_symmetric());
                prop_assert_eq!(s.task_perm(), &cols[..]);
                prop_assert_eq!(s.gathered_inv(), r.gathered_inv());
            }
            Err(e) => {
                prop_assert_ne!(a.nrows(), a.ncols());
                prop_assert!(e.to_string().contains("as many tasks as gathered"));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The sorted rows' sources: row by row in the new task order, each
    /// row's fine tasks by new column, equal columns in their original order;
    /// and the columns they give are `apply_csr`'s, sorted.
    #[test]
    fn sorted_row_sources_sort_each_remapped_row_by_its_new_columns(
        a in csr_strategy(),
        cap in 2u32..16,
    ) {
        let g = WorkGraph::from_csr(&a).unwrap();
        let p = dbwp(&g, &PartitionOptions { capacity: cap, bisection: Bisection::KdTiling }, None).unwrap();
        let r = Remapping::new(&g, &p).unwrap();
        let src = r.sorted_row_sources(a.row_ptr(), a.col_idx()).unwrap();
        let new_col = |k: u32| r.gathered_inv()[a.col_idx()[k as usize] as usize];
        let mut want = Vec::new();
        for &old in r.task_perm() {
            let mut row: Vec<u32> = a.row_range(old as usize).map(|k| k as u32).collect();
            row.sort_by_key(|&k| new_col(k));
            want.extend(row);
        }
        prop_assert_eq!(&src, &want);
        let mut b = r.apply_csr(&a).unwrap();
        b.sort_indices();
        let cols: Vec<u32> = src.iter().map(|&k| new_col(k)).collect();
        prop_assert_eq!(&cols[..], b.col_idx());
    }
}

#[test]
fn sorted_row_sources_reject_arrays_that_do_not_fit() {
    let a = Csr::new(3, 3, vec![0, 2, 2, 3], vec![0, 2, 1], vec![1.0f32; 3]).unwrap();
    let g = WorkGraph::from_csr(&a).unwrap();
    let r = Remapping::levels_of(&g).unwrap();
    let short = r.sorted_row_sources(&[0, 2, 3], &[0, 2, 1]).unwrap_err();
    assert!(short.to_string().contains("range array"), "{short}");
    let untiled = r.sorted_row_sources(&[0, 2, 2, 2], &[0, 2, 1]).unwrap_err();
    assert!(untiled.to_string().contains("does not tile"), "{untiled}");
    let far = r.sorted_row_sources(&[0, 2, 2, 3], &[0, 7, 1]).unwrap_err();
    assert!(far.to_string().contains("gathered id"), "{far}");
    assert!(r.sorted_row_sources(&[], &[]).is_err());
}

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

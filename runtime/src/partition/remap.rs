//! Data remapping (Section 4.2, Algorithm 5).
//!
//! After partitioning, each partition's data are packed: partitions are ranked
//! by their count of non-boundary vertices (vertices no other partition
//! touches), fewest first, since for equal work less unique data means more
//! reuse; each partition's non-boundary vertices are laid out contiguously in
//! that order, then all boundary vertices, by first appearance in the same
//! order. Tasks (rows, `y`) and gathered elements (columns, `x`) get separate
//! permutations, because they are separate arrays. Vertices no tuple touches
//! (empty rows, unread columns) go last, in their original order.
//!
//! A square matrix used as `x ← A x` needs the same permutation on both
//! sides; the two permutations here generally differ, so such an iteration
//! maps `y` back with [`Remapping::tasks_to_old`] and forward with
//! [`Remapping::gathered_to_new`].

use super::dbwp::Partition;
use super::graph::WorkGraphOf;
use crate::sparse::Csr;
use crate::{Error, Result};

/// Row and column permutations of Algorithm 5, with their inverses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remapping {
    /// `task_perm[new] = old`.
    task_perm: Vec<u32>,
    /// `task_inv[old] = new`.
    task_inv: Vec<u32>,
    gathered_perm: Vec<u32>,
    gathered_inv: Vec<u32>,
}

const NONE: u32 = u32::MAX;
const BOUNDARY: u32 = u32::MAX - 1;

/// Per vertex: the one partition that touches it, `BOUNDARY` for several,
/// `NONE` for none.
fn owners(n: usize, partition: &Partition, vertex: impl Fn(u32) -> u32) -> Vec<u32> {
    let mut owner = vec![NONE; n];
    for p in 0..partition.len() {
        for &id in partition.part(p) {
            let o = &mut owner[vertex(id) as usize];
            *o = match *o {
                NONE => p as u32,
                q if q == p as u32 => q,
                _ => BOUNDARY,
            };
        }
    }
    owner
}

/// Lays out one kind of vertex: non-boundary by ranked partition, then
/// boundary by first appearance, then untouched ones.
fn layout(
    owner: &[u32],
    ranked: &[u32],
    partition: &Partition,
    vertex: impl Fn(u32) -> u32,
) -> Vec<u32> {
    let n = owner.len();
    let mut placed = vec![false; n];
    let mut perm = Vec::with_capacity(n);
    for boundary in [false, true] {
        for &p in ranked {
            for &id in partition.part(p as usize) {
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
}

fn invert(perm: &[u32]) -> Vec<u32> {
    let mut inv = vec![0u32; perm.len()];
    for (new, &old) in perm.iter().enumerate() {
        inv[old as usize] = new as u32;
    }
    inv
}

impl Remapping {
    /// Algorithm 5 for `partition` of `graph`.
    pub fn new(graph: &WorkGraphOf<'_>, partition: &Partition) -> Result<Self> {
        if partition.order().len() != graph.n_tuples() {
            return Err(Error::length(
                "partition tuples (= work graph tuples)",
                graph.n_tuples(),
                partition.order().len(),
            ));
        }
        let gathered = graph.gathered();
        let task = |id: u32| graph.task_of(id);
        let col = |id: u32| gathered[id as usize];
        let task_owner = owners(graph.n_tasks(), partition, task);
        let col_owner = owners(graph.n_gathered(), partition, col);
        let mut unique = vec![0u64; partition.len()];
        for &o in task_owner.iter().chain(&col_owner) {
            if o < BOUNDARY {
                unique[o as usize] += 1;
            }
        }
        let mut ranked: Vec<u32> = (0..partition.len() as u32).collect();
        ranked.sort_by_key(|&p| unique[p as usize]);
        let task_perm = layout(&task_owner, &ranked, partition, task);
        let gathered_perm = layout(&col_owner, &ranked, partition, col);
        Ok(Remapping {
            task_inv: invert(&task_perm),
            task_perm,
            gathered_inv: invert(&gathered_perm),
            gathered_perm,
        })
    }

    /// `task_perm()[new] = old` for tasks (rows).
    pub fn task_perm(&self) -> &[u32] {
        &self.task_perm
    }
    /// `task_inv()[old] = new`.
    pub fn task_inv(&self) -> &[u32] {
        &self.task_inv
    }
    /// `gathered_perm()[new] = old` for gathered elements (columns).
    pub fn gathered_perm(&self) -> &[u32] {
        &self.gathered_perm
    }
    /// `gathered_inv()[old] = new`.
    pub fn gathered_inv(&self) -> &[u32] {
        &self.gathered_inv
    }

    /// The matrix with rows and columns renamed: new row `i` is old row
    /// `task_perm[i]`, with every column `c` renamed `gathered_inv[c]`. Entries
    /// keep their order within a row (so sorted columns may become unsorted),
    /// which keeps every row's fold order and therefore its result bit for bit.
    pub fn apply_csr<T: Clone>(&self, csr: &Csr<T>) -> Result<Csr<T>> {
        self.check("matrix rows", self.task_perm.len(), csr.nrows())?;
        self.check("matrix columns", self.gathered_perm.len(), csr.ncols())?;
        let mut row_ptr = Vec::with_capacity(csr.nrows() + 1);
        let mut col_idx = Vec::with_capacity(csr.nnz());
        let mut values = Vec::with_capacity(csr.nnz());
        row_ptr.push(0u32);
        for &old in &self.task_perm {
            let r = csr.row_range(old as usize);
            col_idx.extend(
                csr.col_idx()[r.clone()]
                    .iter()
                    .map(|&c| self.gathered_inv[c as usize]),
            );
            values.extend_from_slice(&csr.values()[r]);
            row_ptr.push(col_idx.len() as u32);
        }
        Csr::new(csr.nrows(), csr.ncols(), row_ptr, col_idx, values)
    }

    /// A gathered vector (`x`) in the new column order.
    pub fn gathered_to_new<T: Copy>(&self, x: &[T]) -> Result<Vec<T>> {
        self.check("gathered vector", self.gathered_perm.len(), x.len())?;
        Ok(self.gathered_perm.iter().map(|&o| x[o as usize]).collect())
    }
    /// A gathered vector from the new column order back to the original.
    pub fn gathered_to_old<T: Copy>(&self, x: &[T]) -> Result<Vec<T>> {
        self.check("gathered vector", self.gathered_inv.len(), x.len())?;
        Ok(self.gathered_inv.iter().map(|&n| x[n as usize]).collect())
    }
    /// A task vector (`y`) in the new row order.
    pub fn tasks_to_new<T: Copy>(&self, y: &[T]) -> Result<Vec<T>> {
        self.check("task vector", self.task_perm.len(), y.len())?;
        Ok(self.task_perm.iter().map(|&o| y[o as usize]).collect())
    }
    /// A task vector (`y`) from the new row order back to the original.
    pub fn tasks_to_old<T: Copy>(&self, y: &[T]) -> Result<Vec<T>> {
        self.check("task vector", self.task_inv.len(), y.len())?;
        Ok(self.task_inv.iter().map(|&n| y[n as usize]).collect())
    }

    fn check(&self, what: &str, expected: usize, got: usize) -> Result<()> {
        if expected == got {
            Ok(())
        } else {
            Err(Error::length(format!("remapping: {what}"), expected, got))
        }
    }
}

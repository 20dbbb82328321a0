//! Who owns what: the owner part of every task and every gathered entry.

use super::{check_parts, check_pattern, PartitionKind};
use crate::partition::level_order;
use crate::sparse::Csr;
use crate::{mem, Error, Result};

/// Which part owns each task and each gathered entry.
///
/// Invariants, checked by every constructor: `1 ≤ parts ≤`
/// [`MAX_PARTS`](super::MAX_PARTS) and every owner is below `parts`. Parts
/// may own nothing (more parts than tasks): they get empty layouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    parts: usize,
    task_owner: Vec<u32>,
    x_owner: Vec<u32>,
}

impl Ownership {
    /// The ownership `kind` gives a kernel of `row_ptr.len() - 1` tasks whose
    /// fine tasks read `col` from a gathered vector of `x_len` entries.
    ///
    /// Tasks are cut into `parts` balanced contiguous blocks of the kind's
    /// task sequence (see [`PartitionKind`]). Gathered entries:
    /// - square kernels (`x_len == n_tasks`): entry `i` is owned by the owner
    ///   of task `i`. A part's owned entries and its tasks are then the same
    ///   indices in the same order, so its local task index equals its local
    ///   owned-`x` index: what an app iterating `x ← f(A x)` needs to write a
    ///   task's output where the next launch gathers it.
    /// - otherwise `x` is cut into `parts` contiguous blocks of equal size (±1):
    ///   entry `i` belongs to part `floor(i · parts / x_len)`.
    ///
    /// # Errors
    /// `parts` is 0 or above [`MAX_PARTS`](super::MAX_PARTS); the pattern is
    /// malformed (`row_ptr` empty, not starting at 0, decreasing or not ending
    /// at `col.len()`, a column `≥ x_len`, a count over u32);
    /// [`PartitionKind::Levels`] on a kernel that is not square; the memory
    /// budget refuses the owner arrays.
    pub fn new(
        kind: PartitionKind,
        parts: usize,
        row_ptr: &[u32],
        col: &[u32],
        x_len: usize,
    ) -> Result<Self> {
        check_parts(parts)?;
        let n_tasks = check_pattern(row_ptr, col, x_len)?;
        let order = match kind {
            PartitionKind::Rows => None,
            PartitionKind::Levels => {
                if x_len != n_tasks {
                    return Err(Error::invalid(format!(
                        "partition kind `levels` orders tasks and gathered entries alike: \
                         it needs a square kernel (x_len == n_tasks), got {n_tasks} tasks \
                         and x_len = {x_len}"
                    )));
                }
                Some(levels(row_ptr, col)?)
            }
        };
        let task_owner = balanced_blocks(row_ptr, order.as_deref(), parts)?;
        let x_owner = if x_len == n_tasks {
            task_owner.clone()
        } else {
            equal_blocks(x_len, parts)?
        };
        Ok(Ownership {
            parts,
            task_owner,
            x_owner,
        })
    }

    /// An ownership given outright: `task_owner[t]` and `x_owner[i]` are the
    /// parts owning task `t` and gathered entry `i` (for a partition made
    /// elsewhere). For a square kernel whose apps need local task index ==
    /// local owned-`x` index, pass `x_owner == task_owner`.
    ///
    /// # Errors
    /// `parts` is 0 or above [`MAX_PARTS`](super::MAX_PARTS), an owner is not
    /// below `parts`, or a length does not fit u32.
    pub fn from_owners(parts: usize, task_owner: Vec<u32>, x_owner: Vec<u32>) -> Result<Self> {
        check_parts(parts)?;
        crate::error::to_u32("n_tasks", task_owner.len())?;
        crate::error::to_u32("x_len", x_owner.len())?;
        for (what, owners) in [("task_owner", &task_owner), ("x_owner", &x_owner)] {
            if let Some(i) = owners.iter().position(|&o| o as usize >= parts) {
                return Err(Error::out_of_range(
                    format!("{what}[{i}] (parts)"),
                    owners[i],
                    parts,
                ));
            }
        }
        Ok(Ownership {
            parts,
            task_owner,
            x_owner,
        })
    }

    /// The number of parts.
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// The owner part of every task (`n_tasks` entries).
    pub fn task_owner(&self) -> &[u32] {
        &self.task_owner
    }

    /// The owner part of every gathered entry (`x_len` entries).
    pub fn x_owner(&self) -> &[u32] {
        &self.x_owner
    }
}

/// The level order of a square, already checked pattern, from task 0. It goes
/// through a [`Csr`] of `()` values (no value storage) so that it is exactly
/// [`level_order`]; that costs one transient copy of the pattern.
fn levels(row_ptr: &[u32], col: &[u32]) -> Result<Vec<u32>> {
    let n = row_ptr.len() - 1;
    let mut ptr = Vec::new();
    mem::try_reserve(&mut ptr, row_ptr.len(), "the level order's copy of row_ptr")?;
    ptr.extend_from_slice(row_ptr);
    let mut idx = Vec::new();
    mem::try_reserve(&mut idx, col.len(), "the level order's copy of col")?;
    idx.extend_from_slice(col);
    let pattern = Csr::new(n, n, ptr, idx, vec![(); col.len()])?;
    level_order(&pattern, 0)
}

/// Owners of the tasks cut into `parts` contiguous blocks of `order` (all
/// tasks ascending when `None`) balanced by weight = fine tasks + 1: a task
/// goes to the part whose equal share of the total weight holds the midpoint
/// of its own weight (see [`PartitionKind`]).
fn balanced_blocks(row_ptr: &[u32], order: Option<&[u32]>, parts: usize) -> Result<Vec<u32>> {
    let n = row_ptr.len() - 1;
    let mut owner = mem::try_filled("the task owners", n, 0u32)?;
    // Fits u64 easily: n and nnz are below 2^32, parts ≤ 1024.
    let total = u64::from(row_ptr[n]) + n as u64;
    let parts = parts as u64;
    let mut before = 0u64;
    for k in 0..n {
        let t = order.map_or(k, |o| o[k] as usize);
        let weight = u64::from(row_ptr[t + 1] - row_ptr[t]) + 1;
        // midpoint · parts / total, doubled to stay in integers; below parts
        // since the midpoint is below total.
        let p = (2 * before + weight) * parts / (2 * total);
        owner[t] = p as u32;
        before += weight;
    }
    Ok(owner)
}

/// Owners of `len` entries cut into `parts` contiguous blocks of equal size
/// (±1): entry `i` belongs to part `floor(i · parts / len)`, i.e. part `p`
/// holds `ceil(p · len / parts)..ceil((p + 1) · len / parts)`.
fn equal_blocks(len: usize, parts: usize) -> Result<Vec<u32>> {
    let mut owner = Vec::new();
    mem::try_reserve(&mut owner, len, "the gathered-entry owners")?;
    let start = |p: usize| ((p as u64 * len as u64).div_ceil(parts as u64)) as usize;
    for p in 0..parts {
        owner.resize(start(p + 1), p as u32);
    }
    Ok(owner)
}

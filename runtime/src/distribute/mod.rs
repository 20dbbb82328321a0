//! Distributing one gather kernel over several devices.
//!
//! A gather kernel has `n_tasks` coarse tasks (rows); task `t` owns the fine
//! tasks `row_ptr[t]..row_ptr[t + 1]`, and fine task `e` reads the gathered
//! entry `col[e]` of a vector `x` of `x_len` entries. To run it on `parts`
//! devices, every task and every gathered entry is given one owner part
//! ([`Ownership`], chosen by a [`PartitionKind`]), and each part gets a
//! [`PartLayout`]: its tasks, its fine tasks, and a *local* `x`,
//!
//! ```text
//! [ owned x entries (ascending global index) | halo from part 0 | halo from part 1 | … ]
//! ```
//!
//! skipping itself, where the halo from part `q` is the ascending list of the
//! `q`-owned entries that this part's fine tasks read ([`HaloFrom`]). The
//! fine tasks' columns are rewritten to local `x` indices, so a device runs
//! the unchanged kernel on its local arrays. Before each launch every part
//! packs, for every part that reads from it, the entries that part needs
//! (gathered from its owned local `x` by the local indices of a [`HaloTo`])
//! and sends them; the receiver takes them straight into the halo slice of
//! its local `x`. [`Distribution::exchange_host`] is that exchange on the
//! host, the reference a device exchange is tested against.
//!
//! Everything here is host code with u32 indices, as in
//! [`Csr`](crate::Csr). Building a distribution costs time linear in
//! `nnz + n_tasks + x_len` (plus sorting each halo) and, besides the
//! result, one u32 and two bits per gathered entry of scratch: nothing is
//! allocated per part and gathered entry.

mod dist;
mod layout;
mod owners;
#[cfg(test)]
mod tests;

pub use dist::Distribution;
pub use layout::{HaloFrom, HaloTo, PartLayout};
pub use owners::Ownership;

use crate::error::{excerpt, to_u32};
use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Most parts a distribution may have: part ids are small, and every build
/// loop over parts runs once per part.
pub const MAX_PARTS: usize = 1024;

/// How tasks are assigned to parts.
///
/// Both kinds cut a sequence of tasks into `parts` contiguous blocks of about
/// equal weight, where a task weighs its fine tasks plus one: the fine tasks
/// are the work and the memory a part holds, and the `+ 1` keeps blocks of
/// empty rows (which still cost a task slot and an output) balanced too. A
/// task is never split. Task `t` at position `k` of the sequence, with the
/// tasks before it weighing `before` in all and the total weight `total`, goes
/// to part `floor((before + weight(t) / 2) · parts / total)`: the part
/// whose equal share holds the midpoint of the task's weight. So no part
/// weighs more than `total / parts` plus the largest task weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartitionKind {
    /// Contiguous blocks of tasks in index order, balanced by weight (fine
    /// tasks + 1). The cheapest cut; good when the numbering already keeps
    /// neighbours close (banded matrices, meshes numbered by a locality
    /// order).
    #[default]
    Rows,
    /// Contiguous blocks of the breadth-first level (Cuthill–McKee) order
    /// from task 0 ([`level_order`](crate::partition::level_order)), balanced
    /// the same way. Neighbours land on the same part, so few gathered
    /// entries cross parts (a small halo) even when the numbering is random.
    /// Square kernels only (`x_len == n_tasks`: tasks and gathered entries
    /// are the same vertices); any other shape is an error.
    Levels,
}

impl PartitionKind {
    /// Every kind, in the order of [`PartitionKind::NAMES`].
    pub const ALL: [PartitionKind; 2] = [PartitionKind::Rows, PartitionKind::Levels];

    /// The names [`PartitionKind::from_name`] accepts (trimmed, any case).
    pub const NAMES: [&'static str; 2] = ["rows", "levels"];

    /// The kind named `s` (`rows` or `levels`, trimmed, any case).
    ///
    /// # Errors
    /// Any other name; the message quotes it and lists the names.
    pub fn from_name(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        Self::ALL
            .iter()
            .copied()
            .find(|k| k.name() == lower)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown partition kind `{}`: expected one of {}",
                    excerpt(s.as_bytes()),
                    Self::NAMES.join(", ")
                ))
            })
    }

    /// The kind's name, as [`PartitionKind::from_name`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            PartitionKind::Rows => "rows",
            PartitionKind::Levels => "levels",
        }
    }
}

impl fmt::Display for PartitionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PartitionKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::from_name(s)
    }
}

/// Checks a part count: at least 1 (someone must run the tasks) and at most
/// [`MAX_PARTS`].
fn check_parts(parts: usize) -> Result<()> {
    if parts == 0 {
        return Err(Error::invalid(
            "distribution: parts must be at least 1, got 0",
        ));
    }
    if parts > MAX_PARTS {
        return Err(Error::invalid(format!(
            "distribution: at most {MAX_PARTS} parts, got {parts}"
        )));
    }
    Ok(())
}

/// Checks a kernel's pattern and returns `n_tasks`: `row_ptr` has
/// `n_tasks + 1 ≥ 1` entries, starts at 0, never decreases and ends at
/// `col.len()`; every column is below `x_len`; the counts fit u32.
fn check_pattern(row_ptr: &[u32], col: &[u32], x_len: usize) -> Result<usize> {
    const FORMAT: &str = "task range array (row_ptr)";
    let Some(&last) = row_ptr.last() else {
        return Err(Error::InvalidMatrix {
            format: FORMAT,
            message: "row_ptr must have n_tasks + 1 >= 1 entries, got none".into(),
        });
    };
    let n_tasks = row_ptr.len() - 1;
    to_u32("n_tasks", n_tasks)?;
    to_u32("x_len", x_len)?;
    to_u32("fine tasks (col.len())", col.len())?;
    if row_ptr[0] != 0 {
        return Err(Error::InvalidMatrix {
            format: FORMAT,
            message: format!("row_ptr[0] = {}, expected 0", row_ptr[0]),
        });
    }
    // Sequential scans: memory-bound, and faster than rayon's position_first
    // (which pays per element) at any size seen here.
    if let Some(t) = row_ptr.windows(2).position(|w| w[0] > w[1]) {
        return Err(Error::InvalidMatrix {
            format: FORMAT,
            message: format!(
                "row_ptr decreases at task {t}: {} > {}",
                row_ptr[t],
                row_ptr[t + 1]
            ),
        });
    }
    if last as usize != col.len() {
        return Err(Error::length(
            "fine tasks: col.len() (= row_ptr[n_tasks])",
            last as usize,
            col.len(),
        ));
    }
    if let Some(e) = col.iter().position(|&g| g as usize >= x_len) {
        return Err(Error::out_of_range(
            format!("gathered index col[{e}] (x_len)"),
            col[e],
            x_len,
        ));
    }
    Ok(n_tasks)
}

/// A set of indices below a fixed bound, one bit each: the per-entry marks
/// of a build (two bits per gathered entry instead of a word). Atomic words,
/// so that a part's reads are marked by all cores at once.
#[derive(Debug)]
struct Bits {
    words: Vec<std::sync::atomic::AtomicU64>,
}

impl Bits {
    /// The empty set of indices below `len`.
    fn new(len: usize, what: &str) -> Result<Self> {
        let n = len.div_ceil(64);
        let mut words = Vec::new();
        crate::mem::try_reserve(&mut words, n, what)?;
        words.extend((0..n).map(|_| std::sync::atomic::AtomicU64::new(0)));
        Ok(Bits { words })
    }

    /// Adds `i` (from any thread).
    fn set(&self, i: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let (w, b) = (&self.words[i / 64], 1u64 << (i % 64));
        // Most reads repeat an entry already marked: test before writing.
        if w.load(Relaxed) & b == 0 {
            w.fetch_or(b, Relaxed);
        }
    }

    fn count(&self) -> usize {
        use std::sync::atomic::Ordering::Relaxed;
        self.words
            .iter()
            .map(|w| w.load(Relaxed).count_ones() as usize)
            .sum()
    }
}

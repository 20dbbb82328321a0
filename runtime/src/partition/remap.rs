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
use super::work_graph::WorkGraphOf;
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

/// Per vertex of one kind: the one partition that touches it (`NONE`:
/// none, `BOUNDARY`: several), and the position of its first appearance in
/// the ranked order of the partitions' tuples (`u64::MAX`: none). One
/// parallel pass over the tuples, two atomics per tuple.
struct Appearance {
    owner: Vec<u32>,
    first: Vec<u64>,
}

fn appearances(
    n: usize,
    partition: &Partition,
    ranked_offset: &[u64],
    vertex: impl Fn(u32) -> u32 + Sync,
) -> Result<Appearance> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
    crate::mem::check(
        "remapping's per-vertex owners and first appearances",
        (n as u64).saturating_mul(12),
    )?;
    let owner: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(NONE)).collect();
    let first: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
    (0..partition.len()).into_par_iter().for_each(|p| {
        let base = ranked_offset[p];
        partition
            .part(p)
            .par_iter()
            .enumerate()
            .for_each(|(i, &id)| {
                let v = vertex(id) as usize;
                let p = p as u32;
                // NONE -> p -> (another partition) BOUNDARY: monotone, so a
                // failed exchange only ever sees a later state.
                let mut cur = owner[v].load(Relaxed);
                loop {
                    let next = match cur {
                        NONE => p,
                        q if q == p || q == BOUNDARY => break,
                        _ => BOUNDARY,
                    };
                    match owner[v].compare_exchange_weak(cur, next, Relaxed, Relaxed) {
                        Ok(_) => break,
                        Err(seen) => cur = seen,
                    }
                }
                first[v].fetch_min(base + i as u64, Relaxed);
            });
    });
    Ok(Appearance {
        owner: owner.into_iter().map(AtomicU32::into_inner).collect(),
        first: first.into_iter().map(AtomicU64::into_inner).collect(),
    })
}

/// Lays out one kind of vertex: non-boundary vertices by ranked partition,
/// each partition's by first appearance; then boundary vertices by first
/// appearance in the ranked order; then untouched ones, ascending. Sorting
/// by the first appearance's position gives exactly the order a sequential
/// walk of the ranked partitions places them in.
fn layout(a: &Appearance) -> Vec<u32> {
    use rayon::prelude::*;
    let n = a.owner.len();
    let pick = |boundary: bool| {
        let mut v: Vec<u32> = (0..n as u32)
            .into_par_iter()
            .filter(|&v| {
                let o = a.owner[v as usize];
                o != NONE && (o == BOUNDARY) == boundary
            })
            .collect();
        // Positions are distinct (a tuple names one vertex of each kind).
        v.par_sort_unstable_by_key(|&v| a.first[v as usize]);
        v
    };
    let mut perm = Vec::with_capacity(n);
    perm.extend(pick(false));
    perm.extend(pick(true));
    perm.par_extend(
        (0..n as u32)
            .into_par_iter()
            .filter(|&v| a.owner[v as usize] == NONE),
    );
    perm
}

fn invert(perm: &[u32]) -> Vec<u32> {
    use rayon::prelude::*;
    let mut inv = vec![0u32; perm.len()];
    let cells = crate::exec::SharedOut::new(&mut inv);
    perm.par_iter().enumerate().for_each(|(new, &old)| {
        // SAFETY: `perm` is a permutation: every `old` is written once.
        let _ = unsafe { cells.set(old as usize, new as u32, "the remapping's inverse") };
    });
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
        use rayon::prelude::*;
        let gathered = graph.gathered();
        let task = |id: u32| graph.task_of(id);
        let col = |id: u32| gathered[id as usize];
        let k = partition.len();
        // Owners first (positions in partition order; the ranking below
        // needs the owners, the layout the ranked positions).
        let unranked: Vec<u64> = (0..k)
            .scan(0u64, |at, p| {
                let here = *at;
                *at += partition.part(p).len() as u64;
                Some(here)
            })
            .collect();
        let task_a = appearances(graph.n_tasks(), partition, &unranked, task)?;
        let col_a = appearances(graph.n_gathered(), partition, &unranked, col)?;
        let mut unique = vec![0u64; k];
        for owners in [&task_a.owner, &col_a.owner] {
            let counts = owners
                .par_iter()
                .fold(
                    || vec![0u64; k],
                    |mut c, &o| {
                        if o < BOUNDARY {
                            c[o as usize] += 1;
                        }
                        c
                    },
                )
                .reduce(
                    || vec![0u64; k],
                    |a, b| a.iter().zip(&b).map(|(x, y)| x + y).collect(),
                );
            for (u, c) in unique.iter_mut().zip(counts) {
                *u += c;
            }
        }
        // Fewest unique vertices first (stable: ties keep partition order).
        let mut ranked: Vec<u32> = (0..k as u32).collect();
        ranked.sort_by_key(|&p| unique[p as usize]);
        let mut offset = vec![0u64; k];
        let mut at = 0u64;
        for &p in &ranked {
            offset[p as usize] = at;
            at += partition.part(p as usize).len() as u64;
        }
        // First appearances in the ranked order: the unranked ones moved
        // by their partition's shift (a vertex's first appearance is in the
        // lowest-ranked partition touching it, so it is recomputed).
        let task_a = appearances(graph.n_tasks(), partition, &offset, task)?;
        let col_a = appearances(graph.n_gathered(), partition, &offset, col)?;
        let task_perm = layout(&task_a);
        let gathered_perm = layout(&col_a);
        Ok(Remapping {
            task_inv: invert(&task_perm),
            task_perm,
            gathered_inv: invert(&gathered_perm),
            gathered_perm,
        })
    }

    /// The remapping of a square kernel iterated as `x ← A x` (tasks and
    /// gathered elements are the same vertices): one permutation on both
    /// sides, Algorithm 5's order of the gathered elements (whose locality
    /// the cache-fit partitions are about), so that a vector produced in the
    /// new task order is the next launch's gathered vector in the new order
    /// with no permutation between launches.
    ///
    /// # Errors
    /// The graph is not square (as many tasks as gathered elements); as
    /// [`Remapping::new`].
    pub fn symmetric(graph: &WorkGraphOf<'_>, partition: &Partition) -> Result<Self> {
        if graph.n_tasks() != graph.n_gathered() {
            return Err(Error::invalid(format!(
                "a symmetric remapping needs as many tasks as gathered elements, got {} and {}",
                graph.n_tasks(),
                graph.n_gathered()
            )));
        }
        let r = Self::new(graph, partition)?;
        Ok(Remapping {
            task_perm: r.gathered_perm.clone(),
            task_inv: r.gathered_inv.clone(),
            gathered_perm: r.gathered_perm,
            gathered_inv: r.gathered_inv,
        })
    }

    /// The breadth-first renumbering of a square matrix
    /// ([`level_order`](super::level_order) from row 0) as a symmetric
    /// remapping: one permutation for rows and columns, which brings a
    /// randomly numbered mesh's neighbours together (the locality that
    /// index-space partitions cannot see).
    ///
    /// # Errors
    /// As [`level_order`](super::level_order).
    pub fn levels<T>(a: &Csr<T>) -> Result<Self> {
        Ok(Self::from_order(super::level_order(a, 0)?))
    }

    /// [`Remapping::levels`] of a square work graph (as many tasks as
    /// gathered elements): the level order of its tasks' tuples, from task
    /// 0, for both sides. What a throttled handle's
    /// [`RemapOrder::Levels`](crate::schedule::RemapOrder::Levels) uses.
    ///
    /// # Errors
    /// The graph is not square; as [`level_order`](super::level_order).
    pub fn levels_of(graph: &WorkGraphOf<'_>) -> Result<Self> {
        if graph.n_tasks() != graph.n_gathered() {
            return Err(Error::invalid(format!(
                "a level remapping renumbers tasks and gathered elements alike: it needs as many tasks as gathered elements, got {} and {}",
                graph.n_tasks(),
                graph.n_gathered()
            )));
        }
        if graph.n_tasks() == 0 {
            return Ok(Self::from_order(Vec::new()));
        }
        let never = std::sync::atomic::AtomicBool::new(false);
        let order = super::levels::order_of(
            graph.n_tasks(),
            graph.n_gathered(),
            graph.ptr(),
            graph.gathered(),
            0,
            &never,
        )?
        .unwrap_or_default();
        Ok(Self::from_order(order))
    }

    /// [`Remapping::levels`], given up (`Ok(None)`) as soon as `cancel` is
    /// set ([`level_order_unless`](super::level_order_unless)).
    ///
    /// # Errors
    /// As [`Remapping::levels`].
    pub fn levels_unless<T>(
        a: &Csr<T>,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<Option<Self>> {
        Ok(super::level_order_unless(a, 0, cancel)?.map(Self::from_order))
    }

    /// One permutation (`order[new] = old`, a permutation by its maker's
    /// contract) for tasks and gathered elements alike.
    fn from_order(order: Vec<u32>) -> Self {
        let inv = invert(&order);
        Remapping {
            task_perm: order.clone(),
            task_inv: inv.clone(),
            gathered_perm: order,
            gathered_inv: inv,
        }
    }

    /// Whether tasks and gathered elements share one permutation
    /// ([`Remapping::symmetric`]).
    pub fn is_symmetric(&self) -> bool {
        self.task_perm == self.gathered_perm
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

    /// Where each fine task of the remapped matrix with every row sorted by
    /// its new column (`apply_csr` then sorting each row, the layout a
    /// library kernel reads) comes from: `out[q]` is the original fine-task
    /// id at position `q`. `ptr` is the original range array (tasks tiling
    /// the fine tasks from 0) and `gathered[k]` the element fine task `k`
    /// gathers (a column). Equal columns keep their original order.
    ///
    /// A single launch over all tasks reads `x` in the order of the new
    /// columns then, one sweep per row; cache-fit schedules instead keep each
    /// partition's share of a row together.
    ///
    /// # Errors
    /// `ptr` or `gathered` does not fit the remapping (lengths, a decreasing
    /// `ptr`, a gathered id out of range), or the order exceeds the memory
    /// limit.
    pub fn sorted_row_sources(&self, ptr: &[u32], gathered: &[u32]) -> Result<Vec<u32>> {
        use rayon::prelude::*;
        let n = self.task_perm.len();
        self.check("range array", n + 1, ptr.len())?;
        let m = gathered.len();
        if ptr[0] != 0 || ptr[n] as usize != m || ptr.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::invalid(format!(
                "remapping: the range array does not tile the {m} gathered ids from 0"
            )));
        }
        if let Some(&g) = gathered
            .par_iter()
            .find_any(|&&g| g as usize >= self.gathered_inv.len())
        {
            return Err(Error::out_of_range(
                "remapping: gathered id",
                g,
                self.gathered_inv.len(),
            ));
        }
        crate::mem::check_elems::<u32>("the remapped rows' sorted order", m)?;
        // New tasks in blocks of about 64K fine tasks, each sorted into its
        // own piece of the output, in order.
        const BLOCK_FINE: usize = 1 << 16;
        let mut blocks = vec![0usize];
        let mut fine = 0usize;
        for (i, &old) in self.task_perm.iter().enumerate() {
            fine += (ptr[old as usize + 1] - ptr[old as usize]) as usize;
            if fine >= BLOCK_FINE {
                blocks.push(i + 1);
                fine = 0;
            }
        }
        if *blocks.last().unwrap_or(&0) != n {
            blocks.push(n);
        }
        let key = |k: u32| (self.gathered_inv[gathered[k as usize] as usize], k);
        Ok(blocks
            .par_windows(2)
            .flat_map_iter(|w| {
                let mut out = Vec::new();
                for &old in &self.task_perm[w[0]..w[1]] {
                    let at = out.len();
                    out.extend(ptr[old as usize]..ptr[old as usize + 1]);
                    out[at..].sort_unstable_by_key(|&k| key(k));
                }
                out
            })
            .collect())
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

//! The cache-fit plan: fine tasks reordered within each task so that every
//! partition's share of a task is one contiguous segment, and the segment
//! list of every partition.

use crate::error::to_u32;
use crate::exec::{Segment, SharedOut, TaskList};
use crate::mem;
use crate::partition::{par, Partition, Remapping, SjTree, WorkGraphOf};
use crate::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;

/// Tuple ids per piece of a partition while a plan is built (pieces are
/// cut at task boundaries, so a task's run in a partition is never split).
const PIECE: usize = 1 << 16;

/// A cache-fit plan: what every throttled schedule launches.
///
/// Built from a CSR-shaped work graph (task `t` owns fine tasks
/// `ptr[t]..ptr[t + 1]`, each gathering one element) and a [`Partition`]
/// of its tuples, it holds:
///
/// - **the fine-task reordering** [`fine_perm`](Self::fine_perm): a
///   permutation of the fine-task ids that keeps every fine task inside its
///   own task's range and orders each task's fine tasks by partition id,
///   stably (a partition's fine tasks of one task keep their original
///   order). Arrays read at the fine-task index (column indices, values)
///   are reordered with [`permute_fine`](Self::permute_fine); the kernel
///   then runs unchanged on them, and each partition's share of a task is
///   one contiguous range of positions. Without it, a partition of a
///   random-column row would be one segment per nonzero.
/// - **the segments** `(task, lo, hi)` of every partition, over the
///   reordered positions, in partition order, tasks ascending within a
///   partition, one segment per task a partition touches; then one empty
///   segment per task without fine tasks (so that its epilogue still runs).
///   For launching, those empty tasks belong to the last partition (see
///   [`launch_segments`](Self::launch_segments)).
/// - **the split tasks**: tasks with fine tasks in more than one partition,
///   whose partial results must be merged deterministically (in partition
///   order, `init` once, then the epilogue) when partitions run as
///   separate launches.
/// - **the SJ-tree** of the partition, whose node `n` covers partitions
///   `leaves` and therefore segments [`segments_of_node`](Self::segments_of_node).
///
/// Reordering fine tasks changes the order in which a task's values are
/// folded: throttling requires a **commutative** (and associative) reduce
/// operator. Integer, boolean and min/max folds give identical results;
/// float sums differ by rounding only.
///
/// ```
/// use warpfit_runtime::partition::{dbwp, Bisection, PartitionOptions, WorkGraph};
/// use warpfit_runtime::schedule::CacheFitPlan;
/// use warpfit_runtime::Csr;
///
/// // Row 0 reads columns 0, 5, 1, 4; row 1 is empty; row 2 reads 5 and 0.
/// let a = Csr::new(3, 6, vec![0, 4, 4, 6], vec![0, 5, 1, 4, 5, 0], vec![1.0f32; 6])?;
/// let graph = WorkGraph::from_csr(&a)?;
/// let opts = PartitionOptions { capacity: 4, bisection: Bisection::KdTiling };
/// let partition = dbwp(&graph, &opts, None)?;
/// let plan = CacheFitPlan::new(&graph, &partition)?;
///
/// // Each task's fine tasks stay in its own range...
/// let perm = plan.fine_perm();
/// assert!(perm[..4].iter().all(|&k| k < 4) && perm[4..].iter().all(|&k| k >= 4));
/// // ...and each partition's share of a task is one segment.
/// for p in 0..plan.len() {
///     let segs = plan.part(p)?;
///     assert!(segs.windows(2).all(|w| w[0].task < w[1].task));
/// }
/// // The kernel's per-fine-task arrays, in plan order.
/// let col = plan.permute_fine(a.col_idx())?;
/// let mut again = col.clone();
/// again.sort();
/// let mut orig = a.col_idx().to_vec();
/// orig.sort();
/// assert_eq!(again, orig);
/// // Row 1 has no fine task: its empty segment comes last.
/// assert_eq!(plan.empty_tasks().len(), 1);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheFitPlan {
    n_tasks: usize,
    /// `fine_perm[position] = original fine-task id`.
    fine_perm: Vec<u32>,
    segments: Vec<Segment>,
    /// Partition `p`'s segments are `segments[part_ptr[p]..part_ptr[p + 1]]`.
    part_ptr: Vec<u32>,
    /// Tasks with fine tasks in more than one partition, ascending.
    split_tasks: Vec<u32>,
    tree: SjTree,
}

/// A piece of one partition's tuple ids: `order[lo..hi]`, whole runs of
/// tasks.
#[derive(Clone, Copy)]
struct Piece {
    part: u32,
    lo: usize,
    hi: usize,
}

/// Every partition cut into pieces of about [`PIECE`] ids, each boundary
/// moved forward to the next task boundary, in partition order.
fn pieces(graph: &WorkGraphOf<'_>, partition: &Partition) -> Vec<Piece> {
    let (order, ptr) = (partition.order(), graph.ptr());
    let mut out = Vec::new();
    for p in 0..partition.len() {
        let (mut lo, end) = (
            partition.part_ptr()[p] as usize,
            partition.part_ptr()[p + 1] as usize,
        );
        while lo < end {
            let mut hi = (lo + PIECE).min(end);
            if hi < end {
                // The task of the last id taken: take the rest of its run.
                let t = graph.task_of(order[hi - 1]) as usize;
                let task_end = ptr[t + 1];
                hi += order[hi..end].partition_point(|&id| id < task_end);
            }
            out.push(Piece {
                part: p as u32,
                lo,
                hi,
            });
            lo = hi;
        }
    }
    out
}

/// Calls `f(task, run)` for every maximal run of one task in ascending
/// tuple ids `ids` (a run is a task's ids in `ids`, consecutive). `None`
/// when the ids do not ascend.
#[inline]
fn task_runs(ptr: &[u32], ids: &[u32], mut f: impl FnMut(usize, &[u32])) -> Option<()> {
    let Some(&first) = ids.first() else {
        return Some(());
    };
    let mut t = ptr.partition_point(|&p| p <= first) - 1;
    let mut i = 0;
    while i < ids.len() {
        if i > 0 && ids[i] <= ids[i - 1] {
            return None;
        }
        t = crate::partition::task_from(ptr, t, ids[i]);
        let end = ptr[t + 1];
        let j = i + ids[i..].partition_point(|&id| id < end);
        // Ascending inside the run (checked at its start against the
        // previous run, inside by this scan).
        if ids[i..j].windows(2).any(|w| w[0] >= w[1]) {
            return None;
        }
        f(t, &ids[i..j]);
        i = j;
    }
    Some(())
}

impl CacheFitPlan {
    /// The plan of `partition` over `graph`.
    ///
    /// # Errors
    /// - `partition` is not a partition of a graph with `graph`'s tuple count;
    /// - the graph's fine-task indices are not its tuple ids (a kernel whose
    ///   ranges do not tile `0..m` in task order, see
    ///   [`WorkGraphOf::fine_index`]): reordering needs CSR-shaped ranges;
    /// - the plan's arrays exceed the memory limit ([`crate::mem`]) or
    ///   `u32` ids.
    pub fn new(graph: &WorkGraphOf<'_>, partition: &Partition) -> Result<Self> {
        let m = graph.n_tuples();
        let n = graph.n_tasks();
        let ptr = graph.ptr();
        if partition.order().len() != m {
            return Err(Error::length(
                "cache-fit plan: partition tuples (= work graph tuples)",
                m,
                partition.order().len(),
            ));
        }
        if let Some(t) = (0..n).find(|&t| graph.fine_lo(t as u32) != ptr[t]) {
            return Err(Error::invalid(format!(
                "cache-fit plan: task {t} starts at fine task {} but at tuple {}: fine-task \
                 reordering needs ranges that tile 0..m in task order (CSR-shaped)",
                graph.fine_lo(t as u32),
                ptr[t]
            )));
        }
        let k = partition.len();
        to_u32("number of partitions", k)?;
        mem::check(
            &format!("the cache-fit plan's fine-task permutation and cursors of {m} tuples"),
            mem::bytes_of::<u32>("work graph tuples", m)?
                .saturating_add(mem::bytes_of::<u32>("tasks", n.saturating_mul(2))?),
        )?;
        let order = partition.order();
        let bad = || {
            Error::invalid(
                "cache-fit plan: a partition's tuple ids do not ascend or overrun their task",
            )
        };

        // Pass 1, every piece of every partition in parallel: its runs of
        // one task, each one segment.
        let pieces = pieces(graph, partition);
        let runs: Vec<u32> = pieces
            .par_iter()
            .map(|pc| {
                let mut count = 0u32;
                task_runs(ptr, &order[pc.lo..pc.hi], |_, _| count += 1).map(|()| count)
            })
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        // Segment offsets: pieces are in partition order, tasks ascending.
        let mut seg_at = Vec::with_capacity(pieces.len());
        let mut part_ptr = vec![0u32; k + 1];
        let mut total = 0u64;
        for (pc, &r) in pieces.iter().zip(&runs) {
            seg_at.push(total as usize);
            total += u64::from(r);
            part_ptr[pc.part as usize + 1] = to_u32("number of segments", total as usize)?;
        }
        for p in 1..=k {
            // Partitions without tuples (empty column blocks) hold no piece.
            part_ptr[p] = part_ptr[p].max(part_ptr[p - 1]);
        }
        let empty: Vec<u32> = (0..n as u32)
            .into_par_iter()
            .filter(|&t| ptr[t as usize] == ptr[t as usize + 1])
            .collect();
        let n_segments = (total as usize).saturating_add(empty.len());
        to_u32("number of segments", n_segments)?;
        let mut segments: Vec<Segment> = par::zeroed("the plan's segments", n_segments)?;

        // Pass 2, partition after partition, the pieces of one in parallel:
        // each run goes to its task's cursor (where the earlier partitions'
        // shares of the task end), and is one segment there. A task has
        // one run per partition, so no two pieces of a round share a
        // cursor.
        let mut fine_perm = par::zeroed_u32("the plan's fine-task permutation", m)?;
        let mut cursor: Vec<u32> = ptr[..n].par_iter().copied().collect();
        let mut split: Vec<u8> = par::zeroed("the plan's split-task marks", n)?;
        {
            let perm_out = SharedOut::new(&mut fine_perm);
            let seg_out = SharedOut::new(&mut segments);
            let cursor = SharedOut::new(&mut cursor);
            let split = SharedOut::new(&mut split);
            let round = |pc: &Piece, at: usize| -> Result<()> {
                let mut at = at;
                let mut fault = false;
                task_runs(ptr, &order[pc.lo..pc.hi], |t, run| {
                    // SAFETY: task `t` has this one run in this partition,
                    // and partitions run one after the other, so only this
                    // closure accesses `cursor[t]` and `split[t]` now; the
                    // positions written lie in task `t`'s own range
                    // (checked), which no other run of this round touches.
                    unsafe {
                        let Ok(lo) = cursor.get(t, "cursor") else {
                            fault = true;
                            return;
                        };
                        let hi = lo as usize + run.len();
                        if hi > ptr[t + 1] as usize {
                            fault = true;
                            return;
                        }
                        for (i, &id) in run.iter().enumerate() {
                            fault |= perm_out.set(lo as usize + i, id, "fine_perm").is_err();
                        }
                        fault |= cursor.set(t, hi as u32, "cursor").is_err();
                        if run.len() < (ptr[t + 1] - ptr[t]) as usize {
                            fault |= split.set(t, 1, "split").is_err();
                        }
                        fault |= seg_out
                            .set(at, Segment::new(t as u32, lo, hi as u32), "segments")
                            .is_err();
                    }
                    at += 1;
                })
                .ok_or_else(bad)?;
                if fault {
                    return Err(bad());
                }
                Ok(())
            };
            let mut first = 0;
            while first < pieces.len() {
                let part = pieces[first].part;
                let last = first + pieces[first..].partition_point(|pc| pc.part == part);
                if last - first == 1 {
                    round(&pieces[first], seg_at[first])?;
                } else {
                    (first..last)
                        .into_par_iter()
                        .try_for_each(|i| round(&pieces[i], seg_at[i]))?;
                }
                first = last;
            }
        }
        drop(cursor);
        for (i, &t) in empty.iter().enumerate() {
            let at = ptr[t as usize];
            segments[total as usize + i] = Segment::new(t, at, at);
        }
        let split_tasks = (0..n as u32)
            .into_par_iter()
            .filter(|&t| split[t as usize] != 0)
            .collect();
        Ok(CacheFitPlan {
            n_tasks: n,
            fine_perm,
            segments,
            part_ptr,
            split_tasks,
            tree: partition.tree().clone(),
        })
    }

    /// Number of coarse tasks.
    pub fn n_tasks(&self) -> usize {
        self.n_tasks
    }
    /// Number of fine tasks (tuples).
    pub fn n_fine(&self) -> usize {
        self.fine_perm.len()
    }
    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.part_ptr.len() - 1
    }
    /// Whether there is no partition (a graph without fine tasks).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `fine_perm()[position] = original fine-task id`: position `i` of a
    /// reordered per-fine-task array holds the original element
    /// `fine_perm()[i]`. Every position of task `t` (in `ptr[t]..ptr[t + 1]`)
    /// maps into the same range.
    pub fn fine_perm(&self) -> &[u32] {
        &self.fine_perm
    }

    /// A per-fine-task array (`col`, `val`: indexed by the fine-task id) in
    /// plan order: `out[i] = src[fine_perm()[i]]`.
    ///
    /// # Errors
    /// `src` does not have one element per fine task, or the copy exceeds
    /// the memory limit.
    pub fn permute_fine<T: Copy + Send + Sync>(&self, src: &[T]) -> Result<Vec<T>> {
        self.check_fine_len(src.len())?;
        mem::check_elems::<T>("a reordered per-fine-task array", src.len())?;
        Ok(self
            .fine_perm
            .par_iter()
            .map(|&old| src[old as usize])
            .collect())
    }

    /// The inverse of [`permute_fine`](Self::permute_fine): an array in plan
    /// order back in the original order (`out[fine_perm()[i]] = src[i]`).
    ///
    /// # Errors
    /// As for [`permute_fine`](Self::permute_fine).
    pub fn unpermute_fine<T: Copy + Send + Sync>(&self, src: &[T]) -> Result<Vec<T>> {
        self.check_fine_len(src.len())?;
        let Some(&first) = src.first() else {
            return Ok(Vec::new());
        };
        let mut out = mem::try_filled("an array restored to fine-task order", src.len(), first)?;
        for (&old, &v) in self.fine_perm.iter().zip(src) {
            out[old as usize] = v;
        }
        Ok(out)
    }

    fn check_fine_len(&self, got: usize) -> Result<()> {
        if got == self.fine_perm.len() {
            Ok(())
        } else {
            Err(Error::length(
                "per-fine-task array (one element per fine task)",
                self.fine_perm.len(),
                got,
            ))
        }
    }

    /// All segments over reordered positions: the partitions' in partition
    /// order, then one empty segment per task without fine tasks.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }
    /// Segment ranges of the partitions (`len() + 1` entries; the empty
    /// tasks' segments follow the last).
    pub fn part_ptr(&self) -> &[u32] {
        &self.part_ptr
    }

    /// Segments of partition `p`: one per task it touches, tasks ascending.
    ///
    /// # Errors
    /// `p >= len()`.
    pub fn part(&self, p: usize) -> Result<&[Segment]> {
        if p >= self.len() {
            return Err(Error::out_of_range(
                "cache-fit plan partition",
                p,
                self.len(),
            ));
        }
        Ok(&self.segments[self.part_ptr[p] as usize..self.part_ptr[p + 1] as usize])
    }

    /// The segments of the tasks that have no fine task.
    pub fn empty_tasks(&self) -> &[Segment] {
        &self.segments[self.part_ptr[self.len()] as usize..]
    }

    /// Tasks whose fine tasks lie in more than one partition, ascending:
    /// separate launches of their partitions need the deterministic merge.
    pub fn split_tasks(&self) -> &[u32] {
        &self.split_tasks
    }

    /// The SJ-tree of the partition the plan was built from.
    pub fn tree(&self) -> &SjTree {
        &self.tree
    }

    /// The partitions below SJ-tree node `node` (a leaf: its own partition).
    ///
    /// # Errors
    /// `node` is not a node id of [`tree`](Self::tree).
    pub fn node_partitions(&self, node: usize) -> Result<Range<usize>> {
        let nodes = self.tree.nodes();
        let n = nodes
            .get(node)
            .ok_or_else(|| Error::out_of_range("SJ-tree node", node, nodes.len()))?;
        let r = n.leaves.start as usize..n.leaves.end as usize;
        if r.start > r.end || r.end > self.len() {
            return Err(Error::invalid(format!(
                "SJ-tree node {node} covers partitions {}..{}, but the plan has {}",
                r.start,
                r.end,
                self.len()
            )));
        }
        Ok(r)
    }

    /// Segments of SJ-tree node `node`: the concatenation of its leaves'
    /// (partitions') segment lists, in partition order. Empty tasks are not
    /// included (see [`launch_segments`](Self::launch_segments)).
    ///
    /// # Errors
    /// `node` is not a node id of [`tree`](Self::tree).
    pub fn segments_of_node(&self, node: usize) -> Result<&[Segment]> {
        let r = self.node_partitions(node)?;
        Ok(&self.segments[self.part_ptr[r.start] as usize..self.part_ptr[r.end] as usize])
    }

    /// What one launch of partitions `parts` runs: their segments in
    /// partition order, plus the empty tasks' segments when `parts` reaches
    /// the last partition (when the plan has no partition, `0..0` is every
    /// empty task). A schedule whose launches cover `0..len()` thus runs
    /// every task.
    ///
    /// # Errors
    /// `parts` is reversed or reaches past `len()`.
    pub fn launch_segments(&self, parts: Range<usize>) -> Result<&[Segment]> {
        Ok(&self.segments[self.launch_range(parts)?])
    }

    /// The index range into [`segments`](Self::segments) of
    /// [`launch_segments`](Self::launch_segments)`(parts)`: where one
    /// launch's segments start and end in an uploaded segment list.
    ///
    /// # Errors
    /// `parts` is reversed or reaches past `len()`.
    pub fn launch_range(&self, parts: Range<usize>) -> Result<Range<usize>> {
        if parts.start > parts.end || parts.end > self.len() {
            return Err(Error::invalid(format!(
                "launch of partitions {}..{}: the plan has {} partitions",
                parts.start,
                parts.end,
                self.len()
            )));
        }
        let lo = self.part_ptr[parts.start] as usize;
        let hi = if parts.end == self.len() {
            self.segments.len()
        } else {
            self.part_ptr[parts.end] as usize
        };
        Ok(lo..hi)
    }

    /// The launches of CF: one per partition, in partition order (one
    /// launch `0..0` of the empty tasks when there is no partition).
    pub fn cf_launches(&self) -> Vec<Range<usize>> {
        if self.is_empty() {
            return std::iter::once(0..0).collect();
        }
        (0..self.len()).map(|p| p..p + 1).collect()
    }

    /// The one launch of `org_r` and CF-Q: every partition (`0..len()`).
    pub fn single_launch(&self) -> Vec<Range<usize>> {
        std::iter::once(0..self.len()).collect()
    }

    /// The launches of SJ for the chosen SJ-tree nodes (as
    /// [`recombine`](super::recombine) returns them): one per node, its
    /// partitions. A plan without partitions has an SJ-tree without nodes;
    /// its empty cover gives the one launch `0..0` of the empty tasks.
    ///
    /// # Errors
    /// A node id out of range, or nodes that do not cover the partitions
    /// exactly once, in partition order.
    pub fn node_launches(&self, nodes: &[u32]) -> Result<Vec<Range<usize>>> {
        if self.is_empty() && nodes.is_empty() {
            // The empty cover of an empty tree: the empty tasks still run.
            return Ok(self.cf_launches());
        }
        let launches = nodes
            .iter()
            .map(|&n| self.node_partitions(n as usize))
            .collect::<Result<Vec<_>>>()?;
        self.check_launches(&launches)?;
        Ok(launches)
    }

    /// Checks that `launches` cover the partitions exactly once, in order:
    /// each starts where the previous ended, the first at 0, the last at
    /// `len()`, none empty (but the single `0..0` of a plan without
    /// partitions).
    ///
    /// # Errors
    /// The first launch that breaks this, named.
    pub fn check_launches(&self, launches: &[Range<usize>]) -> Result<()> {
        let k = self.len();
        if k == 0 {
            if launches.len() == 1 && launches[0] == (0..0) {
                return Ok(());
            }
            return Err(Error::invalid(
                "a plan without partitions has exactly one launch, 0..0",
            ));
        }
        let mut at = 0;
        for (i, r) in launches.iter().enumerate() {
            if r.start != at || r.end <= r.start || r.end > k {
                return Err(Error::invalid(format!(
                    "launch {i} covers partitions {}..{}; launches must cover 0..{k} in order, \
                     each starting where the previous ended (at {at}) and non-empty",
                    r.start, r.end
                )));
            }
            at = r.end;
        }
        if at != k {
            return Err(Error::invalid(format!(
                "launches cover partitions 0..{at} of 0..{k}"
            )));
        }
        Ok(())
    }

    /// The same plan for the matrix remapped by `remapping` (Algorithm 5,
    /// built from the same graph and partition): for the work graph of
    /// `remapping.apply_csr(a)`, whose row `i` is the original row
    /// `task_perm()[i]` with its entries in their stored order. Segments
    /// name the new task ids and positions, sorted by new task within each
    /// partition (each partition's rows are then mostly consecutive), and
    /// [`fine_perm`](Self::fine_perm) maps to the remapped matrix's fine
    /// tasks: permute the remapped matrix's per-fine-task arrays with it.
    /// Gathered vectors go in through [`Remapping::gathered_to_new`], task
    /// vectors come back through [`Remapping::tasks_to_old`].
    ///
    /// # Errors
    /// `graph` is not the graph the plan was built from (task or fine-task
    /// counts differ) or `remapping` does not fit it; the new arrays exceed
    /// the memory limit.
    pub fn remapped(&self, graph: &WorkGraphOf<'_>, remapping: &Remapping) -> Result<Self> {
        let (n, m) = (self.n_tasks, self.n_fine());
        if graph.n_tasks() != n || graph.n_tuples() != m {
            return Err(Error::invalid(format!(
                "remapped plan: the graph has {} tasks and {} fine tasks, the plan {n} and {m}",
                graph.n_tasks(),
                graph.n_tuples()
            )));
        }
        let (perm, inv) = (remapping.task_perm(), remapping.task_inv());
        if perm.len() != n || inv.len() != n {
            return Err(Error::length(
                "remapped plan: task permutation",
                n,
                perm.len(),
            ));
        }
        let ptr = graph.ptr();
        mem::check(
            "the remapped plan",
            mem::bytes_of::<u32>("fine tasks", m)?
                .saturating_add(mem::bytes_of::<Segment>("segments", self.segments.len())?)
                .saturating_add(mem::bytes_of::<u32>("tasks", n.saturating_mul(2))?),
        )?;
        let mut new_ptr = Vec::with_capacity(n + 1);
        new_ptr.push(0u32);
        for &old in perm {
            let old = old as usize;
            if old >= n {
                return Err(Error::out_of_range(
                    "remapped plan: task permutation",
                    old,
                    n,
                ));
            }
            let last = new_ptr[new_ptr.len() - 1];
            new_ptr.push(last + (ptr[old + 1] - ptr[old]));
        }
        let new_task = |t: u32| inv.get(t as usize).copied();
        // Position `ptr[old] + j` of the plan becomes `new_ptr[new] + j`.
        let shift = |t: u32, at: u32| -> Option<(u32, u32)> {
            let nt = new_task(t)?;
            let j = at.checked_sub(*ptr.get(t as usize)?)?;
            Some((nt, new_ptr.get(nt as usize)? + j))
        };
        let bad = || Error::invalid("remapped plan: the remapping does not fit the plan's tasks");
        let mut fine_perm = vec![0u32; m];
        for (i, &old) in perm.iter().enumerate() {
            let (a, b) = (ptr[old as usize] as usize, ptr[old as usize + 1] as usize);
            let base = new_ptr[i] as usize;
            for (j, &orig) in self.fine_perm[a..b].iter().enumerate() {
                let within = orig
                    .checked_sub(ptr[old as usize])
                    .filter(|&d| d < ptr[old as usize + 1] - ptr[old as usize])
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "remapped plan: fine task {orig} lies outside task {old}: \
                             the graph is not the plan's"
                        ))
                    })?;
                fine_perm[base + j] = new_ptr[i] + within;
            }
        }
        let map_seg = |s: &Segment| -> Result<Segment> {
            let (t, lo) = shift(s.task, s.lo).ok_or_else(bad)?;
            Ok(Segment::new(t, lo, lo + s.len()))
        };
        let mut segments = self
            .segments
            .iter()
            .map(map_seg)
            .collect::<Result<Vec<_>>>()?;
        let k = self.len();
        for p in 0..k {
            segments[self.part_ptr[p] as usize..self.part_ptr[p + 1] as usize]
                .sort_unstable_by_key(|s| s.task);
        }
        segments[self.part_ptr[k] as usize..].sort_unstable_by_key(|s| s.task);
        let mut split_tasks = self
            .split_tasks
            .iter()
            .map(|&t| new_task(t).ok_or_else(bad))
            .collect::<Result<Vec<_>>>()?;
        split_tasks.sort_unstable();
        Ok(CacheFitPlan {
            n_tasks: n,
            fine_perm,
            segments,
            part_ptr: self.part_ptr.clone(),
            split_tasks,
            tree: self.tree.clone(),
        })
    }

    /// The whole plan as one [`TaskList`] in partition order: the list
    /// `org_r` and a CPU CF-Q launch run, split tasks merged in list order.
    ///
    /// # Errors
    /// As [`TaskList::new`].
    pub fn task_list(&self) -> Result<TaskList> {
        mem::check_elems::<Segment>("the plan's task list", self.segments.len())?;
        TaskList::new(self.segments.clone())
    }
}

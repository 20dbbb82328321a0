//! Data-balanced work partition (Algorithm 1) and the SJ-tree it records.

use super::scratch::count_distinct;
use super::work_graph::WorkGraphOf;
use super::{bisect, kd, par, Bisection, PartitionOptions};
use crate::error::to_u32;
use crate::mem;
use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Subsets smaller than this recurse on the current thread: below it a rayon
/// job costs more than the work it would move to another core.
const PARALLEL_GRAIN: usize = 1 << 14;

/// Unique vertices of a tuple subset, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unique {
    /// Distinct tasks (output elements).
    pub tasks: u32,
    /// Distinct gathered elements.
    pub gathered: u32,
}

impl Unique {
    /// Total unique vertices, the quantity the capacity bounds.
    pub fn total(&self) -> u32 {
        self.tasks + self.gathered
    }
}

/// One node of the SJ-tree: a tuple subset that DBWP considered.
///
/// The tuples of every node are `Partition::order()[lo..hi]` (a subtree's
/// nodes nest inside their parent's range, left child first), in increasing
/// tuple id. Leaves are the cache-fit partitions; `leaves` are the ids of the
/// partitions below a node, a contiguous range because partitions are numbered
/// left to right. This is what SJ scheduling needs: per node its edge count,
/// unique vertices, children and leaf partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SjNode {
    /// Range into [`Partition::order`].
    pub lo: u32,
    /// End of the range (exclusive).
    pub hi: u32,
    /// Unique vertices of the node's tuples.
    pub unique: Unique,
    /// Left and right child node ids, or `None` for a leaf.
    pub children: Option<[u32; 2]>,
    /// Partition ids of the leaves below (a leaf: just its own id).
    pub leaves: std::ops::Range<u32>,
    /// Distance from the root.
    pub depth: u32,
}

impl SjNode {
    /// Number of tuples (edges) of the node.
    pub fn edges(&self) -> u32 {
        self.hi - self.lo
    }
    /// Whether the node is a cache-fit partition.
    pub fn is_leaf(&self) -> bool {
        self.children.is_none()
    }
}

/// The binary tree of DBWP bisections, nodes in preorder (root first, then
/// the left subtree, then the right one).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SjTree {
    nodes: Vec<SjNode>,
    /// Node id of every partition, in partition order.
    leaves: Vec<u32>,
}

impl SjTree {
    /// All nodes in preorder; node 0 is the root (absent for an empty graph).
    pub fn nodes(&self) -> &[SjNode] {
        &self.nodes
    }
    /// The root, if the graph has tuples.
    pub fn root(&self) -> Option<&SjNode> {
        self.nodes.first()
    }
    /// Node id of partition `p`.
    pub fn leaf_node(&self, p: usize) -> u32 {
        self.leaves[p]
    }
    /// Node ids of all partitions, in partition order.
    pub fn leaf_nodes(&self) -> &[u32] {
        &self.leaves
    }
    /// Number of levels (1 for a single partition, 0 when empty).
    pub fn depth(&self) -> u32 {
        self.nodes.iter().map(|n| n.depth + 1).max().unwrap_or(0)
    }
}

/// The result of DBWP: cache-fit partitions of the tuples and their SJ-tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    order: Vec<u32>,
    part_ptr: Vec<u32>,
    tree: SjTree,
    capacity: u32,
    seconds: f64,
}

impl Partition {
    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.part_ptr.len() - 1
    }
    /// Whether there is no partition (a graph without tuples).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// All tuple ids, grouped by partition in partition order; within a
    /// partition in increasing id (CSR order).
    pub fn order(&self) -> &[u32] {
        &self.order
    }
    /// Partition `p`'s tuples are `order()[part_ptr()[p]..part_ptr()[p + 1]]`.
    pub fn part_ptr(&self) -> &[u32] {
        &self.part_ptr
    }
    /// Tuple ids of partition `p`, ascending.
    pub fn part(&self, p: usize) -> &[u32] {
        &self.order[self.part_ptr[p] as usize..self.part_ptr[p + 1] as usize]
    }
    /// Unique vertices of partition `p`.
    pub fn unique(&self, p: usize) -> Unique {
        self.tree.nodes[self.tree.leaves[p] as usize].unique
    }
    /// The SJ-tree of the bisections.
    pub fn tree(&self) -> &SjTree {
        &self.tree
    }
    /// The capacity T every partition respects.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }
    /// A partition from its parts (another partitioner than DBWP's
    /// bisections): `order` grouped by `part_ptr`, the tree's leaves in
    /// partition order.
    pub(crate) fn from_parts(
        order: Vec<u32>,
        part_ptr: Vec<u32>,
        tree: SjTree,
        capacity: u32,
        seconds: f64,
    ) -> Self {
        Partition {
            order,
            part_ptr,
            tree,
            capacity,
            seconds,
        }
    }
    /// The tuple order and its partition pointers, the partition consumed.
    pub(crate) fn into_order(self) -> (Vec<u32>, Vec<u32>) {
        (self.order, self.part_ptr)
    }
    /// Wall-clock seconds the partitioning took.
    pub fn seconds(&self) -> f64 {
        self.seconds
    }
    /// The partition id of every tuple, indexed by tuple id (CSR order),
    /// written by the partitions in parallel.
    pub fn assignments(&self) -> Vec<u32> {
        use rayon::prelude::*;
        let mut a = vec![0u32; self.order.len()];
        let out = crate::exec::SharedOut::new(&mut a);
        (0..self.len()).into_par_iter().for_each(|p| {
            for &id in self.part(p) {
                // SAFETY: a partition is an exact cover of the tuple ids
                // `0..order.len()`: every index is written by exactly one
                // partition. `set` checks the bound, so an id out of range
                // (a broken invariant) is skipped rather than written.
                let _ = unsafe { out.set(id as usize, p as u32, "assignments") };
            }
        });
        a
    }
}

/// Distinct tasks among ascending tuple ids: a task changes only at a range
/// boundary, found by galloping forward from the previous task.
pub(crate) fn count_tasks(g: &WorkGraphOf<'_>, ids: &[u32]) -> u32 {
    let ptr = g.ptr();
    let (mut count, mut end, mut t) = (0u32, 0u32, 0usize);
    for &id in ids {
        if id >= end {
            t = task_from(ptr, t, id);
            end = ptr[t + 1];
            count += 1;
        }
    }
    count
}

/// The task owning tuple `id`, searched forward from task `t` (`ptr[t] <=
/// id`) by exponential search: over ascending ids this costs O(1) amortized
/// per task, where a binary search over all tasks misses the cache at every
/// step on a large graph.
#[inline]
pub(crate) fn task_from(ptr: &[u32], t: usize, id: u32) -> usize {
    debug_assert!(ptr[t] <= id);
    let mut step = 1;
    while t + step < ptr.len() && ptr[t + step] <= id {
        step *= 2;
    }
    let lo = t + step / 2;
    let hi = (t + step).min(ptr.len());
    lo + ptr[lo..hi].partition_point(|&p| p <= id) - 1
}

/// Distinct gathered elements among tuple ids.
pub(crate) fn count_gathered(g: &WorkGraphOf<'_>, ids: &[u32]) -> u32 {
    let gathered = g.gathered();
    count_distinct(g.n_gathered(), ids, |id| gathered[id as usize])
}

/// Unique vertices of a subset of ascending tuple ids (by one parallel
/// pass when the subset is large: the same counts).
pub(crate) fn unique_of(g: &WorkGraphOf<'_>, ids: &[u32]) -> Unique {
    counted(g, ids, false).0
}

/// [`unique_of`], with the subset's [`par::Tally`] for a gathered cut when
/// `tally` asks for it and the parallel pass counted the subset.
pub(crate) fn counted(
    g: &WorkGraphOf<'_>,
    ids: &[u32],
    tally: bool,
) -> (Unique, Option<par::Tally>) {
    if par::worth(ids.len()) {
        return par::count_unique(g, ids, tally);
    }
    let u = Unique {
        tasks: count_tasks(g, ids),
        gathered: count_gathered(g, ids),
    };
    (u, None)
}

/// Stable partition of `ids` by `left`, keeping each side's order; returns the
/// left side's length. `scratch` holds the right side meanwhile (`>= ids.len()`).
pub(crate) fn stable_partition(
    ids: &mut [u32],
    scratch: &mut [u32],
    mut left: impl FnMut(u32) -> bool,
) -> usize {
    let (mut w, mut r) = (0, 0);
    for i in 0..ids.len() {
        let id = ids[i];
        if left(id) {
            ids[w] = id;
            w += 1;
        } else {
            scratch[r] = id;
            r += 1;
        }
    }
    ids[w..].copy_from_slice(&scratch[..r]);
    w
}

struct Run<'a> {
    g: &'a WorkGraphOf<'a>,
    capacity: u32,
    opts: &'a PartitionOptions,
    done: AtomicU64,
    progress: Option<&'a (dyn Fn(u64) + Sync)>,
}

/// A node before the leaves are numbered: children are preorder offsets
/// relative to the node itself.
pub(crate) struct Pending {
    lo: u32,
    hi: u32,
    unique: Unique,
    right_offset: u32,
    depth: u32,
}

impl Pending {
    /// A leaf over `order[lo..hi]`.
    pub(crate) fn leaf(lo: u32, hi: u32, unique: Unique, depth: u32) -> Self {
        Pending {
            lo,
            hi,
            unique,
            right_offset: 0,
            depth,
        }
    }
    /// An inner node whose right child is `right_offset` nodes after it in
    /// preorder (its left child right after it).
    pub(crate) fn inner(lo: u32, hi: u32, unique: Unique, right_offset: u32, depth: u32) -> Self {
        Pending {
            lo,
            hi,
            unique,
            right_offset,
            depth,
        }
    }
}

impl Run<'_> {
    /// Algorithm 1 on `ids` (ascending), placed at `base` in the final order.
    /// Returns the subtree in preorder.
    ///
    /// `ids` and `scratch` are the same range of the order and the K-D
    /// scratch array, in either role: a parallel gathered cut writes its
    /// halves into `scratch`, which then holds the tuples (`flipped` says
    /// `ids` lies in the scratch array), and a leaf in the scratch array
    /// copies itself into the order. `tally`, when given, is what counting
    /// the subset left for its gathered cut; `pre`, a cut made (and its
    /// halves counted) before the subset was known not to fit.
    #[allow(clippy::too_many_arguments)]
    fn dbwp(
        &self,
        ids: &mut [u32],
        scratch: &mut [u32],
        flipped: bool,
        base: u32,
        depth: u32,
        unique: Unique,
        tally: Option<par::Tally>,
        pre: Option<PreCut>,
    ) -> Vec<Pending> {
        let n = ids.len();
        let hi = base + n as u32;
        if unique.total() <= self.capacity || n < 2 {
            if flipped {
                par::copy(&mut scratch[..n], ids);
            }
            let done = self.done.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
            if let Some(report) = self.progress {
                report(done);
            }
            return vec![Pending {
                lo: base,
                hi,
                unique,
                right_offset: 0,
                depth,
            }];
        }
        let (cut, halves) = match pre {
            Some(PreCut { left, halves }) => (
                kd::Cut {
                    left,
                    halves: None,
                    moved: false,
                },
                Some(halves),
            ),
            None => match self.opts.bisection {
                Bisection::KdTiling => {
                    let cut = kd::split(self.g, ids, scratch, depth, tally.as_ref());
                    let halves = cut.halves.map(|[l, r]| [(l, None), (r, None)]);
                    (cut, halves)
                }
                Bisection::Coarsened(ref c) => (
                    kd::Cut {
                        left: bisect::split(self.g, ids, depth, c),
                        halves: None,
                        moved: false,
                    },
                    None,
                ),
            },
        };
        drop(tally);
        let (flipped, ids, scratch) = if cut.moved {
            (!flipped, &mut scratch[..n], ids)
        } else {
            (flipped, ids, scratch)
        };
        let cut = cut.left;
        let [lh, rh] = match halves {
            Some([l, r]) => [Some(l), Some(r)],
            None => [None, None],
        };
        debug_assert!(cut > 0 && cut < n);
        let (li, ri) = ids.split_at_mut(cut);
        // Coarsened bisection has no shared scratch (empty): it allocates its
        // partition buffer once its hierarchy is freed.
        let (ls, rs) = scratch.split_at_mut(cut.min(scratch.len()));
        // K-D tiling cuts odd depths along the gathered index: a child at
        // an odd depth keeps its tally for its own cut.
        let keep = matches!(self.opts.bisection, Bisection::KdTiling) && (depth + 1) % 2 == 1;
        let go = |ids: &mut [u32],
                  scratch: &mut [u32],
                  at: u32,
                  known: Option<(Unique, Option<par::Tally>)>| {
            let (u, tally) = known.unwrap_or_else(|| counted(self.g, ids, keep));
            self.dbwp(ids, scratch, flipped, at, depth + 1, u, tally, None)
        };
        let go_left = |li: &mut [u32], ls: &mut [u32]| go(li, ls, base, lh);
        let go_right = |ri: &mut [u32], rs: &mut [u32]| go(ri, rs, base + cut as u32, rh);
        let (mut left, right) = if n >= PARALLEL_GRAIN {
            rayon::join(|| go_left(li, ls), || go_right(ri, rs))
        } else {
            (go_left(li, ls), go_right(ri, rs))
        };
        let mut out = Vec::with_capacity(1 + left.len() + right.len());
        out.push(Pending {
            lo: base,
            hi,
            unique,
            right_offset: 1 + left.len() as u32,
            depth,
        });
        out.append(&mut left);
        out.extend(right);
        out
    }
}

/// A cut made before its subset was known not to fit: the left half's
/// length and both halves' counts, with their tallies.
pub(crate) struct PreCut {
    left: usize,
    halves: [(Unique, Option<par::Tally>); 2],
}

/// The root's unique vertices under K-D tiling. A large root is counted
/// through its task cut (which moves nothing): both halves are counted
/// with their tallies, and the root's counts follow from theirs (its tasks
/// are theirs, less a task the cut splits; its gathered elements the
/// union of theirs). Should the root not fit, the halves' counts are the
/// ones its cut needs, so the root costs no pass of its own.
fn root_counts(g: &WorkGraphOf<'_>, ids: &[u32]) -> (Unique, Option<PreCut>) {
    let n = ids.len();
    let left = if n >= 2 { kd::split_tasks(g, ids) } else { 0 };
    if !(par::worth(left) && par::worth(n - left)) {
        return (unique_of(g, ids), None);
    }
    let (l, r) = ids.split_at(left);
    let ((lu, lt), (ru, rt)) = (par::count_unique(g, l, true), par::count_unique(g, r, true));
    let (Some(lt), Some(rt)) = (lt, rt) else {
        return (unique_of(g, ids), None);
    };
    let shared = g.task_of(l[left - 1]) == g.task_of(r[0]);
    let unique = Unique {
        tasks: lu.tasks + ru.tasks - u32::from(shared),
        gathered: lt.marks.union_count(&rt.marks),
    };
    let pre = PreCut {
        left,
        halves: [(lu, Some(lt)), (ru, Some(rt))],
    };
    (unique, Some(pre))
}

/// Runs DBWP (Algorithm 1) on `graph`: bisects every tuple subset whose unique
/// vertices (tasks + gathered elements) exceed `opts.capacity`, until none
/// does, with the bisection method of `opts`. `progress`, when given, is
/// called with the number of tuples placed in final partitions so far.
///
/// Subsets always split into two non-empty halves, so the recursion ends;
/// a capacity below 2 is rejected, since a single tuple has two vertices.
pub fn dbwp(
    graph: &WorkGraphOf<'_>,
    opts: &PartitionOptions,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<Partition> {
    let start = Instant::now();
    if opts.capacity < 2 {
        return Err(Error::invalid(format!(
            "partition capacity must be at least 2 unique vertices (one tuple touches a task and a gathered element), got {}",
            opts.capacity
        )));
    }
    opts.bisection.validate()?;
    let n = graph.n_tuples();
    to_u32("work graph tuples", n)?;
    // The tuple order, the K-D scratch and the assignments are 4 bytes per
    // tuple each: refuse before allocating when they cannot fit.
    mem::check(
        &format!("the partitioner's arrays for {n} tuples"),
        mem::bytes_of::<u32>("work graph tuples", n)?.saturating_mul(3),
    )?;
    let mut order = par::iota("the partitioner's tuple order", n as u32)?;
    // Only K-D tiling uses a scratch array as long as the input: coarsened
    // bisection would leave it resident (half of it after the first split)
    // while its hierarchies peak.
    let mut scratch = match opts.bisection {
        Bisection::KdTiling => par::zeroed_u32("K-D tiling's scratch array", n)?,
        Bisection::Coarsened(_) => Vec::new(),
    };
    let run = Run {
        g: graph,
        capacity: opts.capacity,
        opts,
        done: AtomicU64::new(0),
        progress,
    };
    // The recursion runs on rayon's threads from the root on: the per-thread
    // scratch maps (one u32 per gathered element) then exist on the pool's
    // threads only, not on the caller's as well.
    let pending = if n == 0 {
        Vec::new()
    } else {
        rayon::scope(|_| {
            let (unique, pre) = match opts.bisection {
                Bisection::KdTiling => root_counts(graph, &order),
                Bisection::Coarsened(_) => (unique_of(graph, &order), None),
            };
            run.dbwp(&mut order, &mut scratch, false, 0, 0, unique, None, pre)
        })
    };
    drop(scratch);
    let tree = number_tree(pending);
    let mut part_ptr = Vec::with_capacity(tree.leaves.len() + 1);
    part_ptr.push(0);
    part_ptr.extend(tree.leaves.iter().map(|&l| tree.nodes[l as usize].hi));
    Ok(Partition {
        order,
        part_ptr,
        tree,
        capacity: opts.capacity,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Turns the preorder subtree into absolute child ids and numbers the leaves
/// left to right.
pub(crate) fn number_tree(pending: Vec<Pending>) -> SjTree {
    let mut nodes: Vec<SjNode> = Vec::with_capacity(pending.len());
    let mut leaves = Vec::new();
    for (i, p) in pending.iter().enumerate() {
        let i = i as u32;
        let children = (p.right_offset != 0).then(|| [i + 1, i + p.right_offset]);
        let leaf_range = if children.is_none() {
            let id = leaves.len() as u32;
            leaves.push(i);
            id..id + 1
        } else {
            0..0
        };
        nodes.push(SjNode {
            lo: p.lo,
            hi: p.hi,
            unique: p.unique,
            children,
            leaves: leaf_range,
            depth: p.depth,
        });
    }
    // Children follow their parent in preorder: fill ranges bottom-up.
    for i in (0..nodes.len()).rev() {
        if let Some([l, r]) = nodes[i].children {
            let start = nodes[l as usize].leaves.start;
            let end = nodes[r as usize].leaves.end;
            nodes[i].leaves = start..end;
        }
    }
    SjTree { nodes, leaves }
}

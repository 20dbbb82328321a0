//! Column blocks: the gathered elements cut into `K` ranges of equal width,
//! each tuple in the block of its gathered element.
//!
//! DBWP bounds every partition's unique vertices, tasks included, which
//! suits kernels whose task outputs are reused within a partition. A
//! kernel that streams its tasks (SpMV: each row's output is written once
//! per partition, its nonzeros read once) reuses only the gathered array:
//! what must fit the cache is a partition's share of `x`, and every extra
//! partition costs each task it touches another output write (or partial).
//! Column blocks are the fewest partitions whose gathered share fits: `K =
//! ceil(n_gathered / capacity)`. On the GPU they are what makes throttling
//! pay on matrices whose gathered vector exceeds L2 (`BENCHMARKS.md`,
//! "Column blocks").

use super::dbwp::{number_tree, Partition, Pending, Unique};
use super::par;
use super::work_graph::WorkGraphOf;
use crate::error::to_u32;
use crate::mem;
use crate::{Error, Result};
use rayon::prelude::*;
use std::time::Instant;

/// The number of column blocks of `n_gathered` elements when a block may
/// hold `capacity` of them: at least 1.
pub fn column_block_count(n_gathered: usize, capacity: u32) -> Result<usize> {
    if capacity == 0 {
        return Err(Error::invalid(
            "column blocks need a capacity of at least 1 gathered element",
        ));
    }
    Ok(n_gathered.div_ceil(capacity as usize).max(1))
}

/// Tasks cut into ranges of about equal tuple counts, `pieces` of them at
/// most (fewer when tasks are few or long): whole tasks per range, so that
/// a pass over one range sees every tuple of its tasks.
pub(crate) fn task_ranges(ptr: &[u32], pieces: usize) -> Vec<std::ops::Range<usize>> {
    let n = ptr.len().saturating_sub(1);
    let m = u64::from(ptr.last().copied().unwrap_or(0));
    let pieces = pieces.clamp(1, n.max(1));
    let mut bounds = vec![0usize];
    for b in 1..pieces {
        let target = (m * b as u64 / pieces as u64) as u32;
        let t = ptr.partition_point(|&p| p < target).min(n);
        if t > bounds[bounds.len() - 1] {
            bounds.push(t);
        }
    }
    if bounds[bounds.len() - 1] < n || n == 0 {
        bounds.push(n);
    }
    bounds.windows(2).map(|w| w[0]..w[1]).collect()
}

/// Division of u32s by one divisor, as a multiplication: with `c =
/// ceil(2^64 / d)`, `n / d` is the high 64 bits of `c * n` for every u32
/// `n` (Lemire, Kaser and Kurz, *Faster remainder by direct computation*,
/// 2019). A hardware division per tuple costs more than the rest of a
/// counting pass's work on it.
#[derive(Clone, Copy)]
struct Divider {
    /// `ceil(2^64 / d)`, or 0 for `d = 1`.
    c: u64,
}

impl Divider {
    fn new(d: u32) -> Self {
        Divider {
            c: if d <= 1 {
                0
            } else {
                u64::MAX / u64::from(d) + 1
            },
        }
    }

    #[inline]
    fn div(self, n: u32) -> u32 {
        if self.c == 0 {
            n
        } else {
            ((u128::from(self.c) * u128::from(n)) >> 64) as u32
        }
    }
}

/// The balanced tree over `k` blocks in preorder: per node its blocks and
/// depth, the offset of its right child (0 for a leaf) and its parent.
struct Shape {
    blocks: Vec<std::ops::Range<usize>>,
    depth: Vec<u32>,
    right_offset: Vec<u32>,
    parent: Vec<u32>,
    /// Node id of every block's leaf.
    leaf: Vec<u32>,
}

impl Shape {
    fn new(k: usize) -> Self {
        let mut s = Shape {
            blocks: Vec::with_capacity(2 * k),
            depth: Vec::with_capacity(2 * k),
            right_offset: Vec::with_capacity(2 * k),
            parent: Vec::with_capacity(2 * k),
            leaf: vec![0; k],
        };
        // Preorder by an explicit stack: (blocks, depth, parent); the right
        // child's offset is set when it is reached.
        let mut stack = vec![(0..k, 0u32, u32::MAX)];
        while let Some((blocks, depth, parent)) = stack.pop() {
            let id = s.blocks.len() as u32;
            if parent != u32::MAX && s.blocks[parent as usize].start != blocks.start {
                s.right_offset[parent as usize] = id - parent;
            }
            s.blocks.push(blocks.clone());
            s.depth.push(depth);
            s.right_offset.push(0);
            s.parent.push(parent);
            if blocks.len() <= 1 {
                s.leaf[blocks.start] = id;
            } else {
                let mid = (blocks.start + blocks.end) / 2;
                stack.push((mid..blocks.end, depth + 1, id));
                stack.push((blocks.start..mid, depth + 1, id));
            }
        }
        s
    }
}

/// Partitions `graph`'s tuples into column blocks of at most `capacity`
/// gathered elements each (equal widths; see the module docs), with a
/// balanced SJ-tree over the blocks: node `[a, b)` of blocks splits at
/// `(a + b) / 2`, so every node is itself a range of columns.
///
/// Two parallel passes over the tuples, over ranges of whole tasks: the
/// first counts every range's tuples per block, the distinct tasks of
/// every tree node and marks the gathered elements read; the second writes
/// the tuple ids at their blocks' cursors (a stable counting sort). A
/// node's distinct gathered elements are the marked ones in its columns.
///
/// # Errors
/// A capacity of 0, more blocks or tuples than `u32` ids, or arrays beyond
/// the memory limit.
pub fn column_blocks(graph: &WorkGraphOf<'_>, capacity: u32) -> Result<Partition> {
    let start = Instant::now();
    let n_gathered = graph.n_gathered();
    let m = graph.n_tuples();
    to_u32("work graph tuples", m)?;
    let k = column_block_count(n_gathered, capacity)?;
    to_u32("number of column blocks", k)?;
    let width = n_gathered.div_ceil(k).max(1);
    if m == 0 {
        // No tuple: no partition, an empty tree.
        return Ok(Partition::from_parts(
            Vec::new(),
            vec![0],
            number_tree(Vec::new()),
            to_u32("column block width", width)?,
            start.elapsed().as_secs_f64(),
        ));
    }
    let ptr = graph.ptr();
    let gathered = graph.gathered();
    let div = Divider::new(width as u32);
    let block = |id: usize| (div.div(gathered[id]) as usize).min(k - 1);
    let shape = Shape::new(k);
    let nodes = shape.blocks.len();
    // Ranges of whole tasks, a few per thread, fewer when the per-range
    // counters (3 per node) would outweigh the tuples.
    let pieces = (rayon::current_num_threads() * 4).min((m / (3 * nodes)).max(1));
    let ranges = task_ranges(ptr, pieces);
    mem::check_elems::<u32>(
        "the column blocks' per-range counters",
        ranges.len().saturating_mul(3 * nodes),
    )?;
    let marking = par::Marking::new(n_gathered);

    // Pass 1: per range, tuples per block and distinct tasks per node (a
    // task is counted at a node when one of its tuples is the first to
    // reach it from a leaf below; its ancestors were reached then too).
    let counted: Vec<(Vec<u32>, Vec<u32>)> = ranges
        .par_iter()
        .map(|r| {
            let mut per_block = vec![0u32; k];
            let mut tasks = vec![0u32; nodes];
            let mut seen = vec![u32::MAX; nodes];
            marking.with(|bits| {
                let end = ptr[r.end] as usize;
                for t in r.clone() {
                    for id in ptr[t] as usize..ptr[t + 1] as usize {
                        if id + par::AHEAD < end {
                            bits.prefetch(gathered[id + par::AHEAD] as usize);
                        }
                        let v = gathered[id] as usize;
                        let b = (div.div(v as u32) as usize).min(k - 1);
                        per_block[b] += 1;
                        let mut node = shape.leaf[b];
                        while node != u32::MAX && seen[node as usize] != t as u32 {
                            seen[node as usize] = t as u32;
                            tasks[node as usize] += 1;
                            node = shape.parent[node as usize];
                        }
                        bits.mark(v);
                    }
                }
            });
            (per_block, tasks)
        })
        .collect();

    // Block offsets and every range's cursors.
    let mut part_ptr = Vec::with_capacity(k + 1);
    let mut cursors = vec![vec![0u32; k]; ranges.len()];
    let mut total = 0u32;
    for b in 0..k {
        part_ptr.push(total);
        for (c, (per_block, _)) in counted.iter().enumerate() {
            cursors[c][b] = total;
            total += per_block[b];
        }
    }
    part_ptr.push(total);

    // Pass 2: the stable counting sort, every range at its cursors.
    let mut order = par::zeroed_u32("the column blocks' tuple order", m)?;
    {
        let out = crate::exec::SharedOut::new(&mut order);
        ranges
            .par_iter()
            .zip(cursors.par_iter_mut())
            .try_for_each(|(r, cursor)| {
                for id in ptr[r.start] as usize..ptr[r.end] as usize {
                    let at = &mut cursor[block(id)];
                    // SAFETY: the cursors of different ranges and blocks
                    // cover disjoint ranges of `order`.
                    unsafe { out.set(*at as usize, id as u32, "column block order") }
                        .map_err(|_| Error::invalid("column blocks: counts changed"))?;
                    *at += 1;
                }
                Ok::<(), Error>(())
            })?;
    }

    let marks = marking.finish();
    // The tree: per node its tuples, summed distinct tasks, and the marked
    // gathered elements of its columns.
    let pending: Vec<Pending> = (0..nodes)
        .map(|i| {
            let b = &shape.blocks[i];
            let (lo, hi) = (part_ptr[b.start], part_ptr[b.end]);
            let unique = Unique {
                tasks: counted.iter().map(|(_, t)| t[i]).sum(),
                gathered: marks.count(b.start * width, b.end * width),
            };
            if shape.right_offset[i] == 0 {
                Pending::leaf(lo, hi, unique, shape.depth[i])
            } else {
                Pending::inner(lo, hi, unique, shape.right_offset[i], shape.depth[i])
            }
        })
        .collect();
    // Every block is a partition, possibly empty (columns nobody gathers),
    // so that partition p is always columns [p * width, (p + 1) * width).
    Ok(Partition::from_parts(
        order,
        part_ptr,
        number_tree(pending),
        to_u32("column block width", width)?,
        start.elapsed().as_secs_f64(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::WorkGraph;
    use crate::Csr;

    fn graph() -> WorkGraph {
        // Row 0: columns 0, 5, 1, 4; row 1: empty; row 2: 5, 0, 3.
        let a = Csr::new(
            3,
            6,
            vec![0, 4, 4, 7],
            vec![0, 5, 1, 4, 5, 0, 3],
            vec![1.0f32; 7],
        )
        .unwrap();
        WorkGraph::from_csr(&a).unwrap()
    }

    #[test]
    fn tuples_go_to_the_block_of_their_column_in_id_order() {
        let g = graph();
        let p = column_blocks(&g, 2).unwrap();
        // 6 columns, at most 2 per block: 3 blocks [0, 2), [2, 4), [4, 6).
        assert_eq!(p.len(), 3);
        assert_eq!(p.part(0), [0, 2, 5]);
        assert_eq!(p.part(1), [6]);
        assert_eq!(p.part(2), [1, 3, 4]);
        assert_eq!(p.assignments(), [0, 2, 0, 2, 2, 0, 1]);
        // The tree: root over 3 blocks, split [0, 1) | [1, 3).
        let t = p.tree();
        assert_eq!(t.leaf_nodes().len(), 3);
        let root = t.root().unwrap();
        assert_eq!((root.lo, root.hi, root.leaves.clone()), (0, 7, 0..3));
        assert_eq!(root.unique.gathered, 5); // column 2 is never gathered
        assert_eq!(root.unique.tasks, 2);
        for (b, &leaf) in t.leaf_nodes().iter().enumerate() {
            let n = &t.nodes()[leaf as usize];
            assert_eq!(n.leaves, b as u32..b as u32 + 1);
            assert_eq!((n.lo, n.hi), (p.part_ptr()[b], p.part_ptr()[b + 1]));
        }
    }

    #[test]
    fn division_by_multiplication_is_exact() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let mut divisors = vec![1u32, 2, 3, 7, 64, 1000, 6_553_600, u32::MAX - 1, u32::MAX];
        divisors.extend((0..200).map(|_| rng.random_range(1..=u32::MAX)));
        for d in divisors {
            let div = Divider::new(d);
            let mut ns = vec![
                0u32,
                1,
                d - 1,
                d,
                d.saturating_add(1),
                u32::MAX,
                u32::MAX - 1,
            ];
            ns.extend((0..500).map(|_| rng.random::<u32>()));
            ns.extend((1..50u32).map(|q| q.saturating_mul(d).saturating_sub(1)));
            for n in ns {
                assert_eq!(div.div(n), n / d, "{n} / {d}");
            }
        }
    }

    #[test]
    fn one_block_when_everything_fits_and_errors_for_no_capacity() {
        let g = graph();
        let p = column_blocks(&g, 6).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p.part(0), [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(p.tree().nodes().len(), 1);
        assert!(column_blocks(&g, 0).is_err());
        assert_eq!(column_block_count(0, 5).unwrap(), 1);
        assert_eq!(column_block_count(11, 5).unwrap(), 3);
    }
}

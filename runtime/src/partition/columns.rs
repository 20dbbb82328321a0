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

use super::dbwp::{number_tree, unique_of, Partition, Pending};
use super::graph::WorkGraphOf;
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

/// Partitions `graph`'s tuples into column blocks of at most `capacity`
/// gathered elements each (equal widths; see the module docs), with a
/// balanced SJ-tree over the blocks: node `[a, b)` of blocks splits at
/// `(a + b) / 2`, so every node is itself a range of columns.
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
    mem::check(
        &format!("the column blocks' tuple order of {m} tuples"),
        mem::bytes_of::<u32>("work graph tuples", m)?,
    )?;
    let gathered = graph.gathered();
    let block = |id: u32| (gathered[id as usize] as usize / width).min(k - 1);

    // Counting sort of the tuple ids by block, stable: per chunk of tuples
    // a count per block, then every chunk writes at its cursors.
    let chunk = m
        .div_ceil(rayon::current_num_threads().max(1) * 4)
        .max(1 << 16);
    let counts: Vec<Vec<u32>> = (0..m)
        .step_by(chunk)
        .collect::<Vec<_>>()
        .par_iter()
        .map(|&lo| {
            let mut c = vec![0u32; k];
            for id in lo..(lo + chunk).min(m) {
                c[block(id as u32)] += 1;
            }
            c
        })
        .collect();
    let mut part_ptr = Vec::with_capacity(k + 1);
    let mut cursors = vec![vec![0u32; k]; counts.len()];
    let mut total = 0u32;
    for b in 0..k {
        part_ptr.push(total);
        for (c, counts) in counts.iter().enumerate() {
            cursors[c][b] = total;
            total += counts[b];
        }
    }
    part_ptr.push(total);
    let mut order = mem::try_filled("the column blocks' tuple order", m, 0u32)?;
    {
        let out = crate::exec::SharedOut::new(&mut order);
        cursors
            .par_iter_mut()
            .enumerate()
            .try_for_each(|(c, cursor)| {
                let lo = c * chunk;
                for id in lo..(lo + chunk).min(m) {
                    let at = &mut cursor[block(id as u32)];
                    // SAFETY: the cursors of different chunks and blocks
                    // cover disjoint ranges of `order`.
                    unsafe { out.set(*at as usize, id as u32, "column block order") }
                        .map_err(|_| Error::invalid("column blocks: counts changed"))?;
                    *at += 1;
                }
                Ok::<(), Error>(())
            })?;
    }

    // The balanced tree over blocks, in preorder.
    fn subtree(
        g: &WorkGraphOf<'_>,
        order: &[u32],
        part_ptr: &[u32],
        blocks: std::ops::Range<usize>,
        depth: u32,
    ) -> Vec<Pending> {
        let (lo, hi) = (part_ptr[blocks.start], part_ptr[blocks.end]);
        let unique = unique_of(g, &order[lo as usize..hi as usize]);
        if blocks.len() <= 1 {
            return vec![Pending::leaf(lo, hi, unique, depth)];
        }
        let mid = (blocks.start + blocks.end) / 2;
        let (left, right) = rayon::join(
            || subtree(g, order, part_ptr, blocks.start..mid, depth + 1),
            || subtree(g, order, part_ptr, mid..blocks.end, depth + 1),
        );
        let mut out = Vec::with_capacity(1 + left.len() + right.len());
        out.push(Pending::inner(lo, hi, unique, 1 + left.len() as u32, depth));
        out.extend(left);
        out.extend(right);
        out
    }
    let tree = if m == 0 {
        number_tree(Vec::new())
    } else {
        number_tree(subtree(graph, &order, &part_ptr, 0..k, 0))
    };
    // Empty blocks (columns nobody gathers) are dropped from the tree's
    // leaves only when the graph has no tuples at all; otherwise every block
    // is a partition, possibly empty, so that partition p is always columns
    // [p * width, (p + 1) * width).
    let part_ptr = if m == 0 { vec![0] } else { part_ptr };
    Ok(Partition::from_parts(
        order,
        part_ptr,
        tree,
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

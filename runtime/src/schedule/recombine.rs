//! SJ scheduling on the host: the profiling passes over the SJ-tree and
//! tree recombination (Algorithm 3).

use crate::partition::SjTree;
use crate::{Error, Result};

/// The cheapest set cover of an SJ-tree's leaves by its nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Recombination {
    /// The chosen node ids, in partition order (left to right): every leaf
    /// lies below exactly one of them.
    pub nodes: Vec<u32>,
    /// The predicted total time: the sum of the chosen nodes' stand-alone
    /// times, the root's `btime`.
    pub time: f64,
    /// `btime` of every node (indexed by node id): the best time of its
    /// subtree, `min(stime, btime(left) + btime(right))`.
    pub btime: Vec<f64>,
}

/// Tree recombination (Algorithm 3): given every node's stand-alone time
/// (`stime[node]`, in any unit, indexed by node id of `tree`), computes
/// `btime` bottom-up — a leaf's is its `stime`, an inner node's is
/// `min(stime, btime(left) + btime(right))` — and returns the set cover it
/// implies: a node is chosen where its own time is the minimum (ties keep
/// the node, since one launch costs less than two for the same predicted
/// time), else its children's covers are. Linear in the number of nodes,
/// no recursion (nodes are in preorder: children after their parent).
///
/// A tree without nodes (a graph without fine tasks) has the empty cover
/// and time 0.
///
/// ```
/// use warpfit_runtime::partition::{dbwp, Bisection, PartitionOptions, WorkGraph};
/// use warpfit_runtime::schedule::recombine;
/// use warpfit_runtime::Csr;
///
/// let a = Csr::new(4, 4, vec![0, 2, 4, 6, 8], vec![0, 1, 0, 1, 2, 3, 2, 3], vec![1.0f32; 8])?;
/// let p = dbwp(&WorkGraph::from_csr(&a)?, &PartitionOptions { capacity: 4, bisection: Bisection::KdTiling }, None)?;
/// let tree = p.tree();
/// assert_eq!(tree.nodes().len(), 3); // root, two leaves
/// // The root alone is cheaper than its two halves: one launch.
/// let r = recombine(tree, &[1.5, 1.0, 1.0])?;
/// assert_eq!((r.nodes.as_slice(), r.time), (&[0u32][..], 1.5));
/// // The halves are cheaper: two launches, left first.
/// let r = recombine(tree, &[3.0, 1.0, 1.0])?;
/// assert_eq!((r.nodes.as_slice(), r.time), (&[1u32, 2][..], 2.0));
/// assert!(recombine(tree, &[1.0, f64::NAN, 1.0]).is_err());
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
///
/// # Errors
/// `stime` does not have one entry per node, a time is negative, NaN or
/// infinite, or the tree's child ids are not after their parent.
pub fn recombine(tree: &SjTree, stime: &[f64]) -> Result<Recombination> {
    let nodes = tree.nodes();
    if stime.len() != nodes.len() {
        return Err(Error::length(
            "SJ stand-alone times (one per SJ-tree node)",
            nodes.len(),
            stime.len(),
        ));
    }
    if let Some((i, t)) = stime
        .iter()
        .enumerate()
        .find(|(_, t)| !(t.is_finite() && **t >= 0.0))
    {
        return Err(Error::invalid(format!(
            "SJ stand-alone time of node {i} is {t}: times must be finite and non-negative"
        )));
    }
    let children = |i: usize| -> Result<Option<[usize; 2]>> {
        match nodes[i].children {
            None => Ok(None),
            Some([l, r]) => {
                let (l, r) = (l as usize, r as usize);
                if l <= i || r <= i || l >= nodes.len() || r >= nodes.len() {
                    return Err(Error::invalid(format!(
                        "SJ-tree node {i} has children {l} and {r}: not a preorder tree of {} nodes",
                        nodes.len()
                    )));
                }
                Ok(Some([l, r]))
            }
        }
    };
    // Bottom-up: in preorder, every child comes after its parent.
    let mut btime = stime.to_vec();
    for i in (0..nodes.len()).rev() {
        if let Some([l, r]) = children(i)? {
            btime[i] = stime[i].min(btime[l] + btime[r]);
        }
    }
    // Top-down, left before right: the chosen nodes in partition order.
    let mut chosen = Vec::new();
    let mut stack = Vec::new();
    if !nodes.is_empty() {
        stack.push(0usize);
    }
    while let Some(i) = stack.pop() {
        match children(i)? {
            Some([l, r]) if btime[l] + btime[r] < stime[i] => {
                stack.push(r);
                stack.push(l);
            }
            _ => chosen.push(i as u32),
        }
    }
    Ok(Recombination {
        nodes: chosen,
        time: btime.first().copied().unwrap_or(0.0),
        btime,
    })
}

/// The SJ profiling passes (Section 3.3): pass `d` runs every node at depth
/// `d` stand-alone, and every leaf shallower than `d` again, so that each
/// pass is a set cover of the leaves — one whole, correct execution of the
/// kernel, which an iterative application uses as one of its iterations.
/// Each pass lists its node ids in partition order; there are
/// [`SjTree::depth`] passes (none for an empty tree). After all passes every
/// node has been timed at least once; a leaf timed in several passes may
/// take any of its times (the last, or the least).
///
/// ```
/// use warpfit_runtime::partition::SjTree;
/// use warpfit_runtime::schedule::profiling_passes;
/// assert!(profiling_passes(&SjTree::default()).is_empty());
/// ```
pub fn profiling_passes(tree: &SjTree) -> Vec<Vec<u32>> {
    let nodes = tree.nodes();
    let depth = tree.depth() as usize;
    let mut passes = vec![Vec::new(); depth];
    // Preorder visits nodes left to right at every depth.
    for (i, n) in nodes.iter().enumerate() {
        let d = n.depth as usize;
        if d >= depth {
            continue;
        }
        passes[d].push(i as u32);
        if n.is_leaf() {
            for pass in passes.iter_mut().skip(d + 1) {
                pass.push(i as u32);
            }
        }
    }
    passes
}

//! A locality renumbering by breadth-first levels (Cuthill–McKee order).
//!
//! DBWP's partitions live in the index space of the matrix: on a matrix
//! whose vertices were numbered at random (a mesh or a grid shuffled),
//! column blocks and K-D tiles see no structure, and Algorithm 5 packs each
//! partition's data without bringing neighbours together. A breadth-first
//! numbering does: vertices are numbered level by level from a root, and
//! within a level in the order of their first parent, each parent's
//! children in the order of its row. A row's columns then lie within the
//! levels next to its own, so the gathered elements a run of rows reads
//! span a few levels' width (a few MB for a 3D mesh of 16M vertices)
//! instead of the whole vector, and stay in cache between the rows that
//! share them.
//!
//! The order is the Cuthill–McKee order from a given root (the degree sort
//! within a parent's children is left out: rows are taken as stored), one
//! component after the other, each rooted at its smallest unnumbered
//! vertex. It follows rows to their columns; for a symmetric pattern that
//! is the graph's adjacency, for another pattern it is still a
//! permutation, with less locality to find.
//!
//! Levels are expanded in parallel and give exactly the sequential order:
//! each unnumbered neighbour of the frontier is claimed by the first
//! frontier vertex that reaches it (an atomic minimum over frontier
//! positions), then every frontier vertex lists the neighbours it claimed
//! in row order, and the lists are joined in frontier order. On a randomly
//! numbered mesh every edge is a cache miss, so the order's host time
//! follows memory latency more than the core count (BENCHMARKS.md, "CG
//! renumbered by breadth-first levels").

use crate::sparse::Csr;
use crate::{mem, Error, Result};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

/// Frontiers of fewer than `CHUNK` vertices reaching fewer edges than
/// this are expanded on one thread: the order is the same, and a graph of many small components (or the
/// first and last levels of a large one) costs no parallel overhead.
const SEQUENTIAL_EDGES: usize = 1 << 14;

/// Frontier vertices per parallel job when listing claimed neighbours.
const CHUNK: usize = 1024;

/// The breadth-first (Cuthill–McKee) order of `a`'s rows, starting from row
/// `root`: `order[new] = old`, a permutation of `0..a.nrows()`.
///
/// # Errors
/// `a` is not square, or `root` is not one of its rows; the memory budget
/// refuses the per-vertex arrays (9 bytes a vertex besides the order).
///
/// # Examples
/// ```
/// use warpfit_runtime::partition::level_order;
/// use warpfit_runtime::Csr;
/// // The path 0 - 2 - 1 - 3, stored out of order.
/// let a = Csr::new(4, 4, vec![0, 1, 3, 5, 6], vec![2, 2, 3, 0, 1, 1], vec![1.0f32; 6]).unwrap();
/// assert_eq!(level_order(&a, 0).unwrap(), vec![0, 2, 1, 3]);
/// ```
pub fn level_order<T>(a: &Csr<T>, root: usize) -> Result<Vec<u32>> {
    // Never cancelled, so always `Some`.
    let never = AtomicBool::new(false);
    Ok(level_order_unless(a, root, &never)?.unwrap_or_default())
}

/// [`level_order`], given up (`Ok(None)`) as soon as `cancel` is set: for
/// an order made on a thread of its own that its user may stop waiting for
/// (the flag is read between levels).
///
/// # Errors
/// As [`level_order`].
pub fn level_order_unless<T>(
    a: &Csr<T>,
    root: usize,
    cancel: &AtomicBool,
) -> Result<Option<Vec<u32>>> {
    order_of(a.nrows(), a.ncols(), a.row_ptr(), a.col_idx(), root, cancel)
}

/// [`level_order`] from several roots at once: `roots` (distinct rows)
/// numbered first, in the order given, as the first level; then each
/// level in the order of the vertices that reach it first, as from one
/// root. The device's level order from spread roots
/// (`warpfit_gpu::levels::level_order_from_roots`) is this order.
///
/// # Errors
/// As [`level_order`]; no root, or a root repeated.
pub fn level_order_from_roots<T>(a: &Csr<T>, roots: &[usize]) -> Result<Vec<u32>> {
    let never = AtomicBool::new(false);
    Ok(roots_order_of(
        a.nrows(),
        a.ncols(),
        a.row_ptr(),
        a.col_idx(),
        roots,
        &never,
    )?
    .unwrap_or_default())
}

/// The level order of a pattern given as row pointers (`ptr`, `nrows + 1`
/// entries, from 0, never decreasing) and column indices (each below
/// `ncols`), as a [`WorkGraphOf`](super::WorkGraphOf) holds its tasks'
/// tuples: for remapping a kernel's work graph rather than a matrix.
pub(crate) fn order_of(
    n: usize,
    ncols: usize,
    ptr: &[u32],
    col: &[u32],
    root: usize,
    cancel: &AtomicBool,
) -> Result<Option<Vec<u32>>> {
    roots_order_of(n, ncols, ptr, col, &[root], cancel)
}

/// [`order_of`] from several roots, numbered first in the order given.
fn roots_order_of(
    n: usize,
    ncols: usize,
    ptr: &[u32],
    col: &[u32],
    roots: &[usize],
    cancel: &AtomicBool,
) -> Result<Option<Vec<u32>>> {
    if n != ncols {
        return Err(Error::invalid(format!(
            "a level order renumbers rows and columns alike: the matrix must be square, got {n} x {ncols}"
        )));
    }
    if ptr.len() != n + 1 {
        return Err(Error::length("level order: row pointers", n + 1, ptr.len()));
    }
    if n == 0 {
        return Ok(Some(Vec::new()));
    }
    if roots.is_empty() {
        return Err(Error::invalid("level order: no root"));
    }
    if let Some(&root) = roots.iter().find(|&&r| r >= n) {
        return Err(Error::invalid(format!(
            "level order: root {root} is not a row of a {n}-row matrix"
        )));
    }
    u32::try_from(n).map_err(|_| Error::invalid("level order: more than u32::MAX rows"))?;
    mem::check(
        "the level order's per-vertex claims, marks and order",
        (n as u64).saturating_mul(9),
    )?;
    if ptr[n] as usize > col.len() {
        return Err(Error::length(
            "level order: column indices",
            ptr[n] as usize,
            col.len(),
        ));
    }
    let claim: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(u32::MAX)).collect();
    let seen: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
    let mut order: Vec<u32> = Vec::new();
    mem::try_reserve(&mut order, n, "the level order")?;
    let mut next_root = 0usize;
    let push_root = |order: &mut Vec<u32>, r: usize| {
        seen[r].store(true, Relaxed);
        order.push(r as u32);
    };
    for &root in roots {
        if seen[root].load(Relaxed) {
            return Err(Error::invalid(format!(
                "level order: root {root} is given twice"
            )));
        }
        push_root(&mut order, root);
    }
    let mut start = 0usize;
    while order.len() < n {
        if cancel.load(Relaxed) {
            return Ok(None);
        }
        if start == order.len() {
            // The component is numbered: the next starts at the smallest
            // vertex not numbered yet.
            while seen[next_root].load(Relaxed) {
                next_root += 1;
            }
            push_root(&mut order, next_root);
        }
        let end = order.len();
        let frontier = &order[start..end];
        // Counting a large frontier's edges would itself be a random read
        // per vertex on one thread: it goes parallel without counting.
        let small = frontier.len() < CHUNK
            && frontier
                .iter()
                .map(|&v| (ptr[v as usize + 1] - ptr[v as usize]) as usize)
                .sum::<usize>()
                < SEQUENTIAL_EDGES;
        let next: Vec<u32> = if small {
            let mut next = Vec::new();
            for &v in frontier {
                let v = v as usize;
                for &w in &col[ptr[v] as usize..ptr[v + 1] as usize] {
                    if !seen[w as usize].swap(true, Relaxed) {
                        next.push(w);
                    }
                }
            }
            next
        } else {
            expand(frontier, ptr, col, &claim, &seen)
        };
        start = end;
        order.extend_from_slice(&next);
    }
    Ok(Some(order))
}

/// One level in parallel: the neighbours of `frontier` not seen yet, each
/// listed by the first frontier vertex that reaches it, in frontier and
/// row order, and marked seen.
fn expand(
    frontier: &[u32],
    ptr: &[u32],
    col: &[u32],
    claim: &[AtomicU32],
    seen: &[AtomicBool],
) -> Vec<u32> {
    let row = |v: u32| &col[ptr[v as usize] as usize..ptr[v as usize + 1] as usize];
    frontier.par_iter().enumerate().for_each(|(i, &v)| {
        for &w in row(v) {
            if !seen[w as usize].load(Relaxed) {
                claim[w as usize].fetch_min(i as u32, Relaxed);
            }
        }
    });
    // The claims are complete (rayon joins before returning). Only the
    // claimant of `w` writes `seen[w]`, and a repeated `w` in its row finds
    // it set; other vertices read `seen[w]` but then fail the claim test.
    let lists: Vec<Vec<u32>> = frontier
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let mut out = Vec::new();
            for (k, &v) in chunk.iter().enumerate() {
                let i = (c * CHUNK + k) as u32;
                for &w in row(v) {
                    let w_ = w as usize;
                    if claim[w_].load(Relaxed) == i && !seen[w_].load(Relaxed) {
                        seen[w_].store(true, Relaxed);
                        out.push(w);
                    }
                }
            }
            out
        })
        .collect();
    lists.concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Cuthill–McKee order as the textbook states it: a queue, one vertex
    /// at a time.
    fn reference(a: &Csr<f32>, root: usize) -> Vec<u32> {
        let n = a.nrows();
        let mut seen = vec![false; n];
        let mut order = Vec::new();
        let mut roots = std::iter::once(root).chain(0..n);
        while order.len() < n {
            let r = roots.find(|&r| !seen[r]).unwrap();
            seen[r] = true;
            let mut head = order.len();
            order.push(r as u32);
            while head < order.len() {
                let v = order[head] as usize;
                head += 1;
                for &w in a.row(v).0 {
                    if !seen[w as usize] {
                        seen[w as usize] = true;
                        order.push(w);
                    }
                }
            }
        }
        order
    }

    fn random_csr(n: usize, edges: &[(usize, usize)], symmetric: bool) -> Csr<f32> {
        let mut rows = vec![Vec::new(); n];
        for &(u, v) in edges {
            let (u, v) = (u % n, v % n);
            rows[u].push(v as u32);
            if symmetric {
                rows[v].push(u as u32);
            }
        }
        let mut ptr = vec![0u32];
        let mut col = Vec::new();
        for r in rows {
            col.extend(r);
            ptr.push(col.len() as u32);
        }
        let nnz = col.len();
        Csr::new(n, n, ptr, col, vec![1.0; nnz]).unwrap()
    }

    /// A `side`³ grid's 7-point pattern, numbered by a random permutation.
    fn shuffled_grid(side: usize, seed: u64) -> Csr<f32> {
        let n = side * side * side;
        let mut name: Vec<usize> = (0..n).collect();
        let mut rng = crate::rng::chunk_rng(seed, crate::rng::PERMUTATION, 0);
        for i in (1..n).rev() {
            name.swap(i, crate::rng::below(&mut rng, i as u32 + 1) as usize);
        }
        let mut edges = Vec::new();
        for z in 0..side {
            for y in 0..side {
                for x in 0..side {
                    let v = (z * side + y) * side + x;
                    if x + 1 < side {
                        edges.push((name[v], name[v + 1]));
                    }
                    if y + 1 < side {
                        edges.push((name[v], name[v + side]));
                    }
                    if z + 1 < side {
                        edges.push((name[v], name[v + side * side]));
                    }
                }
            }
        }
        random_csr(n, &edges, true)
    }

    fn bandwidth(a: &Csr<f32>, inv: &[u32]) -> u32 {
        (0..a.nrows())
            .flat_map(|r| a.row(r).0.iter().map(move |&c| (r, c)))
            .map(|(r, c)| inv[r].abs_diff(inv[c as usize]))
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn a_shuffled_grid_gets_the_bandwidth_of_its_levels_back() {
        let a = shuffled_grid(24, 7);
        let order = level_order(&a, 0).unwrap();
        assert_eq!(order, reference(&a, 0));
        let identity: Vec<u32> = (0..a.nrows() as u32).collect();
        let before = bandwidth(&a, &identity);
        let r = crate::partition::Remapping::levels(&a).unwrap();
        assert_eq!(r.task_perm(), &order[..]);
        let after = bandwidth(&a, r.gathered_inv());
        // A level of a 24³ grid holds at most a few hundred vertices.
        assert!(after < 2000, "bandwidth {after}");
        assert!(before > 10_000, "bandwidth {before}");
    }

    #[test]
    fn a_cancelled_order_is_given_up() {
        let a = shuffled_grid(5, 1);
        let stop = AtomicBool::new(true);
        assert_eq!(level_order_unless(&a, 0, &stop).unwrap(), None);
        assert!(crate::partition::Remapping::levels_unless(&a, &stop)
            .unwrap()
            .is_none());
        let go = AtomicBool::new(false);
        let order = level_order_unless(&a, 0, &go).unwrap().unwrap();
        assert_eq!(order, level_order(&a, 0).unwrap());
    }

    #[test]
    fn errors_name_the_problem() {
        let rect = Csr::new(2, 3, vec![0, 1, 1], vec![2], vec![1.0f32]).unwrap();
        assert!(level_order(&rect, 0)
            .unwrap_err()
            .to_string()
            .contains("square"));
        let a = random_csr(3, &[(0, 1)], true);
        assert!(level_order(&a, 3)
            .unwrap_err()
            .to_string()
            .contains("root 3"));
        assert!(level_order(&random_csr(0, &[], true), 0)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn remapping_by_levels_is_the_level_order_on_both_sides() {
        use crate::partition::Remapping;
        let a = shuffled_grid(7, 3);
        let r = Remapping::levels(&a).unwrap();
        assert!(r.is_symmetric());
        assert_eq!(r.task_perm(), level_order(&a, 0).unwrap());
        // Row new of B is row task_perm[new] of A, columns renamed.
        let b = r.apply_csr(&a).unwrap();
        for (new, &old) in r.task_perm().iter().enumerate() {
            let want: Vec<u32> = a
                .row(old as usize)
                .0
                .iter()
                .map(|&c| r.gathered_inv()[c as usize])
                .collect();
            assert_eq!(b.row(new).0, &want[..]);
        }
    }

    /// From several roots: the roots first, then a breadth-first walk of
    /// their levels together (a plain queue); a root twice or out of range
    /// is an error.
    #[test]
    fn several_roots_start_one_walk() {
        let a = shuffled_grid(12, 7);
        let n = a.nrows();
        let roots = [5usize, 77, 130, 2];
        let got = level_order_from_roots(&a, &roots).unwrap();
        let mut seen = vec![false; n];
        let mut want: Vec<u32> = Vec::new();
        for &r in &roots {
            seen[r] = true;
            want.push(r as u32);
        }
        let mut i = 0;
        while i < want.len() {
            let v = want[i] as usize;
            for &w in a.row(v).0 {
                if !std::mem::replace(&mut seen[w as usize], true) {
                    want.push(w);
                }
            }
            i += 1;
        }
        assert_eq!(want.len(), n, "the grid is connected");
        assert_eq!(got, want);
        assert_eq!(
            level_order_from_roots(&a, &[3]).unwrap(),
            level_order(&a, 3).unwrap()
        );
        assert!(level_order_from_roots(&a, &[3, 3]).is_err());
        assert!(level_order_from_roots(&a, &[n]).is_err());
        assert!(level_order_from_roots(&a, &[]).is_err());
    }

    #[test]
    fn a_work_graph_remaps_by_the_levels_of_its_matrix() {
        use crate::partition::{Remapping, WorkGraph};
        let a = shuffled_grid(9, 5);
        let g = WorkGraph::from_csr(&a).unwrap();
        assert_eq!(
            Remapping::levels_of(&g).unwrap(),
            Remapping::levels(&a).unwrap()
        );
        let rect = Csr::new(2, 3, vec![0, 1, 1], vec![2], vec![1.0f32]).unwrap();
        let e = Remapping::levels_of(&WorkGraph::from_csr(&rect).unwrap()).unwrap_err();
        assert!(e.to_string().contains("2 and 3"), "{e}");
        let empty = random_csr(0, &[], true);
        let r = Remapping::levels_of(&WorkGraph::from_csr(&empty).unwrap()).unwrap();
        assert!(r.task_perm().is_empty());
        // The slice form checks its lengths rather than slicing past them.
        let never = AtomicBool::new(false);
        assert!(order_of(2, 2, &[0, 1], &[0], 0, &never).is_err());
        assert!(order_of(2, 2, &[0, 1, 3], &[0, 1], 0, &never).is_err());
    }

    proptest! {
        /// Any pattern, any root: the parallel levels give the sequential
        /// order, a permutation (components, isolated vertices, repeated
        /// and self entries, asymmetric rows included). Frontiers large
        /// enough for the parallel path come from the dense graphs.
        #[test]
        fn the_parallel_order_is_the_sequential_one(
            n in 1usize..3000,
            edges in proptest::collection::vec((0usize..3000, 0usize..3000), 0..40_000),
            symmetric in any::<bool>(),
            root in 0usize..3000,
        ) {
            let a = random_csr(n, &edges, symmetric);
            let order = level_order(&a, root % n).unwrap();
            prop_assert_eq!(&order, &reference(&a, root % n));
            let mut sorted = order.clone();
            sorted.sort_unstable();
            prop_assert!(sorted.iter().enumerate().all(|(i, &v)| v as usize == i));
        }
    }
}

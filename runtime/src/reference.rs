//! Straightforward sequential graph algorithms: the references the
//! worklist drivers and the graph apps are tested against. Each is the
//! textbook algorithm on one thread, sharing no code with what it checks.
//!
//! A matrix is read as a directed graph: entry `(i, j)` is the edge `i → j`
//! of weight `|a(i, j)|` (a pattern matrix reads as ones).

use crate::sparse::Csr;
use crate::{Error, Result};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

fn check_square<T>(what: &str, a: &Csr<T>) -> Result<()> {
    if a.nrows() != a.ncols() {
        return Err(Error::invalid(format!(
            "{what} needs a square matrix, got {} x {}",
            a.nrows(),
            a.ncols()
        )));
    }
    Ok(())
}

fn check_source<T>(a: &Csr<T>, source: usize) -> Result<()> {
    if source >= a.nrows() {
        return Err(Error::out_of_range("source vertex", source, a.nrows()));
    }
    Ok(())
}

/// Shortest-path distances from `source` by Dijkstra's algorithm with a
/// binary heap; unreachable vertices are `f32::INFINITY`.
///
/// Distances are summed in f32 along each path from the source, rounding
/// after every addition, exactly as the apps relax edges. Rounding is
/// monotone and weights are non-negative, so extending a path never shortens
/// it and Dijkstra's order is still right: the result is, for every vertex,
/// the least f32 path sum, which is also the unique fixed point every
/// relaxation order (Bellman-Ford, worklists, buckets) reaches. Results of
/// the apps therefore compare bit for bit with this one.
///
/// # Errors
/// A matrix that is not square, or `source` out of range.
///
/// # Examples
/// ```
/// use warpfit_runtime::{reference, Csr};
/// // 0 → 1 (2.0), 1 → 2 (0.5), 0 → 2 (3.0)
/// let a = Csr::new(3, 3, vec![0, 2, 3, 3], vec![1, 2, 2], vec![2.0f32, 3.0, 0.5])?;
/// assert_eq!(reference::dijkstra(&a, 0)?, [0.0, 2.0, 2.5]);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
pub fn dijkstra(a: &Csr<f32>, source: usize) -> Result<Vec<f32>> {
    check_square("dijkstra", a)?;
    check_source(a, source)?;
    crate::mem::check_elems::<f32>("the dijkstra distances", a.nrows())?;
    let mut dist = vec![f32::INFINITY; a.nrows()];
    dist[source] = 0.0;
    // Non-negative floats order like their bit patterns.
    let mut heap = BinaryHeap::from([Reverse((0f32.to_bits(), source))]);
    while let Some(Reverse((bits, u))) = heap.pop() {
        let d = f32::from_bits(bits);
        if d > dist[u] {
            continue; // a stale entry
        }
        let (cols, weights) = a.row(u);
        for (&v, &w) in cols.iter().zip(weights) {
            let nd = d + w.abs();
            if nd < dist[v as usize] {
                dist[v as usize] = nd;
                heap.push(Reverse((nd.to_bits(), v as usize)));
            }
        }
    }
    Ok(dist)
}

/// Breadth-first levels from `source` with a FIFO queue: the number of edges
/// on a shortest path, -1 for unreachable vertices.
///
/// # Errors
/// A matrix that is not square, `source` out of range, or more vertices than
/// i32 levels hold.
///
/// # Examples
/// ```
/// use warpfit_runtime::{reference, Csr};
/// let a = Csr::new(3, 3, vec![0, 1, 2, 2], vec![1, 2], vec![1.0f32, 1.0])?;
/// assert_eq!(reference::bfs_levels(&a, 1)?, [-1, 0, 1]);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
pub fn bfs_levels<T>(a: &Csr<T>, source: usize) -> Result<Vec<i32>> {
    check_square("bfs", a)?;
    check_source(a, source)?;
    i32::try_from(a.nrows()).map_err(|_| {
        Error::invalid(format!(
            "BFS levels are i32: {} vertices are too many",
            a.nrows()
        ))
    })?;
    crate::mem::check_elems::<i32>("the bfs levels and queue", 2 * a.nrows())?;
    let mut level = vec![-1i32; a.nrows()];
    level[source] = 0;
    let mut queue = VecDeque::from([source]);
    while let Some(u) = queue.pop_front() {
        for &v in a.row(u).0 {
            if level[v as usize] < 0 {
                level[v as usize] = level[u] + 1;
                queue.push_back(v as usize);
            }
        }
    }
    Ok(level)
}

/// Connected components with edge directions ignored, by union-find (union
/// of the two ends of every entry, path halving); every vertex is labelled
/// with the smallest vertex id of its component.
///
/// # Errors
/// A matrix that is not square, or more vertices than u32 labels hold.
///
/// # Examples
/// ```
/// use warpfit_runtime::{reference, Csr};
/// // 2 → 0 and 3 → 3: components {0, 2}, {1}, {3}.
/// let a = Csr::new(4, 4, vec![0, 0, 0, 1, 2], vec![0, 3], vec![1.0f32, 1.0])?;
/// assert_eq!(reference::components(&a)?, [0, 1, 0, 3]);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
pub fn components<T>(a: &Csr<T>) -> Result<Vec<u32>> {
    check_square("connected components", a)?;
    let n = crate::error::to_u32("connected components vertices", a.nrows())?;
    crate::mem::check_elems::<u32>("the union-find parents", a.nrows())?;
    let mut parent: Vec<u32> = (0..n).collect();
    for u in 0..a.nrows() {
        for &v in a.row(u).0 {
            let (ru, rv) = (find(&mut parent, u as u32), find(&mut parent, v));
            // The smaller root becomes the parent, so a root is always the
            // smallest vertex of its set.
            match ru.cmp(&rv) {
                std::cmp::Ordering::Less => parent[rv as usize] = ru,
                std::cmp::Ordering::Greater => parent[ru as usize] = rv,
                std::cmp::Ordering::Equal => {}
            }
        }
    }
    Ok((0..n).map(|v| find(&mut parent, v)).collect())
}

/// A minimum spanning forest by Kruskal's algorithm: the undirected edges
/// `{u, v}` (entries above the diagonal; the matrix must be symmetric, as
/// the caller checks) of weight `|a(u, v)|` in increasing order of
/// `(weight, u, v)`, each kept when it joins two trees of a union-find.
/// Returns the forest's edges `(u, v, weight)` with `u < v`, in that order.
///
/// Ordering ties by the endpoints makes the forest unique: it is the one
/// every algorithm that breaks ties by the same order finds (Borůvka's
/// rounds included), so results compare edge for edge.
pub fn kruskal(a: &Csr<f32>) -> Result<Vec<(u32, u32, f32)>> {
    check_square("a minimum spanning forest", a)?;
    let n = crate::error::to_u32("spanning forest vertices", a.nrows())?;
    let mut edges: Vec<(f32, u32, u32)> = Vec::new();
    for u in 0..n {
        let (cols, vals) = a.row(u as usize);
        for (&v, &w) in cols.iter().zip(vals) {
            if u < v {
                edges.push((w.abs(), u, v));
            }
        }
    }
    edges.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    let mut parent: Vec<u32> = (0..n).collect();
    let mut forest = Vec::new();
    for (w, u, v) in edges {
        let (ru, rv) = (find(&mut parent, u), find(&mut parent, v));
        if ru != rv {
            parent[ru.max(rv) as usize] = ru.min(rv);
            forest.push((u, v, w));
        }
    }
    Ok(forest)
}

/// The root of `x`'s set in a union-find forest, halving the path on the
/// way up.
fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        let up = parent[parent[x as usize] as usize];
        parent[x as usize] = up;
        x = up;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kruskal_keeps_the_lightest_edges_that_join_trees() {
        // A square 0-1-2-3-0 with a diagonal 0-2; weights 1, 2, 3, 4 and 1.5;
        // 4-5 apart (a forest of two trees); negative values weigh |a|.
        let mut t = Vec::new();
        for (u, v, w) in [
            (0, 1, 1.0f32),
            (1, 2, 2.0),
            (2, 3, 3.0),
            (3, 0, 4.0),
            (0, 2, 1.5),
            (4, 5, -0.5),
        ] {
            t.push((u, v, w));
            t.push((v, u, w));
        }
        let a = Csr::from_triplets(6, 6, t).unwrap();
        let f = kruskal(&a).unwrap();
        assert_eq!(f, [(4, 5, 0.5), (0, 1, 1.0), (0, 2, 1.5), (2, 3, 3.0)]);
        // Equal weights: ties go to the lower endpoints.
        let tri = Csr::from_triplets(
            3,
            3,
            [
                (0, 1, 1.0f32),
                (1, 0, 1.0),
                (1, 2, 1.0),
                (2, 1, 1.0),
                (0, 2, 1.0),
                (2, 0, 1.0),
            ],
        )
        .unwrap();
        assert_eq!(kruskal(&tri).unwrap(), [(0, 1, 1.0), (0, 2, 1.0)]);
    }

    fn path(n: usize, w: f32) -> Csr<f32> {
        // i → i + 1 for i < n - 1.
        let row_ptr: Vec<u32> = (0..=n as u32).map(|i| i.min(n as u32 - 1)).collect();
        let cols: Vec<u32> = (1..n as u32).collect();
        Csr::new(n, n, row_ptr, cols, vec![w; n - 1]).unwrap()
    }

    #[test]
    fn dijkstra_sums_in_f32_along_the_path() {
        let a = path(5, 0.1);
        let d = dijkstra(&a, 0).unwrap();
        let mut want = 0.0f32;
        for (v, &got) in d.iter().enumerate() {
            assert_eq!(got, want, "vertex {v}");
            want += 0.1;
        }
        assert_eq!(dijkstra(&a, 3).unwrap()[..3], [f32::INFINITY; 3]);
        // Negative stored values weigh their absolute value.
        let neg = Csr::new(2, 2, vec![0, 1, 1], vec![1], vec![-2.5f32]).unwrap();
        assert_eq!(dijkstra(&neg, 0).unwrap(), [0.0, 2.5]);
    }

    #[test]
    fn bfs_levels_on_a_path_and_a_cycle() {
        assert_eq!(bfs_levels(&path(4, 1.0), 0).unwrap(), [0, 1, 2, 3]);
        let cycle = Csr::new(3, 3, vec![0, 1, 2, 3], vec![1, 2, 0], vec![1.0f32; 3]).unwrap();
        assert_eq!(bfs_levels(&cycle, 2).unwrap(), [1, 2, 0]);
    }

    #[test]
    fn components_ignore_directions_and_take_the_smallest_id() {
        // 3 → 1, 4 → 3, 2 isolated, 5 → 0.
        let a = Csr::from_triplets(6, 6, [(3, 1, 1.0f32), (4, 3, 1.0), (5, 0, 1.0)]).unwrap();
        assert_eq!(components(&a).unwrap(), [0, 1, 2, 1, 1, 0]);
        let empty = Csr::<f32>::new(0, 0, vec![0], vec![], vec![]).unwrap();
        assert!(components(&empty).unwrap().is_empty());
    }

    #[test]
    fn bad_shapes_and_sources_are_errors() {
        let rect = Csr::new(1, 2, vec![0, 1], vec![1], vec![1.0f32]).unwrap();
        assert!(dijkstra(&rect, 0)
            .unwrap_err()
            .to_string()
            .contains("square"));
        assert!(bfs_levels(&rect, 0).is_err());
        assert!(components(&rect).is_err());
        let e = dijkstra(&path(3, 1.0), 3).unwrap_err();
        assert!(e.to_string().contains("source vertex"), "{e}");
    }
}

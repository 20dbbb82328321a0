use crate::error::to_u32;
use crate::rng::{chunk_rng, unit_f64, POINTS};
use crate::sparse::Csr;
use crate::Result;
use rayon::prelude::*;

/// Points generated per random stream (fixed for determinism).
const POINT_CHUNK: usize = 1 << 16;

/// Vertex numbering of a random geometric graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RggOrder {
    /// Vertices in generation order, which is spatially random: neighbours
    /// are scattered over the index range (poor locality; the default).
    #[default]
    Random,
    /// Vertices sorted by grid cell (row-major cells of side ≥ r, generation
    /// order inside a cell): neighbours have nearby indices, as in the
    /// DIMACS10 rgg files.
    Spatial,
}

/// The connection radius of [`rgg`]: `0.55 · sqrt(ln n / n)`, the DIMACS10
/// recipe (0 for n < 2).
pub fn rgg_radius(n: usize) -> f64 {
    if n < 2 {
        0.0
    } else {
        let n = n as f64;
        0.55 * (n.ln() / n).sqrt()
    }
}

/// 2D random geometric graph in random vertex order; see [`rgg_with`].
pub fn rgg(n: usize, seed: u64) -> Result<Csr<f32>> {
    rgg_with(n, seed, RggOrder::Random)
}

/// 2D random geometric graph (DIMACS10 recipe): `n` points uniform in the
/// unit square, an edge between two points when their Euclidean distance is
/// below `r = 0.55 · sqrt(ln n / n)` ([`rgg_radius`]). The matrix is exactly
/// symmetric, has no self loops, sorted rows and all values 1; the expected
/// mean degree is about `π r² n` (slightly less: the square's border). Built
/// in expected O(n) with a grid of cells of side ≥ r, so only the 3×3
/// neighbouring cells are searched. Deterministic for a given seed on every
/// machine and thread count (points are drawn per fixed-size chunk; distances
/// are plain IEEE arithmetic). The one platform-dependent input is `ln n` in
/// the radius (the system's libm); a last-bit difference there could only
/// flip a pair at distance exactly `r`.
pub fn rgg_with(n: usize, seed: u64, order: RggOrder) -> Result<Csr<f32>> {
    to_u32("rgg n", n)?;
    // Points (two f64 each), twice while they are reordered by cell, and
    // the expected π r² n entries (column and value) of the result.
    let expected_entries = std::f64::consts::PI * 0.3025 * (n.max(2) as f64).ln() * n as f64;
    crate::mem::check(
        &format!("rgg:n={n} (points and about {expected_entries:.0} entries)"),
        (32.0 * n as f64 + 8.0 * expected_entries) as u64,
    )?;
    let r = rgg_radius(n);
    let r2 = r * r;
    // Points, chunk-seeded.
    let mut xs = vec![0f64; n];
    let mut ys = vec![0f64; n];
    xs.par_chunks_mut(POINT_CHUNK)
        .zip(ys.par_chunks_mut(POINT_CHUNK))
        .enumerate()
        .for_each(|(c, (xc, yc))| {
            let mut rng = chunk_rng(seed, POINTS, c as u64);
            for (x, y) in xc.iter_mut().zip(yc.iter_mut()) {
                *x = unit_f64(&mut rng);
                *y = unit_f64(&mut rng);
            }
        });
    // Cells of side 1/g ≥ r. At most about n cells: the radius shrinks like
    // sqrt(ln n / n).
    let g = if r > 0.0 {
        ((1.0 / r).floor() as usize).clamp(1, 1 << 16)
    } else {
        1
    };
    let gf = g as f64;
    let cell_xy = |x: f64, y: f64| -> (usize, usize) {
        (
            ((x * gf) as usize).min(g - 1),
            ((y * gf) as usize).min(g - 1),
        )
    };
    let cells: Vec<u32> = (0..n)
        .into_par_iter()
        .map(|p| {
            let (cx, cy) = cell_xy(xs[p], ys[p]);
            (cy * g + cx) as u32
        })
        .collect();
    // Counting sort of the points by cell (stable: generation order inside).
    let mut cell_start = vec![0u32; g * g + 1];
    for &c in &cells {
        cell_start[c as usize + 1] += 1;
    }
    for k in 0..g * g {
        cell_start[k + 1] += cell_start[k];
    }
    let mut by_cell = vec![0u32; n];
    {
        let mut cursor = cell_start.clone();
        for (p, &c) in cells.iter().enumerate() {
            by_cell[cursor[c as usize] as usize] = p as u32;
            cursor[c as usize] += 1;
        }
    }
    drop(cells);
    // All the neighbour search runs in cell order on copies of the points in
    // that order, so candidates are contiguous in memory whatever the final
    // numbering. `label[k]` is the vertex number of the k-th point in cell
    // order: its generation index (random order) or k itself (spatial).
    let sx: Vec<f64> = by_cell.par_iter().map(|&p| xs[p as usize]).collect();
    let sy: Vec<f64> = by_cell.par_iter().map(|&p| ys[p as usize]).collect();
    drop((xs, ys));
    let label: Vec<u32> = match order {
        RggOrder::Random => by_cell.clone(),
        RggOrder::Spatial => (0..n as u32).collect(),
    };
    // Calls `f(j)` for every point j ≠ k (cell-order positions) within
    // distance r of point k.
    let neighbours = |k: usize, f: &mut dyn FnMut(usize)| {
        let (cx, cy) = cell_xy(sx[k], sy[k]);
        for ny in cy.saturating_sub(1)..=(cy + 1).min(g - 1) {
            // The three cells of a grid row are contiguous in cell order.
            let lo = cell_start[ny * g + cx.saturating_sub(1)] as usize;
            let hi = cell_start[ny * g + (cx + 1).min(g - 1) + 1] as usize;
            for j in lo..hi {
                let (dx, dy) = (sx[k] - sx[j], sy[k] - sy[j]);
                if j != k && dx * dx + dy * dy < r2 {
                    f(j);
                }
            }
        }
    };
    // Adjacency in cell order: row k lists the vertex numbers of point k's
    // neighbours, sorted.
    let degree: Vec<u32> = (0..n)
        .into_par_iter()
        .map(|k| {
            let mut d = 0u32;
            neighbours(k, &mut |_| d += 1);
            d
        })
        .collect();
    let mut row_ptr = Vec::with_capacity(n + 1);
    row_ptr.push(0u32);
    let mut total = 0usize;
    for &d in &degree {
        total += d as usize;
        row_ptr.push(to_u32("rgg nnz", total)?);
    }
    drop(degree);
    let mut col_idx = vec![0u32; total];
    let mut values = vec![1f32; total];
    crate::sparse::par_rows_mut(&row_ptr, &mut col_idx, &mut values, |rows, cols, _| {
        let base = row_ptr[rows.start] as usize;
        for k in rows {
            let row = &mut cols[row_ptr[k] as usize - base..row_ptr[k + 1] as usize - base];
            let mut at = 0;
            neighbours(k, &mut |j| {
                row[at] = label[j];
                at += 1;
            });
            row.sort_unstable();
        }
    });
    let spatial = Csr::from_parts_unchecked(n, n, row_ptr, col_idx, values);
    match order {
        RggOrder::Spatial => Ok(spatial),
        // Vertex v's row is the row of its cell-order position.
        RggOrder::Random => {
            let mut pos = vec![0u32; n];
            for (k, &p) in by_cell.iter().enumerate() {
                pos[p as usize] = k as u32;
            }
            Ok(permute_rows(&spatial, &pos))
        }
    }
}

/// The matrix whose row `v` is row `src_row[v]` of `m`.
fn permute_rows(m: &Csr<f32>, src_row: &[u32]) -> Csr<f32> {
    let n = src_row.len();
    let mut row_ptr = Vec::with_capacity(n + 1);
    row_ptr.push(0u32);
    let mut total = 0u32;
    for &s in src_row {
        // Same total as `m`, which fits u32.
        total += m.row_range(s as usize).len() as u32;
        row_ptr.push(total);
    }
    let mut col_idx = vec![0u32; total as usize];
    let mut values = vec![0f32; total as usize];
    crate::sparse::par_rows_mut(&row_ptr, &mut col_idx, &mut values, |rows, cols, vals| {
        let base = row_ptr[rows.start] as usize;
        for v in rows {
            let out = row_ptr[v] as usize - base..row_ptr[v + 1] as usize - base;
            let (c, x) = m.row(src_row[v] as usize);
            cols[out.clone()].copy_from_slice(c);
            vals[out].copy_from_slice(x);
        }
    });
    Csr::from_parts_unchecked(n, m.ncols(), row_ptr, col_idx, values)
}

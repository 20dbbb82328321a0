use super::rng::{chunk_rng, unit_f64, POINTS};
use crate::error::to_u32;
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
/// machine.
pub fn rgg_with(n: usize, seed: u64, order: RggOrder) -> Result<Csr<f32>> {
    to_u32("rgg n", n)?;
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
    let cell_of = |p: usize| -> usize {
        let cx = ((xs[p] * g as f64) as usize).min(g - 1);
        let cy = ((ys[p] * g as f64) as usize).min(g - 1);
        cy * g + cx
    };
    let cells: Vec<u32> = (0..n).into_par_iter().map(|p| cell_of(p) as u32).collect();
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
    // Labels: vertex v is point point_of[v]; point p has label label_of[p].
    let (point_of, label_of): (Vec<u32>, Vec<u32>) = match order {
        RggOrder::Random => ((0..n as u32).collect(), (0..n as u32).collect()),
        RggOrder::Spatial => {
            let mut label = vec![0u32; n];
            for (k, &p) in by_cell.iter().enumerate() {
                label[p as usize] = k as u32;
            }
            (by_cell.clone(), label)
        }
    };
    // Calls `f(q)` for every point q ≠ p within distance r of p.
    let neighbours = |p: usize, f: &mut dyn FnMut(usize)| {
        let c = cells[p] as usize;
        let (cx, cy) = (c % g, c / g);
        for ny in cy.saturating_sub(1)..=(cy + 1).min(g - 1) {
            for nx in cx.saturating_sub(1)..=(cx + 1).min(g - 1) {
                let cell = ny * g + nx;
                for &q in &by_cell[cell_start[cell] as usize..cell_start[cell + 1] as usize] {
                    let q = q as usize;
                    let (dx, dy) = (xs[p] - xs[q], ys[p] - ys[q]);
                    if q != p && dx * dx + dy * dy < r2 {
                        f(q);
                    }
                }
            }
        }
    };
    let degree: Vec<u32> = (0..n)
        .into_par_iter()
        .map(|v| {
            let mut d = 0u32;
            neighbours(point_of[v] as usize, &mut |_| d += 1);
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
        for v in rows {
            let row = &mut cols[row_ptr[v] as usize - base..row_ptr[v + 1] as usize - base];
            let mut k = 0;
            neighbours(point_of[v] as usize, &mut |q| {
                row[k] = label_of[q];
                k += 1;
            });
            row.sort_unstable();
        }
    });
    Ok(Csr::from_parts_unchecked(n, n, row_ptr, col_idx, values))
}

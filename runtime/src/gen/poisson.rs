//! Symmetric positive definite finite-difference matrices: the Poisson
//! equation's 5-point (2D) and 7-point (3D) Laplacians with Dirichlet
//! boundaries, the classic inputs of conjugate gradient.

use crate::error::to_u32;
use crate::rng::{below, chunk_rng, PERMUTATION};
use crate::sparse::Csr;
use crate::Result;

/// Row numbering of [`poisson3d`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Poisson3dOrder {
    /// Row `(i·side + j)·side + k` is grid point `(i, j, k)`: a banded matrix
    /// whose neighbours are at distances 1, side and side².
    #[default]
    Natural,
    /// The natural matrix renumbered by a random permutation `π`, applied to
    /// rows and columns alike (`B = P·A·Pᵀ`): still symmetric positive
    /// definite, with the same eigenvalues, but no locality.
    Random,
}

/// The 5-point Laplacian on a `side × side` grid: the matrix of
/// [`grid2d`](super::grid2d) (4 on the diagonal, -1 per neighbour, exactly
/// `5·side² − 4·side` entries), under the name a solver user looks for.
pub fn poisson2d(side: usize) -> Result<Csr<f32>> {
    super::grid2d(side)
}

/// The 7-point Laplacian on a `side × side × side` grid: `side³` rows, 6 on
/// the diagonal and -1 for each of the up to six neighbours, columns sorted;
/// exactly `7·side³ − 6·side²` entries. Symmetric, weakly diagonally
/// dominant (row sums are 0 inside and positive on the boundary) and
/// irreducible, hence positive definite. With [`Poisson3dOrder::Random`],
/// rows and columns are renumbered by a permutation drawn from `seed` with
/// the runtime's generator (deterministic on every machine); `seed` is unused
/// in natural order.
pub fn poisson3d(side: usize, order: Poisson3dOrder, seed: u64) -> Result<Csr<f32>> {
    let n = super::side_power("poisson3d rows", side, 3)?;
    let plane = side * side;
    let nnz = (7 * n as u64).saturating_sub(6 * plane as u64);
    let nnz = to_u32("poisson3d nnz (7·side³ − 6·side²)", nnz as usize)? as usize;
    // Row pointers, columns and values; a random order also holds the
    // permutation and the renumbered copy while it is built.
    let csr_bytes = (4 * n as u64 + 4).saturating_add(8 * nnz as u64);
    let bytes = match order {
        Poisson3dOrder::Natural => csr_bytes,
        Poisson3dOrder::Random => (2 * csr_bytes).saturating_add(8 * n as u64),
    };
    crate::mem::check(&format!("poisson3d:side={side},order={order}"), bytes)?;
    let natural = natural3d(side, n, nnz);
    match order {
        Poisson3dOrder::Natural => Ok(natural),
        Poisson3dOrder::Random => Ok(renumber(&natural, &random_permutation(n, seed))),
    }
}

fn natural3d(side: usize, n: usize, nnz: usize) -> Csr<f32> {
    let mut row_ptr = Vec::with_capacity(n + 1);
    let mut col_idx = Vec::with_capacity(nnz);
    let mut values = Vec::with_capacity(nnz);
    row_ptr.push(0u32);
    // Every index is below n, which fits u32 (checked by the caller).
    let (s, p) = (side as u32, (side * side) as u32);
    for i in 0..side {
        for j in 0..side {
            for k in 0..side {
                let r = ((i * side + j) * side + k) as u32;
                // Neighbours in increasing column order.
                let mut push = |c: u32, v: f32| {
                    col_idx.push(c);
                    values.push(v);
                };
                if i > 0 {
                    push(r - p, -1.0);
                }
                if j > 0 {
                    push(r - s, -1.0);
                }
                if k > 0 {
                    push(r - 1, -1.0);
                }
                push(r, 6.0);
                if k + 1 < side {
                    push(r + 1, -1.0);
                }
                if j + 1 < side {
                    push(r + s, -1.0);
                }
                if i + 1 < side {
                    push(r + p, -1.0);
                }
                row_ptr.push(col_idx.len() as u32);
            }
        }
    }
    debug_assert_eq!(col_idx.len(), nnz);
    Csr::from_parts_unchecked(n, n, row_ptr, col_idx, values)
}

/// A uniformly random permutation of `0..n` (Fisher-Yates on one stream of
/// the runtime's generator): `perm[old] = new`.
pub(crate) fn random_permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut perm: Vec<u32> = (0..n as u32).collect();
    let mut rng = chunk_rng(seed, PERMUTATION, 0);
    for i in (1..n).rev() {
        // i < n ≤ u32::MAX + 1, so i + 1 fits u32.
        let j = below(&mut rng, i as u32 + 1) as usize;
        perm.swap(i, j);
    }
    perm
}

/// `P·A·Pᵀ` for the permutation `perm[old] = new`: entry `(r, c)` of `a`
/// becomes entry `(perm[r], perm[c])`; rows keep their columns sorted.
fn renumber(a: &Csr<f32>, perm: &[u32]) -> Csr<f32> {
    let n = perm.len();
    let mut old_of = vec![0u32; n];
    for (old, &new) in perm.iter().enumerate() {
        old_of[new as usize] = old as u32;
    }
    let mut row_ptr = Vec::with_capacity(n + 1);
    row_ptr.push(0u32);
    let mut total = 0u32;
    for &old in &old_of {
        // The same total as `a`, which fits u32.
        total += a.row_range(old as usize).len() as u32;
        row_ptr.push(total);
    }
    let mut col_idx = vec![0u32; total as usize];
    let mut values = vec![0f32; total as usize];
    crate::sparse::par_rows_mut(&row_ptr, &mut col_idx, &mut values, |rows, cols, vals| {
        let base = row_ptr[rows.start] as usize;
        let mut entries: Vec<(u32, f32)> = Vec::with_capacity(7);
        for new in rows {
            let (c, v) = a.row(old_of[new] as usize);
            entries.clear();
            entries.extend(c.iter().zip(v).map(|(&c, &v)| (perm[c as usize], v)));
            entries.sort_unstable_by_key(|e| e.0);
            let out = row_ptr[new] as usize - base..row_ptr[new + 1] as usize - base;
            for ((col, val), &(c, v)) in cols[out.clone()]
                .iter_mut()
                .zip(&mut vals[out])
                .zip(&entries)
            {
                *col = c;
                *val = v;
            }
        }
    });
    Csr::from_parts_unchecked(n, a.ncols(), row_ptr, col_idx, values)
}

impl std::fmt::Display for Poisson3dOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Poisson3dOrder::Natural => "natural",
            Poisson3dOrder::Random => "random",
        })
    }
}

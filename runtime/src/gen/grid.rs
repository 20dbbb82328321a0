use crate::error::to_u32;
use crate::sparse::Csr;
use crate::Result;

/// The 5-point Laplacian stencil on a `side × side` grid: `side²` rows (row
/// `i·side + j` is grid point `(i, j)`), 4 on the diagonal and -1 for each of
/// the up to four neighbours, columns sorted. Exactly `5·side² − 4·side`
/// entries. Symmetric positive definite, the classic regular-mesh input.
pub fn grid2d(side: usize) -> Result<Csr<f32>> {
    let n = super::side_power("grid2d rows", side, 2)?;
    let nnz = (5 * n).saturating_sub(4 * side);
    to_u32("grid2d nnz (5·side² − 4·side)", nnz)?;
    crate::mem::check(
        &format!("grid2d:side={side}"),
        (4 * n as u64 + 4).saturating_add(8 * nnz as u64),
    )?;
    let mut row_ptr = Vec::with_capacity(n + 1);
    let mut col_idx = Vec::with_capacity(nnz);
    let mut values = Vec::with_capacity(nnz);
    row_ptr.push(0u32);
    for i in 0..side {
        for j in 0..side {
            let r = (i * side + j) as u32;
            let s = side as u32;
            if i > 0 {
                col_idx.push(r - s);
                values.push(-1.0);
            }
            if j > 0 {
                col_idx.push(r - 1);
                values.push(-1.0);
            }
            col_idx.push(r);
            values.push(4.0);
            if j + 1 < side {
                col_idx.push(r + 1);
                values.push(-1.0);
            }
            if i + 1 < side {
                col_idx.push(r + s);
                values.push(-1.0);
            }
            row_ptr.push(col_idx.len() as u32);
        }
    }
    debug_assert_eq!(col_idx.len(), nnz);
    Ok(Csr::from_parts_unchecked(n, n, row_ptr, col_idx, values))
}

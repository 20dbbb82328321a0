use crate::error::to_u32;
use crate::rng::{below, chunk_rng, unit_value, EDGES};
use crate::sparse::Csr;
use crate::{Error, Result};
use rayon::prelude::*;
use std::collections::HashSet;

/// Rows generated per random stream (fixed for determinism).
const ROW_CHUNK: usize = 1 << 12;

/// `n × n` matrix whose every row has exactly `per_row` distinct columns
/// drawn uniformly at random (Floyd's sampling), sorted, with values uniform
/// in (0, 1]. The irregularity-free baseline: every row has the same length
/// and accesses are spread uniformly. Needs `per_row ≤ n`; deterministic for a
/// given seed on every machine.
pub fn uniform(n: usize, per_row: usize, seed: u64) -> Result<Csr<f32>> {
    to_u32("uniform n", n)?;
    if per_row > n {
        return Err(Error::invalid(format!(
            "uniform: per_row = {per_row} exceeds n = {n} (columns in a row are distinct)"
        )));
    }
    let nnz = n.checked_mul(per_row).ok_or(Error::U32Overflow {
        what: "uniform nnz (n · per_row)",
        value: u64::MAX,
    })?;
    to_u32("uniform nnz (n · per_row)", nnz)?;
    // Row pointers, then a column and a value per entry.
    crate::mem::check(
        &format!("uniform:n={n},per_row={per_row}"),
        (4 * n as u64 + 4).saturating_add(8 * nnz as u64),
    )?;
    let row_ptr: Vec<u32> = (0..=n).map(|r| (r * per_row) as u32).collect();
    let mut cols = vec![0u32; nnz];
    let mut vals = vec![0f32; nnz];
    let chunk = (ROW_CHUNK * per_row).max(1);
    cols.par_chunks_mut(chunk)
        .zip(vals.par_chunks_mut(chunk))
        .enumerate()
        .for_each(|(c, (cs, vs))| {
            let mut rng = chunk_rng(seed, EDGES, c as u64);
            let mut set = HashSet::new();
            for (row_c, row_v) in cs.chunks_mut(per_row).zip(vs.chunks_mut(per_row)) {
                // Floyd: for j in n-k..n, draw t in 0..=j; take t, or j if t
                // is already taken. Yields k distinct values, uniformly.
                for (k, j) in (n - per_row..n).enumerate() {
                    let t = below(&mut rng, j as u32 + 1);
                    let taken = if per_row <= 64 {
                        row_c[..k].contains(&t)
                    } else {
                        !set.insert(t)
                    };
                    let pick = if taken { j as u32 } else { t };
                    if taken && per_row > 64 {
                        set.insert(pick);
                    }
                    row_c[k] = pick;
                }
                set.clear();
                row_c.sort_unstable();
                for v in row_v.iter_mut() {
                    *v = unit_value(&mut rng);
                }
            }
        });
    Ok(Csr::from_parts_unchecked(n, n, row_ptr, cols, vals))
}

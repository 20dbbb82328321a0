use crate::error::to_u32;
use crate::{Error, Result};

/// Compressed sparse rows with u32 indices.
///
/// Invariants, checked by [`Csr::new`]: `row_ptr` has `nrows + 1` entries,
/// starts at 0, never decreases and ends at `nnz`; every column index is
/// `< ncols`; `values` has `nnz` entries. Column indices within a row need not be
/// sorted ([`Csr::is_sorted`] tells).
#[derive(Debug, Clone, PartialEq)]
pub struct Csr<T> {
    nrows: usize,
    ncols: usize,
    row_ptr: Vec<u32>,
    col_idx: Vec<u32>,
    values: Vec<T>,
}

impl<T> Csr<T> {
    /// Builds a CSR matrix, validating every invariant.
    pub fn new(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<u32>,
        col_idx: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self> {
        to_u32("nrows", nrows)?;
        to_u32("ncols", ncols)?;
        if row_ptr.len() != nrows + 1 {
            return Err(Error::length("CSR row_ptr", nrows + 1, row_ptr.len()));
        }
        if row_ptr[0] != 0 {
            return Err(Error::InvalidMatrix {
                format: "CSR",
                message: format!("row_ptr[0] = {}, expected 0", row_ptr[0]),
            });
        }
        if let Some(r) = (0..nrows).find(|&r| row_ptr[r] > row_ptr[r + 1]) {
            return Err(Error::InvalidMatrix {
                format: "CSR",
                message: format!(
                    "row_ptr decreases at row {r}: {} > {}",
                    row_ptr[r],
                    row_ptr[r + 1]
                ),
            });
        }
        let nnz = row_ptr[nrows] as usize;
        if col_idx.len() != nnz {
            return Err(Error::length("CSR col_idx (= row_ptr[nrows])", nnz, col_idx.len()));
        }
        if values.len() != nnz {
            return Err(Error::length("CSR values", nnz, values.len()));
        }
        if let Some(k) = col_idx.iter().position(|&c| c as usize >= ncols) {
            return Err(Error::out_of_range(
                format!("CSR column index at position {k}"),
                col_idx[k],
                ncols,
            ));
        }
        Ok(Csr {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }
    /// Row pointers, `nrows + 1` entries.
    pub fn row_ptr(&self) -> &[u32] {
        &self.row_ptr
    }
    /// Column index of every stored entry, row by row.
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx
    }
    /// Value of every stored entry, row by row.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// Mutable values (the structure stays fixed).
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }
    /// Stored-entry range of row `r`.
    pub fn row_range(&self, r: usize) -> std::ops::Range<usize> {
        self.row_ptr[r] as usize..self.row_ptr[r + 1] as usize
    }
    /// Whether column indices increase strictly within every row.
    pub fn is_sorted(&self) -> bool {
        (0..self.nrows).all(|r| {
            self.col_idx[self.row_range(r)]
                .windows(2)
                .all(|w| w[0] < w[1])
        })
    }
    /// Splits into `(nrows, ncols, row_ptr, col_idx, values)`.
    pub fn into_parts(self) -> (usize, usize, Vec<u32>, Vec<u32>, Vec<T>) {
        (self.nrows, self.ncols, self.row_ptr, self.col_idx, self.values)
    }
}

use super::csr::Csr;
use super::par::{self, EntrySource};
use crate::error::to_u32;
use crate::mem;
use crate::{Error, Result};
use rayon::prelude::*;
use std::borrow::Borrow;

/// Coordinate (triplet) storage with u32 indices: entry `k` is
/// `(rows[k], cols[k], values[k])`.
///
/// Invariants, checked by every constructor: the three arrays have the same
/// length, `nrows` and `ncols` fit in u32, and every index is in range. Order is
/// arbitrary and duplicates are allowed; [`Coo::to_csr`] keeps both, and
/// [`Coo::to_canonical_csr`] sorts and sums.
#[derive(Debug, Clone, PartialEq)]
pub struct Coo<T> {
    nrows: usize,
    ncols: usize,
    rows: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<T>,
}

impl<T> Coo<T> {
    /// Builds a COO matrix, validating sizes and index ranges.
    pub fn new(
        nrows: usize,
        ncols: usize,
        rows: Vec<u32>,
        cols: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self> {
        to_u32("nrows", nrows)?;
        to_u32("ncols", ncols)?;
        if cols.len() != rows.len() {
            return Err(Error::length(
                "COO cols (= rows.len())",
                rows.len(),
                cols.len(),
            ));
        }
        if values.len() != rows.len() {
            return Err(Error::length(
                "COO values (= rows.len())",
                rows.len(),
                values.len(),
            ));
        }
        check_range("COO row index", &rows, nrows)?;
        check_range("COO column index", &cols, ncols)?;
        Ok(Coo {
            nrows,
            ncols,
            rows,
            cols,
            values,
        })
    }

    /// An empty `nrows × ncols` matrix to [`Coo::push`] into.
    pub fn empty(nrows: usize, ncols: usize) -> Result<Self> {
        Self::with_capacity(nrows, ncols, 0)
    }

    /// An empty matrix with room for `capacity` entries.
    pub fn with_capacity(nrows: usize, ncols: usize, capacity: usize) -> Result<Self> {
        to_u32("nrows", nrows)?;
        to_u32("ncols", ncols)?;
        Ok(Coo {
            nrows,
            ncols,
            rows: Vec::with_capacity(capacity),
            cols: Vec::with_capacity(capacity),
            values: Vec::with_capacity(capacity),
        })
    }

    /// Builds a matrix whose invariants the caller has already established
    /// (checked again in debug builds).
    pub(crate) fn from_parts_unchecked(
        nrows: usize,
        ncols: usize,
        rows: Vec<u32>,
        cols: Vec<u32>,
        values: Vec<T>,
    ) -> Self {
        debug_assert!(rows.len() == cols.len() && cols.len() == values.len());
        debug_assert!(rows.iter().all(|&r| (r as usize) < nrows));
        debug_assert!(cols.iter().all(|&c| (c as usize) < ncols));
        Coo {
            nrows,
            ncols,
            rows,
            cols,
            values,
        }
    }

    /// Appends one entry. An index beyond u32 is [`Error::U32Overflow`] (never
    /// a silent wrap); one beyond the shape is [`Error::IndexOutOfRange`].
    pub fn push(&mut self, row: usize, col: usize, value: T) -> Result<()> {
        let r = to_u32("COO row index", row)?;
        let c = to_u32("COO column index", col)?;
        if row >= self.nrows {
            return Err(Error::out_of_range("COO row index", row, self.nrows));
        }
        if col >= self.ncols {
            return Err(Error::out_of_range("COO column index", col, self.ncols));
        }
        self.rows.push(r);
        self.cols.push(c);
        self.values.push(value);
        Ok(())
    }

    /// Reserves room for `additional` more entries.
    pub fn reserve(&mut self, additional: usize) {
        self.rows.reserve(additional);
        self.cols.reserve(additional);
        self.values.reserve(additional);
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Number of stored entries (duplicates counted).
    pub fn nnz(&self) -> usize {
        self.rows.len()
    }
    /// Row index of every entry.
    pub fn rows(&self) -> &[u32] {
        &self.rows
    }
    /// Column index of every entry.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }
    /// Value of every entry.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// Mutable values (the coordinates stay fixed).
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }
    /// Splits into `(nrows, ncols, rows, cols, values)`.
    pub fn into_parts(self) -> (usize, usize, Vec<u32>, Vec<u32>, Vec<T>) {
        (self.nrows, self.ncols, self.rows, self.cols, self.values)
    }
}

impl<T: Copy + Send + Sync> Coo<T> {
    /// Converts to CSR by a parallel stable counting sort on the row index:
    /// entries of a row keep their input order and duplicates are kept.
    /// Entries already in row order are only counted (and copied).
    pub fn to_csr(&self) -> Result<Csr<T>> {
        let nnz = self.nnz();
        to_u32("nnz", nnz)?;
        self.check_csr_memory(true)?;
        if self.rows_sorted() {
            return Ok(Csr::from_parts_unchecked(
                self.nrows,
                self.ncols,
                self.sorted_row_ptr(),
                self.cols.clone(),
                self.values.clone(),
            ));
        }
        let (nrows, ncols) = (self.nrows, self.ncols);
        let src = CooSource {
            chunks: par::even_ranges(nnz, par::sort_chunks(nnz, nrows)),
            coo: self,
        };
        let (row_ptr, col_idx, values) = par::bucket_sort(nrows, nnz, src);
        Ok(Csr::from_parts_unchecked(
            nrows, ncols, row_ptr, col_idx, values,
        ))
    }

    /// Like [`Coo::to_csr`], consuming the COO: entries already in row order
    /// keep their column and value arrays (no copy), and for large matrices
    /// with many rows the COO arrays are released halfway through the sort,
    /// before the CSR arrays are allocated, which lowers peak memory.
    pub fn into_csr(self) -> Result<Csr<T>> {
        let nnz = self.nnz();
        to_u32("nnz", nnz)?;
        let sorted = self.rows_sorted();
        self.check_csr_memory(!sorted)?;
        if sorted {
            let row_ptr = self.sorted_row_ptr();
            return Ok(Csr::from_parts_unchecked(
                self.nrows,
                self.ncols,
                row_ptr,
                self.cols,
                self.values,
            ));
        }
        let (nrows, ncols) = (self.nrows, self.ncols);
        let src = CooSource {
            chunks: par::even_ranges(nnz, par::sort_chunks(nnz, nrows)),
            coo: self,
        };
        let (row_ptr, col_idx, values) = par::bucket_sort(nrows, nnz, src);
        Ok(Csr::from_parts_unchecked(
            nrows, ncols, row_ptr, col_idx, values,
        ))
    }

    /// Converts to canonical CSR: columns sorted within each row and
    /// duplicate coordinates summed (in input order, so the rounding is
    /// deterministic).
    pub fn to_canonical_csr(&self) -> Result<Csr<T>>
    where
        T: std::ops::AddAssign,
    {
        let mut csr = self.to_csr()?;
        csr.sum_duplicates();
        Ok(csr)
    }
}

impl<T> Coo<T> {
    /// Checks the CSR's allocations against the memory budget before any is
    /// made: the row pointers (`nrows + 1` of them, whatever the entry count:
    /// a declared 3·10⁹ rows need 12 GB) and, when `new_entries`, new column
    /// and value arrays.
    fn check_csr_memory(&self, new_entries: bool) -> Result<()> {
        let what = format!("the CSR row pointers of {} rows", self.nrows);
        mem::check_elems::<u32>(&what, self.nrows.saturating_add(1))?;
        if new_entries {
            let what = format!(
                "the CSR column indices and values of {} entries",
                self.nnz()
            );
            let bytes = mem::bytes_of::<u32>(&what, self.nnz())?
                .saturating_add(mem::bytes_of::<T>(&what, self.nnz())?);
            mem::check(&what, bytes)?;
        }
        Ok(())
    }

    /// Whether the entries are already in row order (then conversion to CSR
    /// is a count, not a sort).
    fn rows_sorted(&self) -> bool {
        let r = &self.rows;
        if r.len() >= par::PAR_MIN {
            (0..r.len() - 1)
                .into_par_iter()
                .with_min_len(1 << 14)
                .all(|k| r[k] <= r[k + 1])
        } else {
            r.windows(2).all(|w| w[0] <= w[1])
        }
    }

    /// Row pointers of row-ordered entries.
    fn sorted_row_ptr(&self) -> Vec<u32> {
        let mut ptr = vec![0u32; self.nrows + 1];
        for &r in &self.rows {
            ptr[r as usize + 1] += 1;
        }
        for k in 0..self.nrows {
            ptr[k + 1] += ptr[k];
        }
        ptr
    }
}

/// Checks that every index is `< len`, naming the first one that is not.
fn check_range(what: &str, idx: &[u32], len: usize) -> Result<()> {
    let bad = |&i: &u32| i as usize >= len;
    let first = if idx.len() >= par::PAR_MIN {
        idx.par_iter().position_first(bad)
    } else {
        idx.iter().position(bad)
    };
    match first {
        Some(k) => Err(Error::out_of_range(
            format!("{what} at position {k}"),
            idx[k],
            len,
        )),
        None => Ok(()),
    }
}

/// COO entries keyed by row, in contiguous chunks of the input; owns or
/// borrows the COO (`C` is `Coo<T>` or `&Coo<T>`).
struct CooSource<C> {
    coo: C,
    chunks: Vec<std::ops::Range<usize>>,
}

impl<T: Copy + Sync, C: Borrow<Coo<T>> + Sync> EntrySource<T> for CooSource<C> {
    fn nchunks(&self) -> usize {
        self.chunks.len()
    }
    #[inline]
    fn for_each<F: FnMut(u32, u32, T)>(&self, chunk: usize, mut f: F) {
        let range = self.chunks[chunk].clone();
        let c: &Coo<T> = self.coo.borrow();
        for ((&r, &col), &v) in c.rows[range.clone()]
            .iter()
            .zip(&c.cols[range.clone()])
            .zip(&c.values[range])
        {
            f(r, col, v);
        }
    }
}

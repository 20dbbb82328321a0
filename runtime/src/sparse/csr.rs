use super::coo::Coo;
use super::par::{self, EntrySource};
use crate::error::to_u32;
use crate::{Error, Result};
use rayon::prelude::*;

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
            return Err(Error::length(
                "CSR col_idx (= row_ptr[nrows])",
                nnz,
                col_idx.len(),
            ));
        }
        if values.len() != nnz {
            return Err(Error::length("CSR values", nnz, values.len()));
        }
        let bad = |&c: &u32| c as usize >= ncols;
        let first_bad = if nnz >= par::PAR_MIN {
            col_idx.par_iter().position_first(bad)
        } else {
            col_idx.iter().position(bad)
        };
        if let Some(k) = first_bad {
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
        self.rows_all(|cols| cols.windows(2).all(|w| w[0] < w[1]))
    }
    /// Splits into `(nrows, ncols, row_ptr, col_idx, values)`.
    pub fn into_parts(self) -> (usize, usize, Vec<u32>, Vec<u32>, Vec<T>) {
        (
            self.nrows,
            self.ncols,
            self.row_ptr,
            self.col_idx,
            self.values,
        )
    }
}

impl<T> Csr<T> {
    /// Builds a matrix whose invariants the caller has already established
    /// (checked again in debug builds).
    pub(crate) fn from_parts_unchecked(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<u32>,
        col_idx: Vec<u32>,
        values: Vec<T>,
    ) -> Self {
        debug_assert_eq!(row_ptr.len(), nrows + 1);
        debug_assert_eq!(row_ptr[nrows] as usize, col_idx.len());
        debug_assert_eq!(values.len(), col_idx.len());
        debug_assert!(row_ptr.windows(2).all(|w| w[0] <= w[1]));
        debug_assert!(col_idx.iter().all(|&c| (c as usize) < ncols));
        Csr {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        }
    }

    /// Column indices and values of row `r`.
    ///
    /// # Panics
    /// If `r >= nrows` (like slice indexing).
    pub fn row(&self, r: usize) -> (&[u32], &[T]) {
        let range = self.row_range(r);
        (&self.col_idx[range.clone()], &self.values[range])
    }

    /// The first stored value at `(r, c)`, if any; `None` also when `r` is out
    /// of range. Linear in the row's length (the row need not be sorted).
    pub fn get(&self, r: usize, c: usize) -> Option<&T> {
        if r >= self.nrows {
            return None;
        }
        let (cols, vals) = self.row(r);
        cols.iter().position(|&x| x as usize == c).map(|k| &vals[k])
    }

    /// Whether column indices never decrease within a row (duplicates
    /// allowed). [`Csr::is_sorted`] is the strict version.
    pub fn has_sorted_columns(&self) -> bool {
        self.rows_all(|cols| cols.windows(2).all(|w| w[0] <= w[1]))
    }

    /// Checks that the matrix is canonical (columns strictly increasing in
    /// every row: sorted, no duplicates), as cuSPARSE, `sprs` and binary
    /// searches over a row expect; the error names the first offending row.
    pub fn check_canonical(&self) -> Result<()> {
        for r in 0..self.nrows {
            let cols = &self.col_idx[self.row_range(r)];
            if let Some(k) = cols.windows(2).position(|w| w[0] >= w[1]) {
                let what = if cols[k] == cols[k + 1] {
                    "duplicate"
                } else {
                    "unsorted"
                };
                return Err(Error::InvalidMatrix {
                    format: "CSR",
                    message: format!(
                        "row {r} is not canonical: {what} column {} after column {} \
                         (call sort_indices / sum_duplicates)",
                        cols[k + 1],
                        cols[k]
                    ),
                });
            }
        }
        Ok(())
    }

    fn rows_all(&self, pred: impl Fn(&[u32]) -> bool + Sync) -> bool {
        let (row_ptr, col_idx) = (&self.row_ptr, &self.col_idx);
        let check = |r: usize| pred(&col_idx[row_ptr[r] as usize..row_ptr[r + 1] as usize]);
        if self.nnz() >= par::PAR_MIN {
            (0..self.nrows).into_par_iter().all(check)
        } else {
            (0..self.nrows).all(check)
        }
    }

    /// The sparsity structure alone. `Vec<()>` allocates nothing, so this
    /// costs one copy of the index arrays and no values.
    pub fn pattern(&self) -> Csr<()> {
        Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values: vec![(); self.nnz()],
        }
    }

    /// The same structure with new values, one per stored entry in storage
    /// order.
    pub fn with_values<U>(&self, values: Vec<U>) -> Result<Csr<U>> {
        if values.len() != self.nnz() {
            return Err(Error::length(
                "Csr::with_values values",
                self.nnz(),
                values.len(),
            ));
        }
        Ok(Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values,
        })
    }

    /// The same structure with every value mapped through `f` (in parallel
    /// for large matrices).
    pub fn map_values<U, F>(&self, f: F) -> Csr<U>
    where
        T: Sync,
        U: Send,
        F: Fn(&T) -> U + Sync + Send,
    {
        let values = if self.nnz() >= par::PAR_MIN {
            self.values.par_iter().map(f).collect()
        } else {
            self.values.iter().map(f).collect()
        };
        Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values,
        }
    }
}

impl<T: Copy + Send + Sync> Csr<T> {
    /// Builds a matrix from `(row, col, value)` triplets, in the order given:
    /// entries of a row keep their relative order and duplicates are kept
    /// (see [`Csr::sum_duplicates`]). Indices are checked against the shape.
    pub fn from_triplets<I>(nrows: usize, ncols: usize, triplets: I) -> Result<Self>
    where
        I: IntoIterator<Item = (usize, usize, T)>,
    {
        let mut coo = Coo::empty(nrows, ncols)?;
        for (r, c, v) in triplets {
            coo.push(r, c, v)?;
        }
        coo.to_csr()
    }

    /// Sorts the column indices of every row, moving values along. Stable:
    /// duplicates keep their relative order, so a later
    /// [`Csr::merge_duplicates`] folds them in storage order (deterministic
    /// rounding). Rows that are already sorted are left untouched.
    pub fn sort_indices(&mut self) {
        let row_ptr = &self.row_ptr;
        par::par_rows_mut(
            row_ptr,
            &mut self.col_idx,
            &mut self.values,
            |rows, cols, vals| {
                let base = row_ptr[rows.start] as usize;
                let mut buf: Vec<(u32, T)> = Vec::new();
                for r in rows {
                    let range = row_ptr[r] as usize - base..row_ptr[r + 1] as usize - base;
                    sort_row(&mut cols[range.clone()], &mut vals[range], &mut buf);
                }
            },
        );
    }

    /// Sorts every row and merges entries with equal coordinates: the first
    /// one stays and `merge(&mut first, later)` folds each later one into it,
    /// in storage order. The result is canonical ([`Csr::is_sorted`]).
    pub fn merge_duplicates<F>(&mut self, merge: F)
    where
        F: Fn(&mut T, T) + Sync,
    {
        if !self.has_sorted_columns() {
            self.sort_indices();
        }
        let row_ptr = &self.row_ptr;
        // Compact every row in place; blocks report their rows' new lengths.
        let lens: Vec<Vec<u32>> = par::par_rows_mut(
            row_ptr,
            &mut self.col_idx,
            &mut self.values,
            |rows, cols, vals| {
                let base = row_ptr[rows.start] as usize;
                let mut lens = Vec::with_capacity(rows.len());
                for r in rows {
                    let (lo, hi) = (row_ptr[r] as usize - base, row_ptr[r + 1] as usize - base);
                    let mut w = lo;
                    for k in lo..hi {
                        if w > lo && cols[w - 1] == cols[k] {
                            let v = vals[k];
                            merge(&mut vals[w - 1], v);
                        } else {
                            cols[w] = cols[k];
                            vals[w] = vals[k];
                            w += 1;
                        }
                    }
                    lens.push((w - lo) as u32);
                }
                lens
            },
        );
        // Close the gaps left by merged entries, row by row from the left.
        let mut w = 0usize;
        let mut r = 0usize;
        for block in lens {
            for len in block {
                let start = self.row_ptr[r] as usize;
                let len = len as usize;
                if w != start {
                    self.col_idx.copy_within(start..start + len, w);
                    self.values.copy_within(start..start + len, w);
                }
                self.row_ptr[r] = w as u32;
                w += len;
                r += 1;
            }
        }
        self.row_ptr[self.nrows] = w as u32;
        self.col_idx.truncate(w);
        self.values.truncate(w);
        self.col_idx.shrink_to_fit();
        self.values.shrink_to_fit();
    }

    /// Sorts every row and sums entries with equal coordinates (the usual
    /// meaning of duplicates in COO input), leaving a canonical matrix.
    pub fn sum_duplicates(&mut self)
    where
        T: std::ops::AddAssign,
    {
        self.merge_duplicates(|a, b| *a += b);
    }

    /// The transpose, by a parallel stable counting sort on the column index.
    /// Rows of the result are sorted by column (non-strictly: duplicates of
    /// the input stay duplicates), whatever the order of the input.
    pub fn transpose(&self) -> Csr<T> {
        let src = TransposeSource {
            csr: self,
            bounds: par::row_blocks(&self.row_ptr, par::sort_chunks(self.nnz(), self.ncols)),
        };
        let (row_ptr, col_idx, values) = par::bucket_sort(self.ncols, self.nnz(), src);
        Csr::from_parts_unchecked(self.ncols, self.nrows, row_ptr, col_idx, values)
    }

    /// The same entries as coordinates, in storage order.
    pub fn to_coo(&self) -> Coo<T> {
        Coo::from_parts_unchecked(
            self.nrows,
            self.ncols,
            self.expand_rows(),
            self.col_idx.clone(),
            self.values.clone(),
        )
    }

    /// The same entries as coordinates, in storage order, reusing the column
    /// and value arrays (only the row indices are allocated).
    pub fn into_coo(self) -> Coo<T> {
        let rows = self.expand_rows();
        Coo::from_parts_unchecked(self.nrows, self.ncols, rows, self.col_idx, self.values)
    }

    /// The row index of every stored entry.
    fn expand_rows(&self) -> Vec<u32> {
        let mut rows = vec![0u32; self.nnz()];
        let row_ptr = &self.row_ptr;
        let mut empty: Vec<()> = vec![(); self.nnz()];
        par::par_rows_mut(row_ptr, &mut rows, &mut empty, |block, out, _| {
            let base = row_ptr[block.start] as usize;
            for r in block {
                out[row_ptr[r] as usize - base..row_ptr[r + 1] as usize - base].fill(r as u32);
            }
        });
        rows
    }

    /// The first stored entry `(i, j)` (in row order) whose mirror differs:
    /// `a(j, i)` not stored, or stored with another value (compared
    /// exactly; duplicates are not summed first). `None` for a symmetric
    /// matrix. Each entry's mirror is found by binary search on sorted rows
    /// (no allocation), by a linear scan otherwise; rows are checked in
    /// parallel.
    ///
    /// # Errors
    /// The matrix is not square.
    ///
    /// ```
    /// use warpfit_runtime::sparse::Csr;
    ///
    /// let a = Csr::from_triplets(2, 2, [(0, 0, 4.0), (0, 1, 1.0), (1, 0, 2.0)]).unwrap();
    /// assert_eq!(a.first_asymmetry().unwrap(), Some((0, 1)));
    /// ```
    pub fn first_asymmetry(&self) -> Result<Option<(usize, usize)>>
    where
        T: PartialEq + Sync,
    {
        if self.nrows != self.ncols {
            return Err(Error::invalid(format!(
                "symmetry needs a square matrix, got {} x {}",
                self.nrows, self.ncols
            )));
        }
        let sorted = self.has_sorted_columns();
        let mirror = |j: usize, i: usize| -> Option<&T> {
            let (cols, vals) = self.row(j);
            if sorted {
                cols.binary_search(&(i as u32)).ok().map(|k| &vals[k])
            } else {
                self.get(j, i)
            }
        };
        Ok((0..self.nrows).into_par_iter().find_map_first(|i| {
            let (cols, vals) = self.row(i);
            cols.iter().zip(vals).find_map(|(&j, v)| {
                let j = j as usize;
                (j != i && mirror(j, i) != Some(v)).then_some((i, j))
            })
        }))
    }

    /// Whether the matrix equals its transpose, stored entries compared in
    /// sorted order (duplicates included).
    pub fn is_symmetric(&self) -> bool
    where
        T: PartialEq,
    {
        if self.nrows != self.ncols {
            return false;
        }
        let t = self.transpose();
        if self.has_sorted_columns() {
            t == *self
        } else {
            let mut s = self.clone();
            s.sort_indices();
            t == s
        }
    }
}

/// Sorts one row's `(col, value)` pairs by column, stably.
fn sort_row<T: Copy>(cols: &mut [u32], vals: &mut [T], buf: &mut Vec<(u32, T)>) {
    if cols.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    if cols.len() <= 32 {
        // Insertion sort: stable, no buffer, fastest on short rows.
        for i in 1..cols.len() {
            let (c, v) = (cols[i], vals[i]);
            let mut j = i;
            while j > 0 && cols[j - 1] > c {
                cols[j] = cols[j - 1];
                vals[j] = vals[j - 1];
                j -= 1;
            }
            cols[j] = c;
            vals[j] = v;
        }
        return;
    }
    buf.clear();
    buf.extend(cols.iter().copied().zip(vals.iter().copied()));
    buf.sort_by_key(|e| e.0);
    for (k, &(c, v)) in buf.iter().enumerate() {
        cols[k] = c;
        vals[k] = v;
    }
}

/// Entries of a CSR matrix keyed by column, chunked by blocks of rows.
struct TransposeSource<'a, T> {
    csr: &'a Csr<T>,
    bounds: Vec<usize>,
}

impl<T: Copy + Sync> EntrySource<T> for TransposeSource<'_, T> {
    fn nchunks(&self) -> usize {
        self.bounds.len() - 1
    }
    #[inline]
    fn for_each<F: FnMut(u32, u32, T)>(&self, chunk: usize, mut f: F) {
        let m = self.csr;
        for r in self.bounds[chunk]..self.bounds[chunk + 1] {
            for k in m.row_range(r) {
                f(m.col_idx[k], r as u32, m.values[k]);
            }
        }
    }
}

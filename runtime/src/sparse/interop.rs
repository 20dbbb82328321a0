//! Conversions between [`Csr`] and [`sprs`] matrices.
//!
//! `sprs` keeps `usize` (or any [`SpIndex`]) indices and either CSR or CSC
//! storage; warpfit keeps u32 indices in CSR. Going in, every index and size is
//! checked against u32 and CSC input is transposed by a counting sort (no
//! dense or per-entry allocation). Going out, `sprs` demands strictly sorted
//! rows, so unsorted rows are sorted on a copy and duplicates are an error.

use super::csr::Csr;
use crate::error::to_u32;
use crate::{Error, Result};
use sprs::{CompressedStorage, CsMat, CsMatBase, SpIndex};
use std::ops::Deref;

impl<T: Copy + Send + Sync> Csr<T> {
    /// Converts any `sprs` compressed matrix (CSR or CSC, owned or view, any
    /// index type). Indices or sizes beyond u32 are [`Error::U32Overflow`].
    /// The result has sorted rows (CSC input comes out of a transpose, which
    /// sorts; CSR input built with `new_unchecked` is sorted if it is not).
    pub fn from_sprs<I, Iptr, PS, IS, DS>(m: &CsMatBase<T, I, PS, IS, DS, Iptr>) -> Result<Self>
    where
        I: SpIndex,
        Iptr: SpIndex,
        PS: Deref<Target = [Iptr]>,
        IS: Deref<Target = [I]>,
        DS: Deref<Target = [T]>,
    {
        let (nrows, ncols) = (m.rows(), m.cols());
        to_u32("nrows", nrows)?;
        to_u32("ncols", ncols)?;
        let csc = m.storage() == CompressedStorage::CSC;
        // Outer/inner dimensions of the compressed storage.
        let (outer, inner) = if csc { (ncols, nrows) } else { (nrows, ncols) };
        let indptr = m.indptr();
        let raw = indptr.raw_storage();
        let to_usize = |x: Iptr| {
            x.try_index().ok_or_else(|| Error::InvalidMatrix {
                format: "sprs",
                message: "negative index pointer".into(),
            })
        };
        let base = to_usize(raw[0])?;
        let mut ptr = Vec::with_capacity(raw.len());
        let broken = |what: &str| Error::InvalidMatrix {
            format: "sprs",
            message: what.to_string(),
        };
        for &p in raw {
            let off = to_usize(p)?
                .checked_sub(base)
                .ok_or_else(|| broken("decreasing index pointers"))?;
            ptr.push(to_u32("sprs nnz", off)?);
        }
        let nnz = *ptr.last().unwrap() as usize;
        let indices = m
            .indices()
            .get(base..base + nnz)
            .ok_or_else(|| broken("index pointers beyond the index array"))?;
        let data = m
            .data()
            .get(base..base + nnz)
            .ok_or_else(|| broken("index pointers beyond the data array"))?;
        let mut idx = Vec::with_capacity(nnz);
        for (k, &i) in indices.iter().enumerate() {
            let i = i.try_index().ok_or_else(|| Error::InvalidMatrix {
                format: "sprs",
                message: format!("negative inner index at position {k}"),
            })?;
            idx.push(to_u32("sprs inner index", i)?);
        }
        let values = data.to_vec();
        let compressed = Csr::new(outer, inner, ptr, idx, values)?;
        if csc {
            Ok(compressed.transpose())
        } else {
            let mut csr = compressed;
            if !csr.has_sorted_columns() {
                csr.sort_indices();
            }
            Ok(csr)
        }
    }

    /// Converts to an owned `sprs` CSR matrix with `usize` indices. Unsorted
    /// rows are sorted (on a copy); duplicate coordinates, which `sprs` does
    /// not allow, are an [`Error::InvalidMatrix`] naming the row (merge them
    /// first with [`Csr::sum_duplicates`]).
    pub fn to_sprs(&self) -> Result<CsMat<T>> {
        let sorted;
        let m = if self.has_sorted_columns() {
            self
        } else {
            let mut c = self.clone();
            c.sort_indices();
            sorted = c;
            &sorted
        };
        m.check_canonical()?;
        let indptr: Vec<usize> = m.row_ptr().iter().map(|&p| p as usize).collect();
        let indices: Vec<usize> = m.col_idx().iter().map(|&c| c as usize).collect();
        CsMat::try_new((m.nrows(), m.ncols()), indptr, indices, m.values().to_vec()).map_err(
            |(_, _, _, e)| Error::InvalidMatrix {
                format: "sprs",
                message: e.to_string(),
            },
        )
    }
}

impl<T: Copy + Send + Sync> TryFrom<&CsMat<T>> for Csr<T> {
    type Error = Error;
    fn try_from(m: &CsMat<T>) -> Result<Self> {
        Csr::from_sprs(m)
    }
}

impl<T: Copy + Send + Sync> TryFrom<&Csr<T>> for CsMat<T> {
    type Error = Error;
    fn try_from(m: &Csr<T>) -> Result<Self> {
        m.to_sprs()
    }
}

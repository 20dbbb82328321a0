//! Sparse matrices with u32 indices: [`Csr`], [`Coo`], conversions (to and
//! from each other and [`sprs`]) and Matrix Market I/O ([`mm`]).
//!
//! Indices are u32 because every kernel and the GPU layout use u32: a size or
//! index that does not fit is an [`Error::U32Overflow`](crate::Error), never a
//! wrap. The heavy conversions (COO → CSR, transpose, sorting, merging
//! duplicates) run in parallel on rayon and allocate only their output.

mod coo;
mod csr;
mod interop;
pub mod mm;
mod par;

pub use coo::Coo;
pub use csr::Csr;
pub(crate) use par::par_rows_mut;

//! Sparse matrices with u32 indices: [`Csr`], [`Coo`], Matrix Market I/O.

mod csr;

pub use csr::Csr;

/// Placeholder until the COO type lands.
pub struct Coo<T>(std::marker::PhantomData<T>);

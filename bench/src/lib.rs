//! warpfit's benchmarks: the harnesses behind `warpfit bench spmv|apps|throttle|tuple`,
//! the cuSPARSE baseline they compare against, and their Markdown and SVG
//! reports. Benchmarks are not library code: they live here so that a crate
//! that depends on `warpfit` builds only what kernels need.
//!
//! - [`spmv`]: every decomposition of warpfit's SpMV against cuSPARSE;
//! - [`apps`]: every app's iteration time against its kernels' device
//!   time, CG against a CG whose SpMV is cuSPARSE's;
//! - [`throttle`]: the generated `spmv` kernel through its throttled handle
//!   under every policy, with its chart (`throttle_chart`);
//! - [`tuple`](mod@tuple): folds that carry tuples against the same folds on scalars
//!   (SpMV as a 1-tuple, min-plus with its argmin as a 2-tuple);
//! - [`cfd`]: the CFD flux against a hand-written Rodinia-style CUDA kernel;
//! - [`baseline`]: `cusparseSpMV` on a CSR matrix;
//! - [`spmm`]: warpfit's SpMM and the pruned network's inference against
//!   `cusparseSpMM` and cuBLAS;
//! - [`spmm_peers`]: `cusparseSpMM` and cuBLAS GEMM, the peers of an SpMM;
//! - [`spmm_throttled`]: SpMM under `#[throttled]` against the same kernel
//!   unthrottled and `cusparseSpMM`;
//! - [`input`]: what every harness shares: the matrix sources and the
//!   default suite, the f64 reference results are checked against, timed
//!   runs on CUDA events ([`EventTimer`](warpfit::__private::EventTimer))
//!   or the wall clock, and report formatting.

pub mod apps;
pub mod baseline;
pub mod cfd;
pub mod input;
pub mod spmm;
pub mod spmm_peers;
pub mod spmm_throttled;
pub mod spmv;
pub mod throttle;
mod throttle_chart;
pub mod tuple;

pub use input::{default_suite, MatrixSource};

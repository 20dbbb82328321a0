//! Ready-made kernels and their drivers: SpMV, PageRank, SSSP (Bellman-Ford,
//! and under the worklist drivers), BFS, connected components, minimum
//! spanning forests (Borůvka) and conjugate gradient, each built from `#[nested_reduce]` kernels (or, for the
//! worklist drivers, the push-form steps of [`push_kernels`]) over a CSR
//! matrix, the iterative ones with their data on the device. The
//! `warpfit` CLI and the examples run these; they double as worked examples
//! of the kernel language. Their benchmarks are the `warpfit-bench` crate.

mod cfd;
mod cg;
mod distributed;
mod distributed_bfs;
mod distributed_parts;
mod distributed_throttled;
mod driven;
mod graph;
mod kernels;
mod mst;
mod nn;
mod pipelined;
pub mod push_kernels;
mod throttled;
mod timing;

pub use cfd::{
    cfd, cfd_flux, cfd_flux_faces, cfd_from, cfd_observed, cfd_save, cfd_step_factor,
    cfd_throttled, cfd_time_step, check_finite, faces, first_non_finite, free_stream,
    free_stream_state, perturbed_free_stream, CfdResult, CfdThrottled,
    DEFAULT_ITERATIONS as CFD_ITERATIONS, GAMMA, RK, SIDE_FAR_FIELD, SIDE_INTERIOR, SIDE_WALL,
};
pub use cg::{
    cg, cg_observed, relative_residual, rhs_for_ones, smallest_tol, CgOptions, CgOrder, CgResult,
    CgScalar, OrderConfirmation, Preconditioner, RenumberedRun, MAX_RESTARTS,
};
pub use mst::{
    mst, mst_break, mst_hook, mst_jump, mst_lightest, mst_moved, mst_of, mst_relabel, MstGraph,
    SpanningForest, FRONTIER_SHARE as MST_FRONTIER_SHARE,
};
pub use timing::{IterationTimes, Timings, KEPT_ITERATIONS};

/// What the apps benchmark (`warpfit-bench`) times piece by piece: CG's
/// vectors and per-iteration launches, and the pipelined driver that runs
/// them, so that it runs the `cg` app's own loop with either SpMV. Not a
/// public API.
#[doc(hidden)]
pub mod bench_support {
    pub use super::cg::{CgIteration, CgLists, Vectors, PAP, RZ};
    pub use super::pipelined::{pipelined, slot_of, Probe, Rounds, DEPTH};
}

pub use distributed::{
    cg_group, pagerank_group, pagerank_group_overlapped, spmv_group, spmv_group_overlapped,
    GroupRun,
};
pub use distributed_bfs::{
    bfs_bits_apply, bfs_bits_bottom_up, bfs_bits_top_down, bfs_clear_words, bfs_count_level,
    bfs_frontier_bits, bfs_group, bfs_next_depth, BfsDirection, BFS_BOTTOM_UP_SHARE,
};
pub use distributed_parts::{
    pagerank_group_parts, pagerank_group_parts_overlapped, pagerank_on_parts, GraphParts,
};
pub use distributed_throttled::spmv_group_throttled;
pub use driven::{
    auto_driver, bfs_driven, bfs_driven_observed, cc_driven, cc_driven_observed, default_delta,
    sssp_driven, sssp_driven_observed, undirected, DriveOptions, DrivenApp, DrivenReport,
    DriverChoice, OrderChoice, DONATE_MIN, HYBRID_DOWN, HYBRID_UP,
};
pub use graph::{
    bfs, bfs_observed, pagerank, pagerank_observed, pagerank_throttled, sssp, sssp_observed, Graph,
    PageRankOptions, RENUMBER_FROM_ITERATIONS,
};
pub use kernels::{
    bfs_pull, bfs_step, cc_pull_min, cg_direction, cg_publish, cg_step, cg_step_jacobi, copy,
    count_changed, dangling_rank, dot, pagerank_contrib, pagerank_pull, pagerank_pull_add,
    pagerank_pull_resident, permute, relax, sparse_layer, spmm, spmv, spmv_add,
};
pub use nn::{infer, layer_error, nn_input, Inference, NetworkLayer, SparseNetwork};
pub use throttled::ThrottledRun;

use crate::runtime::Csr;
use crate::{Device, LaunchConfig, Result};

/// The input vector the `spmv` app multiplies by: `x[i] = 1 + (i mod 7) / 7`.
pub fn spmv_input(n: usize) -> Vec<f32> {
    (0..n).map(|i| 1.0 + (i % 7) as f32 / 7.0).collect()
}

/// `y = A·x` on `device`.
pub fn spmv_csr(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<f32>,
    x: &[f32],
) -> Result<Vec<f32>> {
    let mut y = vec![0.0f32; a.nrows()];
    spmv_into(device, config, a, x, &mut y)?;
    Ok(y)
}

/// `y = A·x` on `device`, into a caller's buffer (no allocation per call).
pub fn spmv_into(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<f32>,
    x: &[f32],
    y: &mut [f32],
) -> Result<()> {
    if x.len() != a.ncols() {
        return Err(crate::Error::length(
            "spmv: x (= ncols)",
            a.ncols(),
            x.len(),
        ));
    }
    if y.len() != a.nrows() {
        return Err(crate::Error::length(
            "spmv: y (= nrows)",
            a.nrows(),
            y.len(),
        ));
    }
    spmv::f32::launch_with(
        device,
        config,
        a.nrows(),
        a.row_ptr(),
        a.col_idx(),
        a.values(),
        x,
        y,
    )
}

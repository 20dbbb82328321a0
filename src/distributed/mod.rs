//! Kernels run by several devices at once: a [`DeviceGroup`] (GPUs joined
//! by NCCL, or CPU parts joined by host copies) and a [`Distributed`]
//! pattern, a kernel's tasks split over the group with the halo exchange
//! its gathers need.
//!
//! A `#[nested_reduce]` kernel reads, for each fine task `e`, the gathered
//! element `x[col[e]]`. Distributing it gives each member its own tasks
//! (the range array cut and rebased), its own fine tasks (the fine arrays
//! cut), and a local gathered array laid out as *owned entries, then the
//! halo*: the entries other members own that its fine tasks read, one slice
//! per sender. The index array is rewritten to that layout, so the kernel
//! itself is unchanged: each member launches it on its local arrays, with
//! its local task count. For a square kernel (gathered index = task index)
//! a member owns the gathered entries of its own tasks, so a local task `i`
//! reads and writes its own entry at `i` (as `dist[v]` in
//! [`fn@crate::apps::relax`] does).
//!
//! Before each launch, [`Distributed::exchange`] refreshes the halo: every
//! member packs the entries others read from it (one gather launch) and the
//! group moves them, with NCCL sends and receives of exactly those entries
//! grouped in one call, straight into the receivers' halo slices. Where a
//! member reads most of another's entries ([`WHOLE_BLOCK_SHARE`]) it takes
//! all of them, sent unpacked from the sender's `x`: that pair's exchange
//! is its share of an all-gather. The volume is [`ExchangeStats`]: it is
//! what the partition minimises ([`PartitionKind::Levels`] keeps
//! neighbours together).
//!
//! ```
//! use warpfit::apps::spmv;
//! use warpfit::distributed::{DeviceGroup, Distributed, PartitionKind};
//! use warpfit::runtime::gen;
//!
//! let a = gen::grid2d(32)?;
//! let x: Vec<f32> = (0..a.ncols()).map(|i| (i % 7) as f32).collect();
//! let group = DeviceGroup::cpu(3)?; // or DeviceGroup::cuda_all()?
//! let d = Distributed::new(&group, PartitionKind::Rows, a.row_ptr(), a.col_idx(), a.ncols())?;
//! let val = d.fine(a.values())?;
//! let xs = d.gathered(&x)?;
//! let ys = d.outputs::<f32>()?;
//! d.exchange(&xs)?; // the halo, before each launch
//! let cfg = warpfit::LaunchConfig::default();
//! for p in 0..group.len() {
//!     // Each member's part: its own tasks, local arrays, the unchanged kernel.
//!     let (rows, ptr, col) = (d.tasks(p), d.row_ptr(p), d.col(p));
//!     let launch = spmv::f32::prepare(d.device(p), &cfg, rows, ptr, col, val.part(p), xs.part(p), ys.part(p))?;
//!     launch.run()?;
//!     launch.check()?;
//! }
//! let y = d.collect_tasks(&ys)?; // in the caller's task order
//! let reference = warpfit::apps::spmv_csr(&warpfit::Device::cpu(), &cfg, &a, &x)?;
//! assert_eq!(y, reference);
//! # Ok::<(), warpfit::Error>(())
//! ```

mod halo;
mod pattern;
mod source;

pub use halo::HaloScalar;

/// The share of a sender's owned entries from which [`Distributed::new`]
/// has a receiver take all of them
/// ([`Distribution::with_whole_blocks`]): a whole block moves unpacked,
/// straight from the sender's `x`, as its share of an all-gather.
pub const WHOLE_BLOCK_SHARE: f64 = 0.85;
pub use pattern::{DistVec, Distributed, Exchange, ExchangeStats};
pub use source::{SourceBlock, SourcePattern};
pub use warpfit_gpu::{DeviceGroup, GroupSize, Transfer, DEFAULT_GROUP_TIMEOUT, MAX_GROUP};
pub use warpfit_runtime::distribute::{Distribution, PartLayout, PartitionKind};

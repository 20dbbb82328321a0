//! Cache-fit scheduling: the host side of `#[throttled]`, after Chen, Hayes
//! et al., *Locality-Aware Software Throttling for Sparse Matrix Operation
//! on GPUs* (ATC'18), Sections 3 and 4.
//!
//! From a work graph and its DBWP [`Partition`](crate::partition::Partition):
//!
//! - [`ThrottleOptions`]: the [`ThrottlePolicy`] (`org`, `org_r`, `cf`,
//!   `cfq`, `sj`, `sjq`, `auto`), the [`CacheSize`] to fit, the
//!   [`Partitioner`], the safety factor, the chunk size and remapping.
//! - [`CacheFitPlan`]: fine tasks reordered within each task so that each
//!   partition's share of a task is one contiguous segment, and the
//!   segments of every partition and of every SJ-tree node;
//!   [`CacheFitPlan::remapped`] is the same plan for the matrix remapped
//!   by Algorithm 5 ([`Remapping`](crate::partition::Remapping)), as
//!   `org_r` and the `remap` option run it.
//! - [`recombine`]: tree recombination (Algorithm 3), the cheapest set of
//!   SJ-tree nodes to launch given their stand-alone times, and
//!   [`profiling_passes`], the passes that measure them.
//! - [`ChunkQueue`]: the chunks a CF-Q or SJ-Q queue kernel dequeues.
//! - [`run_plan`]: the CPU backend following a plan, launch by launch, with
//!   the deterministic merge of tasks split across launches.
//! - [`run_carried`]: the CPU backend following a part-major plan
//!   ([`PartMajor`]) as the GPU's carried launches do, one pass per
//!   partition with each task's fold carried between passes; the cache it
//!   fits is a share of the last-level cache ([`cpu_cache_share`]).
//!
//! # Semantics
//!
//! Reordering fine tasks changes the order in which each task folds its
//! values, and splitting a task across partitions folds its pieces
//! separately: **throttling requires a commutative, associative reduce
//! operator**. Integer, boolean, `min` and `max` folds give the same
//! result under every schedule; float sums differ from the unthrottled
//! run's by rounding only. Split tasks are merged in partition order,
//! `init` once in front, so every schedule is deterministic.
//!
//! # Schedules as launches
//!
//! A schedule is a list of launches, each a range of partitions covering
//! `0..partitions` in order: CF launches every partition alone
//! ([`CacheFitPlan::cf_launches`]), SJ every chosen node
//! ([`CacheFitPlan::node_launches`] of [`Recombination::nodes`]), `org_r`
//! and CF-Q one launch of everything ([`CacheFitPlan::single_launch`]); a
//! queue policy runs each launch's chunks ([`ChunkQueue::chunks_of`]) from
//! one queue. The tasks without fine tasks run with the last launch.

mod carried;
mod cover;
mod cpu;
mod cpu_cache;
mod options;
mod parts;
mod plan;
mod queue;
mod recombine;

pub use carried::{run_carried, CarriedLayout, CarriedParts, CarriedRun};
pub use cover::CoverLayout;
pub use cpu::{run_plan, PlanOrder, PlanRun};
pub use cpu_cache::{
    cache_share, cpu_cache_share, last_level_cache, last_level_cache_in, CpuCache,
};
pub use options::{
    CacheSize, Partitioner, RemapOrder, ThrottleOptions, ThrottlePolicy, DEFAULT_CHUNK,
};
pub use parts::PartMajor;
pub use plan::CacheFitPlan;
pub use queue::ChunkQueue;
pub use recombine::{profiling_passes, recombine, Recombination};

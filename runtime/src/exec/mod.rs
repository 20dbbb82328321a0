//! The task model every `#[nested_reduce]` kernel shares, and the CPU executor.
//!
//! A kernel is one *coarse task* (a row, a vertex) that folds over a range of
//! *fine tasks* (its nonzeros, its edges). The macro turns the user's function
//! into an implementation of [`NestedKernel`]; [`cpu::run`] executes it with rayon,
//! over all tasks or over a [`TaskList`] whose segments may split one task into
//! several pieces that are folded back in list order, or over the items of
//! a [`Worklist`](crate::worklist::Worklist) (a data-driven round's frontier).

pub mod cpu;
mod kernel;
mod shared;
mod tasks;

pub use kernel::{Fault, GatherKernel, NestedKernel, Prechecked};
pub use shared::SharedOut;
pub use tasks::{DeviceFrontier, Segment, SplitTask, TaskList, Tasks};

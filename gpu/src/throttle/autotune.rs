//! Autotuning, kept apart from the schedules it tunes: it times candidates
//! inside real launches (each timing run computes the launch's result) and
//! the handle remembers what it chose. `auto` over the policies, warp
//! budgets and queues for single launches, and SJ-tree profiling.

pub(in crate::throttle) mod auto_by_model;
pub(in crate::throttle) mod auto_policy;
pub(in crate::throttle) mod levels_candidate;
pub(crate) mod model;
pub(in crate::throttle) mod sj_profile;
pub(in crate::throttle) mod timing;
pub(in crate::throttle) mod warp_budgets;

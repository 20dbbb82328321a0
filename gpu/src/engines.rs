//! Engines on the launch layer: carried launches (a fold carried across a
//! sequence of launches) and one long task split over a device, gathers and
//! layouts built on the device, the level order (breadth-first numbering
//! of a pattern on the device), and the worklist drivers' round backend.
//! Each engine loads its own kernels into its device's extension slot.

pub(crate) mod carried_launch;
pub(crate) mod gather_layouts;
pub(crate) mod level_order;
pub(crate) mod level_renumber;
pub(crate) mod level_roots;
pub(crate) mod one_task;
pub(crate) mod plan_kernels;
pub(crate) mod round_backend;
pub(crate) mod round_driving;
pub(crate) mod round_kernels;

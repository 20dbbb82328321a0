//! Worklists and shared arrays: what push-style kernels write.
//!
//! A push kernel (the `(lo..hi).for_each(..)` pattern of `#[nested_reduce]`)
//! scatters: each task updates elements that other tasks update too, through
//! the atomic intrinsics on [`Atomic<T>`] arrays, and pushes the elements it
//! activated onto a [`Worklist`], the next round's tasks. Both types run the
//! kernel's CPU twin and its plain Rust function; the device library mirrors
//! them (`gpu/cuda/atomic.cuh`, `gpu/cuda/worklist.cuh`). [`drivers`] schedules
//! the rounds of such kernels: topology-driven, data-driven (FIFO or
//! near-far) and hybrid, growing the lists on demand.
//!
//! ```
//! use warpfit_runtime::worklist::{atomic_min, push, Atomic, Worklist};
//!
//! // One relaxation step of SSSP from vertex 0 over edges 0→1 (w 2), 0→2 (w 5).
//! let mut dist = vec![0.0f32, f32::INFINITY, 4.0];
//! let mut next = Worklist::new(3, 3)?;
//! let shared = Atomic::from_mut_slice(&mut dist);
//! for (u, w) in [(1usize, 2.0f32), (2, 5.0)] {
//!     let nd = shared[0].load() + w;
//!     if nd < atomic_min(&shared[u], nd) {
//!         push(&next, u as u32);
//!     }
//! }
//! assert_eq!(next.items(), [1]);
//! assert_eq!(dist, [0.0, 2.0, 4.0]);
//! # Ok::<(), warpfit_runtime::Error>(())
//! ```

mod atomic;
pub mod drivers;
mod list;

pub use atomic::{
    atomic_add, atomic_apply, atomic_cas, atomic_max, atomic_min, atomic_or, try_atomic_apply,
    Atomic, AtomicInt, AtomicScalar,
};
pub use list::{default_capacity, push, PushError, Worklist};

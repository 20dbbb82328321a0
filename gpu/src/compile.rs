//! NVRTC compilation of a kernel's entry points to CUBIN, with an on-disk
//! cache that checks what it loads.
//!
//! A translation unit is the device library (passed to NVRTC as named
//! headers `warpfit/*.cuh`: NVRTC cannot read files), the kernel's
//! generated source, and one `WARPFIT_ENTRY_POINT_<name>` line per entry
//! point it instantiates ([`entry_point_unit`]); [`translation_unit`] holds
//! all of them. NVRTC's time goes almost entirely to optimizing and
//! assembling each entry point (the front end's share is small:
//! `docs/bench/constants-gpu.md`, "compile"), so the device compiles one
//! module per entry point, when a launch
//! first needs it, rather than all of the library's entry points at once
//! (see `BENCHMARKS.md`, "NVRTC compile time").
//!
//! CUBIN for the device's exact architecture is cached under
//! `$WARPFIT_CACHE_DIR` (else the user cache directory), one file per
//! translation unit, keyed by a hash of the full source, the library, the
//! architecture, the NVRTC version and the options: a warm launch loads the
//! file and never runs NVRTC. Each file holds a checksum, the source and the
//! binary ([`CACHE_FORMAT`]); a file whose checksum, lengths or source do not
//! match is recompiled and replaced, never handed to the driver. Files are
//! written to a temporary name and renamed, and the directory is created
//! private to the user (0700); a directory that other users may write is
//! not used at all, since whatever it holds would be loaded as code.
//!
//! One concern per file: `units` (the sources), `nvrtc` (the compiler),
//! `disk_cache` (the cache and its one hash), `device_modules` (a kernel's
//! entry points loaded on a device), `compile_ahead` (compiles started on
//! threads of their own before they are needed).

pub(crate) mod compile_ahead;
pub(crate) mod device_modules;
pub(crate) mod disk_cache;
pub(crate) mod nvrtc;
pub(crate) mod units;

pub use crate::arch::Arch;
pub use disk_cache::{
    cache_entry_path, cache_is_empty, compile_and_cache, compile_cached, default_cache_dir,
    lookup_cached, store_cached, CACHE_DIR_ENV, CACHE_FORMAT,
};
pub use nvrtc::{compile_uncached, nvrtc_version, warm_up, Compiled};
pub use units::{
    entry_point_unit, layout_unit, levels_unit, plan_unit, rounds_unit, task_cut_unit,
    translation_unit, worklist_unit, LAYOUT_ENTRY_POINTS, LEVELS_ENTRY_POINTS, LIBRARY_HEADERS,
    PLAN_ENTRY_POINTS, ROUNDS_ENTRY_POINTS, TASK_CUT_ENTRY_POINTS, WORKLIST_ENTRY_POINTS,
};

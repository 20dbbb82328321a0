//! The GPU the root crate's GPU suites run on: `None` (the test skips,
//! recorded by [`skip::skipped`]) when there is none, unless
//! `WARPFIT_REQUIRE_GPU=1` (set by `scripts/gpu-check`), where a missing GPU
//! fails the test.

pub mod skip;

use warpfit::Device;

/// CUDA device 0, or `None` to skip.
pub fn gpu() -> Option<Device> {
    match Device::open_cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            if std::env::var("WARPFIT_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("WARPFIT_REQUIRE_GPU=1 and no CUDA device: {e}");
            }
            skip::skipped(env!("CARGO_CRATE_NAME"), &e);
            None
        }
    }
}

//! The round backend's own kernels (`rounds.cuh`) on one device, and the
//! host mirror of what they write: the round state, the round records in
//! the host-mapped ring and their flags.

use crate::abi::BLOCK;
use crate::compile::device_modules::{load_function, load_unit};
use crate::compile::units::rounds_unit;
use crate::driver::cuda_device::{CudaDevice, DeviceExtension};
use crate::driver::errors::cuda_err;
use crate::launch::cuda_launch::CudaLaunch;
use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig as CuLaunch};
use std::sync::Arc;
use warpfit_runtime::worklist::drivers::Outcome;
use warpfit_runtime::{Error, Result};

/// Round records in the host-mapped ring: rounds in flight at most before
/// the oldest one's outcome is read early (the driver keeps `2k - 1` in
/// flight, so `k` up to 32 never waits for that).
pub(crate) const RING: usize = 64;

/// `u64` words of a `RoundRecord` (rounds.cuh).
pub(crate) const RECORD_WORDS: usize = 7;

/// `u64` words of the `RoundState` (rounds.cuh): five counters, then the
/// halt and skip words.
pub(crate) const STATE_WORDS: usize = 6;

/// `RoundRecord::flags` (`ROUND_*` in rounds.cuh).
pub(crate) const ROUND_SKIPPED: u32 = 1;
pub(crate) const ROUND_OUT_OVERFLOWED: u32 = 2;
pub(crate) const ROUND_DEFERRED_OVERFLOWED: u32 = 4;
pub(crate) const ROUND_FAULT: u32 = 8;

/// The round backend's kernels on one device (`rounds.cuh`): compiled
/// once, like the worklist library.
pub(crate) struct RoundKernels {
    pub(super) module: Arc<CudaModule>,
    pub(super) begin: CudaFunction,
    pub(super) finish: CudaFunction,
    pub(super) resume: CudaFunction,
    pub(super) iota: CudaFunction,
}

impl DeviceExtension for RoundKernels {
    /// Compiles (or reads from the kernel cache) and loads the kernels.
    fn load(dev: &CudaDevice) -> Result<Self> {
        let module = load_unit(dev, "rounds", &rounds_unit())?;
        let f = |entry: &str| load_function(&module, "round", entry);
        Ok(RoundKernels {
            begin: f("wf_round_begin")?,
            finish: f("wf_round_finish")?,
            resume: f("wf_round_resume")?,
            iota: f("wf_round_iota")?,
            module,
        })
    }
}

impl RoundKernels {
    /// A key type's kernel `name` of the same module.
    pub(crate) fn function(&self, name: &str) -> Result<CudaFunction> {
        self.module
            .load_function(name)
            .map_err(cuda_err(format!("round kernel `{name}`")))
    }
}

pub(crate) fn grid(blocks: u32) -> CuLaunch {
    CuLaunch {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A round's record as its [`Outcome`], or the kernel's fault as an error.
pub(crate) fn decode(index: u32, w: &[u64; RECORD_WORDS], launch: &CudaLaunch) -> Result<Outcome> {
    let (got, flags) = (w[0] as u32, (w[0] >> 32) as u32);
    if got != index {
        return Err(Error::invalid(format!(
            "round {index}: its record names round {got} (the round backend's ring was overrun)"
        )));
    }
    if flags & ROUND_SKIPPED != 0 {
        return Ok(Outcome::skipped(index));
    }
    if flags & ROUND_FAULT != 0 {
        let e = launch
            .check_and_clear_fault()
            .err()
            .unwrap_or_else(|| Error::invalid("the kernel recorded a fault that vanished"));
        return Err(Error::invalid(format!(
            "kernel fault in round {index}: {e}"
        )));
    }
    Ok(Outcome {
        index,
        skipped: false,
        processed: w[1],
        pushed: w[2],
        out_overflowed: flags & ROUND_OUT_OVERFLOWED != 0,
        deferred: w[3],
        deferred_len: w[4],
        deferred_overflowed: flags & ROUND_DEFERRED_OVERFLOWED != 0,
        dropped: w[5],
        min_key: f64::from_bits(w[6]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::units::{LIBRARY_HEADERS, ROUNDS_ENTRY_POINTS};
    use crate::engines::round_backend::RoundKey;

    fn header() -> &'static str {
        LIBRARY_HEADERS
            .iter()
            .find(|(n, _)| *n == "warpfit/rounds.cuh")
            .map(|(_, h)| *h)
            .unwrap()
    }

    #[test]
    fn the_flags_and_layouts_match_the_header() {
        let h = header();
        for (name, v) in [
            ("ROUND_SKIPPED", ROUND_SKIPPED),
            ("ROUND_OUT_OVERFLOWED", ROUND_OUT_OVERFLOWED),
            ("ROUND_DEFERRED_OVERFLOWED", ROUND_DEFERRED_OVERFLOWED),
            ("ROUND_FAULT", ROUND_FAULT),
        ] {
            assert!(
                h.contains(&format!("constexpr uint32_t {name} = {v};")),
                "{name}"
            );
        }
        // RoundState: five u64 counters, then two u32 words.
        let state = h
            .split("struct RoundState {")
            .nth(1)
            .and_then(|s| s.split("};").next())
            .unwrap();
        let (longs, ints) = (
            state.matches("unsigned long long ").count(),
            state.matches("uint32_t ").count(),
        );
        assert_eq!((longs * 8 + ints * 4).div_ceil(8), STATE_WORDS);
        assert!(state.trim_start().starts_with("unsigned long long tasks;"));
        // RoundRecord: index and flags in one word, then six u64.
        let record = h
            .split("struct RoundRecord {")
            .nth(1)
            .and_then(|s| s.split("};").next())
            .unwrap();
        assert_eq!(
            record.matches("unsigned long long ").count() + 1,
            RECORD_WORDS
        );
        // Every key type has its entry points.
        for name in [f32::NAME, u32::NAME] {
            for ep in ["split", "min_key"] {
                assert!(
                    ROUNDS_ENTRY_POINTS.contains(&format!("wf_round_{ep}_{name}").as_str()),
                    "{ep} {name}"
                );
            }
        }
    }
}

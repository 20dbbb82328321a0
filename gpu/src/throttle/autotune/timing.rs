//! Timing a candidate inside real iterations: the outputs are snapshot
//! before and restored after, so that every timing run computes the
//! launch's own result; each candidate runs a few times and the median is
//! kept.

use crate::config::LaunchConfig;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::event_timer::EventTimer;
use crate::spec::ParamKind;
use crate::throttle::handle::{Schedule, Throttled};
use warpfit_runtime::Result;

/// Timed runs per candidate or SJ pass (median taken).
pub(in crate::throttle) const AUTO_SAMPLES: usize = 5;

/// The median of `v` (0 for none).
pub(in crate::throttle) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Copies `bytes` bytes between device addresses on `dev`'s stream.
fn dtod(dev: &CudaDevice, dst: u64, src: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the callers pass two device allocations of at least `bytes`.
    unsafe { cudarc::driver::result::memcpy_dtod_async(dst, src, bytes, dev.stream().cu_stream()) }
        .map_err(crate::driver::errors::cuda_err(format!(
            "copying {bytes} bytes on the device"
        )))
}

impl Throttled {
    /// Copies of the outputs as staged, so that every timing run starts
    /// from what the launch was given (an epilogue may read its output).
    pub(in crate::throttle) fn snapshot(&self) -> Result<Vec<(usize, DeviceBuffer<u8>)>> {
        let Some(dev) = self.device.cuda() else {
            return Ok(Vec::new());
        };
        (0..self.spec.params.len())
            .filter(|&i| self.spec.params[i].kind == ParamKind::Output)
            .map(|i| {
                let (ptr, len) = self.staged_ptr(i)?;
                let bytes = len * self.spec.params[i].ty.size();
                let copy = DeviceBuffer::<u8>::zeros(dev, bytes)?;
                dtod(dev, copy.device_ptr(dev), ptr, bytes)?;
                Ok((i, copy))
            })
            .collect()
    }

    pub(in crate::throttle) fn restore(
        &self,
        snapshot: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<()> {
        let Some(dev) = self.device.cuda() else {
            return Ok(());
        };
        for (i, copy) in snapshot {
            let (ptr, _) = self.staged_ptr(*i)?;
            dtod(dev, ptr, copy.device_ptr(dev), copy.len())?;
        }
        Ok(())
    }

    /// One run of `s` from the snapshot's outputs, timed: the launch's own
    /// result, computed again by each candidate.
    pub(in crate::throttle) fn time_once(
        &self,
        s: &Schedule,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<f64> {
        self.restore(snap)?;
        let ms = timer.time_ms(1, &mut || self.run_once(s))?;
        s.runs.check()?;
        Ok(ms)
    }

    /// The median device time of a run of `s` (permutations included),
    /// each run from the snapshot's outputs.
    pub(in crate::throttle) fn time(
        &self,
        s: &Schedule,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<f64> {
        self.restore(snap)?;
        self.run_once(s)?;
        s.runs.check()?;
        let ms = (0..AUTO_SAMPLES)
            .map(|_| self.time_once(s, timer, snap))
            .collect::<Result<Vec<_>>>()?;
        Ok(median(ms))
    }

    /// `s`'s policy as one launch over `s`'s layout under `config`, and its
    /// time.
    pub(in crate::throttle) fn timed_like(
        &self,
        dev: &CudaDevice,
        s: &Schedule,
        config: &LaunchConfig,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<(Schedule, f64)> {
        let layout = s.layouts.first().cloned();
        let t = self.single_with(dev, s.policy, layout, config)?;
        let ms = self.time(&t, timer, snap)?;
        Ok((t, ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_sample_and_zero_for_none() {
        assert_eq!(median(vec![]), 0.0);
        assert_eq!(median(vec![3.0]), 3.0);
        assert_eq!(median(vec![5.0, 1.0, 4.0, 2.0, 3.0]), 3.0);
        // An even count takes the upper middle.
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
        assert_eq!(AUTO_SAMPLES % 2, 1, "an odd count has one middle");
    }
}

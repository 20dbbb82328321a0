//! Timing work on a device's stream with CUDA events, for benchmarks that
//! split an iteration into its kernels (`warpfit bench apps`).

use crate::buffer::cuda_err;
use crate::device::CudaDevice;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaEvent;
use warpfit_runtime::Result;

/// A pair of CUDA events on a device's stream.
pub struct EventTimer {
    dev: CudaDevice,
    start: CudaEvent,
    end: CudaEvent,
}

impl std::fmt::Debug for EventTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventTimer")
            .field("device", &self.dev.ordinal())
            .finish()
    }
}

impl EventTimer {
    /// Two events on `dev`'s context.
    ///
    /// # Errors
    /// CUDA errors creating the events.
    pub fn new(dev: &CudaDevice) -> Result<Self> {
        let ev = || {
            dev.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda_err("creating an event"))
        };
        Ok(EventTimer {
            dev: dev.clone(),
            start: ev()?,
            end: ev()?,
        })
    }

    /// The device time, in milliseconds, of the work `enqueue` puts on the
    /// device's stream, divided by `repeats`: `enqueue` is called `repeats`
    /// times between one start and one end event, and the host then waits
    /// for the end event.
    ///
    /// Back-to-back repeats keep the stream busy, so the host's launch
    /// latency of all but the first call is hidden behind the device's
    /// work; only when one call's device work is shorter than its host-side
    /// cost does the host's cost show (the time is then an upper bound of
    /// the device time).
    ///
    /// # Errors
    /// `enqueue`'s errors, and CUDA errors recording or reading the events.
    pub fn time_ms(&self, repeats: usize, enqueue: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let repeats = repeats.max(1);
        self.start
            .record(self.dev.stream())
            .map_err(cuda_err("recording an event"))?;
        for _ in 0..repeats {
            enqueue()?;
        }
        self.end
            .record(self.dev.stream())
            .map_err(cuda_err("recording an event"))?;
        self.end
            .synchronize()
            .map_err(cuda_err("waiting for an event"))?;
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .map_err(cuda_err("reading an event"))?;
        Ok(f64::from(ms) / repeats as f64)
    }
}

//! Timing work on a device's stream with CUDA events, for benchmarks that
//! split an iteration into its kernels (`warpfit bench apps`).

use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::errors::cuda_err;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaEvent;
use std::cell::RefCell;
use warpfit_runtime::Result;

/// A pair of CUDA events on a device's stream, and a buffer whose clearing
/// occupies the device before each timing (see [`EventTimer::time_ms`]).
pub struct EventTimer {
    dev: CudaDevice,
    start: CudaEvent,
    end: CudaEvent,
    /// Cleared before the start event; `None` when the device had no room.
    lead: RefCell<Option<DeviceBuffer<u8>>>,
}

/// The lead buffer's size: clearing it must keep the device busy longer
/// than the host needs to enqueue a dozen launches (the arithmetic:
/// `docs/bench/constants-gpu.md`, "LEAD_BYTES").
const LEAD_BYTES: usize = 512 << 20;

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
        let (free, _) = dev
            .context()
            .mem_get_info()
            .map_err(cuda_err("reading free memory"))?;
        // Without room the timer still works, with the host's launch
        // latency possibly showing in short kernels' times.
        let lead = DeviceBuffer::zeros(dev, LEAD_BYTES.min(free / 8)).ok();
        let t = Self::events_only(dev)?;
        *t.lead.borrow_mut() = lead;
        Ok(t)
    }

    /// Two events and no lead buffer: for work long beside the host's launch
    /// latency (a whole SpMV over millions of rows), timed once, where
    /// allocating and clearing 512 MiB would cost more than it hides.
    ///
    /// # Errors
    /// CUDA errors creating the events.
    pub fn events_only(dev: &CudaDevice) -> Result<Self> {
        let ev = || {
            dev.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda_err("creating an event"))
        };
        Ok(EventTimer {
            dev: dev.clone(),
            start: ev()?,
            end: ev()?,
            lead: RefCell::new(None),
        })
    }

    /// The device time, in milliseconds, of the work `enqueue` puts on the
    /// device's stream, divided by `repeats`: `enqueue` is called `repeats`
    /// times between one start and one end event, and the host then waits
    /// for the end event.
    ///
    /// Before the start event the timer enqueues the clearing of a 512 MiB
    /// buffer, which keeps the device busy (about 0.2 ms) while the host
    /// enqueues the repeats: the start event completes when the clearing
    /// does, and the repeats then run back to back, so the host's launch
    /// latency stays out of the time even for kernels shorter than it
    /// (unless enqueueing them all takes longer than the clearing). The
    /// clearing also evicts the L2 cache before the first repeat, as the
    /// other kernels of an iteration partly do.
    ///
    /// # Errors
    /// `enqueue`'s errors, and CUDA errors recording or reading the events.
    pub fn time_ms(&self, repeats: usize, enqueue: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let repeats = repeats.max(1);
        if let Some(lead) = self.lead.borrow_mut().as_mut() {
            lead.clear(&self.dev)?;
        }
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

    /// The device time of each of `parts` pieces of work enqueued one after
    /// another (`enqueue(i)` for `i` in `0..parts`), in milliseconds: an
    /// event between consecutive pieces, so each piece is timed as it runs
    /// in the sequence (with the cache as the pieces before left it). The
    /// lead buffer is cleared first, as in [`time_ms`](Self::time_ms).
    ///
    /// # Errors
    /// `enqueue`'s errors, and CUDA errors recording or reading the events.
    pub fn time_each_ms(
        &self,
        parts: usize,
        enqueue: &mut dyn FnMut(usize) -> Result<()>,
    ) -> Result<Vec<f64>> {
        let events = (0..parts)
            .map(|_| {
                self.dev
                    .context()
                    .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(cuda_err("creating an event"))
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some(lead) = self.lead.borrow_mut().as_mut() {
            lead.clear(&self.dev)?;
        }
        self.start
            .record(self.dev.stream())
            .map_err(cuda_err("recording an event"))?;
        for (i, e) in events.iter().enumerate() {
            enqueue(i)?;
            e.record(self.dev.stream())
                .map_err(cuda_err("recording an event"))?;
        }
        if let Some(last) = events.last() {
            last.synchronize()
                .map_err(cuda_err("waiting for an event"))?;
        }
        let mut before = &self.start;
        let mut ms = Vec::with_capacity(parts);
        for e in &events {
            ms.push(f64::from(
                before.elapsed_ms(e).map_err(cuda_err("reading an event"))?,
            ));
            before = e;
        }
        Ok(ms)
    }
}

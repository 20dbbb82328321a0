//! Faults of launches that returned before their kernels ran: each
//! launch's fault record, kept on its device until the next check, and read
//! back as the error the CPU twin returns ([`CudaDevice::synchronize`]).

use crate::abi::FaultRecord;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::{CudaDevice, DeviceExtension};
use crate::driver::errors::poisoned;
use crate::launch::device_tasks::FaultSegments;
use crate::launch::fault::fault_error;
use crate::spec::KernelSpec;
use std::sync::Mutex;
use warpfit_runtime::{Error, Result};

/// Launches left unchecked at most: the one after these waits for the
/// device and checks them, which bounds the records kept (a loop of
/// asynchronous launches then waits once every this many).
const MAX_PENDING_LAUNCHES: usize = 256;

/// The fault record of a launch that returned before its kernels ran,
/// with what turning it into the twin's error needs.
pub(crate) struct PendingFault {
    spec: KernelSpec,
    fault: DeviceBuffer<u64>,
    lens: Vec<Option<u64>>,
    segments: FaultSegments,
}

impl PendingFault {
    /// The launch's fault as the CPU twin's error (reading the record
    /// waits for the device).
    pub(crate) fn check(&self, dev: &CudaDevice) -> Result<()> {
        let lens = |i: usize| self.lens.get(i).copied().flatten();
        read_fault(dev, &self.spec, &self.fault, lens, |i| {
            self.segments.get(dev, i)
        })
    }
}

impl PendingFault {
    /// The record of a launch of `spec` whose fault is in `fault`, with its
    /// arrays' lengths and its task list's segments.
    pub(crate) fn new(
        spec: KernelSpec,
        fault: DeviceBuffer<u64>,
        lens: Vec<Option<u64>>,
        segments: FaultSegments,
    ) -> Self {
        PendingFault {
            spec,
            fault,
            lens,
            segments,
        }
    }
}

/// A device's fault records of launches not yet checked (a device-resident
/// array, no host output), oldest first, until the next check.
#[derive(Default)]
struct PendingFaults {
    launches: Mutex<Vec<PendingFault>>,
}

impl DeviceExtension for PendingFaults {
    fn load(_: &CudaDevice) -> Result<Self> {
        Ok(PendingFaults::default())
    }
}

impl CudaDevice {
    /// Waits for all enqueued work, then reports the first fault of the
    /// asynchronous launches since the last check (plain launches with a
    /// device-resident array and no host output; prepared launches report
    /// theirs through their own `check`).
    pub fn synchronize(&self) -> Result<()> {
        self.wait_idle()?;
        self.check_pending_faults()
    }
    /// Reports the first fault among the asynchronous launches not yet
    /// checked (waiting for them), and forgets them all.
    pub(crate) fn check_pending_faults(&self) -> Result<()> {
        let faults = self.extension::<PendingFaults>()?;
        let pending = std::mem::take(&mut *faults.launches.lock().map_err(poisoned)?);
        pending.iter().try_for_each(|p| p.check(self))
    }

    /// Keeps the fault record of a launch that returned without waiting;
    /// past [`MAX_PENDING_LAUNCHES`], checks them all now.
    pub(crate) fn defer_fault_check(&self, launch: PendingFault) -> Result<()> {
        let faults = self.extension::<PendingFaults>()?;
        let full = {
            let mut pending = faults.launches.lock().map_err(poisoned)?;
            pending.push(launch);
            pending.len() >= MAX_PENDING_LAUNCHES
        };
        if full {
            self.check_pending_faults()?;
        }
        Ok(())
    }
}

pub(crate) fn read_back_error(spec: &KernelSpec, what: &str) -> Error {
    Error::Cuda {
        context: format!("kernel `{}`", spec.name),
        message: format!("the {what} read back have the wrong size"),
    }
}

/// Reads `fault` (waiting for the stream) and turns a recorded fault into
/// the CPU twin's error; `array_len` and `segment` as for [`fault_error`].
pub(crate) fn read_fault(
    dev: &CudaDevice,
    spec: &KernelSpec,
    fault: &DeviceBuffer<u64>,
    array_len: impl Fn(usize) -> Option<u64>,
    segment: impl Fn(usize) -> Option<warpfit_runtime::Segment>,
) -> Result<()> {
    let words: [u64; FaultRecord::WORDS] = fault
        .to_vec(dev)?
        .try_into()
        .map_err(|_| read_back_error(spec, "fault record"))?;
    let rec = FaultRecord::from_words(&words);
    match fault_error(spec, &rec, array_len, segment) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

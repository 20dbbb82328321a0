//! Device memory mapped ahead of the buffers that will take it
//! ([`Device::keep_memory_for`]), on a thread of its own.
//!
//! A buffer larger than what the device's pool keeps unused maps fresh
//! pages when it is allocated: about 4 ms a GiB on an H200 (BENCHMARKS.md,
//! "Device memory kept for reuse"), all of it host time at the call. A
//! caller that knows it will allocate large buffers after work that keeps
//! the device busy (CG renumbering its matrix after the throttled SpMV's
//! decision) maps them on a thread while that work runs; the pool keeps the
//! memory once freed, and the later allocations take it.

use crate::driver::cuda_device::CudaDevice;
use crate::driver::device::Device;
use crate::driver::errors::cuda_err;
use std::thread::JoinHandle;
use warpfit_runtime::Result;

/// Share of the free device memory a reservation may take: the work it
/// overlaps allocates its own buffers meanwhile, and must not find the
/// memory taken by buffers that are only being mapped.
const MOST_OF_FREE: u64 = 3;

/// Memory being mapped into a device's pool by [`Device::keep_memory_for`].
/// Dropping it waits for the thread.
#[derive(Debug)]
pub struct MemoryReservation {
    thread: Option<JoinHandle<Result<()>>>,
}

impl MemoryReservation {
    /// Waits until the memory is in the pool.
    ///
    /// # Errors
    /// A device error of the allocations or frees (the memory is then
    /// mapped by the buffers that need it, as without a reservation).
    pub fn wait(mut self) -> Result<()> {
        match self.thread.take() {
            None => Ok(()),
            Some(t) => t.join().unwrap_or_else(|_| {
                Err(warpfit_runtime::Error::invalid(
                    "the thread mapping device memory ahead of its buffers panicked",
                ))
            }),
        }
    }

    /// Whether a thread is mapping memory (false where nothing needed it).
    pub fn is_mapping(&self) -> bool {
        self.thread.is_some()
    }
}

impl Drop for MemoryReservation {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            // The result only says whether the later buffers find the
            // memory mapped; they allocate it themselves otherwise.
            let _ = t.join();
        }
    }
}

impl Device {
    /// Maps device memory for buffers of `bytes` each on a thread of its
    /// own, then frees it into the device's memory pool, which keeps it
    /// (see [`Device::release_unused_memory`]): buffers of those sizes
    /// allocated after [`MemoryReservation::wait`] take that memory instead
    /// of mapping fresh pages. For a caller that will allocate large
    /// buffers after work that keeps the device busy: the mapping overlaps
    /// that work. The allocations are enqueued on the device's stream,
    /// behind the work before them, and take no memory a buffer uses.
    ///
    /// Nothing is mapped on the CPU backend, where the pool already keeps
    /// that much unused, or where the buffers would take more than a third
    /// of the free memory.
    ///
    /// # Examples
    /// ```
    /// # fn main() -> warpfit_gpu::Result<()> {
    /// use warpfit_gpu::Device;
    /// let device = Device::Cpu;
    /// let reservation = device.keep_memory_for(&[1 << 30]);
    /// // ... work that keeps the device busy ...
    /// reservation.wait()?;
    /// let big = device.alloc::<u8>(1 << 30)?;
    /// # drop(big);
    /// # Ok(())
    /// # }
    /// ```
    pub fn keep_memory_for(&self, bytes: &[usize]) -> MemoryReservation {
        let none = MemoryReservation { thread: None };
        let Device::Cuda(dev) = self else {
            return none;
        };
        let total = bytes
            .iter()
            .fold(0u64, |s, &b| s.saturating_add(b as u64));
        let Ok((free, _)) = dev.context().mem_get_info() else {
            return none;
        };
        if total == 0
            || dev.pooled_unused_bytes() >= total
            || total > (free as u64) / MOST_OF_FREE
        {
            return none;
        }
        let (dev, bytes) = (dev.clone(), bytes.to_vec());
        MemoryReservation {
            thread: Some(std::thread::spawn(move || map_and_free(&dev, &bytes))),
        }
    }
}

/// Allocates every buffer of `bytes` on `dev`'s stream (uninitialised: no
/// memset joins the stream), then frees them all into the pool.
fn map_and_free(dev: &CudaDevice, bytes: &[usize]) -> Result<()> {
    let mut held = Vec::with_capacity(bytes.len());
    for &b in bytes {
        // SAFETY: the memory is never read; it is freed unread below.
        let slice = unsafe { dev.stream().alloc::<u8>(b.max(1)) }
            .map_err(cuda_err(format!("mapping {b} bytes of device memory ahead")))?;
        held.push(slice);
    }
    drop(held);
    Ok(())
}

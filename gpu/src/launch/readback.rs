//! Small asynchronous downloads ([`Readback`]): a ring of page-locked host
//! slots, so that an iterative driver can read round `k`'s few numbers (a
//! residual, a changed count) while the device already runs round `k + 1`.
//!
//! [`DeviceVec::download`] waits for the whole stream: every round then pays
//! a host round trip during which the device idles (measured:
//! `docs/bench/constants-gpu.md`, "Readback"). With a readback the driver keeps `depth`
//! rounds enqueued and waits only for the oldest one's copy; the device
//! stays busy as long as a round takes longer than the host needs to decide
//! and launch the next. The price is up to `depth - 1` rounds run past the
//! one that stops the loop, so a driver uses it only where extra rounds do
//! no harm (a fixed point stays fixed; CG freezes its iterate once it has
//! converged).
//!
//! On the CPU backend launches are synchronous: [`Readback::push`] copies at
//! once.

use crate::driver::cuda_device::CudaDevice;
use crate::driver::device::Device;
use crate::driver::errors::cuda_err;
use crate::launch::device_vec::DeviceVec;
use crate::spec::Scalar;
use cudarc::driver::{CudaEvent, PinnedHostSlice};
use std::collections::VecDeque;
use warpfit_runtime::{Error, Result};

/// A ring of `depth` host slots of `len` elements each, filled from
/// [`DeviceVec`]s in stream order and taken oldest first.
///
/// ```
/// use warpfit_gpu::Device;
/// # fn main() -> warpfit_gpu::Result<()> {
/// let device = Device::cpu();
/// let residual = device.upload(&[0.5f64])?;
/// let mut rb = device.readback::<f64>(1, 2)?;
/// rb.push(&residual)?; // enqueued behind the launches so far
/// assert_eq!(rb.take()?, &[0.5]); // waits for that copy only
/// # Ok(())
/// # }
/// ```
pub struct Readback<T: Scalar> {
    len: usize,
    slots: Vec<Slot<T>>,
    /// Slot ids filled and not yet taken, oldest first, and whether the
    /// entry is a copy (`false`: a marker, [`Readback::push_marker`]).
    pending: VecDeque<(usize, bool)>,
    /// The slot the next push fills.
    next: usize,
    /// The slot the last take returned (its contents stay valid until the
    /// next push reuses it).
    taken: Vec<T>,
}

enum Slot<T> {
    Host(Vec<T>),
    Cuda {
        device: CudaDevice,
        /// `len` elements as bytes, written by the copy.
        host: PinnedHostSlice<u8>,
        /// Recorded after the copy; the host waits on it (spin-wait, not the
        /// blocking-sync event of the pinned slice, whose wake-up costs tens
        /// of microseconds).
        done: CudaEvent,
    },
}

impl<T: Scalar> std::fmt::Debug for Readback<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readback")
            .field("type", &T::TYPE.rust_name())
            .field("len", &self.len)
            .field("depth", &self.slots.len())
            .field("pending", &self.pending.len())
            .finish()
    }
}

/// The most slots a readback may have: a driver needs a handful, and each
/// CUDA slot pins host memory and holds an event.
pub const MAX_READBACK_DEPTH: usize = 64;
/// The most elements one slot may hold: readbacks are for a few numbers
/// per round, not arrays (use [`DeviceVec::download`]).
pub const MAX_READBACK_LEN: usize = 1 << 16;

impl Device {
    /// A [`Readback`] of `depth` slots of `len` elements of `T` on this
    /// device.
    ///
    /// # Errors
    /// `len` or `depth` of 0 or above [`MAX_READBACK_LEN`] /
    /// [`MAX_READBACK_DEPTH`]; CUDA allocation errors.
    pub fn readback<T: Scalar>(&self, len: usize, depth: usize) -> Result<Readback<T>> {
        if len == 0 || len > MAX_READBACK_LEN {
            return Err(Error::invalid(format!(
                "a readback holds 1 to {MAX_READBACK_LEN} elements per slot, asked {len}"
            )));
        }
        if depth == 0 || depth > MAX_READBACK_DEPTH {
            return Err(Error::invalid(format!(
                "a readback has 1 to {MAX_READBACK_DEPTH} slots, asked {depth}"
            )));
        }
        let bytes = len * T::TYPE.size();
        let slots = (0..depth)
            .map(|_| match self {
                Device::Cpu => Ok(Slot::Host(vec![zero::<T>(); len])),
                Device::Cuda(d) => cuda_slot(d, bytes),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Readback {
            len,
            slots,
            pending: VecDeque::with_capacity(depth),
            next: 0,
            taken: vec![zero::<T>(); len],
        })
    }
}

fn cuda_slot<T>(d: &CudaDevice, bytes: usize) -> Result<Slot<T>> {
    let ctx = d.context();
    // SAFETY: the memory is zeroed below before anything reads it.
    let mut host = unsafe { ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }.map_err(cuda_err(
        format!("allocating {bytes} bytes of pinned host memory"),
    ))?;
    host.as_mut_slice()
        .map_err(cuda_err("clearing pinned host memory"))?
        .fill(0);
    let done = ctx
        .new_event(None)
        .map_err(cuda_err("creating a readback event"))?;
    Ok(Slot::Cuda {
        device: d.clone(),
        host,
        done,
    })
}

/// The all-zero value of a scalar type.
fn zero<T: Scalar>() -> T {
    // SAFETY: every `Scalar` is plain-old-data for which all-zero bytes are
    // a value (0, 0.0 or false).
    unsafe { std::mem::zeroed() }
}

impl<T: Scalar> Readback<T> {
    /// Elements per slot.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a readback has at least one element per slot.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Number of slots.
    pub fn depth(&self) -> usize {
        self.slots.len()
    }

    /// Copies pushed and not yet taken.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Whether every slot holds a copy not yet taken.
    pub fn is_full(&self) -> bool {
        self.pending.len() == self.slots.len()
    }

    /// Enqueues a copy of `src` (exactly [`Readback::len`] elements) into
    /// the next slot, behind every launch and copy enqueued so far; returns
    /// without waiting on CUDA.
    ///
    /// # Errors
    /// A full ring (take first), a length mismatch, an array on another
    /// device, CUDA copy errors.
    pub fn push(&mut self, src: &DeviceVec<T>) -> Result<()> {
        if self.is_full() {
            return Err(Error::invalid(format!(
                "readback full: all {} slots hold copies not yet taken",
                self.slots.len()
            )));
        }
        if src.len() != self.len {
            return Err(Error::length("readback push", self.len, src.len()));
        }
        let id = self.next;
        match &mut self.slots[id] {
            Slot::Host(values) => src.download(values)?,
            Slot::Cuda { device, host, done } => {
                let on = src
                    .cuda_device()
                    .filter(|d| d.ordinal() == device.ordinal());
                if on.is_none() {
                    return Err(Error::invalid(format!(
                        "readback on CUDA device {}: the array lives on {}",
                        device.ordinal(),
                        src.location()
                    )));
                }
                src.enqueue_download(host)?;
                done.record(device.stream())
                    .map_err(cuda_err("recording a readback event"))?;
            }
        }
        self.pending.push_back((id, true));
        self.next = (id + 1) % self.slots.len();
        Ok(())
    }

    /// Enqueues a marker instead of a copy: the matching [`Readback::take`]
    /// waits for the work enqueued before it and returns no element. For a
    /// loop that needs no value from the device but must not run too far
    /// ahead of it (a fixed number of iterations, timed one by one).
    ///
    /// # Errors
    /// A full ring, CUDA errors.
    pub fn push_marker(&mut self) -> Result<()> {
        if self.is_full() {
            return Err(Error::invalid(format!(
                "readback full: all {} slots hold copies not yet taken",
                self.slots.len()
            )));
        }
        let id = self.next;
        if let Slot::Cuda { device, done, .. } = &mut self.slots[id] {
            done.record(device.stream())
                .map_err(cuda_err("recording a readback event"))?;
        }
        self.pending.push_back((id, false));
        self.next = (id + 1) % self.slots.len();
        Ok(())
    }

    /// Waits for the oldest pushed copy and returns its elements (valid
    /// until the next call on the readback; none for a marker). Reports no
    /// kernel fault: a driver checks its launches when it stops.
    ///
    /// # Errors
    /// Nothing pushed, CUDA errors.
    pub fn take(&mut self) -> Result<&[T]> {
        let Some((id, copied)) = self.pending.pop_front() else {
            return Err(Error::invalid("readback empty: nothing pushed to take"));
        };
        match &self.slots[id] {
            Slot::Host(_) if !copied => return Ok(&[]),
            Slot::Cuda { done, .. } if !copied => {
                done.synchronize()
                    .map_err(cuda_err("waiting for a readback marker"))?;
                return Ok(&[]);
            }
            Slot::Host(values) => self.taken.copy_from_slice(values),
            Slot::Cuda { host, done, .. } => {
                done.synchronize()
                    .map_err(cuda_err("waiting for a readback copy"))?;
                let bytes = host
                    .as_slice()
                    .map_err(cuda_err("reading a readback slot"))?;
                // SAFETY: `T: Scalar` is plain-old-data; the slot holds
                // exactly `len` elements copied from a `DeviceVec<T>` (or the
                // zeros it started with).
                let values: &[T] =
                    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), self.len) };
                self.taken.copy_from_slice(values);
            }
        }
        Ok(&self.taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_shapes_are_errors() {
        let d = Device::cpu();
        assert!(d.readback::<f32>(0, 2).is_err());
        assert!(d.readback::<f32>(MAX_READBACK_LEN + 1, 2).is_err());
        assert!(d.readback::<f32>(1, 0).is_err());
        assert!(d.readback::<f32>(1, MAX_READBACK_DEPTH + 1).is_err());
        let mut rb = d.readback::<f32>(2, 1).unwrap();
        assert_eq!((rb.len(), rb.depth(), rb.pending()), (2, 1, 0));
        assert!(rb.take().is_err());
        assert!(rb.push(&d.alloc::<f32>(3).unwrap()).is_err());
        assert_eq!(rb.pending(), 0, "a refused push leaves the ring as it was");
    }

    #[test]
    fn the_cpu_ring_returns_values_oldest_first_and_wraps() {
        let d = Device::cpu();
        let mut v = d.alloc::<i64>(1).unwrap();
        let mut rb = d.readback::<i64>(1, 2).unwrap();
        for round in 0..5i64 {
            v.copy_from(&[round]).unwrap();
            rb.push(&v).unwrap();
            rb.push_marker().unwrap();
            assert!(rb.push_marker().is_err());
            assert_eq!(rb.take().unwrap(), &[round]);
            assert!(rb.take().unwrap().is_empty());
        }
    }

    #[test]
    fn a_mapped_array_on_the_cpu_is_a_host_array() {
        let d = Device::cpu();
        let m = d.upload(&[4u32, 5, 6]).unwrap();
        let mapped = d.alloc_mapped::<u32>(3).unwrap();
        assert_eq!(mapped.to_vec().unwrap(), vec![0; 3]);
        let mut out = [0u32; 2];
        m.read_completed(1, &mut out).unwrap();
        assert_eq!(out, [5, 6]);
        assert!(m.read_completed(usize::MAX, &mut out).is_err());
        assert!(
            d.alloc_mapped::<u8>(1 << 62).is_err(),
            "4 EiB is refused, not attempted"
        );
    }
}

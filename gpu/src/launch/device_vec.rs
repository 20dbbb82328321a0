//! Device-resident arrays ([`DeviceVec`]) and the argument traits that let a
//! generated `launch` take either a host slice or a resident array per
//! parameter ([`Input`], [`Output`]).
//!
//! A `DeviceVec` lives where its [`Device`](crate::Device) runs kernels: in GPU memory on
//! CUDA, in host memory on the CPU backend, where kernels run on it in
//! place (zero-copy), so that one program runs on both. Passing it to a
//! launch on another device is an `Err` naming the parameter
//! ([`check_placement`]).
//!
//! `DeviceVec` is `Send` but not `Sync`: a prepared launch writes its
//! outputs through a shared borrow (on the CPU through the twin's
//! `SharedOut`), so every access to one array happens on the thread that
//! holds its borrows, one call at a time. No method hands out a view of
//! the host storage that outlives the call.

use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::errors::cuda_err;
use crate::spec::{ParamKind, Scalar, ScalarType};
use std::cell::UnsafeCell;
use warpfit_runtime::{Error, Result};

/// An array of `T` owned by a [`Device`](crate::Device): GPU memory on CUDA, host memory
/// on the CPU backend. Made by [`Device::alloc`](crate::Device::alloc) and [`Device::upload`](crate::Device::upload);
/// read back with [`DeviceVec::download`] or [`DeviceVec::to_vec`].
pub struct DeviceVec<T: Scalar> {
    pub(super) storage: Storage<T>,
}

pub(super) enum Storage<T> {
    /// CPU backend. Cells: a prepared launch writes outputs through a
    /// shared borrow of the array.
    Host(Box<[UnsafeCell<T>]>),
    /// A GPU: the bytes, the element count, and the device they belong to.
    Cuda {
        buffer: DeviceBuffer<u8>,
        len: usize,
        device: CudaDevice,
    },
    /// Page-locked host memory mapped into a GPU's address space
    /// ([`Device::alloc_mapped`](crate::Device::alloc_mapped)): kernels write it over the bus, the host
    /// reads it without a copy.
    Mapped {
        host: MappedHost,
        len: usize,
        device: CudaDevice,
    },
}

/// Page-locked host memory with its device address.
pub(super) struct MappedHost {
    /// Owns the allocation (freed on drop).
    _pinned: cudarc::driver::PinnedHostSlice<u8>,
    /// The host address (an integer, so that the array stays `Send`).
    addr: usize,
    /// The address kernels use.
    device_ptr: u64,
}

impl MappedHost {
    pub(super) fn new(d: &CudaDevice, bytes: usize) -> Result<Self> {
        use cudarc::driver::sys;
        let what = || format!("{bytes} bytes of host memory mapped into the GPU");
        // Page-locked memory is host memory the OS cannot page out: the
        // process's memory budget applies before the driver is asked.
        warpfit_runtime::mem::check(&what(), bytes as u64)?;
        // SAFETY: the memory is zeroed below before anything reads it.
        let mut pinned = unsafe {
            d.context().alloc_pinned_with_flags::<u8>(
                bytes.max(1),
                sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE,
            )
        }
        .map_err(cuda_err(format!("allocating {}", what())))?;
        let host = pinned
            .as_mut_slice()
            .map_err(cuda_err(format!("clearing {}", what())))?;
        host.fill(0);
        let addr = host.as_mut_ptr() as usize;
        let mut device_ptr: sys::CUdeviceptr = 0;
        // SAFETY: `addr` is the start of a live allocation made with
        // DEVICEMAP in this context (bound by the allocation above); valid
        // out-pointer.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device_ptr, addr as *mut _, 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Cuda {
                context: format!("mapping {}", what()),
                message: format!("{r:?}"),
            });
        }
        Ok(MappedHost {
            _pinned: pinned,
            addr,
            device_ptr,
        })
    }
}

impl<T: Scalar> std::fmt::Debug for DeviceVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceVec")
            .field("type", &T::TYPE.rust_name())
            .field("len", &self.len())
            .field("location", &self.location())
            .finish()
    }
}

/// Bytes of `n` elements of `ty`, or an error naming the request when the
/// count does not fit the address space.
pub(super) fn bytes_of(n: usize, ty: ScalarType) -> Result<usize> {
    n.checked_mul(ty.size())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            Error::invalid(format!(
                "cannot allocate {n} elements of {} ({n} x {} bytes): more than the address space holds",
                ty.rust_name(),
                ty.size()
            ))
        })
}

/// The all-zero value of a scalar type.
pub(super) fn zero<T: Scalar>() -> T {
    // SAFETY: every `Scalar` is a primitive number or `bool` (the trait's
    // contract: plain-old-data), for which all-zero bytes are 0, 0.0 or false.
    unsafe { std::mem::zeroed() }
}

/// `s` as bytes.
pub(super) fn as_bytes<T: Scalar>(s: &[T]) -> &[u8] {
    // SAFETY: `T: Scalar` is plain-old-data; the view covers exactly `s`.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

/// `s` as mutable bytes.
fn as_bytes_mut<T: Scalar>(s: &mut [T]) -> &mut [u8] {
    let len = std::mem::size_of_val(s);
    // SAFETY: as above; what is written through the view comes from device
    // memory of the same type, whose values are valid per `Scalar`.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), len) }
}

/// `len` host cells filled by `fill(i)`, or an error naming the bytes asked.
pub(super) fn host_cells<T: Scalar>(
    len: usize,
    fill: impl Fn(usize) -> T,
) -> Result<Box<[UnsafeCell<T>]>> {
    let bytes = bytes_of(len, T::TYPE)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|e| Error::Unavailable {
        what: format!(
            "{bytes} bytes of host memory for {len} elements of {}",
            T::TYPE.rust_name()
        ),
        reason: e.to_string(),
    })?;
    v.extend((0..len).map(|i| UnsafeCell::new(fill(i))));
    Ok(v.into_boxed_slice())
}

impl<T: Scalar> DeviceVec<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Host(cells) => cells.len(),
            Storage::Cuda { len, .. } | Storage::Mapped { len, .. } => *len,
        }
    }

    /// Whether the array has no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the array lives, in words (`the CPU`, `CUDA device 0 (NAME)`).
    pub fn location(&self) -> String {
        match &self.storage {
            Storage::Host(_) => "the CPU".to_string(),
            Storage::Cuda { device, .. } => cuda_name(device),
            Storage::Mapped { device, .. } => {
                format!("host memory mapped into {}", cuda_name(device))
            }
        }
    }

    /// The host elements, for the length of a call or of a CPU launch
    /// ([`host_input`]'s contract). Nothing writes them meanwhile: writes
    /// take `&mut self`, or are a prepared CPU launch's `run`, which runs on
    /// the thread holding this borrow (the type is not `Sync`) and never
    /// while such a view lives.
    pub(super) fn host(&self) -> Option<&[T]> {
        match &self.storage {
            // SAFETY: `UnsafeCell<T>` has the layout of `T`; see above for
            // why no write overlaps the returned borrow.
            Storage::Host(cells) => {
                Some(unsafe { std::slice::from_raw_parts(cells.as_ptr().cast::<T>(), cells.len()) })
            }
            Storage::Cuda { .. } | Storage::Mapped { .. } => None,
        }
    }

    /// The mapped host bytes of a [`Storage::Mapped`] array.
    fn mapped_bytes(host: &MappedHost, len: usize) -> &[u8] {
        // SAFETY: the allocation holds at least `len` elements and lives as
        // long as `host`; the caller has waited for the device's work.
        unsafe { std::slice::from_raw_parts(host.addr as *const u8, len * T::TYPE.size()) }
    }

    /// Copies the array into `host`, which must have the same length. On
    /// CUDA this waits for the device's work and then reports the first
    /// fault of its asynchronous launches, as [`Device::synchronize`](crate::Device::synchronize) does
    /// (the copied values are unspecified after a fault).
    pub fn download(&self, host: &mut [T]) -> Result<()> {
        if host.len() != self.len() {
            return Err(Error::length(
                format!("downloading a DeviceVec<{}>", T::TYPE.rust_name()),
                self.len(),
                host.len(),
            ));
        }
        match &self.storage {
            Storage::Host(_) => {
                host.copy_from_slice(self.host().unwrap_or_default());
                Ok(())
            }
            Storage::Cuda { buffer, device, .. } => {
                buffer.download(device, as_bytes_mut(host))?;
                device.check_pending_faults()
            }
            Storage::Mapped {
                host: mapped,
                len,
                device,
            } => {
                device.wait_idle()?;
                as_bytes_mut(host).copy_from_slice(Self::mapped_bytes(mapped, *len));
                device.check_pending_faults()
            }
        }
    }

    /// Reads `out.len()` elements from `start` of a host-mapped array
    /// ([`Device::alloc_mapped`](crate::Device::alloc_mapped); on the CPU backend any array) without
    /// waiting for the device: the values the device's completed work left
    /// there. Call it after a wait that covers the launches writing them (a
    /// [`crate::Readback`] marker pushed after them, or
    /// [`Device::synchronize`](crate::Device::synchronize)); values a launch is still writing are
    /// unspecified, never undefined behaviour.
    ///
    /// # Errors
    /// A range outside the array; an array in device memory (read it with
    /// [`DeviceVec::download`] or a [`crate::Readback`]).
    pub fn read_completed(&self, start: usize, out: &mut [T]) -> Result<()> {
        let end = start
            .checked_add(out.len())
            .filter(|&e| e <= self.len())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "reading elements {start}..{} of an array of {}",
                    start.saturating_add(out.len()),
                    self.len()
                ))
            })?;
        match &self.storage {
            Storage::Host(_) => {
                out.copy_from_slice(&self.host().unwrap_or_default()[start..end]);
                Ok(())
            }
            Storage::Mapped { host, .. } => {
                let base = (host.addr as *const T).wrapping_add(start);
                for (i, o) in out.iter_mut().enumerate() {
                    // SAFETY: in bounds (checked above), aligned (page-aligned
                    // allocation of `T`s); volatile: the device writes this
                    // memory outside the compiler's view.
                    *o = unsafe { std::ptr::read_volatile(base.add(i)) };
                }
                Ok(())
            }
            Storage::Cuda { .. } => Err(Error::invalid(format!(
                "read_completed needs a host-mapped array (Device::alloc_mapped); this one is in \
                 the memory of {}",
                self.location()
            ))),
        }
    }

    /// The array's contents as a vector (see [`DeviceVec::download`]).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = Vec::new();
        v.try_reserve_exact(self.len())
            .map_err(|e| Error::Unavailable {
                what: format!(
                    "{} bytes of host memory to download a DeviceVec<{}>",
                    self.len() * T::TYPE.size(),
                    T::TYPE.rust_name()
                ),
                reason: e.to_string(),
            })?;
        v.resize(self.len(), zero());
        self.download(&mut v)?;
        Ok(v)
    }

    /// Enqueues a copy of the array into page-locked `host` bytes on the
    /// device's stream, without waiting (CUDA only; [`crate::Readback`]).
    pub(crate) fn enqueue_download(
        &self,
        host: &mut cudarc::driver::PinnedHostSlice<u8>,
    ) -> Result<()> {
        match &self.storage {
            Storage::Host(_) | Storage::Mapped { .. } => Err(Error::invalid(
                "an asynchronous download needs an array in device memory",
            )),
            Storage::Cuda {
                buffer,
                len,
                device,
            } => {
                let bytes = len * T::TYPE.size();
                if host.len() != bytes {
                    return Err(Error::length(
                        "asynchronous download (bytes)",
                        bytes,
                        host.len(),
                    ));
                }
                if bytes == 0 {
                    return Ok(());
                }
                let view = buffer.as_slice().slice(0..bytes);
                device
                    .stream()
                    .memcpy_dtoh(&view, host)
                    .map_err(cuda_err(format!(
                        "downloading {bytes} bytes asynchronously"
                    )))
            }
        }
    }

    /// Overwrites the array with `host`, which must have the same length
    /// (on CUDA: enqueued on the device's stream, ordered with launches).
    pub fn copy_from(&mut self, host: &[T]) -> Result<()> {
        if host.len() != self.len() {
            return Err(Error::length(
                format!("copying into a DeviceVec<{}>", T::TYPE.rust_name()),
                self.len(),
                host.len(),
            ));
        }
        match &mut self.storage {
            Storage::Host(cells) => {
                for (c, v) in cells.iter_mut().zip(host) {
                    *c.get_mut() = *v;
                }
                Ok(())
            }
            Storage::Cuda { buffer, device, .. } => buffer.copy_from(device, as_bytes(host)),
            Storage::Mapped {
                host: mapped,
                len,
                device,
            } => {
                // Launches read and write this memory: wait for them first.
                device.wait_idle()?;
                let bytes = *len * T::TYPE.size();
                // SAFETY: the allocation holds `bytes`; nothing on the device
                // runs (waited above) and `&mut self` excludes host borrows.
                unsafe { std::slice::from_raw_parts_mut(mapped.addr as *mut u8, bytes) }
                    .copy_from_slice(as_bytes(host));
                Ok(())
            }
        }
    }

    /// Sets every element to `value`. On CUDA a memset on the device's
    /// stream, ordered with launches, with no host copy (8-byte values as
    /// two strided 4-byte memsets).
    pub fn fill(&mut self, value: T) -> Result<()> {
        if let Storage::Mapped { len, .. } = &self.storage {
            let host = vec![value; *len];
            return self.copy_from(&host);
        }
        match &mut self.storage {
            Storage::Host(cells) => {
                for c in cells.iter_mut() {
                    *c.get_mut() = value;
                }
                Ok(())
            }
            Storage::Cuda {
                buffer,
                len,
                device,
            } => buffer.fill_bytes(device, *len, as_bytes(std::slice::from_ref(&value))),
            // Handled above.
            Storage::Mapped { .. } => Ok(()),
        }
    }

    /// The host elements, exclusively (CPU backend).
    pub(super) fn host_mut(&mut self) -> Option<&mut [T]> {
        match &mut self.storage {
            // SAFETY: `UnsafeCell<T>` has the layout of `T`, and `&mut self`
            // excludes every other access for the borrow.
            Storage::Host(cells) => Some(unsafe {
                std::slice::from_raw_parts_mut(cells.as_mut_ptr().cast::<T>(), cells.len())
            }),
            Storage::Cuda { .. } | Storage::Mapped { .. } => None,
        }
    }

    /// The device address of the array on CUDA (`None` on the CPU), for
    /// handing it to a CUDA library such as cuSPARSE. The address stays
    /// valid while the array lives; writing through it must be ordered with
    /// the device's stream.
    pub fn cuda_ptr(&self) -> Option<u64> {
        match &self.storage {
            Storage::Host(_) => None,
            Storage::Cuda { buffer, device, .. } => Some(buffer.device_ptr(device)),
            Storage::Mapped { host, .. } => Some(host.device_ptr),
        }
    }

    /// The first host cell on the CPU backend (`None` elsewhere): a
    /// group's host transfers write through it under a shared borrow, as a
    /// prepared CPU launch writes its outputs, on the thread holding the
    /// borrow (the type is not `Sync`).
    pub(crate) fn host_cells_ptr(&self) -> Option<*mut T> {
        match &self.storage {
            Storage::Host(cells) => Some(UnsafeCell::raw_get(cells.as_ptr())),
            Storage::Cuda { .. } | Storage::Mapped { .. } => None,
        }
    }

    /// The GPU the array lives on (`None` on the CPU).
    /// Zeroes a GPU array under a shared borrow, enqueued on its device's
    /// stream (a worklist's count between rounds).
    ///
    /// # Errors
    /// The array is not in GPU memory.
    pub(crate) fn zero_async(&self) -> Result<()> {
        match &self.storage {
            Storage::Cuda { buffer, device, .. } => buffer.zero_async(device),
            Storage::Host(_) | Storage::Mapped { .. } => Err(Error::invalid(
                "an asynchronous clear needs an array in GPU memory",
            )),
        }
    }

    #[doc(hidden)]
    pub fn cuda_device(&self) -> Option<&CudaDevice> {
        match &self.storage {
            Storage::Host(_) => None,
            Storage::Cuda { device, .. } | Storage::Mapped { device, .. } => Some(device),
        }
    }

    /// The bytes, element count and device of an array in GPU memory, for
    /// an owner that keeps them as they are (a throttled handle made by
    /// `throttle_owned`); the array back, whole, where it lives elsewhere.
    pub(crate) fn into_cuda_bytes(
        self,
    ) -> std::result::Result<(DeviceBuffer<u8>, usize, CudaDevice), Self> {
        match self.storage {
            Storage::Cuda {
                buffer,
                len,
                device,
            } => Ok((buffer, len, device)),
            storage => Err(DeviceVec { storage }),
        }
    }

    /// This array as a launch argument of `kind`.
    pub(crate) fn as_arg(&self, kind: ParamKind) -> ResidentArray<'_> {
        let place = match &self.storage {
            Storage::Host(cells) => Place::Host {
                addr: cells.as_ptr() as usize,
            },
            Storage::Cuda { buffer, device, .. } => Place::Cuda {
                ptr: buffer.device_ptr(device),
                device,
            },
            Storage::Mapped { host, device, .. } => Place::Cuda {
                ptr: host.device_ptr,
                device,
            },
        };
        ResidentArray {
            kind,
            ty: T::TYPE,
            len: self.len(),
            place,
        }
    }
}

/// A GPU as error messages name it.
pub(crate) fn cuda_name(d: &CudaDevice) -> String {
    format!("CUDA device {} ({})", d.ordinal(), d.name())
}

/// A device-resident array as a launch argument, its type erased.
#[derive(Debug, Clone, Copy)]
pub struct ResidentArray<'a> {
    pub(crate) kind: ParamKind,
    pub(crate) ty: ScalarType,
    pub(crate) len: usize,
    pub(crate) place: Place<'a>,
}

/// Where a [`ResidentArray`] lives.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place<'a> {
    /// Host cells of the CPU backend, at this address.
    Host { addr: usize },
    /// Device memory of `device`.
    Cuda { ptr: u64, device: &'a CudaDevice },
}

impl Place<'_> {
    /// Which memory the array starts at: host, or a GPU's by ordinal, and
    /// the address there (distinct arrays never share a first address).
    pub(super) fn address(&self) -> (Option<usize>, u64) {
        match *self {
            Place::Host { addr } => (None, addr as u64),
            Place::Cuda { ptr, device } => (Some(device.ordinal()), ptr),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::driver::device::Device;

    #[test]
    fn cpu_arrays_round_trip() {
        let d = Device::cpu();
        let mut v = d.upload(&[1.0f32, 2.0, 3.0]).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v.to_vec().unwrap(), [1.0, 2.0, 3.0]);
        v.fill(7.0).unwrap();
        assert_eq!(v.to_vec().unwrap(), [7.0; 3]);
        v.copy_from(&[4.0, 5.0, 6.0]).unwrap();
        let mut out = [0.0f32; 3];
        v.download(&mut out).unwrap();
        assert_eq!(out, [4.0, 5.0, 6.0]);
        let z = d.alloc::<u64>(4).unwrap();
        assert_eq!(z.to_vec().unwrap(), [0; 4]);
        assert!(d.alloc::<bool>(0).unwrap().is_empty());
        assert!(d.synchronize().is_ok());
    }

    #[test]
    fn arrays_move_between_threads() {
        fn send<T: Send>(_: T) {}
        send(Device::cpu().alloc::<f32>(1).unwrap());
    }

    #[test]
    fn length_mismatches_are_errors() {
        let d = Device::cpu();
        let mut v = d.alloc::<i32>(3).unwrap();
        let e = v.download(&mut [0; 2]).unwrap_err().to_string();
        assert!(e.contains("expected length 3, got 2"), "{e}");
        let e = v.copy_from(&[1; 4]).unwrap_err().to_string();
        assert!(e.contains("expected length 3, got 4"), "{e}");
    }

    #[test]
    fn impossible_sizes_are_errors_naming_the_bytes() {
        let e = Device::cpu()
            .alloc::<f64>(usize::MAX / 4)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot allocate") && e.contains("x 8 bytes"),
            "{e}"
        );
        let e = Device::cpu()
            .alloc::<u8>(isize::MAX as usize)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{} bytes of host memory", isize::MAX)),
            "{e}"
        );
    }
}

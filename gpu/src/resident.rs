//! Device-resident arrays ([`DeviceVec`]) and the argument traits that let a
//! generated `launch` take either a host slice or a resident array per
//! parameter ([`Input`], [`Output`]).
//!
//! A `DeviceVec` lives where its [`Device`] runs kernels: in GPU memory on
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

use crate::args::Arg;
use crate::buffer::DeviceBuffer;
use crate::device::{CudaDevice, Device};
use crate::spec::{KernelSpec, ParamKind, Scalar, ScalarType};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use warpfit_runtime::exec::SharedOut;
use warpfit_runtime::worklist::{Atomic, AtomicScalar, Worklist};
use warpfit_runtime::{Error, Result};

/// An array of `T` owned by a [`Device`]: GPU memory on CUDA, host memory
/// on the CPU backend. Made by [`Device::alloc`] and [`Device::upload`];
/// read back with [`DeviceVec::download`] or [`DeviceVec::to_vec`].
pub struct DeviceVec<T: Scalar> {
    storage: Storage<T>,
}

enum Storage<T> {
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
    /// ([`Device::alloc_mapped`]): kernels write it over the bus, the host
    /// reads it without a copy.
    Mapped {
        host: MappedHost,
        len: usize,
        device: CudaDevice,
    },
}

/// Page-locked host memory with its device address.
struct MappedHost {
    /// Owns the allocation (freed on drop).
    _pinned: cudarc::driver::PinnedHostSlice<u8>,
    /// The host address (an integer, so that the array stays `Send`).
    addr: usize,
    /// The address kernels use.
    device_ptr: u64,
}

impl MappedHost {
    fn new(d: &CudaDevice, bytes: usize) -> Result<Self> {
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
        .map_err(crate::buffer::cuda_err(format!("allocating {}", what())))?;
        let host = pinned
            .as_mut_slice()
            .map_err(crate::buffer::cuda_err(format!("clearing {}", what())))?;
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
fn bytes_of(n: usize, ty: ScalarType) -> Result<usize> {
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
fn zero<T: Scalar>() -> T {
    // SAFETY: every `Scalar` is a primitive number or `bool` (the trait's
    // contract: plain-old-data), for which all-zero bytes are 0, 0.0 or false.
    unsafe { std::mem::zeroed() }
}

/// `s` as bytes.
fn as_bytes<T: Scalar>(s: &[T]) -> &[u8] {
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
fn host_cells<T: Scalar>(len: usize, fill: impl Fn(usize) -> T) -> Result<Box<[UnsafeCell<T>]>> {
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
    fn host(&self) -> Option<&[T]> {
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
    /// fault of its asynchronous launches, as [`Device::synchronize`] does
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
    /// ([`Device::alloc_mapped`]; on the CPU backend any array) without
    /// waiting for the device: the values the device's completed work left
    /// there. Call it after a wait that covers the launches writing them (a
    /// [`crate::Readback`] marker pushed after them, or
    /// [`Device::synchronize`]); values a launch is still writing are
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
                    .map_err(crate::buffer::cuda_err(format!(
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
    fn host_mut(&mut self) -> Option<&mut [T]> {
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

fn cuda_name(d: &CudaDevice) -> String {
    format!("CUDA device {} ({})", d.ordinal(), d.name())
}

impl Device {
    /// `n` zeroed elements of `T` on this device.
    ///
    /// # Errors
    /// A count whose bytes overflow the address space, or memory the
    /// device cannot give (both name the bytes asked).
    pub fn alloc<T: Scalar>(&self, n: usize) -> Result<DeviceVec<T>> {
        self.alloc_zeroed(n, |d, bytes| {
            Ok(Storage::Cuda {
                buffer: DeviceBuffer::zeros(d, bytes)?,
                len: n,
                device: d.clone(),
            })
        })
    }

    /// `n` zeroed elements: host cells on the CPU, `cuda(device, bytes)`
    /// on a GPU.
    fn alloc_zeroed<T: Scalar>(
        &self,
        n: usize,
        cuda: impl FnOnce(&CudaDevice, usize) -> Result<Storage<T>>,
    ) -> Result<DeviceVec<T>> {
        let bytes = bytes_of(n, T::TYPE)?;
        let storage = match self {
            Device::Cpu => Storage::Host(host_cells(n, |_| zero())?),
            Device::Cuda(d) => cuda(d, bytes)?,
        };
        Ok(DeviceVec { storage })
    }

    /// `n` zeroed elements of `T` in page-locked host memory that kernels on
    /// this device read and write directly (on the CPU backend, the same as
    /// [`Device::alloc`]). For the few numbers an iterative driver reads
    /// every round (a changed count, a residual): a kernel writes them over
    /// the bus and the host reads them with [`DeviceVec::read_completed`]
    /// after waiting for that kernel, with no copy in the stream. Not for
    /// data kernels read many times: every access crosses the bus.
    ///
    /// # Errors
    /// As for [`Device::alloc`].
    pub fn alloc_mapped<T: Scalar>(&self, n: usize) -> Result<DeviceVec<T>> {
        self.alloc_zeroed(n, |d, bytes| {
            Ok(Storage::Mapped {
                host: MappedHost::new(d, bytes)?,
                len: n,
                device: d.clone(),
            })
        })
    }

    /// A copy of `host` on this device (on CUDA the copy is complete on
    /// return: the host slice may change afterwards).
    ///
    /// # Errors
    /// As for [`Device::alloc`], and CUDA copy errors.
    pub fn upload<T: Scalar>(&self, host: &[T]) -> Result<DeviceVec<T>> {
        let storage = match self {
            Device::Cpu => Storage::Host(host_cells(host.len(), |i| host[i])?),
            Device::Cuda(d) => Storage::Cuda {
                buffer: DeviceBuffer::upload(d, as_bytes(host))?,
                len: host.len(),
                device: d.clone(),
            },
        };
        Ok(DeviceVec { storage })
    }

    /// Waits for every launch and copy enqueued on this device, and reports
    /// the first fault of its asynchronous launches since the last check
    /// (plain launches with a device-resident array and no host output; a
    /// prepared launch reports its own faults through its `check`). A no-op
    /// on the CPU, whose launches are synchronous.
    pub fn synchronize(&self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            Device::Cuda(d) => d.synchronize(),
        }
    }
}

/// A read-only array argument: a host slice, or an array already on the
/// device. Generated `launch` functions take `&impl Input<T>` per input.
pub trait Input<T: Scalar> {
    /// Which of the two this is.
    fn input_ref(&self) -> InputRef<'_, T>;
}

/// An output array argument: a host slice (downloaded after the launch) or
/// an array on the device (written in place). Generated `launch` functions
/// take `&mut impl Output<T>` per output.
pub trait Output<T: Scalar> {
    /// Which of the two this is.
    fn output_ref(&mut self) -> OutputRef<'_, T>;
}

/// An [`Input`] resolved.
#[derive(Debug)]
pub enum InputRef<'a, T: Scalar> {
    Host(&'a [T]),
    Resident(&'a DeviceVec<T>),
}

/// An [`Output`] resolved.
#[derive(Debug)]
pub enum OutputRef<'a, T: Scalar> {
    Host(&'a mut [T]),
    Resident(&'a mut DeviceVec<T>),
}

impl<T: Scalar> Input<T> for [T] {
    fn input_ref(&self) -> InputRef<'_, T> {
        InputRef::Host(self)
    }
}
impl<T: Scalar> Input<T> for Vec<T> {
    fn input_ref(&self) -> InputRef<'_, T> {
        InputRef::Host(self)
    }
}
impl<T: Scalar, const N: usize> Input<T> for [T; N] {
    fn input_ref(&self) -> InputRef<'_, T> {
        InputRef::Host(self)
    }
}
impl<T: Scalar> Input<T> for DeviceVec<T> {
    fn input_ref(&self) -> InputRef<'_, T> {
        InputRef::Resident(self)
    }
}
impl<T: Scalar, I: Input<T> + ?Sized> Input<T> for &I {
    fn input_ref(&self) -> InputRef<'_, T> {
        (**self).input_ref()
    }
}
impl<T: Scalar, I: Input<T> + ?Sized> Input<T> for &mut I {
    fn input_ref(&self) -> InputRef<'_, T> {
        (**self).input_ref()
    }
}

impl<T: Scalar> Output<T> for [T] {
    fn output_ref(&mut self) -> OutputRef<'_, T> {
        OutputRef::Host(self)
    }
}
impl<T: Scalar> Output<T> for Vec<T> {
    fn output_ref(&mut self) -> OutputRef<'_, T> {
        OutputRef::Host(self)
    }
}
impl<T: Scalar, const N: usize> Output<T> for [T; N] {
    fn output_ref(&mut self) -> OutputRef<'_, T> {
        OutputRef::Host(self)
    }
}
impl<T: Scalar> Output<T> for DeviceVec<T> {
    fn output_ref(&mut self) -> OutputRef<'_, T> {
        OutputRef::Resident(self)
    }
}
impl<T: Scalar, O: Output<T> + ?Sized> Output<T> for &mut O {
    fn output_ref(&mut self) -> OutputRef<'_, T> {
        (**self).output_ref()
    }
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
    fn address(&self) -> (Option<usize>, u64) {
        match *self {
            Place::Host { addr } => (None, addr as u64),
            Place::Cuda { ptr, device } => (Some(device.ordinal()), ptr),
        }
    }
}

/// Where a launch runs, for [`check_placement`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'d> {
    Cpu,
    Cuda(&'d CudaDevice),
}

/// The error for argument `i` of `spec`, a `DeviceVec` of `lives_on`, in a
/// launch that runs on `runs_on`.
fn misplaced(spec: &KernelSpec, i: usize, lives_on: &str, runs_on: &str) -> Error {
    let name = spec.params.get(i).map_or("?", |p| p.name);
    Error::invalid(format!(
        "kernel `{}`: argument {i} (`{name}`) is a DeviceVec of {lives_on}, but the launch runs on {runs_on}",
        spec.name
    ))
}

/// Input `i` of a launch of `spec` on the CPU: the host slice, or a CPU
/// `DeviceVec`'s storage in place; a GPU's array is an error naming the
/// parameter (generated `launch`).
///
/// # Safety
///
/// The result must not outlive the launch it is made for, and the launch
/// must run to completion on this thread: a prepared launch may hold the
/// same `DeviceVec` as an output (a shared borrow) and write it when run.
pub unsafe fn host_input<'a, T: Scalar, I: Input<T> + ?Sized>(
    spec: &KernelSpec,
    i: usize,
    x: &'a I,
) -> Result<&'a [T]> {
    match x.input_ref() {
        InputRef::Host(s) => Ok(s),
        InputRef::Resident(v) => v
            .host()
            .ok_or_else(|| misplaced(spec, i, &v.location(), "the CPU")),
    }
}

/// The CPU twin's view of shared-array argument `i` of `spec`
/// (`&[Atomic<T>]`): a host slice or a CPU `DeviceVec`'s storage, viewed
/// as atomics for the launch.
///
/// # Errors
/// A `DeviceVec` of a GPU (naming the parameter and both places).
pub fn host_shared<'a, T: Scalar + AtomicScalar, O: Output<T> + ?Sized>(
    spec: &KernelSpec,
    i: usize,
    y: &'a mut O,
) -> Result<&'a [Atomic<T>]> {
    host_output(spec, i, y).map(Atomic::from_mut_slice)
}

/// Output `i` of a launch of `spec` on the CPU, as [`host_input`]. Safe:
/// the exclusive borrow rules out every other access for its lifetime.
pub fn host_output<'a, T: Scalar, O: Output<T> + ?Sized>(
    spec: &KernelSpec,
    i: usize,
    y: &'a mut O,
) -> Result<&'a mut [T]> {
    match y.output_ref() {
        OutputRef::Host(s) => Ok(s),
        OutputRef::Resident(v) => {
            let location = v.location();
            v.host_mut()
                .ok_or_else(|| misplaced(spec, i, &location, "the CPU"))
        }
    }
}

/// Checks that every device-resident argument of a launch of `spec` lives
/// where the launch runs: a CPU array on a GPU, a GPU array on the CPU, or
/// arrays of another GPU are errors naming the parameter.
pub(crate) fn check_placement(
    spec: &KernelSpec,
    args: &[Arg<'_>],
    target: Target<'_>,
) -> Result<()> {
    for (i, a) in args.iter().enumerate().take(spec.params.len()) {
        if let Arg::Worklist(w) = a {
            let runs_on = match target {
                Target::Cpu => "the CPU".to_string(),
                Target::Cuda(d) => cuda_name(d),
            };
            let here = match (w.place, target) {
                (crate::worklist::ListPlace::Host(_), Target::Cpu) => true,
                (crate::worklist::ListPlace::Cuda { device, .. }, Target::Cuda(d)) => {
                    device.ordinal() == d.ordinal()
                }
                _ => false,
            };
            if !here {
                return Err(crate::worklist::misplaced_list(
                    spec,
                    i,
                    &w.place.location(),
                    &runs_on,
                ));
            }
            continue;
        }
        let Arg::Resident(r) = a else { continue };
        let runs_on = match target {
            Target::Cpu => "the CPU".to_string(),
            Target::Cuda(d) => cuda_name(d),
        };
        let lives_on = match (r.place, target) {
            (Place::Host { .. }, Target::Cpu) => continue,
            (Place::Cuda { device, .. }, Target::Cuda(d)) if device.ordinal() == d.ordinal() => {
                continue
            }
            (Place::Host { .. }, _) => "the CPU".to_string(),
            (Place::Cuda { device, .. }, _) => cuda_name(device),
        };
        return Err(misplaced(spec, i, &lives_on, &runs_on));
    }
    Ok(())
}

/// Checks that no device-resident output is also passed as another
/// argument: a launch that reads an array it writes races with itself. (A
/// plain launch's `&mut` outputs cannot alias; a prepared launch takes
/// shared borrows, so this is checked.)
pub(crate) fn check_unaliased(spec: &KernelSpec, args: &[Arg<'_>]) -> Result<()> {
    let addr = |a: &Arg<'_>| match a {
        Arg::Resident(r) if r.len > 0 => Some(r.place.address()),
        _ => None,
    };
    for (i, a) in args.iter().enumerate() {
        let (Arg::Resident(r), Some(at)) = (a, addr(a)) else {
            continue;
        };
        if !r.kind.writes() {
            continue;
        }
        if let Some(j) = (0..args.len()).find(|&j| j != i && addr(&args[j]) == Some(at)) {
            let name = |k: usize| spec.params.get(k).map_or("?", |p| p.name);
            return Err(Error::invalid(format!(
                "kernel `{}`: output argument {i} (`{}`) is also passed as argument {j} (`{}`): a launch may not read or write an array it writes elsewhere",
                spec.name,
                name(i),
                name(j)
            )));
        }
    }
    Ok(())
}

/// The arguments of a prepared launch on the CPU backend, checked once:
/// typed views of its resident arrays for the CPU twin, made per run.
pub struct CpuArgs<'a> {
    spec: &'static KernelSpec,
    args: Vec<Arg<'a>>,
    /// Not `Sync`/`Send`: the views below are made and used on one thread.
    _one_thread: PhantomData<*const ()>,
}

impl<'a> CpuArgs<'a> {
    pub(crate) fn new(spec: &'static KernelSpec, args: Vec<Arg<'a>>) -> Result<Self> {
        crate::args::check_args(spec, &args)?;
        check_placement(spec, &args, Target::Cpu)?;
        check_unaliased(spec, &args)?;
        Ok(CpuArgs {
            spec,
            args,
            _one_thread: PhantomData,
        })
    }

    fn host_array(&self, i: usize, kind: ParamKind, ty: ScalarType) -> Result<(usize, usize)> {
        match self.args.get(i) {
            Some(Arg::Resident(ResidentArray {
                kind: k,
                ty: t,
                len,
                place: Place::Host { addr },
            })) if *k == kind && *t == ty => Ok((*addr, *len)),
            _ => Err(Error::invalid(format!(
                "kernel `{}`: argument {i} of the prepared launch is not a CPU DeviceVec of {}",
                self.spec.name,
                kind.rust_type(ty)
            ))),
        }
    }

    /// Input `i` as a slice, for one run of the twin.
    pub fn input<T: Scalar>(&self, i: usize) -> Result<&[T]> {
        let (addr, len) = self.host_array(i, ParamKind::Input, T::TYPE)?;
        // SAFETY: `addr, len` are the cells of a CPU `DeviceVec<T>` (type
        // checked above) borrowed for `'a`; `new` checked that no output
        // of this launch is that array, and nothing else writes it while
        // it is borrowed shared (its writes take `&mut`).
        Ok(unsafe { std::slice::from_raw_parts(addr as *const T, len) })
    }

    /// Scalar `i`'s value.
    pub fn scalar<T: Scalar>(&self, i: usize) -> Result<T> {
        match self.args.get(i) {
            Some(Arg::Scalar(v)) if v.ty() == T::TYPE => {
                let (bytes, n) = v.to_ne_bytes();
                debug_assert_eq!(n, std::mem::size_of::<T>());
                // SAFETY: `bytes` holds a value of `T` (type checked above)
                // in native order, `bool` as 0 or 1; `T` is plain-old-data.
                Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
            }
            _ => Err(Error::invalid(format!(
                "kernel `{}`: argument {i} of the prepared launch is not a scalar of {}",
                self.spec.name,
                T::TYPE.rust_name()
            ))),
        }
    }

    /// Shared-array argument `i` as the twin's atomics.
    ///
    /// # Errors
    /// The argument is not a CPU `DeviceVec` of `T` given as a shared array.
    pub fn shared<T: Scalar + AtomicScalar>(&self, i: usize) -> Result<&[Atomic<T>]> {
        let (addr, len) = self.host_array(i, ParamKind::Shared, T::TYPE)?;
        // SAFETY: the address and length are a CPU `DeviceVec`'s cells,
        // checked by `new` to be of `T` and borrowed for `'a`; `Atomic<T>`
        // has `T`'s layout, and while the view lives every access to the
        // elements is atomic (the twin's intrinsics), the array not being
        // passed as any other argument (`check_unaliased`).
        Ok(unsafe { std::slice::from_raw_parts(addr as *const Atomic<T>, len) })
    }

    /// Worklist argument `i` (a CPU list).
    ///
    /// # Errors
    /// The argument is not a worklist of the CPU backend.
    pub fn worklist(&self, i: usize) -> Result<&Worklist> {
        match self.args.get(i) {
            Some(Arg::Worklist(crate::worklist::ListArg {
                place: crate::worklist::ListPlace::Host(w),
            })) => Ok(w),
            _ => Err(Error::invalid(format!(
                "kernel `{}`: argument {i} of the prepared launch is not a worklist of the CPU backend",
                self.spec.name
            ))),
        }
    }

    /// Output `i` behind the twin's `SharedOut`, for one run.
    pub fn output<T: Scalar>(&self, i: usize) -> Result<SharedOut<'_, T>> {
        let (addr, len) = self.host_array(i, ParamKind::Output, T::TYPE)?;
        // SAFETY: the cells of a CPU `DeviceVec<T>` borrowed for `'a`,
        // which permit writes through a shared borrow; `new` checked that
        // no other argument is that array, no method of `DeviceVec` keeps a
        // view past its call, and `CpuArgs` is not `Sync`, so the only
        // accesses while the result lives are the twin's, whose
        // owner-computes rule `SharedOut` carries.
        let slice = unsafe { std::slice::from_raw_parts_mut(addr as *mut T, len) };
        Ok(SharedOut::new(slice))
    }
}

/// A launch prepared once and run many times: on CUDA everything but the
/// enqueue is done by `prepare` (split choice, warp packing, task-list
/// upload, scratch, argument packing); on the CPU `run` runs the twin
/// synchronously on the arrays' host storage.
///
/// The handle borrows its device-resident arrays for `'a`. Outputs are
/// shared borrows too: the handle only writes device memory (or, on the
/// CPU, goes through the twin's `SharedOut`), never through a Rust
/// reference the caller could hold, and `prepare` rejects an output that
/// is also passed as another argument.
///
/// Faults: on CUDA, [`run`](Self::run) only enqueues; the first fault of
/// the runs since the last check is reported by [`check`](Self::check),
/// which waits for the device. On the CPU, `run` returns it.
pub struct PreparedLaunch<'a> {
    backend: Backend<'a>,
}

/// The CPU twin of a prepared launch: builds the kernel from the checked
/// arguments and runs it.
pub type CpuRun<'a> = Box<dyn Fn(&CpuArgs<'a>) -> Result<()> + 'a>;

enum Backend<'a> {
    Cuda {
        /// Boxed: its `Params` block is 4 KiB.
        prepared: Box<crate::launch::Prepared>,
        _borrows: PhantomData<&'a DeviceVec<u8>>,
    },
    Cpu {
        args: CpuArgs<'a>,
        run: CpuRun<'a>,
    },
}

impl<'a> PreparedLaunch<'a> {
    /// Prepares a launch of `spec` on `dev` (generated `prepare`).
    #[doc(hidden)]
    pub fn cuda(
        dev: &CudaDevice,
        spec: &'static KernelSpec,
        config: &crate::LaunchConfig,
        tasks: warpfit_runtime::Tasks<'a>,
        args: Vec<Arg<'a>>,
    ) -> Result<Self> {
        check_unaliased(spec, &args)?;
        let prepared = crate::launch::Prepared::new_borrowing(dev, spec, config, tasks, &args)?;
        Ok(PreparedLaunch {
            backend: Backend::Cuda {
                prepared: Box::new(prepared),
                _borrows: PhantomData,
            },
        })
    }

    /// A launch on the CPU backend: `args` checked once, `run` builds the
    /// twin from them at each [`run`](Self::run) (generated `prepare`).
    #[doc(hidden)]
    pub fn cpu(spec: &'static KernelSpec, args: Vec<Arg<'a>>, run: CpuRun<'a>) -> Result<Self> {
        Ok(PreparedLaunch {
            backend: Backend::Cpu {
                args: CpuArgs::new(spec, args)?,
                run,
            },
        })
    }

    /// Runs the launch again. On CUDA only enqueues its kernels
    /// (asynchronous; faults at the next [`check`](Self::check)); on the
    /// CPU runs the twin and returns its fault.
    pub fn run(&self) -> Result<()> {
        match &self.backend {
            Backend::Cuda { prepared, .. } => prepared.run(),
            Backend::Cpu { args, run } => run(args),
        }
    }

    /// Waits for the runs enqueued so far and reports the first fault among
    /// them (then clears it, so the next check reports only later runs).
    /// Always `Ok` on the CPU, whose runs report their faults themselves.
    pub fn check(&self) -> Result<()> {
        match &self.backend {
            Backend::Cuda { prepared, .. } => prepared.check_and_clear_fault(),
            Backend::Cpu { .. } => Ok(()),
        }
    }

    /// The CUDA launch inside, its borrows ended by the caller's promise:
    /// the round backend keeps what the launch reads alive (its own lists,
    /// and the arrays its kernels' closures borrow for the backend's
    /// lifetime) for as long as it holds the launch. A CPU launch is
    /// returned as it is.
    pub(crate) fn into_cuda(self) -> std::result::Result<Box<crate::launch::Prepared>, Self> {
        match self.backend {
            Backend::Cuda { prepared, .. } => Ok(prepared),
            backend @ Backend::Cpu { .. } => Err(PreparedLaunch { backend }),
        }
    }

    /// What [`Split::Auto`](crate::Split::Auto) chose for this launch on
    /// CUDA (`None` on the CPU or for a configured split).
    pub fn chosen_split(&self) -> Option<crate::Split> {
        match &self.backend {
            Backend::Cuda { prepared, .. } => prepared.chosen_split(),
            Backend::Cpu { .. } => None,
        }
    }
}

impl std::fmt::Debug for PreparedLaunch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (backend, kernel) = match &self.backend {
            Backend::Cuda { prepared, .. } => ("cuda", prepared.kernel_name()),
            Backend::Cpu { args, .. } => ("cpu", args.spec.name),
        };
        f.debug_struct("PreparedLaunch")
            .field("kernel", &kernel)
            .field("backend", &backend)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::spec::X_TO_Y as SPEC;

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

    #[test]
    fn aliased_outputs_are_named() {
        let d = Device::cpu();
        let v = d.alloc::<f32>(2).unwrap();
        let args = vec![Arg::resident_input(&v), Arg::resident_output(&v)];
        let e = check_unaliased(&SPEC, &args).unwrap_err().to_string();
        assert!(
            e.contains("output argument 1 (`y`) is also passed as argument 0 (`x`)"),
            "{e}"
        );
        let w = d.alloc::<f32>(2).unwrap();
        assert!(
            check_unaliased(&SPEC, &[Arg::resident_input(&v), Arg::resident_output(&w)]).is_ok()
        );
    }

    #[test]
    fn cpu_args_give_typed_views() {
        let d = Device::cpu();
        let x = d.upload(&[1.0f32, 2.0]).unwrap();
        let y = d.alloc::<f32>(2).unwrap();
        let a = CpuArgs::new(
            &SPEC,
            vec![Arg::resident_input(&x), Arg::resident_output(&y)],
        )
        .unwrap();
        assert_eq!(a.input::<f32>(0).unwrap(), [1.0, 2.0]);
        let out = a.output::<f32>(1).unwrap();
        // SAFETY: one thread, index 1 owned here.
        unsafe { out.set(1, 9.0, "y").unwrap() };
        assert_eq!(y.to_vec().unwrap(), [0.0, 9.0]);
        let e = a.input::<f64>(0).unwrap_err().to_string();
        assert!(e.contains("argument 0 of the prepared launch"), "{e}");
        assert!(a.output::<f32>(0).is_err());
    }
}

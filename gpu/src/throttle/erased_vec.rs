//! An array of any scalar type the throttled handle owns, erased to its
//! bytes: device memory on CUDA, host cells on the CPU backend.

use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::device::Device;
use crate::driver::errors::cuda_err;
use crate::launch::arg::Arg;
use crate::launch::device_vec::{Place, ResidentArray};
use crate::spec::{ParamKind, ScalarType};
use std::sync::atomic::AtomicU64;
use warpfit_runtime::{Error, Result};

/// An array of a scalar type the handle owns, erased to its bytes: device
/// memory on CUDA, 8-byte-aligned host cells on the CPU backend (so that
/// the twin can view them as any scalar type).
pub(super) struct ErasedVec {
    storage: ErasedStorage,
    ty: ScalarType,
    len: usize,
}

enum ErasedStorage {
    Cuda {
        buffer: DeviceBuffer<u8>,
        device: CudaDevice,
    },
    /// Words whose bytes the CPU twin reads and writes through raw
    /// pointers (atomics only so that layouts can be shared between the
    /// schedules that read them; no access is concurrent).
    Host(Box<[AtomicU64]>),
}

impl ErasedVec {
    pub(super) fn zeros(device: &Device, ty: ScalarType, len: usize) -> Result<Self> {
        let bytes = len.checked_mul(ty.size()).ok_or_else(|| {
            Error::invalid(format!(
                "{len} elements of {} overflow the address space",
                ty.rust_name()
            ))
        })?;
        let storage = match device.cuda() {
            Some(d) => ErasedStorage::Cuda {
                buffer: DeviceBuffer::zeros(d, bytes)?,
                device: d.clone(),
            },
            None => {
                warpfit_runtime::mem::check("a throttled launch's host array", bytes as u64)?;
                let words = bytes.div_ceil(8);
                let mut v = Vec::new();
                v.try_reserve_exact(words).map_err(|e| Error::Unavailable {
                    what: format!("{bytes} bytes of host memory"),
                    reason: e.to_string(),
                })?;
                v.extend((0..words).map(|_| AtomicU64::new(0)));
                ErasedStorage::Host(v.into_boxed_slice())
            }
        };
        Ok(ErasedVec { storage, ty, len })
    }

    pub(super) fn upload(device: &Device, bytes: &[u8], ty: ScalarType) -> Result<Self> {
        let mut v = Self::zeros(device, ty, bytes.len() / ty.size())?;
        v.write_bytes(bytes)?;
        Ok(v)
    }

    /// `values` as an array of `ty` (`u32` or `u64`, a range array's types).
    pub(super) fn upload_u32_as(device: &Device, values: &[u32], ty: ScalarType) -> Result<Self> {
        let bytes: Vec<u8> = match ty.size() {
            4 => values.iter().flat_map(|v| v.to_ne_bytes()).collect(),
            _ => values
                .iter()
                .flat_map(|&v| u64::from(v).to_ne_bytes())
                .collect(),
        };
        Self::upload(device, &bytes, ty)
    }

    /// A copy of `len` elements of `ty` at device address `src` on the
    /// handle's CUDA device (enqueued on its stream).
    pub(super) fn copy_of_device(
        device: &Device,
        src: u64,
        ty: ScalarType,
        len: usize,
    ) -> Result<Self> {
        let v = Self::zeros(device, ty, len)?;
        let (Some(dev), Ok(dst)) = (device.cuda(), v.device_ptr()) else {
            return Err(Error::invalid(
                "a device copy of a throttled handle's array needs a CUDA device",
            ));
        };
        let bytes = len * ty.size();
        if bytes > 0 {
            // SAFETY: `dst` is the new allocation of `bytes` bytes; the
            // caller passes a device allocation of at least as many at `src`.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(dst, src, bytes, dev.stream().cu_stream())
            }
            .map_err(cuda_err(format!("copying {bytes} bytes on the device")))?;
        }
        Ok(v)
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The device buffer holding the array (CUDA storage only).
    pub(super) fn device_buffer(&self) -> Option<&DeviceBuffer<u8>> {
        match &self.storage {
            ErasedStorage::Cuda { buffer, .. } => Some(buffer),
            ErasedStorage::Host(_) => None,
        }
    }

    pub(super) fn ty(&self) -> ScalarType {
        self.ty
    }

    /// The array's device address (CUDA storage only).
    pub(super) fn device_ptr(&self) -> Result<u64> {
        match &self.storage {
            ErasedStorage::Cuda { buffer, device } => Ok(buffer.device_ptr(device)),
            ErasedStorage::Host(_) => Err(Error::invalid(
                "a throttled handle's host array has no device address",
            )),
        }
    }

    /// The cells' bytes: `AtomicU64` is an `UnsafeCell` inside, so writing
    /// through a pointer from a shared slice of them is allowed.
    fn host_ptr(cells: &[AtomicU64]) -> *mut u8 {
        cells.as_ptr().cast::<u8>().cast_mut()
    }

    pub(super) fn write_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let n = bytes.len().min(self.len * self.ty.size());
        match &mut self.storage {
            ErasedStorage::Cuda { buffer, device } => {
                let ptr = buffer.device_ptr(device);
                // SAFETY: `ptr` is this buffer's start and holds at least
                // `n` bytes; the copy is ordered on the device's stream
                // before any launch that reads it.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(
                        ptr,
                        &bytes[..n],
                        device.stream().cu_stream(),
                    )
                }
                .map_err(cuda_err(format!("uploading {n} bytes")))?;
                device
                    .stream()
                    .synchronize()
                    .map_err(cuda_err("waiting for an upload"))
            }
            ErasedStorage::Host(cells) => {
                // SAFETY: the cells hold at least `n` bytes; `&mut self`
                // means no view of them is alive.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), Self::host_ptr(cells), n) };
                Ok(())
            }
        }
    }

    pub(super) fn arg(&self, kind: ParamKind) -> Arg<'_> {
        let place = match &self.storage {
            ErasedStorage::Cuda { buffer, device } => Place::Cuda {
                ptr: buffer.device_ptr(device),
                device,
            },
            ErasedStorage::Host(cells) => Place::Host {
                addr: Self::host_ptr(cells) as usize,
            },
        };
        Arg::Resident(ResidentArray {
            kind,
            ty: self.ty,
            len: self.len,
            place,
        })
    }

    /// Overwrites the array with a host slice's elements (the handle uses
    /// `DeviceVec`s of its device in place, so any other array is a
    /// `DeviceVec` of another device: an error).
    pub(super) fn copy_in(&mut self, device: &Device, arg: &Arg<'_>, name: &str) -> Result<()> {
        match arg {
            Arg::Input(s) => self.write_bytes(s.bytes),
            Arg::Output(s) => self.write_bytes(s.bytes),
            _ => Err(Error::invalid(format!(
                "argument `{name}` is a DeviceVec of another device than the throttled handle's ({})",
                device.backend_name()
            ))),
        }
    }

    /// Writes the array into `arg`, a host output slice, waiting for the
    /// device.
    pub(super) fn copy_out(&self, device: &Device, arg: &mut Arg<'_>) -> Result<()> {
        let bytes = self.len * self.ty.size();
        match (arg, &self.storage) {
            (
                Arg::Output(s),
                ErasedStorage::Cuda {
                    buffer,
                    device: own,
                },
            ) => {
                // SAFETY: the buffer holds `bytes` bytes, the slice as many.
                unsafe {
                    cudarc::driver::result::memcpy_dtoh_async(
                        &mut s.bytes[..bytes],
                        buffer.device_ptr(own),
                        own.stream().cu_stream(),
                    )
                }
                .map_err(cuda_err(format!("downloading {bytes} bytes")))?;
                own.stream()
                    .synchronize()
                    .map_err(cuda_err("waiting for a download"))
            }
            (Arg::Output(s), ErasedStorage::Host(cells)) => {
                // SAFETY: as above; no launch runs during this call.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        Self::host_ptr(cells),
                        s.bytes.as_mut_ptr(),
                        bytes,
                    )
                };
                Ok(())
            }
            _ => Err(Error::invalid(format!(
                "an output of a throttled launch is not a host slice or a DeviceVec of {}",
                device.backend_name()
            ))),
        }
    }
}

/// An array that shapes a throttled kernel's work, given to the handle by
/// value (generated `throttle_owned`): a `DeviceVec` in GPU memory, which
/// the handle keeps as it is instead of copying it.
#[doc(hidden)]
pub struct OwnedShape {
    ty: ScalarType,
    /// The array; `Err`: where it lives instead of GPU memory (refused).
    array: std::result::Result<ErasedVec, String>,
}

impl<T: crate::spec::Scalar> From<crate::launch::device_vec::DeviceVec<T>> for OwnedShape {
    fn from(v: crate::launch::device_vec::DeviceVec<T>) -> Self {
        let array = match v.into_cuda_bytes() {
            Ok((buffer, len, device)) => Ok(ErasedVec {
                storage: ErasedStorage::Cuda { buffer, device },
                ty: T::TYPE,
                len,
            }),
            Err(v) => Err(v.location()),
        };
        OwnedShape { ty: T::TYPE, array }
    }
}

impl OwnedShape {
    /// The element type.
    pub(super) fn ty(&self) -> ScalarType {
        self.ty
    }

    /// The array on CUDA device `ordinal`, or where it is instead.
    pub(super) fn on_device(self, ordinal: usize) -> std::result::Result<ErasedVec, String> {
        let v = self.array?;
        match &v.storage {
            ErasedStorage::Cuda { device, .. } if device.ordinal() == ordinal => Ok(v),
            ErasedStorage::Cuda { device, .. } => Err(crate::launch::device_vec::cuda_name(device)),
            ErasedStorage::Host(_) => Err("the CPU".to_string()),
        }
    }
}

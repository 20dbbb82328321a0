//! Typed device buffers.
//!
//! A thin layer over `cudarc::driver::CudaSlice`: allocation, upload and
//! download on the device's one stream, with errors turned into
//! [`Error::Cuda`] that name the operation and size. A zero-length buffer
//! allocates one element (CUDA rejects empty allocations) but reports
//! length 0, so kernels see `len == 0` and fault on any access.

use crate::device::CudaDevice;
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, ValidAsZeroBits};
use warpfit_runtime::{Error, Result};

/// Maps a driver error to warpfit's error with context.
pub(crate) fn cuda_err(
    context: impl Into<String>,
) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
    let context = context.into();
    move |e| Error::Cuda {
        context,
        message: e.to_string(),
    }
}

/// `n` elements of `T` in device memory.
pub struct DeviceBuffer<T> {
    slice: CudaSlice<T>,
    len: usize,
}

impl<T> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("len", &self.len)
            .field("bytes", &(self.len * std::mem::size_of::<T>()))
            .finish()
    }
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy> DeviceBuffer<T> {
    /// `len` zeroed elements.
    pub fn zeros(dev: &CudaDevice, len: usize) -> Result<Self> {
        let slice = dev
            .stream()
            .alloc_zeros::<T>(len.max(1))
            .map_err(cuda_err(format!(
                "allocating {} bytes",
                len.max(1) * std::mem::size_of::<T>()
            )))?;
        Ok(DeviceBuffer { slice, len })
    }

    /// A copy of `host` in device memory.
    pub fn upload(dev: &CudaDevice, host: &[T]) -> Result<Self> {
        let mut b = Self::zeros(dev, host.len())?;
        if !host.is_empty() {
            let mut view = b.slice.slice_mut(0..host.len());
            dev.stream()
                .memcpy_htod(host, &mut view)
                .map_err(cuda_err(format!(
                    "uploading {} bytes",
                    std::mem::size_of_val(host)
                )))?;
        }
        Ok(b)
    }

    /// Copies the buffer into `host`, which must have the same length.
    /// Synchronizes the stream (the copy is complete on return).
    pub fn download(&self, dev: &CudaDevice, host: &mut [T]) -> Result<()> {
        if host.len() != self.len {
            return Err(Error::length(
                "device buffer download",
                self.len,
                host.len(),
            ));
        }
        if host.is_empty() {
            return Ok(());
        }
        let view = self.slice.slice(0..self.len);
        dev.stream()
            .memcpy_dtoh(&view, host)
            .map_err(cuda_err(format!(
                "downloading {} bytes",
                std::mem::size_of_val(host)
            )))?;
        dev.synchronize()
    }

    /// The buffer's contents as a vector (synchronizes).
    pub fn to_vec(&self, dev: &CudaDevice) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); self.len];
        self.download(dev, &mut v)?;
        Ok(v)
    }

    /// Sets every byte to zero (asynchronous, on the device's stream).
    pub fn clear(&mut self, dev: &CudaDevice) -> Result<()> {
        dev.stream()
            .memset_zeros(&mut self.slice)
            .map_err(cuda_err("clearing a device buffer"))
    }
}

impl<T> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The device address, for kernel parameters.
    pub fn device_ptr(&self, dev: &CudaDevice) -> u64 {
        // Event tracking is off on warpfit's contexts (one stream), so the
        // guard records nothing.
        let (ptr, _guard) = self.slice.device_ptr(dev.stream());
        ptr
    }

    /// The underlying cudarc slice.
    pub fn as_slice(&self) -> &CudaSlice<T> {
        &self.slice
    }

    /// The underlying cudarc slice, mutably.
    pub fn as_slice_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

/// Zero-valued bit patterns: the plain scalar types.
trait Zeroed {
    fn zeroed() -> Self;
}
impl<T: ValidAsZeroBits> Zeroed for T {
    fn zeroed() -> Self {
        // SAFETY: `ValidAsZeroBits` promises all-zero bytes are a valid `T`.
        unsafe { std::mem::zeroed() }
    }
}

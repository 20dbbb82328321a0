//! Typed device buffers.
//!
//! A thin layer over `cudarc::driver::CudaSlice`: allocation, upload and
//! download on the device's one stream, with errors turned into
//! [`Error::Cuda`] that name the operation and size. A zero-length buffer
//! allocates one element (CUDA rejects empty allocations) but reports
//! length 0, so kernels see `len == 0` and fault on any access.

use crate::driver::cuda_device::CudaDevice;
use crate::driver::errors::cuda_err;
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, ValidAsZeroBits};
use warpfit_runtime::{Error, Result};

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
    ///
    /// A request larger than the GPU's free memory is refused before the
    /// driver is asked, as [`Error::MemoryLimit`] naming the bytes asked and
    /// free; a driver failure of the allocation itself names both too.
    pub fn zeros(dev: &CudaDevice, len: usize) -> Result<Self> {
        let what = format!(
            "a device buffer of {len} elements of {}",
            std::any::type_name::<T>()
        );
        let bytes = len
            .max(1)
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "out of memory: {what} needs more bytes than a 64-bit size can count"
                ))
            })?;
        // Free memory: the driver's, and what the pool keeps unused.
        let free_memory = || {
            let pooled = usize::try_from(dev.pooled_unused_bytes()).unwrap_or(usize::MAX);
            dev.context()
                .mem_get_info()
                .ok()
                .map(|(free, _)| free.saturating_add(pooled))
        };
        let out_of_memory = |free: usize| Error::MemoryLimit {
            what: what.clone(),
            needed: bytes as u64,
            limit: free as u64,
            source_of_limit: format!("free memory of GPU {} ({})", dev.ordinal(), dev.name()),
        };
        if let Some(free) = free_memory() {
            if bytes > free {
                return Err(out_of_memory(free));
            }
        }
        // The pool may keep its unused memory in pieces too small for this
        // buffer: handed back to the driver, and allocated again once.
        let slice = dev.stream().alloc_zeros::<T>(len.max(1)).or_else(|e| {
            if e.0 != cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
                || dev.pooled_unused_bytes() == 0
            {
                return Err(e);
            }
            dev.release_pooled().map_err(|_| e)?;
            dev.stream().alloc_zeros::<T>(len.max(1))
        });
        let slice = slice.map_err(|e| {
            let out_of_memory_code = e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY;
            match free_memory() {
                Some(free) if out_of_memory_code => out_of_memory(free),
                free => Error::Cuda {
                    context: format!(
                        "allocating {bytes} bytes for {what} ({} bytes free)",
                        free.map_or("unknown".to_string(), |f| f.to_string())
                    ),
                    message: e.to_string(),
                },
            }
        })?;
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
        dev.wait_idle()
    }

    /// Overwrites the buffer with `host`, which must have the same length
    /// (enqueued on the device's stream).
    pub fn copy_from(&mut self, dev: &CudaDevice, host: &[T]) -> Result<()> {
        if host.len() != self.len {
            return Err(Error::length("device buffer upload", self.len, host.len()));
        }
        if host.is_empty() {
            return Ok(());
        }
        let mut view = self.slice.slice_mut(0..host.len());
        dev.stream()
            .memcpy_htod(host, &mut view)
            .map_err(cuda_err(format!(
                "uploading {} bytes",
                std::mem::size_of_val(host)
            )))
    }

    /// The buffer's contents as a vector (synchronizes).
    pub fn to_vec(&self, dev: &CudaDevice) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); self.len];
        self.download(dev, &mut v)?;
        Ok(v)
    }

    /// Elements `range` as a vector (synchronizes); a range past the end
    /// is an error.
    pub(crate) fn read_at(
        &self,
        dev: &CudaDevice,
        range: std::ops::Range<usize>,
    ) -> Result<Vec<T>> {
        if range.start > range.end || range.end > self.len {
            return Err(Error::invalid(format!(
                "device buffer read of elements {range:?} of {}",
                self.len
            )));
        }
        let mut host = vec![T::zeroed(); range.len()];
        if !host.is_empty() {
            let view = self.slice.slice(range);
            dev.stream()
                .memcpy_dtoh(&view, &mut host)
                .map_err(cuda_err(format!(
                    "downloading {} bytes",
                    std::mem::size_of_val(&host[..])
                )))?;
            dev.wait_idle()?;
        }
        Ok(host)
    }

    /// Sets every byte to zero (asynchronous, on the device's stream).
    pub fn clear(&mut self, dev: &CudaDevice) -> Result<()> {
        dev.stream()
            .memset_zeros(&mut self.slice)
            .map_err(cuda_err("clearing a device buffer"))
    }
}

impl DeviceBuffer<u8> {
    /// Fills the first `count` elements of `pattern.len()` bytes each (1, 4
    /// or 8) with `pattern`: memsets on the device's stream, no host copy
    /// (an 8-byte pattern is two 4-byte memsets with a stride of 8).
    pub(crate) fn fill_bytes(
        &mut self,
        dev: &CudaDevice,
        count: usize,
        pattern: &[u8],
    ) -> Result<()> {
        use cudarc::driver::sys;
        let bytes = count.saturating_mul(pattern.len());
        if bytes > self.len {
            return Err(Error::length("device buffer fill (bytes)", self.len, bytes));
        }
        if count == 0 {
            return Ok(());
        }
        let ptr = self.device_ptr(dev);
        let stream = dev.stream().cu_stream();
        let word = |b: &[u8]| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        let context = || format!("filling {bytes} bytes of device memory");
        dev.context()
            .bind_to_thread()
            .map_err(cuda_err(context()))?;
        // SAFETY: `ptr` is this buffer's allocation, of at least `bytes`
        // bytes (checked above), and the memsets are ordered on its stream.
        let r = unsafe {
            match *pattern {
                [b] => sys::cuMemsetD8Async(ptr, b, count, stream).result(),
                [_, _, _, _] => sys::cuMemsetD32Async(ptr, word(pattern), count, stream).result(),
                [_, _, _, _, _, _, _, _] => {
                    sys::cuMemsetD2D32Async(ptr, 8, word(&pattern[..4]), 1, count, stream)
                        .result()
                        .and_then(|()| {
                            sys::cuMemsetD2D32Async(
                                ptr + 4,
                                8,
                                word(&pattern[4..]),
                                1,
                                count,
                                stream,
                            )
                            .result()
                        })
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "cannot fill device memory with {}-byte elements",
                        pattern.len()
                    )))
                }
            }
        };
        r.map_err(cuda_err(context()))
    }
}

impl<T> DeviceBuffer<T> {
    /// Sets every byte to zero under a shared borrow (device memory only;
    /// enqueued on the device's stream).
    pub(crate) fn zero_async(&self, dev: &CudaDevice) -> Result<()> {
        let context = || format!("clearing {} bytes of device memory", self.bytes());
        if self.bytes() == 0 {
            return Ok(());
        }
        dev.context()
            .bind_to_thread()
            .map_err(cuda_err(context()))?;
        // SAFETY: the range is this buffer's allocation.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                self.device_ptr(dev),
                0,
                self.bytes(),
                dev.stream().cu_stream(),
            )
        }
        .map_err(cuda_err(context()))
    }

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

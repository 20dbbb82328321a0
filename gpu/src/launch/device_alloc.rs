//! Making device arrays: zeroed ([`Device::alloc`]), mapped page-locked
//! host memory ([`Device::alloc_mapped`]), or a copy of a host slice
//! ([`Device::upload`]); and waiting for a device ([`Device::synchronize`]).

use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::device::Device;
use crate::launch::device_vec::{
    as_bytes, bytes_of, host_cells, zero, DeviceVec, MappedHost, Storage,
};
use crate::spec::Scalar;
use warpfit_runtime::Result;

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

    /// Hands the device memory warpfit keeps for reuse back to the driver,
    /// once the work enqueued so far is done. Freed buffers stay with the
    /// process (the device's memory pool keeps them, so that the next
    /// allocations need no fresh pages); a process sharing the GPU with
    /// others can give that memory up between phases. A no-op on the CPU.
    ///
    /// # Errors
    /// Device errors.
    pub fn release_unused_memory(&self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            Device::Cuda(d) => d.release_pooled(),
        }
    }
}

//! Where kernels run: [`Device`], the CPU or a CUDA GPU, and what
//! `warpfit info` says about it.

use crate::driver::cuda_device::CudaDevice;

/// Where kernels run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Device {
    /// The host CPU, all cores, through rayon.
    Cpu,
    /// An NVIDIA GPU.
    Cuda(CudaDevice),
}

/// What `warpfit info` prints about a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `cpu` or `cuda`.
    pub backend: &'static str,
    /// The GPU's name, or the CPU's thread count.
    pub name: String,
    /// Compute capability (`sm_90`), for CUDA.
    pub arch: Option<String>,
    /// L2 cache size in bytes, for CUDA.
    pub l2_bytes: Option<usize>,
    /// Streaming multiprocessors, for CUDA.
    pub sm_count: Option<u32>,
}

impl Device {
    /// The CPU backend.
    pub fn cpu() -> Self {
        Device::Cpu
    }

    /// The CUDA device, when this is one.
    pub fn cuda(&self) -> Option<&CudaDevice> {
        match self {
            Device::Cpu => None,
            Device::Cuda(c) => Some(c),
        }
    }

    /// Short name of the backend (`cpu` or `cuda`).
    pub fn backend_name(&self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
        }
    }

    /// Name, backend and cache size, for `warpfit info`.
    pub fn describe(&self) -> DeviceInfo {
        match self {
            Device::Cpu => DeviceInfo {
                backend: "cpu",
                name: format!(
                    "host CPU ({} threads)",
                    std::thread::available_parallelism().map_or(1, |n| n.get())
                ),
                arch: None,
                l2_bytes: None,
                sm_count: None,
            },
            Device::Cuda(c) => DeviceInfo {
                backend: "cuda",
                name: c.name().to_string(),
                arch: Some(c.arch().sm()),
                l2_bytes: Some(c.l2_bytes()),
                sm_count: Some(c.sm_count()),
            },
        }
    }
}

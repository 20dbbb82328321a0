//! The bottom of the CUDA backend: the driver's context, stream and device
//! attributes ([`CudaDevice`]), where kernels run ([`Device`]), device
//! memory ([`DeviceBuffer`](buffer::DeviceBuffer)), events, and a keyed
//! slot on each device for what the layers above keep per device.
//!
//! Nothing here compiles or launches a kernel: those layers sit above.

pub mod buffer;
pub(crate) mod cuda_device;
pub(crate) mod device;
pub(crate) mod errors;
pub mod event_timer;
pub(crate) mod extensions;
pub(crate) mod memory_pool;

//! The device layer of warpfit: where a launch runs (CPU or CUDA), the
//! kernel description generated code hands over, and the CUDA backend:
//! NVRTC compilation with an on-disk cache ([`compile`]), module loading and
//! launches ([`launch`]), device buffers ([`buffer`]), and the cuSPARSE
//! baseline ([`baseline`]). Every CUDA library is loaded at run time and
//! probed first ([`probe`]), so the crate builds and its CPU paths run on
//! machines without CUDA.

pub mod baseline;
pub mod bench;
pub mod buffer;
pub mod compile;
mod device;
pub mod launch;
pub mod probe;
pub mod spec;

pub use compile::Arch;
pub use device::{
    auto_serial_max, auto_split, CudaDevice, Decomposition, Device, DeviceInfo, LaunchConfig,
    Split, ENTRY_POINTS, LOCAL_SERIAL_MAX, PACKED_WARP_BUDGET, PACK_ABOVE, SMALL_LAUNCH_PER_SLOT,
    SMALL_LAUNCH_WHOLE_MAX,
};
pub use spec::{
    Arg, DeviceFnSource, KernelSpec, ParamKind, ParamSpec, Scalar, ScalarType, ScalarValue,
};

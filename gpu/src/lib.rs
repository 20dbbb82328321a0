//! The device layer of warpfit: where a launch runs (CPU or CUDA), the
//! kernel description generated code hands over, and the CUDA backend.

mod device;
pub mod spec;

pub use device::{CudaDevice, Decomposition, Device, LaunchConfig};
pub use spec::{Arg, DeviceFnSource, KernelSpec, ParamKind, ParamSpec, Scalar, ScalarType, ScalarValue};

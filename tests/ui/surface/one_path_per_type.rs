// Each type has one path: the façade's. The device crate's modules, and the
// old second paths through `warpfit::gpu`, are not public.
use warpfit::gpu::Device;
use warpfit::gpu::launch::Prepared;
use warpfit_gpu::buffer::DeviceBuffer;
use warpfit_gpu::launch::CudaLaunch;

fn main() {}

// What generated code needs is not part of the public surface: it is
// reachable only under the hidden `__private` path.
use warpfit::KernelSpec;
use warpfit::Arg;
use warpfit_gpu::spec::ParamKind;

fn main() {}

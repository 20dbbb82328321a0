// The round backend's internals have no public path: `Bind` is only the
// argument of the closure `CudaRounds::frontier` takes, `RoundKey` a sealed
// bound of `CudaRounds::key`, and the constants are the backend's own.
use warpfit::gpu::Bind;
use warpfit_gpu::RoundKey;

fn main() {
    let _ = warpfit_gpu::CUDA_ROUNDS_PER_SYNC;
    let _ = warpfit_gpu::DONATION_BOARD_BYTES;
}

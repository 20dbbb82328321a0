//! Faults of the environment rather than the input, on a real GPU: a device
//! allocation larger than the free memory, a kernel cache directory that
//! cannot be written, a kernel that does not compile. Each must come back as
//! an `Err` naming what was asked (bytes, directory, kernel), never a panic,
//! and leave the device usable.
//!
//! Skips without a GPU, except under `WARPFIT_REQUIRE_GPU=1` (set by
//! `scripts/gpu-check`), where it fails. One test function: it sets
//! `WARPFIT_CACHE_DIR`, which is process-wide.

mod common;

use common::SPMV_F32;
use warpfit_gpu::__private::compile::CACHE_DIR_ENV;
use warpfit_gpu::__private::{AccType, KernelSpec, ScalarType};
use warpfit_gpu::CudaDevice;
use warpfit_gpu::DeviceBuffer;
use warpfit_runtime::Error;

fn device() -> Option<CudaDevice> {
    match CudaDevice::new(0) {
        Ok(d) => Some(d),
        Err(e) => {
            if std::env::var("WARPFIT_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("WARPFIT_REQUIRE_GPU=1 and no CUDA device: {e}");
            }
            common::skip::skipped(env!("CARGO_CRATE_NAME"), &e);
            None
        }
    }
}

static NOT_CUDA: KernelSpec = KernelSpec {
    name: "not_cuda",
    cuda_source: "this is not CUDA C++ {",
    device_fns: &[],
    params: &[],
    acc: AccType::Scalar(ScalarType::F32),
    elementwise: false,
    donates: false,
    index_encoding: warpfit_gpu::__private::IndexEncoding::Plain,
    columns: None,
    checks_at_end_columns: false,
};

#[test]
fn environment_faults_are_errors() {
    let Some(dev) = device() else { return };
    let free = dev.context().mem_get_info().expect("free device memory").0;

    // An upload larger than the GPU, on purpose: refused with the bytes
    // asked and free.
    let asked = free + (1 << 30);
    match DeviceBuffer::<u8>::zeros(&dev, asked) {
        Err(Error::MemoryLimit {
            needed,
            limit,
            source_of_limit,
            ..
        }) => {
            assert_eq!(needed, asked as u64);
            assert!(limit < needed, "free {limit} vs asked {needed}");
            assert!(source_of_limit.contains("GPU 0"), "{source_of_limit}");
        }
        other => panic!("expected an out-of-memory error, got {other:?}"),
    }
    let msg = DeviceBuffer::<f64>::zeros(&dev, asked / 8 + 1)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("out of memory") && msg.contains("bytes"),
        "{msg}"
    );
    // A size that overflows: an error, not a panic or a wrapped small size.
    assert!(DeviceBuffer::<u64>::zeros(&dev, usize::MAX).is_err());
    // The device is still usable.
    let b = DeviceBuffer::upload(&dev, &[1.0f32, 2.0, 3.0]).expect("small upload after OOM");
    assert_eq!(b.to_vec(&dev).unwrap(), vec![1.0, 2.0, 3.0]);

    // A kernel that does not compile: an error naming it.
    match dev.compile_report(&NOT_CUDA) {
        Err(e) => assert!(e.to_string().contains("not_cuda"), "{e}"),
        Ok(_) => panic!("invalid CUDA compiled"),
    }

    // A cache directory that cannot be created (its parent is a file):
    // compiling still answers, with the kernel or an error naming the
    // directory, never a panic.
    let blocker = std::env::temp_dir().join(format!("warpfit-not-a-dir-{}", std::process::id()));
    std::fs::write(&blocker, b"a file, not a directory").unwrap();
    std::env::set_var(CACHE_DIR_ENV, blocker.join("cache"));
    let fresh = CudaDevice::new(0).expect("the device opens again");
    match fresh.compile_report(&SPMV_F32) {
        Ok(_) => {}
        Err(e) => assert!(e.to_string().contains("warpfit-not-a-dir"), "{e}"),
    }
    std::env::remove_var(CACHE_DIR_ENV);
    let _ = std::fs::remove_file(&blocker);
}

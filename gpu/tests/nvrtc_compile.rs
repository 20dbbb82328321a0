//! Compiles every fixture kernel — hence every decomposition and task source
//! the entry points instantiate, the merge and the size kernels — with NVRTC
//! to CUBIN for sm_80 and sm_90. Needs only NVRTC, no GPU. Without NVRTC the
//! test is skipped, except under `CI=true`, where it fails.

mod common;

use warpfit_gpu::compile::{compile_uncached, translation_unit};
use warpfit_gpu::probe::{self, Library};
use warpfit_gpu::{Arch, ENTRY_POINTS};

fn nvrtc_or_skip() -> bool {
    match probe::require(Library::Nvrtc) {
        Ok(()) => true,
        Err(e) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("CI=true and NVRTC cannot be loaded: {e}");
            }
            eprintln!("skipping: {e}");
            false
        }
    }
}

#[test]
fn every_kernel_and_decomposition_compiles_for_sm80_and_sm90() {
    if !nvrtc_or_skip() {
        return;
    }
    for spec in common::ALL {
        let tu = translation_unit(spec);
        for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
            let c = compile_uncached(spec.name, &tu, arch).unwrap_or_else(|e| panic!("{e}"));
            if std::env::var_os("WARPFIT_SHOW_PTXAS").is_some() {
                eprintln!("--- {} {arch} ---\n{}", spec.name, c.log);
            }
            // A CUBIN is an ELF image.
            assert_eq!(
                &c.cubin[..4],
                b"\x7fELF",
                "{} {arch}: not an ELF image",
                spec.name
            );
            for ep in ENTRY_POINTS {
                assert!(
                    c.cubin.windows(ep.len()).any(|w| w == ep.as_bytes()),
                    "{} {arch}: entry point {ep} missing from the CUBIN",
                    spec.name
                );
                assert!(
                    c.log.contains(ep),
                    "{} {arch}: no ptxas report for {ep} (where a CUDA driver is installed, \
                     NVRTC may serve the CUBIN from the compute cache without one: \
                     run with CUDA_CACHE_DISABLE=1):\n{}",
                    spec.name,
                    c.log
                );
            }
            // No entry point spills more than a word or two (ptxas sometimes
            // parks one 8-byte value across a warp barrier; more would mean a
            // register array went to local memory).
            for line in c.log.lines().filter(|l| l.contains("bytes spill stores")) {
                let bytes: u32 = line
                    .split("bytes spill stores")
                    .next()
                    .and_then(|h| h.rsplit(',').next())
                    .and_then(|n| n.trim().parse().ok())
                    .unwrap_or(u32::MAX);
                assert!(bytes <= 16, "{} {arch}: {line}", spec.name);
            }
        }
    }
}

#[test]
fn a_compile_error_carries_the_log_and_the_source() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "#include \"warpfit/kernel.cuh\"\nnamespace wf_bad { this is not C++; }\n";
    let err = compile_uncached("bad", src, Arch::new(9, 0)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("NVRTC failed to compile kernel `bad` for sm_90"),
        "{msg}"
    );
    assert!(msg.contains("this is not C++"), "{msg}");
    assert!(msg.contains("error"), "{msg}");
}

/// types.cuh rejects targets older than the minimum architecture the
/// device check enforces (abi.rs tests that both name the same one).
#[test]
fn targets_before_sm80_are_rejected_by_the_device_library() {
    if !nvrtc_or_skip() {
        return;
    }
    let tu = translation_unit(&common::SPMV_F32);
    let msg = compile_uncached("spmv_f32", &tu, Arch::new(7, 5))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("warpfit's device library needs compute capability 8.0 or newer"),
        "{msg}"
    );
}

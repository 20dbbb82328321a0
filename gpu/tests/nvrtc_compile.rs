//! Compiles every fixture kernel — hence every decomposition and task source
//! the entry points instantiate, the merge and the size kernels — with NVRTC
//! to CUBIN for sm_80 and sm_90, each entry point alone (as the device
//! compiles them) and all together, and checks the on-disk kernel cache.
//! Needs only NVRTC, no GPU. Without NVRTC the tests are skipped, except
//! under `CI=true`, where they fail.

mod common;

use std::collections::HashMap;
use warpfit_gpu::compile::{compile_uncached, entry_point_unit, translation_unit, Compiled};
use warpfit_gpu::probe::{self, Library};
use warpfit_gpu::{Arch, KernelSpec, ENTRY_POINTS};

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

/// Registers and spill-store bytes per entry point, from a ptxas report.
fn ptxas_report(log: &str) -> HashMap<String, (u32, u32)> {
    let mut out = HashMap::new();
    let mut current: Option<String> = None;
    let number_before = |line: &str, what: &str| -> Option<u32> {
        line.split(what)
            .next()?
            .rsplit([',', ':'])
            .next()?
            .trim()
            .parse()
            .ok()
    };
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_string);
        } else if let Some(ep) = &current {
            let e = out.entry(ep.clone()).or_insert((u32::MAX, u32::MAX));
            if line.contains("bytes spill stores") {
                e.1 = number_before(line, "bytes spill stores").unwrap_or(u32::MAX);
            }
            if line.contains(" registers") {
                e.0 = number_before(line, "registers").unwrap_or(u32::MAX);
            }
        }
    }
    out
}

/// Each entry point compiled alone, as the device compiles them, on as
/// many threads as there are entry points.
fn compile_each_entry_point(spec: &KernelSpec, arch: Arch) -> Vec<(&'static str, Compiled)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = ENTRY_POINTS
            .iter()
            .map(|&ep| {
                s.spawn(move || {
                    let tu = entry_point_unit(spec, &[ep]).unwrap_or_else(|e| panic!("{e}"));
                    let c = compile_uncached(&format!("{}.{ep}", spec.name), &tu, arch)
                        .unwrap_or_else(|e| panic!("{e}"));
                    (ep, c)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("compile thread"))
            .collect()
    })
}

#[test]
fn every_kernel_and_decomposition_compiles_for_sm80_and_sm90() {
    if !nvrtc_or_skip() {
        return;
    }
    for spec in common::ALL {
        for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
            // The whole set in one module (as before per-entry modules), the
            // reference the modules of single entry points must match.
            let whole = compile_uncached(spec.name, &translation_unit(spec), arch)
                .unwrap_or_else(|e| panic!("{e}"));
            let whole_report = ptxas_report(&whole.log);
            for (ep, c) in compile_each_entry_point(spec, arch) {
                if std::env::var_os("WARPFIT_SHOW_PTXAS").is_some() {
                    eprintln!("--- {} {ep} {arch} ---\n{}", spec.name, c.log);
                }
                // A CUBIN is an ELF image.
                assert_eq!(
                    &c.cubin[..4],
                    b"\x7fELF",
                    "{} {ep} {arch}: not an ELF image",
                    spec.name
                );
                assert!(
                    c.cubin.windows(ep.len()).any(|w| w == ep.as_bytes()),
                    "{} {arch}: entry point {ep} missing from its CUBIN",
                    spec.name
                );
                let report = ptxas_report(&c.log);
                let Some(&(regs, spill)) = report.get(ep) else {
                    panic!(
                        "{} {arch}: no ptxas report for {ep} (where a CUDA driver is installed, \
                         NVRTC may serve the CUBIN from the compute cache without one: \
                         run with CUDA_CACHE_DISABLE=1):\n{}",
                        spec.name, c.log
                    )
                };
                assert!(regs <= 255, "{} {ep} {arch}: registers not reported", spec.name);
                // Only the entry point asked for is compiled.
                assert_eq!(report.len(), 1, "{} {ep} {arch}:\n{}", spec.name, c.log);
                // No entry point spills more than a word or two (ptxas
                // sometimes parks one 8-byte value across a warp barrier;
                // more would mean a register array went to local memory).
                assert!(spill <= 16, "{} {ep} {arch}: {spill} bytes spilled", spec.name);
                // Compiled alone, an entry point gets the code it gets among
                // all the others: no more registers, no more spills.
                let Some(&(whole_regs, whole_spill)) = whole_report.get(ep) else {
                    panic!("{} {arch}: no ptxas report for {ep} in the whole module", spec.name)
                };
                assert!(
                    regs <= whole_regs && spill <= whole_spill,
                    "{} {ep} {arch}: alone {regs} registers, {spill} bytes spilled; \
                     in the whole module {whole_regs} and {whole_spill}",
                    spec.name
                );
            }
        }
    }
}

#[test]
fn an_unknown_entry_point_is_an_error() {
    let err = entry_point_unit(&common::SPMV_F64, &["wf_warp_all"]).unwrap_err();
    assert!(
        err.to_string()
            .contains("`wf_warp_all` is not an entry point of the device library"),
        "{err}"
    );
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

//! Compiles every fixture kernel — hence every decomposition and task source
//! the entry points instantiate, the merge and the size kernels — with NVRTC
//! to CUBIN for sm_80 and sm_90, each entry point alone (as the device
//! compiles them) and all together, and checks the on-disk kernel cache.
//! Needs only NVRTC, no GPU. Without NVRTC the tests are skipped, except
//! under `CI=true`, where they fail.

mod common;

use std::collections::HashMap;
use warpfit_gpu::__private::compile::{
    compile_uncached, entry_point_unit, translation_unit, Compiled,
};
use warpfit_gpu::__private::{KernelSpec, ENTRY_POINTS};
use warpfit_gpu::probe::{self, Library};
use warpfit_gpu::Arch;

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
            .split_whitespace()
            .last()?
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

/// Each entry point compiled alone, as the device compiles them, on one
/// thread per core (each NVRTC run holds a few hundred MB at its peak).
fn compile_each_entry_point(spec: &KernelSpec, arch: Arch) -> Vec<(&'static str, Compiled)> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut out: Vec<(&'static str, Compiled)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(ENTRY_POINTS.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    while let Some(&ep) = ENTRY_POINTS.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let tu = entry_point_unit(spec, &[ep]).unwrap_or_else(|e| panic!("{e}"));
                        let c = compile_uncached(&format!("{}.{ep}", spec.name), &tu, arch)
                            .unwrap_or_else(|e| panic!("{e}"));
                        done.push((ep, c));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("compile thread"))
            .collect()
    });
    out.sort_by_key(|(ep, _)| ENTRY_POINTS.iter().position(|e| e == ep));
    assert_eq!(out.len(), ENTRY_POINTS.len());
    out
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
                assert!(
                    regs <= 255,
                    "{} {ep} {arch}: registers not reported",
                    spec.name
                );
                // Only the entry point asked for is compiled.
                assert_eq!(report.len(), 1, "{} {ep} {arch}:\n{}", spec.name, c.log);
                // No entry point spills more than a word or two (ptxas
                // sometimes parks one 8-byte value across a warp barrier;
                // more would mean a register array went to local memory).
                assert!(
                    spill <= 16,
                    "{} {ep} {arch}: {spill} bytes spilled",
                    spec.name
                );
                // Compiled alone, an entry point gets the code it gets among
                // all the others: no more registers, no more spills.
                let Some(&(whole_regs, whole_spill)) = whole_report.get(ep) else {
                    panic!(
                        "{} {arch}: no ptxas report for {ep} in the whole module",
                        spec.name
                    )
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
fn the_layout_library_compiles_for_sm80_and_sm90_without_spills() {
    if !nvrtc_or_skip() {
        return;
    }
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let c = compile_uncached(
            "layout",
            &warpfit_gpu::__private::compile::layout_unit(),
            arch,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&c.cubin[..4], b"\x7fELF", "layout {arch}: not an ELF image");
        let report = ptxas_report(&c.log);
        for ep in warpfit_gpu::__private::compile::LAYOUT_ENTRY_POINTS {
            let Some(&(_, spill)) = report.get(*ep) else {
                panic!("layout {arch}: no ptxas report for {ep}:\n{}", c.log)
            };
            assert_eq!(spill, 0, "layout {ep} {arch}: {spill} bytes spilled");
        }
        assert_eq!(
            report.len(),
            warpfit_gpu::__private::compile::LAYOUT_ENTRY_POINTS.len(),
            "{}",
            c.log
        );
    }
}

/// The level order's kernels (`levels.cuh`), every element width of the
/// renumbering included.
#[test]
fn the_level_order_library_compiles_for_sm80_and_sm90_without_spills() {
    if !nvrtc_or_skip() {
        return;
    }
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let c = compile_uncached(
            "levels",
            &warpfit_gpu::__private::compile::levels_unit(),
            arch,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&c.cubin[..4], b"\x7fELF", "levels {arch}: not an ELF image");
        let report = ptxas_report(&c.log);
        for ep in warpfit_gpu::__private::compile::LEVELS_ENTRY_POINTS {
            let Some(&(_, spill)) = report.get(*ep) else {
                panic!("levels {arch}: no ptxas report for {ep}:\n{}", c.log)
            };
            assert_eq!(spill, 0, "levels {ep} {arch}: {spill} bytes spilled");
        }
        assert_eq!(
            report.len(),
            warpfit_gpu::__private::compile::LEVELS_ENTRY_POINTS.len(),
            "{}",
            c.log
        );
    }
}

/// The round backend's kernels (`rounds.cuh`), every key type's entry
/// points included.
#[test]
fn the_round_kernels_compile_for_sm80_and_sm90_without_spills() {
    if !nvrtc_or_skip() {
        return;
    }
    let entry_points = warpfit_gpu::__private::compile::ROUNDS_ENTRY_POINTS;
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let c = compile_uncached(
            "rounds",
            &warpfit_gpu::__private::compile::rounds_unit(),
            arch,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&c.cubin[..4], b"\x7fELF", "rounds {arch}: not an ELF image");
        let report = ptxas_report(&c.log);
        for ep in entry_points {
            let Some(&(_, spill)) = report.get(*ep) else {
                panic!("rounds {arch}: no ptxas report for {ep}:\n{}", c.log)
            };
            assert_eq!(spill, 0, "rounds {ep} {arch}: {spill} bytes spilled");
        }
        assert_eq!(report.len(), entry_points.len(), "{}", c.log);
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

// ------------------------------------------------------------ kernel cache

mod cache {
    use super::nvrtc_or_skip;
    use std::path::{Path, PathBuf};
    use warpfit_gpu::__private::compile::{
        cache_entry_path, compile_cached, entry_point_unit, lookup_cached, store_cached,
    };
    use warpfit_gpu::Arch;

    const ARCH: Arch = Arch::new(9, 0);
    const LABEL: &str = "spmv_f32.wf_sizes";

    /// A fresh, empty directory under the temporary one, removed on drop.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new(name: &str) -> Self {
            let d =
                std::env::temp_dir().join(format!("warpfit-cache-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            TempDir(d)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The smallest entry point of a fixture: quick to compile.
    fn source() -> String {
        entry_point_unit(&super::common::SPMV_F32, &["wf_sizes"]).unwrap()
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Compiles into an empty `dir`, then checks that `damage` of the entry
    /// makes the next call recompile (same CUBIN) and replace the entry, so
    /// that the call after that is a hit again.
    fn recompiles_after(name: &str, damage: impl FnOnce(&Path)) {
        let dir = TempDir::new(name);
        let src = source();
        let cold = compile_cached(LABEL, &src, ARCH, Some(&dir.0)).unwrap();
        assert!(!cold.cached && cold.cache_warning.is_none());
        let path = cache_entry_path(LABEL, &src, ARCH, &dir.0).unwrap();
        damage(&path);
        assert!(
            lookup_cached(LABEL, &src, ARCH, Some(&dir.0))
                .unwrap()
                .is_none(),
            "{name}: the damaged entry was accepted"
        );
        let again = compile_cached(LABEL, &src, ARCH, Some(&dir.0)).unwrap();
        assert!(!again.cached, "{name}: the damaged entry was loaded");
        assert_eq!(again.cubin, cold.cubin, "{name}");
        let warm = compile_cached(LABEL, &src, ARCH, Some(&dir.0)).unwrap();
        assert!(warm.cached, "{name}: the entry was not replaced");
        assert_eq!(warm.cubin, cold.cubin, "{name}");
        // Written through a temporary name: nothing else is left behind.
        assert_eq!(files(&dir.0).len(), 1, "{name}: {:?}", files(&dir.0));
    }

    #[test]
    fn a_warm_lookup_returns_the_binary_from_a_private_directory() {
        if !nvrtc_or_skip() {
            return;
        }
        let dir = TempDir::new("warm");
        let nested = dir.0.join("a").join("b");
        let src = source();
        let cold = compile_cached(LABEL, &src, ARCH, Some(&nested)).unwrap();
        let warm = compile_cached(LABEL, &src, ARCH, Some(&nested)).unwrap();
        assert!(!cold.cached && warm.cached);
        assert_eq!(cold.cubin, warm.cubin);
        assert!(warm.log.is_empty(), "a hit runs no NVRTC, so has no log");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for d in [&dir.0, &dir.0.join("a"), &nested] {
                let mode = std::fs::metadata(d).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o700, "{}", d.display());
            }
            let entry = cache_entry_path(LABEL, &src, ARCH, &nested).unwrap();
            let mode = std::fs::metadata(entry).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }

    #[test]
    fn a_corrupted_binary_is_recompiled_and_replaced() {
        if !nvrtc_or_skip() {
            return;
        }
        recompiles_after("corrupt", |p| {
            let mut b = std::fs::read(p).unwrap();
            let last = b.len() - 100;
            b[last] ^= 0x40;
            std::fs::write(p, b).unwrap();
        });
    }

    #[test]
    fn a_corrupted_checksum_is_recompiled_and_replaced() {
        if !nvrtc_or_skip() {
            return;
        }
        recompiles_after("checksum", |p| {
            let mut b = std::fs::read(p).unwrap();
            let first_digit = b.iter().position(|&c| c == b'\n').unwrap() + 1;
            b[first_digit] = if b[first_digit] == b'0' { b'1' } else { b'0' };
            std::fs::write(p, b).unwrap();
        });
    }

    #[test]
    fn a_truncated_entry_is_recompiled_and_replaced() {
        if !nvrtc_or_skip() {
            return;
        }
        recompiles_after("truncated", |p| {
            let b = std::fs::read(p).unwrap();
            std::fs::write(p, &b[..b.len() / 2]).unwrap();
        });
        recompiles_after("one-byte-short", |p| {
            let b = std::fs::read(p).unwrap();
            std::fs::write(p, &b[..b.len() - 1]).unwrap();
        });
        recompiles_after("empty", |p| std::fs::write(p, b"").unwrap());
    }

    #[test]
    fn a_deleted_entry_is_recompiled() {
        if !nvrtc_or_skip() {
            return;
        }
        recompiles_after("deleted", |p| std::fs::remove_file(p).unwrap());
    }

    #[test]
    fn an_entry_of_another_source_or_not_elf_is_refused() {
        if !nvrtc_or_skip() {
            return;
        }
        // Another kernel's valid entry under this source's name (a key
        // collision, or a planted file): the stored source differs.
        recompiles_after("collision", |p| {
            let dir = p.parent().unwrap();
            let other = entry_point_unit(&super::common::SPMV_F64, &["wf_sizes"]).unwrap();
            let planted = store_cached("other", &other, ARCH, dir, b"\x7fELF other").unwrap();
            std::fs::rename(planted, p).unwrap();
        });
        // A well-formed entry whose binary is not an ELF image.
        recompiles_after("not-elf", |p| {
            let dir = p.parent().unwrap();
            store_cached(LABEL, &source(), ARCH, dir, b"MZ not a cubin").unwrap();
        });
    }

    #[test]
    fn a_cache_path_that_cannot_be_written_falls_back_to_compiling_with_a_warning() {
        if !nvrtc_or_skip() {
            return;
        }
        let dir = TempDir::new("unwritable");
        std::fs::create_dir_all(&dir.0).unwrap();
        let file = dir.0.join("a-file");
        std::fs::write(&file, b"not a directory").unwrap();
        let src = source();
        // The cache path is a file, or lies under one: compiled, uncached,
        // with the reason naming the path.
        for bad in [file.clone(), file.join("sub")] {
            let c = compile_cached(LABEL, &src, ARCH, Some(&bad)).unwrap();
            assert!(!c.cached);
            assert_eq!(&c.cubin[..4], b"\x7fELF");
            let why = c.cache_warning.expect("a warning");
            assert!(why.contains(&bad.display().to_string()), "{why}");
            let err = store_cached(LABEL, &src, ARCH, &bad, &c.cubin).unwrap_err();
            assert!(
                err.to_string().contains(&bad.display().to_string()),
                "{err}"
            );
        }
        assert_eq!(std::fs::read(&file).unwrap(), b"not a directory");
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_other_users_may_write_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        if !nvrtc_or_skip() {
            return;
        }
        let dir = TempDir::new("shared");
        let src = source();
        let compiled = compile_cached(LABEL, &src, ARCH, Some(&dir.0)).unwrap();
        assert!(compiled.cache_warning.is_none());
        std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o777)).unwrap();
        // A valid entry is there, but anyone could have planted it.
        assert!(lookup_cached(LABEL, &src, ARCH, Some(&dir.0))
            .unwrap()
            .is_none());
        let c = compile_cached(LABEL, &src, ARCH, Some(&dir.0)).unwrap();
        assert!(!c.cached);
        let why = c.cache_warning.expect("a warning");
        assert!(why.contains("writable by other users"), "{why}");
        // Left as the user set it.
        let mode = std::fs::metadata(&dir.0).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o777);
    }
}

/// The device planner's kernels (`plan.cuh`): column blocks, scans,
/// renumbering permutations, the locality sample and the digest.
#[test]
fn the_device_planner_compiles_for_sm80_and_sm90_without_spills() {
    if !nvrtc_or_skip() {
        return;
    }
    let entry_points = warpfit_gpu::__private::compile::PLAN_ENTRY_POINTS;
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let c = compile_uncached("plan", &warpfit_gpu::__private::compile::plan_unit(), arch)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&c.cubin[..4], b"\x7fELF", "plan {arch}: not an ELF image");
        let report = ptxas_report(&c.log);
        for ep in entry_points {
            let Some(&(_, spill)) = report.get(*ep) else {
                panic!("plan {arch}: no ptxas report for {ep}:\n{}", c.log)
            };
            assert_eq!(spill, 0, "plan {ep} {arch}: {spill} bytes spilled");
        }
        assert_eq!(report.len(), entry_points.len(), "{}", c.log);
    }
}

/// The task cut's kernels (`task_cut.cuh`): a launch's task list cut and
/// its CTE warps packed on the device, with their scan.
#[test]
fn the_task_cut_compiles_for_sm80_and_sm90_without_spills() {
    if !nvrtc_or_skip() {
        return;
    }
    let entry_points = warpfit_gpu::__private::compile::TASK_CUT_ENTRY_POINTS;
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let c = compile_uncached(
            "task_cut",
            &warpfit_gpu::__private::compile::task_cut_unit(),
            arch,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            &c.cubin[..4],
            b"\x7fELF",
            "task_cut {arch}: not an ELF image"
        );
        let report = ptxas_report(&c.log);
        for ep in entry_points {
            let Some(&(_, spill)) = report.get(*ep) else {
                panic!("task_cut {arch}: no ptxas report for {ep}:\n{}", c.log)
            };
            assert_eq!(spill, 0, "task_cut {ep} {arch}: {spill} bytes spilled");
        }
        assert_eq!(report.len(), entry_points.len(), "{}", c.log);
    }
}

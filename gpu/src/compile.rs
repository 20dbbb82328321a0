//! NVRTC compilation of a kernel's translation unit to CUBIN, with an
//! on-disk cache.
//!
//! The translation unit is the device library (passed to NVRTC as named
//! headers `warpfit/*.cuh`: NVRTC cannot read files), the kernel's
//! generated source, and one `WARPFIT_ENTRY_POINTS` line that instantiates
//! every decomposition and task source. CUBIN for the device's exact
//! architecture is cached under `$WARPFIT_CACHE_DIR` (else the user cache
//! directory), keyed by a hash of the full source, the architecture, the
//! NVRTC version and the options: a warm launch loads the file and never
//! runs NVRTC. The cached source is stored beside the binary and compared
//! on every hit, so a hash collision costs a recompile, never a wrong kernel.

use crate::probe::{self, Library};
use crate::spec::KernelSpec;
use cudarc::nvrtc::sys as nv;
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use warpfit_runtime::{Error, Result};

/// The device library, as NVRTC include names and contents.
pub const LIBRARY_HEADERS: &[(&str, &str)] = &[
    ("warpfit/types.cuh", include_str!("../cuda/types.cuh")),
    ("warpfit/fault.cuh", include_str!("../cuda/fault.cuh")),
    ("warpfit/rust_ops.cuh", include_str!("../cuda/rust_ops.cuh")),
    ("warpfit/warp.cuh", include_str!("../cuda/warp.cuh")),
    ("warpfit/pdl.cuh", include_str!("../cuda/pdl.cuh")),
    (
        "warpfit/task_source.cuh",
        include_str!("../cuda/task_source.cuh"),
    ),
    ("warpfit/thread.cuh", include_str!("../cuda/thread.cuh")),
    ("warpfit/subwarp.cuh", include_str!("../cuda/subwarp.cuh")),
    ("warpfit/cte.cuh", include_str!("../cuda/cte.cuh")),
    ("warpfit/merge.cuh", include_str!("../cuda/merge.cuh")),
    ("warpfit/kernel.cuh", include_str!("../cuda/kernel.cuh")),
];

/// Environment variable that overrides the compile cache directory.
pub const CACHE_DIR_ENV: &str = "WARPFIT_CACHE_DIR";

/// A GPU architecture (compute capability), e.g. 9.0 for the H100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
}

impl Arch {
    /// Compute capability `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        Arch { major, minor }
    }

    /// The NVRTC target name, `sm_90` for 9.0.
    pub fn sm(&self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.sm())
    }
}

/// Source of the entry points of `spec`: the device library include, the
/// kernel's device functions and functor, and the instantiation line.
pub fn translation_unit(spec: &KernelSpec) -> String {
    format!(
        "#include \"warpfit/kernel.cuh\"\n{}\nWARPFIT_ENTRY_POINTS(wf_{}::Kernel)\n",
        spec.assembled_source(),
        spec.name
    )
}

/// The loaded NVRTC's version.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    probe::require(Library::Nvrtc)?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (probe above); two valid out-pointers.
    let r = unsafe { nv::nvrtcVersion(&mut major, &mut minor) };
    check(r, "nvrtcVersion")?;
    Ok((major, minor))
}

fn check(r: nv::nvrtcResult, what: &str) -> Result<()> {
    if r == nv::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    // SAFETY: NVRTC returns a static string for every result code.
    let msg = unsafe { CStr::from_ptr(nv::nvrtcGetErrorString(r)) }
        .to_string_lossy()
        .into_owned();
    Err(Error::Cuda {
        context: what.to_string(),
        message: msg,
    })
}

/// A compiled kernel module.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub cubin: Vec<u8>,
    /// NVRTC's log (with `--ptxas-options=-v`: registers and spills per
    /// entry point). Empty when the module came from the cache.
    pub log: String,
    /// Whether the module came from the on-disk cache.
    pub cached: bool,
}

/// Options every kernel is compiled with. `--fmad=false`: Rust never fuses
/// a multiply and an add implicitly, and the CPU twin is the reference.
fn options(arch: Arch) -> Vec<String> {
    vec![
        format!("--gpu-architecture={}", arch.sm()),
        "-std=c++17".into(),
        "--fmad=false".into(),
        "-lineinfo".into(),
        "--ptxas-options=-v".into(),
    ]
}

/// Compiles `source` (which includes `warpfit/kernel.cuh`) to CUBIN for
/// `arch`, without the cache. `kernel` names it in errors.
pub fn compile_uncached(kernel: &str, source: &str, arch: Arch) -> Result<Compiled> {
    probe::require(Library::Nvrtc)?;
    let src = CString::new(source)
        .map_err(|_| Error::invalid(format!("kernel `{kernel}`: source holds a NUL byte")))?;
    let name = CString::new(format!("{kernel}.cu"))
        .map_err(|_| Error::invalid("kernel name holds a NUL byte"))?;
    let hnames: Vec<CString> = LIBRARY_HEADERS
        .iter()
        .map(|(n, _)| CString::new(*n).expect("static name"))
        .collect();
    let hsrcs: Vec<CString> = LIBRARY_HEADERS
        .iter()
        .map(|(_, s)| CString::new(*s).expect("static source"))
        .collect();
    let hname_ptrs: Vec<*const std::ffi::c_char> = hnames.iter().map(|s| s.as_ptr()).collect();
    let hsrc_ptrs: Vec<*const std::ffi::c_char> = hsrcs.iter().map(|s| s.as_ptr()).collect();
    let mut prog: nv::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: every pointer is a NUL-terminated string alive for the call;
    // the header arrays have `LIBRARY_HEADERS.len()` entries each.
    let r = unsafe {
        nv::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            hname_ptrs.len() as i32,
            hsrc_ptrs.as_ptr(),
            hname_ptrs.as_ptr(),
        )
    };
    check(r, "nvrtcCreateProgram")?;
    let out = compile_program(prog, kernel, source, arch);
    // SAFETY: `prog` was created above and is destroyed once.
    unsafe { nv::nvrtcDestroyProgram(&mut prog) };
    out
}

fn compile_program(
    prog: nv::nvrtcProgram,
    kernel: &str,
    source: &str,
    arch: Arch,
) -> Result<Compiled> {
    let opts: Vec<CString> = options(arch)
        .into_iter()
        .map(|o| CString::new(o).expect("static option"))
        .collect();
    let opt_ptrs: Vec<*const std::ffi::c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: `prog` is live; the options are NUL-terminated and outlive the call.
    let r = unsafe { nv::nvrtcCompileProgram(prog, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
    let log = program_log(prog)?;
    if r == nv::nvrtcResult::NVRTC_ERROR_COMPILATION {
        return Err(Error::Compile {
            kernel: kernel.to_string(),
            arch: arch.sm(),
            log,
            source_text: source.to_string(),
        });
    }
    check(r, "nvrtcCompileProgram")?;
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully; valid out-pointer.
    check(
        unsafe { nv::nvrtcGetCUBINSize(prog, &mut size) },
        "nvrtcGetCUBINSize",
    )?;
    let mut cubin = vec![0u8; size];
    // SAFETY: the buffer holds exactly the size NVRTC reported.
    check(
        unsafe { nv::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast()) },
        "nvrtcGetCUBIN",
    )?;
    Ok(Compiled {
        cubin,
        log,
        cached: false,
    })
}

fn program_log(prog: nv::nvrtcProgram) -> Result<String> {
    let mut size = 0usize;
    // SAFETY: `prog` is live; valid out-pointer.
    check(
        unsafe { nv::nvrtcGetProgramLogSize(prog, &mut size) },
        "nvrtcGetProgramLogSize",
    )?;
    let mut buf = vec![0u8; size.max(1)];
    // SAFETY: the buffer holds the reported size (NUL included).
    check(
        unsafe { nv::nvrtcGetProgramLog(prog, buf.as_mut_ptr().cast()) },
        "nvrtcGetProgramLog",
    )?;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// The compile cache directory: `$WARPFIT_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/warpfit`, else `$HOME/.cache/warpfit`; `None` when none
/// is set (compiling still works, uncached).
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os(CACHE_DIR_ENV) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("warpfit"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("warpfit"))
}

/// 64-bit FNV-1a, stable across runs and platforms (std's hasher is not).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        // Separate parts so that ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Compiles with the on-disk cache in `dir` (when `Some`). A cache that
/// cannot be written is not an error: the module is still returned.
pub fn compile_cached(
    kernel: &str,
    source: &str,
    arch: Arch,
    dir: Option<&Path>,
) -> Result<Compiled> {
    let Some(dir) = dir else {
        return compile_uncached(kernel, source, arch);
    };
    let (vmaj, vmin) = nvrtc_version()?;
    let opts = options(arch).join(" ");
    let mut parts: Vec<&[u8]> = vec![source.as_bytes(), opts.as_bytes()];
    for (n, s) in LIBRARY_HEADERS {
        parts.push(n.as_bytes());
        parts.push(s.as_bytes());
    }
    let key = fnv1a(&parts);
    let stem = format!("{kernel}-{}-nvrtc{vmaj}.{vmin}-{key:016x}", arch.sm());
    let bin_path = dir.join(format!("{stem}.cubin"));
    let src_path = dir.join(format!("{stem}.cu"));
    if let (Ok(bin), Ok(cached_src)) =
        (std::fs::read(&bin_path), std::fs::read_to_string(&src_path))
    {
        if cached_src == source && !bin.is_empty() {
            return Ok(Compiled {
                cubin: bin,
                log: String::new(),
                cached: true,
            });
        }
    }
    let compiled = compile_uncached(kernel, source, arch)?;
    // Write to temporary names, then rename: concurrent processes never see
    // a half-written file.
    let _ = std::fs::create_dir_all(dir).and_then(|_| {
        let tmp_bin = dir.join(format!("{stem}.cubin.{}", std::process::id()));
        let tmp_src = dir.join(format!("{stem}.cu.{}", std::process::id()));
        std::fs::write(&tmp_src, source)?;
        std::fs::write(&tmp_bin, &compiled.cubin)?;
        std::fs::rename(&tmp_src, &src_path)?;
        std::fs::rename(&tmp_bin, &bin_path)
    });
    Ok(compiled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_separates_parts_and_is_stable() {
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(fnv1a(&[b"warpfit"]), fnv1a(&[b"warpfit"]));
        assert_ne!(fnv1a(&[b"sm_80"]), fnv1a(&[b"sm_90"]));
    }

    #[test]
    fn translation_unit_instantiates_the_kernel_namespace() {
        static SPEC: KernelSpec = KernelSpec {
            name: "k",
            cuda_source: "namespace wf_k {}",
            device_fns: &[],
            params: &[],
            acc: crate::ScalarType::F32,
            elementwise: false,
        };
        let tu = translation_unit(&SPEC);
        assert!(tu.starts_with("#include \"warpfit/kernel.cuh\"\n"));
        assert!(tu.contains("namespace wf_k {}"));
        assert!(tu
            .trim_end()
            .ends_with("WARPFIT_ENTRY_POINTS(wf_k::Kernel)"));
    }

    #[test]
    fn every_library_header_is_listed_once() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| format!("warpfit/{}", e.unwrap().file_name().to_string_lossy()))
            .filter(|n| n.ends_with(".cuh"))
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = LIBRARY_HEADERS.iter().map(|(n, _)| n.to_string()).collect();
        listed.sort();
        assert_eq!(on_disk, listed);
    }
}

//! NVRTC: compiling one translation unit to CUBIN for one architecture,
//! with the options every kernel is built with, and NVRTC's one-time set-up
//! started ahead of the first compile.

use crate::arch::Arch;
use crate::compile::units::LIBRARY_HEADERS;
use crate::probe::{self, Library};
use cudarc::nvrtc::sys as nv;
use std::ffi::{CStr, CString};
use warpfit_runtime::{Error, Result};

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
    /// Why the module could not be stored in the cache directory, when it
    /// could not (it was compiled all the same).
    pub cache_warning: Option<String>,
}

/// Options every kernel is compiled with. `--fmad=false`: Rust never fuses
/// a multiply and an add implicitly, and the CPU twin is the reference.
pub(crate) fn options(arch: Arch) -> Vec<String> {
    vec![
        format!("--gpu-architecture={}", arch.sm()),
        "-std=c++17".into(),
        "--fmad=false".into(),
        "-lineinfo".into(),
        "--ptxas-options=-v".into(),
    ]
}

/// Sets NVRTC up by compiling a one-line kernel, ignoring the result (no
/// NVRTC, or a failure, shows again at the first real compile). NVRTC's
/// first compilation in a process pays a one-time set-up many times the
/// cost of compiling the same trivial program again
/// (`docs/bench/constants-gpu.md`, "warm_up"); run on a thread of its own
/// while the driver creates a context, that set-up leaves a first launch's
/// critical path.
pub fn warm_up() {
    let _ = compile_uncached(
        "warm_up",
        "extern \"C\" __global__ void warpfit_warm_up() {}\n",
        crate::abi::MIN_ARCH,
    );
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

/// With `WARPFIT_TRACE_NVRTC=1`, one line on stderr per NVRTC compile:
/// its label, thread, and start and end as Unix milliseconds, to line the
/// compiles of a first launch up against the process's own start.
struct Trace<'a> {
    kernel: &'a str,
    start: Option<std::time::SystemTime>,
}

impl<'a> Trace<'a> {
    fn start(kernel: &'a str) -> Self {
        let on = std::env::var_os("WARPFIT_TRACE_NVRTC").is_some_and(|v| v == "1");
        Trace {
            kernel,
            start: on.then(std::time::SystemTime::now),
        }
    }
}

impl Drop for Trace<'_> {
    fn drop(&mut self) {
        let Some(start) = self.start else { return };
        let ms = |t: std::time::SystemTime| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64() * 1e3)
        };
        let end = std::time::SystemTime::now();
        eprintln!(
            "nvrtc {} thread={} start_ms={:.1} end_ms={:.1} took_ms={:.1}",
            self.kernel,
            std::thread::current().name().unwrap_or("?"),
            ms(start),
            ms(end),
            ms(end) - ms(start)
        );
    }
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
    let trace = Trace::start(kernel);
    // SAFETY: `prog` is live; the options are NUL-terminated and outlive the call.
    let r = unsafe { nv::nvrtcCompileProgram(prog, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
    drop(trace);
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
        cache_warning: None,
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

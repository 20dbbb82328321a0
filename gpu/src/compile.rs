//! NVRTC compilation of a kernel's entry points to CUBIN, with an on-disk
//! cache that checks what it loads.
//!
//! A translation unit is the device library (passed to NVRTC as named
//! headers `warpfit/*.cuh`: NVRTC cannot read files), the kernel's
//! generated source, and one `WARPFIT_ENTRY_POINT_<name>` line per entry
//! point it instantiates ([`entry_point_unit`]); [`translation_unit`] holds
//! all of them. NVRTC's time goes almost entirely to optimizing and
//! assembling each entry point (the front end parses the library in about
//! 20 ms), so the device compiles one module per entry point, when a launch
//! first needs it, rather than all 17 at once (see `BENCHMARKS.md`, "NVRTC
//! compile time").
//!
//! CUBIN for the device's exact architecture is cached under
//! `$WARPFIT_CACHE_DIR` (else the user cache directory), one file per
//! translation unit, keyed by a hash of the full source, the library, the
//! architecture, the NVRTC version and the options: a warm launch loads the
//! file and never runs NVRTC. Each file holds a checksum, the source and the
//! binary ([`CACHE_FORMAT`]); a file whose checksum, lengths or source do not
//! match is recompiled and replaced, never handed to the driver. Files are
//! written to a temporary name and renamed, and the directory is created
//! private to the user (0700); a directory that other users may write is
//! not used at all, since whatever it holds would be loaded as code.

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
    ("warpfit/index.cuh", include_str!("../cuda/index.cuh")),
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
    ("warpfit/layout.cuh", include_str!("../cuda/layout.cuh")),
    ("warpfit/atomic.cuh", include_str!("../cuda/atomic.cuh")),
    ("warpfit/worklist.cuh", include_str!("../cuda/worklist.cuh")),
    ("warpfit/rounds.cuh", include_str!("../cuda/rounds.cuh")),
    ("warpfit/levels.cuh", include_str!("../cuda/levels.cuh")),
    (
        "warpfit/cte_for_each.cuh",
        include_str!("../cuda/cte_for_each.cuh"),
    ),
];

/// The entry points of the worklist library (`worklist.cuh`): growth and
/// clearing of device worklists, compiled once per device
/// ([`worklist_unit`]).
pub const WORKLIST_ENTRY_POINTS: &[&str] = &["wf_unspill_count", "wf_unspill", "wf_clear"];

/// Source of the worklist library's module: every [`WORKLIST_ENTRY_POINTS`].
pub fn worklist_unit() -> String {
    "#include \"warpfit/worklist.cuh\"\nWARPFIT_WORKLIST_ENTRY_POINTS\n".to_string()
}

/// The entry points of the round backend's kernels (`rounds.cuh`): the
/// bookkeeping around a driver's rounds on CUDA (`CudaRounds`), compiled
/// once per device ([`rounds_unit`]).
pub const ROUNDS_ENTRY_POINTS: &[&str] = &[
    "wf_round_begin",
    "wf_round_finish",
    "wf_round_resume",
    "wf_round_iota",
    "wf_round_split_f32",
    "wf_round_min_key_f32",
    "wf_round_split_u32",
    "wf_round_min_key_u32",
];

/// Source of the round backend's module: every [`ROUNDS_ENTRY_POINTS`].
pub fn rounds_unit() -> String {
    "#include \"warpfit/rounds.cuh\"\nWARPFIT_ROUNDS_ENTRY_POINTS\n".to_string()
}

/// The entry points of the layout library (`layout.cuh`): no kernel of the
/// user's, compiled once per device ([`layout_unit`]).
pub const LAYOUT_ENTRY_POINTS: &[&str] = &[
    "wf_gather_1",
    "wf_gather_2",
    "wf_gather_4",
    "wf_gather_8",
    "wf_copy_ranges_1",
    "wf_copy_ranges_2",
    "wf_copy_ranges_4",
    "wf_copy_ranges_8",
    "wf_delta16_4",
    "wf_delta16_8",
];

/// Source of the layout library's module: every [`LAYOUT_ENTRY_POINTS`].
pub fn layout_unit() -> String {
    "#include \"warpfit/layout.cuh\"\nWARPFIT_LAYOUT_ENTRY_POINTS\n".to_string()
}

/// The entry points of the level order's library (`levels.cuh`): a
/// breadth-first order made on the device and the renumbering by it,
/// compiled once per device ([`levels_unit`]).
pub const LEVELS_ENTRY_POINTS: &[&str] = &[
    "wf_levels_reset",
    "wf_levels_start",
    "wf_levels_claim",
    "wf_levels_count",
    "wf_levels_carry",
    "wf_levels_write",
    "wf_renumber_lengths",
    "wf_scan_carry",
    "wf_renumber_offsets",
    "wf_renumber_rows_1",
    "wf_renumber_rows_2",
    "wf_renumber_rows_4",
    "wf_renumber_rows_8",
];

/// Source of the level order's module: every [`LEVELS_ENTRY_POINTS`].
pub fn levels_unit() -> String {
    "#include \"warpfit/levels.cuh\"\nWARPFIT_LEVELS_ENTRY_POINTS\n".to_string()
}

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
        "{}#include \"warpfit/kernel.cuh\"\n{}\nWARPFIT_ENTRY_POINTS(wf_{}::Kernel)\n",
        spec.index_encoding.unit_prefix(),
        spec.assembled_source(),
        spec.name
    )
}

/// Source of only `entry_points` of `spec` (names from
/// [`crate::ENTRY_POINTS`]): what one module of a launch is compiled from.
pub fn entry_point_unit(spec: &KernelSpec, entry_points: &[&str]) -> Result<String> {
    let mut tu = format!(
        "{}#include \"warpfit/kernel.cuh\"\n{}\n",
        spec.index_encoding.unit_prefix(),
        spec.assembled_source()
    );
    for ep in entry_points {
        if !crate::ENTRY_POINTS.contains(ep) {
            return Err(Error::invalid(format!(
                "kernel `{}`: `{ep}` is not an entry point of the device library",
                spec.name
            )));
        }
        tu.push_str(&format!(
            "WARPFIT_ENTRY_POINT_{ep}(wf_{}::Kernel)\n",
            spec.name
        ));
    }
    Ok(tu)
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
    /// Why the module could not be stored in the cache directory, when it
    /// could not (it was compiled all the same).
    pub cache_warning: Option<String>,
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

/// Sets NVRTC up by compiling a one-line kernel, ignoring the result (no
/// NVRTC, or a failure, shows again at the first real compile). NVRTC's
/// first compilation in a process costs 200 to 300 ms of one-time set-up on
/// an H100 host, the same trivial program compiled again 20 ms
/// (`BENCHMARKS.md`, "First launch on the H100"); run on a thread of its own
/// while the driver creates a context, that set-up leaves a first launch's
/// critical path.
pub fn warm_up() {
    let _ = compile_uncached(
        "warm_up",
        "extern \"C\" __global__ void warpfit_warm_up() {}\n",
        crate::abi::MIN_ARCH,
    );
}

/// Whether a process using the kernel cache `dir` will compile from
/// scratch: there is no cache, or no entry in it (a first run, or a
/// cleared cache).
pub fn cache_is_empty(dir: Option<&Path>) -> bool {
    let Some(dir) = dir else { return true };
    match std::fs::read_dir(dir) {
        Ok(entries) => !entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "wfk")),
        Err(_) => true,
    }
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
///
/// It keys the cache and checksums its files. A checksum has to catch
/// accidents — a file cut short by a full disk or a killed process, a torn
/// write, a flipped bit, a stray edit — and FNV-1a misses one only by a
/// 64-bit collision, with no dependency. A cryptographic hash would add
/// nothing: whoever can write the directory can write a matching checksum
/// with any hash, which is why the directory itself must be private.
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

/// First line of every cache file. A second line follows,
/// `<checksum> <source bytes> <cubin bytes>` (the checksum in 16 hex digits:
/// FNV-1a of the source and the CUBIN as two parts), then the source, then
/// the CUBIN, and nothing else.
pub const CACHE_FORMAT: &str = "warpfit-kernel-cache 1";

/// Where the cache entry of `source` compiled for `arch` lives in `dir`:
/// named after `kernel`, keyed by everything the CUBIN depends on.
pub fn cache_entry_path(kernel: &str, source: &str, arch: Arch, dir: &Path) -> Result<PathBuf> {
    let (vmaj, vmin) = nvrtc_version()?;
    let opts = options(arch).join(" ");
    let mut parts: Vec<&[u8]> = vec![source.as_bytes(), opts.as_bytes()];
    for (n, s) in LIBRARY_HEADERS {
        parts.push(n.as_bytes());
        parts.push(s.as_bytes());
    }
    let key = fnv1a(&parts);
    // Kernel names are Rust identifiers (plus `.entry`); anything else is
    // replaced so that a name can never leave the directory.
    let name: String = kernel
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(dir.join(format!(
        "{name}-{}-nvrtc{vmaj}.{vmin}-{key:016x}.wfk",
        arch.sm()
    )))
}

fn encode_entry(source: &str, cubin: &[u8]) -> Vec<u8> {
    let sum = fnv1a(&[source.as_bytes(), cubin]);
    let mut out = format!(
        "{CACHE_FORMAT}\n{sum:016x} {} {}\n",
        source.len(),
        cubin.len()
    )
    .into_bytes();
    out.extend_from_slice(source.as_bytes());
    out.extend_from_slice(cubin);
    out
}

/// The CUBIN of a cache file written for `source`, or why the file is not
/// a valid entry for it.
fn decode_entry(bytes: &[u8], source: &str) -> std::result::Result<Vec<u8>, String> {
    let rest = bytes
        .strip_prefix(CACHE_FORMAT.as_bytes())
        .and_then(|r| r.strip_prefix(b"\n"))
        .ok_or("not a warpfit kernel cache file of this version")?;
    let eol = rest
        .iter()
        .take(64)
        .position(|&b| b == b'\n')
        .ok_or("no header line")?;
    let header = std::str::from_utf8(&rest[..eol]).map_err(|_| "header is not text")?;
    let body = &rest[eol + 1..];
    let fields: Vec<&str> = header.split(' ').collect();
    let [sum, src_len, bin_len] = fields[..] else {
        return Err("header does not hold three fields".into());
    };
    let sum = u64::from_str_radix(sum, 16).map_err(|_| "bad checksum field")?;
    let src_len: usize = src_len.parse().map_err(|_| "bad source length")?;
    let bin_len: usize = bin_len.parse().map_err(|_| "bad binary length")?;
    // Exactly as written (lowercase hex, no sign or leading zeros), so that
    // no change to the header goes unnoticed.
    if header != format!("{sum:016x} {src_len} {bin_len}") {
        return Err("header is not in its canonical form".into());
    }
    if src_len.checked_add(bin_len) != Some(body.len()) {
        return Err(format!(
            "holds {} bytes after its header, the header says {src_len} + {bin_len}",
            body.len()
        ));
    }
    let (src, cubin) = body.split_at(src_len);
    if fnv1a(&[src, cubin]) != sum {
        return Err("checksum mismatch".into());
    }
    if src != source.as_bytes() {
        return Err("written for another source (a key collision)".into());
    }
    if !cubin.starts_with(b"\x7fELF") {
        return Err("the binary is not an ELF image".into());
    }
    Ok(cubin.to_vec())
}

/// Readies `dir` for the cache, or says why it cannot hold it: creates it
/// private to the user (0700) when missing; refuses one that other users
/// may write (or that another user owns), since its files would be loaded
/// as code.
fn prepare_dir(dir: &Path) -> std::result::Result<(), String> {
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => Err(format!("kernel cache {shown} is not a directory")),
        Ok(m) => check_private(dir, &m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_private(dir).map_err(|e| format!("cannot create kernel cache {shown}: {e}"))
        }
        Err(e) => Err(format!("cannot read kernel cache {shown}: {e}")),
    }
}

#[cfg(unix)]
fn create_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn check_private(dir: &Path, m: &std::fs::Metadata) -> std::result::Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let mode = m.mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "kernel cache {} is writable by other users (mode {mode:o}); \
             make it private with `chmod 700`",
            dir.display()
        ));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me {
        return Err(format!(
            "kernel cache {} belongs to user {}, not to this user ({me})",
            dir.display(),
            m.uid()
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &Path, _: &std::fs::Metadata) -> std::result::Result<(), String> {
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename: readers see the old entry or the new one, never a mix (and
/// on a file system without atomic rename, the checksum catches the rest).
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}.{n}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let written = open
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Says once per process that the cache is not used, and why.
fn warn_uncached(why: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| eprintln!("warpfit: warning: {why}; compiling kernels without the cache"));
}

/// The valid cache entry of `source` in `dir`, if there is one. A missing
/// entry, or one that fails its checks (which the next store replaces), is
/// `Ok(None)`; so is a directory that cannot hold the cache (with a
/// warning, once per process).
pub fn lookup_cached(
    kernel: &str,
    source: &str,
    arch: Arch,
    dir: Option<&Path>,
) -> Result<Option<Compiled>> {
    let Some(dir) = dir else { return Ok(None) };
    if let Err(why) = prepare_dir(dir) {
        warn_uncached(&why);
        return Ok(None);
    }
    let path = cache_entry_path(kernel, source, arch, dir)?;
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(None);
    };
    Ok(decode_entry(&bytes, source).ok().map(|cubin| Compiled {
        cubin,
        log: String::new(),
        cached: true,
        cache_warning: None,
    }))
}

/// Stores `cubin` as the cache entry of `source` in `dir`, replacing any:
/// what a compile stores (tests use it to plant entries). Returns the
/// entry's path; the error names the directory.
pub fn store_cached(
    kernel: &str,
    source: &str,
    arch: Arch,
    dir: &Path,
    cubin: &[u8],
) -> Result<PathBuf> {
    let unusable = |why: String| Error::Unavailable {
        what: format!("kernel cache {}", dir.display()),
        reason: why,
    };
    prepare_dir(dir).map_err(unusable)?;
    let path = cache_entry_path(kernel, source, arch, dir)?;
    write_atomically(&path, &encode_entry(source, cubin))
        .map_err(|e| unusable(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// Compiles `source` and stores it in `dir` (when `Some`), replacing
/// whatever entry is there: after a miss, or for a cached binary the driver
/// refused to load. A cache that cannot be written is not an error: the
/// module is returned with [`Compiled::cache_warning`] saying why (and a
/// warning on stderr, once per process).
pub fn compile_and_cache(
    kernel: &str,
    source: &str,
    arch: Arch,
    dir: Option<&Path>,
) -> Result<Compiled> {
    let mut compiled = compile_uncached(kernel, source, arch)?;
    if let Some(dir) = dir {
        if let Err(e) = store_cached(kernel, source, arch, dir, &compiled.cubin) {
            let why = e.to_string();
            warn_uncached(&why);
            compiled.cache_warning = Some(why);
        }
    }
    Ok(compiled)
}

/// Compiles with the on-disk cache in `dir` (when `Some`): a valid entry
/// is returned without running NVRTC, anything else is compiled and
/// (re)placed ([`compile_and_cache`]).
pub fn compile_cached(
    kernel: &str,
    source: &str,
    arch: Arch,
    dir: Option<&Path>,
) -> Result<Compiled> {
    match lookup_cached(kernel, source, arch, dir)? {
        Some(hit) => Ok(hit),
        None => compile_and_cache(kernel, source, arch, dir),
    }
}

/// A device library unit (`layout`, `worklist`, `rounds`) compiled (or read
/// from the kernel cache) and loaded on `dev`: its module, whose functions
/// [`load_function`] takes by name.
pub(crate) fn load_unit(
    dev: &crate::device::CudaDevice,
    name: &str,
    source: &str,
) -> Result<std::sync::Arc<cudarc::driver::CudaModule>> {
    use crate::buffer::cuda_err;
    let compiled = compile_cached(name, source, dev.arch(), dev.cache_dir())?;
    dev.context()
        .bind_to_thread()
        .map_err(cuda_err("binding the context"))?;
    dev.context()
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
        .map_err(cuda_err(format!("loading the {name} kernels")))
}

/// The function `entry` of a unit loaded by [`load_unit`].
pub(crate) fn load_function(
    module: &std::sync::Arc<cudarc::driver::CudaModule>,
    name: &str,
    entry: &str,
) -> Result<cudarc::driver::CudaFunction> {
    module
        .load_function(entry)
        .map_err(crate::buffer::cuda_err(format!("{name} kernel `{entry}`")))
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
            donates: false,
            index_encoding: crate::spec::IndexEncoding::Plain,
        };
        let tu = translation_unit(&SPEC);
        assert!(tu.starts_with("#include \"warpfit/kernel.cuh\"\n"));
        assert!(tu.contains("namespace wf_k {}"));
        assert!(tu
            .trim_end()
            .ends_with("WARPFIT_ENTRY_POINTS(wf_k::Kernel)"));
    }

    #[test]
    fn an_empty_or_missing_cache_is_empty_and_one_entry_is_not() {
        let dir = std::env::temp_dir().join(format!("warpfit-empty-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(cache_is_empty(None));
        assert!(cache_is_empty(Some(&dir)));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("notes.txt"), b"x").unwrap();
        assert!(cache_is_empty(Some(&dir)));
        std::fs::write(dir.join("k.wf_sizes-sm_90-nvrtc13.0-0.wfk"), b"x").unwrap();
        assert!(!cache_is_empty(Some(&dir)));
        let _ = std::fs::remove_dir_all(&dir);
        // Without NVRTC the warm-up is a silent no-op; with it, a compile.
        warm_up();
    }

    #[test]
    fn an_entry_point_unit_instantiates_only_the_entry_points_asked_for() {
        static SPEC: KernelSpec = KernelSpec {
            name: "k",
            cuda_source: "namespace wf_k {}",
            device_fns: &[],
            params: &[],
            acc: crate::ScalarType::F32,
            elementwise: false,
            donates: false,
            index_encoding: crate::spec::IndexEncoding::Plain,
        };
        let tu = entry_point_unit(&SPEC, &["wf_sizes", "wf_cte_list"]).unwrap();
        assert!(tu.starts_with("#include \"warpfit/kernel.cuh\"\n"));
        assert!(tu.ends_with(
            "WARPFIT_ENTRY_POINT_wf_sizes(wf_k::Kernel)\n\
             WARPFIT_ENTRY_POINT_wf_cte_list(wf_k::Kernel)\n"
        ));
        assert!(!tu.contains("WARPFIT_ENTRY_POINTS"));
        // Every entry point has its macro in the device library.
        let kernel_cuh = include_str!("../cuda/kernel.cuh");
        for ep in crate::ENTRY_POINTS {
            assert!(
                kernel_cuh.contains(&format!("#define WARPFIT_ENTRY_POINT_{ep}(K)")),
                "{ep}"
            );
        }
    }

    #[test]
    fn a_cache_file_round_trips_and_every_damage_is_caught() {
        let src = "source text";
        let cubin = b"\x7fELF and the rest of a binary";
        let good = encode_entry(src, cubin);
        assert_eq!(decode_entry(&good, src).unwrap(), cubin);
        // Cut anywhere, one byte longer, or any single bit flipped.
        for cut in 0..good.len() {
            assert!(decode_entry(&good[..cut], src).is_err(), "cut at {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(decode_entry(&longer, src).is_err());
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut bad = good.clone();
                bad[i] ^= 1 << bit;
                assert!(decode_entry(&bad, src).is_err(), "byte {i} bit {bit}");
            }
        }
        // Another source (a key collision), or a binary that is not ELF.
        let e = decode_entry(&good, "other source").unwrap_err();
        assert!(e.contains("another source"), "{e}");
        let e = decode_entry(&encode_entry(src, b"MZ"), src).unwrap_err();
        assert!(e.contains("not an ELF image"), "{e}");
    }

    #[test]
    fn the_layout_unit_defines_every_layout_entry_point() {
        let h = LIBRARY_HEADERS
            .iter()
            .find(|(n, _)| *n == "warpfit/layout.cuh")
            .unwrap()
            .1;
        for ep in LAYOUT_ENTRY_POINTS {
            let (kind, width) = ep.trim_start_matches("wf_").rsplit_once('_').unwrap();
            assert!(h.contains(&format!(" wf_{kind}_##W(")), "{ep}");
            assert!(
                h.contains(&format!(
                    "WARPFIT_LAYOUT_ENTRY_POINTS_(uint{}_t, {width})",
                    width.parse::<u32>().unwrap() * 8
                )),
                "{ep}"
            );
        }
        assert!(layout_unit().contains("WARPFIT_LAYOUT_ENTRY_POINTS"));
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

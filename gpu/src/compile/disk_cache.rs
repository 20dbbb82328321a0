//! The on-disk kernel cache: CUBIN for the device's exact architecture, one
//! file per translation unit, keyed by a hash of everything the binary
//! depends on, checked on every load and written atomically into a
//! directory private to the user.

use crate::arch::Arch;
use crate::compile::nvrtc::{compile_uncached, nvrtc_version, options, Compiled};
use crate::compile::units::LIBRARY_HEADERS;
use std::path::{Path, PathBuf};
use warpfit_runtime::{Error, Result};

/// Environment variable that overrides the compile cache directory.
pub const CACHE_DIR_ENV: &str = "WARPFIT_CACHE_DIR";
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
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
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
pub(crate) fn prepare_dir(dir: &Path) -> std::result::Result<(), String> {
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
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    write_atomically_with(path, |f| f.write_all(bytes))
}

/// [`write_atomically`] with the contents written by `fill` into the
/// temporary file, for a writer that streams them (a large file need not be
/// held in memory whole). A `fill` that fails leaves no file behind.
pub(crate) fn write_atomically_with(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
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
        .and_then(|mut f| fill(&mut f))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::nvrtc::warm_up;

    #[test]
    fn hash_separates_parts_and_is_stable() {
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(fnv1a(&[b"warpfit"]), fnv1a(&[b"warpfit"]));
        assert_ne!(fnv1a(&[b"sm_80"]), fnv1a(&[b"sm_90"]));
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
}

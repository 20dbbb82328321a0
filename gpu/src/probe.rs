//! Finding the CUDA libraries before cudarc touches them.
//!
//! cudarc loads libcuda, libnvrtc, libcusparse and libnccl lazily and panics inside
//! its loader when one is missing. Every entry point of this crate that
//! needs a library calls the matching probe first, so a machine without
//! CUDA gets [`Error::Unavailable`] (or the CPU fallback), never a panic.
//!
//! cudarc opens libraries by file name, so only the dynamic loader's search
//! path counts. A directory named by `WARPFIT_NVRTC_LIB_DIR` (where
//! `scripts/install-nvrtc` puts the NVRTC wheel) is honoured by opening the
//! library there by full path first: the loader then hands cudarc the
//! already-loaded copy, matched by its soname.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use warpfit_runtime::{Error, Result};

/// Environment variable naming a directory that holds `libnvrtc.so.*`.
pub const NVRTC_DIR_ENV: &str = "WARPFIT_NVRTC_LIB_DIR";

/// A CUDA library warpfit loads at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Library {
    /// The driver API (`libcuda`), installed with the GPU driver.
    Driver,
    /// The runtime compiler (`libnvrtc`).
    Nvrtc,
    /// cuSPARSE, used only by the baseline.
    Cusparse,
    /// NCCL, for a [`DeviceGroup`](crate::DeviceGroup) of several GPUs.
    Nccl,
}

impl Library {
    fn name(self) -> &'static str {
        match self {
            Library::Driver => "libcuda (the CUDA driver)",
            Library::Nvrtc => "libnvrtc (NVRTC)",
            Library::Cusparse => "libcusparse (cuSPARSE)",
            Library::Nccl => "libnccl (NCCL)",
        }
    }

    fn present(self) -> bool {
        // SAFETY: these only try `dlopen` on the candidate names and drop the
        // handle; no symbol is called.
        unsafe {
            match self {
                Library::Driver => cudarc::driver::sys::is_culib_present(),
                Library::Nvrtc => cudarc::nvrtc::sys::is_culib_present(),
                Library::Cusparse => cudarc::cusparse::sys::is_culib_present(),
                Library::Nccl => cudarc::nccl::sys::is_culib_present(),
            }
        }
    }
}

/// Preloads NVRTC from `WARPFIT_NVRTC_LIB_DIR` when that is set; the
/// handle is kept for the life of the process.
fn preload_nvrtc() -> std::result::Result<(), String> {
    static PRELOADED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    PRELOADED
        .get_or_init(|| {
            let Some(dir) = std::env::var_os(NVRTC_DIR_ENV) else {
                return Ok(());
            };
            let dir = PathBuf::from(dir);
            let lib = find_versioned(&dir, "libnvrtc.so").ok_or_else(|| {
                format!("{NVRTC_DIR_ENV}={} holds no libnvrtc.so*", dir.display())
            })?;
            // The builtins library is opened by NVRTC by soname; load it too
            // so that it resolves from the same directory.
            if let Some(builtins) = find_versioned(&dir, "libnvrtc-builtins.so") {
                // SAFETY: loading a shared library runs its initializers; this is
                // NVIDIA's NVRTC builtins library from the configured directory.
                match unsafe { libloading::Library::new(&builtins) } {
                    Ok(l) => std::mem::forget(l),
                    Err(e) => return Err(format!("{}: {e}", builtins.display())),
                }
            }
            // SAFETY: as above, for libnvrtc itself.
            match unsafe { libloading::Library::new(&lib) } {
                Ok(l) => {
                    std::mem::forget(l);
                    Ok(())
                }
                Err(e) => Err(format!("{}: {e}", lib.display())),
            }
        })
        .clone()
}

/// The file in `dir` named `stem` or `stem.N...`, shortest name first (so
/// `libnvrtc.so.13` wins over `libnvrtc.so.13.0.88`), skipping `.alt` builds.
fn find_versioned(dir: &Path, stem: &str) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == stem || n.starts_with(&format!("{stem}.")))
        })
        .collect();
    found.sort_by_key(|p| p.as_os_str().len());
    found.into_iter().next()
}

/// Checks that `lib` can be loaded; `Err(Error::Unavailable)` says which
/// library is missing and where warpfit looked.
pub fn require(lib: Library) -> Result<()> {
    static CACHE: OnceLock<[OnceLock<std::result::Result<(), String>>; 4]> = OnceLock::new();
    let slots = CACHE.get_or_init(Default::default);
    let slot = &slots[lib as usize];
    let r = slot.get_or_init(|| {
        if lib == Library::Nvrtc {
            preload_nvrtc()?;
        }
        if lib.present() {
            Ok(())
        } else {
            let hint = match lib {
                Library::Driver => "no NVIDIA driver is installed, or it is not on the loader's path".to_string(),
                Library::Nvrtc => format!(
                    "install it (scripts/install-nvrtc) and set {NVRTC_DIR_ENV} or LD_LIBRARY_PATH to its directory"
                ),
                Library::Cusparse => {
                    "add the CUDA toolkit's or the nvidia-cusparse wheel's lib directory to LD_LIBRARY_PATH".to_string()
                }
                // cudarc opens `libnccl.so` (and CUDA-versioned names), not
                // the `libnccl.so.2` that NCCL's packages ship.
                Library::Nccl => "put a `libnccl.so` (a link to NCCL's libnccl.so.2, e.g. from the \
                     nvidia-nccl-cu13 wheel) in a directory on LD_LIBRARY_PATH"
                    .to_string(),
            };
            Err(hint)
        }
    });
    r.clone().map_err(|reason| Error::Unavailable {
        what: lib.name().to_string(),
        reason,
    })
}

/// Whether `lib` can be loaded.
pub fn available(lib: Library) -> bool {
    require(lib).is_ok()
}

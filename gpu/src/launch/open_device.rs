//! Opening a GPU: checks the driver and the ordinal, starts the compiles
//! the first launches will need (or NVRTC's set-up) beside the context's
//! creation, then creates the context ([`CudaDevice::open_expecting`]); and
//! the ways to pick a [`Device`] by name or by what the machine has.

use crate::compile::compile_ahead::{compile_ahead, start_nvrtc_warm_up, AheadCompiles};
use crate::compile::disk_cache::{cache_is_empty, default_cache_dir};
use crate::config::LaunchConfig;
use crate::driver::cuda_device::{check_ordinal, device_shape, CudaDevice};
use crate::driver::device::Device;
use crate::launch::likely_entries::first_launch_entries;
use crate::spec::KernelSpec;
use std::path::{Path, PathBuf};
use warpfit_runtime::{Error, Result};

/// A launch the caller will make soon after opening the device, announced
/// to [`CudaDevice::open_expecting`] so that the entry points it will
/// likely compile start compiling beside the context's creation.
#[derive(Debug, Clone, Copy)]
pub struct ExpectedLaunch<'a> {
    /// The kernel (a generated module's `SPEC`).
    pub spec: &'a KernelSpec,
    /// The launch's options.
    pub config: LaunchConfig,
    /// The launch runs over tasks `0..n_tasks`.
    pub n_tasks: usize,
}

/// Starts the compiles of the entry points `expected` launches will most
/// likely need (each looked up in the cache first, on its thread), before
/// the context exists: the compute capability and the SM counts come from
/// the driver's device attributes, which need no context. At most one
/// thread per core beside the caller's; best effort: whatever cannot be
/// read or started is compiled when a launch asks for it.
fn start_expected(
    ordinal: usize,
    cache_dir: Option<&Path>,
    expected: &[ExpectedLaunch<'_>],
) -> crate::compile::compile_ahead::AheadByModule {
    if expected.is_empty() {
        return Default::default();
    }
    let Some((arch, resident_warps)) = device_shape(ordinal) else {
        return Default::default();
    };
    let launches: Vec<(KernelSpec, Vec<&'static str>)> = expected
        .iter()
        .map(|e| {
            let spec = *e.spec;
            let entries = first_launch_entries(&spec, &e.config, e.n_tasks, resident_warps);
            (spec, entries)
        })
        .collect();
    compile_ahead(arch, cache_dir, &launches)
}

impl CudaDevice {
    /// Opens GPU `ordinal`: probes the driver, creates the context and
    /// reads the properties launches are sized from. Kernels are cached in
    /// [`default_cache_dir`].
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::with_cache_dir(ordinal, default_cache_dir())
    }

    /// [`CudaDevice::new`] with the kernel cache in `cache_dir` (`None`:
    /// no cache, every entry point compiled once per process).
    pub fn with_cache_dir(ordinal: usize, cache_dir: Option<PathBuf>) -> Result<Self> {
        Self::open_expecting(ordinal, cache_dir, &[])
    }

    /// [`CudaDevice::with_cache_dir`] for a caller that knows its first
    /// launches: the entry points each will most likely need (the size
    /// kernel and what follows it for a CTE launch, see
    /// `likely_entries::first_launch_entries`) are looked up in the kernel cache and,
    /// if missing, compiled on threads of their own while the context is
    /// created, which takes about as long as one compile. The launches then
    /// take them as they ask. A wrong guess costs host time, never a wrong
    /// kernel: each compile is keyed by the kernel's source and entry point.
    ///
    /// ```no_run
    /// # use warpfit_gpu::{default_cache_dir, CudaDevice, ExpectedLaunch, LaunchConfig};
    /// # use warpfit_gpu::__private::KernelSpec;
    /// // `spec`: a generated kernel's `SPEC` (`&spmv::SPEC`).
    /// # fn demo(spec: &KernelSpec, n_rows: usize) -> warpfit_gpu::Result<()> {
    /// let first = ExpectedLaunch { spec, config: LaunchConfig::default(), n_tasks: n_rows };
    /// let dev = CudaDevice::open_expecting(0, default_cache_dir(), &[first])?;
    /// # let _ = dev; Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`CudaDevice::new`]; a compile that fails is reported by the
    /// launch that asks for its entry point.
    pub fn open_expecting(
        ordinal: usize,
        cache_dir: Option<PathBuf>,
        expected: &[ExpectedLaunch<'_>],
    ) -> Result<Self> {
        check_ordinal(ordinal)?;
        // With nothing in the kernel cache the first launch will compile:
        // NVRTC's set-up then runs beside the context's creation instead of
        // after it. A warm cache starts no NVRTC at all.
        let ahead = start_expected(ordinal, cache_dir.as_deref(), expected);
        let nvrtc_warm_up = if ahead.is_empty() && cache_is_empty(cache_dir.as_deref()) {
            start_nvrtc_warm_up()
        } else {
            None
        };
        let dev = CudaDevice::create(ordinal, cache_dir)?;
        dev.set_extension(AheadCompiles::new(ahead, nvrtc_warm_up))?;
        Ok(dev)
    }
}

impl Device {
    /// CUDA device `ordinal`, or why it cannot be used.
    ///
    /// (Not `Device::cuda(ordinal)`: `device.cuda()` is the accessor that
    /// generated code calls, per docs/codegen.md.)
    pub fn open_cuda(ordinal: usize) -> Result<Self> {
        CudaDevice::new(ordinal).map(Device::Cuda)
    }

    /// [`Device::open_cuda`] for a caller that knows its first launches:
    /// see [`CudaDevice::open_expecting`].
    pub fn open_cuda_expecting(ordinal: usize, expected: &[ExpectedLaunch<'_>]) -> Result<Self> {
        CudaDevice::open_expecting(ordinal, default_cache_dir(), expected).map(Device::Cuda)
    }

    /// The best backend on this machine: CUDA device 0 when a driver and a
    /// GPU are present, else the CPU; the reason for falling back is printed
    /// on stderr, once per process.
    pub fn best() -> Self {
        match Device::open_cuda(0) {
            Ok(d) => d,
            Err(e) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| eprintln!("warpfit: using the CPU: {e}"));
                Device::Cpu
            }
        }
    }

    /// `cpu`, `cuda` (device 0, an error if unavailable) or `auto` ([`Device::best`]).
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Device::open_cuda(0),
            "auto" => Ok(Device::best()),
            _ => match name.strip_prefix("cuda:").map(str::parse::<usize>) {
                Some(Ok(i)) => Device::open_cuda(i),
                _ => Err(Error::invalid(format!(
                    "unknown backend `{name}`: expected cpu, cuda, cuda:N or auto"
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_backend_is_an_error() {
        let e = Device::from_name("tpu").unwrap_err().to_string();
        assert!(e.contains("unknown backend `tpu`"), "{e}");
        assert!(matches!(Device::from_name("cpu"), Ok(Device::Cpu)));
    }
}

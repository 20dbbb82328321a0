//! Where kernels run: [`Device`] (CPU or CUDA) and [`CudaDevice`], a GPU
//! with its context, stream and compiled modules.

use crate::abi::{self, BLOCK, MIN_ARCH};
use crate::buffer::cuda_err;
use crate::compile::{self, Arch};
use crate::config::LaunchConfig;
use crate::launch::PendingFault;
use crate::probe::{self, Library};
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule, CudaStream};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use warpfit_runtime::{Error, Result};

/// A kernel's entry points, each compiled (or read from the on-disk cache)
/// as a module of its own the first time a launch asks for it: NVRTC takes
/// 45 to 200 ms per entry point, and a launch uses two or three of the 17.
pub(crate) struct Module {
    device: std::sync::Weak<Inner>,
    spec: crate::KernelSpec,
    /// One slot per [`abi::ENTRY_POINTS`] name, in that order.
    entries: Vec<OnceLock<Entry>>,
    /// Held while an entry point is compiled and loaded, so that each is
    /// compiled once.
    loading: Mutex<()>,
    /// Compiles started ahead of need ([`likely_next`]), by entry point.
    prefetched: Mutex<HashMap<&'static str, JoinHandle<Result<compile::Compiled>>>>,
}

/// One loaded entry point.
struct Entry {
    _module: Arc<CudaModule>,
    function: CudaFunction,
    /// NVRTC's log when this process compiled it (ptxas report).
    log: String,
    cached: bool,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let loaded: Vec<&str> = abi::ENTRY_POINTS
            .iter()
            .zip(&self.entries)
            .filter(|(_, e)| e.get().is_some())
            .map(|(n, _)| *n)
            .collect();
        f.debug_struct("Module")
            .field("kernel", &self.spec.name)
            .field("loaded", &loaded)
            .finish()
    }
}

impl Drop for Module {
    /// Waits for the compiles started ahead of need: a thread still inside
    /// NVRTC while the process exits would race the library's teardown.
    /// (They started with the launch's first compile, so by the time its
    /// result is back they have usually finished.)
    fn drop(&mut self) {
        let pending = match self.prefetched.get_mut() {
            Ok(p) => std::mem::take(p),
            Err(poison) => std::mem::take(poison.into_inner()),
        };
        for (_, handle) in pending {
            let _ = handle.join();
        }
    }
}

/// The entry points a launch that has just asked for `ep` will most likely
/// ask for next, most likely first, compiled on other threads meanwhile: a
/// task-list kernel is followed by the merge when tasks were split (the
/// wide merge when a task has more than 64 pieces, as hubs of power-law
/// graphs do). What follows the size kernel depends on the launch's size
/// (`plan::likely_after_sizes`, passed to [`Module::function_then`]).
fn likely_next(ep: &str) -> &'static [&'static str] {
    match ep {
        _ if ep.ends_with("_list") || ep.ends_with("_queue") => &["wf_merge", "wf_merge_wide"],
        _ => &[],
    }
}

impl Module {
    fn new(device: &CudaDevice, spec: &crate::KernelSpec) -> Self {
        Module {
            device: Arc::downgrade(&device.inner),
            spec: *spec,
            entries: abi::ENTRY_POINTS.iter().map(|_| OnceLock::new()).collect(),
            loading: Mutex::new(()),
            prefetched: Mutex::new(HashMap::new()),
        }
    }

    fn entry(&self, name: &str, next: &'static [&'static str]) -> Result<&Entry> {
        let i = abi::ENTRY_POINTS
            .iter()
            .position(|e| *e == name)
            .ok_or_else(|| Error::Cuda {
                context: format!("entry point `{name}`"),
                message: "not an entry point of the device library".into(),
            })?;
        if let Some(e) = self.entries[i].get() {
            return Ok(e);
        }
        let _loading = self.loading.lock().map_err(poisoned)?;
        if self.entries[i].get().is_none() {
            let device = CudaDevice {
                inner: self.device.upgrade().ok_or_else(|| Error::Cuda {
                    context: format!("kernel `{}`", self.spec.name),
                    message: "its device was dropped".into(),
                })?,
            };
            let entry = device.load_entry(self, abi::ENTRY_POINTS[i], next)?;
            // Cannot fail: the slot is only set under `loading`.
            let _ = self.entries[i].set(entry);
        }
        self.entries[i].get().ok_or_else(|| Error::Cuda {
            context: format!("entry point `{name}` of kernel `{}`", self.spec.name),
            message: "was not loaded".into(),
        })
    }

    pub(crate) fn function(&self, name: &str) -> Result<&CudaFunction> {
        self.function_then(name, likely_next(name))
    }

    /// [`Module::function`], starting the compiles of `next` beside it when
    /// `name` has to be compiled (not when it comes from the cache).
    pub(crate) fn function_then(
        &self,
        name: &str,
        next: &'static [&'static str],
    ) -> Result<&CudaFunction> {
        self.entry(name, next).map(|e| &e.function)
    }

    /// Starts compiling the entry points of `next` that are
    /// neither loaded nor under way, each on a thread of its own (which
    /// writes the cache as it finishes), as many as there are cores beside
    /// the one compiling what was asked for: more threads than cores only slow the one a
    /// launch waits for (`BENCHMARKS.md`, "NVRTC compile time").
    /// Best effort: a thread that cannot be started leaves its entry point
    /// to be compiled when asked for.
    fn prefetch(
        &self,
        next: &'static [&'static str],
        arch: Arch,
        dir: Option<&std::path::Path>,
    ) -> Result<()> {
        let mut pending = self.prefetched.lock().map_err(poisoned)?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let room = cores.saturating_sub(1 + pending.len());
        for &next in next.iter().take(room) {
            let loaded = abi::ENTRY_POINTS
                .iter()
                .position(|e| *e == next)
                .is_some_and(|i| self.entries[i].get().is_some());
            if loaded || pending.contains_key(next) {
                continue;
            }
            let spec = self.spec;
            let dir = dir.map(std::path::Path::to_path_buf);
            let started = std::thread::Builder::new()
                .name(format!("warpfit-nvrtc-{next}"))
                .spawn(move || {
                    let source = compile::entry_point_unit(&spec, &[next])?;
                    let label = format!("{}.{next}", spec.name);
                    compile::compile_cached(&label, &source, arch, dir.as_deref())
                });
            if let Ok(handle) = started {
                pending.insert(next, handle);
            }
        }
        Ok(())
    }
}

struct Inner {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    ordinal: usize,
    name: String,
    arch: Arch,
    l2_bytes: usize,
    sm_count: u32,
    max_threads_per_sm: u32,
    /// Shared memory an SM has, and what the hardware keeps of it per block.
    smem_per_sm: u32,
    smem_reserved_per_block: u32,
    cache_dir: Option<PathBuf>,
    modules: Mutex<HashMap<(String, u64), Arc<Module>>>,
    /// Fault records of launches that returned without waiting (a
    /// device-resident array, no host output), oldest first, until the
    /// next check.
    pending: Mutex<Vec<PendingFault>>,
    /// NVRTC's one-time set-up, started beside the context's creation when
    /// the kernel cache is empty ([`compile::warm_up`]).
    nvrtc_warm_up: Mutex<Option<JoinHandle<()>>>,
    /// Compiles of the entry points announced launches will need, started
    /// before the context existed ([`CudaDevice::open_expecting`]), by
    /// module key until the kernel's module is created and takes them.
    ahead: Mutex<HashMap<ModuleKey, Vec<(&'static str, PendingCompile)>>>,
    /// The layout library (`layout.cuh`), loaded when first needed.
    layout: Mutex<Option<Arc<crate::layout::LayoutKernels>>>,
    /// The worklist library (`worklist.cuh`), loaded when first needed.
    worklist: Mutex<Option<Arc<crate::worklist::WorklistKernels>>>,
    /// The round backend's kernels (`rounds.cuh`), loaded when first needed.
    rounds: Mutex<Option<Arc<crate::rounds::RoundKernels>>>,
    /// The level order's kernels (`levels.cuh`), loaded when first needed.
    levels: Mutex<Option<Arc<crate::levels::LevelKernels>>>,
}

/// A module's key: the kernel's name and its translation unit's hash.
type ModuleKey = (String, u64);

/// A compile running on a thread of its own.
type PendingCompile = JoinHandle<Result<compile::Compiled>>;

/// A launch the caller will make soon after opening the device, announced
/// to [`CudaDevice::open_expecting`] so that the entry points it will
/// likely compile start compiling beside the context's creation.
#[derive(Debug, Clone, Copy)]
pub struct ExpectedLaunch<'a> {
    /// The kernel (a generated module's `SPEC`).
    pub spec: &'a crate::KernelSpec,
    /// The launch's options.
    pub config: LaunchConfig,
    /// The launch runs over tasks `0..n_tasks`.
    pub n_tasks: usize,
}

impl Drop for Inner {
    /// Waits for the NVRTC warm-up: a thread still inside NVRTC while the
    /// process exits would race the library's teardown.
    fn drop(&mut self) {
        let handle = match self.nvrtc_warm_up.get_mut() {
            Ok(h) => h.take(),
            Err(poison) => poison.into_inner().take(),
        };
        if let Some(h) = handle {
            let _ = h.join();
        }
        let ahead = match self.ahead.get_mut() {
            Ok(a) => std::mem::take(a),
            Err(poison) => std::mem::take(poison.into_inner()),
        };
        for (_, h) in ahead.into_values().flatten() {
            let _ = h.join();
        }
    }
}

/// Starts the compiles of the entry points `expected` launches will most
/// likely need (each looked up in the cache first, on its thread), before
/// the context exists: the compute capability and the SM counts come from
/// the driver's device attributes, which need no context. At most one
/// thread per core beside the caller's; best effort: whatever cannot be
/// read or started is compiled when a launch asks for it.
fn compile_ahead(
    ordinal: usize,
    cache_dir: Option<&std::path::Path>,
    expected: &[ExpectedLaunch<'_>],
) -> HashMap<ModuleKey, Vec<(&'static str, PendingCompile)>> {
    let mut ahead: HashMap<ModuleKey, Vec<(&'static str, PendingCompile)>> = HashMap::new();
    if expected.is_empty() {
        return ahead;
    }
    let Some((arch, resident_warps)) = device_shape(ordinal) else {
        return ahead;
    };
    let mut room = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .max(1);
    for e in expected {
        let spec = *e.spec;
        let key = (
            spec.name.to_string(),
            fnv(&compile::translation_unit(&spec)),
        );
        for ep in crate::plan::first_launch_entries(&spec, &e.config, e.n_tasks, resident_warps) {
            let list = ahead.entry(key.clone()).or_default();
            if room == 0 || list.iter().any(|(started, _)| *started == ep) {
                continue;
            }
            let dir = cache_dir.map(std::path::Path::to_path_buf);
            let started = std::thread::Builder::new()
                .name(format!("warpfit-nvrtc-{ep}"))
                .spawn(move || {
                    let source = compile::entry_point_unit(&spec, &[ep])?;
                    let label = format!("{}.{ep}", spec.name);
                    compile::compile_cached(&label, &source, arch, dir.as_deref())
                });
            if let Ok(handle) = started {
                list.push((ep, handle));
                room -= 1;
            }
        }
    }
    ahead.retain(|_, v| !v.is_empty());
    ahead
}

/// Device `ordinal`'s compute capability and resident warps, read without
/// a context (`None` if the driver does not say).
fn device_shape(ordinal: usize) -> Option<(Arch, u64)> {
    use cudarc::driver::result;
    result::init().ok()?;
    let dev = result::device::get(i32::try_from(ordinal).ok()?).ok()?;
    // SAFETY: `dev` was returned by `cuDeviceGet` after `cuInit`.
    let attr = |a| unsafe { result::device::get_attribute(dev, a) }.ok();
    use sys::CUdevice_attribute as A;
    let major = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let tps = attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?;
    let arch = Arch::new(u32::try_from(major).ok()?, u32::try_from(minor).ok()?);
    (arch >= MIN_ARCH).then(|| {
        (
            arch,
            u64::from(sms.max(1) as u32) * u64::from(tps.max(32) as u32 / 32),
        )
    })
}

/// Launches left unchecked at most: the one after these waits for the
/// device and checks them, which bounds the records kept (a loop of
/// asynchronous launches then waits once every this many).
const MAX_PENDING_LAUNCHES: usize = 256;

/// A CUDA GPU with its context, one stream and its compiled modules.
///
/// Cloning is cheap (shared). All work goes to one stream in order; the
/// methods that return host data synchronize, the rest only enqueue.
#[derive(Clone)]
pub struct CudaDevice {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("ordinal", &self.inner.ordinal)
            .field("name", &self.inner.name)
            .field("arch", &self.inner.arch)
            .finish()
    }
}

impl CudaDevice {
    /// Opens GPU `ordinal`: probes the driver, creates the context and
    /// reads the properties launches are sized from. Kernels are cached in
    /// [`compile::default_cache_dir`].
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::with_cache_dir(ordinal, compile::default_cache_dir())
    }

    /// [`CudaDevice::new`] with the kernel cache in `cache_dir` (`None`:
    /// no cache, every entry point compiled once per process).
    pub fn with_cache_dir(ordinal: usize, cache_dir: Option<PathBuf>) -> Result<Self> {
        Self::open_expecting(ordinal, cache_dir, &[])
    }

    /// [`CudaDevice::with_cache_dir`] for a caller that knows its first
    /// launches: the entry points each will most likely need (the size
    /// kernel and what follows it for a CTE launch, see
    /// `plan::first_launch_entries`) are looked up in the kernel cache and,
    /// if missing, compiled on threads of their own while the context is
    /// created, which takes about as long as one compile. The launches then
    /// take them as they ask. A wrong guess costs host time, never a wrong
    /// kernel: each compile is keyed by the kernel's source and entry point.
    ///
    /// ```no_run
    /// # use warpfit_gpu::{CudaDevice, ExpectedLaunch, LaunchConfig, KernelSpec};
    /// # fn demo(spec: &KernelSpec, n_rows: usize) -> warpfit_gpu::Result<()> {
    /// let first = ExpectedLaunch { spec, config: LaunchConfig::default(), n_tasks: n_rows };
    /// let dev = CudaDevice::open_expecting(0, warpfit_gpu::compile::default_cache_dir(), &[first])?;
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
        probe::require(Library::Driver)?;
        let count = CudaContext::device_count().map_err(cuda_err("counting CUDA devices"))?;
        if ordinal >= count.max(0) as usize {
            return Err(Error::Unavailable {
                what: format!("CUDA device {ordinal}"),
                reason: format!("the driver reports {count} device(s)"),
            });
        }
        // With nothing in the kernel cache the first launch will compile:
        // NVRTC's set-up then runs beside the context's creation instead of
        // after it. A warm cache starts no NVRTC at all.
        let ahead = compile_ahead(ordinal, cache_dir.as_deref(), expected);
        let nvrtc_warm_up = if ahead.is_empty() && compile::cache_is_empty(cache_dir.as_deref()) {
            std::thread::Builder::new()
                .name("warpfit-nvrtc-warm-up".into())
                .spawn(compile::warm_up)
                .ok()
        } else {
            None
        };
        let ctx = CudaContext::new(ordinal)
            .map_err(cuda_err(format!("creating a context on device {ordinal}")))?;
        // One stream, in-order: cudarc's per-buffer event tracking would only
        // add event records to every launch.
        // SAFETY: no buffer of this context exists yet, and warpfit never uses
        // a second stream on it.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let attr = |a: sys::CUdevice_attribute, what: &str| {
            ctx.attribute(a)
                .map_err(cuda_err(format!("reading {what} of device {ordinal}")))
        };
        let major = attr(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            "the compute capability",
        )?;
        let minor = attr(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            "the compute capability",
        )?;
        let l2 = attr(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
            "the L2 size",
        )?;
        let sms = attr(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            "the SM count",
        )?;
        let tps = attr(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            "the threads per SM",
        )?;
        let smem = attr(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            "the shared memory per SM",
        )?;
        let smem_reserved = attr(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
            "the reserved shared memory per block",
        )?;
        let name = ctx
            .name()
            .map_err(cuda_err(format!("reading the name of device {ordinal}")))?;
        let arch = Arch::new(major as u32, minor as u32);
        if arch < MIN_ARCH {
            return Err(Error::Unavailable {
                what: format!("CUDA device {ordinal} ({name}, {arch})"),
                reason: format!(
                    "warpfit's device library needs compute capability {}.{} or newer",
                    MIN_ARCH.major, MIN_ARCH.minor
                ),
            });
        }
        Ok(CudaDevice {
            inner: Arc::new(Inner {
                ctx,
                stream,
                ordinal,
                name,
                arch,
                l2_bytes: l2.max(0) as usize,
                sm_count: sms.max(1) as u32,
                max_threads_per_sm: tps.max(32) as u32,
                smem_per_sm: smem.max(0) as u32,
                smem_reserved_per_block: smem_reserved.max(0) as u32,
                cache_dir,
                modules: Mutex::new(HashMap::new()),
                pending: Mutex::new(Vec::new()),
                nvrtc_warm_up: Mutex::new(nvrtc_warm_up),
                ahead: Mutex::new(ahead),
                layout: Mutex::new(None),
                worklist: Mutex::new(None),
                rounds: Mutex::new(None),
                levels: Mutex::new(None),
            }),
        })
    }

    /// The kernel cache directory (`None`: compile in each process).
    pub(crate) fn cache_dir(&self) -> Option<&std::path::Path> {
        self.inner.cache_dir.as_deref()
    }

    /// The layout library's kernels, compiled (or read from the kernel
    /// cache) and loaded the first time they are asked for.
    pub(crate) fn layout_kernels(&self) -> Result<Arc<crate::layout::LayoutKernels>> {
        let mut slot = self.inner.layout.lock().map_err(poisoned)?;
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let k = Arc::new(crate::layout::LayoutKernels::load(self)?);
        *slot = Some(k.clone());
        Ok(k)
    }

    /// The worklist library's kernels (growth and clearing of device
    /// worklists), compiled (or read from the kernel cache) and loaded the
    /// first time they are asked for.
    pub(crate) fn worklist_kernels(&self) -> Result<Arc<crate::worklist::WorklistKernels>> {
        let mut slot = self.inner.worklist.lock().map_err(poisoned)?;
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let k = Arc::new(crate::worklist::WorklistKernels::load(self)?);
        *slot = Some(k.clone());
        Ok(k)
    }

    /// The round backend's kernels, compiled (or read from the kernel
    /// cache) and loaded the first time they are asked for.
    pub(crate) fn round_kernels(&self) -> Result<Arc<crate::rounds::RoundKernels>> {
        let mut slot = self.inner.rounds.lock().map_err(poisoned)?;
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let k = Arc::new(crate::rounds::RoundKernels::load(self)?);
        *slot = Some(k.clone());
        Ok(k)
    }

    /// The level order's kernels, compiled (or read from the kernel cache)
    /// and loaded the first time they are asked for.
    pub(crate) fn level_kernels(&self) -> Result<Arc<crate::levels::LevelKernels>> {
        let mut slot = self.inner.levels.lock().map_err(poisoned)?;
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let k = Arc::new(crate::levels::LevelKernels::load(self)?);
        *slot = Some(k.clone());
        Ok(k)
    }

    /// The device's name as the driver reports it.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Compute capability.
    pub fn arch(&self) -> Arch {
        self.inner.arch
    }

    /// L2 cache size in bytes.
    pub fn l2_bytes(&self) -> usize {
        self.inner.l2_bytes
    }

    /// Number of streaming multiprocessors.
    pub fn sm_count(&self) -> u32 {
        self.inner.sm_count
    }

    /// Warps the whole GPU keeps resident at full occupancy.
    pub fn resident_warps(&self) -> u64 {
        u64::from(self.inner.sm_count) * u64::from(self.inner.max_threads_per_sm / 32)
    }

    /// Asks for just enough shared memory per SM for `f`'s static shared
    /// memory at full occupancy, leaving the rest of the unified L1 to
    /// caching. Left to itself the driver picks a larger carveout for the
    /// CTE kernels (6 KiB of per-warp slots per block), and their serial
    /// folds lose the L1 hits they live on; a smaller hint than the need
    /// cuts occupancy. Kernels without shared memory keep the driver's
    /// choice. Measurements: BENCHMARKS.md, "Tuning constants: history".
    fn set_carveout(&self, f: &CudaFunction, ep: &str) -> Result<()> {
        use sys::CUfunction_attribute_enum as A;
        let context = || format!("shared-memory carveout of entry point `{ep}`");
        let smem = f
            .get_attribute(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
            .map_err(cuda_err(context()))?;
        let per_sm = u64::from(self.inner.smem_per_sm);
        if smem <= 0 || per_sm == 0 {
            return Ok(());
        }
        let blocks = u64::from(self.inner.max_threads_per_sm / BLOCK).max(1);
        let need = blocks * (smem as u64 + u64::from(self.inner.smem_reserved_per_block));
        let percent = (100 * need).div_ceil(per_sm).min(100) as i32;
        f.set_attribute(
            A::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
            percent,
        )
        .map_err(cuda_err(context()))
    }

    /// Device ordinal.
    pub fn ordinal(&self) -> usize {
        self.inner.ordinal
    }

    /// The stream all of this device's work goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.inner.stream
    }

    /// The driver context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }

    /// Waits for all enqueued work, then reports the first fault of the
    /// asynchronous launches since the last check (plain launches with a
    /// device-resident array and no host output; prepared launches report
    /// theirs through their own `check`).
    pub fn synchronize(&self) -> Result<()> {
        self.wait_idle()?;
        self.check_pending_faults()
    }

    /// Waits for all enqueued work; reports no kernel fault.
    pub(crate) fn wait_idle(&self) -> Result<()> {
        self.inner
            .stream
            .synchronize()
            .map_err(cuda_err("synchronizing the stream"))
    }

    /// Reports the first fault among the asynchronous launches not yet
    /// checked (waiting for them), and forgets them all.
    pub(crate) fn check_pending_faults(&self) -> Result<()> {
        let pending = std::mem::take(&mut *self.inner.pending.lock().map_err(poisoned)?);
        pending.iter().try_for_each(|p| p.check(self))
    }

    /// Keeps the fault record of a launch that returned without waiting;
    /// past [`MAX_PENDING_LAUNCHES`], checks them all now.
    fn defer_fault_check(&self, launch: PendingFault) -> Result<()> {
        let full = {
            let mut pending = self.inner.pending.lock().map_err(poisoned)?;
            pending.push(launch);
            pending.len() >= MAX_PENDING_LAUNCHES
        };
        if full {
            self.check_pending_faults()?;
        }
        Ok(())
    }

    /// The module of `spec`, whose entry points are compiled (or read from
    /// the on-disk cache) as launches first ask for them.
    pub(crate) fn module(&self, spec: &crate::KernelSpec) -> Result<Arc<Module>> {
        let source = compile::translation_unit(spec);
        let key = (spec.name.to_string(), fnv(&source));
        let mut modules = self.inner.modules.lock().map_err(poisoned)?;
        if let Some(m) = modules.get(&key) {
            return Ok(m.clone());
        }
        let m = Arc::new(Module::new(self, spec));
        let ahead = self.inner.ahead.lock().map_err(poisoned)?.remove(&key);
        if let Some(ahead) = ahead {
            m.prefetched.lock().map_err(poisoned)?.extend(ahead);
        }
        modules.insert(key, m.clone());
        Ok(m)
    }

    /// Compiles (or reads from the cache, or takes from a prefetch) entry
    /// point `ep` of `m` as a module of its own, and loads it. A cached
    /// binary the driver refuses to load is compiled again and its cache
    /// entry replaced.
    fn load_entry(
        &self,
        m: &Module,
        ep: &'static str,
        next: &'static [&'static str],
    ) -> Result<Entry> {
        let arch = self.inner.arch;
        let dir = self.inner.cache_dir.as_deref();
        let kernel = m.spec.name;
        let source = compile::entry_point_unit(&m.spec, &[ep])?;
        let label = format!("{kernel}.{ep}");
        let prefetched = m.prefetched.lock().map_err(poisoned)?.remove(ep);
        let compiled = match prefetched {
            Some(handle) => handle.join().map_err(|_| Error::Cuda {
                context: format!("compiling entry point `{ep}` of kernel `{kernel}`"),
                message: "the compiling thread panicked".into(),
            })??,
            None => match compile::lookup_cached(&label, &source, arch, dir)? {
                Some(hit) => hit,
                None => {
                    m.prefetch(next, arch, dir)?;
                    compile::compile_and_cache(&label, &source, arch, dir)?
                }
            },
        };
        let load = |cubin: &[u8]| {
            self.inner
                .ctx
                .bind_to_thread()
                .map_err(cuda_err("binding the context"))?;
            self.inner
                .ctx
                .load_module(cudarc::nvrtc::Ptx::from_binary(cubin.to_vec()))
                .map_err(cuda_err(format!(
                    "loading entry point `{ep}` of kernel `{kernel}`"
                )))
        };
        let (module, compiled) = match load(&compiled.cubin) {
            Ok(module) => (module, compiled),
            Err(_) if compiled.cached => {
                let fresh = compile::compile_and_cache(&label, &source, arch, dir)?;
                (load(&fresh.cubin)?, fresh)
            }
            Err(e) => return Err(e),
        };
        let function = module
            .load_function(ep)
            .map_err(cuda_err(format!("entry point `{ep}` of kernel `{kernel}`")))?;
        self.set_carveout(&function, ep)?;
        Ok(Entry {
            _module: module,
            function,
            log: compiled.log,
            cached: compiled.cached,
        })
    }

    /// NVRTC's ptxas report for `spec` (registers, spills, shared memory per
    /// entry point), compiling every entry point if needed, and whether all
    /// came from the on-disk cache (whose entries carry no report).
    pub fn compile_report(&self, spec: &crate::KernelSpec) -> Result<(bool, String)> {
        let m = self.module(spec)?;
        let (mut cached, mut log) = (true, String::new());
        for ep in abi::ENTRY_POINTS {
            let e = m.entry(ep, &[])?;
            cached &= e.cached;
            log.push_str(&e.log);
        }
        Ok((cached, log))
    }

    /// Compiles (or fetches from the cache) and launches `spec` over `tasks`.
    /// Host arrays are uploaded, outputs downloaded after the launch, and a
    /// fault inside the kernel comes back as the same `Error` the CPU twin
    /// returns.
    ///
    /// Device-resident arrays are used in place. A launch with at least one
    /// of them and no host output returns once its kernels are enqueued
    /// (after the size kernel's statistics, when the split depends on
    /// them); its fault is reported by the next [`CudaDevice::synchronize`],
    /// `DeviceVec` download, or launch with a host output. Any other launch
    /// waits and reports its own fault, after those of earlier ones.
    pub fn launch(
        &self,
        spec: &crate::KernelSpec,
        config: &LaunchConfig,
        tasks: warpfit_runtime::Tasks<'_>,
        args: &mut [crate::Arg<'_>],
    ) -> Result<()> {
        let prepared = crate::launch::Prepared::new_borrowing(self, spec, config, tasks, args)?;
        prepared.run()?;
        let resident = args.iter().any(|a| matches!(a, crate::Arg::Resident(_)));
        if resident && !args.iter().any(crate::Arg::copies_back) {
            return self.defer_fault_check(prepared.into_pending());
        }
        self.check_pending_faults()?;
        prepared.finish(args)
    }
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> Error {
    Error::Cuda {
        context: "the module cache".into(),
        message: "a thread panicked while holding its lock".into(),
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Where kernels run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Device {
    /// The host CPU, all cores, through rayon.
    Cpu,
    /// An NVIDIA GPU.
    Cuda(CudaDevice),
}

/// What `warpfit info` prints about a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `cpu` or `cuda`.
    pub backend: &'static str,
    /// The GPU's name, or the CPU's thread count.
    pub name: String,
    /// Compute capability (`sm_90`), for CUDA.
    pub arch: Option<String>,
    /// L2 cache size in bytes, for CUDA.
    pub l2_bytes: Option<usize>,
    /// Streaming multiprocessors, for CUDA.
    pub sm_count: Option<u32>,
}

impl Device {
    /// The CPU backend.
    pub fn cpu() -> Self {
        Device::Cpu
    }

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
        CudaDevice::open_expecting(ordinal, compile::default_cache_dir(), expected)
            .map(Device::Cuda)
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

    /// The CUDA device, when this is one.
    pub fn cuda(&self) -> Option<&CudaDevice> {
        match self {
            Device::Cpu => None,
            Device::Cuda(c) => Some(c),
        }
    }

    /// Short name of the backend (`cpu` or `cuda`).
    pub fn backend_name(&self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
        }
    }

    /// Name, backend and cache size, for `warpfit info`.
    pub fn describe(&self) -> DeviceInfo {
        match self {
            Device::Cpu => DeviceInfo {
                backend: "cpu",
                name: format!(
                    "host CPU ({} threads)",
                    std::thread::available_parallelism().map_or(1, |n| n.get())
                ),
                arch: None,
                l2_bytes: None,
                sm_count: None,
            },
            Device::Cuda(c) => DeviceInfo {
                backend: "cuda",
                name: c.name().to_string(),
                arch: Some(c.arch().sm()),
                l2_bytes: Some(c.l2_bytes()),
                sm_count: Some(c.sm_count()),
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

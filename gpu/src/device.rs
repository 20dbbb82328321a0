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
use std::sync::{Arc, Mutex};
use warpfit_runtime::{Error, Result};

/// A compiled kernel: the module and its entry points by name.
#[derive(Debug)]
pub(crate) struct Module {
    _module: Arc<CudaModule>,
    functions: HashMap<String, CudaFunction>,
    /// NVRTC's log when this process compiled it (ptxas report).
    pub(crate) log: String,
    pub(crate) cached: bool,
}

impl Module {
    pub(crate) fn function(&self, name: &str) -> Result<&CudaFunction> {
        self.functions.get(name).ok_or_else(|| Error::Cuda {
            context: format!("entry point `{name}`"),
            message: "not found in the compiled module".into(),
        })
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
    /// Fault records of launches that returned without waiting (all their
    /// arrays device-resident), oldest first, until the next check.
    pending: Mutex<Vec<PendingFault>>,
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
    /// reads the properties launches are sized from.
    pub fn new(ordinal: usize) -> Result<Self> {
        probe::require(Library::Driver)?;
        let count = CudaContext::device_count().map_err(cuda_err("counting CUDA devices"))?;
        if ordinal >= count.max(0) as usize {
            return Err(Error::Unavailable {
                what: format!("CUDA device {ordinal}"),
                reason: format!("the driver reports {count} device(s)"),
            });
        }
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
                cache_dir: compile::default_cache_dir(),
                modules: Mutex::new(HashMap::new()),
                pending: Mutex::new(Vec::new()),
            }),
        })
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
    /// asynchronous launches since the last check (plain launches whose
    /// arrays were all device-resident; prepared launches report theirs
    /// through their own `check`).
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

    /// The compiled module of `spec`: from memory, else the on-disk cache,
    /// else NVRTC.
    pub(crate) fn module(&self, spec: &crate::KernelSpec) -> Result<Arc<Module>> {
        let source = compile::translation_unit(spec);
        let key = (spec.name.to_string(), fnv(&source));
        if let Some(m) = self.inner.modules.lock().map_err(poisoned)?.get(&key) {
            return Ok(m.clone());
        }
        let compiled = compile::compile_cached(
            spec.name,
            &source,
            self.inner.arch,
            self.inner.cache_dir.as_deref(),
        )?;
        self.inner
            .ctx
            .bind_to_thread()
            .map_err(cuda_err("binding the context"))?;
        let module = self
            .inner
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
            .map_err(cuda_err(format!(
                "loading the module of kernel `{}`",
                spec.name
            )))?;
        let mut functions = HashMap::new();
        for ep in abi::ENTRY_POINTS {
            let f = module.load_function(ep).map_err(cuda_err(format!(
                "entry point `{ep}` of kernel `{}`",
                spec.name
            )))?;
            self.set_carveout(&f, ep)?;
            functions.insert(ep.to_string(), f);
        }
        let m = Arc::new(Module {
            _module: module,
            functions,
            log: compiled.log,
            cached: compiled.cached,
        });
        self.inner
            .modules
            .lock()
            .map_err(poisoned)?
            .insert(key, m.clone());
        Ok(m)
    }

    /// NVRTC's ptxas report for `spec` (registers, spills, shared memory per
    /// entry point), compiling it if needed; empty when it came from the
    /// on-disk cache.
    pub fn compile_report(&self, spec: &crate::KernelSpec) -> Result<(bool, String)> {
        let m = self.module(spec)?;
        Ok((m.cached, m.log.clone()))
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

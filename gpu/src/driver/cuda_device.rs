//! A CUDA GPU: its context, its one stream, the attributes launches are
//! sized from, and a keyed slot for what the layers above keep per device
//! ([`DeviceExtension`]).

use crate::abi::{BLOCK, MIN_ARCH};
use crate::arch::Arch;
use crate::driver::errors::cuda_err;
use crate::driver::extensions::Extensions;
use crate::driver::memory_pool::MemoryPool;
use crate::probe::{self, Library};
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaStream};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use warpfit_runtime::{Error, Result};

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
    /// The pool buffers come from, keeping freed memory (`None`: no
    /// stream-ordered allocation on this device).
    pool: Option<MemoryPool>,
    /// What the layers above keep per device, by type.
    extensions: Extensions,
}

/// State a layer above the driver keeps per device (its kernels, its
/// caches), made the first time [`CudaDevice::extension`] asks for it.
pub(crate) trait DeviceExtension: Send + Sync + Sized + 'static {
    /// Makes the state for `dev` (compiling or loading kernels, say).
    fn load(dev: &CudaDevice) -> Result<Self>;
}

/// Device `ordinal`'s compute capability and resident warps, read without
/// a context (`None` if the driver does not say).
pub(crate) fn device_shape(ordinal: usize) -> Option<(Arch, u64)> {
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

/// Checks that the driver loads and that GPU `ordinal` exists.
pub(crate) fn check_ordinal(ordinal: usize) -> Result<()> {
    probe::require(Library::Driver)?;
    let count = CudaContext::device_count().map_err(cuda_err("counting CUDA devices"))?;
    if ordinal >= count.max(0) as usize {
        return Err(Error::Unavailable {
            what: format!("CUDA device {ordinal}"),
            reason: format!("the driver reports {count} device(s)"),
        });
    }
    Ok(())
}

/// A CUDA GPU with its context, one stream and its compiled modules.
///
/// Cloning is cheap (shared). All work goes to one stream in order; the
/// methods that return host data synchronize, the rest only enqueue.
#[derive(Clone)]
pub struct CudaDevice {
    inner: Arc<Inner>,
}

/// A device that does not keep it alive ([`CudaDevice::downgrade`]).
#[derive(Clone)]
pub(crate) struct WeakCudaDevice(Weak<Inner>);

impl WeakCudaDevice {
    /// The device, while a [`CudaDevice`] still holds it.
    pub(crate) fn upgrade(&self) -> Option<CudaDevice> {
        self.0.upgrade().map(|inner| CudaDevice { inner })
    }
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
    /// Creates the context on GPU `ordinal` (checked by [`check_ordinal`])
    /// and reads the properties launches are sized from; refuses a GPU
    /// older than the device library supports.
    pub(crate) fn create(ordinal: usize, cache_dir: Option<PathBuf>) -> Result<Self> {
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
        let pool = MemoryPool::keeping_freed(&ctx)?;
        Ok(CudaDevice {
            inner: Arc::new(Inner {
                pool,
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
                extensions: Extensions::default(),
            }),
        })
    }

    /// This device's state of type `E`, made by [`DeviceExtension::load`]
    /// the first time it is asked for.
    pub(crate) fn extension<E: DeviceExtension>(&self) -> Result<Arc<E>> {
        self.inner.extensions.get_or_make(|| E::load(self))
    }

    /// Sets this device's state of type `E`, replacing any.
    pub(crate) fn set_extension<E: DeviceExtension>(&self, value: E) -> Result<()> {
        self.inner.extensions.set(value)
    }

    /// Bytes the memory pool keeps that no buffer uses: free for this
    /// process's next allocations, not counted free by the driver.
    pub(crate) fn pooled_unused_bytes(&self) -> u64 {
        self.inner.pool.as_ref().map_or(0, MemoryPool::unused_bytes)
    }

    /// Hands the pool's unused memory back to the driver once the work
    /// enqueued so far (which may free buffers) is done.
    pub(crate) fn release_pooled(&self) -> Result<()> {
        let Some(pool) = &self.inner.pool else {
            return Ok(());
        };
        self.inner.stream.synchronize().map_err(cuda_err(
            "waiting for the device before handing memory back",
        ))?;
        pool.trim()
    }

    /// A handle that does not keep the device alive.
    pub(crate) fn downgrade(&self) -> WeakCudaDevice {
        WeakCudaDevice(Arc::downgrade(&self.inner))
    }

    /// The kernel cache directory (`None`: compile in each process).
    pub(crate) fn cache_dir(&self) -> Option<&std::path::Path> {
        self.inner.cache_dir.as_deref()
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
    pub(crate) fn set_carveout(&self, f: &CudaFunction, ep: &str) -> Result<()> {
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

    /// Waits for all enqueued work; reports no kernel fault.
    pub(crate) fn wait_idle(&self) -> Result<()> {
        self.inner
            .stream
            .synchronize()
            .map_err(cuda_err("synchronizing the stream"))
    }
}

//! The device's stream-ordered memory pool, told to keep what is freed.
//!
//! Buffers are allocated with `cuMemAllocAsync` from the device's current
//! pool. By default that pool hands freed memory back to the driver at the
//! next synchronisation, so the next allocation maps fresh pages: about
//! 4 ms a GiB on an H200, against 0.25 ms for memory the pool kept
//! (BENCHMARKS.md, "Device memory kept for reuse"). Planning on the
//! device frees and allocates scratch of hundreds of megabytes at every
//! step, so the pool's release threshold is raised to keep freed memory
//! for the process, as framework allocators do. The memory is handed back
//! where an allocation would not fit otherwise ([`MemoryPool::trim`]) and
//! on request ([`crate::Device::release_unused_memory`]).

use crate::driver::errors::cuda_err;
use cudarc::driver::{sys, CudaContext};
use warpfit_runtime::Result;

/// A device's current memory pool (the driver's handle, kept as an
/// address: the pool lives as long as the device's primary context).
#[derive(Debug)]
pub(crate) struct MemoryPool(usize);

impl MemoryPool {
    /// `ctx`'s device pool, set to keep freed memory; `None` where the
    /// device has no stream-ordered allocation (buffers are then allocated
    /// and freed synchronously, and nothing is kept).
    pub(crate) fn keeping_freed(ctx: &CudaContext) -> Result<Option<Self>> {
        if !ctx.has_async_alloc() {
            return Ok(None);
        }
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `ctx` is a live context on the device asked for; the
        // handle is written by the driver.
        unsafe { sys::cuDeviceGetMemPool(&mut pool, ctx.cu_device()) }
            .result()
            .map_err(cuda_err("reading the device's memory pool"))?;
        let keep_all: u64 = u64::MAX;
        // SAFETY: `pool` was just returned for this device; the release
        // threshold attribute takes a u64.
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &keep_all as *const u64 as *mut std::ffi::c_void,
            )
        }
        .result()
        .map_err(cuda_err("keeping freed memory in the device's pool"))?;
        Ok(Some(MemoryPool(pool as usize)))
    }

    fn handle(&self) -> sys::CUmemoryPool {
        self.0 as sys::CUmemoryPool
    }

    /// Bytes the pool holds that no buffer uses (available to the next
    /// allocations, not counted free by the driver).
    pub(crate) fn unused_bytes(&self) -> u64 {
        let read = |attr| {
            let mut v: u64 = 0;
            // SAFETY: a live pool; both attributes are u64.
            let r = unsafe {
                sys::cuMemPoolGetAttribute(
                    self.handle(),
                    attr,
                    &mut v as *mut u64 as *mut std::ffi::c_void,
                )
            };
            r.result().map(|()| v).unwrap_or(0)
        };
        use sys::CUmemPool_attribute as A;
        read(A::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
            .saturating_sub(read(A::CU_MEMPOOL_ATTR_USED_MEM_CURRENT))
    }

    /// Hands the memory no buffer uses back to the driver (after the work
    /// enqueued so far that freed it).
    pub(crate) fn trim(&self) -> Result<()> {
        // SAFETY: a live pool.
        unsafe { sys::cuMemPoolTrimTo(self.handle(), 0) }
            .result()
            .map_err(cuda_err("handing unused pool memory back to the driver"))
    }
}

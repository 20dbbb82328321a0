//! The worklist library's kernels (`worklist.cuh`) on one device: the
//! growth of a full list and its clearing, compiled once per device.

use crate::abi::{WorklistRef, BLOCK};
use crate::compile::device_modules::{load_function, load_unit};
use crate::compile::units::worklist_unit;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::{CudaDevice, DeviceExtension};
use crate::driver::errors::cuda_err;
use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig as CuLaunch, PushKernelArg};
use std::sync::Arc;
use warpfit_runtime::Result;

/// The worklist library's kernels on one device (`worklist.cuh`):
/// compiled once, like the layout library.
pub(crate) struct WorklistKernels {
    _module: Arc<CudaModule>,
    unspill_count: CudaFunction,
    unspill: CudaFunction,
    clear: CudaFunction,
    /// `wf_unspill_count`'s per-block counts, one per block of the
    /// largest grid: reused by every growth (they run in stream order).
    block_sums: DeviceBuffer<u32>,
}

/// Words of a bitmap over `universe` elements (one at least, so that the
/// device always has an address to hold).
pub(crate) fn bitmap_words(universe: usize) -> usize {
    universe.div_ceil(32).max(1)
}

/// Blocks of a growth's bitmap walk at most (`wf_unspill_count`,
/// `wf_unspill`): a bitmap of 2³² items has 2²⁷ words, 2¹⁹ tiles.
const UNSPILL_BLOCKS: u64 = 1024;

impl DeviceExtension for WorklistKernels {
    /// Compiles (or reads from the kernel cache) and loads the library.
    fn load(dev: &CudaDevice) -> Result<Self> {
        let module = load_unit(dev, "worklist", &worklist_unit())?;
        let f = |entry: &str| load_function(&module, "worklist", entry);
        Ok(WorklistKernels {
            unspill_count: f("wf_unspill_count")?,
            unspill: f("wf_unspill")?,
            clear: f("wf_clear")?,
            block_sums: DeviceBuffer::zeros(dev, UNSPILL_BLOCKS as usize)?,
            _module: module,
        })
    }
}

impl WorklistKernels {
    /// Enqueues the growth's move of the spilled items for a list grown
    /// from `old_capacity` slots: `wf_unspill_count` counts each block's
    /// range of the bitmap, then `wf_unspill` moves each range's items in
    /// after the ranges before it (ascending order, as one walk would).
    pub(crate) fn unspill(
        &self,
        dev: &CudaDevice,
        list: WorklistRef,
        old_capacity: u64,
    ) -> Result<()> {
        let tiles = bitmap_words(list.universe as usize)
            .div_ceil(BLOCK as usize)
            .max(1) as u64;
        let fill = u64::from(dev.sm_count()) * 2;
        let blocks = tiles.min(fill.max(1)).min(UNSPILL_BLOCKS) as u32;
        let cfg = CuLaunch {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let sums = self.block_sums.device_ptr(dev);
        let mut b = dev.stream().launch_builder(&self.unspill_count);
        b.arg(&list);
        b.arg(&sums);
        // SAFETY: `wf_unspill_count(WorklistRef, uint32_t*)`: the list's
        // buffers are live and hold what `list` says; `sums` holds
        // UNSPILL_BLOCKS ≥ `blocks` counts.
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching wf_unspill_count"))?;
        let mut b = dev.stream().launch_builder(&self.unspill);
        b.arg(&list);
        b.arg(&old_capacity);
        b.arg(&sums);
        // SAFETY: `wf_unspill(WorklistRef, uint64_t, const uint32_t*)`, the
        // same buffers (the grown items included), the same grid.
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching wf_unspill"))?;
        Ok(())
    }

    /// Enqueues `wf_clear` over `list` (the count is zeroed after it).
    pub(crate) fn clear(&self, dev: &CudaDevice, list: WorklistRef) -> Result<()> {
        let work = list
            .capacity
            .max(bitmap_words(list.universe as usize) as u64);
        let fill = u64::from(dev.sm_count()) * 8;
        let blocks = work.div_ceil(u64::from(BLOCK)).clamp(1, fill.max(1)) as u32;
        let cfg = CuLaunch {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = dev.stream().launch_builder(&self.clear);
        b.arg(&list);
        // SAFETY: `wf_clear(WorklistRef)`; the list's buffers are live.
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching wf_clear"))?;
        Ok(())
    }
}

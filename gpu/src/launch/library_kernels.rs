//! Launching the device library's own kernels (layouts, the level order,
//! the planner, the task cut): kernels that take only 64-bit words, grids
//! that fill the device for grid-stride loops, and the device-wide
//! exclusive scan of u32 words (`scan.cuh`) every library builds its
//! offsets with.

use crate::abi::BLOCK;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::errors::cuda_err;
use cudarc::driver::{CudaFunction, LaunchConfig as CuLaunch, PushKernelArg};
use warpfit_runtime::Result;

/// Words of a scan tile (`SCAN_TILE` in scan.cuh: `SCAN_ITEMS` words a
/// thread).
const SCAN_TILE: usize = BLOCK as usize * 8;

/// Blocks that fill the device for a grid-stride loop: eight per SM.
pub(crate) fn fill_blocks(dev: &CudaDevice) -> u32 {
    dev.sm_count() * 8
}

/// Blocks of a grid-stride loop over `items`, `per_block` a block: enough
/// to fill the device, no more, at least one.
pub(crate) fn stride_blocks(dev: &CudaDevice, items: u64, per_block: u64) -> u32 {
    items
        .div_ceil(per_block.max(1))
        .clamp(1, u64::from(fill_blocks(dev))) as u32
}

/// Enqueues a device-library kernel that takes only 64-bit words
/// (pointers and counts, in `args`' order) on `blocks` blocks of `BLOCK`
/// threads.
///
/// # Safety
/// `args` must match the kernel's parameters in number and order, and
/// every pointer among them must be the device address of a live buffer
/// at least as long as the counts among them say the kernel reads or
/// writes (the kernels check the indices they follow, not the buffers'
/// lengths).
pub(crate) unsafe fn launch_words(
    dev: &CudaDevice,
    function: &CudaFunction,
    blocks: u32,
    what: &str,
    args: &[u64],
) -> Result<()> {
    let cfg = CuLaunch {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = dev.stream().launch_builder(function);
    for a in args {
        b.arg(a);
    }
    // SAFETY: the caller's contract above.
    unsafe { b.launch(cfg) }.map_err(cuda_err(format!("launching the library kernel {what}")))?;
    Ok(())
}

/// A library's three scan kernels (`scan_reduce`, `scan_tiles` into a sum,
/// `scan_apply` of scan.cuh, as its unit's entry points).
pub(crate) struct ScanKernels<'a> {
    pub reduce: &'a CudaFunction,
    pub sums: &'a CudaFunction,
    pub apply: &'a CudaFunction,
}

impl ScanKernels<'_> {
    /// `v[0..len]` (a device address) replaced by its exclusive prefix
    /// sums, on the stream; waits at the end, so that the tile sums are
    /// freed after the kernels that read them. The sum of all words must
    /// fit u32 (the callers check their totals).
    pub(crate) fn exclusive_scan(&self, dev: &CudaDevice, v: u64, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let tiles = len.div_ceil(SCAN_TILE);
        let sums = DeviceBuffer::<u32>::zeros(dev, tiles + 1)?;
        let s = sums.device_ptr(dev);
        let grid = stride_blocks(dev, tiles as u64, 1);
        let launch = |f: &CudaFunction, blocks: u32, what: &str, args: &[u64]| {
            // SAFETY: scan.cuh's kernels take (words, length, tile sums)
            // and (tile sums, tiles, sum); `v` holds `len` words (the
            // caller's contract) and `sums` `tiles + 1`.
            unsafe { launch_words(dev, f, blocks, what, args) }
        };
        launch(self.reduce, grid, "scan_reduce", &[v, len as u64, s])?;
        launch(
            self.sums,
            1,
            "scan_sums",
            &[s, tiles as u64, s + 4 * tiles as u64],
        )?;
        launch(self.apply, grid, "scan_apply", &[v, len as u64, s])?;
        dev.wait_idle()?;
        Ok(())
    }
}

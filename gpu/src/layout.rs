//! Moving arrays between layouts on the device (`gpu/cuda/layout.cuh`):
//! gathers through a permutation or a table, and the copy of
//! every task's range from one layout into another. The throttled handle
//! builds its part-major copies of a kernel's fine arrays with these, from
//! the arrays already on the device, and permutes per-launch vectors of a
//! remapped plan.
//!
//! The library is compiled once per device (one module, every element
//! width) and cached on disk like a kernel's entry points. Each operation
//! is enqueued on the device's stream without waiting; indices are checked
//! on the device, and [`LayoutKernels::check`] reports an index out of
//! range among the operations since its last call.

use crate::abi::BLOCK;
use crate::buffer::{cuda_err, DeviceBuffer};
use crate::compile;
use crate::device::CudaDevice;
use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig as CuLaunch, PushKernelArg};
use std::sync::Arc;
use warpfit_runtime::{Error, Result};

/// The layout library's kernels on one device.
pub(crate) struct LayoutKernels {
    _module: Arc<CudaModule>,
    /// By element width 1, 2, 4, 8 bytes.
    gather: [CudaFunction; 4],
    copy_ranges: [CudaFunction; 4],
    /// Set by a kernel that met an index out of range.
    bad: DeviceBuffer<u32>,
}

/// Index of `width` bytes in the per-width arrays.
fn width_slot(width: usize) -> Result<usize> {
    match width {
        1 => Ok(0),
        2 => Ok(1),
        4 => Ok(2),
        8 => Ok(3),
        _ => Err(Error::invalid(format!(
            "no layout kernel moves elements of {width} bytes"
        ))),
    }
}

/// Blocks that fill the device for a grid-stride loop: eight per SM.
pub(crate) fn fill_blocks(dev: &CudaDevice) -> u32 {
    dev.sm_count() * 8
}

/// Blocks of a grid-stride loop over `items` (a thread or a warp each):
/// enough to fill the device, no more.
fn blocks(dev: &CudaDevice, items: u64, per_block: u64) -> u32 {
    items
        .div_ceil(per_block)
        .clamp(1, u64::from(fill_blocks(dev))) as u32
}

/// Enqueues a device-library kernel that takes only 64-bit words
/// (pointers and counts, in `args`' order) on `blocks` blocks of `BLOCK`
/// threads: the layout and level kernels.
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

impl LayoutKernels {
    /// Compiles (or reads from the kernel cache) and loads the library.
    pub(crate) fn load(dev: &CudaDevice) -> Result<Self> {
        let module = compile::load_unit(dev, "layout", &compile::layout_unit())?;
        let f = |entry: String| compile::load_function(&module, "layout", &entry);
        let each = |kind: &str| -> Result<[CudaFunction; 4]> {
            Ok([
                f(format!("wf_{kind}_1"))?,
                f(format!("wf_{kind}_2"))?,
                f(format!("wf_{kind}_4"))?,
                f(format!("wf_{kind}_8"))?,
            ])
        };
        Ok(LayoutKernels {
            gather: each("gather")?,
            copy_ranges: each("copy_ranges")?,
            _module: module,
            bad: DeviceBuffer::zeros(dev, 1)?,
        })
    }

    fn launch(
        &self,
        dev: &CudaDevice,
        function: &CudaFunction,
        blocks: u32,
        what: &str,
        args: &[u64],
    ) -> Result<()> {
        let mut words = args.to_vec();
        words.push(self.bad.device_ptr(dev));
        // SAFETY: every layout kernel takes its pointers and counts as
        // 64-bit words in this order, then the `bad` flag; the callers pass
        // device addresses of live buffers holding at least the counts
        // given, and the kernels check every index they follow.
        unsafe { launch_words(dev, function, blocks, what, &words) }
    }

    /// `out[i] = input[idx[i]]` for `i < n`, elements of `width` bytes;
    /// `input` holds `in_len` elements, `idx` and `out` at least `n`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gather(
        &self,
        dev: &CudaDevice,
        width: usize,
        out: u64,
        input: u64,
        in_len: u64,
        idx: u64,
        n: u64,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let f = &self.gather[width_slot(width)?];
        let b = blocks(dev, n, u64::from(BLOCK));
        self.launch(dev, f, b, "gather", &[out, input, idx, n, in_len])
    }

    /// For every task `t < n_tasks`: `out[dst[t]..dst[t + 1]]` takes the
    /// elements of `input` from `src[t]` on (`dst`: `n_tasks + 1` u32,
    /// `src`: `n_tasks` u32).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn copy_ranges(
        &self,
        dev: &CudaDevice,
        width: usize,
        out: u64,
        out_len: u64,
        input: u64,
        in_len: u64,
        dst: u64,
        src: u64,
        n_tasks: u64,
    ) -> Result<()> {
        if n_tasks == 0 {
            return Ok(());
        }
        let f = &self.copy_ranges[width_slot(width)?];
        let b = blocks(dev, n_tasks, u64::from(BLOCK / 32));
        self.launch(
            dev,
            f,
            b,
            "copy_ranges",
            &[out, input, dst, src, n_tasks, out_len, in_len],
        )
    }

    /// Waits for the device and reports an index out of range met by any
    /// layout kernel since the last check (`what` names the layout being
    /// built), clearing the flag.
    pub(crate) fn check(&self, dev: &CudaDevice, what: &str) -> Result<()> {
        let bad = self.bad.to_vec(dev)?;
        if bad.first().copied().unwrap_or(0) != 0 {
            self.bad.zero_async(dev)?;
            return Err(Error::invalid(format!(
                "{what}: a layout index was out of range (the plan does not match its arrays)"
            )));
        }
        Ok(())
    }
}

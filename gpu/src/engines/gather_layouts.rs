//! Moving arrays between layouts on the device (`gpu/cuda/layout.cuh`):
//! gathers through a permutation or a table, and the copy of
//! every task's range from one layout into another. The throttled handle
//! builds its part-major copies of a kernel's fine arrays with these, from
//! the arrays already on the device, and permutes per-launch vectors of a
//! remapped plan.
//!
//! A gather through a fixed table whose source does not fit in L2 (a
//! remapped plan's permutation of `x`, or of `y` back) runs as a
//! [`DeviceGather::Staged`]: two gathers whose reads stay in cache.
//!
//! The library is compiled once per device (one module, every element
//! width) and cached on disk like a kernel's entry points. Each operation
//! is enqueued on the device's stream without waiting; indices are checked
//! on the device, and [`LayoutKernels::check`] reports an index out of
//! range among the operations since its last call.

use crate::abi::BLOCK;
use crate::compile::device_modules::{load_function, load_unit};
use crate::compile::units::layout_unit;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::{CudaDevice, DeviceExtension};
use crate::driver::event_timer::EventTimer;
use crate::launch::library_kernels::stride_blocks as blocks;
pub(crate) use crate::launch::library_kernels::{fill_blocks, launch_words};
use cudarc::driver::{CudaFunction, CudaModule};
use std::sync::Arc;
use warpfit_runtime::{Error, Result};

/// Source elements one block of a staged gather spans, for a cache of
/// `cache_bytes`: an eighth of it at 4 bytes an element, so that the block
/// stays in cache while the pass's two streams (table in, result out)
/// flow past it.
pub(crate) fn staged_block(cache_bytes: usize) -> usize {
    (cache_bytes / 32).max(1)
}

/// Whether a gather from `in_len` elements runs staged for a cache of
/// `cache_bytes`: when the source, at 4 bytes an element, is more than
/// half the cache, so that a direct gather's random reads miss it.
pub(crate) fn stages_gather(in_len: usize, cache_bytes: usize) -> bool {
    cache_bytes > 0 && in_len > cache_bytes / 8
}

/// The two tables of a staged gather `out[i] = input[idx[i]]` over blocks
/// of `block` source elements (`block_of(j) = j / block`):
///
/// - `by_block[t]`: the source indices sorted by block, each block's in
///   order of `i`, so that pass 1 (`tmp[t] = input[by_block[t]]`) reads
///   one block at a time, at random inside it but within L2;
/// - `back[i]`: where element `i` landed in `tmp`, so that pass 2
///   (`out[i] = tmp[back[i]]`) reads `tmp` as one ascending stream per block.
///
/// Each pass moves every element's sector once instead of once per element:
/// about three times the bytes of the array, against a direct gather's
/// 32-byte sector per element when the source misses L2.
///
/// # Errors
/// An index not below `in_len`, a `block` of 0, or more than `u32::MAX`
/// elements.
pub(crate) fn stage_gather(
    idx: &[u32],
    in_len: usize,
    block: usize,
) -> Result<(Vec<u32>, Vec<u32>)> {
    if block == 0 {
        return Err(Error::invalid(
            "a staged gather needs blocks of at least one element",
        ));
    }
    if u32::try_from(idx.len()).is_err() {
        return Err(Error::invalid(format!(
            "a staged gather of {} elements: at most {} fit its u32 tables",
            idx.len(),
            u32::MAX
        )));
    }
    let mut start = vec![0usize; in_len.div_ceil(block) + 1];
    for (i, &j) in idx.iter().enumerate() {
        if j as usize >= in_len {
            return Err(Error::invalid(format!(
                "gather table entry {i} is {j}, not below the source's {in_len} elements"
            )));
        }
        start[j as usize / block + 1] += 1;
    }
    for b in 1..start.len() {
        start[b] += start[b - 1];
    }
    let mut by_block = vec![0u32; idx.len()];
    let mut back = vec![0u32; idx.len()];
    for (i, &j) in idx.iter().enumerate() {
        let slot = &mut start[j as usize / block];
        by_block[*slot] = j;
        // Below idx.len(), checked to fit a u32 above.
        back[i] = *slot as u32;
        *slot += 1;
    }
    Ok((by_block, back))
}

/// A gather `out[i] = input[idx[i]]` through a fixed table on the device.
pub(crate) enum DeviceGather {
    /// One gather through `idx`.
    Direct(DeviceBuffer<u32>),
    /// Two gathers through the tables of [`stage_gather`], by way of a
    /// scratch array of the result's length.
    Staged {
        by_block: DeviceBuffer<u32>,
        back: DeviceBuffer<u32>,
    },
}

impl DeviceGather {
    /// The gather through `idx` from a source of `in_len` elements, staged
    /// over blocks of `block` elements when `block` is given.
    ///
    /// # Errors
    /// As [`stage_gather`], and the device's.
    pub(crate) fn upload(
        dev: &CudaDevice,
        idx: &[u32],
        in_len: usize,
        block: Option<usize>,
    ) -> Result<Self> {
        Ok(match block {
            None => DeviceGather::Direct(DeviceBuffer::upload(dev, idx)?),
            Some(block) => {
                let (by_block, back) = stage_gather(idx, in_len, block)?;
                DeviceGather::Staged {
                    by_block: DeviceBuffer::upload(dev, &by_block)?,
                    back: DeviceBuffer::upload(dev, &back)?,
                }
            }
        })
    }

    /// The faster on this device of the direct gather through `idx` and
    /// the one staged over blocks of `block` elements, timed with `timer`
    /// on 4-byte elements (best of three runs each, cache evicted before
    /// each): staging pays for random tables over large sources and costs
    /// a pass over tables whose neighbours read neighbours.
    ///
    /// # Errors
    /// As [`DeviceGather::upload`], and the device's.
    pub(crate) fn fastest(
        dev: &CudaDevice,
        kernels: &LayoutKernels,
        timer: &EventTimer,
        idx: &[u32],
        in_len: usize,
        block: usize,
    ) -> Result<Self> {
        let direct = DeviceGather::upload(dev, idx, in_len, None)?;
        let staged = DeviceGather::upload(dev, idx, in_len, Some(block))?;
        let input = DeviceBuffer::<u32>::zeros(dev, in_len)?;
        let out = DeviceBuffer::<u32>::zeros(dev, idx.len())?;
        let scratch = DeviceBuffer::<u8>::zeros(dev, staged.scratch_bytes(4))?;
        let time = |g: &DeviceGather| -> Result<f64> {
            let mut best = f64::INFINITY;
            for _ in 0..3 {
                let ms = timer.time_ms(1, &mut || {
                    g.run(
                        dev,
                        kernels,
                        4,
                        out.device_ptr(dev),
                        input.device_ptr(dev),
                        in_len as u64,
                        Some(&scratch),
                    )
                })?;
                best = best.min(ms);
            }
            Ok(best)
        };
        let (d, st) = (time(&direct)?, time(&staged)?);
        kernels.check(dev, "a gather table")?;
        Ok(if st < d { staged } else { direct })
    }

    /// Elements the gather writes.
    pub(crate) fn len(&self) -> usize {
        match self {
            DeviceGather::Direct(idx) => idx.len(),
            DeviceGather::Staged { back, .. } => back.len(),
        }
    }

    /// Bytes of scratch [`DeviceGather::run`] needs for elements of
    /// `width` bytes.
    pub(crate) fn scratch_bytes(&self, width: usize) -> usize {
        match self {
            DeviceGather::Direct(_) => 0,
            DeviceGather::Staged { .. } => self.len().saturating_mul(width),
        }
    }

    /// Enqueues `out[i] = input[idx[i]]` for `i < len()`, elements of
    /// `width` bytes: `out` holds at least `len()` elements, `input`
    /// `in_len`, and `scratch` (a staged gather's) at least
    /// `scratch_bytes(width)` bytes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &self,
        dev: &CudaDevice,
        kernels: &LayoutKernels,
        width: usize,
        out: u64,
        input: u64,
        in_len: u64,
        scratch: Option<&DeviceBuffer<u8>>,
    ) -> Result<()> {
        let n = self.len() as u64;
        match self {
            DeviceGather::Direct(idx) => {
                kernels.gather(dev, width, out, input, in_len, idx.device_ptr(dev), n)
            }
            DeviceGather::Staged { by_block, back } => {
                let tmp = scratch
                    .filter(|s| s.len() >= self.scratch_bytes(width))
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "a staged gather of {n} elements of {width} bytes needs {} bytes of scratch",
                            self.scratch_bytes(width)
                        ))
                    })?
                    .device_ptr(dev);
                kernels.gather(dev, width, tmp, input, in_len, by_block.device_ptr(dev), n)?;
                kernels.gather(dev, width, out, tmp, n, back.device_ptr(dev), n)
            }
        }
    }
}

/// The layout library's kernels on one device.
pub(crate) struct LayoutKernels {
    _module: Arc<CudaModule>,
    /// By element width 1, 2, 4, 8 bytes.
    gather: [CudaFunction; 4],
    copy_ranges: [CudaFunction; 4],
    /// By range-array width 4, 8 bytes.
    delta16: [CudaFunction; 2],
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

impl DeviceExtension for LayoutKernels {
    /// Compiles (or reads from the kernel cache) and loads the library.
    fn load(dev: &CudaDevice) -> Result<Self> {
        let module = load_unit(dev, "layout", &layout_unit())?;
        let f = |entry: String| load_function(&module, "layout", &entry);
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
            delta16: [f("wf_delta16_4".into())?, f("wf_delta16_8".into())?],
            _module: module,
            bad: DeviceBuffer::zeros(dev, 1)?,
        })
    }
}

impl LayoutKernels {
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

    /// Writes task `t`'s entries `ptr[t]..ptr[t + 1]` of the `u32` index
    /// array `idx` (`len` entries) into `out` (`len` `i16`) as offsets
    /// from `t` (gpu/cuda/index.cuh), for every `t < n_tasks`; `ptr` holds
    /// `n_tasks + 1` elements of `ptr_width` bytes (4 or 8). Returns
    /// whether every offset fit (waiting for the device); where one did
    /// not, `out` is not a valid encoding. Ranges outside `len` are
    /// reported by [`check`](Self::check).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn delta16(
        &self,
        dev: &CudaDevice,
        out: u64,
        idx: u64,
        len: u64,
        ptr: u64,
        ptr_width: usize,
        n_tasks: u64,
    ) -> Result<bool> {
        let f = match ptr_width {
            4 => &self.delta16[0],
            8 => &self.delta16[1],
            w => {
                return Err(Error::invalid(format!(
                    "no layout kernel reads a range array of {w}-byte elements"
                )))
            }
        };
        if n_tasks == 0 {
            return Ok(true);
        }
        // A flag of this call's own: handles building layouts on one
        // device from several threads must not read each other's.
        let wide = DeviceBuffer::<u32>::zeros(dev, 1)?;
        let b = blocks(dev, n_tasks, u64::from(BLOCK / 32));
        let w = wide.device_ptr(dev);
        self.launch(dev, f, b, "delta16", &[out, idx, ptr, n_tasks, len, w])?;
        Ok(wide.to_vec(dev)?.first().copied().unwrap_or(0) == 0)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn gather(out: &mut [u32], input: &[u32], idx: &[u32]) {
        for (o, &j) in out.iter_mut().zip(idx) {
            *o = input[j as usize];
        }
    }

    proptest! {
        /// The two passes of a staged gather give the direct gather, and
        /// pass 1 reads the source block by block.
        #[test]
        fn staged_gather_is_the_direct_one(
            idx in prop::collection::vec(0u32..500, 0..400),
            in_len in 500usize..700,
            block in 1usize..800,
        ) {
            let input: Vec<u32> = (0..in_len as u32).map(|v| v.wrapping_mul(2654435761)).collect();
            let (by_block, back) = stage_gather(&idx, in_len, block).unwrap();
            let mut want = vec![0; idx.len()];
            gather(&mut want, &input, &idx);
            let mut tmp = vec![0; idx.len()];
            gather(&mut tmp, &input, &by_block);
            let mut got = vec![0; idx.len()];
            gather(&mut got, &tmp, &back);
            prop_assert_eq!(got, want);
            prop_assert!(by_block.windows(2).all(|w| w[0] as usize / block <= w[1] as usize / block));
            // `back` is a permutation of 0..n.
            let mut seen = back.clone();
            seen.sort_unstable();
            prop_assert!(seen.iter().enumerate().all(|(t, &v)| v as usize == t));
        }
    }

    #[test]
    fn pass_two_reads_each_block_in_order() {
        // A reversal over blocks of 4: each block's elements in `tmp` are
        // read back in ascending order as `i` grows.
        let idx: Vec<u32> = (0..16).rev().collect();
        let (by_block, back) = stage_gather(&idx, 16, 4).unwrap();
        assert_eq!(
            by_block,
            [3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12]
        );
        assert_eq!(back, [12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3]);
    }

    #[test]
    fn bad_tables_are_errors() {
        let e = stage_gather(&[0, 7], 5, 2).unwrap_err().to_string();
        assert!(
            e.contains("entry 1 is 7") && e.contains("5 elements"),
            "{e}"
        );
        assert!(stage_gather(&[0], 5, 0)
            .unwrap_err()
            .to_string()
            .contains("at least one"));
    }

    #[test]
    fn large_sources_stage() {
        let l2 = 50 << 20;
        assert!(!stages_gather(1 << 20, l2));
        assert!(stages_gather(1 << 24, l2));
        assert!(!stages_gather(1 << 24, 0));
        assert_eq!(staged_block(l2), (50 << 20) / 32);
    }
}

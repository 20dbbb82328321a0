//! Cache-fit plans made on the device (`gpu/cuda/plan.cuh`) from a
//! kernel's range and index arrays already there: column blocks as the
//! plan's fine-task permutation and every block's range array, a task
//! renumbering's range array and permutation, an exclusive scan, the
//! locality sample a throttled `auto` decides by, and a content digest.
//!
//! Arrays are passed as device addresses with their lengths (the
//! throttled handle's arrays are type-erased); every index the kernels
//! follow is checked on the device, and each operation that builds a plan
//! waits once at its end to report a corrupt array.

use crate::abi::{BLOCK, ROWS_GROUP};
use crate::compile::device_modules::{load_function, load_unit};
use crate::compile::units::plan_unit;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::{CudaDevice, DeviceExtension};
use crate::launch::library_kernels::{launch_words, stride_blocks as blocks, ScanKernels};
use cudarc::driver::{CudaFunction, CudaModule};
use std::sync::Arc;
use warpfit_runtime::{Error, Result};

/// The most column blocks a device plan makes (`CB_MAX_BLOCKS` in
/// plan.cuh: one counter per lane of a warp).
pub(crate) const MAX_COLUMN_BLOCKS: usize = 32;

/// The lanes per task of the column blocks' kernels, as a shift (plan.cuh,
/// `cb_tasks`): the smallest of 8, 16 and 32 lanes at least the mean
/// task, so that a matrix of 16 entries a row (uniform 2^24) takes two
/// rows a warp instead of leaving half of every warp idle. Longer tasks
/// than their group step through it.
pub(crate) fn column_block_group_shift(n: usize, nnz: usize) -> u32 {
    match nnz.div_ceil(n.max(1)) {
        0..=8 => 3,
        9..=16 => 4,
        _ => 5,
    }
}

/// Fine tasks of each sampled task the locality sample reads at most.
const LOCALITY_STEPS: u64 = 64;

/// The loaded planner library.
pub(crate) struct PlanKernels {
    _module: Arc<CudaModule>,
    cb_count: CudaFunction,
    cb_place: CudaFunction,
    scan_reduce: CudaFunction,
    scan_sums: CudaFunction,
    scan_apply: CudaFunction,
    rows_lengths: CudaFunction,
    rows_perm: CudaFunction,
    locality: CudaFunction,
    hash_words: CudaFunction,
    invert_order: CudaFunction,
    check_inverse: CudaFunction,
}

impl DeviceExtension for PlanKernels {
    /// Compiles (or reads from the kernel cache) and loads the library.
    fn load(dev: &CudaDevice) -> Result<Self> {
        let module = load_unit(dev, "plan", &plan_unit())?;
        let f = |entry: &str| load_function(&module, "plan", entry);
        Ok(PlanKernels {
            cb_count: f("wf_cb_count")?,
            cb_place: f("wf_cb_place")?,
            scan_reduce: f("wf_scan_reduce")?,
            scan_sums: f("wf_scan_sums")?,
            scan_apply: f("wf_scan_apply")?,
            rows_lengths: f("wf_rows_lengths")?,
            rows_perm: f("wf_rows_perm")?,
            locality: f("wf_locality")?,
            hash_words: f("wf_hash_words")?,
            invert_order: f("wf_invert_order")?,
            check_inverse: f("wf_check_inverse")?,
            _module: module,
        })
    }
}

/// A kernel's shape on the device: its range array (`n + 1` u32 offsets)
/// and its index array (`nnz` u32 gathered-element ids below
/// `n_gathered`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeviceShape {
    pub ptr: u64,
    pub idx: u64,
    pub n: usize,
    pub nnz: usize,
    pub n_gathered: usize,
}

/// Checks that `perm` holds a u32 per fine task of `shape` (the
/// permutation a layout kernel writes there).
fn check_perm(perm: &DeviceBuffer<u8>, shape: DeviceShape, what: &str) -> Result<()> {
    if perm.len() < 4 * shape.nnz {
        return Err(Error::invalid(format!(
            "{what}: a permutation of {} fine tasks needs {} bytes, got {}",
            shape.nnz,
            4 * shape.nnz,
            perm.len()
        )));
    }
    Ok(())
}

impl PlanKernels {
    fn launch(
        &self,
        dev: &CudaDevice,
        f: &CudaFunction,
        blocks: u32,
        what: &str,
        args: &[u64],
    ) -> Result<()> {
        // SAFETY: every kernel of plan.cuh takes 64-bit pointers and counts
        // in the order the methods below pass them; the pointers are device
        // addresses of live buffers of at least the lengths the counts say
        // (the callers' `DeviceShape`, their permutation buffers, checked
        // by `check_perm`, and the buffers allocated here), and the kernels
        // check every index they follow.
        unsafe { launch_words(dev, f, blocks, what, args) }
    }

    /// `v[0..len]` replaced by its exclusive prefix sums, on the stream,
    /// then waits ([`ScanKernels::exclusive_scan`]). The sum of all words
    /// must fit u32 (the callers' totals are fine-task counts, checked to).
    pub(crate) fn exclusive_scan(&self, dev: &CudaDevice, v: u64, len: usize) -> Result<()> {
        ScanKernels {
            reduce: &self.scan_reduce,
            sums: &self.scan_sums,
            apply: &self.scan_apply,
        }
        .exclusive_scan(dev, v, len)
    }

    /// The column blocks of `shape` in blocks of `width` gathered elements
    /// (`k` of them, the last taking the rest): every block's range array
    /// one after the other (block `b`'s is `offsets[b * n ..= b * n + n]`,
    /// `k * n + 1` words in all) over the fine tasks permuted by the
    /// permutation written to `perm` (`perm[new] = old`, a u32 per fine
    /// task). Waits once, to check.
    pub(crate) fn column_blocks(
        &self,
        dev: &CudaDevice,
        shape: DeviceShape,
        width: usize,
        k: usize,
        perm: &DeviceBuffer<u8>,
    ) -> Result<DeviceBuffer<u32>> {
        if k == 0 || k > MAX_COLUMN_BLOCKS || width == 0 || width > u32::MAX as usize {
            return Err(Error::invalid(format!(
                "device column blocks: {k} blocks of {width} elements (at most {MAX_COLUMN_BLOCKS} blocks of a u32 width)"
            )));
        }
        check_u32_shape(shape, "device column blocks")?;
        check_perm(perm, shape, "device column blocks")?;
        let words = k
            .checked_mul(shape.n)
            .and_then(|w| w.checked_add(1))
            .ok_or_else(|| Error::invalid("device column blocks: too many counters"))?;
        let offsets = DeviceBuffer::<u32>::zeros(dev, words)?;
        let bad = DeviceBuffer::<u32>::zeros(dev, 1)?;
        let (o, p, b) = (
            offsets.device_ptr(dev),
            perm.device_ptr(dev),
            bad.device_ptr(dev),
        );
        let shift = column_block_group_shift(shape.n, shape.nnz);
        let warps = (shape.n as u64).div_ceil(32 >> shift);
        let grid = blocks(dev, warps, u64::from(BLOCK / 32));
        let common = [
            shape.ptr,
            shape.idx,
            shape.n as u64,
            shape.nnz as u64,
            shape.n_gathered as u64,
            width as u64,
            k as u64,
            u64::from(shift),
        ];
        let mut args = common.to_vec();
        args.extend([o, b]);
        self.launch(dev, &self.cb_count, grid, "cb_count", &args)?;
        self.exclusive_scan(dev, o, words)?;
        let mut args = common.to_vec();
        args.extend([o, p, b]);
        self.launch(dev, &self.cb_place, grid, "cb_place", &args)?;
        check_flag(dev, &bad, "device column blocks")?;
        Ok(offsets)
    }

    /// The layout of `shape`'s tasks renumbered by `order` (`order[new] =
    /// old`, `n` entries on the device): its range array (`n + 1`
    /// offsets), the fine tasks' permutation written to `perm`
    /// (`perm[new] = old`, a u32 per fine task). Waits once, to check.
    pub(crate) fn row_order(
        &self,
        dev: &CudaDevice,
        shape: DeviceShape,
        order: u64,
        perm: &DeviceBuffer<u8>,
    ) -> Result<DeviceBuffer<u32>> {
        check_u32_shape(shape, "a device renumbering")?;
        check_perm(perm, shape, "a device renumbering")?;
        let ptr = DeviceBuffer::<u32>::zeros(dev, shape.n + 1)?;
        let bad = DeviceBuffer::<u32>::zeros(dev, 1)?;
        let (np, p, b) = (
            ptr.device_ptr(dev),
            perm.device_ptr(dev),
            bad.device_ptr(dev),
        );
        let (n, nnz) = (shape.n as u64, shape.nnz as u64);
        let grid = blocks(dev, n, u64::from(BLOCK));
        self.launch(
            dev,
            &self.rows_lengths,
            grid,
            "rows_lengths",
            &[shape.ptr, order, n, nnz, np, b],
        )?;
        // `ptr[n]` is 0, so that the scan leaves the total there.
        self.exclusive_scan(dev, np, shape.n + 1)?;
        let grid = blocks(dev, n, u64::from(BLOCK / ROWS_GROUP));
        self.launch(
            dev,
            &self.rows_perm,
            grid,
            "rows_perm",
            &[shape.ptr, order, np, n, nnz, p, b],
        )?;
        check_flag(dev, &bad, "a device renumbering")?;
        Ok(ptr)
    }

    /// Of `samples` warps of 32 consecutive tasks spread evenly over
    /// `shape`, walking their fine tasks in step (the first
    /// [`LOCALITY_STEPS`] of each): the gathers made and the distinct lines
    /// of `line` gathered elements they touched. Waits.
    pub(crate) fn locality(
        &self,
        dev: &CudaDevice,
        shape: DeviceShape,
        samples: usize,
        line: usize,
    ) -> Result<(u64, u64)> {
        check_u32_shape(shape, "the locality sample")?;
        if shape.n == 0 || samples == 0 {
            return Ok((0, 0));
        }
        let warps = shape.n.div_ceil(32);
        let samples = samples.min(warps);
        let stride = (shape.n / samples).max(1);
        let out = DeviceBuffer::<u64>::zeros(dev, 2)?;
        let bad = DeviceBuffer::<u32>::zeros(dev, 1)?;
        let grid = blocks(dev, samples as u64, u64::from(BLOCK / 32));
        self.launch(
            dev,
            &self.locality,
            grid,
            "locality",
            &[
                shape.ptr,
                shape.idx,
                shape.n as u64,
                shape.nnz as u64,
                samples as u64,
                stride as u64,
                line.max(1) as u64,
                LOCALITY_STEPS,
                out.device_ptr(dev),
                bad.device_ptr(dev),
            ],
        )?;
        check_flag(dev, &bad, "the locality sample")?;
        let v = out.to_vec(dev)?;
        Ok((v[0], v[1]))
    }

    /// Enqueues `digest += Σ mix(seed, i, words[i])` over `n` u32 words at
    /// `words` into the u64 at `digest` (zeroed by the caller).
    pub(crate) fn hash_words(
        &self,
        dev: &CudaDevice,
        words: u64,
        n: usize,
        seed: u64,
        digest: u64,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let grid = blocks(dev, n as u64, u64::from(BLOCK));
        self.launch(
            dev,
            &self.hash_words,
            grid,
            "hash_words",
            &[words, n as u64, seed, digest],
        )
    }

    /// `position[order[r]] = r` for the `n` rows of `order` (both `n` words
    /// on the device, `position` zeroed), then checks that `order` is a
    /// permutation of the rows. Waits once.
    ///
    /// # Errors
    /// An entry out of range or a row missing: not a permutation.
    pub(crate) fn invert_order(
        &self,
        dev: &CudaDevice,
        order: u64,
        n: usize,
        position: u64,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let bad = DeviceBuffer::<u32>::zeros(dev, 1)?;
        let b = bad.device_ptr(dev);
        let grid = blocks(dev, n as u64, u64::from(BLOCK));
        let args = [order, n as u64, position, b];
        self.launch(dev, &self.invert_order, grid, "invert_order", &args)?;
        let args = [order, position, n as u64, b];
        self.launch(dev, &self.check_inverse, grid, "check_inverse", &args)?;
        if bad.to_vec(dev)?.first().copied().unwrap_or(0) != 0 {
            return Err(Error::invalid(format!(
                "a level order of {n} rows is not a permutation of them"
            )));
        }
        Ok(())
    }
}

/// Offsets and ids of u32 arrays.
fn check_u32_shape(shape: DeviceShape, what: &str) -> Result<()> {
    if shape.n >= u32::MAX as usize
        || shape.nnz >= u32::MAX as usize
        || shape.n_gathered > u32::MAX as usize
    {
        return Err(Error::invalid(format!(
            "{what}: {} tasks, {} fine tasks and {} gathered elements do not fit 32-bit ids",
            shape.n, shape.nnz, shape.n_gathered
        )));
    }
    Ok(())
}

/// Waits and reports the kernels' error flag.
fn check_flag(dev: &CudaDevice, bad: &DeviceBuffer<u32>, what: &str) -> Result<()> {
    if bad.to_vec(dev)?.first().copied().unwrap_or(0) != 0 {
        return Err(Error::invalid(format!(
            "{what}: an offset of the range array or an index is out of range"
        )));
    }
    Ok(())
}

/// The planner library of `dev`, loaded on first use.
pub(crate) fn plan_kernels(dev: &CudaDevice) -> Result<Arc<PlanKernels>> {
    dev.extension::<PlanKernels>()
}

/// Column blocks' layout (`offsets`: every block's range array, part-major;
/// `perm[new] = old`) of the CSR pattern `ptr`, `idx` over `n_gathered`
/// gathered elements in `k` blocks of `width`, made by a plain host loop
/// and by the device (`column_blocks`), each read back: for the tests that
/// the two agree word for word.
///
/// # Errors
/// A malformed pattern, bad block counts, or a device error.
#[doc(hidden)]
pub fn column_blocks_both_ways(
    dev: &CudaDevice,
    ptr: &[u32],
    idx: &[u32],
    n_gathered: usize,
    width: usize,
    k: usize,
) -> Result<[(Vec<u32>, Vec<u32>); 2]> {
    let n = ptr.len().saturating_sub(1);
    let nnz = idx.len();
    if ptr.first() != Some(&0)
        || ptr.last().map(|&l| l as usize) != Some(nnz)
        || ptr.windows(2).any(|w| w[0] > w[1])
        || idx.iter().any(|&g| g as usize >= n_gathered)
        || width == 0
        || !(1..=MAX_COLUMN_BLOCKS).contains(&k)
    {
        return Err(Error::invalid(format!(
            "column_blocks_both_ways: a malformed pattern, or {k} blocks (1 to {MAX_COLUMN_BLOCKS})"
        )));
    }
    let block = |g: u32| (g as usize / width).min(k - 1);
    let mut offsets = vec![0u32; k * n + 1];
    for t in 0..n {
        for e in ptr[t]..ptr[t + 1] {
            offsets[block(idx[e as usize]) * n + t] += 1;
        }
    }
    let mut at = 0;
    for o in offsets.iter_mut() {
        (*o, at) = (at, at + *o);
    }
    let mut perm = vec![0u32; nnz];
    let mut cursor = offsets.clone();
    for t in 0..n {
        for e in ptr[t]..ptr[t + 1] {
            let c = &mut cursor[block(idx[e as usize]) * n + t];
            perm[*c as usize] = e;
            *c += 1;
        }
    }
    let (dp, di) = (
        DeviceBuffer::upload(dev, ptr)?,
        DeviceBuffer::upload(dev, idx)?,
    );
    let shape = DeviceShape {
        ptr: dp.device_ptr(dev),
        idx: di.device_ptr(dev),
        n,
        nnz,
        n_gathered,
    };
    let dperm = DeviceBuffer::<u8>::zeros(dev, 4 * nnz)?;
    let doffsets = dev
        .extension::<PlanKernels>()?
        .column_blocks(dev, shape, width, k, &dperm)?;
    let bytes = dperm.to_vec(dev)?;
    let device_perm = bytes
        .chunks_exact(4)
        .map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    Ok([(offsets, perm), (doffsets.to_vec(dev)?, device_perm)])
}

/// The inverse of `order` (`position[order[r]] = r`) made and checked on
/// the device as a level order read back from the plan cache is: for the
/// tests that every permutation is taken and nothing else is.
///
/// # Errors
/// `order` is not a permutation of its rows, or a device error.
#[doc(hidden)]
pub fn level_order_inverse(dev: &CudaDevice, order: &[u32]) -> Result<Vec<u32>> {
    if order.is_empty() {
        return Ok(Vec::new());
    }
    let o = DeviceBuffer::upload(dev, order)?;
    let position = DeviceBuffer::<u32>::zeros(dev, order.len())?;
    plan_kernels(dev)?.invert_order(
        dev,
        o.device_ptr(dev),
        order.len(),
        position.device_ptr(dev),
    )?;
    position.to_vec(dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_tasks_share_a_warp() {
        assert_eq!(column_block_group_shift(0, 0), 3);
        assert_eq!(column_block_group_shift(100, 800), 3);
        assert_eq!(column_block_group_shift(100, 801), 4);
        assert_eq!(column_block_group_shift(1 << 24, 16 << 24), 4);
        assert_eq!(column_block_group_shift(100, 1601), 5);
        assert_eq!(column_block_group_shift(1, usize::MAX), 5);
        // The device's groups are 8 lanes at the least.
        let plan = include_str!("../../cuda/plan.cuh");
        assert!(plan.contains("constexpr uint32_t CB_MIN_GROUP_SHIFT = 3;"));
    }
}

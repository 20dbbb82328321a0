//! A launch's task list cut on the device (`gpu/cuda/task_cut.cuh`) from
//! the size kernel's ranges: the list the host cut makes from the same
//! ranges ([`launch_steps::cut_tasks`], [`launch_steps::pack_warps`],
//! [`launch_steps::whole_runs`]), word for word, without reading the
//! ranges back or uploading the list. A launch over all rows of a large
//! matrix with long rows (RMAT's hubs) is then prepared in milliseconds
//! rather than a second of host work.
//!
//! Only ranges that follow one another (a range array's rows, what every
//! kernel over a matrix has) are cut here; others, and launches under
//! [`DEVICE_CUT_MIN_TASKS`] tasks, keep the host cut.

use crate::abi::BLOCK;
use crate::compile::device_modules::{load_function, load_unit};
use crate::compile::units::task_cut_unit;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::{CudaDevice, DeviceExtension};
use crate::launch::device_tasks::{CutOnDevice, DeviceTaskList, TaskListWords};
use crate::launch::launch_steps::PACK_CHUNK;
use crate::launch::library_kernels::{launch_words, stride_blocks, ScanKernels};
use crate::launch::split_policy::Cut;
use cudarc::driver::{CudaFunction, CudaModule};
use std::sync::Arc;
use warpfit_runtime::Result;

/// Launches over fewer tasks keep the host cut: it takes them a few
/// milliseconds, and their first launch need not compile the task cut's
/// library. Measurements: BENCHMARKS.md, "Task lists cut on the device".
pub const DEVICE_CUT_MIN_TASKS: usize = 1 << 18;

/// `info[0]` bits of `cut_count` (task_cut.cuh).
const NOT_CONTIGUOUS: u32 = 1;
const SATURATED: u32 = 2;

/// The loaded task-cut library.
pub(crate) struct TaskCutKernels {
    _module: Arc<CudaModule>,
    cut_count: CudaFunction,
    cut_write: CudaFunction,
    pack_count: CudaFunction,
    pack_write: CudaFunction,
    pack_runs: CudaFunction,
    scan_reduce: CudaFunction,
    scan_sums: CudaFunction,
    scan_apply: CudaFunction,
}

impl DeviceExtension for TaskCutKernels {
    /// Compiles (or reads from the kernel cache) and loads the library.
    fn load(dev: &CudaDevice) -> Result<Self> {
        let module = load_unit(dev, "task_cut", &task_cut_unit())?;
        let f = |entry: &str| load_function(&module, "task_cut", entry);
        Ok(TaskCutKernels {
            cut_count: f("wf_cut_count")?,
            cut_write: f("wf_cut_write")?,
            pack_count: f("wf_pack_count")?,
            pack_write: f("wf_pack_write")?,
            pack_runs: f("wf_pack_runs")?,
            scan_reduce: f("wf_cut_scan_reduce")?,
            scan_sums: f("wf_cut_scan_sums")?,
            scan_apply: f("wf_cut_scan_apply")?,
            _module: module,
        })
    }
}

/// What the device cut found about the ranges.
pub(crate) enum DeviceCut {
    /// The list, on the device.
    Cut(Box<DeviceTaskList>),
    /// The ranges do not follow one another, or their segments might not
    /// fit u32 ids: the host cuts them.
    OnTheHost,
    /// An index reached u32::MAX (the size kernel saturates there): too
    /// large to cut.
    Saturated,
}

impl TaskCutKernels {
    fn launch(
        &self,
        dev: &CudaDevice,
        f: &CudaFunction,
        items: u64,
        what: &str,
        args: &[u64],
    ) -> Result<()> {
        let blocks = stride_blocks(dev, items, u64::from(BLOCK));
        // SAFETY: every kernel of task_cut.cuh takes 64-bit pointers and
        // counts in the order `cut` passes them, each pointer the address
        // of a live buffer at least as long as its count says: `ranges`
        // 2n words, the piece and split arrays n + 1, the list's arrays
        // their scanned totals, the chunk counts `chunks + 1`; `cut_write`'s
        // slots are a segment's word each, or 0 (none).
        unsafe { launch_words(dev, f, blocks, what, args) }
    }

    fn scan(&self, dev: &CudaDevice, v: &DeviceBuffer<u32>) -> Result<u32> {
        ScanKernels {
            reduce: &self.scan_reduce,
            sums: &self.scan_sums,
            apply: &self.scan_apply,
        }
        .exclusive_scan(dev, v.device_ptr(dev), v.len())?;
        // The last word was zero: it now holds the total.
        Ok(v.read_at(dev, v.len() - 1..v.len())?[0])
    }

    /// Cuts tasks `0..n`, whose `lo, hi` are `ranges` (`2n` words) and
    /// whose fine tasks number `total`, as `cut` says; scratch of
    /// `acc_bytes` per segment where a task is split. With `columns` above
    /// 1 the tasks are a 2-D kernel's rows and the list a column list
    /// (scratch per split segment and column; `OnTheHost` where those slots
    /// would not fit u32 ids). Waits.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn cut(
        &self,
        dev: &CudaDevice,
        ranges: &DeviceBuffer<u32>,
        n: usize,
        total: u64,
        cut: Cut,
        acc_bytes: usize,
        columns: u64,
    ) -> Result<DeviceCut> {
        let max_len = cut.max_len.max(1);
        // Every task's pieces are at most len / max_len + 1.
        let bound = n as u64 + total / u64::from(max_len);
        if n == 0 || ranges.len() < 2 * n || bound >= u64::from(u32::MAX) {
            return Ok(DeviceCut::OnTheHost);
        }
        let pieces = DeviceBuffer::<u32>::zeros(dev, n + 1)?;
        let split_at = DeviceBuffer::<u32>::zeros(dev, n + 1)?;
        let info = DeviceBuffer::<u32>::zeros(dev, 2)?;
        let (r, nn, ml) = (ranges.device_ptr(dev), n as u64, u64::from(max_len));
        let (p, s) = (pieces.device_ptr(dev), split_at.device_ptr(dev));
        self.launch(
            dev,
            &self.cut_count,
            nn,
            "cut_count",
            &[r, nn, ml, p, s, info.device_ptr(dev)],
        )?;
        let [flags, most_pieces] = <[u32; 2]>::try_from(info.to_vec(dev)?).unwrap_or_default();
        if flags & SATURATED != 0 {
            return Ok(DeviceCut::Saturated);
        }
        if flags & NOT_CONTIGUOUS != 0 {
            return Ok(DeviceCut::OnTheHost);
        }
        let len = self.scan(dev, &pieces)? as usize;
        let split_count = self.scan(dev, &split_at)? as usize;
        // Every whole task has one segment; the split tasks have the rest.
        let split_total = len - (n - split_count);
        if columns > 1 && (split_total as u64).saturating_mul(columns) >= u64::from(u32::MAX) {
            return Ok(DeviceCut::OnTheHost);
        }
        let column_slot = match columns > 1 {
            true => Some(DeviceBuffer::<u32>::zeros(dev, len)?),
            false => None,
        };
        let segments = DeviceBuffer::<u32>::zeros(dev, 3 * len)?;
        let whole = DeviceBuffer::<u8>::zeros(dev, len)?;
        let split = DeviceBuffer::<u32>::zeros(dev, 3 * split_count)?;
        let split_segments = DeviceBuffer::<u32>::zeros(dev, split_total)?;
        let seg = segments.device_ptr(dev);
        let wh = whole.device_ptr(dev);
        self.launch(
            dev,
            &self.cut_write,
            nn,
            "cut_write",
            &[
                r,
                nn,
                ml,
                p,
                s,
                seg,
                wh,
                split.device_ptr(dev),
                split_segments.device_ptr(dev),
                column_slot.as_ref().map_or(0, |c| c.device_ptr(dev)),
            ],
        )?;
        let packed = match cut.pack_budget {
            Some(budget) => Some(self.pack(dev, seg, wh, len, budget.max(1))?),
            None => None,
        };
        let list = CutOnDevice {
            segments,
            whole,
            split,
            split_segments,
            len,
            split_count,
            most_pieces,
            packed,
            columns,
            column_slot,
            split_total,
        };
        Ok(DeviceCut::Cut(Box::new(DeviceTaskList::from_device(
            dev, list, acc_bytes,
        )?)))
    }

    /// The `len` segments at `seg` (whole flags at `whole`) packed into CTE
    /// warp groups of at most `budget` work: each group's first segment
    /// (then the end) and its first task or `u32::MAX`.
    fn pack(
        &self,
        dev: &CudaDevice,
        seg: u64,
        whole: u64,
        len: usize,
        budget: u32,
    ) -> Result<(DeviceBuffer<u32>, DeviceBuffer<u32>)> {
        let chunks = len.div_ceil(PACK_CHUNK);
        let counts = DeviceBuffer::<u32>::zeros(dev, chunks + 1)?;
        let (l, b, c) = (len as u64, u64::from(budget), counts.device_ptr(dev));
        self.launch(
            dev,
            &self.pack_count,
            chunks as u64,
            "pack_count",
            &[seg, l, b, c],
        )?;
        let groups = self.scan(dev, &counts)? as usize;
        let first = DeviceBuffer::<u32>::zeros(dev, groups + 1)?;
        let task = DeviceBuffer::<u32>::zeros(dev, groups)?;
        let f = first.device_ptr(dev);
        self.launch(
            dev,
            &self.pack_write,
            chunks as u64,
            "pack_write",
            &[seg, l, b, c, f],
        )?;
        let g = groups as u64;
        self.launch(
            dev,
            &self.pack_runs,
            g,
            "pack_runs",
            &[seg, whole, f, g, task.device_ptr(dev)],
        )?;
        Ok((first, task))
    }
}

/// The device cut of a launch over `n` tasks, when it takes it: at least
/// [`DEVICE_CUT_MIN_TASKS`] tasks (or any, with `always`).
pub(crate) fn cut_on_device(
    dev: &CudaDevice,
    ranges: &DeviceBuffer<u32>,
    n: usize,
    total: u64,
    cut: Cut,
    acc_bytes: usize,
    always: bool,
) -> Result<DeviceCut> {
    if n < DEVICE_CUT_MIN_TASKS && !always {
        return Ok(DeviceCut::OnTheHost);
    }
    dev.extension::<TaskCutKernels>()?
        .cut(dev, ranges, n, total, cut, acc_bytes, 1)
}

/// The task list of `ranges` (`lo, hi` per task) cut as a launch cuts it
/// (segments of at most `max_len`, CTE warps packed by `pack_budget`), by
/// the host and by the device, each read back from the device as its
/// kernels read it: the host's, and the device's where it cuts such
/// ranges (`None` where they do not follow one another). For the tests
/// that the two agree word for word.
///
/// # Errors
/// `max_len` or `pack_budget` 0, an index at u32::MAX, or a device error.
pub fn cut_both_ways(
    dev: &CudaDevice,
    ranges: &[u32],
    max_len: u32,
    pack_budget: Option<u32>,
) -> Result<(TaskListWords, Option<TaskListWords>)> {
    use crate::launch::launch_steps::cut_tasks;
    use warpfit_runtime::Error;
    if max_len == 0 || pack_budget == Some(0) {
        return Err(Error::invalid(
            "segment length and warp budget must be at least 1",
        ));
    }
    if ranges.contains(&u32::MAX) {
        return Err(Error::invalid("an index at u32::MAX cannot be cut"));
    }
    // Scratch slots of 8 bytes: the widest accumulator the kernels fold.
    const ACC: usize = 8;
    let host = DeviceTaskList::upload(dev, cut_tasks(ranges, max_len)?, ACC, pack_budget)?;
    let n = ranges.len() / 2;
    let total: u64 = ranges
        .chunks_exact(2)
        .map(|r| u64::from(r[1].saturating_sub(r[0])))
        .sum();
    let on_device = DeviceBuffer::upload(dev, &ranges[..2 * n])?;
    let cut = Cut {
        max_len,
        pack_budget,
        queue_chunk: None,
    };
    let device = match cut_on_device(dev, &on_device, n, total, cut, ACC, true)? {
        DeviceCut::Cut(l) => Some(l.words(dev)?),
        DeviceCut::OnTheHost => None,
        DeviceCut::Saturated => return Err(Error::invalid("an index at u32::MAX cannot be cut")),
    };
    Ok((host.words(dev)?, device))
}

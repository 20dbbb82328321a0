//! Launches of 2-D kernels (`#[nested_reduce(columns = k)]`): the generated
//! launch API takes a row count, and the kernel runs over the flattened
//! tasks `row·k + j` (docs/codegen.md, "2-D kernels"), one per thread, so
//! that a warp's lanes take consecutive columns of a row. A row far longer
//! than the rest (a power-law graph's hub, a layer's dense row) would keep
//! its `k` threads folding it long after every other warp is done, so a
//! launch over all rows measures the rows first and, where some row is
//! longer than a piece ([`piece_len`]), cuts the rows into pieces on the
//! device and runs a thread per piece and column (`ColumnList` in
//! task_source.cuh), the split rows' pieces merged after in order.

use crate::abi::TaskStats;
use crate::compile::device_modules::Module;
use crate::config::{Decomposition, LaunchConfig, Split};
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::launch::arg::Arg;
use crate::launch::device_cut::{DeviceCut, TaskCutKernels};
use crate::launch::device_tasks::DeviceTaskList;
use crate::launch::enqueue::TaskSizes;
use crate::launch::resident_args::{ParamBlock, ResidentArgs};
use crate::launch::split_policy::Cut;
use crate::spec::{KernelSpec, ScalarValue};
use warpfit_runtime::{Error, Result, Tasks};

/// The piece a launch with a thread slot's worth of rows and columns cuts
/// its long rows to. A piece is a chain of dependent loads per thread
/// (unrolled by 4), and a block holds its warp slots until its longest
/// piece is done.
pub(crate) const PIECE_LEN: u32 = 256;

/// Such a launch cuts only rows longer than this many times the mean row
/// (a power-law graph's hubs): where rows are alike (a pruned layer's),
/// the pieces' partials and their merge cost more than the balance gains.
pub(crate) const IMBALANCE: u64 = 8;

/// The shortest piece: shorter ones would make the merge, one partial per
/// piece and column, cost more than the parallelism gains.
pub(crate) const PIECE_MIN: u32 = 32;

/// Threads per resident thread slot a launch with fewer rows and columns
/// than slots aims for by cutting its rows (a pruned layer of a thousand
/// long rows): pieces of `total · columns / (ITEMS_PER_SLOT ·
/// resident_threads)`, within [`PIECE_MIN`]..=[`PIECE_LEN`], since one
/// thread per column of a long row leaves most warp slots idle and each
/// thread a long chain of loads.
pub(crate) const ITEMS_PER_SLOT: u64 = 4;

/// The column count of a 2-D kernel's launch, read from its arguments at
/// the position the spec names; `None` for other kernels.
pub(crate) fn column_count(spec: &KernelSpec, args: &[Arg<'_>]) -> Option<u64> {
    match args.get(spec.columns?)? {
        Arg::Scalar(ScalarValue::U32(k)) => Some(u64::from(*k)),
        Arg::Scalar(ScalarValue::U64(k)) => Some(*k),
        _ => None,
    }
}

/// The piece length a 2-D launch over `rows` rows of these statistics
/// cuts its rows to, or `None` to run every row whole. With
/// [`Split::Auto`] (and the CTE budgets, which a 2-D launch has no warps to
/// pack for): a launch of at least a thread per resident slot cuts rows
/// longer than [`PIECE_LEN`] and [`IMBALANCE`] times the mean into pieces
/// of that; a smaller one cuts every row to [`ITEMS_PER_SLOT`]'s piece.
/// With [`Split::Max`] the bound given; with [`Split::Never`] none. A
/// launch with no row longer than its piece is not cut at all.
pub(crate) fn piece_len(
    split: Split,
    stats: &TaskStats,
    rows: u64,
    columns: u64,
    resident_threads: u64,
) -> Option<u32> {
    let len = match split {
        Split::Never => return None,
        Split::Max(m) => u64::from(m.max(1)),
        Split::Auto | Split::Budget(_) | Split::Queued(_) => {
            if cuts_hubs_only(rows.saturating_mul(columns), resident_threads) {
                let mean = stats.total / rows.max(1);
                u64::from(PIECE_LEN).max(IMBALANCE.saturating_mul(mean))
            } else {
                let aim = stats.total.saturating_mul(columns)
                    / ITEMS_PER_SLOT.saturating_mul(resident_threads).max(1);
                aim.clamp(u64::from(PIECE_MIN), u64::from(PIECE_LEN))
            }
        }
    };
    (stats.longest > len).then(|| u32::try_from(len).unwrap_or(u32::MAX))
}

/// Whether a launch of `tasks` flattened tasks (rows times columns) cuts
/// only its hubs, the rows far longer than the mean ([`piece_len`]): one
/// of a thread per resident slot or more. A smaller one cuts every row long
/// enough into even pieces.
pub(crate) fn cuts_hubs_only(tasks: u64, resident_threads: u64) -> bool {
    tasks >= resident_threads
}

/// A 2-D launch's rows cut into pieces: the column list, the piece length
/// and the longest row.
pub(crate) struct ColumnCut {
    pub list: DeviceTaskList,
    pub piece_len: u32,
    pub longest: u64,
}

/// The column list of a launch of `spec` over `tasks` flattened tasks of
/// `columns` columns with `config`, where [`piece_len`] cuts its rows:
/// `None` for a launch that runs whole (no row longer than a piece; one
/// column; a decomposition other than one task per thread; rows whose
/// ranges do not follow one another, or whose pieces would not fit u32
/// ids). Runs the size kernel over the rows and waits for it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cut_rows(
    dev: &CudaDevice,
    spec: &KernelSpec,
    module: &Module,
    params: &ParamBlock,
    fault: &DeviceBuffer<u64>,
    args: &ResidentArgs,
    config: &LaunchConfig,
    tasks: usize,
    columns: u64,
) -> Result<Option<ColumnCut>> {
    let k = usize::try_from(columns).unwrap_or(usize::MAX);
    if config.decomposition != Decomposition::Thread
        || config.split == Split::Never
        || columns < 2
        || tasks == 0
        || tasks % k != 0
    {
        return Ok(None);
    }
    let rows = tasks / k;
    if u32::try_from(rows).is_err() {
        return Ok(None);
    }
    let sizes = TaskSizes::measure(dev, spec, module, params, fault, args, rows, columns)?;
    let threads = dev.resident_warps().saturating_mul(32);
    let Some(len) = piece_len(config.split, &sizes.stats, rows as u64, columns, threads) else {
        return Ok(None);
    };
    let cut = Cut {
        max_len: len,
        pack_budget: None,
        queue_chunk: None,
    };
    let kernels = dev.extension::<TaskCutKernels>()?;
    let (ranges, total, acc) = (&sizes.ranges, sizes.stats.total, spec.acc.size());
    Ok(
        match kernels.cut(dev, ranges, rows, total, cut, acc, columns)? {
            DeviceCut::Cut(list) => Some(ColumnCut {
                list: *list,
                piece_len: len,
                longest: sizes.stats.longest,
            }),
            DeviceCut::OnTheHost | DeviceCut::Saturated => None,
        },
    )
}

/// The flattened tasks of `rows` rows of `columns` columns: `Tasks::All(rows
/// · columns)`. A task list or a worklist names rows of another kernel's
/// numbering and is refused, as is a product that overflows.
pub fn column_tasks<'t>(kernel: &str, tasks: Tasks<'t>, columns: u64) -> Result<Tasks<'t>> {
    match tasks {
        Tasks::All(rows) => usize::try_from(columns)
            .ok()
            .and_then(|c| rows.checked_mul(c))
            .map(Tasks::All)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "`{kernel}`: {rows} rows of {columns} columns are more tasks than a launch can number"
                ))
            }),
        _ => Err(Error::invalid(format!(
            "`{kernel}` is a 2-D kernel (`columns`): it runs over a row count, not over a task list or a worklist"
        ))),
    }
}

/// The options a 2-D launch runs with: CTE, the default decomposition,
/// becomes the column mapping when a row has several columns: one
/// flattened task per thread ([`Decomposition::Thread`]), so that a warp's
/// lanes take consecutive columns of one row, read each of the row's
/// nonzeros at one address (one transaction for the warp) and gather
/// consecutive elements of `x`'s rows (coalesced). With one column the
/// kernel is a 1-D kernel and keeps CTE. Other decompositions run as asked.
pub fn column_config(config: &LaunchConfig, columns: u64) -> LaunchConfig {
    if config.decomposition == Decomposition::Cte && columns >= 2 {
        LaunchConfig {
            decomposition: Decomposition::Thread,
            ..*config
        }
    } else {
        *config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_flattened_tasks() {
        assert!(matches!(
            column_tasks("k", Tasks::All(3), 5),
            Ok(Tasks::All(15))
        ));
        assert!(matches!(
            column_tasks("k", Tasks::All(3), 0),
            Ok(Tasks::All(0))
        ));
        let e = column_tasks("k", Tasks::All(usize::MAX), 2).unwrap_err();
        assert!(e.to_string().contains("more tasks"), "{e}");
        let list = warpfit_runtime::exec::TaskList::from_ptr(&[0, 1, 3]).unwrap();
        let e = column_tasks("k", Tasks::List(&list), 2).unwrap_err();
        assert!(e.to_string().contains("row count"), "{e}");
    }

    fn stats(longest: u64, total: u64) -> TaskStats {
        TaskStats {
            longest,
            total,
            local_warps: 0,
            busy_warps: 0,
        }
    }

    #[test]
    fn rows_longer_than_a_piece_are_cut() {
        let slots = 270_336; // an H200's resident threads
        let auto = |s: &TaskStats, rows: u64, k: u64| piece_len(Split::Auto, s, rows, k, slots);
        // RMAT 22 × 64: a power-law graph's hubs, cut to the piece.
        let rmat = stats(100_000, 65_000_000);
        assert_eq!(auto(&rmat, 1 << 22, 64), Some(PIECE_LEN));
        // Rows far longer than the piece but alike (a pruned layer's
        // 4096 rows of about 830): whole.
        assert_eq!(auto(&stats(1000, 3_400_000), 4096, 150), None);
        // A hub 8 times the mean is not yet cut; past that it is, to 8
        // times the mean where that is longer than the piece.
        assert_eq!(auto(&stats(8 * 300, 300 << 20), 1 << 20, 8), None);
        assert_eq!(auto(&stats(8 * 300 + 1, 300 << 20), 1 << 20, 8), Some(2400));
        // Fewer rows and columns than slots (a layer of a thousand rows of
        // 1024): shorter pieces for enough threads.
        assert_eq!(auto(&stats(1024, 1_024_000), 1000, 150), Some(142));
        assert_eq!(auto(&stats(500, 2000), 100, 8), Some(PIECE_MIN));
        // No row longer than a piece: nothing to cut.
        assert_eq!(auto(&stats(40, 67_000_000), 1 << 22, 64), None);
        assert_eq!(auto(&stats(32, 2000), 100, 8), None);
        // As configured; the CTE budgets cut as `Auto` does.
        let cut = |split| piece_len(split, &rmat, 1 << 22, 64, slots);
        assert_eq!(cut(Split::Never), None);
        assert_eq!(cut(Split::Max(7)), Some(7));
        assert_eq!(cut(Split::Max(0)), Some(1));
        assert_eq!(cut(Split::Budget(512)), Some(PIECE_LEN));
        assert_eq!(piece_len(Split::Max(7), &stats(7, 70), 10, 64, slots), None);
        // No rows or no resident thread reported: no division by 0.
        assert_eq!(piece_len(Split::Auto, &rmat, 0, 64, slots), Some(PIECE_LEN));
        assert_eq!(
            piece_len(Split::Auto, &rmat, 1 << 22, 64, 0),
            Some(PIECE_LEN)
        );
    }

    #[test]
    fn cte_becomes_the_column_mapping() {
        let cte = LaunchConfig::default();
        assert_eq!(column_config(&cte, 2).decomposition, Decomposition::Thread);
        assert_eq!(column_config(&cte, 1).decomposition, Decomposition::Cte);
        let sub = LaunchConfig::new(Decomposition::SubWarp(4));
        assert_eq!(column_config(&sub, 64), sub);
    }
}

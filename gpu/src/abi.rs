//! The device library's ABI as the host sees it: block and merge widths,
//! entry-point names, the minimum architecture, the `LaunchArgs` and
//! `FaultRecord` structs and the fault kinds.
//!
//! Each item mirrors one spelled in `gpu/cuda/*.cuh`; the tests at the end
//! of this file read those headers and check that both sides agree, so a
//! change on one side that is not made on the other fails `cargo test`.

use crate::arch::Arch;
use crate::config::Decomposition;
use cudarc::driver::DeviceRepr;
use warpfit_runtime::{Error, Result};

/// Threads per warp (`warpfit::WARP` in types.cuh).
pub(crate) const WARP: u32 = 32;

/// Threads per block of every library kernel (`warpfit::BLOCK` in types.cuh).
pub(crate) const BLOCK: u32 = 256;

/// Lanes per split task in `wf_merge` (`warpfit::MERGE_LANES` in merge.cuh).
pub(crate) const MERGE_LANES: u64 = 8;

/// Lanes per split task in `wf_merge_wide` (`warpfit::MERGE_LANES_WIDE`).
pub(crate) const MERGE_LANES_WIDE: u64 = WARP as u64;

/// Lanes per split task in `wf_merge_block` (`warpfit::MERGE_LANES_BLOCK`):
/// a block.
pub(crate) const MERGE_LANES_BLOCK: u64 = BLOCK as u64;

/// Lanes that walk a frontier vertex's row in the level order's rounds
/// (`warpfit::levels::LEVEL_GROUP` in levels.cuh).
pub(crate) const LEVEL_GROUP: u32 = 8;

/// Growth over its parents past which a level order's level is taken to
/// keep growing (`warpfit::levels::LEVEL_GROWTH`).
pub(crate) const LEVEL_GROWTH: u32 = 4;

/// Frontier vertices per tile of a level order round
/// (`warpfit::levels::LEVEL_TILE`).
pub(crate) const LEVEL_TILE: u32 = BLOCK / LEVEL_GROUP;

/// Lanes that copy one task's range in a device renumbering's `rows_perm`
/// (`warpfit::ROWS_GROUP` in plan.cuh).
pub(crate) const ROWS_GROUP: u32 = 8;

/// The oldest architecture the device library compiles for (the warp
/// reductions `__reduce_*_sync` need 8.0); types.cuh rejects older ones
/// with `#error`, and [`crate::CudaDevice::new`] refuses such devices.
pub(crate) const MIN_ARCH: Arch = Arch::new(8, 0);

/// The first architecture with programmatic dependent launches, which the
/// merge of split tasks uses (`pdl.cuh`).
pub(crate) const PDL_ARCH: Arch = Arch::new(9, 0);

/// The task-size kernel (`task_sizes` in merge.cuh).
pub(crate) const SIZES_ENTRY: &str = "wf_sizes";
/// The merge of split tasks with [`MERGE_LANES`] lanes per task.
pub(crate) const MERGE_ENTRY: &str = "wf_merge";
/// The merge of split tasks with [`MERGE_LANES_WIDE`] lanes per task.
pub(crate) const MERGE_WIDE_ENTRY: &str = "wf_merge_wide";
/// The merge of split tasks with a block ([`MERGE_LANES_BLOCK`] lanes) per
/// task.
pub(crate) const MERGE_BLOCK_ENTRY: &str = "wf_merge_block";
/// The merge of a column list's split rows, one thread per split row and
/// column (`merge_columns` in merge.cuh).
pub(crate) const MERGE_COLUMNS_ENTRY: &str = "wf_merge_columns";
/// A 2-D launch's validation over its rows at their first and last columns
/// (`ValidateEnds` over `RowEnds`, thread.cuh).
pub(crate) const VALIDATE_ALL_ENTRY: &str = "wf_validate_all";
/// The same over a column list's pieces (`ValidateEnds` over `PieceEnds`).
pub(crate) const VALIDATE_COLUMNS_ENTRY: &str = "wf_validate_columns";
/// A 2-D launch's fold over all rows with its loads unchecked, two columns
/// a thread, behind the validation's gate (`ThreadPairValidated` over
/// `AllTasks`).
pub(crate) const PAIR_ALL_ENTRY: &str = "wf_pair_all";
/// The same over a column list (`ThreadPairValidated` over `ColumnList`).
pub(crate) const PAIR_COLUMNS_ENTRY: &str = "wf_pair_columns";
/// A 2-D launch's checked fold over all rows behind the validation's gate,
/// a strided grid of a wave of blocks (`ThreadStrided` over `AllTasks`).
pub(crate) const RECHECK_ALL_ENTRY: &str = "wf_recheck_all";
/// The same over a column list (`ThreadStrided` over `ColumnList`).
pub(crate) const RECHECK_COLUMNS_ENTRY: &str = "wf_recheck_columns";

/// Where a launch's items come from: suffix `_all` or `_list` of an entry
/// point (`warpfit::AllTasks`, `warpfit::TaskList` in task_source.cuh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskSource {
    All,
    List,
    /// A packed list whose groups warps take from a device queue
    /// (`warpfit::QueuedTaskList`; CTE only, suffix `_queue`).
    Queue,
    /// The items of a device worklist (`warpfit::FrontierTasks` in
    /// worklist.cuh, suffix `_frontier`).
    Frontier,
    /// A 2-D kernel's rows cut into pieces, each spread over the columns
    /// (`warpfit::ColumnList`; one thread per piece and column, suffix
    /// `_columns`).
    Columns,
}

/// The entry point that runs `decomposition` over `source`: one of the
/// `extern "C"` kernels `WARPFIT_ENTRY_POINTS` (kernel.cuh) defines.
pub(crate) fn entry_point(
    decomposition: Decomposition,
    source: TaskSource,
) -> Result<&'static str> {
    use Decomposition as D;
    use TaskSource as S;
    Ok(match (decomposition, source) {
        (D::Thread, S::All) => "wf_thread_all",
        (D::SubWarp(2), S::All) => "wf_sub2_all",
        (D::SubWarp(4), S::All) => "wf_sub4_all",
        (D::SubWarp(8), S::All) => "wf_sub8_all",
        (D::SubWarp(16), S::All) => "wf_sub16_all",
        (D::SubWarp(32), S::All) => "wf_sub32_all",
        (D::Cte, S::All) => "wf_cte_all",
        (D::Thread, S::List) => "wf_thread_list",
        (D::SubWarp(2), S::List) => "wf_sub2_list",
        (D::SubWarp(4), S::List) => "wf_sub4_list",
        (D::SubWarp(8), S::List) => "wf_sub8_list",
        (D::SubWarp(16), S::List) => "wf_sub16_list",
        (D::SubWarp(32), S::List) => "wf_sub32_list",
        (D::Cte, S::List) => "wf_cte_list",
        (D::Cte, S::Queue) => "wf_cte_queue",
        (D::Thread, S::Frontier) => "wf_thread_frontier",
        (D::SubWarp(2), S::Frontier) => "wf_sub2_frontier",
        (D::SubWarp(4), S::Frontier) => "wf_sub4_frontier",
        (D::SubWarp(8), S::Frontier) => "wf_sub8_frontier",
        (D::SubWarp(16), S::Frontier) => "wf_sub16_frontier",
        (D::SubWarp(32), S::Frontier) => "wf_sub32_frontier",
        (D::Cte, S::Frontier) => "wf_cte_frontier",
        (D::Thread, S::Columns) => "wf_thread_columns",
        (d, S::Columns) => {
            return Err(Error::invalid(format!(
                "a 2-D kernel's rows cut into pieces run one thread per piece and column, not with {d:?}"
            )))
        }
        (d, S::Queue) => {
            return Err(Error::invalid(format!(
                "a queued task list (the cfq and sjq schedules) runs with the CTE decomposition only, not {d:?}"
            )))
        }
        (D::SubWarp(w), _) => {
            return Err(Error::invalid(format!(
                "sub-warp width {w} is not supported: expected 2, 4, 8, 16 or 32"
            )))
        }
    })
}

/// Every entry point `WARPFIT_ENTRY_POINTS` defines for a kernel: 35, each
/// compiled as a module of its own when a launch first asks for it.
#[doc(hidden)]
pub const ENTRY_POINTS: &[&str] = &[
    "wf_thread_all",
    "wf_sub2_all",
    "wf_sub4_all",
    "wf_sub8_all",
    "wf_sub16_all",
    "wf_sub32_all",
    "wf_cte_all",
    "wf_thread_list",
    "wf_sub2_list",
    "wf_sub4_list",
    "wf_sub8_list",
    "wf_sub16_list",
    "wf_sub32_list",
    "wf_cte_list",
    "wf_cte_queue",
    "wf_thread_frontier",
    "wf_sub2_frontier",
    "wf_sub4_frontier",
    "wf_sub8_frontier",
    "wf_sub16_frontier",
    "wf_sub32_frontier",
    "wf_cte_frontier",
    MERGE_ENTRY,
    MERGE_WIDE_ENTRY,
    MERGE_BLOCK_ENTRY,
    "wf_thread_columns",
    MERGE_COLUMNS_ENTRY,
    VALIDATE_ALL_ENTRY,
    VALIDATE_COLUMNS_ENTRY,
    PAIR_ALL_ENTRY,
    PAIR_COLUMNS_ENTRY,
    RECHECK_ALL_ENTRY,
    RECHECK_COLUMNS_ENTRY,
    SIZES_ENTRY,
    DONATED_ENTRY,
];

/// The work-donation launch that follows a donating frontier launch
/// (`CteForEach::donated` in cte_for_each.cuh).
pub(crate) const DONATED_ENTRY: &str = "wf_donated";

/// Launch-wide arguments; mirrors `warpfit::LaunchArgs` in task_source.cuh
/// (device pointers as `u64`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct LaunchArgs {
    pub n_items: u64,
    pub segments: u64,
    pub whole: u64,
    pub scratch: u64,
    pub present: u64,
    pub split: u64,
    pub split_segments: u64,
    pub fault: u64,
    pub sizes: u64,
    pub cte_serial_max: u32,
    pub n_warps: u32,
    pub warp_first: u64,
    pub warp_task: u64,
    pub carry: u64,
    pub carry_mode: u32,
    /// [`LIST_TRUSTED`] or 0.
    pub flags: u32,
    /// A zeroed `u32` queue head (CF-Q, SJ-Q) or 0.
    pub queue: u64,
    pub queue_chunk: u32,
    pub queue_pad: u32,
    /// A device worklist's items (`FrontierTasks`) or 0.
    pub frontier: u64,
    /// Its push count on the device (`u64`) or 0.
    pub frontier_count: u64,
    /// Work donation: the chunk records' board, or 0.
    pub donated: u64,
    /// Work donation: three `u64`, chunks posted and donation blocks
    /// finished (zeroed by the donation launch's last block), and the
    /// chunks every donation launch ran (added to by that block), or 0.
    pub donation: u64,
    /// Work donation: bytes at `donated`.
    pub donated_bytes: u64,
    /// Work donation: items with more fine tasks are donated; 0: none.
    pub donate_min: u32,
    pub donate_pad: u32,
    /// A column list and its merge: the 2-D kernel's column count.
    pub columns: u64,
    /// A column list: per segment, its position among the split segments
    /// (`u32`), or 0.
    pub column_slot: u64,
    /// Behind a validation ([`Gate`]): the claimed word of the validation
    /// launch's fault record, or 0.
    pub gate: u64,
    /// [`Gate`] as `u32`.
    pub gate_when: u32,
    /// A validation: lanes per item (a power of two up to 32).
    pub validate_lanes: u32,
}

/// Whether a launch runs only after a 2-D launch's validation
/// (`GATE_*` in task_source.cuh): the fold with its loads unchecked where
/// the validation found every load in range, the checked fold where it
/// did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u32)]
pub(crate) enum Gate {
    /// Runs whatever a validation found (or with none before it).
    #[default]
    None = 0,
    /// Runs where the validation found every load in range.
    IfValid = 1,
    /// Runs where it found a fault.
    IfInvalid = 2,
}

/// How a push reserves its slot in a device worklist (`PUSH_*` in
/// worklist.cuh, `WorklistRef::variant`), chosen per list so that the
/// variants can be measured against each other on the same kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PushVariant {
    /// One global atomic per push (Nasre et al.'s base worklist, III-A).
    Atomic = 0,
    /// One global atomic per group of lanes of a warp that push together,
    /// each lane at its offset by popcount (III-C's chunking per warp).
    #[default]
    Warp = 1,
    /// Pushes staged per warp in shared memory (III-B), placed by a
    /// prefix sum over the block's warps and reserved with one global
    /// atomic per block (III-D), then copied out coalesced.
    Block = 2,
}

impl PushVariant {
    /// Every variant, for tests and benchmarks that compare them.
    pub const ALL: [PushVariant; 3] = [PushVariant::Atomic, PushVariant::Warp, PushVariant::Block];

    /// The variant's name (`atomic`, `warp`, `block`).
    pub fn name(self) -> &'static str {
        match self {
            PushVariant::Atomic => "atomic",
            PushVariant::Warp => "warp",
            PushVariant::Block => "block",
        }
    }
}

impl std::str::FromStr for PushVariant {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let lowered = s.trim().to_ascii_lowercase();
        PushVariant::ALL
            .into_iter()
            .find(|v| v.name() == lowered)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown push variant `{}`: expected atomic, warp or block",
                    warpfit_runtime::error::excerpt(s.as_bytes())
                ))
            })
    }
}

impl std::fmt::Display for PushVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A device worklist as a kernel's `Params` holds it; mirrors
/// `warpfit::WorklistRef` in worklist.cuh (device pointers as `u64`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct WorklistRef {
    pub items: u64,
    pub count: u64,
    pub spill: u64,
    /// 0 for a list that does not deduplicate.
    pub seen: u64,
    pub capacity: u64,
    pub universe: u64,
    pub variant: u32,
    pub pad: u32,
}

impl WorklistRef {
    /// The struct's bytes as `Params` holds them (native order).
    pub(crate) fn to_ne_bytes(self) -> [u8; 56] {
        let mut out = [0u8; 56];
        let words = [
            self.items,
            self.count,
            self.spill,
            self.seen,
            self.capacity,
            self.universe,
        ];
        for (i, w) in words.iter().enumerate() {
            out[8 * i..8 * i + 8].copy_from_slice(&w.to_ne_bytes());
        }
        out[48..52].copy_from_slice(&self.variant.to_ne_bytes());
        out[52..56].copy_from_slice(&self.pad.to_ne_bytes());
        out
    }
}

// SAFETY: `#[repr(C)]` of u64/u32 fields, laid out as the device struct.
unsafe impl DeviceRepr for WorklistRef {}

/// `LaunchArgs::flags`: the task list's positions were laid out by the
/// host (the throttled handle's part-major copies), so its segments are not
/// checked against each task's own range (`warpfit::LIST_TRUSTED` in
/// task_source.cuh).
pub(crate) const LIST_TRUSTED: u32 = 1;

/// Which launch of a carried sequence a launch is (`CARRY_*` in
/// task_source.cuh): tasks' folds carried in `LaunchArgs::carry` from one
/// launch to the next, the epilogue run by the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CarryMode {
    None = 0,
    First = 1,
    Middle = 2,
    Last = 3,
}

impl CarryMode {
    /// Launch `i` of `n` in a carried sequence (`None` for a single launch).
    pub(crate) fn of(i: usize, n: usize) -> Self {
        match (i, n) {
            (_, 0 | 1) => CarryMode::None,
            (0, _) => CarryMode::First,
            (i, n) if i + 1 == n => CarryMode::Last,
            _ => CarryMode::Middle,
        }
    }
}

// SAFETY: `#[repr(C)]` of u64/u32 fields, laid out as the device struct.
unsafe impl DeviceRepr for LaunchArgs {}

/// What kind of fault a `FaultRecord` holds (`warpfit::FaultKind` in fault.cuh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultKind {
    /// `array[index]` out of range; `array` is the parameter's position.
    Index,
    /// Integer `/` or `%` by zero.
    DivisionByZero,
    /// A task-list segment outside its task's own fine-task range; `index`
    /// is the segment id, `aux0..aux1` the task's range.
    Segment,
}

impl FaultKind {
    /// `FAULT_INDEX`, `FAULT_DIV_ZERO`, `FAULT_SEGMENT`.
    pub(crate) const fn code(self) -> u32 {
        match self {
            FaultKind::Index => 1,
            FaultKind::DivisionByZero => 2,
            FaultKind::Segment => 3,
        }
    }

    /// The kind recorded as `code` (`FAULT_NONE`, 0, is no fault).
    pub(crate) fn from_code(code: u32) -> Option<Self> {
        [Self::Index, Self::DivisionByZero, Self::Segment]
            .into_iter()
            .find(|k| k.code() == code)
    }
}

/// The launch's fault word; mirrors `warpfit::FaultRecord` in fault.cuh.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct FaultRecord {
    /// 0 until a thread publishes its fault.
    pub claimed: u32,
    pub kind: u32,
    pub array: u32,
    pub pad: u32,
    pub task: u64,
    pub index: u64,
    pub aux0: u64,
    pub aux1: u64,
}

impl FaultRecord {
    /// The record's size in u64 words, as the host allocates and reads it.
    pub(crate) const WORDS: usize = std::mem::size_of::<FaultRecord>() / 8;

    /// The record from the words read back (little-endian halves, as the
    /// device wrote the u32 fields).
    pub(crate) fn from_words(w: &[u64; Self::WORDS]) -> Self {
        FaultRecord {
            claimed: w[0] as u32,
            kind: (w[0] >> 32) as u32,
            array: w[1] as u32,
            pad: (w[1] >> 32) as u32,
            task: w[2],
            index: w[3],
            aux0: w[4],
            aux1: w[5],
        }
    }
}

/// The size kernel's launch-wide statistics, four u64 in `LaunchArgs::scratch`
/// (`task_sizes` in merge.cuh).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TaskStats {
    /// The longest task's fine-task count.
    pub longest: u64,
    /// Fine tasks in all.
    pub total: u64,
    /// Warps of 32 tasks whose gathers are local (`gathers_local`).
    pub local_warps: u64,
    /// Warps of 32 tasks with any fine task.
    pub busy_warps: u64,
}

impl TaskStats {
    /// The statistics' size in u64 words.
    pub(crate) const WORDS: usize = 4;

    pub(crate) fn from_words(w: &[u64; Self::WORDS]) -> Self {
        TaskStats {
            longest: w[0],
            total: w[1],
            local_warps: w[2],
            busy_warps: w[3],
        }
    }
}

#[cfg(test)]
mod header_checks;

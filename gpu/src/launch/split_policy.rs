//! Launch planning, host code only: the split a CTE launch over all tasks
//! uses ([`choose_split`], with the automatic policy [`auto_split`] and its
//! tuning constants). The entry points a launch will likely need are
//! guessed in `likely_entries`; the task list a split makes and the kernels
//! that run it are planned in `launch_steps`.
//! Measurements behind the constants are in BENCHMARKS.md, "Tuning
//! constants: history".

use crate::abi::TaskStats;
use crate::config::{Decomposition, Split};
use warpfit_runtime::{Error, Result};

/// Fine tasks per resident warp slot under which a launch counts as small
/// for the automatic split: its few warps are bound by latency and
/// parallelism, not by work.
pub(crate) const SMALL_LAUNCH_PER_SLOT: u64 = 64;

/// The longest task a small launch packs whole (no split, one launch): at
/// most this, [`Split::Budget`] of the next power of two, at least 64.
/// Longer tasks in a small launch are cut into segments of
/// [`SMALL_LAUNCH_SEGMENT`] instead: the merge launch then costs less than
/// the longest task's serial tail.
pub(crate) const SMALL_LAUNCH_WHOLE_MAX: u64 = 128;

/// The segment length of a small launch with a task longer than
/// [`SMALL_LAUNCH_WHOLE_MAX`]: short enough that every warp's segments fold
/// serially (it is under the default `cte_serial_max`).
pub(crate) const SMALL_LAUNCH_SEGMENT: u32 = 4;

/// The serial-fallback bound of a CTE launch with [`Split::Auto`] that is
/// not small and in which most warps' gathers are local (the size kernel's
/// probe: the first gathered index of 32 neighbouring tasks falls in at
/// most 8 lines of 32 elements). Serial loads of neighbouring lanes then
/// hit lines already in L1, and a serial step costs far fewer instructions
/// than a round of expansion; scattered gathers expand. Small launches
/// keep the configured bound: their few warps need the expansion's
/// parallelism more than L1 hits.
pub(crate) const LOCAL_SERIAL_MAX: u32 = 64;

/// The longest task under which a launch that is not small runs 32
/// consecutive tasks per warp, none split (uniform, rgg, the grid): a warp
/// then does at most 2048 fine tasks, and reading a segment list would cost
/// more than the imbalance.
pub(crate) const PACK_ABOVE: u64 = 64;

/// The work budget of packed warps ([`Split::Budget`]) in a launch that is
/// not small: smaller budgets make more warps and split more rows (more
/// merge work), larger ones a longer tail.
pub(crate) const PACKED_WARP_BUDGET: u32 = 512;

/// Fine tasks a warp of a [`Split::Queued`] launch takes per dequeue
/// ([`Cut::queue_chunk`]): the launch runs as a persistent grid whose
/// warps take their groups from a device queue in list order, so that no
/// warp slot waits for the slowest warp of its block to retire, at one
/// atomic per this much work. One group per dequeue (2048 fine tasks at a
/// budget of 2048) makes the queue's one counter the bottleneck; 8K, 16K
/// and 32K run alike. Measurements: BENCHMARKS.md, "Packed warps from a
/// queue".
pub(crate) const PACKED_QUEUE_WORK: u32 = 8192;

/// The groups a warp of a packed launch at `budget` takes per dequeue:
/// [`PACKED_QUEUE_WORK`] fine tasks' worth, at least one group.
pub(crate) fn packed_queue_chunk(budget: u32) -> u32 {
    PACKED_QUEUE_WORK.div_ceil(budget.max(1)).max(1)
}

/// The wider budgets a throttled handle's `auto` also times for a single
/// launch whose automatic split packed its warps by
/// [`PACKED_WARP_BUDGET`] (long tasks in a large launch), keeping the
/// fastest: the best budget depends on where the long tasks fall (RMAT
/// renumbered by breadth-first levels, its hubs' long rows first, runs
/// fastest at 2048; in its generated order at 512). Measurements:
/// BENCHMARKS.md, "Tuning constants: history".
pub(crate) const WIDER_WARP_BUDGETS: [u32; 2] = [1024, 2048];

/// The warp budgets to time besides the one a launch's automatic split
/// chose (`chosen`, [`CudaLaunch::chosen_split`](crate::CudaLaunch::chosen_split)):
/// [`WIDER_WARP_BUDGETS`] where it packed warps by [`PACKED_WARP_BUDGET`],
/// none otherwise (short tasks run whole; small launches have their own
/// packing).
pub(crate) fn budgets_to_time(chosen: Option<Split>) -> &'static [u32] {
    if chosen == Some(Split::Budget(PACKED_WARP_BUDGET)) {
        &WIDER_WARP_BUDGETS
    } else {
        &[]
    }
}

/// The wide merge runs when some split task has more pieces than this:
/// [`MERGE_LANES`] lanes would fold more than 8 partials each, one
/// dependent chain of loads per lane.
pub(crate) const WIDE_MERGE_PIECES: u32 = 64;

/// The block merge runs when some split task has more pieces than this:
/// the wide merge's 32 lanes would fold more than 16 partials each, a
/// chain as long as a short task's whole fold (`split_one_task`'s 2048
/// pieces took it 18 µs on an H200, BENCHMARKS.md, "Global reductions
/// merged by a block").
pub(crate) const BLOCK_MERGE_PIECES: u32 = 512;

/// The serial-fallback bound of a CTE launch with [`Split::Auto`]:
/// `configured`, raised to [`LOCAL_SERIAL_MAX`] when the launch is not
/// small and `local` (most warps' gathers are local).
pub(crate) fn auto_serial_max(
    configured: u32,
    total: u64,
    resident_warps: u64,
    local: bool,
) -> u32 {
    if local && total / resident_warps.max(1) >= SMALL_LAUNCH_PER_SLOT {
        configured.max(LOCAL_SERIAL_MAX)
    } else {
        configured
    }
}

/// What [`Split::Auto`] does with a CTE launch, from the longest task, the
/// total fine-task count and the number of warps the GPU keeps resident.
///
/// A launch that is not small ([`SMALL_LAUNCH_PER_SLOT`] or more fine
/// tasks per resident warp slot) with a task longer than [`PACK_ABOVE`]
/// packs its warps by work ([`Split::Budget`]`(`[`PACKED_WARP_BUDGET`]`)`):
/// each warp takes up to 32 consecutive tasks holding at most that many
/// fine tasks in all, and only longer tasks are split, so few tasks need
/// the merge launch (cutting every long task into short segments made tens
/// of thousands of split tasks, whose merge was a good part of the time).
///
/// Small launches are bound by latency and parallelism, not by work: 32
/// items per warp leave most of the GPU idle, and the merge launch of
/// split tasks is a good part of the time. When no task is longer than
/// [`SMALL_LAUNCH_WHOLE_MAX`], the warps are packed by the longest task's
/// next power of two (at least 64): many warps, nothing split, one launch.
/// Otherwise tasks are cut into segments of [`SMALL_LAUNCH_SEGMENT`], 32
/// per warp, folded serially.
pub(crate) fn auto_split(max_task: u64, total: u64, resident_warps: u64) -> Split {
    let per_slot = total / resident_warps.max(1);
    if per_slot < SMALL_LAUNCH_PER_SLOT {
        if max_task <= SMALL_LAUNCH_WHOLE_MAX {
            Split::Budget(max_task.next_power_of_two().max(64) as u32)
        } else {
            Split::Max(SMALL_LAUNCH_SEGMENT)
        }
    } else if max_task > PACK_ABOVE {
        Split::Budget(PACKED_WARP_BUDGET)
    } else {
        Split::Never
    }
}

/// The decomposition that runs a CTE launch's task list cut as `cut`
/// under the serial-fallback bound `serial_max`.
///
/// When the warps are not packed by work and no segment is longer than
/// the bound, every CTE warp takes the serial fallback (cte.cuh: a lane
/// folds its own item from `init`, exactly as the 1D decomposition does,
/// over the same items), so the thread decomposition over the list gives
/// the same results bit for bit. Its kernel is the smaller one: no
/// per-warp shared memory, fewer registers, and it compiles in less than
/// half the time, which is what a first small launch waits for
/// (`BENCHMARKS.md`, "First launch").
pub(crate) fn list_decomposition(
    decomposition: Decomposition,
    cut: Cut,
    serial_max: u32,
) -> Decomposition {
    if decomposition == Decomposition::Cte && cut.pack_budget.is_none() && cut.max_len <= serial_max
    {
        Decomposition::Thread
    } else {
        decomposition
    }
}

/// Task lists and automatic splits address items with u32 ids.
pub(crate) fn check_u32_items(n: usize) -> Result<()> {
    warpfit_runtime::error::to_u32("number of launch items", n).map(|_| ())
}

/// Rejects split bounds no launch can use, before any work is done.
pub(crate) fn check_split(split: Split) -> Result<()> {
    match split {
        Split::Max(0) => Err(Error::invalid("segment length bound must be at least 1")),
        Split::Budget(0) | Split::Queued(0) => {
            Err(Error::invalid("warp work budget must be at least 1"))
        }
        _ => Ok(()),
    }
}

/// Whether a launch over `n` tasks runs the size kernel first: CTE with a
/// split that depends on the tasks' sizes.
pub(crate) fn needs_task_sizes(decomposition: Decomposition, split: Split, n: usize) -> bool {
    decomposition == Decomposition::Cte && split != Split::Never && n > 0
}

/// How tasks are cut into a task list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    /// Longest segment.
    pub max_len: u32,
    /// CTE warps take consecutive segments up to this much work
    /// ([`pack_warps`]); `None`: 32 segments each.
    pub pack_budget: Option<u32>,
    /// Packed groups per dequeue when the warps take them from a device
    /// queue ([`Split::Queued`], [`packed_queue_chunk`]); `None`: warp `w`
    /// of the grid runs group `w`.
    pub queue_chunk: Option<u32>,
}

/// What a CTE launch over all tasks does, decided from the size kernel's
/// statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SplitDecision {
    /// What [`Split::Auto`] chose; `None` for a configured split.
    pub chosen: Option<Split>,
    /// The launch's serial-fallback bound.
    pub cte_serial_max: u32,
    /// The task list to build, or `None` to run every task whole.
    pub cut: Option<Cut>,
    /// [`Split::Auto`] found the launch small ([`auto_split`]): split tasks
    /// merge with the wide merge whatever their piece counts, since a small
    /// launch leaves most of the GPU idle and more lanes per task only
    /// shorten each task's chain of loads; it also makes the merge a small
    /// launch needs one known entry point (`likely_entries::likely_after_sizes`).
    pub small: bool,
}

impl SplitDecision {
    /// Every task whole, at the configured serial bound.
    pub(crate) fn whole(cte_serial_max: u32) -> Self {
        SplitDecision {
            chosen: None,
            cte_serial_max,
            cut: None,
            small: false,
        }
    }
}

/// Resolves `split` for a launch whose tasks measured `stats`, on a GPU
/// that keeps `resident_warps` warps resident.
pub(crate) fn choose_split(
    split: Split,
    stats: &TaskStats,
    resident_warps: u64,
    configured_serial_max: u32,
) -> Result<SplitDecision> {
    check_split(split)?;
    let (split, chosen, cte_serial_max, small) = match split {
        Split::Auto => {
            let local = 2 * stats.local_warps > stats.busy_warps;
            let serial = auto_serial_max(configured_serial_max, stats.total, resident_warps, local);
            let chosen = auto_split(stats.longest, stats.total, resident_warps);
            let small = stats.total / resident_warps.max(1) < SMALL_LAUNCH_PER_SLOT;
            (chosen, Some(chosen), serial, small)
        }
        s => (s, None, configured_serial_max, false),
    };
    let cut = match split {
        // A pure length bound that no task exceeds changes nothing.
        Split::Max(s) if stats.longest <= u64::from(s) => None,
        Split::Max(s) => Some(Cut {
            max_len: s,
            pack_budget: None,
            queue_chunk: None,
        }),
        Split::Budget(b) => Some(Cut {
            max_len: b,
            pack_budget: Some(b),
            queue_chunk: None,
        }),
        Split::Queued(b) => Some(Cut {
            max_len: b,
            pack_budget: Some(b),
            queue_chunk: Some(packed_queue_chunk(b)),
        }),
        Split::Never | Split::Auto => None,
    };
    Ok(SplitDecision {
        chosen,
        cte_serial_max,
        cut,
        small,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100_WARPS: u64 = 132 * 64;

    #[test]
    fn auto_split_follows_the_work_per_warp_slot() {
        // 132 SMs x 64 warps. RMAT scales 18, 20, 22, 24 (466 to 31k fine
        // tasks per slot): warps packed by a budget of 512.
        for (max, total) in [
            (15_937, 3_939_657),
            (39_476, 16_100_000),
            (100_000, 67_000_000),
            (238_816, 263_432_965),
        ] {
            assert_eq!(auto_split(max, total, H100_WARPS), Split::Budget(512));
        }
        // Rows no longer than 64: 32 per warp, none split (the grid, rgg).
        assert_eq!(auto_split(5, 84_000_000, H100_WARPS), Split::Never);
        assert_eq!(auto_split(64, 60_000_000, H100_WARPS), Split::Never);
        assert_eq!(auto_split(65, 60_000_000, H100_WARPS), Split::Budget(512));
        // Small launches: packed whole up to a longest task of 128
        // (bayer10: 94,926 fine tasks, longest 27; bcsstk16: 290k, longest
        // 81), else segments of 4 (mbeacxc: 49,920, longest 484).
        assert_eq!(auto_split(27, 94_926, H100_WARPS), Split::Budget(64));
        assert_eq!(auto_split(81, 290_378, H100_WARPS), Split::Budget(128));
        assert_eq!(auto_split(128, 290_378, H100_WARPS), Split::Budget(128));
        assert_eq!(auto_split(484, 49_920, H100_WARPS), Split::Max(4));
        assert_eq!(auto_split(0, 0, H100_WARPS), Split::Budget(64));
        // Local gathers raise the serial bound of large launches only.
        assert_eq!(auto_serial_max(8, 60_000_000, H100_WARPS, true), 64);
        assert_eq!(auto_serial_max(8, 60_000_000, H100_WARPS, false), 8);
        assert_eq!(auto_serial_max(100, 60_000_000, H100_WARPS, true), 100);
        assert_eq!(auto_serial_max(8, 290_378, H100_WARPS, true), 8);
    }

    #[test]
    fn wider_budgets_are_timed_only_for_warps_packed_by_the_large_launch_budget() {
        let packed = auto_split(238_816, 263_432_965, H100_WARPS);
        assert_eq!(budgets_to_time(Some(packed)), &WIDER_WARP_BUDGETS[..]);
        assert!(WIDER_WARP_BUDGETS.iter().all(|&b| b > PACKED_WARP_BUDGET));
        for other in [
            auto_split(5, 84_000_000, H100_WARPS),
            auto_split(27, 94_926, H100_WARPS),
            auto_split(484, 49_920, H100_WARPS),
        ] {
            assert!(budgets_to_time(Some(other)).is_empty(), "{other:?}");
        }
        // A launch configured by its caller keeps its configuration.
        assert!(budgets_to_time(None).is_empty());
    }

    fn stats(longest: u64, total: u64, local_warps: u64, busy_warps: u64) -> TaskStats {
        TaskStats {
            longest,
            total,
            local_warps,
            busy_warps,
        }
    }

    #[test]
    fn queued_launches_dequeue_about_8k_fine_tasks_at_a_time() {
        assert_eq!(packed_queue_chunk(512), 16);
        assert_eq!(packed_queue_chunk(2048), 4);
        assert_eq!(packed_queue_chunk(3000), 3);
        assert_eq!(packed_queue_chunk(1 << 20), 1);
        assert_eq!(packed_queue_chunk(0), PACKED_QUEUE_WORK);
        // Queued: packed as the same budget, dequeued 4 groups at a time.
        let stats = stats(40_000, 264_000_000, 10, 100);
        let d = choose_split(Split::Queued(2048), &stats, H100_WARPS, 8).unwrap();
        let packed = choose_split(Split::Budget(2048), &stats, H100_WARPS, 8).unwrap();
        assert_eq!(d.cut.and_then(|c| c.queue_chunk), Some(4));
        assert_eq!(
            d.cut.map(|c| (c.max_len, c.pack_budget)),
            packed.cut.map(|c| (c.max_len, c.pack_budget))
        );
        // Neither a budget nor the automatic split dequeues.
        assert_eq!(packed.cut.and_then(|c| c.queue_chunk), None);
        let d = choose_split(Split::Auto, &stats, H100_WARPS, 8).unwrap();
        assert_eq!(d.chosen, Some(Split::Budget(PACKED_WARP_BUDGET)));
        assert_eq!(d.cut.and_then(|c| c.queue_chunk), None);
        let e = check_split(Split::Queued(0)).unwrap_err();
        assert!(e
            .to_string()
            .contains("warp work budget must be at least 1"));
    }

    #[test]
    fn choose_split_resolves_auto_and_skips_needless_cuts() {
        // RMAT-like, scattered gathers: packed by 512, serial bound kept.
        let d = choose_split(
            Split::Auto,
            &stats(40_000, 16_000_000, 10, 100),
            H100_WARPS,
            8,
        )
        .unwrap();
        assert_eq!(d.chosen, Some(Split::Budget(512)));
        assert_eq!(d.cte_serial_max, 8);
        assert!(!d.small);
        assert_eq!(
            d.cut,
            Some(Cut {
                max_len: 512,
                pack_budget: Some(512),
                queue_chunk: None
            })
        );
        // RMAT 12: small, cut into serial segments of 4 (run as threads),
        // merged wide.
        let d = choose_split(Split::Auto, &stats(938, 53_552, 0, 100), H100_WARPS, 8).unwrap();
        assert_eq!(d.chosen, Some(Split::Max(SMALL_LAUNCH_SEGMENT)));
        assert!(d.small);
        let cut = d.cut.unwrap();
        assert_eq!(
            list_decomposition(Decomposition::Cte, cut, d.cte_serial_max),
            Decomposition::Thread
        );
        // Configured splits are never small.
        let d = choose_split(Split::Max(4), &stats(938, 53_552, 0, 100), H100_WARPS, 8).unwrap();
        assert!(!d.small);
        // Grid-like, local gathers: nothing cut, serial bound raised.
        let d = choose_split(Split::Auto, &stats(5, 84_000_000, 90, 100), H100_WARPS, 8).unwrap();
        assert_eq!(
            (d.chosen, d.cte_serial_max, d.cut),
            (Some(Split::Never), 64, None)
        );
        // A length bound no task exceeds builds no list; a budget always does.
        let d = choose_split(Split::Max(16), &stats(16, 1000, 0, 1), H100_WARPS, 8).unwrap();
        assert_eq!((d.chosen, d.cut), (None, None));
        let d = choose_split(Split::Max(16), &stats(17, 1000, 0, 1), H100_WARPS, 8).unwrap();
        assert_eq!(
            d.cut,
            Some(Cut {
                max_len: 16,
                pack_budget: None,
                queue_chunk: None
            })
        );
        let d = choose_split(Split::Budget(40), &stats(3, 1000, 0, 1), H100_WARPS, 0).unwrap();
        assert_eq!(
            (d.cte_serial_max, d.cut),
            (
                0,
                Some(Cut {
                    max_len: 40,
                    pack_budget: Some(40),
                    queue_chunk: None
                })
            )
        );
        let d = choose_split(Split::Never, &stats(9999, 1000, 0, 1), H100_WARPS, 8).unwrap();
        assert_eq!(d.cut, None);
        // Zero bounds are errors.
        let e = choose_split(Split::Max(0), &stats(1, 1, 0, 1), H100_WARPS, 8).unwrap_err();
        assert!(e
            .to_string()
            .contains("segment length bound must be at least 1"));
        let e = check_split(Split::Budget(0)).unwrap_err();
        assert!(e
            .to_string()
            .contains("warp work budget must be at least 1"));
    }

    #[test]
    fn only_cte_over_all_tasks_with_a_split_measures_task_sizes() {
        assert!(needs_task_sizes(Decomposition::Cte, Split::Auto, 10));
        assert!(needs_task_sizes(Decomposition::Cte, Split::Max(4), 10));
        assert!(!needs_task_sizes(Decomposition::Cte, Split::Never, 10));
        assert!(!needs_task_sizes(Decomposition::Cte, Split::Auto, 0));
        assert!(!needs_task_sizes(Decomposition::Thread, Split::Auto, 10));
    }
}

//! `auto` by a cost model: what the kernel's shape says before anything
//! is timed ([`decide`]), from statistics the device measures in
//! milliseconds ([`ShapeStats`]); the handle then times the one or two
//! candidates the model keeps inside real launches and runs the faster of
//! them and `org` (`auto_by_model` in `device_plan`).
//!
//! The rules, in order:
//!
//! 1. A gathered array that fits the cache a partition may fill
//!    (`safety × cache`) has nothing to gain: `org`, no plan; checked
//!    from the sizes first ([`fits`]), before the plan cache's key or any
//!    sample.
//! 2. Gathers already local in the kernel's numbering (at least
//!    [`LOCAL_SHARING`] of a warp's gathers fall on a line another lane of
//!    the same step reads: a grid, a mesh or a geometric graph numbered
//!    in space) keep the cache busy with reuse: `org`.
//! 3. Otherwise the candidates are the column blocks of the gathered array
//!    (`cf`, carried launches; every fine task read once per launch, each
//!    launch's share of the gathered array in cache) and, for a square
//!    kernel that can be remapped, the breadth-first level order (`org_r`
//!    over the renumbered layout), kept only where it brings gathers
//!    together: its sharing at least [`LEVELS_GAIN`] above the kernel's
//!    own numbering's. Where the level order, timed first, made the
//!    gathers local and ran [`LEVELS_ENOUGH`] times `org`'s speed, the
//!    column blocks are not built ([`columns_after_levels`]).

/// The share of a warp step's gathers that fall on a line another lane
/// reads at which the kernel's numbering counts as local.
pub(crate) const LOCAL_SHARING: f64 = 0.5;

/// The longest row past which the level order is not made: a hub. A graph
/// with hubs is a small world whose levels widen in a few rounds (the
/// order is given up there anyway), and the level order's rounds walk each
/// frontier row on a group of 8 lanes, so one hub of RMAT 25 cost 600 ms of
/// rounds (walked on one thread then) before the order was given up.
/// Meshes and geometric graphs, where the order gains, have rows of tens
/// of entries.
pub(crate) const LEVELS_MAX_ROW: u64 = 4096;

/// Whether a kernel whose longest task has `longest` fine tasks may have
/// its level order made (no hub: [`LEVELS_MAX_ROW`]).
pub(crate) fn levels_without_hubs(longest: Option<u64>) -> bool {
    longest.map_or(true, |l| l <= LEVELS_MAX_ROW)
}

/// How much the level order must raise the sharing to be timed.
pub(crate) const LEVELS_GAIN: f64 = 0.2;

/// Launches within which a candidate must pay for its preparation where
/// the caller gave no count ([`ThrottleOptions::expected_launches`]).
///
/// [`ThrottleOptions::expected_launches`]: warpfit_runtime::schedule::ThrottleOptions::expected_launches
pub(crate) const BREAK_EVEN_LAUNCHES: f64 = 20.0;

/// The launches a preparation must pay back within: the caller's expected
/// count, else [`BREAK_EVEN_LAUNCHES`].
pub(crate) fn break_even_launches(expected: Option<u64>) -> f64 {
    expected.map_or(BREAK_EVEN_LAUNCHES, |n| n as f64)
}

/// The largest gain per launch a candidate is assumed to reach when its
/// preparation is weighed before it is timed: twice `org`'s speed.
pub(crate) const ASSUMED_BEST_GAIN: f64 = 2.0;

/// Whether a candidate predicted to take `prep_ms` of preparation (its
/// launches' task lists cut as `org`'s were: long tasks split) can pay for
/// it within `launches` launches of `org_ms` at the best gain assumed
/// ([`break_even_launches`]). A gain of a millisecond a launch does not pay
/// for a preparation of hundreds in any short run.
pub(crate) fn pays_back(prep_ms: f64, org_ms: f64, launches: f64) -> bool {
    prep_ms <= launches * org_ms * (1.0 - 1.0 / ASSUMED_BEST_GAIN)
}

/// What laying column blocks out costs per fine task (ms), before any
/// launch over them is prepared: the counts, the placement and the gathers
/// of the fine arrays. Measured on an H200: 36 ps a fine task on uniform
/// graphs of 2^24 and 2^25 rows (9.6 and 19.5 ms), 106 on RMAT 24 (28
/// ms); counted at 40. Without it a faster preparation of `org`'s launch alone decided
/// whether RMAT 24's blocks were built (BENCHMARKS.md, "Task sizes folded
/// per block").
pub(crate) const COLUMN_BUILD_MS_PER_FINE_TASK: f64 = 4.0e-8;

/// [`COLUMN_BUILD_MS_PER_FINE_TASK`] where `org`'s size kernel found a hub
/// row (more than [`LEVELS_MAX_ROW`] entries): a hub's fine tasks are
/// counted and placed by one group of lanes, in steps of its width.
/// Measured on an H200: 106 ps a fine task on RMAT 24, 97 on RMAT 25 (51.5
/// ms); counted at 110. At 40, RMAT 25's five blocks were predicted at 67
/// ms against the 71 that 20 launches allow, and took 72 (layout 51.5,
/// launches 21).
pub(crate) const COLUMN_BUILD_MS_PER_FINE_TASK_HUBS: f64 = 1.1e-7;

/// What `k` column blocks over `fine_tasks` fine tasks are predicted to
/// cost before their first timed run (ms): their layout (at the rate for
/// a kernel with hub rows where `hubs`), and `k` launches prepared as
/// `org`'s was (`org_prep` ms each).
pub(crate) fn column_blocks_prep(k: usize, org_prep: f64, fine_tasks: usize, hubs: bool) -> f64 {
    let per_fine_task = match hubs {
        true => COLUMN_BUILD_MS_PER_FINE_TASK_HUBS,
        false => COLUMN_BUILD_MS_PER_FINE_TASK,
    };
    k as f64 * org_prep + fine_tasks as f64 * per_fine_task
}

/// How much faster than the best so far a candidate's timed run must be
/// for the candidate to replace it. One timed run of each differs by a
/// few percent from the runs after: on RMAT 25 five column blocks timed
/// 6.94 ms against `org`'s 7.14 and ran 7.55 a launch after, where `org`
/// runs 7.14. The candidates that gain gain far more (uniform 2^24's
/// blocks 2.1 ms against 3.7, rgg 2^24's level order 1.06 against 3.65).
pub(crate) const KEEP_MARGIN: f64 = 0.9;

/// Whether a candidate timed at `ms` replaces the best so far, timed at
/// `best_ms` ([`KEEP_MARGIN`]).
pub(crate) fn replaces(ms: f64, best_ms: f64) -> bool {
    ms < best_ms * KEEP_MARGIN
}

/// How much faster than `org` a local level order must run for the column
/// blocks not to be built after it.
pub(crate) const LEVELS_ENOUGH: f64 = 1.5;

/// Whether the column blocks are still built and timed once the level
/// order has been timed at `levels_ms` against `org_ms`, its sampled
/// sharing `levels_sharing`. Not where the order made the gathers local
/// (at least [`LOCAL_SHARING`]) and ran at least [`LEVELS_ENOUGH`] times
/// `org`'s speed: a warp's gathers in the level order come from three
/// levels that fit the cache a partition may fill, which is what the
/// column blocks would buy, at the price of a pass over the tasks per
/// block. A geometric graph or a mesh in random order then spends nothing
/// on blocks it would not run (rgg 2^24: the level order 3.9× `org`, the
/// column blocks 2.4×, H100; the Poisson mesh 1.97× and 1.21×, H200).
pub(crate) fn columns_after_levels(levels_sharing: f64, levels_ms: f64, org_ms: f64) -> bool {
    !(levels_sharing >= LOCAL_SHARING && levels_ms * LEVELS_ENOUGH <= org_ms)
}

/// Warps sampled for the sharing measure.
pub(crate) const SAMPLED_WARPS: usize = 4096;

/// What the model sees of a kernel's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ShapeStats {
    /// Gathered elements and their size in bytes.
    pub n_gathered: usize,
    pub gathered_elem_bytes: usize,
    /// Bytes a partition's share of the gathered array may fill
    /// (`safety × cache`).
    pub budget_bytes: u64,
    /// As many tasks as gathered elements, and a remappable kernel.
    pub levels_possible: bool,
    /// Of the sampled warp steps' gathers, the share that fell on a line
    /// another lane of the step read (`1 − lines / gathers`).
    pub sharing: f64,
}

/// The model's first decision.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// Run `org`; why.
    Org(String),
    /// Time these (and `org`); `levels_if_gain`: the level order is a
    /// candidate once its sharing is measured ([`keep_levels`]).
    Time {
        columns: Option<usize>,
        levels_if_gain: bool,
        why: String,
    },
}

/// The column blocks of `n_gathered` elements of `elem` bytes in
/// partitions of `budget` bytes: `k ≥ 2` blocks, or `None` where one
/// suffices.
pub(crate) fn column_block_count(n_gathered: usize, elem: usize, budget: u64) -> Option<usize> {
    let per_block = (budget / elem.max(1) as u64).max(1);
    let k = (n_gathered as u64).div_ceil(per_block);
    (k >= 2).then_some(k as usize)
}

/// Rule 1 alone, from the sizes (nothing measured): why `org` runs where
/// `n_gathered` elements of `elem` bytes fit `budget` bytes, or `None`.
/// The handle asks it before anything touches the device, so that a
/// kernel that needs no throttling pays for no decision.
pub(crate) fn fits(n_gathered: usize, elem: usize, budget: u64) -> Option<String> {
    let bytes = (n_gathered as u64).saturating_mul(elem as u64);
    (bytes <= budget).then(|| {
        format!(
            "the gathered array ({}) fits the cache a partition may fill ({})",
            mib(bytes),
            mib(budget)
        )
    })
}

/// The first decision from the shape's statistics (rules 1–3 of the
/// module docs).
pub(crate) fn decide(s: &ShapeStats, max_blocks: usize) -> Decision {
    let bytes = (s.n_gathered as u64).saturating_mul(s.gathered_elem_bytes as u64);
    if let Some(why) = fits(s.n_gathered, s.gathered_elem_bytes, s.budget_bytes) {
        return Decision::Org(why);
    }
    if s.sharing >= LOCAL_SHARING {
        return Decision::Org(format!(
            "gathers are already local: {:.0}% of a warp's share a cache line",
            100.0 * s.sharing
        ));
    }
    let columns = column_block_count(s.n_gathered, s.gathered_elem_bytes, s.budget_bytes)
        .filter(|&k| k <= max_blocks);
    if columns.is_none() && !s.levels_possible {
        return Decision::Org(format!(
            "the gathered array ({}) needs more than {max_blocks} column blocks and the kernel cannot be renumbered",
            mib(bytes)
        ));
    }
    Decision::Time {
        columns,
        levels_if_gain: s.levels_possible,
        why: format!(
            "the gathered array ({}) exceeds the cache a partition may fill ({}) and {:.0}% of a warp's gathers share a line",
            mib(bytes),
            mib(s.budget_bytes),
            100.0 * s.sharing
        ),
    }
}

/// The widest level, in rows, at which the level order is given up: a
/// warp's gathers in the level order fall in its row's level and the two
/// beside it, and three levels wider than this would not fit `budget`
/// bytes of `elem`-byte elements. An expander (a uniform random graph)
/// reaches such a level in a few rounds and never gains from the order;
/// a mesh or a geometric graph keeps its levels narrow.
pub(crate) fn level_width_limit(budget: u64, elem: usize) -> u64 {
    (budget / (3 * elem.max(1) as u64)).max(1)
}

/// Whether the level order is timed: its sharing `levels` at least
/// [`LEVELS_GAIN`] above the kernel's numbering's `given`.
pub(crate) fn keep_levels(given: f64, levels: f64) -> bool {
    levels >= given + LEVELS_GAIN
}

/// The sharing of `gathers` gathers over `lines` distinct lines.
pub(crate) fn sharing(gathers: u64, lines: u64) -> f64 {
    if gathers == 0 {
        1.0
    } else {
        1.0 - lines.min(gathers) as f64 / gathers as f64
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(n_gathered: usize, sharing: f64, levels_possible: bool) -> ShapeStats {
        ShapeStats {
            n_gathered,
            gathered_elem_bytes: 4,
            budget_bytes: 25 << 20,
            levels_possible,
            sharing,
        }
    }

    #[test]
    fn a_gathered_array_that_fits_runs_org() {
        // RMAT 22's x: 16 MiB against half of a 50 MiB L2.
        let d = decide(&stats(1 << 22, 0.0, true), 32);
        let Decision::Org(why) = d else {
            panic!("{d:?}")
        };
        assert!(
            why.contains("16.0 MiB") && why.contains("25.0 MiB"),
            "{why}"
        );
        // Exactly the budget still fits.
        assert!(matches!(
            decide(&stats(25 << 18, 0.0, false), 32),
            Decision::Org(_)
        ));
        // The same rule from the sizes alone.
        assert_eq!(fits(1 << 22, 4, 25 << 20), Some(why));
        assert!(fits(25 << 18, 4, 25 << 20).is_some());
        assert_eq!(fits((25 << 18) + 1, 4, 25 << 20), None);
        assert_eq!(fits(usize::MAX, 8, u64::MAX - 1), None);
    }

    #[test]
    fn local_gathers_run_org_and_scattered_ones_time_the_candidates() {
        // The 4096² grid: 64 MiB of x, almost every gather shares a line.
        let d = decide(&stats(1 << 24, 0.9, true), 32);
        assert!(matches!(&d, Decision::Org(w) if w.contains("90%")), "{d:?}");
        // Uniform 2^25: 128 MiB of x in 25 MiB blocks, nothing shared.
        let d = decide(&stats(1 << 25, 0.01, true), 32);
        assert_eq!(
            d,
            Decision::Time {
                columns: Some(6),
                levels_if_gain: true,
                why: d.clone().why().to_string()
            }
        );
        // A rectangular or unremappable kernel: column blocks only.
        let d = decide(&stats(1 << 25, 0.01, false), 32);
        assert!(matches!(
            d,
            Decision::Time {
                columns: Some(6),
                levels_if_gain: false,
                ..
            }
        ));
    }

    #[test]
    fn too_many_blocks_leave_the_level_order_or_org() {
        let d = decide(&stats(1 << 30, 0.0, true), 32);
        assert!(matches!(
            d,
            Decision::Time {
                columns: None,
                levels_if_gain: true,
                ..
            }
        ));
        let d = decide(&stats(1 << 30, 0.0, false), 32);
        assert!(
            matches!(&d, Decision::Org(w) if w.contains("more than 32")),
            "{d:?}"
        );
    }

    #[test]
    fn block_counts_are_the_host_column_partitioners() {
        use warpfit_runtime::partition::column_block_count as host;
        for n in [1usize, 100, 4096, 1 << 20, (1 << 25) + 3] {
            for (cache, safety) in [(16u64 << 10, 0.5), (50 << 20, 0.5), (60 << 20, 0.75)] {
                for elem in [4usize, 8] {
                    let budget = (cache as f64 * safety) as u64;
                    let capacity = ((cache as f64 * safety) / elem as f64).floor() as u32;
                    let want = host(n, capacity).unwrap();
                    let got = column_block_count(n, elem, budget).unwrap_or(1);
                    assert_eq!(got, want, "{n} {cache} {safety} {elem}");
                }
            }
        }
    }

    #[test]
    fn a_preparation_that_twenty_launches_cannot_pay_is_not_made() {
        let twenty = break_even_launches(None);
        assert_eq!(twenty, BREAK_EVEN_LAUNCHES);
        // Uniform 2^24 on an H200: org 3.97 ms, org prepared in 2.3 ms, three
        // blocks predicted at 6.9 ms.
        assert!(pays_back(3.0 * 2.3, 3.97, twenty));
        // RMAT 24: org 2.70 ms, prepared in 343 ms (hub rows cut on the host).
        assert!(!pays_back(3.0 * 343.0, 2.70, twenty));
        assert!(pays_back(10.0, 1.0, twenty) && !pays_back(10.1, 1.0, twenty));
        // The caller's count replaces the twenty: three launches cannot pay
        // for the uniform blocks, a thousand pay for RMAT's cuts.
        assert!(!pays_back(3.0 * 2.3, 3.97, break_even_launches(Some(3))));
        assert!(pays_back(
            3.0 * 343.0,
            2.70,
            break_even_launches(Some(1000))
        ));
        // With the size kernel folded per block (H200): uniform 2^24's three
        // blocks over 268M fine tasks, org 3.97 ms prepared in 3.4, pay
        // back in 20 launches; RMAT 24's over 263M, org 2.70 ms prepared in
        // 7.5 (its blocks built in 28 ms), do not.
        assert!(pays_back(
            column_blocks_prep(3, 3.4, 268_435_456, false),
            3.97,
            twenty
        ));
        assert!(!pays_back(
            column_blocks_prep(3, 7.5, 263_427_706, true),
            2.70,
            twenty
        ));
        // Uniform 2^25's five over 537M, org 11.1 ms prepared in 3.5: pay.
        assert!(pays_back(
            column_blocks_prep(5, 3.5, 536_870_912, false),
            11.1,
            twenty
        ));
        // RMAT 25's five over 529M with hub rows, org 7.14 ms prepared in
        // 9.3: at the hubs' rate they do not pay back in 20 launches (they
        // took 72 ms), at the uniform graphs' they would have been built.
        assert!(!pays_back(
            column_blocks_prep(5, 9.3, 529_000_000, true),
            7.14,
            twenty
        ));
        assert!(pays_back(
            column_blocks_prep(5, 9.3, 529_000_000, false),
            7.14,
            twenty
        ));
        assert_eq!(column_blocks_prep(2, 1.5, 0, true), 3.0);
    }

    #[test]
    fn a_candidate_replaces_the_best_only_by_a_margin() {
        // RMAT 25's blocks: 2.8% faster once, slower after; kept: org.
        assert!(!replaces(6.943, 7.141));
        // Uniform 2^24's blocks and rgg 2^24's level order: kept.
        assert!(replaces(2.115, 3.707) && replaces(1.063, 3.653));
        assert!(replaces(0.89, 1.0) && !replaces(0.9, 1.0));
    }

    #[test]
    fn column_blocks_are_skipped_only_after_a_local_and_fast_level_order() {
        // rgg 2^24 and the Poisson mesh in random order on an H200: org
        // 3.653 and 2.579 ms, the level order 1.063 and 1.311 ms.
        assert!(!columns_after_levels(0.74, 1.063, 3.653));
        assert!(!columns_after_levels(0.6, 1.311, 2.579));
        // Local but not fast enough, or fast but not local: blocks timed.
        assert!(columns_after_levels(0.8, 2.0, 2.579));
        assert!(columns_after_levels(0.3, 1.063, 3.653));
        assert!(!columns_after_levels(LOCAL_SHARING, 1.0, LEVELS_ENOUGH));
    }

    #[test]
    fn the_level_order_is_given_up_where_three_levels_overflow_the_budget() {
        // An H100's 25 MiB budget of f32: levels of up to 2.2M rows.
        let limit = level_width_limit(25 << 20, 4);
        assert_eq!(limit, (25 << 20) / 12);
        // Uniform 2^25 (16 a row): its fifth level holds about 2^24 rows.
        assert!(1 << 24 > limit);
        // Poisson 3D side 256: its widest level (a diagonal plane) about
        // 50K rows; rgg 2^24 a few tens of thousands.
        assert!(50_000 < limit);
        assert_eq!(level_width_limit(0, 8), 1);
    }

    #[test]
    fn block_counts_and_sharing() {
        assert_eq!(column_block_count(100, 4, 400), None);
        assert_eq!(column_block_count(101, 4, 400), Some(2));
        assert_eq!(column_block_count(1 << 25, 4, 25 << 20), Some(6));
        assert_eq!(column_block_count(10, 8, 0), Some(10));
        assert_eq!(sharing(0, 0), 1.0);
        assert_eq!(sharing(100, 100), 0.0);
        assert_eq!(sharing(100, 25), 0.75);
        assert!(keep_levels(0.1, 0.31) && !keep_levels(0.1, 0.29));
        assert!(levels_without_hubs(None) && levels_without_hubs(Some(LEVELS_MAX_ROW)));
        assert!(!levels_without_hubs(Some(LEVELS_MAX_ROW + 1)));
    }

    impl Decision {
        fn why(&self) -> &str {
            match self {
                Decision::Org(w) | Decision::Time { why: w, .. } => w,
            }
        }
    }
}

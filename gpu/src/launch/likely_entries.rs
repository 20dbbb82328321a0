//! The entry points a launch will most likely compile, guessed before the
//! kernel cache is asked for them: a launch's first
//! (`CudaDevice::open_expecting`, [`first_launch_entries`]) and what
//! follows the size kernel ([`likely_after_sizes`], [`likely_after_row_sizes`]), compiled
//! on host threads beside the work before them. A wrong guess costs host
//! time, never a wrong kernel: each compile is keyed by the kernel's source
//! and entry point. Host code only.

use crate::abi::{
    MERGE_COLUMNS_ENTRY, MERGE_ENTRY, MERGE_WIDE_ENTRY, PAIR_ALL_ENTRY, RECHECK_ALL_ENTRY,
    SIZES_ENTRY, VALIDATE_ALL_ENTRY,
};
use crate::config::{Decomposition, LaunchConfig, Split};
use crate::launch::split_policy::{needs_task_sizes, SMALL_LAUNCH_PER_SLOT};
use crate::launch::validation::VALIDATE_MIN_COLUMNS;
use crate::spec::KernelSpec;

/// The average task length [`likely_after_sizes`] assumes before the
/// size kernel has measured the tasks (sparse matrices' rows: 5 to 30).
const ASSUMED_TASK_LEN: u64 = 16;

/// The entry points a CTE launch over `n` tasks will most likely need
/// after the size kernel, most likely first: compiled beside it when the
/// kernel cache is empty, so that the first launch waits for about the
/// longest compile rather than the sum.
///
/// A launch of few tasks is most likely small (`split_policy::auto_split`:
/// under [`SMALL_LAUNCH_PER_SLOT`] fine tasks per resident warp at
/// [`ASSUMED_TASK_LEN`] per task) and, with a task longer than
/// `SMALL_LAUNCH_WHOLE_MAX`, cut into serial segments that
/// `list_decomposition` runs as threads, then merged by the wide merge
/// (`SplitDecision::small`). Others most likely
/// run the CTE list packed by work and the merge, or CTE over all tasks.
/// A wrong guess costs one compile after the size kernel's, not a wrong
/// result. Fewer compiles in flight matter as much as the right ones: they
/// share the host's cores, and a process waits for those it started
/// before it exits.
pub(crate) fn likely_after_sizes(n: u64, resident_warps: u64) -> &'static [&'static str] {
    if n.saturating_mul(ASSUMED_TASK_LEN) < SMALL_LAUNCH_PER_SLOT * resident_warps {
        &["wf_thread_list", MERGE_WIDE_ENTRY]
    } else {
        &["wf_cte_list", MERGE_ENTRY, MERGE_WIDE_ENTRY, "wf_cte_all"]
    }
}

/// What a 2-D launch most likely compiles after its rows' size kernel:
/// the column list and its merge, or the launch over all tasks.
const LIKELY_AFTER_ROW_SIZES: &[&str] =
    &["wf_thread_columns", MERGE_COLUMNS_ENTRY, "wf_thread_all"];

/// What a 2-D launch that is validated first (`launch/validation.rs`)
/// most likely compiles after its rows' size kernel: the validation over
/// all rows and the two folds behind its gate; then the column list and
/// its merge, which run checked where hub rows were cut.
const VALIDATED_AFTER_ROW_SIZES: &[&str] = &[
    VALIDATE_ALL_ENTRY,
    PAIR_ALL_ENTRY,
    RECHECK_ALL_ENTRY,
    "wf_thread_columns",
    MERGE_COLUMNS_ENTRY,
];

/// What a 2-D launch of `spec` over `columns` columns (`None`: not known
/// yet, as when the device is opened) most likely compiles after its rows'
/// size kernel: [`VALIDATED_AFTER_ROW_SIZES`] where the macro found its
/// loads covered by their end columns (`checks_at_end_columns`) and the
/// columns are enough to validate, else [`LIKELY_AFTER_ROW_SIZES`]. A wrong
/// guess costs a compile on a host thread, never a wrong kernel.
pub(crate) fn likely_after_row_sizes(
    spec: &KernelSpec,
    columns: Option<u64>,
) -> &'static [&'static str] {
    let validated =
        spec.checks_at_end_columns && columns.map_or(true, |k| k >= VALIDATE_MIN_COLUMNS);
    if validated {
        VALIDATED_AFTER_ROW_SIZES
    } else {
        LIKELY_AFTER_ROW_SIZES
    }
}

/// The entry points the first launch of `spec` over tasks `0..n` with
/// `config` will most likely compile, in the order it asks for them: the
/// size kernel and what most likely follows it ([`likely_after_sizes`])
/// for CTE with a size-dependent split, else the one all-tasks entry point
/// of the configured decomposition; for a 2-D kernel, the size kernel over
/// its rows and what follows it ([`likely_after_row_sizes`]).
pub(crate) fn first_launch_entries(
    spec: &KernelSpec,
    config: &LaunchConfig,
    n: usize,
    resident_warps: u64,
) -> Vec<&'static str> {
    let config = spec.launch_config(config);
    let one_per_thread = matches!(
        config.decomposition,
        Decomposition::Cte | Decomposition::Thread
    );
    if spec.columns.is_some() && one_per_thread && config.split != Split::Never && n > 0 {
        // A 2-D kernel's rows, measured and most likely cut (several columns
        // run one flattened task per thread: `launch/columns.rs`).
        let mut eps = vec![SIZES_ENTRY];
        eps.extend_from_slice(likely_after_row_sizes(spec, None));
        eps
    } else if needs_task_sizes(config.decomposition, config.split, n) {
        let mut eps = vec![SIZES_ENTRY];
        eps.extend_from_slice(likely_after_sizes(n as u64, resident_warps));
        eps
    } else {
        crate::abi::entry_point(config.decomposition, crate::abi::TaskSource::All)
            .map(|ep| vec![ep])
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi;

    const H100_WARPS: u64 = 132 * 64;

    #[test]
    fn a_validated_2d_kernels_first_launch_compiles_its_validation_ahead() {
        let one_d = crate::spec::X_TO_Y;
        let two_d = KernelSpec {
            columns: Some(0),
            ..one_d
        };
        let validated = KernelSpec {
            checks_at_end_columns: true,
            ..two_d
        };
        let config = crate::config::LaunchConfig::default();
        let first = |spec: &KernelSpec| first_launch_entries(spec, &config, 1 << 20, H100_WARPS);
        // The size kernel over the rows, then what follows it.
        let checked = first(&two_d);
        assert_eq!(checked[0], abi::SIZES_ENTRY);
        assert_eq!(&checked[1..], LIKELY_AFTER_ROW_SIZES);
        let ahead = first(&validated);
        assert_eq!(ahead[0], abi::SIZES_ENTRY);
        assert_eq!(&ahead[1..], VALIDATED_AFTER_ROW_SIZES);
        for ep in [VALIDATE_ALL_ENTRY, PAIR_ALL_ENTRY, RECHECK_ALL_ENTRY] {
            assert!(ahead.contains(&ep) && !checked.contains(&ep), "{ep}");
            assert!(abi::ENTRY_POINTS.contains(&ep), "{ep}");
        }
        // Once the column count is known: validated from the threshold up.
        let k = VALIDATE_MIN_COLUMNS;
        assert_eq!(
            likely_after_row_sizes(&validated, Some(k)),
            VALIDATED_AFTER_ROW_SIZES
        );
        assert_eq!(
            likely_after_row_sizes(&validated, Some(k - 1)),
            LIKELY_AFTER_ROW_SIZES
        );
        assert_eq!(
            likely_after_row_sizes(&two_d, Some(k)),
            LIKELY_AFTER_ROW_SIZES
        );
    }

    #[test]
    fn what_follows_the_size_kernel_depends_on_the_task_count() {
        // RMAT 12 (4096 rows) is small on an H100; RMAT 18 is not.
        assert_eq!(likely_after_sizes(4096, H100_WARPS)[0], "wf_thread_list");
        assert_eq!(likely_after_sizes(1 << 18, H100_WARPS)[0], "wf_cte_list");
        assert_eq!(likely_after_sizes(u64::MAX, H100_WARPS)[0], "wf_cte_list");
        // Every guess is an entry point of the device library.
        for n in [0, 4096, 1 << 18] {
            for ep in likely_after_sizes(n, H100_WARPS) {
                assert!(abi::ENTRY_POINTS.contains(ep), "{ep}");
            }
        }
    }
}

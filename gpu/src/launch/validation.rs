//! 2-D launches checked by a validation launch first.
//!
//! A 2-D kernel of many columns folds each (row, column) on its own thread,
//! and every gather of every column is checked: a compare and a fault flag
//! per load, and the refold that records a fault, whose registers the whole
//! loop pays for. Where the macro found that the map's loads are either the
//! same for every column or at `base + j`
//! ([`KernelSpec::checks_at_end_columns`]), one launch runs the map at
//! every fine task of every row at the row's first and last column, which
//! proves every column's loads in range, and the fold then runs with its
//! loads unchecked (`ValidateEnds`, `ThreadValidated` in thread.cuh).
//!
//! The host does not wait for the validation: both folds are enqueued
//! behind a gate on the validation's own fault record
//! ([`Gate`]), the unchecked one to run where it found nothing, the checked
//! one (which records the fault as the CPU twin reports it) where it found
//! a fault. The shut one returns at once. So a launch with a bad index
//! fails with the same error as before, and a good one costs one more pass
//! over the matrix at two columns and two near-empty launches: worth it
//! from [`VALIDATE_MIN_COLUMNS`] columns.

use crate::abi::{
    Gate, VALIDATED_ALL_ENTRY, VALIDATED_COLUMNS_ENTRY, VALIDATE_ALL_ENTRY, VALIDATE_COLUMNS_ENTRY,
};
use crate::config::Decomposition;
use crate::launch::launch_steps::{grid, LaunchPlan, Step};
use crate::spec::KernelSpec;
use warpfit_runtime::{Error, Result};

/// The fewest columns a launch validates first: the validation reads the
/// matrix once and gathers two of the `k` columns, about `1/k` of the fold's
/// work plus two launches, against the checks' share of every column's.
pub(crate) const VALIDATE_MIN_COLUMNS: u64 = 16;

/// A step's part in a validated launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Validation {
    /// Not part of one.
    #[default]
    None,
    /// The validation itself, over the rows or pieces of a launch of
    /// `columns` columns: its fault record is the gate of the steps after.
    Validate { columns: u64 },
    /// A fold behind the gate.
    Gated(Gate),
}

/// Whether a launch of `spec` with `decomposition` over `columns` columns
/// is validated first.
pub(crate) fn applies(spec: &KernelSpec, decomposition: Decomposition, columns: u64) -> bool {
    spec.checks_at_end_columns
        && decomposition == Decomposition::Thread
        && columns >= VALIDATE_MIN_COLUMNS
}

/// `plan` with its fold validated first: the validation over the fold's
/// rows or pieces at two columns each, the unchecked fold and the checked
/// one behind the gate, then the rest (a column list's merge). A plan whose
/// first step is not a 2-D fold of one thread per (row or piece, column),
/// or an empty one, is returned as it is.
pub(crate) fn validated(plan: LaunchPlan, columns: u64) -> Result<LaunchPlan> {
    let Some((first, rest)) = plan.steps.split_first() else {
        return Ok(plan);
    };
    let (validate, unchecked) = match first.entry {
        "wf_thread_all" => (VALIDATE_ALL_ENTRY, VALIDATED_ALL_ENTRY),
        "wf_thread_columns" => (VALIDATE_COLUMNS_ENTRY, VALIDATED_COLUMNS_ENTRY),
        _ => return Ok(plan),
    };
    if columns == 0 || first.items % columns != 0 {
        return Err(Error::invalid(format!(
            "a 2-D launch of {} items is not whole rows of {columns} columns",
            first.items
        )));
    }
    let ends = (first.items / columns).checked_mul(2).ok_or_else(|| {
        Error::invalid("a 2-D launch's rows at two columns are more items than a launch can number")
    })?;
    let mut steps = vec![
        Step {
            entry: validate,
            blocks: grid(ends, 1)?,
            items: ends,
            dependent: false,
            validation: Validation::Validate { columns },
        },
        Step {
            entry: unchecked,
            validation: Validation::Gated(Gate::IfValid),
            ..*first
        },
        Step {
            validation: Validation::Gated(Gate::IfInvalid),
            ..*first
        },
    ];
    steps.extend_from_slice(rest);
    Ok(LaunchPlan { steps, ..plan })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use crate::launch::launch_steps::{plan_launches, Items};

    const SM90: Arch = Arch::new(9, 0);

    fn entries(plan: &LaunchPlan) -> Vec<(&'static str, u64, Validation)> {
        plan.steps
            .iter()
            .map(|s| (s.entry, s.items, s.validation))
            .collect()
    }

    #[test]
    fn a_launch_over_all_rows_validates_each_row_at_two_columns() {
        let plan = plan_launches(Decomposition::Thread, Items::All(1000 * 64), SM90).unwrap();
        let v = validated(plan, 64).unwrap();
        assert_eq!(
            entries(&v),
            [
                (
                    VALIDATE_ALL_ENTRY,
                    2000,
                    Validation::Validate { columns: 64 }
                ),
                (
                    VALIDATED_ALL_ENTRY,
                    64_000,
                    Validation::Gated(Gate::IfValid)
                ),
                ("wf_thread_all", 64_000, Validation::Gated(Gate::IfInvalid)),
            ]
        );
        assert_eq!(v.steps[0].blocks, 8);
        assert_eq!(v.steps[1].blocks, v.steps[2].blocks);
    }

    #[test]
    fn a_column_list_validates_its_pieces_and_keeps_its_merge_last() {
        let items = Items::Columns {
            segments: 300,
            columns: 150,
            split_tasks: 20,
        };
        let plan = plan_launches(Decomposition::Thread, items, SM90).unwrap();
        let merge = plan.steps[1];
        let v = validated(plan, 150).unwrap();
        assert_eq!(
            entries(&v)[..3],
            [
                (
                    VALIDATE_COLUMNS_ENTRY,
                    600,
                    Validation::Validate { columns: 150 }
                ),
                (
                    VALIDATED_COLUMNS_ENTRY,
                    45_000,
                    Validation::Gated(Gate::IfValid)
                ),
                (
                    "wf_thread_columns",
                    45_000,
                    Validation::Gated(Gate::IfInvalid)
                ),
            ]
        );
        assert_eq!(v.steps[3], merge);
        assert_eq!(v.steps.len(), 4);
    }

    #[test]
    fn other_plans_are_left_as_they_are() {
        for (d, items) in [
            (Decomposition::Cte, Items::All(640)),
            (Decomposition::SubWarp(4), Items::All(640)),
            (Decomposition::Thread, Items::All(0)),
        ] {
            let plan = plan_launches(d, items, SM90).unwrap();
            assert_eq!(validated(plan.clone(), 64).unwrap(), plan);
        }
        let plan = plan_launches(Decomposition::Thread, Items::All(100), SM90).unwrap();
        let e = validated(plan, 64).unwrap_err();
        assert!(e.to_string().contains("not whole rows"), "{e}");
    }
}

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
//! loads unchecked, two columns a thread (`ValidateEnds`,
//! `ThreadPairValidated` in thread.cuh): a row's bounds, range and loads
//! at the fine-task index read once for two columns.
//!
//! The host does not wait for the validation: both folds are enqueued
//! behind a gate on the validation's own fault record ([`Gate`]), the
//! unchecked one to run where it found nothing, the checked one (which
//! records the fault as the CPU twin reports it) where it found a fault.
//! The shut one returns at once; the checked one runs over a strided grid
//! of a wave of blocks, so that shut it costs a wave of empty blocks rather
//! than a block per 256 (row, column) items. So a launch with a bad index
//! fails with the same error as before, and a good one costs a pass over
//! the matrix (the gathers' indices checked at two columns, and where the
//! map only uses the gathered values, not loaded: `leaf_gathers`) and two
//! short launches: worth it from [`VALIDATE_MIN_COLUMNS`] columns.

use crate::abi::{
    FaultRecord, Gate, PAIR_ALL_ENTRY, PAIR_COLUMNS_ENTRY, RECHECK_ALL_ENTRY,
    RECHECK_COLUMNS_ENTRY, VALIDATE_ALL_ENTRY, VALIDATE_COLUMNS_ENTRY,
};
use crate::config::Decomposition;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::launch::launch_steps::{grid, LaunchPlan, Step, Validation};
use crate::spec::KernelSpec;
use warpfit_runtime::{Error, Result};

/// The fewest columns a launch validates first: the validation reads the
/// matrix once and checks two of the `k` columns' gathers, about `2/k` of
/// the fold's work plus two launches, against the checks' share of every
/// column's. Measured from 32 columns (uniform 2^20 × 32: 0.927 → 0.833
/// ms on an H200) up; 8 columns, where the validation would be a quarter
/// of the fold, run checked (BENCHMARKS.md, "Loads validated at the end
/// columns").
pub(crate) const VALIDATE_MIN_COLUMNS: u64 = 16;

/// Whether a launch of `spec` with `decomposition` over `columns` columns
/// is validated first. Not where its rows were cut because some are hubs
/// (`hubs_cut`: a power-law graph's rows, whose lengths vary within every
/// warp): a thread per row or piece then waits for the longest in its
/// warp, in the validation as in the fold, and the validation costs more
/// than the checks save (RMAT 22 × 64: 1.1 ms against 0.7; BENCHMARKS.md,
/// "Loads validated at the end columns").
fn applies(spec: &KernelSpec, decomposition: Decomposition, columns: u64, hubs_cut: bool) -> bool {
    spec.checks_at_end_columns
        && decomposition == Decomposition::Thread
        && columns >= VALIDATE_MIN_COLUMNS
        && !hubs_cut
}

/// `plan` validated first where [`applies`] says so, with the gate record
/// its steps share (a fault record, zeroed; the launch clears it before
/// each run); otherwise `plan` as it is and no gate.
pub(crate) fn gated_plan(
    dev: &CudaDevice,
    spec: &KernelSpec,
    decomposition: Decomposition,
    columns: u64,
    hubs_cut: bool,
    plan: LaunchPlan,
) -> Result<(LaunchPlan, Option<DeviceBuffer<u64>>)> {
    if !applies(spec, decomposition, columns, hubs_cut) {
        return Ok((plan, None));
    }
    let how = Validated {
        columns,
        resident_warps: dev.resident_warps(),
    };
    Ok((
        validated(plan, how)?,
        Some(DeviceBuffer::<u64>::zeros(dev, FaultRecord::WORDS)?),
    ))
}

/// How a launch is validated: its column count, and the warps the GPU
/// holds at once (the validation's lanes per item, and the checked fold's
/// strided grid of a wave of blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Validated {
    pub columns: u64,
    pub resident_warps: u64,
}

/// The threads a validation aims for, per resident thread slot: enough to
/// hide its loads' latency.
const VALIDATE_THREADS_PER_SLOT: u64 = 2;

impl Validated {
    /// Lanes per row or piece in a validation over `units` of them: one,
    /// so that each thread reads its item's bounds and range once and folds
    /// the whole of it, unless that leaves fewer threads than
    /// [`VALIDATE_THREADS_PER_SLOT`] per resident slot (a pruned layer's
    /// thousands of long rows): then the power of two up to a warp that
    /// reaches it, the lanes striding over the item.
    fn lanes(&self, units: u64) -> u32 {
        let aim = self
            .resident_warps
            .saturating_mul(32 * VALIDATE_THREADS_PER_SLOT);
        let want = aim.div_ceil(units.max(1)).clamp(1, 32);
        want.next_power_of_two() as u32
    }

    /// Blocks of a wave of the GPU.
    fn wave_blocks(&self) -> u32 {
        u32::try_from(self.resident_warps / u64::from(crate::abi::BLOCK / 32))
            .unwrap_or(u32::MAX)
            .max(1)
    }
}

/// `plan` with its fold validated first: the validation over the fold's
/// rows or pieces at two columns each, the unchecked fold two columns a
/// thread behind the gate,
/// the checked fold behind it too over a strided wave of blocks, then the
/// rest (a column list's merge). A plan whose first step is not a 2-D fold
/// of one thread per (row or piece, column), or an empty one, is returned
/// as it is.
pub(crate) fn validated(plan: LaunchPlan, how: Validated) -> Result<LaunchPlan> {
    let Some((first, rest)) = plan.steps.split_first() else {
        return Ok(plan);
    };
    let columns = how.columns;
    let (validate, unchecked, recheck) = match first.entry {
        "wf_thread_all" => (VALIDATE_ALL_ENTRY, PAIR_ALL_ENTRY, RECHECK_ALL_ENTRY),
        "wf_thread_columns" => (
            VALIDATE_COLUMNS_ENTRY,
            PAIR_COLUMNS_ENTRY,
            RECHECK_COLUMNS_ENTRY,
        ),
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
    let lanes = how.lanes(ends / 2);
    // Two columns a thread: ⌈k/2⌉ threads per row or piece.
    let fold_blocks = grid(
        (first.items / columns).saturating_mul(columns.div_ceil(2)),
        1,
    )?;
    let gated = |when| Validation::Gated { when, columns };
    let mut steps = vec![
        Step {
            entry: validate,
            // A group of `lanes` per row or piece, both its ends.
            blocks: grid(ends / 2, u64::from(lanes))?,
            items: ends,
            dependent: false,
            validation: Validation::Validate { columns, lanes },
        },
        Step {
            entry: unchecked,
            blocks: fold_blocks,
            validation: gated(Gate::IfValid),
            ..*first
        },
        Step {
            entry: recheck,
            blocks: first.blocks.min(how.wave_blocks()),
            validation: gated(Gate::IfInvalid),
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

    /// An H200's resident warps: 132 SMs of 64.
    fn how(columns: u64) -> Validated {
        Validated {
            columns,
            resident_warps: 132 * 64,
        }
    }

    fn gated(when: Gate, columns: u64) -> Validation {
        Validation::Gated { when, columns }
    }

    fn entries(plan: &LaunchPlan) -> Vec<(&'static str, u64, Validation)> {
        plan.steps
            .iter()
            .map(|s| (s.entry, s.items, s.validation))
            .collect()
    }

    #[test]
    fn a_launch_over_all_rows_validates_each_row_at_two_columns() {
        let plan = plan_launches(Decomposition::Thread, Items::All(1000 * 64), SM90).unwrap();
        let v = validated(plan.clone(), how(64)).unwrap();
        assert_eq!(
            entries(&v),
            [
                (
                    VALIDATE_ALL_ENTRY,
                    2000,
                    Validation::Validate {
                        columns: 64,
                        lanes: 32
                    }
                ),
                (PAIR_ALL_ENTRY, 64_000, gated(Gate::IfValid, 64)),
                (RECHECK_ALL_ENTRY, 64_000, gated(Gate::IfInvalid, 64)),
            ]
        );
        // 1000 rows at 32 lanes; two columns a thread; the checked fold's
        // strided grid, no larger than the fold's over single columns.
        assert_eq!(v.steps[0].blocks, 125);
        assert_eq!(v.steps[1].blocks, 125);
        assert_eq!(plan.steps[0].blocks, 250);
        assert_eq!(v.steps[2].blocks, 250);
        // An odd column count: ⌈k/2⌉ threads a row.
        let odd = plan_launches(Decomposition::Thread, Items::All(1000 * 33), SM90).unwrap();
        assert_eq!(validated(odd, how(33)).unwrap().steps[1].blocks, 67);
        let big = plan_launches(Decomposition::Thread, Items::All(100_000 * 64), SM90).unwrap();
        let big = validated(big, how(64)).unwrap();
        assert_eq!(big.steps[2].blocks, 1056);
        // 100,000 rows fill the GPU at 8 lanes a row.
        assert_eq!(
            big.steps[0].validation,
            Validation::Validate {
                columns: 64,
                lanes: 8
            }
        );
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
        let v = validated(plan, how(150)).unwrap();
        assert_eq!(
            entries(&v)[..3],
            [
                (
                    VALIDATE_COLUMNS_ENTRY,
                    600,
                    Validation::Validate {
                        columns: 150,
                        lanes: 32
                    }
                ),
                (PAIR_COLUMNS_ENTRY, 45_000, gated(Gate::IfValid, 150)),
                (RECHECK_COLUMNS_ENTRY, 45_000, gated(Gate::IfInvalid, 150)),
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
            assert_eq!(validated(plan.clone(), how(64)).unwrap(), plan);
        }
        let plan = plan_launches(Decomposition::Thread, Items::All(100), SM90).unwrap();
        let e = validated(plan, how(64)).unwrap_err();
        assert!(e.to_string().contains("not whole rows"), "{e}");
    }
}

#[cfg(test)]
mod lane_tests {
    use super::Validated;

    #[test]
    fn a_validation_takes_lanes_enough_to_fill_the_gpu() {
        // An H200: 8448 resident warps, 540,672 threads aimed at.
        let lanes = |units| {
            Validated {
                columns: 64,
                resident_warps: 8448,
            }
            .lanes(units)
        };
        // Millions of rows or pieces (a graph): a thread each.
        assert_eq!(lanes(4_200_000), 1);
        assert_eq!(lanes(540_672), 1);
        assert_eq!(lanes(540_671), 2);
        // A pruned layer's 4096 rows, or 7000 pieces: a warp each.
        assert_eq!(lanes(4096), 32);
        assert_eq!(lanes(7000), 32);
        assert_eq!(lanes(30_000), 32);
        assert_eq!(lanes(60_000), 16);
        // None, or no resident warp reported: no division by 0.
        assert_eq!(lanes(0), 32);
        let none = Validated {
            columns: 64,
            resident_warps: 0,
        };
        assert_eq!(none.lanes(100), 1);
        assert_eq!(none.wave_blocks(), 1);
    }
}

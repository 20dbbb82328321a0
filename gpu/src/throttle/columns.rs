//! Throttled 2-D kernels (`#[nested_reduce(columns = k)]` under
//! `#[throttled]`): the handle's plan is over rows and a gathered element
//! is a row of `k` values, so a cache-fit partition holds `cache / (k ·
//! element)` rows of the gathered array. The plans are made on the device
//! under every policy (column blocks: the rows' fine tasks grouped by the
//! block of their gathered row, `device_plan`); the launches run the
//! flattened tasks `row·k + j` with the 2-D launches' column mapping
//! (`launch/columns.rs`), each `(row, j)` fold carried between the
//! partitions' launches in a carry buffer of `rows · k` accumulators.
//!
//! A 2-D kernel runs `org`, `cf` and `auto` by the model (which times `cf`
//! against `org`). The other schedules are refused: `cfq` and `sjq` queue
//! CTE warps, which a 2-D launch has none of; `sj` profiles a host plan;
//! `org_r` and remapping renumber gathered elements, and a gathered row is
//! `k` elements of the caller's array.

use crate::config::LaunchConfig;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::device::Device;
use crate::engines::plan_kernels::MAX_COLUMN_BLOCKS;
use crate::launch::arg::Arg;
use crate::launch::columns::column_config;
use crate::spec::{KernelSpec, ScalarValue};
use crate::throttle::autotune::model::{self, Decision, ShapeStats};
use crate::throttle::handle::{CpuRunFn, Throttled};
use crate::throttle::plan_choice::DevicePlan;
use crate::throttle::roles::ThrottleRoles;
use crate::throttle::slots::Slot;
use warpfit_runtime::schedule::{ThrottleOptions, ThrottlePolicy};
use warpfit_runtime::{Error, Result};

/// The fewest fine tasks a 2-D kernel's row shares with a column block,
/// on average, for `auto` to time `cf`. Each share costs its row's `k`
/// carried values, written by one launch and read by the next: as many
/// bytes as two gathers of a row of the gathered array, which is all the
/// cache-fit layout can save per fine task; and `org`'s gathers hit the
/// cache for part of them already (uniform 2^20 rows of 64 over 5 blocks,
/// about 13 a share: `cf` 1.5× slower than `org`, BENCHMARKS.md,
/// "Throttled SpMM").
pub(in crate::throttle) const CARRIED_FINE_MIN: f64 = 4.0;

impl Throttled {
    /// The handle of a 2-D kernel over `sizes` = `(rows, gathered rows,
    /// columns)`: the shape arrays as host slices (uploaded) or as
    /// `DeviceVec`s of the handle's CUDA device (copied there). Generated
    /// `throttle` and `throttle_resident` of a 2-D kernel call this.
    ///
    /// # Errors
    /// A kernel that is not 2-D, zero columns, rows or gathered rows whose
    /// flattened count overflows, a policy a 2-D kernel does not run
    /// (`shape_checks::check_columns_policy`), and as [`Throttled::new`] and
    /// [`Throttled::resident`].
    #[allow(clippy::too_many_arguments)]
    #[doc(hidden)]
    pub fn columns(
        device: &Device,
        spec: &'static KernelSpec,
        roles: ThrottleRoles,
        options: &ThrottleOptions,
        config: &LaunchConfig,
        sizes: (usize, usize, u64),
        shape: &[Option<Arg<'_>>],
        cpu_run: CpuRunFn,
    ) -> Result<Self> {
        let (rows, gathered_rows, k) = sizes;
        if spec.columns.is_none() {
            return Err(Error::invalid(format!(
                "kernel `{}` is not a 2-D kernel: use throttle",
                spec.name
            )));
        }
        if k == 0 {
            return Err(Error::invalid(format!(
                "kernel `{}`: a throttled 2-D kernel has at least one column, got 0",
                spec.name
            )));
        }
        for (what, n) in [("rows", rows), ("gathered rows", gathered_rows)] {
            let fits = usize::try_from(k).ok().and_then(|k| n.checked_mul(k));
            if fits.is_none() {
                return Err(Error::invalid(format!(
                    "kernel `{}`: {n} {what} of {k} columns are more elements than a launch can number",
                    spec.name
                )));
            }
        }
        let resident = shape
            .iter()
            .flatten()
            .any(|a| matches!(a, Arg::Resident(_)));
        let mut t = if resident {
            Self::resident(
                device,
                spec,
                roles,
                options,
                config,
                rows,
                gathered_rows,
                shape,
                cpu_run,
            )?
        } else {
            Self::new(
                device,
                spec,
                roles,
                options,
                config,
                rows,
                gathered_rows,
                None,
                shape,
                cpu_run,
            )?
        };
        t.columns = Some(k);
        Ok(t)
    }

    /// The tasks a launch runs: `n_tasks`, or a 2-D kernel's rows times
    /// its columns (checked when the handle was made).
    pub(in crate::throttle) fn launch_tasks(&self) -> usize {
        match self.columns {
            Some(k) => self.n_tasks.saturating_mul(k as usize),
            None => self.n_tasks,
        }
    }

    /// The options a launch runs under: `config`, with a 2-D kernel's
    /// column mapping.
    pub(in crate::throttle) fn launch_config(&self, config: &LaunchConfig) -> LaunchConfig {
        match self.columns {
            Some(k) => column_config(config, k),
            None => *config,
        }
    }

    /// The model's first decision over `(rows, fine tasks)`. A 2-D kernel
    /// whose gathered rows need more column blocks than a device plan makes
    /// runs the most it makes (each block then overfills the cache, still
    /// a fraction of the whole) rather than none: it has no level order to
    /// fall back on. Its `cf` is not timed where a row's share of a block
    /// averages fewer than [`CARRIED_FINE_MIN`] fine tasks.
    pub(in crate::throttle) fn decide(
        &self,
        stats: &ShapeStats,
        (rows, nnz): (usize, usize),
    ) -> Decision {
        if self.columns.is_none() {
            return model::decide(stats, MAX_COLUMN_BLOCKS);
        }
        match model::decide(stats, usize::MAX) {
            Decision::Time {
                columns: Some(blocks),
                levels_if_gain,
                why,
            } => {
                let blocks = blocks.min(MAX_COLUMN_BLOCKS);
                let per_share = nnz as f64 / (rows.max(1) as f64 * blocks as f64);
                if per_share < CARRIED_FINE_MIN {
                    return Decision::Org(format!(
                        "{why}, but a row's share of each of {blocks} column blocks averages {per_share:.1} fine tasks, too few to pay for carrying its columns between the blocks' launches"
                    ));
                }
                Decision::Time {
                    columns: Some(blocks),
                    levels_if_gain,
                    why,
                }
            }
            other => other,
        }
    }

    /// The plan a 2-D kernel's pinned policy runs: `org`, or `cf` over the
    /// fewest column blocks that fit (2 at least, [`MAX_COLUMN_BLOCKS`] at
    /// most); `None` for `auto`, which the model decides. With no rows or
    /// no gathered rows there is nothing to partition: `org`.
    pub(in crate::throttle) fn columns_plan(&self, dev: &CudaDevice) -> Result<Option<DevicePlan>> {
        if self.columns.is_none() {
            return Ok(None);
        }
        let empty = self.n_tasks == 0 || self.gathered_len == 0;
        Ok(match self.options.policy {
            ThrottlePolicy::Cf if !empty => {
                let fit = model::column_block_count(
                    self.gathered_len,
                    self.gathered_elem_bytes(),
                    self.partition_budget(dev)?,
                );
                let k = match fit {
                    Some(blocks) => blocks.min(MAX_COLUMN_BLOCKS),
                    None => 2,
                };
                Some(DevicePlan::ColumnBlocks { k })
            }
            ThrottlePolicy::Org | ThrottlePolicy::Cf => Some(DevicePlan::Org),
            _ => None,
        })
    }

    /// A 2-D kernel's launch passes the column count the handle was made
    /// for: its plan's partitions hold rows of that many elements.
    pub(in crate::throttle) fn check_column_count(&self) -> Result<()> {
        let (Some(k), Some(at)) = (self.columns, self.spec.columns) else {
            return Ok(());
        };
        let given = match self.slots.get(at) {
            Some(Slot::Scalar(Some(ScalarValue::U32(v)))) => u64::from(*v),
            Some(Slot::Scalar(Some(ScalarValue::U64(v)))) => *v,
            _ => return Ok(()),
        };
        if given != k {
            return Err(Error::invalid(format!(
                "kernel `{}`: the launch passes {} = {given} columns, and the handle was made for {k}: make a handle per column count",
                self.spec.name, self.spec.params[at].name
            )));
        }
        Ok(())
    }
}

//! A launch over a task list run as one kernel launch per range of its
//! segments ([`CudaLaunch::in_ranges`]): the form of the cache-fit
//! schedules over a host plan's task list.

use super::CudaLaunch;
use crate::config::LaunchConfig;
use crate::driver::cuda_device::CudaDevice;
use crate::launch::arg::Arg;
use crate::launch::enqueue::Launch;
use crate::launch::launch_steps::{self, Items};
use crate::spec::KernelSpec;
use warpfit_runtime::{Error, Result, TaskList, Tasks};

impl CudaLaunch {
    /// A launch over the segments of `list`, run as one kernel launch per
    /// range of `ranges` in that order, then one merge of the split tasks
    /// after the last: the form of the cache-fit schedules, where a range
    /// is a partition (or a node of the SJ-tree) and consecutive launches
    /// keep one partition's data in the cache at a time. Split tasks'
    /// partials are merged in list order, as for a single launch, so the
    /// result does not depend on how the list is cut into ranges.
    ///
    /// # Errors
    /// Ranges that are not consecutive, non-empty and covering the list
    /// exactly; as [`CudaLaunch::new`].
    pub fn in_ranges(
        dev: &CudaDevice,
        spec: &KernelSpec,
        config: &LaunchConfig,
        list: &TaskList,
        ranges: &[std::ops::Range<usize>],
        args: &[Arg<'_>],
    ) -> Result<Self> {
        let mut end = 0;
        for r in ranges {
            if r.start != end || r.is_empty() {
                return Err(Error::invalid(format!(
                    "launch ranges must be consecutive and non-empty from segment 0: found {}..{} after {end}",
                    r.start, r.end
                )));
            }
            end = r.end;
        }
        if end != list.len() {
            return Err(Error::length("launch ranges' segments", list.len(), end));
        }
        let mut p = Self::new_borrowing(dev, spec, config, Tasks::List(list), args)?;
        let Some(tasks) = &p.tasks else {
            return Ok(p);
        };
        // The list kernel is the first launch; the merge, if any, follows.
        let mut launches = Vec::with_capacity(ranges.len() + 1);
        let mut rest = std::mem::take(&mut p.launches).into_iter();
        if let Some(first) = rest.next() {
            let config = &spec.launch_config(config);
            for r in ranges {
                let step = launch_steps::plan_launches(
                    config.decomposition,
                    Items::List {
                        segments: r.len() as u64,
                        packed_warps: None,
                        split_tasks: 0,
                        merge: launch_steps::MergeWidth::Narrow,
                    },
                    dev.arch(),
                )?;
                for s in step.steps {
                    launches.push(Launch {
                        entry: first.entry,
                        function: first.function.clone(),
                        blocks: s.blocks,
                        dependent: false,
                        args: tasks.range_args(r.clone(), spec.acc.size(), first.args),
                    });
                }
            }
        }
        launches.extend(rest);
        p.launches = launches;
        Ok(p)
    }
}

//! SJ-tree profiling (Chen et al., Algorithm 3): every node of the tree run
//! stand-alone and timed with CUDA events, each profiling pass a complete,
//! correct run, then the tree recombined into the fastest cover.

use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::event_timer::EventTimer;
use crate::throttle::autotune::timing::{median, AUTO_SAMPLES};
use crate::throttle::device_layouts::Space;
use crate::throttle::handle::{Runs, Throttled};
use std::ops::Range;
use warpfit_runtime::schedule::{profiling_passes, recombine, ThrottlePolicy};
use warpfit_runtime::{Error, Result};

impl Throttled {
    /// SJ profiling: every pass (a cover of the partitions by SJ-tree
    /// nodes, one complete run) timed node by node, then tree
    /// recombination (Algorithm 3). Returns the chosen cover's launches.
    pub(in crate::throttle) fn profile_sj(
        &mut self,
        dev: &CudaDevice,
        queued: bool,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<Vec<Range<usize>>> {
        let space = self.plan_space();
        let (tree, passes) = {
            let plan = self.plan_in(space)?;
            (plan.tree().clone(), profiling_passes(plan.tree()))
        };
        let mut stime = vec![f64::INFINITY; tree.nodes().len()];
        for pass in &passes {
            let launches = self.plan_in(space)?.node_launches(pass)?;
            let policy = if queued {
                ThrottlePolicy::Sjq
            } else {
                ThrottlePolicy::Sj
            };
            let s = self.build(dev, policy, Some(&launches))?;
            let Runs::Carried(runs) = &s.runs else {
                return Err(Error::invalid("an SJ pass is a carried sequence"));
            };
            let mut per_node = vec![Vec::with_capacity(AUTO_SAMPLES); runs.len()];
            for sample in 0..=AUTO_SAMPLES {
                self.restore(snap)?;
                if s.space == Space::Remapped {
                    self.permute(true)?;
                }
                let ms = timer.time_each_ms(runs.len(), &mut |i| runs.run_part(i))?;
                if sample > 0 {
                    // The first run warms up (and is checked).
                    for (v, t) in per_node.iter_mut().zip(ms) {
                        v.push(t);
                    }
                }
                runs.check()?;
            }
            for (&node, times) in pass.iter().zip(per_node) {
                let t = median(times);
                let slot = &mut stime[node as usize];
                *slot = slot.min(t);
            }
        }
        // Every node is in some pass; one that is not (none, for a tree
        // from the partitioner) is never chosen.
        for t in &mut stime {
            if !t.is_finite() {
                *t = f64::MAX / 4.0;
            }
        }
        let r = recombine(&tree, &stime)?;
        self.plan_in(space)?.node_launches(&r.nodes)
    }
}

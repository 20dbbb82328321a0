//! A prepared launch rebound to other arrays: the split, the task list and
//! the resolved kernels kept, only the arguments made again. Preparing a
//! launch over all tasks measures them on the device and cuts them into a
//! task list (a few milliseconds at 2^24 tasks); an iterative driver that
//! alternates two sets of arrays (`x → y`, then `y → x`) pays that once.

use super::CudaLaunch;
use crate::abi::FaultRecord;
use crate::driver::buffer::DeviceBuffer;
use crate::launch::arg::Arg;
use warpfit_runtime::{Error, Result};

impl CudaLaunch {
    /// This launch over the same tasks with `replace`'s (parameter index,
    /// argument) in place of those arguments, every argument checked again
    /// against the kernel. The task list and the kernels' split are shared
    /// with this launch, so only arguments the tasks' ranges do not read may
    /// change (the throttled handle's per-launch arrays and scalars); the
    /// new launch has its own fault record, queue head and validation gate. Launches on the
    /// device's one stream run in order, so the shared list's scratch is
    /// never used by two of them at once.
    ///
    /// # Errors
    /// A launch over a worklist, with work donation, or with an argument
    /// it copied to the device that `replace` does not give again; as
    /// [`CudaLaunch::new`] for the arguments.
    pub(crate) fn rebound(&self, replace: Vec<(usize, Arg<'_>)>) -> Result<Self> {
        let refused = |why: &str| {
            Err(Error::invalid(format!(
                "kernel `{}`: a launch {why} cannot be rebound to other arrays",
                self.spec.name
            )))
        };
        if self._frontier.is_some() || self.launches.iter().any(|l| l.args.frontier != 0) {
            return refused("over a worklist");
        }
        if self.launches.iter().any(|l| l.args.donated != 0) {
            return refused("with work donation");
        }
        let dev = &self.dev;
        let args = self.args.replaced(dev, &self.spec, replace)?;
        let params = args.pack(dev)?;
        let fault = DeviceBuffer::<u64>::zeros(dev, FaultRecord::WORDS)?;
        let queue = match &self.queue {
            Some(_) => Some(DeviceBuffer::<u32>::zeros(dev, 1)?),
            None => None,
        };
        let gate = match &self.gate {
            Some(_) => Some(DeviceBuffer::<u64>::zeros(dev, FaultRecord::WORDS)?),
            None => None,
        };
        let (fault_ptr, queue_ptr) = (
            fault.device_ptr(dev),
            queue.as_ref().map(|q| q.device_ptr(dev)),
        );
        // A validated launch's validation records its faults in the gate,
        // which the gated folds read.
        let old_gate = self.gate.as_ref().map(|g| g.device_ptr(dev));
        let new_gate = gate.as_ref().map(|g| g.device_ptr(dev));
        let launches = self
            .launches
            .iter()
            .map(|l| {
                let mut l = l.clone();
                l.args.fault = match (old_gate, new_gate) {
                    (Some(old), Some(new)) if l.args.fault == old => new,
                    _ => fault_ptr,
                };
                if let (Some(g), true) = (new_gate, l.args.gate != 0) {
                    l.args.gate = g;
                }
                if let (Some(q), true) = (queue_ptr, l.args.queue != 0) {
                    l.args.queue = q;
                }
                l
            })
            .collect();
        Ok(CudaLaunch {
            dev: dev.clone(),
            spec: self.spec,
            args,
            params,
            tasks: self.tasks.clone(),
            launches,
            chosen_split: self.chosen_split,
            cte_serial_max: self.cte_serial_max,
            longest_task: self.longest_task,
            fault,
            queue,
            gate,
            _frontier: None,
        })
    }
}

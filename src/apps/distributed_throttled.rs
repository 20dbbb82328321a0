//! SpMV on a [`DeviceGroup`] with each member's part throttled: the same
//! distribution and exchange as [`super::spmv_group`], and on every member a
//! throttled handle over its local arrays (on a GPU made from the arrays
//! already there, [`spmv::f32::throttle_resident`]), which decides by the
//! cost model on its first launch, from its own part: its rows, and a local
//! `x` of owned entries plus the halo.

use super::distributed::{spmv_run, GroupRun};
use super::kernels::spmv;
use crate::distributed::{DeviceGroup, Distributed, PartitionKind};
use crate::runtime::Csr;
use crate::{Error, Result, ThrottleOptions, ThrottlePolicy};
use std::time::Instant;

/// `y = A·x` repeated `launches` times on `group`, each member's part run by
/// its own throttled handle (`options`; on GPUs the handles are made from
/// the arrays already on the members, so the policy must be `auto`, which
/// decides by the cost model on the first launch; CPU members run it
/// unthrottled). The result is the last
/// launch's `y` in the caller's order, equal to [`super::spmv_group`]'s
/// within rounding (a schedule may fold a row's entries in another order);
/// `detail` says what each member's handle chose.
///
/// # Errors
/// `x` not `a.ncols()` long; a policy other than `auto`; as
/// [`super::spmv_group`]; a handle's planning or launch failing.
pub fn spmv_group_throttled(
    group: &DeviceGroup,
    kind: PartitionKind,
    a: &Csr<f32>,
    x: &[f32],
    launches: usize,
    options: &ThrottleOptions,
) -> Result<GroupRun<f32>> {
    if x.len() != a.ncols() {
        return Err(Error::length("SpMV's x", a.ncols(), x.len()));
    }
    if options.policy != ThrottlePolicy::Auto {
        return Err(Error::invalid(format!(
            "a group's members throttle their parts from the arrays on them, which only \
             `auto` (by the cost model) plans from; got policy `{}`",
            options.policy
        )));
    }
    let start = Instant::now();
    let d = Distributed::new(group, kind, a.row_ptr(), a.col_idx(), a.ncols())?;
    let val = d.fine(a.values())?;
    let xs = d.gathered(x)?;
    let ys = d.outputs::<f32>()?;
    let ex = d.exchange_of(&xs)?;
    let mut handles = (0..group.len())
        .map(|p| {
            let (dev, part) = (d.device(p), &d.distribution().parts()[p]);
            let (tasks, x_len) = (d.tasks(p), part.local_x_len());
            if dev.cuda().is_some() {
                spmv::f32::throttle_resident(
                    dev,
                    options,
                    tasks,
                    x_len,
                    d.row_ptr(p),
                    d.col(p),
                    val.part(p),
                )
            } else {
                // A CPU member plans from host arrays (and runs unthrottled).
                let vals = d.distribution().fine_part(p, a.values())?;
                spmv::f32::throttle(dev, options, tasks, x_len, &part.row_ptr, &part.col, &vals)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let setup = start.elapsed();
    // The first launch decides on every member; it is a step like the others.
    let mut steps = Vec::new();
    for _ in 0..launches {
        let t = Instant::now();
        ex.run()?;
        for (p, h) in handles.iter_mut().enumerate() {
            h.enqueue(xs.part(p), ys.part(p))?;
        }
        group.synchronize()?;
        steps.push(t.elapsed());
    }
    ex.check()?;
    handles.iter().try_for_each(|h| h.check())?;
    let detail = handles
        .iter()
        .enumerate()
        .map(|(p, h)| {
            let r = h.report();
            format!(
                "member {p}: {}{}",
                r.chosen,
                if r.remapped { " (remapped)" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    spmv_run(&d, &ys, setup, steps, detail)
}

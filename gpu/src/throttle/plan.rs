//! The host half of planning: partition the work graph, order each task's
//! fine tasks by partition, and (when a remapped schedule may run) the
//! remapping: Algorithm 5's, or the level order (`RemapOrder`). Host work
//! only, so that it can run on a thread of its own while launches run
//! unthrottled (pipelined planning).

use super::ThrottleRoles;
use crate::spec::{KernelSpec, ScalarType};
use std::time::{Duration, Instant};
use warpfit_runtime::partition::{Remapping, WorkGraph};
use warpfit_runtime::schedule::{CacheFitPlan, RemapOrder, ThrottleOptions};
use warpfit_runtime::{Error, Result};

/// A plan made on the host.
pub(super) struct HostPlan {
    pub partitions: usize,
    pub planning: Duration,
    /// `None` for one partition: the plan is the unthrottled launch.
    pub detail: Option<PlanDetail>,
}

/// The plan of more than one partition.
pub(super) struct PlanDetail {
    /// The plan over the original task and element numbering.
    pub plan: CacheFitPlan,
    /// The range array of the original numbering (the work graph's).
    pub ptr: Vec<u32>,
    /// The remapping remapped schedules run in, and its order, when one
    /// may run (`ThrottleOptions::remap_orders_to_time`).
    pub remapping: Option<(RemapOrder, Remapping)>,
    /// The other order `auto` times `org_r` in (its remapping swapped in
    /// while it is timed, dropped once `auto` has chosen).
    pub alternative: Option<(RemapOrder, Remapping)>,
    /// The plan over the remapped numbering, when the schedules run
    /// remapped (`ThrottleOptions::remap`).
    pub remapped: Option<CacheFitPlan>,
}

/// The shape arrays of a kernel, by parameter (`None`: not a shape
/// array), checked against the kernel's roles and types.
pub(super) type Shape<'s> = Vec<Option<(&'s [u8], ScalarType)>>;

/// The renumberings the handle makes: none when the kernel cannot be
/// remapped (its roles), else those the options may run
/// ([`ThrottleOptions::remap_orders_to_time`]).
pub(super) fn remap_orders(
    roles: &ThrottleRoles,
    options: &ThrottleOptions,
    square: bool,
) -> Vec<RemapOrder> {
    match roles.index {
        Some(_) => options.remap_orders_to_time(square),
        None => Vec::new(),
    }
}

/// The remapping of `graph` in `order` (`partition`: the plan's).
fn remapping(
    spec: &KernelSpec,
    graph: &WorkGraph,
    partition: &warpfit_runtime::partition::Partition,
    order: RemapOrder,
) -> Result<Remapping> {
    let square = graph.n_tasks() == graph.n_gathered();
    match order {
        RemapOrder::Levels if square => Remapping::levels_of(graph),
        RemapOrder::Levels => Err(Error::invalid(format!(
            "kernel `{}`: remapping order `levels` renumbers tasks and gathered elements alike and needs as many of each, got {} tasks and {} gathered elements; use remapping order `partitions`",
            spec.name,
            graph.n_tasks(),
            graph.n_gathered()
        ))),
        // Square: one permutation, so that `x ← A x` stays in plan order.
        RemapOrder::Partitions if square => Remapping::symmetric(graph, partition),
        RemapOrder::Partitions => Remapping::new(graph, partition),
    }
}

/// Partitions `graph` for a cache of `l2` bytes (the device's) and orders
/// the plan.
pub(super) fn plan_on_host(
    spec: &KernelSpec,
    roles: ThrottleRoles,
    options: &ThrottleOptions,
    l2: u64,
    graph: &WorkGraph,
    shape: &Shape<'_>,
) -> Result<HostPlan> {
    let t = Instant::now();
    let (range_bytes, range_ty) =
        shape[roles.range].ok_or_else(|| Error::invalid("the range array is missing"))?;
    check_tiles(spec, roles.range, range_bytes, range_ty, graph)?;
    let partition = options.partition(graph, Some(l2), None)?;
    let plan = CacheFitPlan::new(graph, &partition)?;
    let partitions = plan.len();
    let detail = if partitions > 1 {
        let square = graph.n_tasks() == graph.n_gathered();
        let mut made = remap_orders(&roles, options, square)
            .into_iter()
            .map(|order| Ok((order, remapping(spec, graph, &partition, order)?)))
            .collect::<Result<Vec<_>>>()?
            .into_iter();
        let remapping = made.next();
        let alternative = made.next();
        let remapped = match (&remapping, options.remap) {
            (Some((_, r)), true) => Some(plan.remapped(graph, r)?),
            _ => None,
        };
        Some(PlanDetail {
            ptr: graph.ptr().to_vec(),
            plan,
            remapping,
            alternative,
            remapped,
        })
    } else {
        None
    };
    Ok(HostPlan {
        partitions,
        planning: t.elapsed(),
        detail,
    })
}

/// A cache-fit plan reorders the fine arrays by tuple id, which is the
/// fine-task index only when the range array tiles them from 0 in task
/// order: the work graph's own pointers.
fn check_tiles(
    spec: &KernelSpec,
    range: usize,
    bytes: &[u8],
    ty: ScalarType,
    graph: &WorkGraph,
) -> Result<()> {
    let size = ty.size();
    let ptr = graph.ptr();
    let tiles = bytes.len() >= ptr.len() * size
        && ptr.iter().enumerate().all(|(t, &p)| {
            let b = &bytes[t * size..(t + 1) * size];
            let v = match size {
                4 => u64::from(u32::from_ne_bytes(b.try_into().unwrap_or([0; 4]))),
                _ => u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])),
            };
            v == u64::from(p)
        });
    if tiles {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "kernel `{}`: its range array `{}` does not tile the fine arrays from 0 in task order (first entry 0, never decreasing), which a cache-fit plan needs; run it with policy org",
            spec.name, spec.params[range].name
        )))
    }
}

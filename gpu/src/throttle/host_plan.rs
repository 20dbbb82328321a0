//! The host half of planning: partition the work graph, order each task's
//! fine tasks by partition, and (when a remapped schedule may run) the
//! remapping: Algorithm 5's, or the level order (`RemapOrder`). Host work
//! only, so that it can run on a thread of its own while launches run
//! unthrottled (pipelined planning).

use crate::spec::{KernelSpec, ScalarType};
use crate::throttle::roles::ThrottleRoles;
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
        Some(_) if !roles.gathered_at_task || square => options.remap_orders_to_time(square),
        _ => Vec::new(),
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

/// A plan being made on a CPU thread.
pub(in crate::throttle) type PendingPlan = std::thread::JoinHandle<Result<HostPlan>>;

#[cfg(test)]
pub(in crate::throttle) mod tests {
    use super::*;
    use crate::spec::{AccType, ParamKind, ParamSpec};
    use warpfit_runtime::schedule::ThrottlePolicy;
    use warpfit_runtime::{gen, Csr};

    const fn param(name: &'static str, ty: ScalarType, kind: ParamKind) -> ParamSpec {
        ParamSpec { name, ty, kind }
    }

    /// `y[row] = Σ val[k] * x[col[k]]`, as the macro describes it.
    pub(in crate::throttle) static SPMV: KernelSpec = KernelSpec {
        name: "spmv",
        cuda_source: "",
        device_fns: &[],
        params: &[
            param("row_ptr", ScalarType::U32, ParamKind::Input),
            param("col", ScalarType::U32, ParamKind::Input),
            param("val", ScalarType::F32, ParamKind::Input),
            param("x", ScalarType::F32, ParamKind::Input),
            param("y", ScalarType::F32, ParamKind::Output),
        ],
        acc: AccType::Scalar(ScalarType::F32),
        elementwise: false,
        donates: false,
        index_encoding: crate::spec::IndexEncoding::Plain,
        columns: None,
        checks_at_end_columns: false,
    };

    const ROLES: ThrottleRoles = crate::throttle::roles::SPMV_ROLES;

    /// The host plan of `a` for `options`, with a 4 KiB cache (several
    /// partitions of these matrices).
    fn plan_of(a: &Csr<f32>, roles: ThrottleRoles, options: ThrottleOptions) -> Result<HostPlan> {
        let graph = WorkGraph::from_csr(a)?;
        let ptr: Vec<u8> = a.row_ptr().iter().flat_map(|p| p.to_ne_bytes()).collect();
        let shape: Shape<'_> = vec![Some((&ptr[..], ScalarType::U32)), None, None, None, None];
        plan_on_host(&SPMV, roles, &options, 4 << 10, &graph, &shape)
    }

    /// The orders of the remapping and of the alternative.
    fn orders(p: &HostPlan) -> (Option<RemapOrder>, Option<RemapOrder>) {
        let d = p.detail.as_ref().expect("several partitions");
        (
            d.remapping.as_ref().map(|(o, _)| *o),
            d.alternative.as_ref().map(|(o, _)| *o),
        )
    }

    #[test]
    fn auto_plans_both_remapping_orders_only_when_it_may_choose() {
        use RemapOrder::{Levels, Partitions};
        let a = gen::uniform(4096, 8, 3).unwrap();
        let auto = ThrottleOptions::default().with_policy(ThrottlePolicy::Auto);
        let p = plan_of(&a, ROLES, auto).unwrap();
        assert!(p.partitions > 1, "{}", p.partitions);
        assert_eq!(orders(&p), (Some(Partitions), Some(Levels)));
        // The alternative is the matrix's level order, on both sides.
        let (_, levels) = p.detail.as_ref().unwrap().alternative.as_ref().unwrap();
        let want = Remapping::levels(&a).unwrap();
        assert_eq!(levels.task_perm(), want.task_perm());
        assert_eq!(levels.gathered_perm(), want.gathered_perm());

        for (options, want) in [
            (auto.with_remap_order(Levels), (Some(Levels), None)),
            (auto.with_remap_order(Partitions), (Some(Partitions), None)),
            // The cache-fit schedules remapped: one numbering for all.
            (auto.with_remap(true), (Some(Partitions), None)),
            (
                auto.with_policy(ThrottlePolicy::OrgR),
                (Some(Partitions), None),
            ),
            (auto.with_policy(ThrottlePolicy::Cf), (None, None)),
            (
                auto.with_policy(ThrottlePolicy::Cf).with_remap(true),
                (Some(Partitions), None),
            ),
        ] {
            let p = plan_of(&a, ROLES, options).unwrap();
            assert_eq!(orders(&p), want, "{options:?}");
        }
        // A kernel that cannot be remapped gets no renumbering.
        let refused = ThrottleRoles {
            index: None,
            remap_refused: "it folds from dist[v]",
            ..ROLES
        };
        assert_eq!(orders(&plan_of(&a, refused, auto).unwrap()), (None, None));
    }

    #[test]
    fn a_rectangular_kernel_is_remapped_by_partitions_and_refuses_levels() {
        let a = gen::uniform(4096, 8, 3).unwrap();
        let n = a.nrows();
        let wide = Csr::new(
            n,
            2 * n,
            a.row_ptr().to_vec(),
            a.col_idx().iter().map(|&c| c + n as u32).collect(),
            a.values().to_vec(),
        )
        .unwrap();
        let auto = ThrottleOptions::default().with_policy(ThrottlePolicy::Auto);
        let p = plan_of(&wide, ROLES, auto).unwrap();
        assert_eq!(orders(&p), (Some(RemapOrder::Partitions), None));
        let Err(e) = plan_of(&wide, ROLES, auto.with_remap_order(RemapOrder::Levels)) else {
            panic!("levels on a rectangular kernel");
        };
        let e = e.to_string();
        assert!(e.contains("remapping order `levels`"), "{e}");
        assert!(e.contains("4096 tasks and 8192 gathered elements"), "{e}");
    }
}

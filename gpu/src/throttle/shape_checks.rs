//! What a throttled handle is given, checked before anything is made: the
//! shape arrays against the kernel's parameters and roles, and the policy
//! against what the kernel can run.

use crate::spec::{KernelSpec, ScalarType};
use crate::throttle::host_plan::Shape;
use crate::throttle::roles::ThrottleRoles;
use warpfit_runtime::schedule::{ThrottleOptions, ThrottlePolicy};
use warpfit_runtime::{Error, Result};

pub(in crate::throttle) fn check_shape<'s>(
    spec: &KernelSpec,
    roles: ThrottleRoles,
    shape: Vec<Option<(&'s [u8], ScalarType)>>,
) -> Result<Shape<'s>> {
    check_slot_count(spec, shape.len())?;
    for (i, (p, s)) in spec.params.iter().zip(&shape).enumerate() {
        let fits = match s {
            Some((_, ty)) => roles.shapes(i) && *ty == p.ty,
            None => !roles.shapes(i),
        };
        if !fits {
            return Err(misplaced(spec, roles, i, "throttle", "a host array of"));
        }
    }
    Ok(shape)
}

/// One slot per parameter.
pub(in crate::throttle) fn check_slot_count(spec: &KernelSpec, slots: usize) -> Result<()> {
    if slots != spec.params.len() {
        return Err(Error::invalid(format!(
            "kernel `{}`: throttle got {slots} parameter slots for {} parameters",
            spec.name,
            spec.params.len()
        )));
    }
    Ok(())
}

/// Parameter `i` given to `made_by` where it does not belong: a shape
/// array must be `as_what` its type, any other is passed to each launch.
pub(in crate::throttle) fn misplaced(
    spec: &KernelSpec,
    roles: ThrottleRoles,
    i: usize,
    made_by: &str,
    as_what: &str,
) -> Error {
    let p = &spec.params[i];
    Error::invalid(format!(
        "kernel `{}`: parameter {i} (`{}`) {}",
        spec.name,
        p.name,
        if roles.shapes(i) {
            format!(
                "shapes the work and must be given to {made_by} as {as_what} {}",
                p.ty.rust_name()
            )
        } else {
            format!("is passed to each launch, not to {made_by}")
        }
    ))
}

/// Checks what the handle is asked to run over `n_tasks` tasks and
/// `gathered_len` gathered elements.
pub(in crate::throttle) fn check_policy(
    spec: &KernelSpec,
    roles: ThrottleRoles,
    options: &ThrottleOptions,
    n_tasks: usize,
    gathered_len: usize,
) -> Result<()> {
    options.validate()?;
    check_columns_policy(spec, options)?;
    let remapped = options.remap || options.policy == ThrottlePolicy::OrgR;
    let what = || {
        format!(
            "kernel `{}`: a remapped plan (policy {}{}) cannot run it",
            spec.name,
            options.policy,
            if options.remap { ", remap" } else { "" },
        )
    };
    if remapped && roles.index.is_none() {
        return Err(Error::invalid(format!(
            "{}: {}",
            what(),
            roles.remap_refused
        )));
    }
    if remapped && !remappable_sizes(roles, n_tasks, gathered_len) {
        return Err(Error::invalid(format!(
            "{}: it reads a gathered array at the task index, so tasks and gathered elements must be renumbered alike, and there are {n_tasks} tasks but {gathered_len} gathered elements",
            what()
        )));
    }
    Ok(())
}

/// Whether a remapped plan can renumber `n_tasks` tasks and `gathered_len`
/// gathered elements: any sizes, unless a gathered array is also read at
/// the task index (then one permutation for both, so as many of each).
pub(in crate::throttle) fn remappable_sizes(
    roles: ThrottleRoles,
    n_tasks: usize,
    gathered_len: usize,
) -> bool {
    !roles.gathered_at_task || n_tasks == gathered_len
}

/// The policies a 2-D kernel's handle runs: `org`, `cf` and `auto` by the
/// model (`columns.rs` says why not the others).
pub(in crate::throttle) fn check_columns_policy(
    spec: &KernelSpec,
    options: &ThrottleOptions,
) -> Result<()> {
    if spec.columns.is_none() {
        return Ok(());
    }
    let refused = match options.policy {
        _ if options.remap => Some("remapping renumbers gathered elements, and a 2-D kernel gathers rows of the caller's array"),
        ThrottlePolicy::Auto if options.exhaustive => Some("the exhaustive sweep times host plans; a 2-D kernel's plans are made on the device"),
        ThrottlePolicy::Auto | ThrottlePolicy::Org | ThrottlePolicy::Cf => None,
        ThrottlePolicy::Cfq | ThrottlePolicy::Sjq => Some("its warps take CTE groups from a queue, and a 2-D launch runs a thread per column"),
        ThrottlePolicy::Sj => Some("it profiles a host plan's SJ-tree; a 2-D kernel's plans are made on the device"),
        ThrottlePolicy::OrgR => Some("it renumbers gathered elements, and a 2-D kernel gathers rows of the caller's array"),
    };
    match refused {
        None => Ok(()),
        Some(why) => Err(Error::invalid(format!(
            "kernel `{}` is a 2-D kernel, which runs policies auto, org and cf: policy {}{}: {why}",
            spec.name,
            options.policy,
            if options.exhaustive {
                ", exhaustive"
            } else if options.remap {
                ", remap"
            } else {
                ""
            },
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::throttle::host_plan::tests::SPMV;
    use crate::throttle::roles::SPMV_ROLES;

    #[test]
    fn the_shape_arrays_must_be_the_roles_arrays_of_the_parameters_types() {
        let (ptr, col, val) = ([0u8; 8], [0u8; 4], [0u8; 4]);
        let good = || -> Shape<'_> {
            vec![
                Some((&ptr[..], ScalarType::U32)),
                Some((&col[..], ScalarType::U32)),
                Some((&val[..], ScalarType::F32)),
                None,
                None,
            ]
        };
        assert!(check_shape(&SPMV, SPMV_ROLES, good()).is_ok());
        let mut short = good();
        short.pop();
        let e = check_shape(&SPMV, SPMV_ROLES, short)
            .unwrap_err()
            .to_string();
        assert!(e.contains("got 4 parameter slots for 5 parameters"), "{e}");
        let mut missing = good();
        missing[1] = None;
        let e = check_shape(&SPMV, SPMV_ROLES, missing)
            .unwrap_err()
            .to_string();
        assert!(e.contains("parameter 1 (`col`) shapes the work"), "{e}");
        let mut wrong_type = good();
        wrong_type[2] = Some((&val[..], ScalarType::U32));
        let e = check_shape(&SPMV, SPMV_ROLES, wrong_type)
            .unwrap_err()
            .to_string();
        assert!(e.contains("host array of f32"), "{e}");
        let mut per_launch = good();
        per_launch[3] = Some((&val[..], ScalarType::F32));
        let e = check_shape(&SPMV, SPMV_ROLES, per_launch)
            .unwrap_err()
            .to_string();
        assert!(e.contains("(`x`) is passed to each launch"), "{e}");
    }

    #[test]
    fn a_remapped_policy_needs_an_index_array() {
        let org_r = ThrottleOptions::default().with_policy(ThrottlePolicy::OrgR);
        assert!(check_policy(&SPMV, SPMV_ROLES, &org_r, 8, 8).is_ok());
        let refused = ThrottleRoles {
            index: None,
            remap_refused: "the gather is not through a fine array",
            ..SPMV_ROLES
        };
        let e = check_policy(&SPMV, refused, &org_r, 8, 8)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot run it: the gather is not through"),
            "{e}"
        );
        let cf_remapped = ThrottleOptions::default()
            .with_policy(ThrottlePolicy::Cf)
            .with_remap(true);
        let e = check_policy(&SPMV, refused, &cf_remapped, 8, 8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("policy cf, remap"), "{e}");
        let cf = ThrottleOptions::default().with_policy(ThrottlePolicy::Cf);
        assert!(check_policy(&SPMV, refused, &cf, 8, 8).is_ok());
    }

    #[test]
    fn a_gathered_array_read_at_the_task_index_is_remapped_only_when_square() {
        // A cell's own state beside its neighbours': one permutation for both.
        let own = ThrottleRoles {
            gathered_at_task: true,
            ..SPMV_ROLES
        };
        let org_r = ThrottleOptions::default().with_policy(ThrottlePolicy::OrgR);
        assert!(check_policy(&SPMV, own, &org_r, 8, 8).is_ok());
        let e = check_policy(&SPMV, own, &org_r, 8, 16)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("8 tasks but 16 gathered elements") && e.contains("policy org_r"),
            "{e}"
        );
        // Not remapped: any sizes.
        let cf = ThrottleOptions::default().with_policy(ThrottlePolicy::Cf);
        assert!(check_policy(&SPMV, own, &cf, 8, 16).is_ok());
        assert!(
            crate::throttle::host_plan::remap_orders(&own, &cf.with_remap(true), false).is_empty()
        );
        assert!(remappable_sizes(SPMV_ROLES, 8, 16));
    }
}

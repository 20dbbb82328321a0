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
    if shape.len() != spec.params.len() {
        return Err(Error::invalid(format!(
            "kernel `{}`: throttle got {} parameter slots for {} parameters",
            spec.name,
            shape.len(),
            spec.params.len()
        )));
    }
    for (i, (p, s)) in spec.params.iter().zip(&shape).enumerate() {
        let fits = match s {
            Some((_, ty)) => roles.shapes(i) && *ty == p.ty,
            None => !roles.shapes(i),
        };
        if !fits {
            return Err(Error::invalid(format!(
                "kernel `{}`: parameter {i} (`{}`) {}",
                spec.name,
                p.name,
                if roles.shapes(i) {
                    format!(
                        "shapes the work and must be given to throttle as a host array of {}",
                        p.ty.rust_name()
                    )
                } else {
                    "is passed to each launch, not to throttle".to_string()
                }
            )));
        }
    }
    Ok(shape)
}

/// Checks what the handle is asked to run.
pub(in crate::throttle) fn check_policy(
    spec: &KernelSpec,
    roles: ThrottleRoles,
    options: &ThrottleOptions,
) -> Result<()> {
    options.validate()?;
    let remapped = options.remap || options.policy == ThrottlePolicy::OrgR;
    if remapped && roles.index.is_none() {
        return Err(Error::invalid(format!(
            "kernel `{}`: a remapped plan (policy {}{}) cannot run it: {}",
            spec.name,
            options.policy,
            if options.remap { ", remap" } else { "" },
            roles.remap_refused
        )));
    }
    Ok(())
}

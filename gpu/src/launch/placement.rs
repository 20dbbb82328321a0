//! Placement checks: every device-resident argument of a launch lives where
//! the launch runs, and no output is also passed as another argument.

use crate::driver::cuda_device::CudaDevice;
use crate::launch::arg::Arg;
use crate::launch::device_vec::{cuda_name, Place};
use crate::launch::worklist_arg::{misplaced_list, ListPlace};
use crate::spec::KernelSpec;
use warpfit_runtime::{Error, Result};

/// Where a launch runs, for [`check_placement`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'d> {
    Cpu,
    Cuda(&'d CudaDevice),
}

/// The error for argument `i` of `spec`, a `DeviceVec` of `lives_on`, in a
/// launch that runs on `runs_on`.
pub(crate) fn misplaced(spec: &KernelSpec, i: usize, lives_on: &str, runs_on: &str) -> Error {
    let name = spec.params.get(i).map_or("?", |p| p.name);
    Error::invalid(format!(
        "kernel `{}`: argument {i} (`{name}`) is a DeviceVec of {lives_on}, but the launch runs on {runs_on}",
        spec.name
    ))
}

/// Checks that every device-resident argument of a launch of `spec` lives
/// where the launch runs: a CPU array on a GPU, a GPU array on the CPU, or
/// arrays of another GPU are errors naming the parameter.
pub(crate) fn check_placement(
    spec: &KernelSpec,
    args: &[Arg<'_>],
    target: Target<'_>,
) -> Result<()> {
    for (i, a) in args.iter().enumerate().take(spec.params.len()) {
        if let Arg::Worklist(w) = a {
            let runs_on = match target {
                Target::Cpu => "the CPU".to_string(),
                Target::Cuda(d) => cuda_name(d),
            };
            let here = match (w.place, target) {
                (ListPlace::Host(_), Target::Cpu) => true,
                (ListPlace::Cuda { device, .. }, Target::Cuda(d)) => {
                    device.ordinal() == d.ordinal()
                }
                _ => false,
            };
            if !here {
                return Err(misplaced_list(spec, i, &w.place.location(), &runs_on));
            }
            continue;
        }
        let Arg::Resident(r) = a else { continue };
        let runs_on = match target {
            Target::Cpu => "the CPU".to_string(),
            Target::Cuda(d) => cuda_name(d),
        };
        let lives_on = match (r.place, target) {
            (Place::Host { .. }, Target::Cpu) => continue,
            (Place::Cuda { device, .. }, Target::Cuda(d)) if device.ordinal() == d.ordinal() => {
                continue
            }
            (Place::Host { .. }, _) => "the CPU".to_string(),
            (Place::Cuda { device, .. }, _) => cuda_name(device),
        };
        return Err(misplaced(spec, i, &lives_on, &runs_on));
    }
    Ok(())
}

/// Checks that no device-resident output is also passed as another
/// argument: a launch that reads an array it writes races with itself. (A
/// plain launch's `&mut` outputs cannot alias; a prepared launch takes
/// shared borrows, so this is checked.)
pub(crate) fn check_unaliased(spec: &KernelSpec, args: &[Arg<'_>]) -> Result<()> {
    let addr = |a: &Arg<'_>| match a {
        Arg::Resident(r) if r.len > 0 => Some(r.place.address()),
        _ => None,
    };
    for (i, a) in args.iter().enumerate() {
        let (Arg::Resident(r), Some(at)) = (a, addr(a)) else {
            continue;
        };
        if !r.kind.writes() {
            continue;
        }
        if let Some(j) = (0..args.len()).find(|&j| j != i && addr(&args[j]) == Some(at)) {
            let name = |k: usize| spec.params.get(k).map_or("?", |p| p.name);
            return Err(Error::invalid(format!(
                "kernel `{}`: output argument {i} (`{}`) is also passed as argument {j} (`{}`): a launch may not read or write an array it writes elsewhere",
                spec.name,
                name(i),
                name(j)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::device::Device;
    use crate::spec::X_TO_Y as SPEC;

    #[test]
    fn aliased_outputs_are_named() {
        let d = Device::cpu();
        let v = d.alloc::<f32>(2).unwrap();
        let args = vec![Arg::resident_input(&v), Arg::resident_output(&v)];
        let e = check_unaliased(&SPEC, &args).unwrap_err().to_string();
        assert!(
            e.contains("output argument 1 (`y`) is also passed as argument 0 (`x`)"),
            "{e}"
        );
        let w = d.alloc::<f32>(2).unwrap();
        assert!(
            check_unaliased(&SPEC, &[Arg::resident_input(&v), Arg::resident_output(&w)]).is_ok()
        );
    }
}

//! Worklists as launch arguments: what a generated launch takes for a
//! `&Worklist` parameter ([`WorklistArg`]), where the list lives, and the
//! checks that a launch's lists are where it runs and are not its tasks.

use crate::abi::WorklistRef;
use crate::driver::cuda_device::CudaDevice;
use crate::spec::KernelSpec;
use warpfit_runtime::worklist::Worklist;
use warpfit_runtime::{Error, Result, Tasks};

/// What a generated launch takes for a `&Worklist` parameter: a
/// [`DeviceWorklist`](crate::DeviceWorklist), or on the CPU backend the runtime's [`Worklist`].
pub trait WorklistArg {
    /// The list as a launch argument.
    fn list_arg(&self) -> ListArg<'_>;
}

impl WorklistArg for Worklist {
    fn list_arg(&self) -> ListArg<'_> {
        ListArg {
            place: ListPlace::Host(self),
        }
    }
}

impl<W: WorklistArg + ?Sized> WorklistArg for &W {
    fn list_arg(&self) -> ListArg<'_> {
        (**self).list_arg()
    }
}

/// A worklist argument of a launch (see [`WorklistArg`]).
#[derive(Debug, Clone, Copy)]
pub struct ListArg<'a> {
    pub(crate) place: ListPlace<'a>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum ListPlace<'a> {
    Host(&'a Worklist),
    Cuda {
        list: WorklistRef,
        device: &'a CudaDevice,
    },
}

impl ListPlace<'_> {
    /// Where the list lives, in words.
    pub(crate) fn location(&self) -> String {
        match self {
            ListPlace::Host(_) => "the CPU".into(),
            ListPlace::Cuda { device, .. } => {
                format!("CUDA device {} ({})", device.ordinal(), device.name())
            }
        }
    }
}

/// The CPU twin's view of worklist argument `i` of `spec`.
///
/// # Errors
/// The list lives on a GPU (naming the parameter and both places).
pub fn host_worklist<'a, W: WorklistArg + ?Sized>(
    spec: &KernelSpec,
    i: usize,
    w: &'a W,
) -> Result<&'a Worklist> {
    match w.list_arg().place {
        ListPlace::Host(list) => Ok(list),
        place @ ListPlace::Cuda { .. } => {
            Err(misplaced_list(spec, i, &place.location(), "the CPU"))
        }
    }
}

/// The error for worklist argument `i` living elsewhere than the launch.
pub(crate) fn misplaced_list(spec: &KernelSpec, i: usize, lives_on: &str, runs_on: &str) -> Error {
    let name = spec.params.get(i).map_or("?", |p| p.name);
    Error::invalid(format!(
        "kernel `{}`: argument {i} (`{name}`) is a worklist of {lives_on}, but the launch runs on {runs_on}",
        spec.name
    ))
}

/// A CPU launch over `tasks` must not push to the list it reads: the
/// round's pushes would land behind the items it runs.
pub fn check_frontier(
    spec: &KernelSpec,
    tasks: &Tasks<'_>,
    lists: &[(usize, &Worklist)],
) -> Result<()> {
    if let Tasks::Frontier(f) = tasks {
        if let Some(&(i, _)) = lists.iter().find(|(_, l)| std::ptr::eq(*l, *f)) {
            return Err(frontier_is_target(spec, i));
        }
    }
    Ok(())
}

/// The error for a launch that pushes to its own frontier.
pub(crate) fn frontier_is_target(spec: &KernelSpec, i: usize) -> Error {
    let name = spec.params.get(i).map_or("?", |p| p.name);
    Error::invalid(format!(
        "kernel `{}`: worklist argument {i} (`{name}`) is also the launch's tasks: a round reads one list and pushes to another (swap them between rounds)",
        spec.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ParamKind;

    #[test]
    fn a_launch_may_not_push_to_its_own_frontier() {
        use crate::spec::{AccType, ParamSpec, ScalarType};
        static SPEC: KernelSpec = KernelSpec {
            name: "k",
            cuda_source: "",
            device_fns: &[],
            params: &[ParamSpec {
                name: "out",
                ty: ScalarType::U32,
                kind: ParamKind::Worklist,
            }],
            acc: AccType::Scalar(ScalarType::U8),
            elementwise: false,
            donates: false,
            index_encoding: crate::spec::IndexEncoding::Plain,
            columns: None,
            checks_at_end_columns: false,
        };
        let (a, b) = (Worklist::new(4, 4).unwrap(), Worklist::new(4, 4).unwrap());
        assert!(check_frontier(&SPEC, &Tasks::from(&a), &[(0, &b)]).is_ok());
        let e = check_frontier(&SPEC, &Tasks::from(&a), &[(0, &a)]).unwrap_err();
        assert!(
            e.to_string()
                .contains("argument 0 (`out`) is also the launch's tasks"),
            "{e}"
        );
        assert_eq!(host_worklist(&SPEC, 0, &a).unwrap().universe(), 4);
    }
}

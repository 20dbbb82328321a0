//! The handle's slot for each parameter ([`Slot`]): a shape array it owns,
//! a per-launch array staged in a buffer of its own or bound in place
//! ([`Bound`]), or a scalar; and what decides between staging and binding.

use crate::driver::device::Device;
use crate::launch::arg::Arg;
use crate::launch::device_vec::{Place, ResidentArray};
use crate::spec::{ParamKind, ScalarType, ScalarValue};
use crate::throttle::erased_vec::ErasedVec;

pub(in crate::throttle) enum Slot {
    /// A range or fine array as given (absent once no schedule reads it).
    Shape(Option<ErasedVec>),
    /// A per-launch array: the caller's own `DeviceVec` of the handle's
    /// device (bound: used in place), else a buffer of the handle's that
    /// each launch copies in (and out, for an output).
    Staged(Staging),
    Scalar(Option<ScalarValue>),
}

pub(in crate::throttle) enum Staging {
    Empty,
    Own(ErasedVec),
    Bound(Bound),
}

/// The caller's array a launch used in place: its address on the device
/// (CUDA) or in host memory (the CPU backend), checked again at every
/// launch, which re-prepares when it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::throttle) struct Bound {
    pub(in crate::throttle) addr: u64,
    pub(in crate::throttle) cuda: bool,
    pub(in crate::throttle) len: usize,
}

/// `arg` as an array the handle can use in place: a `DeviceVec` of the
/// handle's device (`None`: copy it).
pub(in crate::throttle) fn bindable(device: &Device, arg: &Arg<'_>) -> Option<Bound> {
    match (arg, device.cuda()) {
        (
            Arg::Resident(ResidentArray {
                place: Place::Cuda { ptr, device: d },
                len,
                ..
            }),
            Some(own),
        ) if d.ordinal() == own.ordinal() => Some(Bound {
            addr: *ptr,
            cuda: true,
            len: *len,
        }),
        (
            Arg::Resident(ResidentArray {
                place: Place::Host { addr },
                len,
                ..
            }),
            None,
        ) => Some(Bound {
            addr: *addr as u64,
            cuda: false,
            len: *len,
        }),
        _ => None,
    }
}

/// The kind, element type and length of a launch argument.
pub(in crate::throttle) fn arg_signature(arg: &Arg<'_>) -> (ParamKind, ScalarType, usize) {
    match arg {
        Arg::Input(s) => (ParamKind::Input, s.ty, s.len()),
        Arg::Output(s) => (ParamKind::Output, s.ty, s.len()),
        Arg::Scalar(v) => (ParamKind::Scalar, v.ty(), 0),
        Arg::Resident(r) => (r.kind, r.ty, r.len),
        // Throttled kernels have no shared arrays or worklists (the macro
        // rejects them); the signature is for the argument check's error.
        Arg::Shared(s) => (ParamKind::Shared, s.0.ty, s.0.len()),
        Arg::Worklist(_) => (ParamKind::Worklist, ScalarType::U32, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_their_kind_type_and_length() {
        let x = [1f32, 2.0, 3.0];
        let mut y = [0u32; 2];
        assert_eq!(
            arg_signature(&Arg::input(&x)),
            (ParamKind::Input, ScalarType::F32, 3)
        );
        assert_eq!(
            arg_signature(&Arg::output(&mut y)),
            (ParamKind::Output, ScalarType::U32, 2)
        );
        assert_eq!(arg_signature(&Arg::scalar(7u64)).1, ScalarType::U64);
    }

    #[test]
    fn only_arrays_of_the_handles_device_bind_in_place() {
        let cpu = Device::Cpu;
        let v = cpu.upload(&[1f32, 2.0]).unwrap();
        let bound = bindable(&cpu, &Arg::resident_input(&v)).unwrap();
        assert!(!bound.cuda);
        assert_eq!(bound.len, 2);
        assert_eq!(bindable(&cpu, &Arg::resident_input(&v)), Some(bound));
        // Host slices are staged, never bound.
        assert_eq!(bindable(&cpu, &Arg::input(&[1f32, 2.0])), None);
    }
}

//! Launch arguments: the kinds of argument a kernel takes, made resident on
//! the device for a launch and packed into the kernel's `Params` struct
//! (docs/codegen.md: per array `const T*` and a `uint64_t` length, scalars
//! by value, C layout).
//!
//! The kind of an argument is a type, as in cudarc's `PushKernelArg<T>`:
//! each kind implements `KernelArg` (`resident_args`) — which parameter it fills, how it
//! becomes resident on the device, what happens after the launch — in one
//! place. [`Arg`] only erases the type, so that generated code can pass a
//! list. A device-resident array ([`ResidentArray`], a borrowed
//! [`DeviceVec`]) is resident already and has nothing to copy back.

use crate::launch::device_vec::{DeviceVec, ResidentArray};
use crate::launch::input_output::{Input, InputRef, Output, OutputRef};
use crate::launch::worklist_arg::{ListArg, WorklistArg};
use crate::spec::{ParamKind, Scalar, ScalarType, ScalarValue};

/// A host slice of a scalar type, erased to bytes.
#[derive(Debug, Clone, Copy)]
pub struct HostSlice<'a> {
    pub bytes: &'a [u8],
    pub ty: ScalarType,
}

/// A mutable host slice of a scalar type, erased to bytes.
#[derive(Debug)]
pub struct HostSliceMut<'a> {
    pub bytes: &'a mut [u8],
    pub ty: ScalarType,
}

impl HostSlice<'_> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.ty.size()
    }
    /// Whether the slice has no element.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl HostSliceMut<'_> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.ty.size()
    }
    /// Whether the slice has no element.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// One launch argument, in [`KernelSpec::params`](crate::spec::KernelSpec::params) order.
#[derive(Debug)]
pub enum Arg<'a> {
    Input(HostSlice<'a>),
    Output(HostSliceMut<'a>),
    Scalar(ScalarValue),
    /// An array already on the device (input, output or shared).
    Resident(ResidentArray<'a>),
    /// A host array a push kernel updates through atomics (`&[Atomic<T>]`):
    /// uploaded and downloaded like an output.
    Shared(SharedSlice<'a>),
    /// A worklist the kernel pushes to.
    Worklist(ListArg<'a>),
}

/// A host array of a shared-array parameter (`&[Atomic<T>]`), erased to
/// bytes.
#[derive(Debug)]
pub struct SharedSlice<'a>(pub HostSliceMut<'a>);

impl<'a> Arg<'a> {
    /// A read-only array argument.
    pub fn input<T: Scalar>(s: &'a [T]) -> Self {
        // SAFETY: `T: Scalar` is plain-old-data; the byte view covers exactly `s`.
        let bytes = unsafe {
            std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s))
        };
        Arg::Input(HostSlice { bytes, ty: T::TYPE })
    }

    /// An output array argument.
    pub fn output<T: Scalar>(s: &'a mut [T]) -> Self {
        let len = std::mem::size_of_val(s);
        // SAFETY: as above; writes through the view keep valid values per `Scalar`'s contract.
        let bytes = unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), len) };
        Arg::Output(HostSliceMut { bytes, ty: T::TYPE })
    }

    /// A scalar argument.
    pub fn scalar<T: Scalar>(v: T) -> Self {
        Arg::Scalar(v.value())
    }

    /// A read-only array argument, on the host or already on the device.
    pub fn from_input<T: Scalar, I: Input<T> + ?Sized>(x: &'a I) -> Self {
        match x.input_ref() {
            InputRef::Host(s) => Arg::input(s),
            InputRef::Resident(v) => Arg::resident_input(v),
        }
    }

    /// An output array argument, on the host or already on the device.
    pub fn from_output<T: Scalar, O: Output<T> + ?Sized>(y: &'a mut O) -> Self {
        match y.output_ref() {
            OutputRef::Host(s) => Arg::output(s),
            OutputRef::Resident(v) => Arg::resident_output(v),
        }
    }

    /// A device-resident array the kernel reads.
    pub fn resident_input<T: Scalar>(v: &'a DeviceVec<T>) -> Self {
        Arg::Resident(v.as_arg(ParamKind::Input))
    }

    /// A device-resident array the kernel writes. A shared borrow: the
    /// launch writes device memory (or, on the CPU, goes through the twin's
    /// `SharedOut`), and prepared launches check that no other argument is
    /// the same array.
    pub fn resident_output<T: Scalar>(v: &'a DeviceVec<T>) -> Self {
        Arg::Resident(v.as_arg(ParamKind::Output))
    }

    /// A host array of a shared-array parameter (`&[Atomic<T>]`).
    pub fn shared<T: Scalar>(s: &'a mut [T]) -> Self {
        match Arg::output(s) {
            Arg::Output(s) => Arg::Shared(SharedSlice(s)),
            _ => unreachable!("`Arg::output` makes an output"),
        }
    }

    /// A shared-array argument, on the host or already on the device.
    pub fn from_shared<T: Scalar, O: Output<T> + ?Sized>(y: &'a mut O) -> Self {
        match y.output_ref() {
            OutputRef::Host(s) => Arg::shared(s),
            OutputRef::Resident(v) => Arg::resident_shared(v),
        }
    }

    /// A device-resident array the kernel updates through atomics (a
    /// shared borrow, as for [`Arg::resident_output`]).
    pub fn resident_shared<T: Scalar>(v: &'a DeviceVec<T>) -> Self {
        Arg::Resident(v.as_arg(ParamKind::Shared))
    }

    /// A worklist argument (a [`crate::DeviceWorklist`], or on the CPU
    /// backend a runtime `Worklist`).
    pub fn from_worklist<W: WorklistArg + ?Sized>(w: &'a W) -> Self {
        Arg::Worklist(w.list_arg())
    }

    /// Whether the launch copies results back into this argument (a host
    /// output or shared array), which makes it wait for the device.
    pub(crate) fn copies_back(&self) -> bool {
        matches!(self, Arg::Output(_) | Arg::Shared(_))
    }
}

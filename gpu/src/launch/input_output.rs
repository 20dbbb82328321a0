//! The argument traits that let a generated `launch` take either a host
//! slice or a device-resident array per parameter ([`Input`], [`Output`]).

use crate::launch::device_vec::DeviceVec;
use crate::spec::Scalar;

/// A read-only array argument: a host slice, or an array already on the
/// device. Generated `launch` functions take `&impl Input<T>` per input.
pub trait Input<T: Scalar> {
    /// Which of the two this is.
    fn input_ref(&self) -> InputRef<'_, T>;
}

/// An output array argument: a host slice (downloaded after the launch) or
/// an array on the device (written in place). Generated `launch` functions
/// take `&mut impl Output<T>` per output.
pub trait Output<T: Scalar> {
    /// Which of the two this is.
    fn output_ref(&mut self) -> OutputRef<'_, T>;
}

/// An [`Input`] resolved.
#[derive(Debug)]
pub enum InputRef<'a, T: Scalar> {
    Host(&'a [T]),
    Resident(&'a DeviceVec<T>),
}

/// An [`Output`] resolved.
#[derive(Debug)]
pub enum OutputRef<'a, T: Scalar> {
    Host(&'a mut [T]),
    Resident(&'a mut DeviceVec<T>),
}

impl<T: Scalar> Input<T> for [T] {
    fn input_ref(&self) -> InputRef<'_, T> {
        InputRef::Host(self)
    }
}
impl<T: Scalar> Input<T> for Vec<T> {
    fn input_ref(&self) -> InputRef<'_, T> {
        InputRef::Host(self)
    }
}
impl<T: Scalar, const N: usize> Input<T> for [T; N] {
    fn input_ref(&self) -> InputRef<'_, T> {
        InputRef::Host(self)
    }
}
impl<T: Scalar> Input<T> for DeviceVec<T> {
    fn input_ref(&self) -> InputRef<'_, T> {
        InputRef::Resident(self)
    }
}
impl<T: Scalar, I: Input<T> + ?Sized> Input<T> for &I {
    fn input_ref(&self) -> InputRef<'_, T> {
        (**self).input_ref()
    }
}
impl<T: Scalar, I: Input<T> + ?Sized> Input<T> for &mut I {
    fn input_ref(&self) -> InputRef<'_, T> {
        (**self).input_ref()
    }
}

impl<T: Scalar> Output<T> for [T] {
    fn output_ref(&mut self) -> OutputRef<'_, T> {
        OutputRef::Host(self)
    }
}
impl<T: Scalar> Output<T> for Vec<T> {
    fn output_ref(&mut self) -> OutputRef<'_, T> {
        OutputRef::Host(self)
    }
}
impl<T: Scalar, const N: usize> Output<T> for [T; N] {
    fn output_ref(&mut self) -> OutputRef<'_, T> {
        OutputRef::Host(self)
    }
}
impl<T: Scalar> Output<T> for DeviceVec<T> {
    fn output_ref(&mut self) -> OutputRef<'_, T> {
        OutputRef::Resident(self)
    }
}
impl<T: Scalar, O: Output<T> + ?Sized> Output<T> for &mut O {
    fn output_ref(&mut self) -> OutputRef<'_, T> {
        (**self).output_ref()
    }
}

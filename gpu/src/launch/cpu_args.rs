//! The CPU backend's view of launch arguments: what generated `launch`
//! functions call per parameter ([`host_input`], [`host_output`],
//! [`host_shared`]), and a prepared launch's arguments checked once
//! ([`CpuArgs`]).

use crate::launch::arg::Arg;
use crate::launch::device_vec::{Place, ResidentArray};
use crate::launch::input_output::{Input, InputRef, Output, OutputRef};
use crate::launch::placement::{check_placement, check_unaliased, misplaced, Target};
use crate::launch::resident_args::check_args;
use crate::launch::worklist_arg::{ListArg, ListPlace};
use crate::spec::{KernelSpec, ParamKind, Scalar, ScalarType};
use std::marker::PhantomData;
use warpfit_runtime::exec::SharedOut;
use warpfit_runtime::worklist::{Atomic, AtomicScalar, Worklist};
use warpfit_runtime::{Error, Result};

/// Input `i` of a launch of `spec` on the CPU: the host slice, or a CPU
/// `DeviceVec`'s storage in place; a GPU's array is an error naming the
/// parameter (generated `launch`).
///
/// # Safety
///
/// The result must not outlive the launch it is made for, and the launch
/// must run to completion on this thread: a prepared launch may hold the
/// same `DeviceVec` as an output (a shared borrow) and write it when run.
pub unsafe fn host_input<'a, T: Scalar, I: Input<T> + ?Sized>(
    spec: &KernelSpec,
    i: usize,
    x: &'a I,
) -> Result<&'a [T]> {
    match x.input_ref() {
        InputRef::Host(s) => Ok(s),
        InputRef::Resident(v) => v
            .host()
            .ok_or_else(|| misplaced(spec, i, &v.location(), "the CPU")),
    }
}

/// The CPU twin's view of shared-array argument `i` of `spec`
/// (`&[Atomic<T>]`): a host slice or a CPU `DeviceVec`'s storage, viewed
/// as atomics for the launch.
///
/// # Errors
/// A `DeviceVec` of a GPU (naming the parameter and both places).
pub fn host_shared<'a, T: Scalar + AtomicScalar, O: Output<T> + ?Sized>(
    spec: &KernelSpec,
    i: usize,
    y: &'a mut O,
) -> Result<&'a [Atomic<T>]> {
    host_output(spec, i, y).map(Atomic::from_mut_slice)
}

/// Output `i` of a launch of `spec` on the CPU, as [`host_input`]. Safe:
/// the exclusive borrow rules out every other access for its lifetime.
pub fn host_output<'a, T: Scalar, O: Output<T> + ?Sized>(
    spec: &KernelSpec,
    i: usize,
    y: &'a mut O,
) -> Result<&'a mut [T]> {
    match y.output_ref() {
        OutputRef::Host(s) => Ok(s),
        OutputRef::Resident(v) => {
            let location = v.location();
            v.host_mut()
                .ok_or_else(|| misplaced(spec, i, &location, "the CPU"))
        }
    }
}

/// The arguments of a prepared launch on the CPU backend, checked once:
/// typed views of its resident arrays for the CPU twin, made per run.
pub struct CpuArgs<'a> {
    pub(super) spec: &'static KernelSpec,
    args: Vec<Arg<'a>>,
    /// Not `Sync`/`Send`: the views below are made and used on one thread.
    _one_thread: PhantomData<*const ()>,
}

impl<'a> CpuArgs<'a> {
    pub(crate) fn new(spec: &'static KernelSpec, args: Vec<Arg<'a>>) -> Result<Self> {
        check_args(spec, &args)?;
        check_placement(spec, &args, Target::Cpu)?;
        check_unaliased(spec, &args)?;
        Ok(CpuArgs {
            spec,
            args,
            _one_thread: PhantomData,
        })
    }

    fn host_array(&self, i: usize, kind: ParamKind, ty: ScalarType) -> Result<(usize, usize)> {
        match self.args.get(i) {
            Some(Arg::Resident(ResidentArray {
                kind: k,
                ty: t,
                len,
                place: Place::Host { addr },
            })) if *k == kind && *t == ty => Ok((*addr, *len)),
            _ => Err(Error::invalid(format!(
                "kernel `{}`: argument {i} of the prepared launch is not a CPU DeviceVec of {}",
                self.spec.name,
                kind.rust_type(ty)
            ))),
        }
    }

    /// Input `i` as a slice, for one run of the twin.
    pub fn input<T: Scalar>(&self, i: usize) -> Result<&[T]> {
        let (addr, len) = self.host_array(i, ParamKind::Input, T::TYPE)?;
        // SAFETY: `addr, len` are the cells of a CPU `DeviceVec<T>` (type
        // checked above) borrowed for `'a`; `new` checked that no output
        // of this launch is that array, and nothing else writes it while
        // it is borrowed shared (its writes take `&mut`).
        Ok(unsafe { std::slice::from_raw_parts(addr as *const T, len) })
    }

    /// Scalar `i`'s value.
    pub fn scalar<T: Scalar>(&self, i: usize) -> Result<T> {
        match self.args.get(i) {
            Some(Arg::Scalar(v)) if v.ty() == T::TYPE => {
                let (bytes, n) = v.to_ne_bytes();
                debug_assert_eq!(n, std::mem::size_of::<T>());
                // SAFETY: `bytes` holds a value of `T` (type checked above)
                // in native order, `bool` as 0 or 1; `T` is plain-old-data.
                Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
            }
            _ => Err(Error::invalid(format!(
                "kernel `{}`: argument {i} of the prepared launch is not a scalar of {}",
                self.spec.name,
                T::TYPE.rust_name()
            ))),
        }
    }

    /// Shared-array argument `i` as the twin's atomics.
    ///
    /// # Errors
    /// The argument is not a CPU `DeviceVec` of `T` given as a shared array.
    pub fn shared<T: Scalar + AtomicScalar>(&self, i: usize) -> Result<&[Atomic<T>]> {
        let (addr, len) = self.host_array(i, ParamKind::Shared, T::TYPE)?;
        // SAFETY: the address and length are a CPU `DeviceVec`'s cells,
        // checked by `new` to be of `T` and borrowed for `'a`; `Atomic<T>`
        // has `T`'s layout, and while the view lives every access to the
        // elements is atomic (the twin's intrinsics), the array not being
        // passed as any other argument (`check_unaliased`).
        Ok(unsafe { std::slice::from_raw_parts(addr as *const Atomic<T>, len) })
    }

    /// Worklist argument `i` (a CPU list).
    ///
    /// # Errors
    /// The argument is not a worklist of the CPU backend.
    pub fn worklist(&self, i: usize) -> Result<&Worklist> {
        match self.args.get(i) {
            Some(Arg::Worklist(ListArg {
                place: ListPlace::Host(w),
            })) => Ok(w),
            _ => Err(Error::invalid(format!(
                "kernel `{}`: argument {i} of the prepared launch is not a worklist of the CPU backend",
                self.spec.name
            ))),
        }
    }

    /// Output `i` behind the twin's `SharedOut`, for one run.
    pub fn output<T: Scalar>(&self, i: usize) -> Result<SharedOut<'_, T>> {
        let (addr, len) = self.host_array(i, ParamKind::Output, T::TYPE)?;
        // SAFETY: the cells of a CPU `DeviceVec<T>` borrowed for `'a`,
        // which permit writes through a shared borrow; `new` checked that
        // no other argument is that array, no method of `DeviceVec` keeps a
        // view past its call, and `CpuArgs` is not `Sync`, so the only
        // accesses while the result lives are the twin's, whose
        // owner-computes rule `SharedOut` carries.
        let slice = unsafe { std::slice::from_raw_parts_mut(addr as *mut T, len) };
        Ok(SharedOut::new(slice))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::device::Device;
    use crate::spec::X_TO_Y as SPEC;

    #[test]
    fn cpu_args_give_typed_views() {
        let d = Device::cpu();
        let x = d.upload(&[1.0f32, 2.0]).unwrap();
        let y = d.alloc::<f32>(2).unwrap();
        let a = CpuArgs::new(
            &SPEC,
            vec![Arg::resident_input(&x), Arg::resident_output(&y)],
        )
        .unwrap();
        assert_eq!(a.input::<f32>(0).unwrap(), [1.0, 2.0]);
        let out = a.output::<f32>(1).unwrap();
        // SAFETY: one thread, index 1 owned here.
        unsafe { out.set(1, 9.0, "y").unwrap() };
        assert_eq!(y.to_vec().unwrap(), [0.0, 9.0]);
        let e = a.input::<f64>(0).unwrap_err().to_string();
        assert!(e.contains("argument 0 of the prepared launch"), "{e}");
        assert!(a.output::<f32>(0).is_err());
    }
}

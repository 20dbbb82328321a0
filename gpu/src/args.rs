//! Launch arguments: the kinds of argument a kernel takes, made resident on
//! the device for a launch and packed into the kernel's `Params` struct
//! (docs/codegen.md: per array `const T*` and a `uint64_t` length, scalars
//! by value, C layout).
//!
//! The kind of an argument is a type, as in cudarc's `PushKernelArg<T>`:
//! each kind implements [`KernelArg`] — which parameter it fills, how it
//! becomes resident on the device, what happens after the launch — in one
//! place. [`Arg`] only erases the type, so that generated code can pass a
//! list. A device-resident array ([`ResidentArray`], a borrowed
//! [`DeviceVec`]) is resident already and has nothing to copy back.

use crate::abi::{LaunchArgs, WorklistRef};
use crate::buffer::DeviceBuffer;
use crate::device::CudaDevice;
use crate::resident::{DeviceVec, Input, InputRef, Output, OutputRef, Place, ResidentArray};
use crate::spec::{KernelSpec, ParamKind, Scalar, ScalarType, ScalarValue};
use crate::worklist::{ListArg, ListPlace, WorklistArg};
use cudarc::driver::DeviceRepr;
use warpfit_runtime::{Error, Result};

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

/// One launch argument, in [`KernelSpec::params`] order.
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

    /// The argument as its kind.
    fn kind(&self) -> &dyn KernelArg {
        match self {
            Arg::Input(s) => s,
            Arg::Output(s) => s,
            Arg::Scalar(v) => v,
            Arg::Resident(r) => r,
            Arg::Shared(s) => s,
            Arg::Worklist(w) => w,
        }
    }

    fn kind_mut(&mut self) -> &mut dyn KernelArg {
        match self {
            Arg::Input(s) => s,
            Arg::Output(s) => s,
            Arg::Scalar(v) => v,
            Arg::Resident(r) => r,
            Arg::Shared(s) => s,
            Arg::Worklist(w) => w,
        }
    }
}

/// One kind of launch argument.
pub(crate) trait KernelArg {
    /// The parameter kind and element type this argument fills.
    fn signature(&self) -> (ParamKind, ScalarType);

    /// The argument on `dev` for a launch.
    fn make_resident(&self, dev: &CudaDevice) -> Result<Resident>;

    /// After the launch completed: the results back where the caller reads
    /// them. Nothing for arguments the kernel only reads.
    fn copy_back(&mut self, _dev: &CudaDevice, _resident: &Resident) -> Result<()> {
        Ok(())
    }
}

/// An argument as a launch holds it on the device.
#[derive(Debug)]
pub(crate) enum Resident {
    /// An array: `Params` holds its address and element count.
    Array { buffer: DeviceBuffer<u8>, len: u64 },
    /// An array the caller keeps on the device (a borrowed `DeviceVec`).
    Borrowed { ptr: u64, len: u64 },
    /// A scalar: `Params` holds its value.
    Scalar(ScalarValue),
    /// A device worklist: `Params` holds its `WorklistRef`.
    List(WorklistRef),
}

/// A host array the kernel reads: uploaded for the launch.
impl KernelArg for HostSlice<'_> {
    fn signature(&self) -> (ParamKind, ScalarType) {
        (ParamKind::Input, self.ty)
    }

    fn make_resident(&self, dev: &CudaDevice) -> Result<Resident> {
        Ok(Resident::Array {
            buffer: DeviceBuffer::upload(dev, self.bytes)?,
            len: self.len() as u64,
        })
    }
}

/// A host array the kernel writes: uploaded too (an epilogue may read it),
/// downloaded after the launch.
impl KernelArg for HostSliceMut<'_> {
    fn signature(&self) -> (ParamKind, ScalarType) {
        (ParamKind::Output, self.ty)
    }

    fn make_resident(&self, dev: &CudaDevice) -> Result<Resident> {
        Ok(Resident::Array {
            buffer: DeviceBuffer::upload(dev, self.bytes)?,
            len: self.len() as u64,
        })
    }

    fn copy_back(&mut self, dev: &CudaDevice, resident: &Resident) -> Result<()> {
        match resident {
            Resident::Array { buffer, .. } => buffer.download(dev, self.bytes),
            Resident::Scalar(_) | Resident::Borrowed { .. } | Resident::List(_) => {
                Err(Error::invalid(
                    "a host output argument was prepared as a scalar, a device array or a worklist",
                ))
            }
        }
    }
}

/// A host array a push kernel updates: uploaded, downloaded after the
/// launch (an output under another kind).
impl KernelArg for SharedSlice<'_> {
    fn signature(&self) -> (ParamKind, ScalarType) {
        (ParamKind::Shared, self.0.ty)
    }

    fn make_resident(&self, dev: &CudaDevice) -> Result<Resident> {
        self.0.make_resident(dev)
    }

    fn copy_back(&mut self, dev: &CudaDevice, resident: &Resident) -> Result<()> {
        self.0.copy_back(dev, resident)
    }
}

/// A worklist: its device form, nothing copied (the list stays on the
/// device; a CPU list cannot take a GPU's pushes).
impl KernelArg for ListArg<'_> {
    fn signature(&self) -> (ParamKind, ScalarType) {
        (ParamKind::Worklist, ScalarType::U32)
    }

    fn make_resident(&self, dev: &CudaDevice) -> Result<Resident> {
        match self.place {
            ListPlace::Cuda { list, device } if device.ordinal() == dev.ordinal() => {
                Ok(Resident::List(list))
            }
            // `check_placement` names the parameter before this is reached.
            _ => Err(Error::invalid(
                "a worklist of another device was passed to a CUDA launch",
            )),
        }
    }
}

/// An array already on the device: its address, nothing copied either way.
impl KernelArg for ResidentArray<'_> {
    fn signature(&self) -> (ParamKind, ScalarType) {
        (self.kind, self.ty)
    }

    fn make_resident(&self, dev: &CudaDevice) -> Result<Resident> {
        match self.place {
            Place::Cuda { ptr, device } if device.ordinal() == dev.ordinal() => {
                Ok(Resident::Borrowed {
                    ptr,
                    len: self.len as u64,
                })
            }
            // `check_placement` names the parameter before this is reached.
            _ => Err(Error::invalid(
                "a DeviceVec of another device was passed to a CUDA launch",
            )),
        }
    }
}

/// A scalar, passed by value.
impl KernelArg for ScalarValue {
    fn signature(&self) -> (ParamKind, ScalarType) {
        (ParamKind::Scalar, self.ty())
    }

    fn make_resident(&self, _dev: &CudaDevice) -> Result<Resident> {
        Ok(Resident::Scalar(*self))
    }
}

/// Checks `args` against `spec.params`: count, kind and element type.
pub(crate) fn check_args(spec: &KernelSpec, args: &[Arg<'_>]) -> Result<()> {
    if args.len() != spec.params.len() {
        return Err(Error::invalid(format!(
            "kernel `{}` takes {} arguments after the task index, got {}",
            spec.name,
            spec.params.len(),
            args.len()
        )));
    }
    for (i, (p, a)) in spec.params.iter().zip(args).enumerate() {
        let (kind, ty) = a.kind().signature();
        if kind != p.kind || ty != p.ty {
            return Err(Error::invalid(format!(
                "kernel `{}`: argument {i} (`{}`) must be {}, got {}",
                spec.name,
                p.name,
                p.kind.rust_type(p.ty),
                kind.rust_type(ty)
            )));
        }
    }
    Ok(())
}

/// The arguments of a launch, resident on the device, in parameter order.
#[derive(Debug)]
pub(crate) struct ResidentArgs {
    args: Vec<Resident>,
}

impl ResidentArgs {
    /// Checks `args` against `spec` and makes each resident on `dev`.
    pub(crate) fn new(dev: &CudaDevice, spec: &KernelSpec, args: &[Arg<'_>]) -> Result<Self> {
        check_args(spec, args)?;
        crate::resident::check_placement(spec, args, crate::resident::Target::Cuda(dev))?;
        let args = args
            .iter()
            .map(|a| a.kind().make_resident(dev))
            .collect::<Result<_>>()?;
        Ok(ResidentArgs { args })
    }

    /// Packs `Params`: address and element count per array, scalars in place.
    pub(crate) fn pack(&self, dev: &CudaDevice) -> Result<ParamBlock> {
        let mut block = ParamBlock::new();
        for a in &self.args {
            match a {
                Resident::Array { buffer, len } => {
                    block.push(8, &buffer.device_ptr(dev).to_ne_bytes())?;
                    block.push(8, &len.to_ne_bytes())?;
                }
                Resident::Borrowed { ptr, len } => {
                    block.push(8, &ptr.to_ne_bytes())?;
                    block.push(8, &len.to_ne_bytes())?;
                }
                Resident::Scalar(v) => {
                    let (bytes, n) = v.to_ne_bytes();
                    block.push(n, &bytes[..n])?;
                }
                Resident::List(r) => block.push(8, &r.to_ne_bytes())?,
            }
        }
        Ok(block)
    }

    /// The element count of parameter `i`, when it is an array (a
    /// worklist's universe, the bound of its items).
    pub(crate) fn array_len(&self, i: usize) -> Option<u64> {
        match self.args.get(i)? {
            Resident::Array { len, .. } | Resident::Borrowed { len, .. } => Some(*len),
            Resident::List(r) => Some(r.universe),
            Resident::Scalar(_) => None,
        }
    }

    /// The device forms of the launch's worklist arguments, by position.
    pub(crate) fn lists(&self) -> impl Iterator<Item = (usize, &WorklistRef)> {
        self.args.iter().enumerate().filter_map(|(i, a)| match a {
            Resident::List(r) => Some((i, r)),
            _ => None,
        })
    }

    /// After the launch: every argument's results back into `args` (the
    /// outputs downloaded), which must match `spec` as the prepared ones did.
    pub(crate) fn copy_back(
        &self,
        dev: &CudaDevice,
        spec: &KernelSpec,
        args: &mut [Arg<'_>],
    ) -> Result<()> {
        check_args(spec, args)?;
        for (a, r) in args.iter_mut().zip(&self.args) {
            a.kind_mut().copy_back(dev, r)?;
        }
        Ok(())
    }
}

/// Largest `Params` struct passed by value (CUDA's kernel-parameter limit
/// is 4 KiB on every supported architecture; `LaunchArgs` takes the rest).
const MAX_PARAMS: usize = 4096 - std::mem::size_of::<LaunchArgs>();

/// The packed `Params` struct of a kernel: C layout, fields in signature
/// order, each at its natural alignment.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub(crate) struct ParamBlock {
    bytes: [u8; MAX_PARAMS],
    len: usize,
}

// SAFETY: plain bytes; CUDA copies the first `sizeof(Params)` of them, which
// `ResidentArgs::pack` laid out exactly as the device struct.
unsafe impl DeviceRepr for ParamBlock {}

impl ParamBlock {
    fn new() -> Self {
        ParamBlock {
            bytes: [0; MAX_PARAMS],
            len: 0,
        }
    }

    fn push(&mut self, align: usize, data: &[u8]) -> Result<()> {
        let at = self.len.next_multiple_of(align);
        let end = at + data.len();
        if end > MAX_PARAMS {
            return Err(Error::invalid(format!(
                "kernel parameters take more than {MAX_PARAMS} bytes"
            )));
        }
        self.bytes[at..end].copy_from_slice(data);
        self.len = end;
        Ok(())
    }

    /// The packed bytes (the struct's size, before tail padding).
    #[cfg(test)]
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_follow_c_layout() {
        let mut b = ParamBlock::new();
        b.push(8, &1u64.to_ne_bytes()).unwrap(); // const T*
        b.push(8, &2u64.to_ne_bytes()).unwrap(); // len
        let (u, n) = ScalarValue::U32(3).to_ne_bytes();
        b.push(n, &u[..n]).unwrap(); // u32 scalar
        let (t, n) = ScalarValue::Bool(true).to_ne_bytes();
        b.push(n, &t[..n]).unwrap(); // bool
        b.push(8, &4u64.to_ne_bytes()).unwrap(); // next pointer aligns to 8
        assert_eq!(b.as_bytes().len(), 32);
        assert_eq!(&b.as_bytes()[16..20], &3u32.to_ne_bytes());
        assert_eq!(b.as_bytes()[20], 1);
        assert_eq!(&b.as_bytes()[24..32], &4u64.to_ne_bytes());
    }

    #[test]
    fn too_many_parameters_are_an_error() {
        let mut b = ParamBlock::new();
        let r = (0..MAX_PARAMS / 8 + 1).try_for_each(|_| b.push(8, &0u64.to_ne_bytes()));
        let e = r.unwrap_err().to_string();
        assert!(e.contains("kernel parameters take more than"), "{e}");
    }

    #[test]
    fn each_kind_fills_its_parameter_kind() {
        let x = [1.0f32, 2.0];
        let mut y = [0u32; 3];
        let s = [Arg::input(&x), Arg::output(&mut y), Arg::scalar(true)];
        let sig: Vec<_> = s.iter().map(|a| a.kind().signature()).collect();
        assert_eq!(
            sig,
            [
                (ParamKind::Input, ScalarType::F32),
                (ParamKind::Output, ScalarType::U32),
                (ParamKind::Scalar, ScalarType::Bool)
            ]
        );
    }

    #[test]
    fn argument_mismatches_are_named() {
        use crate::spec::X_TO_Y as SPEC;
        let x = [1.0f64];
        let mut y = [0.0f32];
        let e = check_args(&SPEC, &[Arg::input(&x), Arg::output(&mut y)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("argument 0 (`x`) must be &[f32], got &[f64]"),
            "{e}"
        );
        let e = check_args(&SPEC, &[Arg::input(&x)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("takes 2 arguments after the task index, got 1"),
            "{e}"
        );
        let xs = [1.0f32];
        let e = check_args(&SPEC, &[Arg::input(&xs), Arg::scalar(1.0f32)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("argument 1 (`y`) must be &mut [f32], got f32"),
            "{e}"
        );
        assert!(check_args(&SPEC, &[Arg::input(&xs), Arg::output(&mut y)]).is_ok());
    }
}

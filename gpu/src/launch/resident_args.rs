//! Launch arguments made resident: each kind of [`Arg`] as a
//! [`KernelArg`] (which parameter it fills, how it becomes resident on the
//! device, what it copies back after the launch), the arguments checked
//! against the kernel's parameters, and packed into its `Params` block
//! (docs/codegen.md: per array `const T*` and a `uint64_t` length, scalars
//! by value, C layout).

use crate::abi::{LaunchArgs, WorklistRef};
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::launch::arg::{Arg, HostSlice, HostSliceMut, SharedSlice};
use crate::launch::device_vec::{Place, ResidentArray};
use crate::launch::placement::{check_placement, Target};
use crate::launch::worklist_arg::{ListArg, ListPlace};
use crate::spec::{KernelSpec, ParamKind, ScalarType, ScalarValue};
use cudarc::driver::DeviceRepr;
use warpfit_runtime::{Error, Result};

impl Arg<'_> {
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
        check_placement(spec, args, Target::Cuda(dev))?;
        let args = args
            .iter()
            .map(|a| a.kind().make_resident(dev))
            .collect::<Result<_>>()?;
        Ok(ResidentArgs { args })
    }

    /// These arguments with `replace`'s (parameter index, argument) in
    /// their places, all checked again against `spec` as [`ResidentArgs::new`]
    /// does: a prepared launch rebound to other per-launch arrays. A kept
    /// argument must be a borrowed array or a scalar (an array this launch
    /// copied to the device is its own, and is not shared).
    pub(crate) fn replaced(
        &self,
        dev: &CudaDevice,
        spec: &KernelSpec,
        replace: Vec<(usize, Arg<'_>)>,
    ) -> Result<Self> {
        let mut given: Vec<Option<Arg<'_>>> = (0..self.args.len()).map(|_| None).collect();
        for (i, a) in replace {
            let slot = given.get_mut(i).ok_or_else(|| {
                Error::invalid(format!("kernel `{}`: no parameter {i}", spec.name))
            })?;
            *slot = Some(a);
        }
        let args = self
            .args
            .iter()
            .zip(given)
            .enumerate()
            .map(|(i, (kept, given))| {
                if let Some(a) = given {
                    return Ok(a);
                }
                let p = spec.params.get(i).ok_or_else(|| {
                    Error::invalid(format!("kernel `{}`: no parameter {i}", spec.name))
                })?;
                match kept {
                    Resident::Borrowed { ptr, len } => Ok(Arg::Resident(ResidentArray {
                        kind: p.kind,
                        ty: p.ty,
                        len: usize::try_from(*len)
                            .map_err(|_| Error::invalid("array length overflows usize"))?,
                        place: Place::Cuda { ptr: *ptr, device: dev },
                    })),
                    Resident::Scalar(v) => Ok(Arg::Scalar(*v)),
                    Resident::Array { .. } | Resident::List(_) => Err(Error::invalid(format!(
                        "kernel `{}`: `{}` was copied to the device for this launch (or is a worklist), so the launch cannot be rebound without it",
                        spec.name, p.name
                    ))),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Self::new(dev, spec, &args)
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

//! What a generated kernel tells the device layer about itself, and the
//! type-erased arguments a launch passes. `#[nested_reduce]` emits a
//! [`KernelSpec`] per kernel; its `launch` turns each argument into an [`Arg`].

/// The element and scalar types of the kernel language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarType {
    F32,
    F64,
    I32,
    U32,
    I64,
    U64,
    U8,
    Bool,
}

impl ScalarType {
    /// Size in bytes.
    pub const fn size(self) -> usize {
        match self {
            ScalarType::F64 | ScalarType::I64 | ScalarType::U64 => 8,
            ScalarType::F32 | ScalarType::I32 | ScalarType::U32 => 4,
            ScalarType::U8 | ScalarType::Bool => 1,
        }
    }

    /// The Rust spelling.
    pub const fn rust_name(self) -> &'static str {
        match self {
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::I32 => "i32",
            ScalarType::U32 => "u32",
            ScalarType::I64 => "i64",
            ScalarType::U64 => "u64",
            ScalarType::U8 => "u8",
            ScalarType::Bool => "bool",
        }
    }

    /// The CUDA C++ spelling (fixed-width types from the device library).
    pub const fn cuda_name(self) -> &'static str {
        match self {
            ScalarType::F32 => "float",
            ScalarType::F64 => "double",
            ScalarType::I32 => "int32_t",
            ScalarType::U32 => "uint32_t",
            ScalarType::I64 => "int64_t",
            ScalarType::U64 => "uint64_t",
            ScalarType::U8 => "uint8_t",
            ScalarType::Bool => "bool",
        }
    }
}

/// A Rust type usable as a kernel element or scalar.
///
/// # Safety
/// Implementors are plain-old-data of size [`ScalarType::size`] whose every
/// value the GPU writes (for `bool`: 0 or 1) is a valid bit pattern.
pub unsafe trait Scalar: Copy + Send + Sync + 'static {
    const TYPE: ScalarType;
    /// This value as a typed scalar argument.
    fn value(self) -> ScalarValue;
}

/// A scalar argument's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScalarValue {
    F32(f32),
    F64(f64),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    U8(u8),
    Bool(bool),
}

macro_rules! scalars {
    ($($t:ty => $v:ident),*) => {$(
        // SAFETY: primitive plain-old-data; the GPU writes only values of the type.
        unsafe impl Scalar for $t {
            const TYPE: ScalarType = ScalarType::$v;
            fn value(self) -> ScalarValue { ScalarValue::$v(self) }
        }
    )*};
}
scalars!(f32 => F32, f64 => F64, i32 => I32, u32 => U32, i64 => I64, u64 => U64, u8 => U8, bool => Bool);

/// The role of a kernel parameter after the task index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// `&[T]`: read-only global array.
    Input,
    /// `&mut [T]`: output, accessed only at the task index.
    Output,
    /// `T`: a scalar passed by value.
    Scalar,
}

/// One parameter of a generated kernel, in signature order (task index excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    pub name: &'static str,
    pub ty: ScalarType,
    pub kind: ParamKind,
}

/// CUDA of one `#[device_fn]`, emitted next to the Rust function so that kernels
/// in other modules or crates can pull it in (a macro cannot read other items).
#[derive(Debug)]
pub struct DeviceFnSource {
    pub name: &'static str,
    /// `__device__` definition, in namespace `warpfit_user`.
    pub cuda: &'static str,
    /// Device functions this one calls; emitted before it.
    pub deps: &'static [&'static DeviceFnSource],
}

/// Everything the device layer needs to compile and launch a generated kernel.
#[derive(Debug, Clone, Copy)]
pub struct KernelSpec {
    pub name: &'static str,
    /// Generated CUDA C++ (the kernel's functor; the device library supplies entry points).
    pub cuda_source: &'static str,
    /// `#[device_fn]`s the kernel calls, directly or not.
    pub device_fns: &'static [&'static DeviceFnSource],
    pub params: &'static [ParamSpec],
    /// Type of the folded value.
    pub acc: ScalarType,
}

impl KernelSpec {
    /// The full translation unit after the device library include: device
    /// functions (each once, dependencies first), then the kernel.
    pub fn assembled_source(&self) -> String {
        fn visit(f: &DeviceFnSource, seen: &mut Vec<&'static str>, out: &mut String) {
            if seen.contains(&f.name) {
                return;
            }
            seen.push(f.name);
            for d in f.deps {
                visit(d, seen, out);
            }
            out.push_str(f.cuda);
            out.push('\n');
        }
        let mut seen = Vec::new();
        let mut out = String::new();
        for f in self.device_fns {
            visit(f, &mut seen, &mut out);
        }
        out.push_str(self.cuda_source);
        out
    }
}

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
}

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
}

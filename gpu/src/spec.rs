//! What a generated kernel tells the device layer about itself:
//! `#[nested_reduce]` emits a [`KernelSpec`] per kernel, with a
//! [`ParamSpec`] per parameter; its `launch` turns each argument into an
//! [`Arg`](crate::Arg) (`launch/arg.rs`).

use crate::config::{Decomposition, LaunchConfig, Split};

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

/// The type of a kernel's folded value: one scalar, or a Rust tuple of 1
/// to 8 of them, which the device holds as a `warpfit::tuple`
/// (gpu/cuda/tuple.cuh).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccType {
    Scalar(ScalarType),
    Tuple(&'static [ScalarType]),
}

impl AccType {
    /// `sizeof` of the device's value: a split task's partial in scratch.
    /// A `warpfit::tuple` is its head, then the tuple of the rest at that
    /// tuple's alignment, the whole padded to the largest alignment (each
    /// scalar is aligned to its size). The generated kernel checks the same
    /// figure with a `static_assert`.
    pub fn size(self) -> usize {
        /// (size, alignment) of the tuple of `elems`.
        fn nested(elems: &[ScalarType]) -> (usize, usize) {
            match elems {
                [] => (0, 1),
                [one] => (one.size(), one.size()),
                [head, rest @ ..] => {
                    let (tail, tail_align) = nested(rest);
                    let align = head.size().max(tail_align);
                    let end = head.size().div_ceil(tail_align) * tail_align + tail;
                    (end.div_ceil(align) * align, align)
                }
            }
        }
        match self {
            AccType::Scalar(t) => t.size(),
            AccType::Tuple(elems) => nested(elems).0,
        }
    }

    /// The Rust spelling (`f32`, `(f32, u32)`).
    pub fn rust_name(self) -> String {
        match self {
            AccType::Scalar(t) => t.rust_name().to_string(),
            AccType::Tuple(elems) => {
                let names: Vec<_> = elems.iter().map(|t| t.rust_name()).collect();
                let comma = if elems.len() == 1 { "," } else { "" };
                format!("({}{comma})", names.join(", "))
            }
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

impl ScalarValue {
    /// The value's type.
    pub fn ty(self) -> ScalarType {
        match self {
            ScalarValue::F32(_) => ScalarType::F32,
            ScalarValue::F64(_) => ScalarType::F64,
            ScalarValue::I32(_) => ScalarType::I32,
            ScalarValue::U32(_) => ScalarType::U32,
            ScalarValue::I64(_) => ScalarType::I64,
            ScalarValue::U64(_) => ScalarType::U64,
            ScalarValue::U8(_) => ScalarType::U8,
            ScalarValue::Bool(_) => ScalarType::Bool,
        }
    }

    /// The value's bytes as the device reads them (native order; `bool`
    /// as one byte, 0 or 1).
    pub(crate) fn to_ne_bytes(self) -> ([u8; 8], usize) {
        let mut out = [0u8; 8];
        let n = match self {
            ScalarValue::F32(x) => put(&mut out, &x.to_ne_bytes()),
            ScalarValue::F64(x) => put(&mut out, &x.to_ne_bytes()),
            ScalarValue::I32(x) => put(&mut out, &x.to_ne_bytes()),
            ScalarValue::U32(x) => put(&mut out, &x.to_ne_bytes()),
            ScalarValue::I64(x) => put(&mut out, &x.to_ne_bytes()),
            ScalarValue::U64(x) => put(&mut out, &x.to_ne_bytes()),
            ScalarValue::U8(x) => put(&mut out, &[x]),
            ScalarValue::Bool(x) => put(&mut out, &[u8::from(x)]),
        };
        (out, n)
    }
}

fn put(out: &mut [u8; 8], bytes: &[u8]) -> usize {
    out[..bytes.len()].copy_from_slice(bytes);
    bytes.len()
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
    /// `&[Atomic<T>]`: a shared array, updated by any task through the
    /// atomic intrinsics (`T` one of f32, f64, i32, u32, i64, u64).
    Shared,
    /// `&Worklist`: pushed to (its element type is `U32`, the items').
    Worklist,
}

impl ParamKind {
    /// The Rust spelling of a parameter of this kind over `ty`, for errors.
    pub fn rust_type(self, ty: ScalarType) -> String {
        match self {
            ParamKind::Input => format!("&[{}]", ty.rust_name()),
            ParamKind::Output => format!("&mut [{}]", ty.rust_name()),
            ParamKind::Scalar => ty.rust_name().to_string(),
            ParamKind::Shared => format!("&[Atomic<{}>]", ty.rust_name()),
            ParamKind::Worklist => "&Worklist".to_string(),
        }
    }

    /// Whether the kernel writes arguments of this kind (so no other
    /// argument of a launch may be the same array).
    pub fn writes(self) -> bool {
        matches!(self, ParamKind::Output | ParamKind::Shared)
    }
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
    pub acc: AccType,
    /// A per-task map (a body without a nested pattern): every task's
    /// fine-task range is empty, so there is no work to spread and the
    /// CUDA launch runs one thread per task whatever the configured
    /// decomposition and split (see [`KernelSpec::launch_config`]).
    pub elementwise: bool,
    /// A push kernel whose `for_each` is its last statement: a frontier
    /// launch may hand a long item's fine tasks to the whole grid (work
    /// donation, [`CudaRounds::donate`](crate::CudaRounds::donate)), since
    /// no epilogue has to wait for them.
    pub donates: bool,
    /// How the kernel reads the index array it gathers through: as
    /// declared, or (a throttled handle's layouts) as 16-bit offsets from
    /// the task. Generated kernels say [`IndexEncoding::Plain`].
    pub index_encoding: IndexEncoding,
    /// A 2-D kernel (`#[nested_reduce(columns = k)]`, run as its flattened
    /// tasks `row·k + j`): the position in [`KernelSpec::params`] of its
    /// column count `k`, which a launch reads there to spread the rows'
    /// pieces over the columns (`launch/column_split.rs`). `None` for other
    /// kernels.
    pub columns: Option<usize>,
    /// A 2-D kernel whose map a validation launch may check at each row's
    /// first and last column only: each of its loads is either the same
    /// for every column or at `base + j` (`base` the same for every
    /// column, the sum 64-bit), and nothing else that can fault (a
    /// division, a `#[device_fn]` call, a condition guarding a load)
    /// depends on the column. A launch of many columns then validates
    /// first and folds with its loads unchecked (`launch/validation.rs`).
    /// Decided by the macro (`macros/src/column_checks.rs`).
    pub checks_at_end_columns: bool,
}

/// How a launch reads a kernel's gather index array (`col` in
/// `x[col[k] as usize]`; gpu/cuda/index.cuh).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IndexEncoding {
    /// One element of the declared type per fine task.
    #[default]
    Plain,
    /// One `i16` per fine task: the index minus the task's. A throttled
    /// handle holds a layout so where every entry fits (a mesh or a
    /// geometric graph in a local numbering), which saves 2 of the 8 bytes
    /// an f32 SpMV streams per nonzero.
    Delta16,
}

impl IndexEncoding {
    /// What a translation unit of a launch in this encoding starts with:
    /// the define `index.cuh` reads, before the device library.
    pub fn unit_prefix(self) -> &'static str {
        match self {
            IndexEncoding::Plain => "",
            IndexEncoding::Delta16 => "#define WARPFIT_INDEX_DELTA16 1\n",
        }
    }
}

impl KernelSpec {
    /// The options a launch of this kernel runs with: `config` as given,
    /// except for a per-task map, which runs [`Decomposition::Thread`]
    /// without a split. Its tasks have no fine tasks, so every
    /// decomposition computes the same thing; `Thread` does it with the
    /// fewest instructions, and skipping the split skips the size kernel
    /// and its read-back, which would only find empty ranges.
    pub fn launch_config(&self, config: &LaunchConfig) -> LaunchConfig {
        if self.elementwise {
            LaunchConfig {
                decomposition: Decomposition::Thread,
                split: Split::Never,
                ..*config
            }
        } else {
            *config
        }
    }

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

/// A kernel `k(x: &[f32], y: &mut [f32])`, for the crate's unit tests.
#[cfg(test)]
pub(crate) static X_TO_Y: KernelSpec = KernelSpec {
    name: "k",
    cuda_source: "",
    device_fns: &[],
    params: &[
        ParamSpec {
            name: "x",
            ty: ScalarType::F32,
            kind: ParamKind::Input,
        },
        ParamSpec {
            name: "y",
            ty: ScalarType::F32,
            kind: ParamKind::Output,
        },
    ],
    acc: AccType::Scalar(ScalarType::F32),
    elementwise: false,
    donates: false,
    index_encoding: IndexEncoding::Plain,
    columns: None,
    checks_at_end_columns: false,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(elementwise: bool) -> KernelSpec {
        KernelSpec {
            name: "k",
            cuda_source: "",
            device_fns: &[],
            params: &[],
            acc: AccType::Scalar(ScalarType::U8),
            elementwise,
            donates: false,
            index_encoding: IndexEncoding::Plain,
            columns: None,
            checks_at_end_columns: false,
        }
    }

    #[test]
    fn tuple_sizes_follow_the_device_layout() {
        use ScalarType::*;
        let size = |e: &'static [ScalarType]| AccType::Tuple(e).size();
        assert_eq!(size(&[F32]), 4);
        assert_eq!(size(&[F32, U32]), 8);
        assert_eq!(size(&[F64, U32]), 16);
        // u8, then the tuple (f32, u8) of size 8 at 4: 12.
        assert_eq!(size(&[U8, F32, U8]), 12);
        // bool, then (f64,) at 8: 16.
        assert_eq!(size(&[Bool, F64]), 16);
        assert_eq!(size(&[F64, F64, F64, F64, F64]), 40);
        assert_eq!(size(&[U8, U8, U8]), 3);
        assert_eq!(AccType::Scalar(F64).size(), 8);
        assert_eq!(AccType::Tuple(&[F32, U32]).rust_name(), "(f32, u32)");
        assert_eq!(AccType::Tuple(&[F64]).rust_name(), "(f64,)");
    }

    #[test]
    fn per_task_maps_run_one_thread_per_task_without_a_split() {
        let config = LaunchConfig {
            decomposition: Decomposition::SubWarp(8),
            split: Split::Budget(64),
            cte_serial_max: 3,
        };
        assert_eq!(spec(false).launch_config(&config), config);
        assert_eq!(
            spec(true).launch_config(&config),
            LaunchConfig {
                decomposition: Decomposition::Thread,
                split: Split::Never,
                cte_serial_max: 3,
            }
        );
    }
}

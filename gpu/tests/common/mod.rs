//! Hand-written kernel functors that follow docs/codegen.md exactly, with
//! the `KernelSpec`s `#[nested_reduce]` would emit for them. They stand in
//! for generated kernels in the device layer's tests.
#![allow(dead_code)]

use warpfit_gpu::__private::{AccType, KernelSpec, ParamKind, ParamSpec, ScalarType};

// How a test that returns early for want of a GPU says so (shared with the
// root crate's GPU suites).
#[path = "../../../tests/gpu_common/skip.rs"]
pub mod skip;

const fn p(name: &'static str, ty: ScalarType, kind: ParamKind) -> ParamSpec {
    ParamSpec { name, ty, kind }
}

#[path = "../fixtures/spmv_f32.rs"]
mod spmv_f32;
/// The benchmark example's spec over `fixtures/spmv_f32.cu`: one copy for both.
pub use spmv_f32::SPMV_F32;
#[path = "../fixtures/spmv_add_f32.rs"]
mod spmv_add_f32;
/// `y += A·x`, the benchmark's cache-fit slices.
pub use spmv_add_f32::SPMV_ADD_F32;

pub static SPMV_F64: KernelSpec = KernelSpec {
    name: "spmv_f64",
    cuda_source: include_str!("../fixtures/spmv_f64.cu"),
    device_fns: &[],
    params: &[
        p("row_ptr", ScalarType::U32, ParamKind::Input),
        p("col", ScalarType::U32, ParamKind::Input),
        p("val", ScalarType::F64, ParamKind::Input),
        p("x", ScalarType::F64, ParamKind::Input),
        p("y", ScalarType::F64, ParamKind::Output),
    ],
    acc: AccType::Scalar(ScalarType::F64),
    elementwise: false,
    donates: false,
    index_encoding: warpfit_gpu::__private::IndexEncoding::Plain,
    columns: None,
    checks_at_end_columns: false,
};

pub static RELAX: KernelSpec = KernelSpec {
    name: "relax",
    cuda_source: include_str!("../fixtures/minplus.cu"),
    device_fns: &[],
    params: &[
        p("ptr", ScalarType::U32, ParamKind::Input),
        p("src", ScalarType::U32, ParamKind::Input),
        p("w", ScalarType::F32, ParamKind::Input),
        p("dist", ScalarType::F32, ParamKind::Input),
        p("scale", ScalarType::U32, ParamKind::Scalar),
        p("next", ScalarType::F32, ParamKind::Output),
    ],
    acc: AccType::Scalar(ScalarType::F32),
    elementwise: false,
    donates: false,
    index_encoding: warpfit_gpu::__private::IndexEncoding::Plain,
    columns: None,
    checks_at_end_columns: false,
};

pub static ALL: &[&KernelSpec] = &[&SPMV_F32, &SPMV_ADD_F32, &SPMV_F64, &RELAX];

// ------------------------------------------------------------------ CPU twins
//
// What `#[nested_reduce]` emits for the fixtures' Rust side: the reference
// the GPU results are compared with.

use warpfit_runtime::exec::{Fault, NestedKernel, SharedOut};

fn idx<T: Copy>(a: &[T], i: usize, name: &'static str) -> Result<T, Fault> {
    a.get(i).copied().ok_or(Fault::index(name, i, a.len()))
}

/// `y[row] = Σ val[k]·x[col[k]]` in f32 or f64.
pub struct Spmv<'a, T: Copy> {
    pub row_ptr: &'a [u32],
    pub col: &'a [u32],
    pub val: &'a [T],
    pub x: &'a [T],
    pub y: SharedOut<'a, T>,
}

macro_rules! spmv_twin {
    ($t:ty, $name:literal) => {
        impl NestedKernel for Spmv<'_, $t> {
            const NAME: &'static str = $name;
            type Acc = $t;
            type Ctx = ();
            fn prologue(&self, row: usize) -> Result<((), usize, usize), Fault> {
                let lo = idx(self.row_ptr, row, "row_ptr")? as usize;
                let hi = idx(self.row_ptr, row.wrapping_add(1), "row_ptr")? as usize;
                Ok(((), lo, hi))
            }
            fn init(&self, _: usize, _: &()) -> Result<$t, Fault> {
                Ok(0.0)
            }
            fn map(&self, _: usize, _: &(), k: usize) -> Result<$t, Fault> {
                let v = idx(self.val, k, "val")?;
                let c = idx(self.col, k, "col")? as usize;
                Ok(v * idx(self.x, c, "x")?)
            }
            fn reduce(&self, a: $t, b: $t) -> Result<$t, Fault> {
                Ok(a + b)
            }
            fn epilogue(&self, row: usize, _: &(), acc: $t) -> Result<(), Fault> {
                // SAFETY: each task writes only its own row (owner computes).
                unsafe { self.y.set(row, acc, "y") }
            }
        }
    };
}
spmv_twin!(f32, "spmv_f32");
spmv_twin!(f64, "spmv_f64");

/// One Bellman-Ford relaxation over (min, +), with `w / (100 / scale)`.
pub struct Relax<'a> {
    pub ptr: &'a [u32],
    pub src: &'a [u32],
    pub w: &'a [f32],
    pub dist: &'a [f32],
    pub scale: u32,
    pub next: SharedOut<'a, f32>,
}

impl NestedKernel for Relax<'_> {
    const NAME: &'static str = "relax";
    type Acc = f32;
    type Ctx = f32;
    fn prologue(&self, v: usize) -> Result<(f32, usize, usize), Fault> {
        let lo = idx(self.ptr, v, "ptr")? as usize;
        let hi = idx(self.ptr, v.wrapping_add(1), "ptr")? as usize;
        let d0 = idx(self.dist, v, "dist")?;
        Ok((d0, lo, hi))
    }
    fn init(&self, _: usize, d0: &f32) -> Result<f32, Fault> {
        Ok(*d0)
    }
    fn map(&self, _: usize, _: &f32, e: usize) -> Result<f32, Fault> {
        let s = idx(self.src, e, "src")? as usize;
        let q = 100u32
            .checked_div(self.scale)
            .ok_or(Fault::DivisionByZero)?;
        Ok(idx(self.dist, s, "dist")? + idx(self.w, e, "w")? / q as f32)
    }
    fn reduce(&self, a: f32, b: f32) -> Result<f32, Fault> {
        Ok(a.min(b))
    }
    fn epilogue(&self, v: usize, _: &f32, acc: f32) -> Result<(), Fault> {
        // SAFETY: owner computes.
        unsafe { self.next.set(v, acc, "next") }
    }
}

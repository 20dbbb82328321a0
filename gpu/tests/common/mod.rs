//! Hand-written kernel functors that follow docs/codegen.md exactly, with
//! the `KernelSpec`s `#[nested_reduce]` would emit for them. They stand in
//! for generated kernels in the device layer's tests.
#![allow(dead_code)]

use warpfit_gpu::{KernelSpec, ParamKind, ParamSpec, ScalarType};

const fn p(name: &'static str, ty: ScalarType, kind: ParamKind) -> ParamSpec {
    ParamSpec { name, ty, kind }
}

pub static SPMV_F32: KernelSpec = KernelSpec {
    name: "spmv_f32",
    cuda_source: include_str!("../fixtures/spmv_f32.cu"),
    device_fns: &[],
    params: &[
        p("row_ptr", ScalarType::U32, ParamKind::Input),
        p("col", ScalarType::U32, ParamKind::Input),
        p("val", ScalarType::F32, ParamKind::Input),
        p("x", ScalarType::F32, ParamKind::Input),
        p("y", ScalarType::F32, ParamKind::Output),
    ],
    acc: ScalarType::F32,
};

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
    acc: ScalarType::F64,
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
    acc: ScalarType::F32,
};

pub static ALL: &[&KernelSpec] = &[&SPMV_F32, &SPMV_F64, &RELAX];

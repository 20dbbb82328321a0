//! Attribute macros of warpfit: `#[nested_reduce]` and `#[device_fn]`.
//!
//! The pipeline, one verb per file, spelled out in `nested::expand`:
//! `parse` (syn → the kernel language's AST) → `check` (the body's shape:
//! prologue, the nested pattern, epilogue) → `lower` (names,
//! owner-computes, types → the typed `ir`) → `analyse` (the map's access
//! facts: direct loads, gathers, throttling) → `emit_cuda` (the CUDA
//! functor) and `emit_rust` (CPU twin and launch API, one emitter per
//! generated item). `generic` is the front end of generic kernels
//! (`#[nested_reduce(T = [f32, f64])]`): it substitutes each listed type
//! and runs the pipeline once per instance. `device_fn` runs parse → lower → emit for
//! `#[device_fn]`; `diag` holds the diagnostics helpers. The contract with
//! the runtime and the device library is `docs/codegen.md`; user
//! documentation lives in the `warpfit` crate.

use proc_macro::TokenStream;

mod analyse;
mod check;
mod column_checks;
mod columns;
mod device_fn;
mod diag;
mod emit_cuda;
mod emit_rust;
mod generic;
mod ir;
mod lower;
mod nested;
mod parse;
#[cfg(test)]
mod tests;
mod throttled;

/// Turns a map/fold kernel into a CUDA functor, a CPU twin and a launch API.
///
/// ```text
/// #[nested_reduce]
/// pub fn spmv(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
///     let lo = row_ptr[row] as usize;
///     let hi = row_ptr[row + 1] as usize;
///     y[row] = (lo..hi).map(|k| val[k] * x[col[k] as usize]).fold(0.0, |a, b| a + b);
/// }
/// // spmv(row, ..) is unchanged; spmv::launch(&device, n_rows, &row_ptr, ..) runs it.
/// ```
///
/// The function is kept as the plain-Rust reference; a module of the same
/// name holds `CUDA_SOURCE`, `SPEC`, the CPU twin `Kernel`, `launch`,
/// `launch_with`, `GATHERED` and `work_graph` (see `docs/codegen.md`).
///
/// A generic kernel lists the element types each type parameter stands for,
/// and is instantiated once per type (per combination, with several
/// parameters): the CUDA code is generated for concrete types.
///
/// ```text
/// #[nested_reduce(T = [f32, f64])]
/// pub fn spmv<T>(row: usize, row_ptr: &[u32], col: &[u32], val: &[T], x: &[T], y: &mut [T]) { .. }
/// // spmv::f64::launch(&device, n_rows, &row_ptr, ..) runs the f64 instance;
/// // spmv(row, ..) stays callable for either type.
/// ```
///
/// Each instance's module, `spmv::f32` and `spmv::f64` (types joined by `_`
/// with several parameters: `spmv::f32_u64`), holds what a non-generic
/// kernel's module holds; the kernel is named `spmv_f32` in `SPEC` and in
/// launch errors. The listed types are scalar types of the language; the
/// function declares exactly the listed parameters, without bounds. A
/// diagnostic that only some instances raise names them.
///
/// The kernel language, checked at compile time with errors on the offending
/// token:
/// - signature `fn name(task: usize, ...)`; other parameters `&[T]` (input),
///   `&mut [T]` (output, at least one), `T` (scalar), with T one of f32, f64,
///   i32, u32, i64, u64, u8, bool; no return type or patterns, and type
///   parameters only with their types listed in the attribute;
/// - body: `let`s (prologue), exactly one `(lo..hi).map(|k| e).fold(init, op)`
///   at statement level, then `let`s, `out[task] = e`, `out[task] op= e` and
///   `if`/`else` (epilogue); `op` is `|a, b| e`, `T::min`/`T::max` or a
///   two-argument `#[device_fn]`, and sees only its two arguments; a body
///   without the nested pattern is a per-task map (`let`s, writes and
///   `if`/`else`, writing at least one output), run once per task;
/// - expressions: literals, locals, parameters, arithmetic, bitwise, shifts,
///   comparisons, `&&`/`||`, `as` casts, `a[i]` with a `usize` index, `if`
///   values, blocks, `T::MAX`-style constants, whitelisted methods, and
///   `#[device_fn]` calls;
/// - owner-computes: outputs are read and written only at `out[task]` (or at
///   a plain copy of the task, `let r = task;`), written only in the
///   epilogue: tasks never race, on any backend;
/// - Rust's typing (no implicit conversions; unsuffixed literals from context,
///   else `i32`/`f64`) and Rust's release semantics on every backend: integer
///   `+ - *` wrap, shifts are masked, `/` and `%` by zero fail the launch,
///   indices are checked, float-to-int casts saturate.
#[proc_macro_attribute]
pub fn nested_reduce(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse(item) {
        Ok(func) => func,
        Err(e) => return e.to_compile_error().into(),
    };
    generic::expand(attr.into(), &func)
        .unwrap_or_else(|errors| nested::fallback_with(&func, errors))
        .into()
}

/// Cache-fit throttling for a `#[nested_reduce]` kernel: written *below*
/// `#[nested_reduce]`, which reads it, it adds `throttle_options()`,
/// `throttle(..)` and the handle `Throttle` to the kernel's module.
///
/// ```text
/// #[nested_reduce]
/// #[throttled(policy = auto, cache = l2, partitioner = columns)]
/// pub fn spmv(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) { .. }
/// // let mut t = spmv::throttle(&device, &spmv::throttle_options()?, n_rows, n_cols, &row_ptr, &col, &val)?;
/// // t.launch(&x, &mut y)?;
/// ```
///
/// Arguments, all optional: `policy` (`auto`, `cf`, `cfq`, `sj`, `sjq`,
/// `org`, `org_r`), `cache` (`l2` or a size such as `"8MiB"`),
/// `partitioner` (`kd`, `bisect`, `columns`). The kernel must have the
/// throttling shape (checked at compile time): a CSR range
/// `a[task] as usize .. a[task + 1] as usize`, gathers at one index read
/// through arrays read at the fine-task index (one gathered array, or
/// several of one length read at that index), and a commutative reduce.
/// Written alone or above `#[nested_reduce]`, it is an error saying so.
#[proc_macro_attribute]
pub fn throttled(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let err = syn::Error::new(
        proc_macro2::Span::call_site(),
        "`#[throttled]` goes below `#[nested_reduce]` on the same function: write `#[nested_reduce]` first, then `#[throttled(..)]`",
    )
    .to_compile_error();
    quote::quote!(#err #item).into()
}

/// Makes a scalar function callable from `#[nested_reduce]` kernels.
///
/// ```text
/// #[device_fn]
/// pub fn max_plus(a: f32, b: f32) -> f32 { a.max(b) }
/// // ... .fold(f32::NEG_INFINITY, max_plus) in a kernel
/// ```
///
/// Scalar parameters, a scalar return type, and a body of `let`s and a final
/// expression in the kernel language (it may call other device functions).
/// The function is kept; a hidden companion module of the same name carries
/// its CUDA and its CPU twin, so `use path::max_plus;` brings everything a
/// kernel needs. Call it by its own name (renamed imports are rejected). An
/// unsuffixed literal argument takes the parameter's type (`add1(x, 1.0)`
/// with an `f32` parameter). Recursion, direct or through other device
/// functions, and call chains deeper than 16 are rejected at compile time.
#[proc_macro_attribute]
pub fn device_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = proc_macro2::TokenStream::from(attr);
    let func: syn::ItemFn = match syn::parse(item) {
        Ok(func) => func,
        Err(e) => return e.to_compile_error().into(),
    };
    let result = if attr.is_empty() {
        device_fn::expand(&func)
    } else {
        Err(syn::Error::new_spanned(
            attr,
            "this attribute takes no arguments",
        ))
    };
    result.unwrap_or_else(|e| nested::fallback(&func, e)).into()
}

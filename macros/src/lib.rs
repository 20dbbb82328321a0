//! Attribute macros of warpfit: `#[nested_reduce]` and `#[device_fn]`.
//!
//! Pipeline: [`parse`] (syn → AST of the kernel language) → [`check`] (the
//! language's structural rules) → [`lower`] (names, owner-computes, types →
//! [`ir`]) → [`emit_rust`] (CPU twin, launch API) and [`emit_cuda`] (CUDA
//! functor). The contract with the runtime and the device library is
//! `docs/codegen.md`; user documentation lives in the `warpfit` crate.

use proc_macro::TokenStream;

mod check;
mod device_fn;
mod emit_cuda;
mod emit_rust;
mod ir;
mod lower;
mod nested;
mod parse;
#[cfg(test)]
mod tests;

/// Turns a map/fold kernel into a CUDA functor, a CPU twin and a launch API.
#[proc_macro_attribute]
pub fn nested_reduce(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr.into(), item.into(), nested::expand).into()
}

/// Makes a scalar function callable from `#[nested_reduce]` kernels.
#[proc_macro_attribute]
pub fn device_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr.into(), item.into(), device_fn::expand).into()
}

type Expand = fn(&syn::ItemFn) -> syn::Result<proc_macro2::TokenStream>;

fn expand(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
    f: Expand,
) -> proc_macro2::TokenStream {
    let func: syn::ItemFn = match syn::parse2(item) {
        Ok(func) => func,
        Err(e) => return e.to_compile_error(),
    };
    let result = if attr.is_empty() {
        f(&func)
    } else {
        Err(syn::Error::new_spanned(
            attr,
            "this attribute takes no arguments",
        ))
    };
    result.unwrap_or_else(|e| nested::fallback(&func, e))
}

//! `#[nested_reduce]`: the pipeline from the user's function to its module.

use crate::{analyse, check, columns, emit_cuda, emit_rust, lower, parse, throttled};
use proc_macro2::TokenStream;
use quote::quote;

/// The pipeline: parse (syn → the kernel language's AST) → check (the
/// body's shape: prologue, nested pattern, epilogue) → lower (names,
/// owner-computes, types → IR) → analyse (the map's access facts) → emit
/// (CUDA, then the Rust module that embeds it).
pub fn expand(
    item: &syn::ItemFn,
    columns: Option<&columns::ColumnsAttr>,
) -> syn::Result<TokenStream> {
    let mut item = item.clone();
    let throttled = throttled::take(&mut item)?;
    let item = &item;
    let module = companion(item, throttled.as_ref(), None, columns)?;
    // The language spells reductions as an explicit fold (it becomes a warp
    // reduction); clippy's `unnecessary_fold` would ask for `.sum()`, which
    // the language does not accept. A kernel is often used only through its
    // companion (`k::launch`), which runs the twin, not the function: that
    // is not dead code. The function is otherwise kept verbatim.
    let cfgs = cfg_attrs(item);
    Ok(quote! {
        #[allow(clippy::unnecessary_fold, dead_code)]
        #item
        #(#cfgs)*
        #module
    })
}

/// The companion module of `item` (whose `#[throttled]`, if any, the caller
/// took off and passes as `throttled`): the whole pipeline. `name` renames
/// the kernel after every check, for the module, `SPEC`, the CUDA namespace
/// and the launch errors (a generic kernel's instance, `spmv_f32`): the
/// diagnostics still name the function as written. `columns` makes it a
/// 2-D kernel, compiled as its flattened 1-D kernel (`columns.rs`).
pub fn companion(
    item: &syn::ItemFn,
    throttled: Option<&throttled::ThrottleAttr>,
    name: Option<&syn::Ident>,
    columns: Option<&columns::ColumnsAttr>,
) -> syn::Result<TokenStream> {
    let flat = columns.map(|c| columns::flatten(item, c)).transpose()?;
    let item = flat.as_ref().map_or(item, |f| &f.item);
    let ast = parse::kernel(item)?;
    let shape = check::kernel(&ast)?;
    let mut kernel = lower::kernel(&ast, &shape)?;
    kernel.columns = flat.as_ref().map(|f| f.count_param);
    let access = analyse::kernel(&kernel);
    let roles = match throttled {
        None => None,
        Some(attr) => {
            if kernel.for_each.is_some() || kernel.scatters() {
                let why = if kernel.for_each.is_some() {
                    "it is a `for_each` kernel, and throttling needs a fold: the cache-fit schedules carry each task's fold from one partition's launch to the next"
                } else {
                    "it updates shared arrays or pushes to worklists, which the throttled handle does not hold"
                };
                return Err(syn::Error::new_spanned(
                    &attr.attr,
                    format!("`{}` cannot be throttled: {why}", kernel.name),
                ));
            }
            let roles = analyse::roles(&kernel, &access).map_err(|why| {
                syn::Error::new_spanned(
                    &attr.attr,
                    format!("`{}` cannot be throttled: {why}", kernel.name),
                )
            })?;
            Some((attr, roles))
        }
    };
    if let Some(name) = name {
        kernel.name = name.clone();
    }
    let throttle_items = match roles {
        None => TokenStream::new(),
        Some((attr, roles)) => emit_rust::throttle_items(&kernel, &roles, attr),
    };
    let cuda = emit_cuda::kernel(&kernel, &access);
    Ok(emit_rust::module(
        &kernel,
        &access,
        &item.vis,
        &cuda,
        throttle_items,
    ))
}

/// The function's `#[cfg(..)]`s: the generated companion exists exactly when
/// the function does.
pub fn cfg_attrs(item: &syn::ItemFn) -> Vec<&syn::Attribute> {
    item.attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect()
}

/// What an expansion that failed leaves behind: the errors, and the function
/// with its signature but an empty body, so that callers still resolve and
/// rustc does not repeat our diagnostics with its own on the original body.
pub fn fallback(item: &syn::ItemFn, err: syn::Error) -> TokenStream {
    fallback_with(item, err.to_compile_error())
}

/// [`fallback`] with the errors already as tokens (`compile_error!`s).
pub fn fallback_with(item: &syn::ItemFn, errors: TokenStream) -> TokenStream {
    // Without `#[throttled]`, which `expand` reads and which would only
    // repeat an error about its place.
    let attrs: Vec<_> = item
        .attrs
        .iter()
        .filter(|a| {
            !a.path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "throttled")
        })
        .collect();
    let vis = &item.vis;
    let sig = &item.sig;
    quote! {
        #errors
        #(#attrs)*
        #[allow(unused_variables, dead_code, unreachable_code)]
        #vis #sig {
            ::core::unreachable!()
        }
    }
}

/// The expansion as a string, for tests of the emitters.
#[cfg(test)]
pub fn cuda_of(src: &str) -> syn::Result<String> {
    let item: syn::ItemFn = syn::parse_str(src)?;
    let ast = parse::kernel(&item)?;
    let kernel = lower::kernel(&ast, &check::kernel(&ast)?)?;
    Ok(emit_cuda::kernel(&kernel, &analyse::kernel(&kernel)))
}

/// CUDA of a `#[device_fn]`, for tests of the emitters.
#[cfg(test)]
pub fn device_fn_cuda_of(src: &str) -> syn::Result<String> {
    let item: syn::ItemFn = syn::parse_str(src)?;
    let ast = parse::device_fn(&item)?;
    Ok(emit_cuda::device_fn(&crate::lower::device_fn(&ast)?))
}

/// The generated Rust of a kernel (the function and its module), formatted,
/// for snapshot tests of the emitters.
#[cfg(test)]
pub fn rust_of(src: &str) -> syn::Result<String> {
    let item: syn::ItemFn = syn::parse_str(src)?;
    let file: syn::File = syn::parse2(expand(&item, None)?)?;
    Ok(prettyplease::unparse(&file))
}

/// The generated Rust of a `#[device_fn]` (the function and its companion).
#[cfg(test)]
pub fn device_fn_rust_of(src: &str) -> syn::Result<String> {
    let item: syn::ItemFn = syn::parse_str(src)?;
    let file: syn::File = syn::parse2(crate::device_fn::expand(&item)?)?;
    Ok(prettyplease::unparse(&file))
}

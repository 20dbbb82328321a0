//! `#[device_fn]`: a scalar helper usable from kernels, on both backends.
//!
//! The function is kept unchanged. Next to it go its CUDA (a static the
//! kernels that call it list in `SPEC.device_fns`) and its CPU twin
//! `__wf_cpu_<name>`, which follows the kernel language's release semantics
//! and reports faults instead of panicking, as the rest of a CPU kernel does.

use crate::emit_rust::{call_consts, fault, rust_ty, sibling_path, Emitter};
use crate::{emit_cuda, lower, parse};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::collections::BTreeSet;

pub fn expand(item: &syn::ItemFn) -> syn::Result<TokenStream> {
    let ast = parse::device_fn(item)?;
    let f = lower::device_fn(&ast)?;
    let cuda = emit_cuda::device_fn(&f);
    let name = &f.name;
    let name_str = name.to_string();
    let vis = &item.vis;
    let stat = format_ident!("__WF_DEVICE_FN_{}", name);
    let cpu = format_ident!("__wf_cpu_{}", name);
    let em = Emitter {
        locals: &f.locals,
        params: &[],
    };
    let params = f.params.iter().map(|id| {
        let n = em.local(*id);
        let t = rust_ty(f.locals[*id].ty);
        quote!(#n: #t)
    });
    let lets = f.lets.iter().map(|(id, v)| em.let_(*id, v));
    let body = em.expr(&f.body);
    let ret = rust_ty(f.ret);
    let flt = fault();
    let mut seen = BTreeSet::new();
    let mut deps = Vec::new();
    let mut checks = Vec::new();
    for c in &f.calls {
        let p = sibling_path(&c.path, "__WF_DEVICE_FN_", false);
        if seen.insert(p.to_string()) {
            deps.push(quote!(&#p));
        }
        let span = c
            .path
            .segments
            .last()
            .map_or_else(Span::call_site, |s| s.ident.span());
        let fp = &c.path;
        let args = c.args.iter().map(|t| rust_ty(*t));
        let r = rust_ty(c.ret);
        checks.push(quote_spanned!(span=> const _: fn(#(#args),*) -> #r = #fp;));
    }
    let twin_calls = call_consts(&f.calls, false);
    let doc_static = format!("CUDA of `#[device_fn] {name_str}` for the kernels that call it.");
    let doc_cpu = format!("CPU twin of `{name_str}` with the kernel language's release semantics; faults instead of panics.");
    Ok(quote! {
        #item

        #[doc = #doc_static]
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #vis static #stat: ::warpfit::__private::DeviceFnSource = ::warpfit::__private::DeviceFnSource {
            name: #name_str,
            cuda: #cuda,
            deps: &[#(#deps),*],
        };

        #[doc = #doc_cpu]
        #[doc(hidden)]
        #[inline]
        #[allow(clippy::all, clippy::pedantic, unused_parens, unused_braces, non_snake_case)]
        #vis fn #cpu(#(#params),*) -> ::core::result::Result<#ret, #flt> {
            #(#checks)*
            #twin_calls
            #(#lets)*
            ::core::result::Result::Ok(#body)
        }
    })
}

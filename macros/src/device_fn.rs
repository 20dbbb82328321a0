//! `#[device_fn]`: a scalar helper usable from kernels, on both backends.
//!
//! The function is kept unchanged. Next to it goes a hidden companion module
//! of the same name (modules and functions live in different namespaces, so
//! `use path::f;` imports both): `f::SOURCE`, its CUDA, which the kernels that
//! call `f` list in `SPEC.device_fns`, and `f::cpu`, its CPU twin, which
//! follows the kernel language's release semantics and reports faults
//! instead of panicking, as the rest of a CPU kernel does.

use crate::emit_rust::{call_consts, companion, fault, name_check, rust_ty, Emitter};
use crate::{emit_cuda, lower, parse};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use std::collections::BTreeSet;

pub fn expand(item: &syn::ItemFn) -> syn::Result<TokenStream> {
    let ast = parse::device_fn(item)?;
    let f = lower::device_fn(&ast)?;
    let cuda = emit_cuda::device_fn(&f);
    let name = &f.name;
    let name_str = name.to_string();
    let vis = &item.vis;
    let em = Emitter {
        locals: &f.locals,
        params: &[],
        prechecked: None,
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
        let p = companion(&c.path, Some("SOURCE"));
        if seen.insert(p.to_string()) {
            deps.push(quote!(&#p));
            checks.push(name_check(c));
        }
        let span = c
            .path
            .segments
            .last()
            .map_or_else(Span::call_site, |s| s.ident.span());
        let fp = companion(&c.path, None);
        let args = c.args.iter().map(|t| rust_ty(*t));
        let r = rust_ty(c.ret);
        checks.push(quote_spanned!(span=> const _: fn(#(#args),*) -> #r = #fp;));
    }
    let twin_calls = call_consts(&f.calls);
    let doc_mod =
        format!("Generated companion of `#[device_fn] {name_str}`: its CUDA and its CPU twin.");
    let doc_static = format!("CUDA of `{name_str}` for the kernels that call it.");
    let doc_cpu = format!(
        "CPU twin of `{name_str}`: release semantics (wrapping integers, masked shifts), faults instead of panics."
    );
    let cfgs = crate::nested::cfg_attrs(item);
    Ok(quote! {
        #item

        #(#cfgs)*
        #[doc = #doc_mod]
        #[doc(hidden)]
        #[allow(dead_code, clippy::all, clippy::pedantic, unused_parens, unused_braces)]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;

            #(#checks)*
            #twin_calls

            /// The function's own name (what the CUDA side calls it).
            pub const NAME: &str = #name_str;

            #[doc = #doc_static]
            pub static SOURCE: ::warpfit::__private::DeviceFnSource = ::warpfit::__private::DeviceFnSource {
                name: #name_str,
                cuda: #cuda,
                deps: &[#(#deps),*],
            };

            #[doc = #doc_cpu]
            #[inline]
            pub fn cpu(#(#params),*) -> ::core::result::Result<#ret, #flt> {
                #(#lets)*
                ::core::result::Result::Ok(#body)
            }
        }
    })
}

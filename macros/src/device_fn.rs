//! `#[device_fn]`: a scalar helper usable from kernels, on both backends.
//!
//! The function is kept unchanged. Next to it goes a hidden companion module
//! of the same name (modules and functions live in different namespaces, so
//! `use path::f;` imports both): `f::SOURCE`, its CUDA, which the kernels that
//! call `f` list in `SPEC.device_fns`, and `f::cpu`, its CPU twin, which
//! follows the kernel language's release semantics and reports faults
//! instead of panicking, as the rest of a CPU kernel does.

use crate::emit_rust::{
    call_checks, call_consts, companion, distinct_callees, fault, rust_ty, Emitter,
};
use crate::{emit_cuda, lower, parse};
use proc_macro2::TokenStream;
use quote::quote;

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
    let checks = call_checks(&f.calls);
    let callees = distinct_callees(&f.calls);
    let deps = callees.iter().map(|path| {
        let source = companion(path, Some("SOURCE"));
        quote!(&#source)
    });
    let call_graph = call_graph_check(&f.name, &callees);
    let twin_calls = call_consts(&f.calls);
    // The parameter types by position, for callers' unsuffixed literal
    // arguments (`ArgType::CalleeParam`).
    let param_aliases = f.params.iter().enumerate().map(|(i, id)| {
        let alias = quote::format_ident!("Param{i}");
        let t = rust_ty(f.locals[*id].ty);
        quote!(pub type #alias = #t;)
    });
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

            #checks
            #call_graph
            #twin_calls

            #(#param_aliases)*

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

/// How many calls deep the acyclicity check follows device functions.
/// Every cycle is an unbounded chain, so a chain longer than this is
/// reported too: a legitimate one that long is not worth the check's cost
/// (one evaluation per path, so it grows with the branching of the graph).
const MAX_CALL_DEPTH: u32 = 16;

/// Rejects recursion (direct, or through other device functions) at compile
/// time. The macro sees one function at a time, so the call graph is walked
/// by rustc: each companion exports `calls_reach(target, depth)`, a `const
/// fn` asking its callees' companions whether `target` is among them or
/// theirs, to `depth` calls deep. Functions, unlike `const` items, may call
/// each other in cycles, so the walk itself compiles for a recursive graph,
/// and a `const` assertion evaluates it from this function's own name:
/// reaching itself is recursion; exhausting the depth is a chain too deep
/// (or a cycle that does not pass through this function, which its members
/// report themselves). This works across crates: an imported device
/// function's companion carries the same walk.
fn call_graph_check(name: &syn::Ident, callees: &[&syn::Path]) -> TokenStream {
    let steps = callees.iter().map(|path| {
        let callee_name = companion(path, Some("NAME"));
        let callee_walk = companion(path, Some("calls_reach"));
        quote! {
            if __wf_same_name(#callee_name, target) {
                return __WF_WALK_REACHED;
            }
            let found = #callee_walk(target, depth - 1);
            if found != __WF_WALK_CLEAR {
                return found;
            }
        }
    });
    let recursive = format!(
        "`#[device_fn] {name}` is recursive: it calls itself, directly or through other device functions; CUDA gives recursion no defined stack and the kernel language has no loops to bound it, so rewrite it without the cycle"
    );
    let too_deep = format!(
        "`#[device_fn] {name}` reaches a chain of more than {MAX_CALL_DEPTH} nested device function calls (or a recursive cycle among its callees, reported at them): flatten the calls"
    );
    // A function without callees ends every chain, whatever depth is left.
    let depth_check = (!callees.is_empty()).then(|| {
        quote! {
            if depth == 0 {
                return __WF_WALK_TOO_DEEP;
            }
        }
    });
    let span = name.span();
    let assertion = quote::quote_spanned!(span=>
        const _: () = {
            let walk = calls_reach(NAME, #MAX_CALL_DEPTH);
            ::core::assert!(walk != __WF_WALK_REACHED, #recursive);
            ::core::assert!(walk != __WF_WALK_TOO_DEEP, #too_deep);
        };
    );
    quote! {
        // The outcomes of `calls_reach`: plain numbers, the same in every
        // companion, so that one companion's walk can return another's.
        // (Prefixed, like `__wf_same_name`, so that they cannot shadow a
        // user's item that the companion's code reaches through `super::*`.)
        const __WF_WALK_CLEAR: u8 = 0;
        const __WF_WALK_REACHED: u8 = 1;
        const __WF_WALK_TOO_DEEP: u8 = 2;

        /// Whether a device function named `target` is called by this one or
        /// by its callees, up to `depth` calls deep (compile-time recursion
        /// check): `__WF_WALK_REACHED`, `__WF_WALK_TOO_DEEP` when the depth ran out
        /// first, else `__WF_WALK_CLEAR`.
        #[allow(unused_variables, unreachable_code)]
        pub const fn calls_reach(target: &str, depth: u32) -> u8 {
            #depth_check
            #(#steps)*
            __WF_WALK_CLEAR
        }

        #[allow(dead_code)]
        const fn __wf_same_name(a: &str, b: &str) -> bool {
            let (a, b) = (a.as_bytes(), b.as_bytes());
            if a.len() != b.len() {
                return false;
            }
            let mut i = 0;
            while i < a.len() {
                if a[i] != b[i] {
                    return false;
                }
                i += 1;
            }
            true
        }

        #assertion
    }
}

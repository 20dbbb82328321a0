//! What a generic kernel expands to: the function, generic over a sealed
//! trait and dispatching to a copy of its body per type; and a module of
//! the function's name holding the trait and one module per instance.

use super::attr::{Instance, TypeParam};
use super::subst::{AbsolutePrimitives, OneLevelDown, Subst};
use crate::nested;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::visit_mut::VisitMut;

/// An instance's module: the companion `nested::companion` made for the
/// instance's function (named after the instance's kernel, `spmv_f32`),
/// renamed `name` (`f32`), public, moved one level down (it lives in the
/// generic kernel's module) and documented as the instance it is.
pub fn instance_module(
    module: TokenStream,
    name: Ident,
    func: &Ident,
    kernel: &Ident,
    label: &str,
) -> syn::Result<TokenStream> {
    let mut m: syn::ItemMod = syn::parse2(module)?;
    m.ident = name;
    m.vis = syn::parse_quote!(pub);
    let written = format!("`fn {kernel}`");
    let instance = format!("`fn {func}` for `{label}`");
    for a in &mut m.attrs {
        if let syn::Meta::NameValue(nv) = &mut a.meta {
            if let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &mut nv.value
            {
                if nv.path.is_ident("doc") {
                    *s = syn::LitStr::new(&s.value().replace(&written, &instance), s.span());
                }
            }
        }
    }
    if let Some((_, items)) = &mut m.content {
        for item in items {
            OneLevelDown { depth: 0 }.visit_item_mut(item);
        }
    }
    Ok(m.into_token_stream())
}

/// The expansion of a generic kernel whose every instance expanded:
/// `item` is the function as written (without `#[throttled]`), `funcs`
/// and `modules` the instances' functions and modules, in the order of
/// `instances`.
pub fn assemble(
    item: &syn::ItemFn,
    params: &[TypeParam],
    instances: &[Instance],
    funcs: &[syn::ItemFn],
    modules: Vec<TokenStream>,
) -> TokenStream {
    let name = &item.sig.ident;
    let vis = &item.vis;
    let cfgs = nested::cfg_attrs(item);
    let dispatcher = dispatcher(item, params);
    let elem = elem_trait(item, params, instances);
    let impls = instances.iter().zip(funcs).map(|(inst, func)| {
        let imp = elem_impl(item, inst, func);
        quote!(#(#cfgs)* #imp)
    });
    let listed: Vec<String> = instances
        .iter()
        .map(|i| format!("`{}` (`{name}::{}`)", i.label(params), i.module()))
        .collect();
    let doc = format!(
        "Generic `#[nested_reduce]` kernel `fn {name}`, instantiated for {}.\n\n\
         Each instance's module holds the launch API and generated code of the kernel `{name}` \
         with the instance's types, as a non-generic kernel's module does; the instance's kernel \
         is named `{name}_<types>` (`{name}_{}`) in its `SPEC` and in launch errors. [`Elem`] is \
         the bound of the generic plain-Rust function `{name}`, implemented for the listed types.",
        listed.join(", "),
        instances[0].module(),
    );
    quote! {
        #dispatcher
        #(#cfgs)*
        #[doc = #doc]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;

            #elem

            #(#modules)*
        }
        #(#impls)*
    }
}

/// The name of the trait method holding one instance's copy of the body.
fn method(name: &Ident) -> Ident {
    format_ident!("__{}", name)
}

/// `<I, J>` for the type parameters after the first (the trait's own
/// parameters; the first is its `Self`), empty without any.
fn rest_generics<T: ToTokens>(rest: &[T]) -> TokenStream {
    if rest.is_empty() {
        TokenStream::new()
    } else {
        quote!(<#(#rest),*>)
    }
}

/// The parameters' names, in order (the language's parameters are plain
/// identifiers; `parse` rejected anything else before an instance expanded).
fn arg_names(sig: &syn::Signature) -> Vec<&Ident> {
    sig.inputs
        .iter()
        .filter_map(|a| match a {
            syn::FnArg::Typed(pt) => match &*pt.pat {
                syn::Pat::Ident(p) => Some(&p.ident),
                _ => None,
            },
            syn::FnArg::Receiver(_) => None,
        })
        .collect()
}

/// The type parameters the function's signature wraps in `Atomic<..>` (a
/// shared array's element): `Atomic<T>` is a type only for
/// `T: AtomicScalar`, so the generic signature and the trait must say so.
fn atomic_params(sig: &syn::Signature, params: &[TypeParam]) -> Vec<Ident> {
    struct Find<'a> {
        params: &'a [TypeParam],
        found: Vec<Ident>,
    }
    impl<'ast> syn::visit::Visit<'ast> for Find<'_> {
        fn visit_path_segment(&mut self, seg: &'ast syn::PathSegment) {
            if seg.ident == "Atomic" {
                if let syn::PathArguments::AngleBracketed(args) = &seg.arguments {
                    for a in &args.args {
                        let syn::GenericArgument::Type(syn::Type::Path(t)) = a else {
                            continue;
                        };
                        let Some(i) = t.path.get_ident() else {
                            continue;
                        };
                        if self.params.iter().any(|p| p.name == *i) && !self.found.contains(i) {
                            self.found.push(i.clone());
                        }
                    }
                }
            }
            syn::visit::visit_path_segment(self, seg);
        }
    }
    let mut f = Find {
        params,
        found: Vec::new(),
    };
    for input in &sig.inputs {
        syn::visit::visit_fn_arg(&mut f, input);
    }
    f.found
}

/// `name` with its bound for the trait's or the function's generics:
/// `I: AtomicScalar` when the signature holds an `Atomic<I>`.
fn bounded(name: &Ident, atomic: &[Ident]) -> TokenStream {
    if atomic.contains(name) {
        quote!(#name: ::warpfit::__private::AtomicScalar)
    } else {
        quote!(#name)
    }
}

/// The function as written, generic over its module's `Elem` (the first
/// type parameter bound by it, with the others as its parameters), its
/// body the call of the instance's copy: `spmv(row, ..)` runs the plain
/// Rust of the instance its arguments select. It keeps the attributes of
/// a non-generic kernel's function: the language spells reductions as
/// folds, and a kernel used only through its module is not dead code.
fn dispatcher(item: &syn::ItemFn, params: &[TypeParam]) -> TokenStream {
    let name = &item.sig.ident;
    let method = method(name);
    let first = &params[0].name;
    let rest: Vec<&Ident> = params[1..].iter().map(|p| &p.name).collect();
    let elem_generics = rest_generics(&rest);
    let elem = quote!(#name::Elem #elem_generics);
    let atomic = atomic_params(&item.sig, params);
    let rest_bounded = rest.iter().map(|r| bounded(r, &atomic));
    let mut sig = item.sig.clone();
    sig.generics = syn::parse_quote!(<#first: #elem #(, #rest_bounded)*>);
    let args = arg_names(&item.sig);
    let attrs = &item.attrs;
    let vis = &item.vis;
    quote! {
        #(#attrs)*
        #[allow(clippy::unnecessary_fold, dead_code)]
        #vis #sig {
            <#first as #elem>::#method(#(#args),*)
        }
    }
}

/// The sealed trait `Elem`, implemented by the first parameter's types
/// (for the others' types as its parameters), with the signature of the
/// function: the first parameter is `Self`, primitives absolute (`f32`
/// names the f32 instance's module inside the generic kernel's module).
fn elem_trait(item: &syn::ItemFn, params: &[TypeParam], instances: &[Instance]) -> TokenStream {
    let name = &item.sig.ident;
    let method = method(name);
    let mut sig = item.sig.clone();
    sig.generics = syn::Generics::default();
    let this = [(
        params[0].name.clone(),
        Ident::new("Self", Span::call_site()),
    )];
    Subst { map: &this }.visit_signature_mut(&mut sig);
    AbsolutePrimitives.visit_signature_mut(&mut sig);
    let inputs = sig.inputs.iter().zip(arg_names(&item.sig)).map(|(a, n)| {
        let ty = match a {
            syn::FnArg::Typed(pt) => &*pt.ty,
            syn::FnArg::Receiver(_) => unreachable!("`self` is rejected by `parse`"),
        };
        quote!(#n: #ty)
    });
    let rest: Vec<&Ident> = params[1..].iter().map(|p| &p.name).collect();
    let generics = rest_generics(&rest);
    let atomic = atomic_params(&item.sig, params);
    let declared = rest_generics(&rest.iter().map(|r| bounded(r, &atomic)).collect::<Vec<_>>());
    // `Self` in an `Atomic<Self>` needs the bound too, as a supertrait (so
    // that the function's `T: Elem` implies it).
    let self_atomic = atomic
        .contains(&params[0].name)
        .then(|| quote!(+ ::warpfit::__private::AtomicScalar));
    let sealed = instances.iter().map(|i| {
        let first = &i.types[0];
        let rest = rest_generics(&primitives(&i.types[1..]));
        quote!(impl sealed::Sealed #rest for ::core::primitive::#first {})
    });
    let first = &params[0].name;
    let doc = format!(
        "The types `{first}` stands for in the generic kernel `fn {name}`: the bound of its \
         plain-Rust function, implemented (and sealed) for the types the attribute lists."
    );
    quote! {
        mod sealed {
            pub trait Sealed #generics {}
        }

        #[doc = #doc]
        pub trait Elem #declared: sealed::Sealed #generics + ::core::marker::Sized #self_atomic {
            /// The function's body for `Self`.
            #[doc(hidden)]
            #[allow(clippy::too_many_arguments)]
            fn #method(#(#inputs),*);
        }

        #(#sealed)*
    }
}

/// `::core::primitive::t` for each type.
fn primitives(types: &[Ident]) -> Vec<TokenStream> {
    types
        .iter()
        .map(|t| quote!(::core::primitive::#t))
        .collect()
}

/// One instance's `Elem` implementation: the function's body with the
/// instance's types, beside the function (so that it sees what the
/// function sees), with the function's lint attributes. The body is written
/// once for several types, so a cast or a comparison that is idle for one
/// of them (`0 as T` with `T = i64`, `x < 0` with `T = u32`) is not a fault
/// of that instance: those lints are off.
fn elem_impl(item: &syn::ItemFn, inst: &Instance, func: &syn::ItemFn) -> TokenStream {
    let name = &item.sig.ident;
    let method = method(name);
    let first = &inst.types[0];
    let rest = rest_generics(&primitives(&inst.types[1..]));
    let lints = item.attrs.iter().filter(|a| {
        ["allow", "warn", "deny", "forbid", "expect"]
            .iter()
            .any(|l| a.path().is_ident(l))
    });
    let inputs = &func.sig.inputs;
    let block = &func.block;
    quote! {
        impl #name::Elem #rest for ::core::primitive::#first {
            #(#lints)*
            #[allow(
                clippy::unnecessary_fold,
                clippy::unnecessary_cast,
                clippy::absurd_extreme_comparisons,
                unused_comparisons
            )]
            fn #method(#inputs) #block
        }
    }
}

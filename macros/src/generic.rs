//! Generic kernels: `#[nested_reduce(T = [f32, f64])]` on `fn spmv<T>(..)`.
//!
//! The CUDA code is generated for concrete types, so a generic kernel is a
//! list of ordinary kernels. For each listed type (each combination, with
//! several parameters) the front end substitutes the type for the parameter
//! in the function's signature and body (`subst`) and runs the whole
//! pipeline (`nested::companion`) on the result: each instance is exactly
//! the kernel one would write by hand with that type, checked as such.
//! `emit` puts the instances' modules under one module named like the
//! function and keeps the function callable generically. The attribute's
//! rules are in `attr`.

mod attr;
mod emit;
mod subst;

use crate::{columns, nested, throttled};
use proc_macro2::{Delimiter, Group, Literal, TokenStream, TokenTree};

/// `#[nested_reduce(..)]`: a function without generics and arguments is an
/// ordinary kernel; anything else is a generic kernel, whose attribute and
/// generics are checked first. `Err` holds the diagnostics as
/// `compile_error!`s.
pub fn expand(attr: TokenStream, item: &syn::ItemFn) -> Result<TokenStream, TokenStream> {
    let (columns, attr) = columns::take(attr).map_err(|e| e.to_compile_error())?;
    let columns = columns.as_ref();
    let generics = &item.sig.generics;
    if attr.is_empty() && generics.params.is_empty() && generics.where_clause.is_none() {
        return nested::expand(item, columns).map_err(|e| e.to_compile_error());
    }
    let params = attr::params(attr, generics, &item.sig.ident).map_err(|e| e.to_compile_error())?;
    let mut item = item.clone();
    let throttled = throttled::take(&mut item).map_err(|e| e.to_compile_error())?;
    let instances = attr::instances(&params);
    let mut outcomes = Vec::new();
    for inst in &instances {
        let func = instantiate(&item, &params, inst);
        let kernel = quote::format_ident!("{}_{}", item.sig.ident, inst.module());
        let label = inst.label(&params);
        let module =
            nested::companion(&func, throttled.as_ref(), Some(&kernel), columns).and_then(|m| {
                emit::instance_module(m, inst.module(), &item.sig.ident, &kernel, &label)
            });
        outcomes.push(Outcome {
            label,
            func,
            module,
        });
    }
    if outcomes.iter().any(|o| o.module.is_err()) {
        return Err(report(&outcomes));
    }
    let (funcs, modules): (Vec<_>, Vec<_>) = outcomes
        .into_iter()
        .map(|o| (o.func, o.module.expect("checked above")))
        .unzip();
    Ok(emit::assemble(&item, &params, &instances, &funcs, modules))
}

/// One instance's expansion.
struct Outcome {
    /// `T = f32`.
    label: String,
    /// The function with the instance's types substituted.
    func: syn::ItemFn,
    /// Its module, or its diagnostics.
    module: syn::Result<TokenStream>,
}

/// The function of one instance: the generics dropped, each type parameter
/// replaced by its type in the signature and the body. Public, since its
/// module is a public child of the generic kernel's (whose own visibility
/// is the function's).
fn instantiate(
    item: &syn::ItemFn,
    params: &[attr::TypeParam],
    inst: &attr::Instance,
) -> syn::ItemFn {
    let map: Vec<_> = params
        .iter()
        .zip(&inst.types)
        .map(|(p, t)| (p.name.clone(), t.clone()))
        .collect();
    let mut func = item.clone();
    func.sig.generics = syn::Generics::default();
    subst::Subst { map: &map }.item(&mut func);
    func.vis = syn::parse_quote!(pub);
    func
}

/// The diagnostics of the instances that failed, each once: one that every
/// instance raises as it is (the same message at the same place), the
/// others prefixed with the instances that raise them ("in the `T = f64`
/// instance: ..."), in order of first appearance.
fn report(outcomes: &[Outcome]) -> TokenStream {
    struct Seen {
        key: (String, String),
        error: syn::Error,
        instances: Vec<usize>,
    }
    let mut seen: Vec<Seen> = Vec::new();
    for (i, o) in outcomes.iter().enumerate() {
        let Err(errors) = &o.module else { continue };
        for e in errors {
            // `Span` has no equality on stable Rust; its debug form names
            // the source bytes it covers.
            let key = (e.to_string(), format!("{:?}", e.span()));
            match seen.iter_mut().find(|s| s.key == key) {
                Some(s) => s.instances.push(i),
                None => seen.push(Seen {
                    key,
                    error: e,
                    instances: vec![i],
                }),
            }
        }
    }
    seen.iter()
        .map(|s| {
            if s.instances.len() == outcomes.len() {
                return s.error.to_compile_error();
            }
            let labels: Vec<String> = s
                .instances
                .iter()
                .map(|&i| format!("`{}`", outcomes[i].label))
                .collect();
            let which = match labels.split_last() {
                Some((last, [])) => format!("the {last} instance"),
                Some((last, init)) => format!("the {} and {last} instances", init.join(", ")),
                None => unreachable!("an error comes from an instance"),
            };
            relabel(&s.error, &format!("in {which}: {}", s.error))
        })
        .collect()
}

/// `e` as a `compile_error!` with the message `msg`, over the same source
/// range (`syn::Error` keeps both ends of a range but gives out only the
/// first).
fn relabel(e: &syn::Error, msg: &str) -> TokenStream {
    e.to_compile_error()
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                let span = g.stream().into_iter().next().map_or(g.span(), |t| t.span());
                let mut lit = Literal::string(msg);
                lit.set_span(span);
                let mut out = Group::new(Delimiter::Brace, TokenTree::Literal(lit).into());
                out.set_span(g.span());
                TokenTree::Group(out)
            }
            other => other,
        })
        .collect()
}

/// The messages of `compile_error!`s, for tests.
#[cfg(test)]
pub fn messages(errors: &TokenStream) -> Vec<String> {
    errors
        .clone()
        .into_iter()
        .filter_map(|tt| match tt {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                syn::parse2::<syn::LitStr>(g.stream())
                    .ok()
                    .map(|l| l.value())
            }
            _ => None,
        })
        .collect()
}

/// The instances' functions of a generic kernel, with their labels, for
/// tests of the substitution.
#[cfg(test)]
pub fn instances_of(attr: &str, src: &str) -> syn::Result<Vec<(String, syn::ItemFn)>> {
    let item: syn::ItemFn = syn::parse_str(src)?;
    let params = attr::params(attr.parse()?, &item.sig.generics, &item.sig.ident)?;
    Ok(attr::instances(&params)
        .iter()
        .map(|inst| (inst.label(&params), instantiate(&item, &params, inst)))
        .collect())
}

/// The generated Rust of a generic kernel, formatted, or its diagnostics'
/// messages, for tests of the front end.
#[cfg(test)]
pub fn rust_of(attr: &str, src: &str) -> Result<String, Vec<String>> {
    let item: syn::ItemFn = syn::parse_str(src).map_err(|e| vec![e.to_string()])?;
    let attr: TokenStream = attr.parse().map_err(|e| vec![format!("{e}")])?;
    let out = expand(attr, &item).map_err(|e| messages(&e))?;
    let file: syn::File = syn::parse2(out).map_err(|e| vec![e.to_string()])?;
    Ok(prettyplease::unparse(&file))
}

/// The messages [`report`] gives for instances labelled and failed as
/// listed (`None`: the instance expanded), for tests.
#[cfg(test)]
pub fn report_of(instances: Vec<(&str, Option<syn::Error>)>) -> Vec<String> {
    let func: syn::ItemFn = syn::parse_quote!(
        fn k() {}
    );
    let outcomes: Vec<Outcome> = instances
        .into_iter()
        .map(|(label, e)| Outcome {
            label: label.to_string(),
            func: func.clone(),
            module: e.map_or(Ok(TokenStream::new()), Err),
        })
        .collect();
    messages(&report(&outcomes))
}

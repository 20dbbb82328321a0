//! `#[nested_reduce(T = [f32, f64], I = [u32, u64])]`: the attribute's
//! model, checked against the function's generic parameters with spanned
//! errors, and the instances it asks for.

use crate::diag::Errors;
use proc_macro2::{Ident, TokenStream};
use quote::ToTokens;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{GenericParam, Generics, Token, Type};

/// The types a list may name: the language's scalar element types (what a
/// `&[T]`, `&mut [T]` or scalar parameter may hold).
const ELEMENT_TYPES: [&str; 8] = ["f32", "f64", "i32", "u32", "i64", "u64", "u8", "bool"];

/// Rust's primitive type names: a type parameter named like one would
/// shadow the primitive in the function as written, and its instances
/// would spell the primitive.
const PRIMITIVES: [&str; 17] = [
    "bool", "char", "str", "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16",
    "u32", "u64", "u128", "usize",
];

/// Whether `name` is one of Rust's primitive type names.
pub fn is_primitive(name: &str) -> bool {
    PRIMITIVES.contains(&name)
}

/// One type parameter and the element types it stands for, as listed.
pub struct TypeParam {
    pub name: Ident,
    pub types: Vec<Ident>,
}

/// One instance: a type for each parameter, in the function's order.
pub struct Instance {
    pub types: Vec<Ident>,
}

impl Instance {
    /// `T = f32, I = u32`, for diagnostics and documentation.
    pub fn label(&self, params: &[TypeParam]) -> String {
        params
            .iter()
            .zip(&self.types)
            .map(|(p, t)| format!("{} = {t}", p.name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The instance's module: its types joined by `_` (`f32`, `f32_u32`),
    /// spanned on the first type as the attribute lists it.
    pub fn module(&self) -> Ident {
        let name = self
            .types
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("_");
        Ident::new(&name, self.types[0].span())
    }
}

/// Every combination of the parameters' types, the first parameter's
/// types outermost, each list in its written order.
pub fn instances(params: &[TypeParam]) -> Vec<Instance> {
    let mut out = vec![Instance { types: Vec::new() }];
    for p in params {
        out = out
            .into_iter()
            .flat_map(|i| {
                p.types.iter().map(move |t| {
                    let mut types = i.types.clone();
                    types.push(t.clone());
                    Instance { types }
                })
            })
            .collect();
    }
    out
}

/// `T = [f32, f64]` as written.
struct Entry {
    name: Ident,
    bracket: syn::token::Bracket,
    types: Punctuated<Type, Token![,]>,
}

fn entry(input: ParseStream) -> syn::Result<Entry> {
    if !(input.peek(syn::Ident) && input.peek2(Token![=])) {
        return Err(input.error(
            "expected a type parameter and the element types it stands for, as in \
             `#[nested_reduce(T = [f32, f64])]`",
        ));
    }
    let name: Ident = input.parse()?;
    input.parse::<Token![=]>()?;
    if !input.peek(syn::token::Bracket) {
        return Err(input.error(format!(
            "expected `{name}`'s element types in brackets, as in `{name} = [f32, f64]`"
        )));
    }
    let content;
    let bracket = syn::bracketed!(content in input);
    let types = Punctuated::parse_terminated(&content)?;
    Ok(Entry {
        name,
        bracket,
        types,
    })
}

fn entries(attr: TokenStream) -> syn::Result<Vec<Entry>> {
    let parser = |input: ParseStream| {
        let mut out = Vec::new();
        while !input.is_empty() {
            out.push(entry(input)?);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(out)
    };
    parser.parse2(attr)
}

fn err(node: &impl ToTokens, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new_spanned(node, msg)
}

/// The element type `t` names, if it is one.
fn element_type(t: &Type) -> Option<Ident> {
    match t {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .get_ident()
            .filter(|i| ELEMENT_TYPES.contains(&i.to_string().as_str()))
            .cloned(),
        _ => None,
    }
}

/// The attribute's lists, checked: each parameter listed once, each list
/// non-empty, of element types, each named once.
fn lists(attr: TokenStream, errs: &mut Errors) -> syn::Result<Vec<TypeParam>> {
    let mut listed: Vec<TypeParam> = Vec::new();
    for e in entries(attr)? {
        if listed.iter().any(|p| p.name == e.name) {
            errs.push(err(
                &e.name,
                format!(
                    "type parameter `{}` is listed twice: give each parameter one list",
                    e.name
                ),
            ));
            continue;
        }
        if e.types.is_empty() {
            errs.push(syn::Error::new(
                e.bracket.span.join(),
                format!(
                    "`{}` lists no element type: a generic kernel is instantiated for each type \
                     listed, so list at least one, as in `{} = [f32, f64]`",
                    e.name, e.name
                ),
            ));
        }
        let mut types: Vec<Ident> = Vec::new();
        for t in &e.types {
            match element_type(t) {
                Some(i) if types.contains(&i) => {
                    errs.push(err(t, format!("`{i}` is listed twice for `{}`", e.name)))
                }
                Some(i) => types.push(i),
                None => errs.push(err(
                    t,
                    format!(
                        "`{}` is not an element type of the kernel language: list some of {}",
                        t.to_token_stream(),
                        ELEMENT_TYPES.join(", ")
                    ),
                )),
            }
        }
        listed.push(TypeParam {
            name: e.name,
            types,
        });
    }
    Ok(listed)
}

/// The type parameters of a generic kernel, in the function's order, with
/// the types the attribute lists for each. The function's generics must be
/// exactly the listed parameters: type parameters without bounds (the list
/// is the bound: every instance is checked as the kernel it becomes), no
/// lifetimes, const parameters or `where` clause.
pub fn params(attr: TokenStream, generics: &Generics, func: &Ident) -> syn::Result<Vec<TypeParam>> {
    let mut errs = Errors::default();
    let mut listed = lists(attr, &mut errs)?;
    let mut out = Vec::new();
    for p in &generics.params {
        match p {
            GenericParam::Lifetime(l) => errs.push(err(
                l,
                "lifetime parameters are not supported in a #[nested_reduce] kernel: its arrays \
                 are borrowed for the call, with elided lifetimes",
            )),
            GenericParam::Const(c) => errs.push(err(
                c,
                "const generic parameters are not supported in a #[nested_reduce] kernel: a \
                 generic kernel is generic over element types only, listed in the attribute",
            )),
            GenericParam::Type(tp) => {
                let name = &tp.ident;
                if tp.colon_token.is_some() || !tp.bounds.is_empty() {
                    let mut bounds = tp.colon_token.to_token_stream();
                    tp.bounds.to_tokens(&mut bounds);
                    errs.push(err(
                        &bounds,
                        format!(
                            "bounds are not needed on `{name}`: it stands for each type the \
                             attribute lists in turn, and each instance is checked as the \
                             kernel it becomes; remove the bound"
                        ),
                    ));
                }
                if let Some(d) = &tp.default {
                    errs.push(err(
                        d,
                        format!("`{name}` takes each listed type in turn: it has no default"),
                    ));
                }
                if is_primitive(&name.to_string()) {
                    errs.push(err(
                        name,
                        format!("a type parameter may not be named `{name}`, like a primitive type: name it `T`, for example"),
                    ));
                }
                match listed.iter().position(|l| l.name == *name) {
                    Some(i) => out.push(listed.remove(i)),
                    None => errs.push(err(
                        name,
                        format!(
                            "type parameter `{name}` has no element types: list them in the \
                             attribute, as in `#[nested_reduce({name} = [f32, f64])]` (the CUDA \
                             code is generated for concrete types)"
                        ),
                    )),
                }
            }
        }
    }
    if let Some(w) = &generics.where_clause {
        errs.push(err(
            w,
            "a `where` clause is not supported on a generic #[nested_reduce] kernel: its type \
             parameters range over the types the attribute lists, and need no bounds",
        ));
    }
    for l in &listed {
        errs.push(err(
            &l.name,
            format!(
                "`{}` is not a type parameter of `fn {func}`: declare it among the function's \
                 type parameters, or remove it from the attribute",
                l.name
            ),
        ));
    }
    errs.finish()?;
    Ok(out)
}

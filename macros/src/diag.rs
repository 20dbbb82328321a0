//! Diagnostics: source ranges ([`SourceRange`]) and an accumulator ([`Errors`]) so
//! that one expansion reports every independent error, each on the
//! offending tokens.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// A source range for diagnostics: first and last token of a node, so that
/// errors underline the whole offending construct on stable Rust.
#[derive(Debug, Clone, Copy)]
pub struct SourceRange {
    pub lo: Span,
    pub hi: Span,
}

impl SourceRange {
    pub fn of(node: &impl ToTokens) -> SourceRange {
        let mut it = node.to_token_stream().into_iter();
        let lo = it.next().map_or_else(Span::call_site, |t| t.span());
        let hi = it.last().map_or(lo, |t| t.span());
        SourceRange { lo, hi }
    }

    pub fn single(s: Span) -> SourceRange {
        SourceRange { lo: s, hi: s }
    }

    pub fn to(self, other: SourceRange) -> SourceRange {
        SourceRange {
            lo: self.lo,
            hi: other.hi,
        }
    }

    /// A `syn::Error` covering this range.
    pub fn error(self, msg: impl std::fmt::Display) -> syn::Error {
        let mut ts = TokenStream::new();
        ts.extend([proc_macro2::TokenTree::Ident(proc_macro2::Ident::new(
            "a", self.lo,
        ))]);
        ts.extend([proc_macro2::TokenTree::Ident(proc_macro2::Ident::new(
            "b", self.hi,
        ))]);
        syn::Error::new_spanned(ts, msg)
    }
}

/// Accumulates diagnostics so one expansion reports every independent error.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    /// Records the error of `r`, if any, and passes its value on.
    pub fn ok<T>(&mut self, r: syn::Result<T>) -> Option<T> {
        r.map_err(|e| self.push(e)).ok()
    }

    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

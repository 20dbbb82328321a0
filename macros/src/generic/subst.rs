//! Syntax rewrites of a generic kernel: a type parameter replaced by a
//! type, primitive types spelled by their absolute path, and a companion
//! module moved one level down.

use proc_macro2::{Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};
use syn::visit_mut::{self, VisitMut};

/// Replaces each type parameter by its type wherever the function names it
/// as a type: `T` in a type (`&[T]`, `Atomic<T>`, `let v: T`, `as T`) and
/// the first segment of a longer path (`T::MAX`, `T::min`, `<T>::MAX`). A
/// one-segment `T` in an expression is a value, as in Rust, and is kept.
/// The replacement keeps the span of the `T` it replaces, so diagnostics of
/// an instance point at the user's code.
pub struct Subst<'a> {
    /// (parameter, replacement) pairs.
    pub map: &'a [(Ident, Ident)],
}

impl Subst<'_> {
    fn replacement(&self, i: &Ident) -> Option<Ident> {
        self.map
            .iter()
            .find(|(p, _)| p == i)
            .map(|(_, r)| Ident::new(&r.to_string(), i.span()))
    }

    /// The function's signature and body, substituted.
    pub fn item(&mut self, item: &mut syn::ItemFn) {
        self.visit_signature_mut(&mut item.sig);
        self.visit_block_mut(&mut item.block);
    }
}

impl VisitMut for Subst<'_> {
    fn visit_type_path_mut(&mut self, t: &mut syn::TypePath) {
        if t.qself.is_none() && t.path.leading_colon.is_none() && t.path.segments.len() == 1 {
            let seg = &mut t.path.segments[0];
            if seg.arguments.is_none() {
                if let Some(r) = self.replacement(&seg.ident) {
                    seg.ident = r;
                    return;
                }
            }
        }
        visit_mut::visit_type_path_mut(self, t);
    }

    fn visit_path_mut(&mut self, p: &mut syn::Path) {
        if p.leading_colon.is_none() && p.segments.len() > 1 {
            let seg = &mut p.segments[0];
            if seg.arguments.is_none() {
                if let Some(r) = self.replacement(&seg.ident) {
                    seg.ident = r;
                }
            }
        }
        visit_mut::visit_path_mut(self, p);
    }
}

/// Spells each primitive type by its absolute path
/// (`::core::primitive::f32`): inside a generic kernel's module, `f32`
/// names the f32 instance's module first.
pub struct AbsolutePrimitives;

impl VisitMut for AbsolutePrimitives {
    fn visit_type_path_mut(&mut self, t: &mut syn::TypePath) {
        if t.qself.is_none() && t.path.leading_colon.is_none() {
            if let Some(i) = t.path.get_ident() {
                if super::attr::is_primitive(&i.to_string()) {
                    let span = i.span();
                    let i = i.clone();
                    t.path = syn::parse_quote_spanned!(span=> ::core::primitive::#i);
                    return;
                }
            }
        }
        visit_mut::visit_type_path_mut(self, t);
    }
}

/// Moves a companion module one level down (from beside the kernel's
/// function into the generic kernel's module): every path that leaves it
/// through `super` (`use super::*`, `super::f::cpu` of a device function,
/// `pub(super)`) gets one `super` more, at any depth of nested modules,
/// in macro invocations too. Paths that stay inside (`self::`, plain
/// names) and absolute paths are unchanged.
pub struct OneLevelDown {
    /// How many modules deep inside the companion the visitor is (0 in the
    /// companion itself): a path leaves it with more leading `super`s.
    pub depth: usize,
}

fn is_super(i: &Ident) -> bool {
    i == "super"
}

impl VisitMut for OneLevelDown {
    fn visit_item_mod_mut(&mut self, m: &mut syn::ItemMod) {
        self.depth += 1;
        visit_mut::visit_item_mod_mut(self, m);
        self.depth -= 1;
    }

    fn visit_path_mut(&mut self, p: &mut syn::Path) {
        let supers = p.segments.iter().take_while(|s| is_super(&s.ident)).count();
        if p.leading_colon.is_none() && supers > self.depth {
            let span = p.segments[0].ident.span();
            p.segments
                .insert(0, syn::PathSegment::from(Ident::new("super", span)));
        }
        visit_mut::visit_path_mut(self, p);
    }

    fn visit_vis_restricted_mut(&mut self, v: &mut syn::VisRestricted) {
        visit_mut::visit_vis_restricted_mut(self, v);
        // `pub(super)` became `pub(super::super)`, which needs its `in`.
        if v.path.segments.len() > 1 && v.in_token.is_none() {
            v.in_token = Some(Default::default());
        }
    }

    fn visit_item_use_mut(&mut self, u: &mut syn::ItemUse) {
        let mut supers = 0;
        let mut span = Span::call_site();
        let mut tree = &u.tree;
        while let syn::UseTree::Path(p) = tree {
            if !is_super(&p.ident) {
                break;
            }
            if supers == 0 {
                span = p.ident.span();
            }
            supers += 1;
            tree = &p.tree;
        }
        if u.leading_colon.is_none() && supers > self.depth {
            let inner = u.tree.clone();
            u.tree = syn::UseTree::Path(syn::UsePath {
                ident: Ident::new("super", span),
                colon2_token: Default::default(),
                tree: Box::new(inner),
            });
        }
        visit_mut::visit_item_use_mut(self, u);
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        m.tokens = one_level_down(std::mem::take(&mut m.tokens), self.depth);
        visit_mut::visit_macro_mut(self, m);
    }
}

fn is_colon(t: Option<&TokenTree>) -> bool {
    matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == ':')
}

fn is_super_token(t: Option<&TokenTree>) -> bool {
    matches!(t, Some(TokenTree::Ident(i)) if is_super(i))
}

/// [`OneLevelDown`] on the tokens of a macro invocation: a run of `super`s
/// that starts a path (not after `::`) and is longer than `depth` gets one
/// more.
fn one_level_down(tokens: TokenStream, depth: usize) -> TokenStream {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(tts.len());
    for (i, tt) in tts.iter().enumerate() {
        let starts_path = i < 2 || !(is_colon(tts.get(i - 1)) && is_colon(tts.get(i - 2)));
        if is_super_token(Some(tt)) && starts_path {
            let mut j = i;
            let mut run = 0;
            while is_super_token(tts.get(j)) {
                run += 1;
                if is_colon(tts.get(j + 1)) && is_colon(tts.get(j + 2)) {
                    j += 3;
                } else {
                    break;
                }
            }
            if run > depth {
                out.push(TokenTree::Ident(Ident::new("super", tt.span())));
                out.push(TokenTree::Punct(Punct::new(':', Spacing::Joint)));
                out.push(TokenTree::Punct(Punct::new(':', Spacing::Alone)));
            }
        }
        out.push(match tt {
            TokenTree::Group(g) => {
                let mut inner = Group::new(g.delimiter(), one_level_down(g.stream(), depth));
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            other => other.clone(),
        });
    }
    out.into_iter().collect()
}

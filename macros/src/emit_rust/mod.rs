//! The CPU twin (a `NestedKernel` implementation) and the launch API: the
//! expression emitter here, the kernel's module item by item in `module`.
//!
//! The twin spells out Rust's *release* semantics so that debug builds agree
//! with the GPU: wrapping integer arithmetic, masked shifts, integer division
//! by zero as a `Fault`, checked indexing. Nothing in it can panic.
//! Plumbing names use `Span::mixed_site()` so they never capture user locals.

use crate::analyse::Access;
use crate::ir::{
    ArgType, AtomicOp, BinOp, ConstKind, DeviceCall, Expr, ExprKind, Lit, Local, LocalId, Method,
    Param, Stmt, Ty, UnOp,
};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::BTreeSet;

mod module;
mod throttle;
pub use module::module;
pub use throttle::items as throttle_items;

/// A hygienic identifier for generated plumbing (it never captures, nor is
/// captured by, a user's name).
pub fn plumbing(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

pub fn fault() -> TokenStream {
    quote!(::warpfit::__private::Fault)
}

/// A type by its absolute path (`::core::primitive::f32`, a tuple of them).
pub fn prim(t: Ty) -> TokenStream {
    match (t.ident(), t.tuple()) {
        (Some(i), _) => quote!(::core::primitive::#i),
        (None, Some(tu)) => {
            let elems = tu.elems().map(prim);
            quote!((#(#elems,)*))
        }
        (None, None) => unreachable!("a type without a name is a tuple"),
    }
}

/// A type as the user writes it (`f32`, `(f32, u32)`).
pub(crate) fn ty(t: Ty) -> TokenStream {
    match (t.ident(), t.tuple()) {
        (Some(i), _) => quote!(#i),
        (None, Some(tu)) => {
            let elems = tu.elems().map(ty);
            quote!((#(#elems,)*))
        }
        (None, None) => unreachable!("a type without a name is a tuple"),
    }
}

/// A device function's path as seen from a generated module (one level below
/// the user's code), optionally followed by an item of its companion module:
/// `f` → `f::cpu`, `self::f` → `super::f::cpu`, `super::f` → `super::super::f::cpu`.
pub fn companion(path: &syn::Path, item: Option<&str>) -> TokenStream {
    let mut p = path.clone();
    let mut prefix = TokenStream::new();
    if p.leading_colon.is_none() {
        match p.segments.first().map(|s| s.ident.to_string()).as_deref() {
            Some("self") => p.segments[0].ident = Ident::new("super", p.segments[0].ident.span()),
            Some("super") => prefix = quote!(super::),
            _ => {}
        }
    }
    match item {
        Some(item) => {
            // Spanned like the call, so that errors about it point there.
            let span = p
                .segments
                .last()
                .map_or_else(Span::call_site, |s| s.ident.span());
            let item = Ident::new(item, span);
            quote!(#prefix #p::#item)
        }
        None => quote!(#prefix #p),
    }
}

/// A compile-time check that the device function a call names is really
/// called that: the CUDA calls `warpfit_user::<last path segment>`, so a
/// `use path::f as g;` rename would name a function that does not exist.
pub fn name_check(c: &DeviceCall) -> TokenStream {
    let name_const = companion(&c.path, Some("NAME"));
    let written = c.name();
    let msg = format!(
        "`{written}` is a renamed #[device_fn]: kernels must call a device function by its own name (the CUDA side sees only the name)"
    );
    let span = c
        .path
        .segments
        .last()
        .map_or_else(Span::call_site, |s| s.ident.span());
    quote::quote_spanned!(span=>
        const _: () = {
            let a = #name_const.as_bytes();
            let b = #written.as_bytes();
            let mut same = a.len() == b.len();
            let mut i = 0;
            while same && i < a.len() {
                same = a[i] == b[i];
                i += 1;
            }
            ::core::assert!(same, #msg);
        };
    )
}

/// The type of argument `i` of a device call: the inferred type, or for a
/// callee-typed literal the companion's alias of the parameter's own type.
pub fn arg_type(c: &DeviceCall, i: usize) -> TokenStream {
    match c.args[i] {
        ArgType::Inferred(t) => ty(t),
        ArgType::CalleeParam => companion(&c.path, Some(&format!("Param{i}"))),
    }
}

/// The argument types of a device call, as `arg_type` spells them.
pub fn arg_types(c: &DeviceCall) -> Vec<TokenStream> {
    (0..c.args.len()).map(|i| arg_type(c, i)).collect()
}

/// The device functions `calls` name, each once, in order of first call
/// (what `SPEC.device_fns` and a companion's `deps` list).
pub fn distinct_callees(calls: &[DeviceCall]) -> Vec<&syn::Path> {
    let mut seen = BTreeSet::new();
    calls
        .iter()
        .filter(|c| seen.insert(companion(&c.path, None).to_string()))
        .map(|c| &c.path)
        .collect()
}

/// Compile-time checks of the device functions a kernel or device function
/// calls: each is called by its own name ([`name_check`]), and with the
/// signature inference gave the call (`const _: fn(f32) -> f32 = path;`,
/// spanned on the call's path so that a wrong guess points at the call).
pub fn call_checks(calls: &[DeviceCall]) -> TokenStream {
    let mut seen = BTreeSet::new();
    let mut checks = Vec::new();
    let mut check_seen = BTreeSet::new();
    for c in calls {
        if seen.insert(companion(&c.path, None).to_string()) {
            checks.push(name_check(c));
        }
        let fp = companion(&c.path, None);
        let args = arg_types(c);
        let ret = ty(c.ret);
        let check = quote!(const _: fn(#(#args),*) -> #ret = #fp;);
        if check_seen.insert(check.to_string()) {
            let span = c
                .path
                .segments
                .last()
                .map_or_else(Span::call_site, |s| s.ident.span());
            checks.push(quote::quote_spanned!(span=> const _: fn(#(#args),*) -> #ret = #fp;));
        }
    }
    quote!(#(#checks)*)
}

/// The typed function pointer through which the twin makes device call `i`.
pub(crate) fn call_const(i: usize) -> Ident {
    format_ident!("__WF_CALL_{}", i, span = Span::mixed_site())
}

/// Declares the twin's device calls as fn pointers of the types inference
/// gave them, spanned on each call: a wrong guess is one error at the call,
/// and the code that uses the pointer type-checks regardless.
pub fn call_consts(calls: &[DeviceCall]) -> TokenStream {
    let f = fault();
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = call_const(i);
            let p = companion(&c.path, Some("cpu"));
            let args = arg_types(c);
            let ret = ty(c.ret);
            let span = c
                .path
                .segments
                .last()
                .map_or_else(Span::call_site, |s| s.ident.span());
            quote::quote_spanned!(span=>
                #[allow(non_upper_case_globals)]
                const #name: fn(#(#args),*) -> ::core::result::Result<#ret, #f> = #p;
            )
        })
        .collect()
}

pub struct Emitter<'a> {
    pub locals: &'a [Local],
    pub params: &'a [Param],
    /// Loads whose bound the caller has already checked for the whole
    /// range: read without a per-element check.
    pub prechecked: Option<Prechecked<'a>>,
}

/// What `precheck` covers, so that `fold_range_prechecked` reads unchecked.
#[derive(Clone, Copy)]
pub struct Prechecked<'a> {
    /// The fine-task index.
    pub fine: LocalId,
    /// The kernel's access facts: loads at `fine` of `direct` arrays, and
    /// the `prechecked_gathers`, were checked for the whole range.
    pub access: &'a Access,
}

impl Emitter<'_> {
    fn is_prechecked(&self, array: usize, idx: &Expr) -> bool {
        self.prechecked
            .is_some_and(|pc| pc.access.is_prechecked(pc.fine, self.params, array, idx))
    }

    pub fn local(&self, id: LocalId) -> Ident {
        Ident::new(&self.locals[id].name, Span::call_site())
    }

    fn param(&self, i: usize) -> &Ident {
        &self.params[i].name
    }

    fn lit(&self, l: &Lit, t: Ty) -> TokenStream {
        match l {
            Lit::Bool(b) => quote!(#b),
            Lit::Int(v) => {
                let lit = proc_macro2::Literal::u128_unsuffixed(v.unsigned_abs());
                let lit: TokenStream = format!("{lit}{}", t.rust_name())
                    .parse()
                    .expect("valid literal");
                if *v < 0 {
                    quote!((-#lit))
                } else {
                    lit
                }
            }
            Lit::Float(digits) => {
                let mut d = digits.clone();
                if d.ends_with('.') {
                    d.push('0');
                }
                let lit: TokenStream = format!("{d}{}", t.rust_name())
                    .parse()
                    .expect("valid literal");
                lit
            }
        }
    }

    /// A tuple literal or an element of a tuple.
    fn tuple_expr(&self, x: &Expr) -> TokenStream {
        match &x.kind {
            ExprKind::Tuple(elems) => {
                let elems = elems.iter().map(|e| self.expr(e));
                quote!((#(#elems,)*))
            }
            ExprKind::Field(a, i) => {
                let a = self.expr(a);
                let i = syn::Index::from(*i);
                quote!((#a).#i)
            }
            _ => unreachable!("called on tuples only"),
        }
    }

    pub fn expr(&self, x: &Expr) -> TokenStream {
        let t = x.ty;
        let f = fault();
        match &x.kind {
            ExprKind::Lit(l) => self.lit(l, t),
            ExprKind::Local(id) => {
                let n = self.local(*id);
                quote!(#n)
            }
            ExprKind::Scalar(i) => {
                let n = self.param(*i);
                quote!(self.#n)
            }
            ExprKind::Acc => {
                let a = plumbing("__acc");
                quote!(#a)
            }
            ExprKind::Const(c) => {
                let p = prim(t);
                let name = format_ident!(
                    "{}",
                    match c {
                        ConstKind::Infinity => "INFINITY",
                        ConstKind::NegInfinity => "NEG_INFINITY",
                        ConstKind::Nan => "NAN",
                        ConstKind::Epsilon => "EPSILON",
                        ConstKind::Max => "MAX",
                        ConstKind::Min => "MIN",
                    }
                );
                quote!(#p::#name)
            }
            ExprKind::Unary(op, a) => {
                let a = self.expr(a);
                match (op, t.is_int()) {
                    (UnOp::Neg, true) => quote!((#a).wrapping_neg()),
                    (UnOp::Neg, false) => quote!((-(#a))),
                    (UnOp::Not, _) => quote!((!(#a))),
                }
            }
            ExprKind::Binary(op, a, b) => {
                let int = a.ty.is_int();
                let (a, b) = (self.expr(a), self.expr(b));
                match op {
                    BinOp::Add if int => quote!((#a).wrapping_add(#b)),
                    BinOp::Sub if int => quote!((#a).wrapping_sub(#b)),
                    BinOp::Mul if int => quote!((#a).wrapping_mul(#b)),
                    BinOp::Div | BinOp::Rem if int => {
                        let (n, d) = (plumbing("__n"), plumbing("__d"));
                        let m = if *op == BinOp::Div {
                            quote!(wrapping_div)
                        } else {
                            quote!(wrapping_rem)
                        };
                        quote!({
                            let #n = #a;
                            let #d = #b;
                            if #d == 0 {
                                return ::core::result::Result::Err(#f::DivisionByZero);
                            }
                            #n.#m(#d)
                        })
                    }
                    BinOp::Shl | BinOp::Shr => {
                        let m = if *op == BinOp::Shl {
                            quote!(wrapping_shl)
                        } else {
                            quote!(wrapping_shr)
                        };
                        quote!((#a).#m((#b) as ::core::primitive::u32))
                    }
                    _ => {
                        let sym: TokenStream = op.symbol().parse().expect("operator");
                        quote!((#a #sym #b))
                    }
                }
            }
            ExprKind::Cast(a) => {
                let to = ty(t);
                let a = self.expr(a);
                quote!(((#a) as #to))
            }
            ExprKind::Load(i, idx) if self.is_prechecked(*i, idx) => {
                let n = self.param(*i);
                let idx = self.expr(idx);
                // SAFETY: `fold_range_prechecked` runs only on ranges inside one
                // that `precheck` passed: `hi <= len` for every array read at the
                // fine-task index (and `k < hi`), and every `index[lo..hi]` below
                // the length of each array gathered through it.
                quote!(unsafe { *self.#n.get_unchecked(#idx) })
            }
            ExprKind::Load(i, idx) => {
                let n = self.param(*i);
                let name = n.to_string();
                let idx = self.expr(idx);
                let (iv, v) = (plumbing("__i"), plumbing("__v"));
                quote!({
                    let #iv: ::core::primitive::usize = #idx;
                    match self.#n.get(#iv) {
                        ::core::option::Option::Some(#v) => *#v,
                        ::core::option::Option::None => {
                            return ::core::result::Result::Err(#f::index(#name, #iv, self.#n.len()))
                        }
                    }
                })
            }
            ExprKind::LoadOut(i) => {
                let get = format_ident!("__wf_get_{}", self.param(*i), span = Span::mixed_site());
                let task = plumbing("__task");
                quote!(self.#get(#task)?)
            }
            ExprKind::If(c, a, b) => {
                let (c, a, b) = (self.expr(c), self.expr(a), self.expr(b));
                quote!(if #c { #a } else { #b })
            }
            ExprKind::Block(lets, tail) => {
                let lets = lets.iter().map(|(id, v)| self.let_(*id, v));
                let tail = self.expr(tail);
                quote!({ #(#lets)* #tail })
            }
            ExprKind::Method(m, args) => self.method(*m, args),
            ExprKind::CalleeTypedLit { lit, span } => callee_typed_lit(lit, *span),
            ExprKind::Call(i, args) => {
                let f = call_const(*i);
                let args = args.iter().map(|a| self.expr(a));
                quote!(#f(#(#args),*)?)
            }
            ExprKind::Atomic {
                op,
                param,
                index,
                args,
            } => self.atomic(op, *param, index, args),
            ExprKind::Tuple(_) | ExprKind::Field(..) => self.tuple_expr(x),
            ExprKind::LoadShared(i, idx) => {
                let (iv, a) = (plumbing("__i"), plumbing("__a"));
                let element = self.shared_element(*i, idx, &iv);
                quote!({
                    #element
                    #a.load()
                })
            }
        }
    }

    /// `let __a = &array[idx];` checked: the element of shared array `i`
    /// (named `__a`), or the index fault. `iv` names the evaluated index.
    fn shared_element(&self, i: usize, idx: &Expr, iv: &Ident) -> TokenStream {
        let f = fault();
        let n = self.param(i);
        let name = n.to_string();
        let idx = self.expr(idx);
        let a = plumbing("__a");
        quote! {
            let #iv: ::core::primitive::usize = #idx;
            let #a = match self.#n.get(#iv) {
                ::core::option::Option::Some(#a) => #a,
                ::core::option::Option::None => {
                    return ::core::result::Result::Err(#f::index(#name, #iv, self.#n.len()))
                }
            };
        }
    }

    /// An atomic intrinsic through the runtime's own function, in the
    /// plain function's order: `&a[i]` (the index checked), then the
    /// values, then the update.
    fn atomic(&self, op: &AtomicOp, param: usize, index: &Expr, args: &[Expr]) -> TokenStream {
        let (iv, a) = (plumbing("__i"), plumbing("__a"));
        let element = self.shared_element(param, index, &iv);
        let names: Vec<Ident> = (0..args.len())
            .map(|j| plumbing(&format!("__v{j}")))
            .collect();
        let values = args.iter().map(|x| self.expr(x));
        let call = match op {
            AtomicOp::Apply(c) => {
                let f = call_const(*c);
                let v = &names[0];
                quote!(::warpfit::__private::try_atomic_apply(#a, #v, #f)?)
            }
            op => {
                let name = format_ident!("{}", op.name());
                quote!(::warpfit::__private::#name(#a, #(#names),*))
            }
        };
        quote!({
            #element
            #(let #names = #values;)*
            #call
        })
    }

    fn method(&self, m: Method, args: &[Expr]) -> TokenStream {
        let recv_ty = args[0].ty;
        let p = prim(recv_ty);
        let a: Vec<_> = args.iter().map(|a| self.expr(a)).collect();
        let name = format_ident!("{}", m.name());
        match m {
            Method::Min | Method::Max if recv_ty.is_int() => {
                quote!(::core::cmp::Ord::#name(#(#a),*))
            }
            Method::Abs if recv_ty.is_int() => quote!(#p::wrapping_abs(#(#a),*)),
            Method::Pow => quote!(#p::wrapping_pow(#(#a),*)),
            // `clamp` without the std assertion (`min <= max`, no NaN bound), so
            // that it cannot panic; same definition as the device library.
            Method::Clamp => {
                let (x, lo, hi) = (plumbing("__x"), plumbing("__lo"), plumbing("__hi"));
                let (a0, a1, a2) = (&a[0], &a[1], &a[2]);
                quote!({
                    let #x = #a0;
                    let #lo = #a1;
                    let #hi = #a2;
                    if #x < #lo { #lo } else if #x > #hi { #hi } else { #x }
                })
            }
            _ => quote!(#p::#name(#(#a),*)),
        }
    }

    pub fn let_(&self, id: LocalId, v: &Expr) -> TokenStream {
        let n = self.local(id);
        let t = ty(self.locals[id].ty);
        let v = self.expr(v);
        quote!(let #n: #t = #v;)
    }

    pub fn stmt(&self, s: &Stmt) -> TokenStream {
        match s {
            Stmt::Let(id, v) => self.let_(*id, v),
            Stmt::Store { param, value } => {
                let set =
                    format_ident!("__wf_set_{}", self.param(*param), span = Span::mixed_site());
                let task = plumbing("__task");
                let v = self.expr(value);
                quote!(self.#set(#task, #v)?;)
            }
            Stmt::If(c, a, b) => {
                let c = self.expr(c);
                let a = a.iter().map(|s| self.stmt(s));
                let b = b.iter().map(|s| self.stmt(s));
                quote!(if #c { #(#a)* } else { #(#b)* })
            }
            Stmt::Eval(v) => {
                let v = self.expr(v);
                quote!(let _ = #v;)
            }
            Stmt::Push { param, item } => {
                let n = self.param(*param);
                let name = n.to_string();
                let (f, e) = (fault(), plumbing("__e"));
                let item = self.expr(item);
                quote! {
                    if let ::core::result::Result::Err(#e) = self.#n.push(#item) {
                        return ::core::result::Result::Err(#f::push(#name, #e));
                    }
                }
            }
        }
    }
}

/// An unsuffixed literal with the user's span: rustc types it from the
/// parameter it is passed to, and reports a literal that does not fit there.
fn callee_typed_lit(lit: &Lit, span: Span) -> TokenStream {
    let (negative, digits) = match lit {
        Lit::Int(v) => (*v < 0, v.unsigned_abs().to_string()),
        Lit::Float(d) => {
            let (negative, d) = d
                .strip_prefix('-')
                .map_or((false, d.as_str()), |d| (true, d));
            let mut d = d.to_string();
            if d.ends_with('.') {
                d.push('0');
            }
            (negative, d)
        }
        Lit::Bool(b) => (false, b.to_string()),
    };
    let mut token: proc_macro2::Literal = digits.parse().expect("a literal's own digits");
    token.set_span(span);
    if negative {
        quote::quote_spanned!(span=> -#token)
    } else {
        quote!(#token)
    }
}

/// Locals an expression reads.
pub fn uses(x: &Expr, out: &mut BTreeSet<LocalId>) {
    x.visit(&mut |node| {
        if let ExprKind::Local(id) = node.kind {
            out.insert(id);
        }
    });
}

/// Type of a local in a `Param` list (for device functions).
pub fn rust_ty(t: Ty) -> TokenStream {
    ty(t)
}

//! The CPU twin (a `NestedKernel` implementation) and the launch API.
//!
//! The twin spells out Rust's *release* semantics so that debug builds agree
//! with the GPU: wrapping integer arithmetic, masked shifts, integer division
//! by zero as a `Fault`, checked indexing. Nothing in it can panic.
//! Plumbing names use `Span::mixed_site()` so they never capture user locals.

use crate::ir::{
    ArgType, BinOp, ConstKind, DeviceCall, Expr, ExprKind, Kernel, Lit, Local, LocalId, Method,
    Param, ParamKind, Reduce, Stmt, Ty, UnOp,
};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::BTreeSet;

/// A hygienic identifier for generated plumbing.
pub fn h(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

pub fn fault() -> TokenStream {
    quote!(::warpfit::__private::Fault)
}

pub fn prim(t: Ty) -> TokenStream {
    let i = t.ident();
    quote!(::core::primitive::#i)
}

fn ty(t: Ty) -> TokenStream {
    let i = t.ident();
    quote!(#i)
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

/// The typed function pointer through which the twin makes device call `i`.
fn call_const(i: usize) -> Ident {
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
    pub k: LocalId,
    /// Arrays read at `k` (`val[k]`, `col[k]`): `hi <= len` was checked.
    pub direct: &'a BTreeSet<usize>,
    /// `(gathered, index)` pairs read as `gathered[index[k] as usize]`: every
    /// `index[lo..hi]` was checked to be below `gathered.len()`.
    pub gathers: &'a BTreeSet<(usize, usize)>,
}

impl Emitter<'_> {
    fn is_prechecked(&self, array: usize, idx: &Expr) -> bool {
        let Some(pc) = self.prechecked else {
            return false;
        };
        match &idx.kind {
            ExprKind::Local(id) => *id == pc.k && pc.direct.contains(&array),
            _ => gather_index(idx, pc.k, self.params)
                .is_some_and(|c| pc.direct.contains(&c) && pc.gathers.contains(&(array, c))),
        }
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
                let a = h("__acc");
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
                        let (n, d) = (h("__n"), h("__d"));
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
                let (iv, v) = (h("__i"), h("__v"));
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
                let task = h("__task");
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
        }
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
                let (x, lo, hi) = (h("__x"), h("__lo"), h("__hi"));
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
                let task = h("__task");
                let v = self.expr(value);
                quote!(self.#set(#task, #v)?;)
            }
            Stmt::If(c, a, b) => {
                let c = self.expr(c);
                let a = a.iter().map(|s| self.stmt(s));
                let b = b.iter().map(|s| self.stmt(s));
                quote!(if #c { #(#a)* } else { #(#b)* })
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

/// Calls `f` on `x` and every expression inside it, parents first.
fn visit(x: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(x);
    match &x.kind {
        ExprKind::Unary(_, a) | ExprKind::Cast(a) | ExprKind::Load(_, a) => visit(a, f),
        ExprKind::Binary(_, a, b) => {
            visit(a, f);
            visit(b, f);
        }
        ExprKind::If(a, b, c) => {
            visit(a, f);
            visit(b, f);
            visit(c, f);
        }
        ExprKind::Block(lets, t) => {
            lets.iter().for_each(|(_, v)| visit(v, f));
            visit(t, f);
        }
        ExprKind::Method(_, args) | ExprKind::Call(_, args) => {
            args.iter().for_each(|a| visit(a, f))
        }
        _ => {}
    }
}

/// Locals an expression reads.
pub fn uses(x: &Expr, out: &mut BTreeSet<LocalId>) {
    visit(x, &mut |e| {
        if let ExprKind::Local(id) = e.kind {
            out.insert(id);
        }
    });
}

/// Input arrays that `x` reads at exactly the local `k` (`val[k]`, `col[k]`):
/// one bound check per range covers them all.
pub(crate) fn direct_loads(x: &Expr, k: LocalId, out: &mut BTreeSet<usize>) {
    visit(x, &mut |e| {
        if let ExprKind::Load(i, a) = &e.kind {
            if matches!(a.kind, ExprKind::Local(id) if id == k) {
                out.insert(*i);
            }
        }
    });
}

/// The index array `c` when `idx` is `c[k] as usize` with `c` of an unsigned
/// element type: then every `c[lo..hi]` below `len` bounds every such load
/// of a range. (Signed indices are excluded: a negative value cast to
/// `usize` is huge, which a comparison of the signed values would not show.)
fn gather_index(idx: &Expr, k: LocalId, params: &[Param]) -> Option<usize> {
    let ExprKind::Cast(inner) = &idx.kind else {
        return None;
    };
    let ExprKind::Load(c, at) = &inner.kind else {
        return None;
    };
    let unsigned = matches!(params[*c].ty, Ty::U8 | Ty::U32 | Ty::U64 | Ty::Usize);
    (idx.ty == Ty::Usize && unsigned && matches!(at.kind, ExprKind::Local(id) if id == k))
        .then_some(*c)
}

/// `(gathered, index)` pairs of loads `gathered[index[k] as usize]` in `x`.
pub(crate) fn gather_loads(
    x: &Expr,
    k: LocalId,
    params: &[Param],
    out: &mut BTreeSet<(usize, usize)>,
) {
    visit(x, &mut |e| {
        if let ExprKind::Load(g, a) = &e.kind {
            if let Some(c) = gather_index(a, k, params) {
                out.insert((*g, c));
            }
        }
    });
}

pub fn stmt_uses(s: &Stmt, out: &mut BTreeSet<LocalId>) {
    match s {
        Stmt::Let(_, v) | Stmt::Store { value: v, .. } => uses(v, out),
        Stmt::If(c, a, b) => {
            uses(c, out);
            a.iter().chain(b).for_each(|s| stmt_uses(s, out));
        }
    }
}

fn param_doc(p: &Param) -> String {
    match p.kind {
        ParamKind::Input => format!(
            "- `{}: &[{}]`: read-only input array",
            p.name,
            p.ty.rust_name()
        ),
        ParamKind::Output => format!(
            "- `{}: &mut [{}]`: output, written at the task index",
            p.name,
            p.ty.rust_name()
        ),
        ParamKind::Scalar => format!("- `{}: {}`: scalar", p.name, p.ty.rust_name()),
    }
}

/// The `pub mod NAME { .. }` companion of a kernel.
pub fn module(k: &Kernel, vis: &syn::Visibility, cuda: &str) -> TokenStream {
    let name = &k.name;
    let name_str = name.to_string();
    let em = Emitter {
        locals: &k.locals,
        params: &k.params,
        prechecked: None,
    };
    let f = fault();
    let res = |t: TokenStream| quote!(::core::result::Result<#t, #f>);
    let (task_h, ctx_h, acc_h, k_h) = (h("__task"), h("__ctx"), h("__acc"), h("__k"));

    // Kernel struct, launch arguments.
    let fields = k.params.iter().map(|p| {
        let (n, t) = (&p.name, ty(p.ty));
        match p.kind {
            ParamKind::Input => quote!(pub #n: &'a [#t]),
            ParamKind::Output => quote!(pub #n: ::warpfit::__private::SharedOut<'a, #t>),
            ParamKind::Scalar => quote!(pub #n: #t),
        }
    });
    let launch_params: Vec<_> = k
        .params
        .iter()
        .map(|p| {
            let (n, t) = (&p.name, ty(p.ty));
            match p.kind {
                ParamKind::Input => quote!(#n: &[#t]),
                ParamKind::Output => quote!(#n: &mut [#t]),
                ParamKind::Scalar => quote!(#n: #t),
            }
        })
        .collect();
    let arg_names: Vec<_> = k.params.iter().map(|p| &p.name).collect();
    let args_spec = k.params.iter().map(|p| {
        let n = &p.name;
        match p.kind {
            ParamKind::Input => quote!(::warpfit::__private::Arg::input(#n)),
            ParamKind::Output => quote!(::warpfit::__private::Arg::output(#n)),
            ParamKind::Scalar => quote!(::warpfit::__private::Arg::scalar(#n)),
        }
    });
    let kernel_init = k.params.iter().map(|p| {
        let n = &p.name;
        match p.kind {
            ParamKind::Output => quote!(#n: ::warpfit::__private::SharedOut::new(#n)),
            _ => quote!(#n),
        }
    });

    // Output accessors: the one place with `unsafe`.
    let accessors = k.params.iter().filter(|p| p.kind == ParamKind::Output).map(|p| {
        let (n, t) = (&p.name, ty(p.ty));
        let s = n.to_string();
        let get = format_ident!("__wf_get_{}", n, span = Span::mixed_site());
        let set = format_ident!("__wf_set_{}", n, span = Span::mixed_site());
        let (i, v) = (h("__i"), h("__v"));
        let r = res(t.clone());
        let ru = res(quote!(()));
        quote! {
            #[inline]
            #[doc = concat!("Reads `", #s, "[task]`.")]
            #[doc = ""]
            #[doc = "SAFETY (of the `unsafe` block): `#[nested_reduce]` checked the owner-computes rule, so only"]
            #[doc = "the task that owns index `i` reads or writes element `i` during a launch, and every"]
            #[doc = "executor calls this with the task it runs: no other thread touches the element."]
            fn #get(&self, #i: ::core::primitive::usize) -> #r {
                unsafe { self.#n.get(#i, #s) }
            }
            #[inline]
            #[doc = concat!("Writes `", #s, "[task]`; SAFETY as for the read accessor (owner-computes).")]
            fn #set(&self, #i: ::core::primitive::usize, #v: #t) -> #ru {
                unsafe { self.#n.set(#i, #v, #s) }
            }
        }
    });

    // Bindings a function starts with: task index and context fields it reads.
    let ctx_set: BTreeSet<LocalId> = k.ctx.iter().copied().collect();
    let bind = |used: &BTreeSet<LocalId>, with_ctx: bool| -> TokenStream {
        let mut out = TokenStream::new();
        if used.contains(&k.task) {
            let n = em.local(k.task);
            out.extend(quote!(let #n: ::core::primitive::usize = #task_h;));
        }
        if with_ctx {
            for id in used.intersection(&ctx_set) {
                let n = em.local(*id);
                let t = ty(k.locals[*id].ty);
                out.extend(quote!(let #n: #t = #ctx_h.#n;));
            }
        }
        out
    };

    let ctx_fields = k.ctx.iter().map(|id| {
        let n = em.local(*id);
        let t = ty(k.locals[*id].ty);
        quote!(pub #n: #t)
    });
    let ctx_names: Vec<_> = k.ctx.iter().map(|id| em.local(*id)).collect();

    // prologue
    let mut pro_used = BTreeSet::new();
    k.prologue.iter().for_each(|(_, v)| uses(v, &mut pro_used));
    uses(&k.lo, &mut pro_used);
    uses(&k.hi, &mut pro_used);
    let pro_bind = bind(&pro_used, false);
    let pro_lets = k.prologue.iter().map(|(id, v)| em.let_(*id, v));
    let (lo, hi) = (em.expr(&k.lo), em.expr(&k.hi));
    let (lo_h, hi_h) = (h("__lo"), h("__hi"));

    // init
    let mut used = BTreeSet::new();
    uses(&k.init, &mut used);
    let init_bind = bind(&used, true);
    let init = em.expr(&k.init);

    // map
    let mut used = BTreeSet::new();
    uses(&k.map, &mut used);
    let map_bind = bind(&used, true);
    let kn = em.local(k.k);
    let map = em.expr(&k.map);
    // The hot loop: arrays read at the fine-task index are bound-checked once
    // per range (or per block of tasks), the rest per element. A range that
    // fails the precheck takes the checked loop, which reports the exact fault.
    // Gathers `x[col[k] as usize]` through a directly read unsigned index
    // array are covered by one pass over `col[lo..hi]` (vectorised; the
    // executor runs it once for a block of tasks whose ranges it spans).
    let mut direct = BTreeSet::new();
    direct_loads(&k.map, k.k, &mut direct);
    let mut gathers = BTreeSet::new();
    gather_loads(&k.map, k.k, &k.params, &mut gathers);
    gathers.retain(|(_, c)| direct.contains(c));
    let fast = Emitter {
        locals: &k.locals,
        params: &k.params,
        prechecked: Some(Prechecked {
            k: k.k,
            direct: &direct,
            gathers: &gathers,
        }),
    };
    let map_fast = fast.expr(&k.map);
    let direct_names = direct.iter().map(|&i| &k.params[i].name);
    // One pass over `index[lo..hi]` per index array, against the shortest
    // array gathered through it (a compare-and-OR fold, which vectorises on
    // any x86-64; a maximum of u32 needs SSE4.1).
    let index_arrays: BTreeSet<usize> = gathers.iter().map(|&(_, c)| c).collect();
    let index_ok: Vec<TokenStream> = index_arrays
        .iter()
        .map(|&c| {
            let (n, t) = (&k.params[c].name, prim(k.params[c].ty));
            let lens = gathers
                .iter()
                .filter(|&&(_, c2)| c2 == c)
                .map(|&(g, _)| &k.params[g].name);
            let (lim, l, b, v) = (h("__lim"), h("__l"), h("__b"), h("__v"));
            quote!(&& {
                let #lim = ::core::primitive::usize::MAX #(.min(self.#lens.len()))*;
                match <#t as ::core::convert::TryFrom<::core::primitive::usize>>::try_from(#lim) {
                    ::core::result::Result::Ok(#l) => {
                        !self.#n[#lo_h..#hi_h].iter().fold(false, |#b, &#v| #b | (#v >= #l))
                    }
                    // Longer than the index type reaches: every index is in range.
                    ::core::result::Result::Err(_) => true,
                }
            })
        })
        .collect();

    // reduce
    let (a_h, b_h) = (h("__a"), h("__b"));
    let acc_t = ty(k.acc);
    let reduce = match &k.reduce {
        Reduce::Closure { a, b, body } => {
            let (an, bn) = (em.local(*a), em.local(*b));
            let body = em.expr(body);
            quote!(let #an: #acc_t = #a_h; let #bn: #acc_t = #b_h; ::core::result::Result::Ok(#body))
        }
        Reduce::MinMax { max } => {
            let m = if *max { quote!(max) } else { quote!(min) };
            if k.acc.is_float() {
                let p = prim(k.acc);
                quote!(::core::result::Result::Ok(#p::#m(#a_h, #b_h)))
            } else {
                quote!(::core::result::Result::Ok(::core::cmp::Ord::#m(#a_h, #b_h)))
            }
        }
        Reduce::DeviceFn(i) => {
            let f = call_const(*i);
            quote!(#f(#a_h, #b_h))
        }
    };

    // epilogue
    let mut used = BTreeSet::new();
    k.epilogue.iter().for_each(|s| stmt_uses(s, &mut used));
    let epi_bind = bind(&used, true);
    let epi = k.epilogue.iter().map(|s| em.stmt(s));

    // Gather: the shape throttling needs.
    let gathered: Vec<usize> = {
        let mut v: Vec<usize> = k.gathers.iter().map(|g| g.array).collect();
        v.dedup();
        v.sort_unstable();
        v.dedup();
        v
    };
    let same_index = k
        .gathers
        .windows(2)
        .all(|w| em.expr(&w[0].index).to_string() == em.expr(&w[1].index).to_string());
    let gather_ok = gathered.len() == 1 && same_index;
    let out_bytes: usize = k
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Output)
        .map(|p| p.ty.size())
        .sum();
    let scalar_params: Vec<_> = k
        .params
        .iter()
        .filter(|p| p.kind != ParamKind::Output)
        .collect();
    let wg_params = scalar_params.iter().map(|p| {
        let (n, t) = (&p.name, ty(p.ty));
        if p.kind == ParamKind::Input {
            quote!(#n: &[#t])
        } else {
            quote!(#n: #t)
        }
    });
    let n_tasks = h("n_tasks");
    let f_res_usize = res(quote!(usize));
    let kernel_h = h("__kernel");
    let (gathered_const, gather_impl, work_graph_body) = if gather_ok {
        let g = &k.gathers[0];
        let gp = &k.params[g.array];
        let gname = gp.name.to_string();
        let gn = &gp.name;
        let gbytes = gp.ty.size();
        let mut used = BTreeSet::new();
        uses(&g.index, &mut used);
        let gbind = bind(&used, true);
        let idx = em.expr(&g.index);
        let kernel_wg = k.params.iter().map(|p| {
            let n = &p.name;
            match p.kind {
                ParamKind::Output => quote!(#n: ::warpfit::__private::SharedOut::new(&mut [])),
                _ => quote!(#n),
            }
        });
        (
            quote!(::core::option::Option::Some(#gname)),
            quote! {
                impl ::warpfit::__private::GatherKernel for Kernel<'_> {
                    const GATHERED: &'static str = #gname;
                    const GATHERED_ELEM_BYTES: usize = #gbytes;
                    const OUTPUT_ELEM_BYTES: usize = #out_bytes;
                    fn gathered_len(&self) -> usize {
                        self.#gn.len()
                    }
                    fn gathered_index(&self, #task_h: usize, #ctx_h: &Ctx, #k_h: usize) -> #f_res_usize {
                        #gbind
                        let #kn: ::core::primitive::usize = #k_h;
                        ::core::result::Result::Ok(#idx)
                    }
                }
            },
            quote! {
                let #kernel_h = Kernel { #(#kernel_wg),* };
                ::warpfit::__private::WorkGraph::from_kernel(&#kernel_h, #n_tasks)
            },
        )
    } else {
        let why = if gathered.is_empty() {
            "its map reads no array through an index array (like `x[col[k] as usize]`)".to_string()
        } else if gathered.len() > 1 {
            let names: Vec<_> = gathered
                .iter()
                .map(|&i| format!("`{}`", k.params[i].name))
                .collect();
            format!("its map gathers from several arrays ({})", names.join(", "))
        } else {
            format!(
                "its map reads `{}` through several different index expressions",
                k.params[gathered[0]].name
            )
        };
        let msg = format!(
            "kernel `{name_str}` cannot be throttled: {why}; a work graph needs exactly one gathered array with one index expression"
        );
        let unused = scalar_params.iter().map(|p| &p.name);
        (
            quote!(::core::option::Option::None),
            TokenStream::new(),
            quote! {
                let _ = (#n_tasks, #(#unused),*);
                ::core::result::Result::Err(::warpfit::__private::Error::InvalidArgument(::std::string::String::from(#msg)))
            },
        )
    };
    // Device function references and their type checks.
    let mut seen = BTreeSet::new();
    let mut device_fns = Vec::new();
    let mut fn_checks = Vec::new();
    let mut check_seen = BTreeSet::new();
    for c in &k.calls {
        let p = companion(&c.path, Some("SOURCE"));
        if seen.insert(p.to_string()) {
            device_fns.push(quote!(&#p));
            fn_checks.push(name_check(c));
        }
        let fp = companion(&c.path, None);
        let args = arg_types(c);
        let ret = ty(c.ret);
        let check = quote!(const _: fn(#(#args),*) -> #ret = #fp;);
        if check_seen.insert(check.to_string()) {
            // Spanned on the call's path so a wrong guess points at the call.
            let span = c
                .path
                .segments
                .last()
                .map_or_else(Span::call_site, |s| s.ident.span());
            let args = arg_types(c);
            let ret = ty(c.ret);
            fn_checks.push(quote::quote_spanned!(span=> const _: fn(#(#args),*) -> #ret = #fp;));
        }
    }

    let call_consts = call_consts(&k.calls);
    let params_spec = k.params.iter().map(|p| {
        let n = p.name.to_string();
        let t = format_ident!(
            "{}",
            p.ty.scalar_variant().expect("params are scalar types")
        );
        let kind = format_ident!(
            "{}",
            match p.kind {
                ParamKind::Input => "Input",
                ParamKind::Output => "Output",
                ParamKind::Scalar => "Scalar",
            }
        );
        quote!(::warpfit::__private::ParamSpec {
            name: #n,
            ty: ::warpfit::__private::ScalarType::#t,
            kind: ::warpfit::__private::ParamKind::#kind,
        })
    });
    let acc_variant = format_ident!("{}", k.acc.scalar_variant().expect("checked in lower"));

    let mod_doc = format!(
        "Launch API and generated code of the `#[nested_reduce]` kernel `fn {name_str}`.\n\n\
         The function itself stays the plain-Rust reference; [`launch`] runs it on a `Device` \
         (CUDA when available, else the CPU twin [`Kernel`]). Integer arithmetic follows Rust's \
         release semantics on every backend: `+ - *` wrap, shifts are masked, `/` and `%` by zero \
         fail the launch with `Error::DivisionByZero`, and every index is checked."
    );
    let param_docs: Vec<String> = k.params.iter().map(param_doc).collect();
    let launch_doc = format!(
        "Runs `{name_str}` on `device` over `tasks` (a task count `n` for tasks `0..n`, or a `&TaskList`).\n\n\
         # Parameters\n- `device`: where to run (CUDA if `device.cuda()` is some, else the CPU)\n\
         - `tasks`: the coarse tasks\n{}\n\n\
         # Errors\nAn index out of range, an integer division by zero, a task list that does not fit the \
         kernel, or a device error.",
        param_docs.join("\n")
    );
    let launch_with_doc = format!(
        "[`launch`] with explicit options (`config.decomposition` selects CTE, 1D or sub-warp on CUDA; the CPU ignores it).\n\n\
         # Parameters\n- `device`, `tasks`: as for [`launch`]\n- `config`: launch options\n{}",
        param_docs.join("\n")
    );
    let wg_doc = format!(
        "The work graph of `{name_str}` over tasks `0..n_tasks` (tuples `(task, gathered index)`), for throttling.\n\n\
         Builds the CPU twin without outputs and enumerates each task's gathered indices with it.\n\n\
         # Errors\n`Error::InvalidArgument` when the kernel's map does not read exactly one array through an \
         index array; index faults of the prologue or the gathered index."
    );
    let (dev, cfg, tasks) = (h("device"), h("config"), h("tasks"));
    let cuda_h = h("cuda");

    quote! {
        #[doc = #mod_doc]
        #[allow(clippy::all, clippy::pedantic, unused_parens, unused_braces)]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;

            #(#fn_checks)*
            #call_consts

            /// Generated CUDA C++ for this kernel: the functor of `docs/codegen.md`.
            pub const CUDA_SOURCE: &str = #cuda;

            /// The array the map reads through an index array, when there is exactly one.
            pub const GATHERED: ::core::option::Option<&'static str> = #gathered_const;

            /// Parameter roles, types and the accumulator type, for the device layer.
            pub static SPEC: ::warpfit::__private::KernelSpec = ::warpfit::__private::KernelSpec {
                name: #name_str,
                cuda_source: CUDA_SOURCE,
                device_fns: &[#(#device_fns),*],
                params: &[#(#params_spec),*],
                acc: ::warpfit::__private::ScalarType::#acc_variant,
            };

            /// Prologue bindings that the fold and the epilogue read.
            #[derive(Debug, Clone, Copy)]
            pub struct Ctx { #(#ctx_fields),* }

            /// The CPU twin: borrowed arguments, outputs behind `SharedOut`.
            pub struct Kernel<'a> { #(#fields),* }

            impl Kernel<'_> {
                #(#accessors)*
            }

            impl ::warpfit::__private::NestedKernel for Kernel<'_> {
                const NAME: &'static str = #name_str;
                type Acc = #acc_t;
                type Ctx = Ctx;

                #[inline]
                fn prologue(&self, #task_h: usize) -> ::core::result::Result<(Ctx, usize, usize), #f> {
                    #pro_bind
                    #(#pro_lets)*
                    let #lo_h: ::core::primitive::usize = #lo;
                    let #hi_h: ::core::primitive::usize = #hi;
                    ::core::result::Result::Ok((Ctx { #(#ctx_names),* }, #lo_h, #hi_h))
                }

                #[inline]
                fn init(&self, #task_h: usize, #ctx_h: &Ctx) -> ::core::result::Result<#acc_t, #f> {
                    #init_bind
                    ::core::result::Result::Ok(#init)
                }

                #[inline]
                fn map(&self, #task_h: usize, #ctx_h: &Ctx, #k_h: usize) -> ::core::result::Result<#acc_t, #f> {
                    #map_bind
                    let #kn: ::core::primitive::usize = #k_h;
                    ::core::result::Result::Ok(#map)
                }

                #[inline]
                fn precheck(&self, #lo_h: usize, #hi_h: usize) -> bool {
                    #lo_h <= #hi_h #(&& #hi_h <= self.#direct_names.len())* #(#index_ok)*
                }

                #[inline]
                #[allow(unused_unsafe)]
                unsafe fn fold_range_prechecked(
                    &self,
                    #task_h: usize,
                    #ctx_h: &Ctx,
                    #lo_h: usize,
                    #hi_h: usize,
                    mut #acc_h: #acc_t,
                ) -> ::core::result::Result<#acc_t, #f> {
                    #map_bind
                    for #k_h in #lo_h..#hi_h {
                        let #kn: ::core::primitive::usize = #k_h;
                        let #b_h: #acc_t = #map_fast;
                        #acc_h = self.reduce(#acc_h, #b_h)?;
                    }
                    ::core::result::Result::Ok(#acc_h)
                }

                #[inline]
                fn reduce(&self, #a_h: #acc_t, #b_h: #acc_t) -> ::core::result::Result<#acc_t, #f> {
                    #reduce
                }

                #[inline]
                fn epilogue(&self, #task_h: usize, #ctx_h: &Ctx, #acc_h: #acc_t) -> ::core::result::Result<(), #f> {
                    #epi_bind
                    #(#epi)*
                    ::core::result::Result::Ok(())
                }
            }

            #gather_impl

            #[doc = #launch_doc]
            pub fn launch<'t>(
                #dev: &::warpfit::__private::Device,
                #tasks: impl ::core::convert::Into<::warpfit::__private::Tasks<'t>>,
                #(#launch_params),*
            ) -> ::warpfit::__private::Result<()> {
                launch_with(#dev, &::warpfit::__private::LaunchConfig::default(), #tasks, #(#arg_names),*)
            }

            #[doc = #launch_with_doc]
            pub fn launch_with<'t>(
                #dev: &::warpfit::__private::Device,
                #cfg: &::warpfit::__private::LaunchConfig,
                #tasks: impl ::core::convert::Into<::warpfit::__private::Tasks<'t>>,
                #(#launch_params),*
            ) -> ::warpfit::__private::Result<()> {
                let #tasks = #tasks.into();
                if let ::core::option::Option::Some(#cuda_h) = #dev.cuda() {
                    return #cuda_h.launch(&SPEC, #cfg, #tasks, &mut [#(#args_spec),*]);
                }
                ::warpfit::__private::cpu::run(&Kernel { #(#kernel_init),* }, #tasks)
            }

            #[doc = #wg_doc]
            pub fn work_graph(
                #n_tasks: usize,
                #(#wg_params),*
            ) -> ::warpfit::__private::Result<::warpfit::__private::WorkGraph> {
                #work_graph_body
            }
        }
    }
}

/// Type of a local in a `Param` list (for device functions).
pub fn rust_ty(t: Ty) -> TokenStream {
    ty(t)
}

//! syn → the untyped AST of the kernel language.
//!
//! Everything outside the language is rejected here, spanned on the offending
//! token, with a message saying what is supported. Names are not resolved and
//! nothing is typed yet: that is `lower`'s job.

use crate::diag::{Errors, SourceRange};
use crate::ir::{BinOp, ParamKind, TupleTy, Ty, UnOp, TUPLE_MAX};
use syn::{Expr as SExpr, FnArg, Pat, ReturnType, Type};

pub const KERNEL: &str = "a #[nested_reduce] kernel";

#[derive(Debug, Clone)]
pub struct Param {
    pub name: syn::Ident,
    pub ty: Ty,
    pub kind: ParamKind,
}

#[derive(Debug, Clone)]
pub struct Let {
    /// The bound name; for a destructuring `let (a, b) = ..;`, the
    /// pattern's span under a name the kernel cannot see.
    pub name: syn::Ident,
    /// `let (a, _, c) = ..;`: the element bindings (`None` for `_`).
    pub parts: Option<Vec<Option<syn::Ident>>>,
    pub ty: Option<(Ty, SourceRange)>,
    pub init: Expr,
}

/// `(lo..hi).for_each(|k| { body })`: a push kernel's nested pattern, the
/// body run once per fine task for its effects.
#[derive(Debug, Clone)]
pub struct ForEach {
    pub lo: Expr,
    pub hi: Expr,
    pub k: syn::Ident,
    pub body: Vec<Stmt>,
    pub sp: SourceRange,
}

#[derive(Debug, Clone)]
pub enum Stmt {
    Let(Let),
    /// The `for_each` pattern (a statement: it has no value).
    ForEach(ForEach),
    /// An intrinsic call evaluated for its effect, `atomic_add(&h[b], 1);`.
    Eval(Expr),
    /// `push(list, item);`.
    Push {
        list: syn::Ident,
        item: Expr,
        sp: SourceRange,
    },
    Assign {
        array: syn::Ident,
        index: Expr,
        op: Option<(BinOp, SourceRange)>,
        value: Expr,
        sp: SourceRange,
    },
    If {
        cond: Expr,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
        sp: SourceRange,
    },
}

#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub sp: SourceRange,
}

#[derive(Debug, Clone)]
pub struct Block {
    pub lets: Vec<Let>,
    pub tail: Expr,
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    Int {
        value: u128,
        suffix: Option<Ty>,
    },
    Float {
        digits: String,
        suffix: Option<Ty>,
    },
    Bool(bool),
    Var(syn::Ident),
    Const {
        ty: Ty,
        name: syn::Ident,
    },
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, SourceRange, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>, Ty),
    Index(syn::Ident, Box<Expr>),
    If(Box<Expr>, Box<Block>, Box<Block>),
    Block(Box<Block>),
    Method {
        recv: Box<Expr>,
        name: syn::Ident,
        args: Vec<Expr>,
    },
    Call {
        path: syn::Path,
        args: Vec<Expr>,
    },
    Nested(Box<Nested>),
    /// `atomic_*(&array[index], args..)`.
    Atomic {
        op: AtomicName,
        array: syn::Ident,
        index: Box<Expr>,
        args: Vec<Expr>,
    },
    /// `array[index].load()`.
    LoadShared(syn::Ident, Box<Expr>),
    /// A tuple literal `(a, b, ..)`.
    Tuple(Vec<Expr>),
    /// `value.i`, element `i` of a tuple.
    Field(Box<Expr>, usize),
}

/// Which atomic intrinsic a call names.
#[derive(Debug, Clone)]
pub enum AtomicName {
    Min,
    Max,
    Add,
    Or,
    Cas,
    /// `atomic_apply(&a[i], v, f)` with `f` a `#[device_fn]`.
    Apply(syn::Path),
}

impl AtomicName {
    /// The number of value arguments after the element (the operator of
    /// `atomic_apply` not counted).
    fn values(name: &str) -> usize {
        if name == "atomic_cas" {
            2
        } else {
            1
        }
    }
}

/// The intrinsics' names: calls by these names are never device functions.
pub const INTRINSICS: &[&str] = &[
    "atomic_min",
    "atomic_max",
    "atomic_add",
    "atomic_or",
    "atomic_cas",
    "atomic_apply",
    "push",
];

impl Expr {
    /// The direct sub-expressions, in source order (a block's `let`
    /// initialisers, then its tail; a nested pattern's bounds, initial
    /// value, map and reduce closure body): the one traversal of the AST.
    pub fn children(&self) -> Vec<&Expr> {
        fn block(b: &Block) -> impl Iterator<Item = &Expr> {
            b.lets
                .iter()
                .map(|l| &l.init)
                .chain(std::iter::once(&b.tail))
        }
        match &self.kind {
            ExprKind::Int { .. }
            | ExprKind::Float { .. }
            | ExprKind::Bool(_)
            | ExprKind::Var(_)
            | ExprKind::Const { .. } => Vec::new(),
            ExprKind::Unary(_, x)
            | ExprKind::Cast(x, _)
            | ExprKind::Index(_, x)
            | ExprKind::LoadShared(_, x)
            | ExprKind::Field(x, _) => vec![&**x],
            ExprKind::Atomic { index, args, .. } => {
                std::iter::once(&**index).chain(args.iter()).collect()
            }
            ExprKind::Binary(_, _, l, r) => vec![&**l, &**r],
            ExprKind::If(c, t, f) => std::iter::once(&**c)
                .chain(block(t))
                .chain(block(f))
                .collect(),
            ExprKind::Block(b) => block(b).collect(),
            ExprKind::Method { recv, args, .. } => std::iter::once(&**recv).chain(args).collect(),
            ExprKind::Call { args, .. } | ExprKind::Tuple(args) => args.iter().collect(),
            ExprKind::Nested(n) => {
                let mut out = vec![&n.lo, &n.hi, &n.init, &n.map];
                if let Reduce::Closure { body, .. } = &n.reduce {
                    out.push(body);
                }
                out
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Nested {
    pub lo: Expr,
    pub hi: Expr,
    pub k: syn::Ident,
    pub map: Expr,
    pub init: Expr,
    pub reduce: Reduce,
}

#[derive(Debug, Clone)]
pub enum Reduce {
    Closure {
        a: syn::Ident,
        b: syn::Ident,
        tys: [Option<(Ty, SourceRange)>; 2],
        body: Expr,
    },
    MinMax {
        ty: Ty,
        max: bool,
        sp: SourceRange,
    },
    DeviceFn(syn::Path),
    /// `(lo..hi).any(|k| pred)` (`all: false`) or `.all(|k| pred)`: a fold
    /// of `bool`s by `||` (`&&`) from `false` (`true`) that may stop at the
    /// first element that settles it.
    Logic {
        all: bool,
    },
}

pub struct KernelFn {
    pub name: syn::Ident,
    pub task: syn::Ident,
    pub params: Vec<Param>,
    pub body: Vec<Stmt>,
}

pub struct DeviceFnAst {
    pub name: syn::Ident,
    pub params: Vec<(syn::Ident, Ty)>,
    pub ret: Ty,
    pub block: Block,
}

const TYPES: &str = "f32, f64, i32, u32, i64, u64, u8, bool";

fn err(node: &impl quote::ToTokens, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new_spanned(node, msg)
}

/// Rejects signature features outside the language (shared by both macros).
fn check_sig_common(sig: &syn::Signature, what: &str, errs: &mut Errors) {
    if let Some(t) = &sig.constness {
        errs.push(err(t, format!("`const fn` is not supported in {what}")));
    }
    if let Some(t) = &sig.asyncness {
        errs.push(err(t, format!("`async fn` is not supported in {what}")));
    }
    if let Some(t) = &sig.unsafety {
        errs.push(err(
            t,
            format!("`unsafe fn` is not supported in {what}: kernels are checked, safe code"),
        ));
    }
    if let Some(t) = &sig.abi {
        errs.push(err(
            t,
            format!("`extern` functions are not supported in {what}"),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errs.push(err(
            &sig.generics,
            format!(
                "generic parameters are not supported in {what}: the CUDA code is generated \
                 for concrete types ({TYPES})"
            ),
        ));
    }
    if let Some(v) = &sig.variadic {
        errs.push(err(
            v,
            format!("variadic parameters are not supported in {what}"),
        ));
    }
}

/// The binding name of a parameter or `let`: a plain identifier.
fn plain_ident(pat: &Pat, what: &str) -> syn::Result<syn::Ident> {
    match pat {
        Pat::Ident(p) => {
            if let Some(m) = &p.mutability {
                return Err(err(
                    m,
                    format!(
                        "`mut` bindings are not supported in {what}: bindings are immutable; \
                         use a new `let` (shadowing) instead"
                    ),
                ));
            }
            if let Some(r) = &p.by_ref {
                return Err(err(
                    r,
                    format!("`ref` bindings are not supported in {what}"),
                ));
            }
            if let Some((at, _)) = &p.subpat {
                return Err(err(at, format!("sub-patterns are not supported in {what}")));
            }
            Ok(p.ident.clone())
        }
        other => Err(err(
            other,
            format!("patterns are not supported in {what}: bind a plain identifier"),
        )),
    }
}

/// `f32`, …, `usize` as a plain path type.
pub fn scalar_type(ty: &Type) -> Option<Ty> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .get_ident()
            .and_then(|i| Ty::from_name(&i.to_string())),
        Type::Paren(p) => scalar_type(&p.elem),
        Type::Group(g) => scalar_type(&g.elem),
        _ => None,
    }
}

/// A scalar type or a tuple of 1 to 8 of them: the types a `let`, a
/// closure parameter or a `#[device_fn]` may be annotated with.
pub fn value_type(ty: &Type) -> syn::Result<Ty> {
    match ty {
        Type::Tuple(t) => {
            let mut elems = Vec::new();
            for e in &t.elems {
                if matches!(e, Type::Tuple(_)) {
                    return Err(err(e, NESTED_TUPLE));
                }
                elems.push(scalar_type(e).ok_or_else(|| {
                    err(e, format!("unsupported tuple element type: supported are {TYPES}, usize"))
                })?);
            }
            tuple_type(&elems, ty)
        }
        Type::Paren(p) => value_type(&p.elem),
        Type::Group(g) => value_type(&g.elem),
        _ => scalar_type(ty).ok_or_else(|| {
            err(
                ty,
                format!("unsupported type: supported are {TYPES}, usize, and tuples of up to {TUPLE_MAX} of them"),
            )
        }),
    }
}

/// The tuple of `elems` (1 to 8 of them), spanned on `node` when not.
fn tuple_type(elems: &[Ty], node: &impl quote::ToTokens) -> syn::Result<Ty> {
    if elems.is_empty() {
        return Err(err(node, UNIT));
    }
    TupleTy::new(elems).map(Ty::Tuple).ok_or_else(|| {
        err(
            node,
            format!(
                "a tuple has at most {TUPLE_MAX} elements, found {}: fold fewer values per task, or split the kernel",
                elems.len()
            ),
        )
    })
}

const NESTED_TUPLE: &str =
    "nested tuples are not supported: a tuple's elements are scalars; flatten it, `(a, b, c)`";
const UNIT: &str = "the unit type `()` is not supported: a value has at least one element";
const TUPLE_ARRAY: &str = "arrays of tuples are not supported: pass one array per element (struct of arrays), e.g. `w: &[f32], id: &[u32]`";

fn element_type(ty: &Type) -> syn::Result<Ty> {
    if matches!(ty, Type::Tuple(_)) {
        return Err(err(ty, TUPLE_ARRAY));
    }
    match scalar_type(ty) {
        Some(Ty::Usize) => Err(err(
            ty,
            format!("`usize` is not supported as an element or scalar type (its size differs between host and device): use u32 or u64; supported are {TYPES}"),
        )),
        Some(t) => Ok(t),
        None => Err(err(
            ty,
            format!("unsupported element type: supported are {TYPES}"),
        )),
    }
}

/// `T` of `Atomic<T>` (any path ending in `Atomic`), or `None` when `ty`
/// is not an `Atomic<..>`.
fn atomic_elem(ty: &Type) -> Option<syn::Result<Ty>> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if p.qself.is_some() || last.ident != "Atomic" {
        return None;
    }
    let arg = match &last.arguments {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => a.args.first(),
        _ => None,
    };
    let t = match arg {
        Some(syn::GenericArgument::Type(t)) => {
            scalar_type(t).filter(|&t| crate::ir::atomic_elem_ok(t))
        }
        _ => None,
    };
    Some(t.ok_or_else(|| {
        err(
            ty,
            format!("unsupported shared array element: `Atomic<T>` holds one of {ATOMIC_TYPES} (the types the device has atomics for)"),
        )
    }))
}

/// Whether `ty` names the worklist type (any path ending in `Worklist`).
fn is_worklist(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "Worklist" && s.arguments.is_none()))
}

const ATOMIC_TYPES: &str = "f32, f64, i32, u32, i64, u64";

fn param_type(ty: &Type) -> syn::Result<(Ty, ParamKind)> {
    match ty {
        Type::Reference(r) => {
            if let Some(l) = &r.lifetime {
                return Err(err(
                    l,
                    format!("lifetimes are not supported in {KERNEL}: write `&[T]` or `&mut [T]`"),
                ));
            }
            let kind = if r.mutability.is_some() { ParamKind::Output } else { ParamKind::Input };
            if is_worklist(&r.elem) {
                return match &r.mutability {
                    Some(m) => Err(err(
                        m,
                        "a worklist parameter is `&Worklist`: tasks push to it concurrently through a shared borrow",
                    )),
                    None => Ok((Ty::U32, ParamKind::Worklist)),
                };
            }
            match &*r.elem {
                Type::Slice(s) => match atomic_elem(&s.elem) {
                    Some(t) => match &r.mutability {
                        Some(m) => Err(err(
                            m,
                            "a shared array is `&[Atomic<T>]`: every task writes it through the atomic intrinsics, under a shared borrow",
                        )),
                        None => Ok((t?, ParamKind::Shared)),
                    },
                    None => Ok((element_type(&s.elem)?, kind)),
                },
                other => Err(err(
                    other,
                    format!("unsupported parameter type: arrays are passed as `&[T]` (input), `&mut [T]` (output) or `&[Atomic<T>]` (shared), T one of {TYPES}; worklists as `&Worklist`"),
                )),
            }
        }
        Type::Tuple(_) => Err(err(
            ty,
            "tuple parameters are not supported in a kernel: pass the elements as separate scalars",
        )),
        other => match scalar_type(other) {
            Some(_) => Ok((element_type(other)?, ParamKind::Scalar)),
            None => Err(err(
                other,
                format!("unsupported parameter type: supported are `&[T]` (input array), `&mut [T]` (output array) and scalars `T`, T one of {TYPES}"),
            )),
        },
    }
}

pub fn kernel(item: &syn::ItemFn) -> syn::Result<KernelFn> {
    let mut errs = Errors::default();
    let sig = &item.sig;
    check_sig_common(sig, KERNEL, &mut errs);
    if let ReturnType::Type(arrow, ty) = &sig.output {
        errs.push(SourceRange::of(arrow).to(SourceRange::of(ty)).error(format!(
            "a return type is not supported in {KERNEL}: results are written to `&mut [T]` outputs at the task index"
        )));
    }
    let mut inputs = sig.inputs.iter();
    let mut task = None;
    match inputs.next() {
        Some(FnArg::Typed(pt)) => {
            let name = errs.ok(plain_ident(&pt.pat, KERNEL));
            if scalar_type(&pt.ty) != Some(Ty::Usize) {
                errs.push(err(
                    &pt.ty,
                    format!("the first parameter of {KERNEL} is the coarse-task index and must have type `usize`"),
                ));
            }
            task = name;
        }
        Some(FnArg::Receiver(r)) => {
            errs.push(err(r, format!("`self` is not supported in {KERNEL}")))
        }
        None => errs.push(err(
            &sig.ident,
            format!("{KERNEL} takes the coarse-task index `task: usize` as its first parameter"),
        )),
    }
    let mut params = Vec::new();
    for arg in inputs {
        match arg {
            FnArg::Typed(pt) => {
                let name = errs.ok(plain_ident(&pt.pat, KERNEL));
                let ty = errs.ok(param_type(&pt.ty));
                if let (Some(name), Some((ty, kind))) = (name, ty) {
                    params.push(Param { name, ty, kind });
                }
            }
            FnArg::Receiver(r) => errs.push(err(r, format!("`self` is not supported in {KERNEL}"))),
        }
    }
    // Arrays travel as a pointer and a `<name>_len` field of the CUDA `Params`.
    for p in &params {
        let n = p.name.to_string();
        if let Some(a) = n.strip_suffix("_len") {
            if params.iter().any(|q| q.name == a && q.kind.is_array()) {
                errs.push(err(
                    &p.name,
                    format!("parameter `{n}` collides with the length field the generated CUDA gives array `{a}`: rename it"),
                ));
            }
        }
    }
    let effect = |k: ParamKind| {
        matches!(
            k,
            ParamKind::Output | ParamKind::Shared | ParamKind::Worklist
        )
    };
    if !params.iter().any(|p| effect(p.kind)) && errs.is_empty() {
        errs.push(err(
            &sig.inputs,
            format!(
                "{KERNEL} needs at least one parameter to write its result to: an output `&mut [T]`, a shared array `&[Atomic<T>]` or a worklist `&Worklist`"
            ),
        ));
    }
    let body = stmts(&item.block.stmts, &mut errs);
    errs.finish()?;
    Ok(KernelFn {
        name: sig.ident.clone(),
        task: task.expect("checked above"),
        params,
        body,
    })
}

pub fn device_fn(item: &syn::ItemFn) -> syn::Result<DeviceFnAst> {
    const WHAT: &str = "a #[device_fn]";
    let mut errs = Errors::default();
    let sig = &item.sig;
    check_sig_common(sig, WHAT, &mut errs);
    let mut params = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Typed(pt) => {
                let name = errs.ok(plain_ident(&pt.pat, WHAT));
                let ty = errs
                    .ok(value_type(&pt.ty).map_err(|e| in_signature(e, &pt.ty, "parameter type")));
                if let (Some(n), Some(t)) = (name, ty) {
                    params.push((n, t));
                }
            }
            FnArg::Receiver(r) => errs.push(err(r, format!("`self` is not supported in {WHAT}"))),
        }
    }
    let ret = match &sig.output {
        ReturnType::Type(_, ty) => {
            errs.ok(value_type(ty).map_err(|e| in_signature(e, ty, "return type")))
        }
        ReturnType::Default => {
            errs.push(err(
                &sig.ident,
                format!("{WHAT} returns a value: add `-> T` with T one of {TYPES}, usize, or a tuple of them"),
            ));
            None
        }
    };
    let block = errs.ok(block_stmts(&item.block.stmts, SourceRange::of(&item.block)));
    errs.finish()?;
    Ok(DeviceFnAst {
        name: sig.ident.clone(),
        params,
        ret: ret.expect("checked"),
        block: block.expect("checked"),
    })
}

/// A `#[device_fn]` signature's type error from [`value_type`], said as
/// such and spanned on the whole type.
fn in_signature(e: syn::Error, ty: &Type, what: &str) -> syn::Error {
    let msg = e.to_string();
    let why = msg.strip_prefix("unsupported type: ").unwrap_or(&msg);
    err(ty, format!("unsupported {what} in a #[device_fn]: {why}"))
}

fn stmts(list: &[syn::Stmt], errs: &mut Errors) -> Vec<Stmt> {
    list.iter().filter_map(|s| errs.ok(stmt(s))).collect()
}

fn let_stmt(l: &syn::Local) -> syn::Result<Let> {
    if let Some(a) = l.attrs.first() {
        return Err(err(a, format!("attributes are not supported in {KERNEL}")));
    }
    let (pat, ty) = match &l.pat {
        Pat::Type(pt) => (
            &*pt.pat,
            Some((value_type(&pt.ty)?, SourceRange::of(&pt.ty))),
        ),
        p => (p, None),
    };
    let (name, parts) = match strip_pat(pat) {
        Pat::Tuple(t) => {
            let parts = t
                .elems
                .iter()
                .map(|p| match strip_pat(p) {
                    Pat::Wild(_) => Ok(None),
                    Pat::Tuple(_) => Err(err(p, NESTED_TUPLE)),
                    p => plain_ident(p, KERNEL).map(Some),
                })
                .collect::<syn::Result<Vec<_>>>()?;
            if parts.is_empty() {
                return Err(err(t, UNIT));
            }
            let span = t.paren_token.span.join();
            (syn::Ident::new("tuple", span), Some(parts))
        }
        p => (plain_ident(p, KERNEL)?, None),
    };
    let init = l.init.as_ref().ok_or_else(|| {
        err(
            l,
            format!("a `let` in {KERNEL} needs an initializer: `let {name} = ...;`"),
        )
    })?;
    if let Some((else_tok, _)) = &init.diverge {
        return Err(err(
            else_tok,
            format!("`let ... else` is not supported in {KERNEL}"),
        ));
    }
    Ok(Let {
        name,
        parts,
        ty,
        init: expr(&init.expr)?,
    })
}

/// A pattern without its parentheses.
fn strip_pat(p: &Pat) -> &Pat {
    match p {
        Pat::Paren(p) => strip_pat(&p.pat),
        other => other,
    }
}

fn compound_op(op: &syn::BinOp) -> Option<BinOp> {
    use syn::BinOp as B;
    Some(match op {
        B::AddAssign(_) => BinOp::Add,
        B::SubAssign(_) => BinOp::Sub,
        B::MulAssign(_) => BinOp::Mul,
        B::DivAssign(_) => BinOp::Div,
        B::RemAssign(_) => BinOp::Rem,
        B::BitAndAssign(_) => BinOp::BitAnd,
        B::BitOrAssign(_) => BinOp::BitOr,
        B::BitXorAssign(_) => BinOp::BitXor,
        B::ShlAssign(_) => BinOp::Shl,
        B::ShrAssign(_) => BinOp::Shr,
        _ => return None,
    })
}

/// The `out[i]` of an assignment.
fn assign_target(left: &SExpr) -> syn::Result<(syn::Ident, Expr)> {
    match left {
        SExpr::Index(ix) => match &*ix.expr {
            SExpr::Path(p) if p.path.get_ident().is_some() && p.qself.is_none() => {
                Ok((p.path.get_ident().cloned().expect("checked"), expr(&ix.index)?))
            }
            other => Err(err(other, "only a kernel parameter array can be written: `out[task] = ...`")),
        },
        SExpr::Paren(p) => assign_target(&p.expr),
        SExpr::Path(p) => Err(err(
            p,
            format!("assignment to a local is not supported in {KERNEL}: bindings are immutable; use a new `let` (shadowing), or write an output as `out[task] = ...`"),
        )),
        other => Err(err(other, "only outputs can be assigned, as `out[task] = ...`")),
    }
}

fn stmt(s: &syn::Stmt) -> syn::Result<Stmt> {
    match s {
        syn::Stmt::Local(l) => Ok(Stmt::Let(let_stmt(l)?)),
        syn::Stmt::Item(i) => Err(err(i, format!("items (fn, struct, use, ...) are not supported inside {KERNEL}"))),
        syn::Stmt::Macro(m) => Err(err(
            &m.mac,
            format!("macro calls are not supported in {KERNEL}: the body is translated to CUDA, which cannot expand Rust macros"),
        )),
        syn::Stmt::Expr(e, _) => stmt_expr(e),
    }
}

/// The intrinsic a call names (its path's last segment), if any.
fn intrinsic_name(c: &syn::ExprCall) -> Option<String> {
    match &*c.func {
        SExpr::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .filter(|n| INTRINSICS.contains(&n.as_str())),
        _ => None,
    }
}

/// `push(list, item)`, a statement.
fn push_stmt(c: &syn::ExprCall, sp: SourceRange) -> syn::Result<Stmt> {
    if c.args.len() != 2 {
        return Err(err(
            &c.func,
            format!(
                "`push` takes a worklist and an item: `push(list, item)`, found {} arguments",
                c.args.len()
            ),
        ));
    }
    let list =
        match strip(&c.args[0]) {
            SExpr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                p.path.get_ident().cloned().expect("checked")
            }
            SExpr::Reference(r) => return Err(err(
                &r.and_token,
                "pass the worklist parameter itself, `push(list, item)`: it is a reference already",
            )),
            other => {
                return Err(err(
                    other,
                    "the first argument of `push` is a worklist parameter `list: &Worklist`",
                ))
            }
        };
    Ok(Stmt::Push {
        list,
        item: expr(&c.args[1])?,
        sp,
    })
}

/// `atomic_*(&array[index], args..)`.
fn atomic_call(c: &syn::ExprCall, name: &str, sp: SourceRange) -> syn::Result<Expr> {
    let values = AtomicName::values(name);
    let apply = name == "atomic_apply";
    let shape = match name {
        "atomic_cas" => "`atomic_cas(&a[i], current, new)`".to_string(),
        "atomic_apply" => {
            "`atomic_apply(&a[i], v, f)` with `f` a #[device_fn] of two arguments".to_string()
        }
        n => format!("`{n}(&a[i], v)`"),
    };
    let want = 1 + values + usize::from(apply);
    if c.args.len() != want {
        return Err(err(
            &c.func,
            format!(
                "`{name}` takes {want} arguments, found {}: {shape}",
                c.args.len()
            ),
        ));
    }
    let (array, index) = match strip(&c.args[0]) {
        SExpr::Reference(r) => {
            if let Some(m) = &r.mutability {
                return Err(err(m, format!("pass the element as `&a[i]`: shared arrays are updated through shared borrows ({shape})")));
            }
            match strip(&r.expr) {
                SExpr::Index(ix) => match &*ix.expr {
                    SExpr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                        (p.path.get_ident().cloned().expect("checked"), expr(&ix.index)?)
                    }
                    other => return Err(err(other, format!("the first argument of `{name}` is an element of a shared array parameter: {shape}"))),
                },
                other => return Err(err(other, format!("the first argument of `{name}` is an element of a shared array parameter: {shape}"))),
            }
        }
        other => return Err(err(other, format!("the first argument of `{name}` is a reference to an element of a shared array: {shape}"))),
    };
    let mut args = Vec::new();
    for a in c.args.iter().skip(1).take(values) {
        args.push(expr(a)?);
    }
    let op = match name {
        "atomic_min" => AtomicName::Min,
        "atomic_max" => AtomicName::Max,
        "atomic_add" => AtomicName::Add,
        "atomic_or" => AtomicName::Or,
        "atomic_cas" => AtomicName::Cas,
        _ => match strip(&c.args[2]) {
            SExpr::Path(p) if p.qself.is_none() => AtomicName::Apply(p.path.clone()),
            other => {
                return Err(err(
                    other,
                    format!(
                    "the operator of `atomic_apply` is a #[device_fn] named by its path: {shape}"
                ),
                ))
            }
        },
    };
    Ok(Expr {
        kind: ExprKind::Atomic {
            op,
            array,
            index: Box::new(index),
            args,
        },
        sp,
    })
}

/// `(lo..hi).for_each(|k| body)`.
fn for_each(m: &syn::ExprMethodCall, sp: SourceRange) -> syn::Result<ForEach> {
    const SHAPE: &str = "`(lo..hi).for_each(|k| { .. });`";
    let range = match strip(&m.receiver) {
        SExpr::Range(r) => r,
        SExpr::MethodCall(inner) if inner.method == "map" => {
            return Err(err(
                &m.method,
                format!("`for_each` takes the range itself, {SHAPE}: a `.map(..)` feeds a fold, `(lo..hi).map(|k| ..).fold(init, op)`"),
            ))
        }
        other => {
            return Err(err(
                other,
                format!("`for_each` iterates over a range of fine-task indices: {SHAPE}"),
            ))
        }
    };
    if let syn::RangeLimits::Closed(t) = &range.limits {
        return Err(err(
            t,
            "inclusive ranges are not supported in the nested pattern: write `lo..hi + 1`",
        ));
    }
    let (lo, hi) = match (&range.start, &range.end) {
        (Some(lo), Some(hi)) => (expr(lo)?, expr(hi)?),
        _ => return Err(err(range, format!("`for_each` needs both bounds: {SHAPE}"))),
    };
    if m.args.len() != 1 {
        return Err(err(
            &m.method,
            format!("`.for_each` takes one closure `|k| {{ .. }}`: {SHAPE}"),
        ));
    }
    let (k, body) = match &m.args[0] {
        SExpr::Closure(c) => {
            closure_checks(c, 1, "for_each")?;
            let (k, ty) = closure_param(&c.inputs[0])?;
            if let Some((t, tsp)) = ty {
                if t != Ty::Usize {
                    return Err(tsp.error(
                        "the for_each closure's parameter is a fine-task index of type `usize`",
                    ));
                }
            }
            let mut errs = Errors::default();
            let body = match strip(&c.body) {
                SExpr::Block(b) if b.label.is_none() => stmts(&b.block.stmts, &mut errs),
                other => errs.ok(stmt_expr(other)).into_iter().collect(),
            };
            errs.finish()?;
            (k, body)
        }
        other => {
            return Err(err(
                other,
                format!("`.for_each` takes a closure `|k| {{ .. }}`: {SHAPE}"),
            ))
        }
    };
    Ok(ForEach {
        lo,
        hi,
        k,
        body,
        sp,
    })
}

fn stmt_expr(e: &SExpr) -> syn::Result<Stmt> {
    let sp = SourceRange::of(e);
    match e {
        SExpr::MethodCall(m) if m.method == "for_each" => Ok(Stmt::ForEach(for_each(m, sp)?)),
        SExpr::Call(c) => match intrinsic_name(c).as_deref() {
            Some("push") => push_stmt(c, sp),
            Some(_) => Ok(Stmt::Eval(expr(e)?)),
            None => {
                expr(e)?;
                Err(err(
                    e,
                    format!("this statement has no effect: a call in {KERNEL} statement position must be an atomic intrinsic or `push`; a #[device_fn] call is a value, bind it with `let`"),
                ))
            }
        },
        SExpr::Assign(a) => {
            let (array, index) = assign_target(&a.left)?;
            Ok(Stmt::Assign {
                array,
                index,
                op: None,
                value: expr(&a.right)?,
                sp,
            })
        }
        SExpr::Binary(b) if compound_op(&b.op).is_some() => {
            let (array, index) = assign_target(&b.left)?;
            let op = compound_op(&b.op).map(|o| (o, SourceRange::of(&b.op)));
            Ok(Stmt::Assign {
                array,
                index,
                op,
                value: expr(&b.right)?,
                sp,
            })
        }
        SExpr::If(i) => {
            let cond = cond_expr(&i.cond)?;
            let mut errs = Errors::default();
            let then = stmts(&i.then_branch.stmts, &mut errs);
            let els = match &i.else_branch {
                None => Vec::new(),
                Some((_, e)) => match &**e {
                    SExpr::Block(b) => stmts(&b.block.stmts, &mut errs),
                    SExpr::If(_) => errs.ok(stmt_expr(e)).into_iter().collect(),
                    other => {
                        errs.push(err(other, "expected a block or `else if`"));
                        Vec::new()
                    }
                },
            };
            errs.finish()?;
            Ok(Stmt::If {
                cond,
                then,
                els,
                sp,
            })
        }
        SExpr::Paren(p) => stmt_expr(&p.expr),
        // Unsupported expression kinds get their specific message from `expr`.
        other => {
            expr(other)?;
            Err(err(
                other,
                format!("this statement has no effect: {KERNEL} body holds `let` bindings, writes `out[task] = ...` / `out[task] op= ...`, atomic intrinsics, `push(list, item)` and `if`/`else` blocks of those"),
            ))
        }
    }
}

fn cond_expr(e: &SExpr) -> syn::Result<Expr> {
    if let SExpr::Let(l) = e {
        return Err(err(
            l,
            format!("`if let` is not supported in {KERNEL}: conditions are `bool` expressions"),
        ));
    }
    expr(e)
}

fn block_stmts(stmts: &[syn::Stmt], sp: SourceRange) -> syn::Result<Block> {
    let mut lets = Vec::new();
    let mut errs = Errors::default();
    let n = stmts.len();
    let mut tail = None;
    for (i, s) in stmts.iter().enumerate() {
        match s {
            syn::Stmt::Local(l) => {
                if let Some(l) = errs.ok(let_stmt(l)) {
                    lets.push(l);
                }
            }
            syn::Stmt::Expr(e, None) if i + 1 == n => tail = errs.ok(expr(e)),
            syn::Stmt::Expr(e, Some(_)) => {
                errs.ok(expr(e));
                errs.push(err(
                    s,
                    format!("a block in {KERNEL} holds `let` bindings and a final value expression (no `;` after it)"),
                ));
            }
            other => {
                errs.ok(stmt(other));
                errs.push(err(
                    other,
                    format!(
                        "a block in {KERNEL} holds `let` bindings and a final value expression"
                    ),
                ));
            }
        }
    }
    errs.finish()?;
    let tail = tail.ok_or_else(|| {
        sp.error("this block has no value: end it with an expression (without `;`)")
    })?;
    Ok(Block { lets, tail })
}

fn bin_op(op: &syn::BinOp) -> Option<BinOp> {
    use syn::BinOp as B;
    Some(match op {
        B::Add(_) => BinOp::Add,
        B::Sub(_) => BinOp::Sub,
        B::Mul(_) => BinOp::Mul,
        B::Div(_) => BinOp::Div,
        B::Rem(_) => BinOp::Rem,
        B::BitAnd(_) => BinOp::BitAnd,
        B::BitOr(_) => BinOp::BitOr,
        B::BitXor(_) => BinOp::BitXor,
        B::Shl(_) => BinOp::Shl,
        B::Shr(_) => BinOp::Shr,
        B::Eq(_) => BinOp::Eq,
        B::Ne(_) => BinOp::Ne,
        B::Lt(_) => BinOp::Lt,
        B::Le(_) => BinOp::Le,
        B::Gt(_) => BinOp::Gt,
        B::Ge(_) => BinOp::Ge,
        B::And(_) => BinOp::And,
        B::Or(_) => BinOp::Or,
        _ => return None,
    })
}

fn lit_suffix(suffix: &str, node: &impl quote::ToTokens) -> syn::Result<Option<Ty>> {
    if suffix.is_empty() {
        return Ok(None);
    }
    match Ty::from_name(suffix) {
        Some(Ty::Bool) | None => Err(err(
            node,
            format!("unsupported literal suffix `{suffix}`: supported are {TYPES}, usize"),
        )),
        Some(t) => Ok(Some(t)),
    }
}

const EXPRS: &str = "literals, locals, arithmetic, comparisons, `as` casts, indexing, `if`/`else`, blocks, tuples and their `.0`, `.1`, .., whitelisted methods and #[device_fn] calls";

pub fn expr(e: &SExpr) -> syn::Result<Expr> {
    let sp = SourceRange::of(e);
    let kind = match e {
        SExpr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => {
                let value = i.base10_digits().parse::<u128>().map_err(|_| err(i, "integer literal too large"))?;
                ExprKind::Int { value, suffix: lit_suffix(i.suffix(), i)? }
            }
            syn::Lit::Float(f) => {
                let suffix = lit_suffix(f.suffix(), f)?;
                if suffix.is_some_and(|t| !t.is_float()) {
                    return Err(err(f, "integer suffix on a float literal"));
                }
                ExprKind::Float { digits: f.base10_digits().to_string(), suffix }
            }
            syn::Lit::Bool(b) => ExprKind::Bool(b.value),
            other => {
                return Err(err(other, format!("this literal is not supported in {KERNEL}: only integer, float and bool literals")))
            }
        },
        SExpr::Path(p) => path_expr(p)?,
        SExpr::Paren(p) => return expr(&p.expr).map(|inner| Expr { sp, ..inner }),
        SExpr::Group(g) => return expr(&g.expr),
        SExpr::Unary(u) => {
            let op = match u.op {
                syn::UnOp::Neg(_) => UnOp::Neg,
                syn::UnOp::Not(_) => UnOp::Not,
                _ => return Err(err(&u.op, format!("dereferences are not supported in {KERNEL}: there are no references; index arrays directly"))),
            };
            ExprKind::Unary(op, Box::new(expr(&u.expr)?))
        }
        SExpr::Binary(b) => match bin_op(&b.op) {
            Some(op) => ExprKind::Binary(op, SourceRange::of(&b.op), Box::new(expr(&b.left)?), Box::new(expr(&b.right)?)),
            None => {
                return Err(err(
                    &b.op,
                    "compound assignment is a statement: write it as `out[task] op= value;` in the epilogue",
                ))
            }
        },
        SExpr::Cast(c) => {
            let to = scalar_type(&c.ty).ok_or_else(|| {
                err(&c.ty, format!("unsupported type in `as` cast: supported are {TYPES}, usize"))
            })?;
            ExprKind::Cast(Box::new(expr(&c.expr)?), to)
        }
        SExpr::Index(ix) => match &*ix.expr {
            SExpr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                ExprKind::Index(p.path.get_ident().cloned().expect("checked"), Box::new(expr(&ix.index)?))
            }
            other => return Err(err(other, format!("only kernel parameter arrays can be indexed in {KERNEL}: `a[i]` with `a: &[T]`"))),
        },
        SExpr::If(i) => {
            let cond = cond_expr(&i.cond)?;
            let then = block_stmts(&i.then_branch.stmts, SourceRange::of(&i.then_branch))?;
            let els = match &i.else_branch {
                None => {
                    return Err(err(
                        e,
                        "an `if` used as a value needs an `else` branch of the same type",
                    ))
                }
                Some((_, eb)) => match &**eb {
                    SExpr::Block(b) => block_stmts(&b.block.stmts, SourceRange::of(&b.block))?,
                    other => {
                        let tail = expr(other)?;
                        Block { lets: Vec::new(), tail }
                    }
                },
            };
            ExprKind::If(Box::new(cond), Box::new(then), Box::new(els))
        }
        SExpr::Block(b) => {
            if let Some(l) = &b.label {
                return Err(err(l, format!("labels are not supported in {KERNEL}")));
            }
            ExprKind::Block(Box::new(block_stmts(&b.block.stmts, sp)?))
        }
        SExpr::MethodCall(m) => return method_call(m, sp),
        SExpr::Call(c) if intrinsic_name(c).as_deref() == Some("push") => {
            return Err(err(
                &c.func,
                "`push(list, item)` is a statement: it has no value",
            ))
        }
        SExpr::Call(c) if intrinsic_name(c).is_some() => {
            let name = intrinsic_name(c).expect("checked");
            return atomic_call(c, &name, sp);
        }
        SExpr::Call(c) => match &*c.func {
            SExpr::Path(p) if p.qself.is_none() => {
                let args = c.args.iter().map(expr).collect::<syn::Result<_>>()?;
                ExprKind::Call { path: p.path.clone(), args }
            }
            other => return Err(err(other, format!("only #[device_fn] functions can be called in {KERNEL}, by name or path"))),
        },
        SExpr::ForLoop(SynFor { for_token, .. }) => return Err(loop_err(for_token)),
        SExpr::While(w) => return Err(loop_err(&w.while_token)),
        SExpr::Loop(l) => return Err(loop_err(&l.loop_token)),
        SExpr::Return(r) => {
            return Err(err(
                &r.return_token,
                format!("`return` is not supported in {KERNEL}: the body runs to its end; use `if`/`else` in the epilogue"),
            ))
        }
        SExpr::Break(b) => return Err(err(&b.break_token, format!("`break` is not supported in {KERNEL}"))),
        SExpr::Continue(c) => return Err(err(&c.continue_token, format!("`continue` is not supported in {KERNEL}"))),
        SExpr::Macro(m) => {
            return Err(err(
                &m.mac,
                format!("macro calls are not supported in {KERNEL}: the body is translated to CUDA, which cannot expand Rust macros"),
            ))
        }
        SExpr::Closure(c) => {
            return Err(err(
                c,
                format!("closures are only supported as the `.map(|k| ..)` and `.fold(init, |a, b| ..)` arguments of the nested pattern in {KERNEL}"),
            ))
        }
        SExpr::Reference(r) => {
            return Err(err(&r.and_token, format!("references are not supported in {KERNEL}: read array elements by indexing, `a[i]`")))
        }
        SExpr::Range(r) => {
            return Err(err(
                r,
                format!("ranges are only supported as `(lo..hi)` in the nested pattern `(lo..hi).map(|k| ..).fold(init, op)` of {KERNEL}"),
            ))
        }
        SExpr::Unsafe(u) => return Err(err(&u.unsafe_token, format!("`unsafe` is not supported in {KERNEL}"))),
        SExpr::Try(t) => return Err(err(&t.question_token, format!("`?` is not supported in {KERNEL}: faults (bad index, division by zero) are reported by the launch"))),
        SExpr::Match(m) => return Err(err(&m.match_token, format!("`match` is not supported in {KERNEL}: use `if`/`else`"))),
        SExpr::Field(f) => field(f)?,
        SExpr::Tuple(t) => tuple(t)?,
        SExpr::Struct(_) | SExpr::Array(_) | SExpr::Repeat(_) => {
            return Err(err(e, format!("struct and array expressions are not supported in {KERNEL}: values are scalars or tuples of them")))
        }
        SExpr::Assign(a) => return Err(err(&a.eq_token, "assignment is a statement, not a value: write `out[task] = value;` in the epilogue")),
        SExpr::Let(l) => return Err(err(l, format!("`let` expressions are not supported in {KERNEL}"))),
        SExpr::Async(_) | SExpr::Await(_) | SExpr::Yield(_) => return Err(err(e, format!("async code is not supported in {KERNEL}"))),
        other => return Err(err(other, format!("this expression is not supported in {KERNEL}: supported are {EXPRS}"))),
    };
    Ok(Expr { kind, sp })
}

use syn::ExprForLoop as SynFor;

/// `value.i`: element `i` of a tuple (named fields are refused).
fn field(f: &syn::ExprField) -> syn::Result<ExprKind> {
    match &f.member {
        syn::Member::Unnamed(i) => Ok(ExprKind::Field(Box::new(expr(&f.base)?), i.index as usize)),
        syn::Member::Named(n) => Err(err(
            n,
            format!("named fields are not supported in {KERNEL}: there are no structs; a tuple's elements are `.0`, `.1`, .."),
        )),
    }
}

/// A tuple literal of 1 to [`TUPLE_MAX`] scalars.
fn tuple(t: &syn::ExprTuple) -> syn::Result<ExprKind> {
    if t.elems.is_empty() {
        return Err(err(t, UNIT));
    }
    if t.elems.len() > TUPLE_MAX {
        return Err(err(
            t,
            format!(
                "a tuple has at most {TUPLE_MAX} elements, found {}",
                t.elems.len()
            ),
        ));
    }
    if let Some(inner) = t.elems.iter().find(|x| matches!(strip(x), SExpr::Tuple(_))) {
        return Err(err(inner, NESTED_TUPLE));
    }
    Ok(ExprKind::Tuple(
        t.elems.iter().map(expr).collect::<syn::Result<_>>()?,
    ))
}

fn loop_err(tok: &impl quote::ToTokens) -> syn::Error {
    err(
        tok,
        format!("loops are not supported in {KERNEL}: express the inner loop as `(lo..hi).map(|k| ..).fold(init, op)`"),
    )
}

fn path_expr(p: &syn::ExprPath) -> syn::Result<ExprKind> {
    if p.qself.is_some() {
        return Err(err(
            p,
            format!("qualified paths are not supported in {KERNEL}"),
        ));
    }
    if let Some(id) = p.path.get_ident() {
        return Ok(ExprKind::Var(id.clone()));
    }
    let segs: Vec<_> = p.path.segments.iter().collect();
    if segs.len() == 2
        && p.path.leading_colon.is_none()
        && segs.iter().all(|s| s.arguments.is_none())
    {
        if let Some(ty) = Ty::from_name(&segs[0].ident.to_string()) {
            let name = segs[1].ident.clone();
            let n = name.to_string();
            let ok = match n.as_str() {
                "MAX" | "MIN" => ty != Ty::Bool,
                "INFINITY" | "NEG_INFINITY" | "NAN" | "EPSILON" => ty.is_float(),
                _ => false,
            };
            if ok {
                return Ok(ExprKind::Const { ty, name });
            }
            let supported = if ty.is_float() {
                "INFINITY, NEG_INFINITY, NAN, EPSILON, MAX, MIN"
            } else {
                "MAX, MIN"
            };
            return Err(err(
                &segs[1].ident,
                format!(
                    "unsupported constant `{}::{n}`: supported are {supported}",
                    ty.rust_name()
                ),
            ));
        }
    }
    Err(err(
        p,
        format!("paths are supported in {KERNEL} only as constants like `f32::INFINITY`, `u32::MAX`, or as #[device_fn] calls"),
    ))
}

fn method_call(m: &syn::ExprMethodCall, sp: SourceRange) -> syn::Result<Expr> {
    let name = m.method.to_string();
    if let Some(t) = &m.turbofish {
        return Err(err(t, format!("turbofish is not supported in {KERNEL}")));
    }
    if name == "load" {
        if !m.args.is_empty() {
            return Err(err(&m.method, "`.load()` takes no arguments"));
        }
        return match strip(&m.receiver) {
            SExpr::Index(ix) => match &*ix.expr {
                SExpr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => Ok(Expr {
                    kind: ExprKind::LoadShared(
                        p.path.get_ident().cloned().expect("checked"),
                        Box::new(expr(&ix.index)?),
                    ),
                    sp,
                }),
                other => Err(err(
                    other,
                    "`.load()` reads an element of a shared array parameter: `a[i].load()`",
                )),
            },
            other => Err(err(
                other,
                "`.load()` reads an element of a shared array parameter: `a[i].load()`",
            )),
        };
    }
    if name == "for_each" {
        return Err(err(
            &m.method,
            format!("`.for_each(..)` is a statement, not a value: write `(lo..hi).for_each(|k| {{ .. }});` on its own in {KERNEL}"),
        ));
    }
    if name == "any" || name == "all" {
        return short_circuit(m, sp);
    }
    if name == "fold" {
        if let SExpr::MethodCall(inner) = strip(&m.receiver) {
            if inner.method == "map" {
                return nested(m, inner, sp);
            }
        }
        return Err(err(
            &m.method,
            format!("`.fold` is only supported as the nested pattern `(lo..hi).map(|k| ..).fold(init, op)` of {KERNEL}"),
        ));
    }
    if matches!(
        name.as_str(),
        "sum"
            | "product"
            | "iter"
            | "into_iter"
            | "map"
            | "filter"
            | "count"
            | "reduce"
            | "zip"
            | "enumerate"
            | "collect"
            | "rev"
            | "step_by"
            | "skip"
            | "take"
    ) {
        let hint = if name == "sum" {
            "write `.fold(0, |a, b| a + b)` (an explicit fold compiles to a warp reduction)"
        } else if name == "product" {
            "write `.fold(1, |a, b| a * b)`"
        } else {
            "the iterator forms are the nested patterns `(lo..hi).map(|k| ..).fold(init, op)`, `(lo..hi).any(|k| ..)`, `(lo..hi).all(|k| ..)` and `(lo..hi).for_each(|k| { .. });`"
        };
        return Err(err(
            &m.method,
            format!("`.{name}()` is not supported in {KERNEL}: {hint}"),
        ));
    }
    if crate::ir::Method::from_name(&name).is_none() {
        return Err(err(
            &m.method,
            format!(
                "unknown method `{name}` in {KERNEL}: supported are, on floats, {}; on integers, {}",
                crate::ir::Method::FLOAT.join(", "),
                crate::ir::Method::INT.join(", ")
            ),
        ));
    }
    let recv = expr(&m.receiver)?;
    let args = m.args.iter().map(expr).collect::<syn::Result<_>>()?;
    Ok(Expr {
        kind: ExprKind::Method {
            recv: Box::new(recv),
            name: m.method.clone(),
            args,
        },
        sp,
    })
}

fn strip(e: &SExpr) -> &SExpr {
    match e {
        SExpr::Paren(p) => strip(&p.expr),
        SExpr::Group(g) => strip(&g.expr),
        other => other,
    }
}

fn closure_checks(c: &syn::ExprClosure, n: usize, what: &str) -> syn::Result<()> {
    if let Some(m) = &c.capture {
        return Err(err(m, format!("`move` closures are not supported in {KERNEL}: the {what} closure borrows nothing; drop `move`")));
    }
    if let Some(t) = c.asyncness.as_ref() {
        return Err(err(
            t,
            format!("async closures are not supported in {KERNEL}"),
        ));
    }
    if let Some(t) = c.constness.as_ref() {
        return Err(err(
            t,
            format!("const closures are not supported in {KERNEL}"),
        ));
    }
    if let Some(t) = c.movability.as_ref() {
        return Err(err(
            t,
            format!("static closures are not supported in {KERNEL}"),
        ));
    }
    if let Some(l) = &c.lifetimes {
        return Err(err(
            l,
            format!("`for<..>` closures are not supported in {KERNEL}"),
        ));
    }
    if c.inputs.len() != n {
        let shape = if n == 1 {
            "`|k| expr` (the fine-task index)"
        } else {
            "`|a, b| expr` (two accumulator values)"
        };
        return Err(SourceRange::single(c.or1_token.span)
            .to(SourceRange::single(c.or2_token.span))
            .error(format!(
                "the {what} closure takes {n} parameter{}, found {}: write {shape}",
                if n == 1 { "" } else { "s" },
                c.inputs.len()
            )));
    }
    if let ReturnType::Type(_, ty) = &c.output {
        return Err(err(
            ty,
            format!("closure return types are not supported in {KERNEL}: the type is inferred"),
        ));
    }
    Ok(())
}

/// A closure parameter: identifier with an optional type annotation.
fn closure_param(p: &Pat) -> syn::Result<(syn::Ident, Option<(Ty, SourceRange)>)> {
    match p {
        Pat::Type(pt) => Ok((
            plain_ident(&pt.pat, KERNEL)?,
            Some((value_type(&pt.ty)?, SourceRange::of(&pt.ty))),
        )),
        p => Ok((plain_ident(p, KERNEL)?, None)),
    }
}

/// The fine-task range `lo..hi` an iterator pattern walks; `shape` is the
/// pattern's form, for the messages.
fn fine_range(receiver: &SExpr, shape: &str) -> syn::Result<(Expr, Expr)> {
    let range = match strip(receiver) {
        SExpr::Range(r) => r,
        other => {
            return Err(err(
                other,
                format!("the nested pattern iterates over a range of fine-task indices: {shape}"),
            ))
        }
    };
    if let syn::RangeLimits::Closed(t) = &range.limits {
        return Err(err(
            t,
            "inclusive ranges are not supported in the nested pattern: write `lo..hi + 1`",
        ));
    }
    match (&range.start, &range.end) {
        (Some(lo), Some(hi)) => Ok((expr(lo)?, expr(hi)?)),
        _ => Err(err(
            range,
            format!("the nested pattern needs both bounds: {shape}"),
        )),
    }
}

/// The closure `|k| body` over a fine-task index, of `.map`, `.any` or
/// `.all`.
fn fine_closure(
    call: &syn::ExprMethodCall,
    what: &str,
    shape: &str,
) -> syn::Result<(syn::Ident, Expr)> {
    if call.args.len() != 1 {
        return Err(err(
            &call.method,
            format!("`.{what}` takes one closure `|k| expr`: {shape}"),
        ));
    }
    match &call.args[0] {
        SExpr::Closure(c) => {
            closure_checks(c, 1, what)?;
            let (k, ty) = closure_param(&c.inputs[0])?;
            if let Some((t, tsp)) = ty {
                if t != Ty::Usize {
                    return Err(tsp.error(format!(
                        "the {what} closure's parameter is a fine-task index of type `usize`"
                    )));
                }
            }
            Ok((k, expr(&c.body)?))
        }
        other => Err(err(
            other,
            format!("`.{what}` takes a closure `|k| expr`: {shape}"),
        )),
    }
}

/// `(lo..hi).any(|k| pred)` / `(lo..hi).all(|k| pred)`: the nested pattern
/// whose fold may stop early, as Rust's own `Iterator::any` and `all` do.
fn short_circuit(call: &syn::ExprMethodCall, sp: SourceRange) -> syn::Result<Expr> {
    let all = call.method == "all";
    let shape = if all {
        "`(lo..hi).all(|k| predicate)`"
    } else {
        "`(lo..hi).any(|k| predicate)`"
    };
    if let SExpr::MethodCall(inner) = strip(&call.receiver) {
        if inner.method == "map" {
            return Err(err(
                &call.method,
                format!(
                    "`.{}` takes the range itself, {shape}: the predicate goes in its closure, not in a `.map(..)` before it",
                    call.method
                ),
            ));
        }
    }
    let (lo, hi) = fine_range(&call.receiver, shape)?;
    let what = if all { "all" } else { "any" };
    let (k, map) = fine_closure(call, what, shape)?;
    let msp = SourceRange::of(&call.method);
    Ok(Expr {
        kind: ExprKind::Nested(Box::new(Nested {
            lo,
            hi,
            k,
            map,
            init: Expr {
                kind: ExprKind::Bool(all),
                sp: msp,
            },
            reduce: Reduce::Logic { all },
        })),
        sp,
    })
}

fn nested(
    fold: &syn::ExprMethodCall,
    map: &syn::ExprMethodCall,
    sp: SourceRange,
) -> syn::Result<Expr> {
    const SHAPE: &str = "`(lo..hi).map(|k| ..).fold(init, op)`";
    let (lo, hi) = fine_range(&map.receiver, SHAPE)?;
    let (k, map_body) = fine_closure(map, "map", SHAPE)?;
    if fold.args.len() != 2 {
        return Err(err(
            &fold.method,
            format!("`.fold` takes an initial value and a reduce operator: {SHAPE}"),
        ));
    }
    let init = expr(&fold.args[0])?;
    let reduce = match &fold.args[1] {
        SExpr::Closure(c) => {
            closure_checks(c, 2, "reduce")?;
            let (a, ta) = closure_param(&c.inputs[0])?;
            let (b, tb) = closure_param(&c.inputs[1])?;
            Reduce::Closure { a, b, tys: [ta, tb], body: expr(&c.body)? }
        }
        SExpr::Path(p) if p.qself.is_none() => {
            let segs: Vec<_> = p.path.segments.iter().collect();
            let ty = (segs.len() == 2 && p.path.leading_colon.is_none())
                .then(|| Ty::from_name(&segs[0].ident.to_string()))
                .flatten();
            match ty {
                Some(ty) => {
                    let m = segs[1].ident.to_string();
                    if ty == Ty::Bool || !(m == "min" || m == "max") {
                        return Err(err(
                            p,
                            "unsupported reduce path: supported are `T::min` and `T::max` for a numeric T, a #[device_fn] of two arguments, or a closure `|a, b| expr`",
                        ));
                    }
                    Reduce::MinMax { ty, max: m == "max", sp: SourceRange::of(p) }
                }
                None => Reduce::DeviceFn(p.path.clone()),
            }
        }
        other => {
            return Err(err(
                other,
                "the reduce operator is a closure `|a, b| expr`, `T::min`/`T::max`, or a #[device_fn] of two arguments",
            ))
        }
    };
    Ok(Expr {
        kind: ExprKind::Nested(Box::new(Nested {
            lo,
            hi,
            k,
            map: map_body,
            init,
            reduce,
        })),
        sp,
    })
}

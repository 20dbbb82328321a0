//! AST → typed IR: name resolution, the owner-computes rule, and type
//! inference by unification (Rust's rules: no implicit conversions;
//! unsuffixed literals take their type from context, else `i32` / `f64`).

use crate::check::Shape;
use crate::diag::{Errors, SourceRange};
use crate::ir::{
    self, ArgType, AtomicOp, BinOp, ConstKind, DeviceCall, Local, LocalId, Method, ParamKind, Stmt,
    Ty, UnOp,
};
use crate::parse::{self, ExprKind as Ast};
use std::collections::HashSet;
use unify::{Bound, TypeVar, Unifier};

mod reserved;
mod unify;

pub use reserved::is_reserved;

// ---------------------------------------------------------------- checks after solving

/// A rule checked once inference is solved (it needs the final types).
enum DeferredCheck {
    /// Arithmetic `+ - * / %` needs a number; bitwise `& | ^` an integer or bool.
    Binary(BinOp, TypeVar, SourceRange),
    /// Shift operands must be integers.
    ShiftOperand(TypeVar, SourceRange),
    Neg(TypeVar, SourceRange),
    Not(TypeVar, SourceRange),
    Method(Method, TypeVar, SourceRange),
    Cast(TypeVar, Ty, SourceRange),
    /// An integer literal's value must fit its type.
    IntLit(TypeVar, i128, SourceRange),
    FloatLit(TypeVar, String, SourceRange),
    /// The type must be known (a device function's result).
    Known(TypeVar, SourceRange, String),
    /// The value must not be a tuple; the message says what needs a scalar.
    Scalar(TypeVar, SourceRange, &'static str),
}

const SCALAR_OPS: &str = "operators, casts and methods apply to scalars, not tuples: apply them to the elements, e.g. `a.0 < b.0`";

/// What a tuple element may not be.
const NESTED: &str =
    "nested tuples are not supported: a tuple's elements are scalars; flatten it, `(a, b, c)`";

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Prologue,
    Init,
    Map,
    Reduce,
    /// The body of a push kernel's `for_each`.
    ForEach,
    Epilogue,
    DeviceFn,
}

struct Var {
    ident: syn::Ident,
    tv: TypeVar,
    phase: Phase,
}

struct CallSite {
    path: syn::Path,
    /// Each argument's type variable; `None` for a callee-typed literal.
    args: Vec<Option<TypeVar>>,
    ret: TypeVar,
}

/// The state of lowering one kernel or device function: scopes, the
/// inference in progress, the rules to check once it is solved, errors.
struct Lowering<'a> {
    params: &'a [parse::Param],
    task: Option<LocalId>,
    /// The task index and the locals bound to plain copies of it.
    task_copies: HashSet<LocalId>,
    vars: Vec<Var>,
    scopes: Vec<Vec<(String, LocalId)>>,
    s: Unifier,
    deferred: Vec<DeferredCheck>,
    calls: Vec<CallSite>,
    errs: Errors,
    phase: Phase,
    /// Prologue locals read after the prologue.
    prologue_locals_used_later: HashSet<LocalId>,
    /// The nested pattern and its accumulator, once the epilogue is being
    /// lowered: there the pattern stands for the folded value.
    folded: Option<(&'a parse::Nested, TypeVar)>,
}

/// An IR node typed by variable `tv`; `ty` is filled in by `resolve_types` once solved.
fn typed(kind: ir::ExprKind, tv: TypeVar) -> ir::Expr {
    ir::Expr {
        kind,
        ty: Ty::I32,
        tv,
    }
}

impl<'a> Lowering<'a> {
    fn new(params: &'a [parse::Param], phase: Phase) -> Self {
        Lowering {
            params,
            task: None,
            task_copies: HashSet::new(),
            vars: Vec::new(),
            scopes: vec![Vec::new()],
            s: Unifier::default(),
            deferred: Vec::new(),
            calls: Vec::new(),
            errs: Errors::default(),
            phase,
            prologue_locals_used_later: HashSet::new(),
            folded: None,
        }
    }

    fn is(&mut self, t: Ty) -> TypeVar {
        self.s.fresh(Bound::Is(t))
    }

    fn error_expr(&mut self, err: syn::Error) -> ir::Expr {
        self.errs.push(err);
        let tv = self.s.fresh(Bound::Error);
        typed(ir::ExprKind::Lit(ir::Lit::Int(0)), tv)
    }

    fn unify_or(
        &mut self,
        a: TypeVar,
        b: TypeVar,
        sp: SourceRange,
        msg: impl FnOnce(String, String) -> String,
    ) {
        if let Err((x, y)) = self.s.unify(a, b) {
            self.errs.push(sp.error(msg(x, y)));
        }
    }

    fn declare(&mut self, ident: &syn::Ident, tv: TypeVar) -> LocalId {
        let id = self.vars.len();
        self.vars.push(Var {
            ident: ident.clone(),
            tv,
            phase: self.phase,
        });
        self.scopes
            .last_mut()
            .expect("a scope")
            .push((ident.to_string(), id));
        id
    }

    /// A local the kernel's code cannot name (a destructured tuple).
    fn declare_hidden(&mut self, ident: &syn::Ident, tv: TypeVar) -> LocalId {
        self.vars.push(Var {
            ident: ident.clone(),
            tv,
            phase: self.phase,
        });
        self.vars.len() - 1
    }

    fn lookup(&self, name: &str) -> Option<LocalId> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(n, _)| n == name)
            .map(|&(_, id)| id)
    }

    fn param(&self, name: &str) -> Option<(usize, &'a parse::Param)> {
        self.params.iter().enumerate().find(|(_, p)| p.name == name)
    }

    fn use_local(&mut self, id: LocalId) {
        if self.vars[id].phase == Phase::Prologue && self.phase != Phase::Prologue {
            self.prologue_locals_used_later.insert(id);
        }
    }

    /// A `let`'s bindings: one, or for `let (a, b) = v;` a hidden local
    /// holding `v` and then `a = tuple.0`, `b = tuple.1`.
    fn let_(&mut self, l: &parse::Let) -> Vec<(LocalId, ir::Expr)> {
        let init = self.expr(&l.init);
        if let Some((t, _)) = l.ty {
            let want = self.is(t);
            let sp = l.init.sp;
            let shown = l
                .parts
                .as_ref()
                .map_or_else(|| l.name.to_string(), |_| "the pattern".to_string());
            self.unify_or(init.tv, want, sp, |found, _| {
                format!(
                    "mismatched types: `{shown}` is annotated `{}`, the value is {found}{}",
                    t.rust_name(),
                    cast_hint(&found)
                )
            });
        }
        let Some(parts) = &l.parts else {
            let copies_task = self.is_task(&l.init);
            let id = self.declare(&l.name, init.tv);
            if copies_task {
                self.task_copies.insert(id);
            }
            return vec![(id, init)];
        };
        // The pattern fixes the arity; the elements' types come from the value.
        let elems: Vec<TypeVar> = parts.iter().map(|_| self.s.fresh(Bound::Any)).collect();
        let pattern = self.s.tuple(elems.clone());
        let n = parts.len();
        self.unify_or(init.tv, pattern, l.init.sp, |found, _| {
            format!("mismatched types: the pattern binds a tuple of {n} element{}, the value is {found}", if n == 1 { "" } else { "s" })
        });
        let whole = self.declare_hidden(&l.name, init.tv);
        let mut out = vec![(whole, init)];
        for (i, (part, tv)) in parts.iter().zip(elems).enumerate() {
            if let Some(name) = part {
                let id = self.declare(name, tv);
                let read = typed(ir::ExprKind::Local(whole), pattern);
                out.push((id, typed(ir::ExprKind::Field(Box::new(read), i), tv)));
            }
        }
        out
    }

    fn block(&mut self, b: &parse::Block) -> ir::Expr {
        self.scopes.push(Vec::new());
        let lets: Vec<_> = b.lets.iter().flat_map(|l| self.let_(l)).collect();
        let tail = self.expr(&b.tail);
        self.scopes.pop();
        let tv = tail.tv;
        if lets.is_empty() {
            return tail;
        }
        typed(ir::ExprKind::Block(lets, Box::new(tail)), tv)
    }

    /// A tuple literal: its elements are scalars.
    fn tuple(&mut self, elems: &[parse::Expr]) -> ir::Expr {
        let elems: Vec<ir::Expr> = elems
            .iter()
            .map(|e| {
                let v = self.expr(e);
                self.deferred
                    .push(DeferredCheck::Scalar(v.tv, e.sp, NESTED));
                v
            })
            .collect();
        let tv = self.s.tuple(elems.iter().map(|e| e.tv).collect());
        typed(ir::ExprKind::Tuple(elems), tv)
    }

    /// `value.i`: the value's type must be a tuple known by here.
    fn field(&mut self, inner: &parse::Expr, i: usize, sp: SourceRange) -> ir::Expr {
        let v = self.expr(inner);
        match self.s.tuple_elems(v.tv) {
            Some(elems) if i < elems.len() => {
                let tv = elems[i];
                typed(ir::ExprKind::Field(Box::new(v), i), tv)
            }
            Some(elems) => {
                let found = self.s.describe(v.tv);
                self.error_expr(sp.error(format!(
                    "no element `.{i}` in {found}: its elements are `.0` to `.{}`",
                    elems.len() - 1
                )))
            }
            None => match self.s.get(v.tv) {
                Bound::Error => self.failed(),
                Bound::Any => self.error_expr(sp.error(format!(
                    "the type of this value must be known to read `.{i}`: annotate its binding, e.g. `let p: (f32, u32) = ..;`"
                ))),
                _ => {
                    let found = self.s.describe(v.tv);
                    self.error_expr(sp.error(format!(
                        "`.{i}` reads an element of a tuple, but this is {found}"
                    )))
                }
            },
        }
    }

    fn expect_bool(&mut self, x: &ir::Expr, sp: SourceRange, what: &str) {
        let b = self.is(Ty::Bool);
        self.unify_or(x.tv, b, sp, |found, _| {
            format!("{what} must be `bool`, found {found}: compare explicitly, e.g. `x != 0`")
        });
    }

    fn expr(&mut self, x: &parse::Expr) -> ir::Expr {
        let sp = x.sp;
        match &x.kind {
            Ast::Int { value, suffix } => {
                let tv = self.s.fresh(suffix.map_or(Bound::Int, Bound::Is));
                self.deferred
                    .push(DeferredCheck::IntLit(tv, *value as i128, sp));
                typed(ir::ExprKind::Lit(ir::Lit::Int(*value as i128)), tv)
            }
            Ast::Float { digits, suffix } => {
                let tv = self.s.fresh(suffix.map_or(Bound::Float, Bound::Is));
                self.deferred
                    .push(DeferredCheck::FloatLit(tv, digits.clone(), sp));
                typed(ir::ExprKind::Lit(ir::Lit::Float(digits.clone())), tv)
            }
            Ast::Bool(b) => {
                let tv = self.is(Ty::Bool);
                typed(ir::ExprKind::Lit(ir::Lit::Bool(*b)), tv)
            }
            Ast::Var(id) => self.var(id, sp),
            Ast::Const { ty, name } => {
                let kind = match name.to_string().as_str() {
                    "INFINITY" => ConstKind::Infinity,
                    "NEG_INFINITY" => ConstKind::NegInfinity,
                    "NAN" => ConstKind::Nan,
                    "EPSILON" => ConstKind::Epsilon,
                    "MAX" => ConstKind::Max,
                    _ => ConstKind::Min,
                };
                let tv = self.is(*ty);
                typed(ir::ExprKind::Const(kind), tv)
            }
            Ast::Unary(UnOp::Neg, inner) => {
                // `-5` is a negative literal (range-checked as such), as in Rust.
                if let Ast::Int { value, suffix } = &inner.kind {
                    let tv = self.s.fresh(suffix.map_or(Bound::Int, Bound::Is));
                    let v = -(*value as i128);
                    self.deferred.push(DeferredCheck::IntLit(tv, v, sp));
                    self.deferred.push(DeferredCheck::Neg(tv, sp));
                    return typed(ir::ExprKind::Lit(ir::Lit::Int(v)), tv);
                }
                let v = self.expr(inner);
                self.deferred.push(DeferredCheck::Neg(v.tv, sp));
                let tv = v.tv;
                typed(ir::ExprKind::Unary(UnOp::Neg, Box::new(v)), tv)
            }
            Ast::Unary(UnOp::Not, inner) => {
                let v = self.expr(inner);
                self.deferred.push(DeferredCheck::Not(v.tv, sp));
                self.deferred
                    .push(DeferredCheck::Scalar(v.tv, sp, SCALAR_OPS));
                let tv = v.tv;
                typed(ir::ExprKind::Unary(UnOp::Not, Box::new(v)), tv)
            }
            Ast::Binary(op, op_sp, l, r) => self.binary(*op, *op_sp, l, r),
            Ast::Cast(inner, to) => {
                let v = self.expr(inner);
                self.deferred.push(DeferredCheck::Cast(v.tv, *to, sp));
                self.deferred
                    .push(DeferredCheck::Scalar(v.tv, sp, SCALAR_OPS));
                let tv = self.is(*to);
                typed(ir::ExprKind::Cast(Box::new(v)), tv)
            }
            Ast::Index(array, idx) => self.index(array, idx, sp),
            Ast::If(c, t, f) => {
                let cond = self.expr(c);
                self.expect_bool(&cond, c.sp, "an `if` condition");
                let then = self.block(t);
                let els = self.block(f);
                self.unify_or(then.tv, els.tv, f.tail.sp, |a, b| {
                    format!(
                        "`if` and `else` have incompatible types: {a} and {b}{}",
                        cast_hint(&b)
                    )
                });
                let tv = then.tv;
                typed(
                    ir::ExprKind::If(Box::new(cond), Box::new(then), Box::new(els)),
                    tv,
                )
            }
            Ast::Block(b) => self.block(b),
            Ast::Method { recv, name, args } => self.method(recv, name, args, sp),
            Ast::Call { path, args } => {
                let args: Vec<_> = args
                    .iter()
                    .map(|a| match callee_typed_literal(a) {
                        Some(lit) => self.callee_typed_lit(lit, a.sp),
                        None => self.expr(a),
                    })
                    .collect();
                let ret = self.s.fresh(Bound::Any);
                let name = path
                    .segments
                    .last()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default();
                self.deferred.push(DeferredCheck::Known(
                    ret,
                    sp,
                    format!("cannot infer the result type of `{name}(..)`: annotate the binding, e.g. `let v: f32 = {name}(..);`"),
                ));
                let i = self.calls.len();
                self.calls.push(CallSite {
                    path: path.clone(),
                    args: args
                        .iter()
                        .map(|a| {
                            (!matches!(a.kind, ir::ExprKind::CalleeTypedLit { .. })).then_some(a.tv)
                        })
                        .collect(),
                    ret,
                });
                typed(ir::ExprKind::Call(i, args), ret)
            }
            Ast::Atomic {
                op,
                array,
                index,
                args,
            } => self.atomic(op, array, index, args, sp),
            Ast::LoadShared(array, idx) => self.load_shared(array, idx, sp),
            Ast::Tuple(elems) => self.tuple(elems),
            Ast::Field(inner, i) => self.field(inner, *i, sp),
            Ast::Nested(n) => match self.folded {
                Some((folded, acc)) if std::ptr::eq(&**n, folded) => typed(ir::ExprKind::Acc, acc),
                // Misplaced or extra patterns were reported by `check`.
                _ => {
                    let tv = self.s.fresh(Bound::Error);
                    typed(ir::ExprKind::Lit(ir::Lit::Int(0)), tv)
                }
            },
        }
    }

    /// An unsuffixed literal argument of a device function call. Rust types
    /// it from the callee's parameter, which the macro cannot see; rustc does
    /// (the twin passes it through a pointer typed by the companion's
    /// `ParamN` aliases), and the CUDA passes a value that converts exactly to
    /// either parameter type. A float literal whose `f32` value is not its
    /// `f64` value rounded to `f32` (rare: a literal within a hair of an `f32`
    /// rounding boundary) has no such spelling and must be suffixed.
    fn callee_typed_lit(&mut self, lit: ir::Lit, sp: SourceRange) -> ir::Expr {
        if let ir::Lit::Float(digits) = &lit {
            let (as_f32, as_f64) = (digits.parse::<f32>(), digits.parse::<f64>());
            let exact =
                matches!((as_f32, as_f64), (Ok(a), Ok(b)) if (b as f32).to_bits() == a.to_bits());
            if !exact {
                return self.error_expr(sp.error(format!(
                    "this literal takes the type of the device function's parameter, and its value as `f32` differs from its `f64` value rounded to `f32`, which the CUDA side would pass: suffix it, `{digits}f32` or `{digits}f64`"
                )));
            }
        }
        let tv = self.s.fresh(Bound::Error);
        typed(ir::ExprKind::CalleeTypedLit { lit, span: sp.lo }, tv)
    }

    fn var(&mut self, id: &syn::Ident, sp: SourceRange) -> ir::Expr {
        let name = id.to_string();
        if let Some(l) = self.lookup(&name) {
            if self.phase == Phase::Reduce && self.vars[l].phase != Phase::Reduce {
                return self.error_expr(sp.error(format!(
                    "the reduce operator sees only its two arguments: `{name}` is not available there (it combines partial results of different threads and segments)"
                )));
            }
            self.use_local(l);
            let tv = self.vars[l].tv;
            return typed(ir::ExprKind::Local(l), tv);
        }
        match self.param(&name) {
            Some((i, p)) if p.kind == ParamKind::Scalar => {
                if self.phase == Phase::Reduce {
                    return self.error_expr(sp.error(format!(
                        "the reduce operator sees only its two arguments: parameter `{name}` is not available there"
                    )));
                }
                let tv = self.is(p.ty);
                typed(ir::ExprKind::Scalar(i), tv)
            }
            Some((_, p)) if p.kind == ParamKind::Worklist => self.error_expr(sp.error(format!(
                "`{name}` is a worklist (`&Worklist`): it is only pushed to, `push({name}, item);`"
            ))),
            Some((_, p)) if p.kind == ParamKind::Shared => self.error_expr(sp.error(format!(
                "`{name}` is a shared array (`&[Atomic<{}>]`): read an element with `{name}[i].load()`, update it with an atomic intrinsic",
                p.ty.rust_name()
            ))),
            Some((_, p)) => self.error_expr(sp.error(format!(
                "`{name}` is an array (`{}[{}]`): it can only be indexed, `{name}[i]`",
                if p.kind == ParamKind::Output {
                    "&mut "
                } else {
                    "&"
                },
                p.ty.rust_name()
            ))),
            None => {
                self.error_expr(sp.error(format!("cannot find `{name}` in this {}", self.what())))
            }
        }
    }

    fn what(&self) -> &'static str {
        if self.phase == Phase::DeviceFn {
            "#[device_fn]"
        } else {
            "kernel"
        }
    }

    /// Whether `idx` names the task index: the task parameter itself or a
    /// local bound to a plain copy of it (`let r = row;`), which holds the
    /// same value, so indexing with it keeps each task on its own element.
    fn is_task(&self, idx: &parse::Expr) -> bool {
        match &idx.kind {
            Ast::Var(id) => self
                .lookup(&id.to_string())
                .is_some_and(|l| self.task_copies.contains(&l)),
            _ => false,
        }
    }

    /// In a per-task map (a kernel without a nested pattern) that indexes an
    /// output with a constant (`sum[0] += x[i]`, every task accumulating into
    /// one element), how to write the whole-array reduction it attempts.
    fn reduction_hint(&self, idx: &parse::Expr) -> &'static str {
        let constant = matches!(idx.kind, Ast::Int { .. });
        if self.phase != Phase::Epilogue || self.folded.is_some() || !constant {
            return "";
        }
        "; to reduce a whole array to one value (a sum, a dot product), fold it in a one-task kernel, `out[t] = (0..n as usize).map(|k| x[k] * y[k]).fold(0.0, |a, b| a + b);`, launched split over the device with `warpfit::split_one_task`"
    }

    fn task_name(&self) -> String {
        self.task
            .map(|t| self.vars[t].ident.to_string())
            .unwrap_or_default()
    }

    fn index(&mut self, array: &syn::Ident, idx: &parse::Expr, sp: SourceRange) -> ir::Expr {
        let name = array.to_string();
        if self.lookup(&name).is_some() {
            return self.error_expr(SourceRange::of(array).error(format!(
                "`{name}` is a local value, not an array: only `&[T]` / `&mut [T]` parameters can be indexed"
            )));
        }
        let Some((i, p)) = self.param(&name) else {
            return self.error_expr(SourceRange::of(array).error(format!(
                "cannot find array `{name}` in this {}",
                self.what()
            )));
        };
        if self.phase == Phase::Reduce {
            return self.error_expr(sp.error(
                "the reduce operator sees only its two arguments: arrays are not available there (it combines partial results of different threads and segments)",
            ));
        }
        match p.kind {
            ParamKind::Scalar => self.error_expr(SourceRange::of(array).error(format!(
                "`{name}` is a scalar `{}`, not an array: it cannot be indexed",
                p.ty.rust_name()
            ))),
            ParamKind::Worklist => self.error_expr(SourceRange::of(array).error(format!(
                "`{name}` is a worklist (`&Worklist`), not an array: push to it with `push({name}, item);`"
            ))),
            ParamKind::Shared => self.error_expr(sp.error(format!(
                "read an element of the shared array `{name}` with `.load()`, `{name}[i].load()`: other tasks may update it through atomics meanwhile"
            ))),
            ParamKind::Output => {
                if !self.is_task(idx) {
                    return self.error_expr(idx.sp.error(format!(
                        "owner-computes: output `{name}` is read and written only at the task index, `{name}[{}]` (the task parameter or a plain copy of it); each task owns exactly its element, which is what makes tasks race-free{}",
                        self.task_name(),
                        self.reduction_hint(idx)
                    )));
                }
                let tv = self.is(p.ty);
                typed(ir::ExprKind::LoadOut(i), tv)
            }
            ParamKind::Input => {
                let ix = self.expr(idx);
                let u = self.is(Ty::Usize);
                self.unify_or(ix.tv, u, idx.sp, |found, _| {
                    format!("arrays are indexed by `usize`, found {found}: add `as usize`")
                });
                let tv = self.is(p.ty);
                typed(ir::ExprKind::Load(i, Box::new(ix)), tv)
            }
        }
    }

    /// `push(list, item)`.
    fn push(&mut self, list: &syn::Ident, item: &parse::Expr, sp: SourceRange) -> Option<Stmt> {
        if !self.effect_allowed("`push`", sp) {
            return None;
        }
        let name = list.to_string();
        let target = match (self.lookup(&name), self.param(&name)) {
            (None, Some((i, p))) if p.kind == ParamKind::Worklist => Some(i),
            (None, Some((_, p))) => {
                self.errs.push(SourceRange::of(list).error(format!(
                    "`push` takes a worklist `&Worklist`, and `{name}` is `{}`",
                    rust_param_type(p)
                )));
                None
            }
            (Some(_), _) => {
                self.errs.push(SourceRange::of(list).error(format!(
                    "`{name}` is a local value: `push` takes a worklist parameter `&Worklist`"
                )));
                None
            }
            (None, None) => {
                self.errs.push(
                    SourceRange::of(list)
                        .error(format!("cannot find worklist `{name}` in this kernel")),
                );
                None
            }
        };
        let v = self.expr(item);
        let u = self.is(Ty::U32);
        self.unify_or(v.tv, u, item.sp, |found, _| {
            format!(
                "worklist items are `u32`, the item is {found}{}",
                cast_hint(&found)
            )
        });
        Some(Stmt::Push {
            param: target?,
            item: v,
        })
    }

    /// Whether an effect (an atomic intrinsic, `push`) may run in the
    /// current phase; reports why not at `sp`.
    fn effect_allowed(&mut self, what: &str, sp: SourceRange) -> bool {
        let place = match self.phase {
            Phase::ForEach | Phase::Epilogue => return true,
            Phase::Prologue => "the prologue: it may run more than once per task (in every piece of a split task, on every lane of a sub-warp)",
            Phase::Init | Phase::Map => "a fold's map or initial value: a fold computes a value, and CTE may evaluate its map again",
            Phase::Reduce => "the reduce operator",
            Phase::DeviceFn => "a #[device_fn]: it computes a value from its arguments",
        };
        self.errs.push(sp.error(format!(
            "{what} cannot run in {place}; effects run in the `for_each` body, the epilogue after the nested pattern, or a per-task map"
        )));
        false
    }

    /// An expression whose error was reported already.
    fn failed(&mut self) -> ir::Expr {
        let tv = self.s.fresh(Bound::Error);
        typed(ir::ExprKind::Lit(ir::Lit::Int(0)), tv)
    }

    /// The shared array parameter `array` for `what`, or the reason why it
    /// is not one, reported.
    fn shared_array(&mut self, array: &syn::Ident, what: &str) -> Option<(usize, Ty)> {
        let name = array.to_string();
        if self.lookup(&name).is_some() {
            self.errs.push(SourceRange::of(array).error(format!(
                "`{name}` is a local value, not an array: {what} takes an element of a shared array parameter `&[Atomic<T>]`"
            )));
            return None;
        }
        match self.param(&name) {
            Some((i, p)) if p.kind == ParamKind::Shared => Some((i, p.ty)),
            Some((_, p)) => {
                let kind = match p.kind {
                    ParamKind::Input => format!("a read-only input `&[{}]`", p.ty.rust_name()),
                    ParamKind::Output => format!(
                        "an output `&mut [{}]`, written at the task index only",
                        p.ty.rust_name()
                    ),
                    ParamKind::Scalar => format!("a scalar `{}`", p.ty.rust_name()),
                    ParamKind::Worklist => "a worklist `&Worklist`".to_string(),
                    ParamKind::Shared => unreachable!("matched above"),
                };
                self.errs.push(SourceRange::of(array).error(format!(
                    "{what} needs a shared array `&[Atomic<T>]`, and `{name}` is {kind}: declare it `{name}: &[Atomic<{}>]` if tasks update it concurrently",
                    p.ty.rust_name()
                )));
                None
            }
            None => {
                self.errs.push(SourceRange::of(array).error(format!(
                    "cannot find array `{name}` in this {}",
                    self.what()
                )));
                None
            }
        }
    }

    /// `a[i]`'s index: `usize`.
    fn usize_index(&mut self, idx: &parse::Expr) -> ir::Expr {
        let ix = self.expr(idx);
        let u = self.is(Ty::Usize);
        self.unify_or(ix.tv, u, idx.sp, |found, _| {
            format!("arrays are indexed by `usize`, found {found}: add `as usize`")
        });
        ix
    }

    /// `atomic_*(&array[index], args..)`: the element's previous value.
    fn atomic(
        &mut self,
        op: &parse::AtomicName,
        array: &syn::Ident,
        index: &parse::Expr,
        args: &[parse::Expr],
        sp: SourceRange,
    ) -> ir::Expr {
        let parse_op = op;
        let op = match op {
            parse::AtomicName::Min => AtomicOp::Min,
            parse::AtomicName::Max => AtomicOp::Max,
            parse::AtomicName::Add => AtomicOp::Add,
            parse::AtomicName::Or => AtomicOp::Or,
            parse::AtomicName::Cas => AtomicOp::Cas,
            // The call site is registered below, once the element type is known.
            parse::AtomicName::Apply(_) => AtomicOp::Apply(usize::MAX),
        };
        let what = format!("`{}`", op.name());
        if !self.effect_allowed(&what, sp) {
            return self.failed();
        }
        let Some((i, elem)) = self.shared_array(array, &what) else {
            return self.failed();
        };
        let name = array.to_string();
        if op == AtomicOp::Or && !elem.is_int() {
            self.errs.push(sp.error(format!(
                "`atomic_or` is defined on integer elements, and `{name}` holds `{}`",
                elem.rust_name()
            )));
            return self.failed();
        }
        let ix = self.usize_index(index);
        let elem_tv = self.is(elem);
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            let v = self.expr(a);
            self.unify_or(v.tv, elem_tv, a.sp, |found, want| {
                format!(
                    "mismatched types in `{}`: `{name}` holds {want}, the value is {found}{}",
                    op.name(),
                    cast_hint(&found)
                )
            });
            vals.push(v);
        }
        let op = match (op, parse_op) {
            (AtomicOp::Apply(_), parse::AtomicName::Apply(path)) => {
                // `a[i] = f(a[i], v)`: a device function from two elements to one.
                let c = self.calls.len();
                self.calls.push(CallSite {
                    path: path.clone(),
                    args: vec![Some(elem_tv), Some(elem_tv)],
                    ret: elem_tv,
                });
                AtomicOp::Apply(c)
            }
            (other, _) => other,
        };
        typed(
            ir::ExprKind::Atomic {
                op,
                param: i,
                index: Box::new(ix),
                args: vals,
            },
            elem_tv,
        )
    }

    /// `array[idx].load()` of a shared array.
    fn load_shared(&mut self, array: &syn::Ident, idx: &parse::Expr, sp: SourceRange) -> ir::Expr {
        if self.phase == Phase::Reduce {
            return self.error_expr(sp.error(
                "the reduce operator sees only its two arguments: arrays are not available there (it combines partial results of different threads and segments)",
            ));
        }
        let name = array.to_string();
        if let (None, Some((_, p))) = (self.lookup(&name), self.param(&name)) {
            if p.kind != ParamKind::Shared {
                let hint = if p.kind.is_array() {
                    format!(": read it by indexing, `{name}[i]`")
                } else {
                    String::new()
                };
                return self.error_expr(SourceRange::of(array).error(format!(
                    "`.load()` reads an element of a shared array `&[Atomic<T>]`, and `{name}` is `{}`{hint}",
                    rust_param_type(p)
                )));
            }
        }
        let Some((i, elem)) = self.shared_array(array, "`.load()`") else {
            return self.failed();
        };
        let ix = self.usize_index(idx);
        let tv = self.is(elem);
        typed(ir::ExprKind::LoadShared(i, Box::new(ix)), tv)
    }

    fn binary(
        &mut self,
        op: BinOp,
        op_sp: SourceRange,
        l: &parse::Expr,
        r: &parse::Expr,
    ) -> ir::Expr {
        let a = self.expr(l);
        let b = self.expr(r);
        let sym = op.symbol();
        let tv = match op {
            BinOp::And | BinOp::Or => {
                self.expect_bool(&a, l.sp, &format!("an operand of `{sym}`"));
                self.expect_bool(&b, r.sp, &format!("an operand of `{sym}`"));
                a.tv
            }
            BinOp::Shl | BinOp::Shr => {
                self.deferred.push(DeferredCheck::ShiftOperand(a.tv, l.sp));
                self.deferred.push(DeferredCheck::ShiftOperand(b.tv, r.sp));
                a.tv
            }
            _ => {
                self.unify_or(a.tv, b.tv, op_sp, |x, y| {
                    format!("mismatched types {x} and {y} in `{sym}`: add an `as` cast")
                });
                self.deferred
                    .push(DeferredCheck::Scalar(a.tv, op_sp, SCALAR_OPS));
                if op.is_comparison() {
                    self.is(Ty::Bool)
                } else {
                    self.deferred.push(DeferredCheck::Binary(op, a.tv, op_sp));
                    a.tv
                }
            }
        };
        typed(ir::ExprKind::Binary(op, Box::new(a), Box::new(b)), tv)
    }

    fn method(
        &mut self,
        recv: &parse::Expr,
        name: &syn::Ident,
        args: &[parse::Expr],
        sp: SourceRange,
    ) -> ir::Expr {
        let m =
            Method::from_name(&name.to_string()).expect("parse accepts whitelisted methods only");
        let r = self.expr(recv);
        if args.len() != m.arity() {
            return self.error_expr(SourceRange::of(name).error(format!(
                "`{}` takes {} argument{}, found {}",
                m.name(),
                m.arity(),
                if m.arity() == 1 { "" } else { "s" },
                args.len()
            )));
        }
        let mut out = vec![r];
        for a in args {
            let v = self.expr(a);
            let want = match m {
                Method::Powi => self.is(Ty::I32),
                Method::Pow => self.is(Ty::U32),
                _ => out[0].tv,
            };
            self.unify_or(v.tv, want, a.sp, |found, want| {
                format!(
                    "mismatched types: `{}` expects {want} here, found {found}{}",
                    m.name(),
                    cast_hint(&found)
                )
            });
            out.push(v);
        }
        let recv_tv = out[0].tv;
        if !m.int_ok() {
            let f = self.s.fresh(Bound::Float);
            self.unify_or(recv_tv, f, SourceRange::of(name), |found, _| {
                format!(
                    "`{}` is a float method (f32, f64), but the receiver is {found}",
                    m.name()
                )
            });
        } else if !m.float_ok() {
            let i = self.s.fresh(Bound::Int);
            self.unify_or(recv_tv, i, SourceRange::of(name), |found, _| {
                format!("`{}` is an integer method, but the receiver is {found}: use `powi`/`powf` on floats", m.name())
            });
        }
        self.deferred.push(DeferredCheck::Method(m, recv_tv, sp));
        let tv = if m == Method::IsNan {
            self.is(Ty::Bool)
        } else {
            recv_tv
        };
        typed(ir::ExprKind::Method(m, out), tv)
    }

    /// Solves the remaining constraints and checks the deferred rules.
    fn finish(&mut self) {
        let deferred = std::mem::take(&mut self.deferred);
        for o in deferred {
            let err = match o {
                DeferredCheck::Binary(op, tv, sp) => {
                    let t = self.s.resolve(tv);
                    let ok = match op {
                        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                            t.map_or(true, |t| t.is_int() || t == Ty::Bool)
                        }
                        _ => t != Some(Ty::Bool),
                    };
                    (!ok).then(|| {
                        sp.error(format!(
                            "`{}` is not defined for `{}`",
                            op.symbol(),
                            t.map_or("_".into(), |t| t.rust_name())
                        ))
                    })
                }
                DeferredCheck::ShiftOperand(tv, sp) => match self.s.resolve(tv) {
                    Some(t) if !t.is_int() => Some(sp.error(format!(
                        "shift operands must be integers, found `{}`",
                        t.rust_name()
                    ))),
                    _ => None,
                },
                DeferredCheck::Neg(tv, sp) => match self.s.resolve(tv) {
                    Some(t) if !(t.is_float() || t.is_signed_int()) => Some(sp.error(format!(
                        "unary `-` is not defined for `{}` (unsigned or bool)",
                        t.rust_name()
                    ))),
                    _ => None,
                },
                DeferredCheck::Not(tv, sp) => match self.s.resolve(tv) {
                    Some(t) if t.is_float() => {
                        Some(sp.error(format!("`!` is not defined for `{}`", t.rust_name())))
                    }
                    _ => None,
                },
                DeferredCheck::Method(m, tv, sp) => match self.s.resolve(tv) {
                    Some(t) => {
                        let ok = if t.is_float() {
                            m.float_ok()
                        } else if t.is_int() {
                            m.int_ok() && (m != Method::Abs || t.is_signed_int())
                        } else {
                            false
                        };
                        (!ok).then(|| {
                            sp.error(format!(
                                "no method `{}` on `{}` in the kernel language (floats: {}; integers: {}; `abs` on signed integers only)",
                                m.name(),
                                t.rust_name(),
                                Method::FLOAT.join(", "),
                                Method::INT.join(", ")
                            ))
                        })
                    }
                    None => None,
                },
                DeferredCheck::Cast(tv, to, sp) => match self.s.resolve(tv) {
                    Some(from) => {
                        let bad =
                            to == Ty::Bool && from != Ty::Bool || from == Ty::Bool && to.is_float();
                        bad.then(|| {
                            sp.error(format!(
                                "cannot cast `{}` as `{}`: {}",
                                from.rust_name(),
                                to.rust_name(),
                                if to == Ty::Bool {
                                    "compare instead, e.g. `x != 0`"
                                } else {
                                    "cast through an integer, `b as u32 as f32`"
                                }
                            ))
                        })
                    }
                    None => None,
                },
                DeferredCheck::IntLit(tv, v, sp) => match self.s.resolve(tv) {
                    Some(t) if t.is_int() => {
                        let max = t.int_max() as i128;
                        let min = if t.is_signed_int() { -max - 1 } else { 0 };
                        (v < min || v > max).then(|| {
                            sp.error(format!(
                                "literal out of range for `{}` ({min}..={max})",
                                t.rust_name()
                            ))
                        })
                    }
                    Some(t) => Some(sp.error(format!(
                        "mismatched types: expected `{}`, found an integer literal{}",
                        t.rust_name(),
                        if t.is_float() {
                            ": write it with a decimal point, e.g. `1.0`"
                        } else {
                            ""
                        }
                    ))),
                    None => None,
                },
                DeferredCheck::FloatLit(tv, digits, sp) => match self.s.resolve(tv) {
                    Some(Ty::F32) => digits
                        .parse::<f32>()
                        .map_or(true, |v| v.is_infinite())
                        .then(|| sp.error("literal out of range for `f32`")),
                    Some(Ty::F64) => digits
                        .parse::<f64>()
                        .map_or(true, |v| v.is_infinite())
                        .then(|| sp.error("literal out of range for `f64`")),
                    Some(t) => Some(sp.error(format!(
                        "mismatched types: expected `{}`, found a float literal",
                        t.rust_name()
                    ))),
                    None => None,
                },
                DeferredCheck::Known(tv, sp, msg) => {
                    (self.s.get(tv) == Bound::Any).then(|| sp.error(msg))
                }
                DeferredCheck::Scalar(tv, sp, msg) => {
                    let tuple = matches!(self.s.get(tv), Bound::Tuple(_) | Bound::Is(Ty::Tuple(_)));
                    tuple.then(|| sp.error(msg))
                }
            };
            if let Some(err) = err {
                self.errs.push(err);
            }
        }
    }

    fn ty(&mut self, tv: TypeVar) -> Ty {
        self.s.resolve(tv).unwrap_or(Ty::I32)
    }

    /// Writes each node's solved type into it (`ty` from its variable `tv`).
    fn resolve_types(&mut self, x: &mut ir::Expr) {
        x.visit_mut(&mut |node| node.ty = self.s.resolve(node.tv).unwrap_or(Ty::I32));
    }

    fn resolve_stmt_types(&mut self, stmts: &mut [Stmt]) {
        for s in stmts {
            s.visit_exprs_mut(&mut |node| node.ty = self.s.resolve(node.tv).unwrap_or(Ty::I32));
        }
    }

    /// Locals with kernel-unique spellings that are valid in Rust and C++.
    fn locals(&mut self) -> Vec<Local> {
        let mut used = HashSet::new();
        let mut out = Vec::with_capacity(self.vars.len());
        for i in 0..self.vars.len() {
            let ident = self.vars[i].ident.clone();
            let mut base = syn::ext::IdentExt::unraw(&ident).to_string();
            if is_reserved(&base) {
                base.push('_');
            } else if base.starts_with("wf_") || base.starts_with("__") {
                base = format!("u{base}");
            }
            let mut name = base.clone();
            let mut n = 1;
            while !used.insert(name.clone()) {
                name = format!("{base}_{n}");
                n += 1;
            }
            let tv = self.vars[i].tv;
            out.push(Local {
                name,
                ty: self.ty(tv),
            });
        }
        out
    }

    fn calls(&mut self) -> Vec<DeviceCall> {
        let calls = std::mem::take(&mut self.calls);
        calls
            .into_iter()
            .map(|c| DeviceCall {
                path: c.path,
                args: c
                    .args
                    .iter()
                    .map(|a| match a {
                        Some(tv) => ArgType::Inferred(self.ty(*tv)),
                        None => ArgType::CalleeParam,
                    })
                    .collect(),
                ret: self.ty(c.ret),
            })
            .collect()
    }

    /// Lowers the epilogue statements; `nested` is replaced by the folded value.
    fn stmt(&mut self, s: &parse::Stmt) -> Vec<Stmt> {
        match s {
            parse::Stmt::Let(l) => self
                .let_(l)
                .into_iter()
                .map(|(id, v)| Stmt::Let(id, v))
                .collect(),
            s => self.stmt_one(s).into_iter().collect(),
        }
    }

    fn stmt_one(&mut self, s: &parse::Stmt) -> Option<Stmt> {
        match s {
            parse::Stmt::Let(_) => unreachable!("lowered by `stmt`"),
            parse::Stmt::Assign {
                array,
                index,
                op,
                value,
                ..
            } => {
                let name = array.to_string();
                let target = match (self.lookup(&name), self.param(&name)) {
                    (None, Some((i, p))) => Some((i, p)),
                    _ => None,
                };
                let v = self.expr(value);
                let Some((i, p)) = target else {
                    self.errs.push(SourceRange::of(array).error(format!(
                        "`{name}` is not an output: only `&mut [T]` parameters can be written, as `out[{}] = ...`",
                        self.task_name()
                    )));
                    return None;
                };
                match p.kind {
                    ParamKind::Output => {}
                    ParamKind::Shared => {
                        self.errs.push(SourceRange::of(array).error(format!(
                            "`{name}` is a shared array (`&[Atomic<{}>]`): it is written only through the atomic intrinsics, `atomic_min(&{name}[i], v)`, `atomic_max`, `atomic_add`, `atomic_or`, `atomic_cas`, `atomic_apply`, never with `=`",
                            p.ty.rust_name()
                        )));
                        return None;
                    }
                    ParamKind::Worklist => {
                        self.errs.push(SourceRange::of(array).error(format!(
                            "`{name}` is a worklist (`&Worklist`): push to it, `push({name}, item);`"
                        )));
                        return None;
                    }
                    _ => {
                        self.errs.push(SourceRange::of(array).error(format!(
                            "`{name}` is a read-only input (`&[{}]`): only `&mut [T]` outputs can be written",
                            p.ty.rust_name()
                        )));
                        return None;
                    }
                }
                if self.phase == Phase::ForEach {
                    self.errs.push(SourceRange::of(array).error(format!(
                        "outputs are written in the epilogue, after `for_each`: inside it a task's fine tasks run in parallel, so `{name}[{}] = ..` would race; update a shared array `&[Atomic<T>]` through an atomic intrinsic instead",
                        self.task_name()
                    )));
                    return None;
                }
                if !self.is_task(index) {
                    self.errs.push(index.sp.error(format!(
                        "owner-computes: output `{name}` is written only at the task index, `{name}[{}] = ...` (the task parameter or a plain copy of it); each task owns exactly its element, which is what makes tasks race-free{}",
                        self.task_name(),
                        self.reduction_hint(index)
                    )));
                    return None;
                }
                let elem = self.is(p.ty);
                let value = match op {
                    Some((BinOp::Shl | BinOp::Shr, osp)) => {
                        self.deferred.push(DeferredCheck::ShiftOperand(elem, *osp));
                        self.deferred
                            .push(DeferredCheck::ShiftOperand(v.tv, value.sp));
                        let old = typed(ir::ExprKind::LoadOut(i), elem);
                        typed(
                            ir::ExprKind::Binary(op.expect("some").0, Box::new(old), Box::new(v)),
                            elem,
                        )
                    }
                    Some((o, osp)) => {
                        self.unify_or(v.tv, elem, value.sp, |found, want| {
                            format!("mismatched types in `{name}[..] {}=`: `{name}` holds {want}, the value is {found}{}", o.symbol(), cast_hint(&found))
                        });
                        self.deferred.push(DeferredCheck::Binary(*o, elem, *osp));
                        let old = typed(ir::ExprKind::LoadOut(i), elem);
                        typed(ir::ExprKind::Binary(*o, Box::new(old), Box::new(v)), elem)
                    }
                    None => {
                        self.unify_or(v.tv, elem, value.sp, |found, want| {
                            format!(
                                "mismatched types: `{name}` holds {want}, the value is {found}{}",
                                cast_hint(&found)
                            )
                        });
                        v
                    }
                };
                Some(Stmt::Store { param: i, value })
            }
            parse::Stmt::Eval(e) => Some(Stmt::Eval(self.expr(e))),
            parse::Stmt::Push { list, item, sp } => self.push(list, item, *sp),
            // A misplaced or second pattern: `check` reported it.
            parse::Stmt::ForEach(_) => None,
            parse::Stmt::If {
                cond, then, els, ..
            } => {
                let c = self.expr(cond);
                self.expect_bool(&c, cond.sp, "an `if` condition");
                self.scopes.push(Vec::new());
                let t = then.iter().flat_map(|s| self.stmt(s)).collect();
                self.scopes.pop();
                self.scopes.push(Vec::new());
                let f = els.iter().flat_map(|s| self.stmt(s)).collect();
                self.scopes.pop();
                Some(Stmt::If(c, t, f))
            }
        }
    }
}

/// An unsuffixed integer or float literal, possibly negated, as written
/// directly as a call argument: it takes the type of the callee's parameter.
fn callee_typed_literal(x: &parse::Expr) -> Option<ir::Lit> {
    match &x.kind {
        Ast::Int {
            value,
            suffix: None,
        } => Some(ir::Lit::Int(*value as i128)),
        Ast::Float {
            digits,
            suffix: None,
        } => Some(ir::Lit::Float(digits.clone())),
        Ast::Unary(UnOp::Neg, inner)
            if matches!(inner.kind, Ast::Int { .. } | Ast::Float { .. }) =>
        {
            match callee_typed_literal(inner)? {
                ir::Lit::Int(v) => Some(ir::Lit::Int(-v)),
                ir::Lit::Float(d) => Some(ir::Lit::Float(format!("-{d}"))),
                ir::Lit::Bool(b) => Some(ir::Lit::Bool(b)),
            }
        }
        _ => None,
    }
}

/// A parameter's type as the signature spells it, for messages.
fn rust_param_type(p: &parse::Param) -> String {
    let t = p.ty.rust_name();
    match p.kind {
        ParamKind::Input => format!("&[{t}]"),
        ParamKind::Output => format!("&mut [{t}]"),
        ParamKind::Scalar => t.to_string(),
        ParamKind::Shared => format!("&[Atomic<{t}>]"),
        ParamKind::Worklist => "&Worklist".to_string(),
    }
}

fn cast_hint(found: &str) -> &'static str {
    // A known scalar type (a tuple does not cast).
    if found.starts_with('`') && !found.starts_with("`(") {
        ": add an `as` cast"
    } else {
        ""
    }
}

impl Lowering<'_> {
    /// Types the fold: the map and the initial value have the
    /// accumulator's type (`bool` for `any` / `all`, whose predicate alone
    /// is reported when it is not).
    fn fold_types(&mut self, nested: &parse::Nested, acc: TypeVar, map: TypeVar, init: TypeVar) {
        if let parse::Reduce::Logic { all } = nested.reduce {
            // `any` / `all`: the accumulator is `bool` whatever the predicate
            // yields, so a wrong predicate is one error, at the predicate.
            let b = self.is(Ty::Bool);
            let what = if all { "all" } else { "any" };
            self.unify_or(map, b, nested.map.sp, |m, _| {
                format!(
                    "the `{what}` predicate yields {m}, which must be `bool`: compare, e.g. `x[k] > 0`"
                )
            });
            self.unify_or(acc, b, nested.init.sp, |_, _| String::new());
            self.unify_or(init, acc, nested.init.sp, |_, _| String::new());
        } else {
            self.unify_or(map, acc, nested.map.sp, |m, _| {
                format!("the map yields {m}, which must be the fold's accumulator type")
            });
            self.unify_or(init, acc, nested.init.sp, |i, a| {
                format!(
                    "mismatched types: the fold's initial value is {i}, but the map yields {a}{}",
                    cast_hint(&i)
                )
            });
        }
    }

    /// Lowers the fold's reduce operator over accumulator `acc`.
    fn reduce(&mut self, nested: &parse::Nested, acc: TypeVar) -> ir::Reduce {
        // The reduce closure's scope sits inside the others so that `var` can
        // say why a captured name is unavailable (phase check), not just unknown.
        self.phase = Phase::Reduce;
        self.scopes.push(Vec::new());
        let reduce = match &nested.reduce {
            parse::Reduce::Closure { a, b, tys, body } => {
                let ia = self.declare(a, acc);
                let ib = self.declare(b, acc);
                for (ty, (id, _)) in tys.iter().zip([(ia, a), (ib, b)]) {
                    if let Some((t, tsp)) = ty {
                        let want = self.is(*t);
                        let tv = self.vars[id].tv;
                        self.unify_or(tv, want, *tsp, |a, t| format!("the reduce closure's parameters have the accumulator type {a}, not {t}"));
                    }
                }
                let v = self.expr(body);
                self.unify_or(v.tv, acc, body.sp, |r, a| {
                    format!("mismatched types: the reduce operator returns {r}, but the accumulator is {a}{}", cast_hint(&r))
                });
                ir::Reduce::Closure {
                    a: ia,
                    b: ib,
                    body: v,
                }
            }
            parse::Reduce::MinMax { ty, max, sp } => {
                let t = self.is(*ty);
                self.unify_or(t, acc, *sp, |t, a| {
                    format!(
                        "`{}::{}` reduces {t} values, but the accumulator is {a}",
                        ty.rust_name(),
                        if *max { "max" } else { "min" }
                    )
                });
                ir::Reduce::MinMax { max: *max }
            }
            parse::Reduce::Logic { all } => ir::Reduce::Logic { all: *all },
            parse::Reduce::DeviceFn(path) => {
                let i = self.calls.len();
                self.calls.push(CallSite {
                    path: path.clone(),
                    args: vec![Some(acc), Some(acc)],
                    ret: acc,
                });
                ir::Reduce::DeviceFn(i)
            }
        };
        self.scopes.pop();
        reduce
    }
}

/// Lowers a kernel whose body `check` split into `shape`.
pub fn kernel(k: &parse::KernelFn, shape: &Shape<'_>) -> syn::Result<ir::Kernel> {
    let mut lowering = Lowering::new(&k.params, Phase::Prologue);
    let usize_tv = lowering.is(Ty::Usize);
    let task = lowering.declare(&k.task, usize_tv);
    lowering.task = Some(task);
    lowering.task_copies.insert(task);

    // Prologue.
    let mut prologue: Vec<(LocalId, ir::Expr)> = Vec::new();
    for l in &shape.prologue {
        prologue.extend(lowering.let_(l));
    }
    if let Some(fe) = shape.for_each {
        return for_each(k, shape, lowering, task, prologue, fe);
    }
    let Some(nested) = shape.nested else {
        return elementwise(k, shape, lowering, task);
    };
    let mut lo = lowering.expr(&nested.lo);
    let mut hi = lowering.expr(&nested.hi);
    for (x, src) in [(&lo, &nested.lo), (&hi, &nested.hi)] {
        let u = lowering.is(Ty::Usize);
        lowering.unify_or(x.tv, u, src.sp, |found, _| {
            format!("the fine-task range bounds are `usize`, found {found}: add `as usize`")
        });
    }

    // The fold.
    let acc = lowering.s.fresh(Bound::Any);
    lowering.phase = Phase::Init;
    let mut init = lowering.expr(&nested.init);
    lowering.phase = Phase::Map;
    lowering.scopes.push(Vec::new());
    let ku = lowering.is(Ty::Usize);
    let kid = lowering.declare(&nested.k, ku);
    let mut map = lowering.expr(&nested.map);
    lowering.scopes.pop();
    lowering.fold_types(nested, acc, map.tv, init.tv);
    let mut reduce = lowering.reduce(nested, acc);

    // Epilogue: the pattern's statement and the ones after it.
    lowering.phase = Phase::Epilogue;
    lowering.folded = Some((nested, acc));
    let mut epilogue = Vec::new();
    for s in shape.epilogue {
        epilogue.extend(lowering.stmt(s));
    }

    lowering.finish();
    let acc_ty = lowering.s.resolve(acc);
    match acc_ty {
        Some(Ty::Usize) => lowering.errs.push(nested.init.sp.error(
            "the fold's accumulator cannot be `usize` (its size differs between host and device): fold `u64` or `u32` values, e.g. `(k as u64)`",
        )),
        Some(Ty::Tuple(t)) if t.elems().any(|e| e == Ty::Usize) => lowering.errs.push(nested.init.sp.error(
            "the fold's accumulator cannot hold `usize` (its size differs between host and device): fold `u64` or `u32` elements, e.g. `(w[k], k as u32)`",
        )),
        None if lowering.s.get(acc) == Bound::Any => lowering.errs.push(nested.init.sp.error("cannot infer the fold's accumulator type: add a suffix to the initial value, e.g. `0.0f32`")),
        _ => {}
    }
    let mut errs = std::mem::take(&mut lowering.errs);
    if !errs.is_empty() {
        return Err(std::mem::take(&mut errs).finish().expect_err("non-empty"));
    }
    for (_, v) in &mut prologue {
        lowering.resolve_types(v);
    }
    for x in [&mut lo, &mut hi, &mut init, &mut map] {
        lowering.resolve_types(x);
    }
    if let ir::Reduce::Closure { body, .. } = &mut reduce {
        lowering.resolve_types(body);
    }
    lowering.resolve_stmt_types(&mut epilogue);
    let mut ctx: Vec<_> = lowering
        .prologue_locals_used_later
        .iter()
        .copied()
        .filter(|&l| l != task)
        .collect();
    ctx.sort_unstable();
    let locals = lowering.locals();
    let calls = lowering.calls();
    Ok(ir::Kernel {
        name: k.name.clone(),
        task,
        params: k
            .params
            .iter()
            .map(|p| ir::Param {
                name: p.name.clone(),
                ty: p.ty,
                kind: p.kind,
            })
            .collect(),
        locals,
        prologue,
        lo,
        hi,
        ctx,
        init,
        k: kid,
        map,
        reduce,
        acc: acc_ty.expect("checked"),
        epilogue,
        calls,
        elementwise: false,
        for_each: None,
        columns: None,
    })
}

/// The IR parameters of a kernel.
fn ir_params(k: &parse::KernelFn) -> Vec<ir::Param> {
    k.params
        .iter()
        .map(|p| ir::Param {
            name: p.name.clone(),
            ty: p.ty,
            kind: p.kind,
        })
        .collect()
}

/// Lowers a push kernel, `(lo..hi).for_each(|k| body)` after a prologue of
/// `let`s, into the shape every executor runs: the range from the
/// prologue, a `u8` fold that yields `0` (`init` 0, `u8::min`), whose map
/// runs the body's statements (`Kernel::for_each`), and the statements after
/// it as the epilogue.
fn for_each<'a>(
    k: &'a parse::KernelFn,
    shape: &Shape<'a>,
    mut lowering: Lowering<'a>,
    task: LocalId,
    mut prologue: Vec<(LocalId, ir::Expr)>,
    fe: &'a parse::ForEach,
) -> syn::Result<ir::Kernel> {
    let mut lo = lowering.expr(&fe.lo);
    let mut hi = lowering.expr(&fe.hi);
    for (x, src) in [(&lo, &fe.lo), (&hi, &fe.hi)] {
        let u = lowering.is(Ty::Usize);
        lowering.unify_or(x.tv, u, src.sp, |found, _| {
            format!("the fine-task range bounds are `usize`, found {found}: add `as usize`")
        });
    }
    let zero_u8 = |l: &mut Lowering<'_>| {
        let tv = l.is(Ty::U8);
        typed(ir::ExprKind::Lit(ir::Lit::Int(0)), tv)
    };
    let mut init = zero_u8(&mut lowering);
    let mut map = zero_u8(&mut lowering);
    lowering.phase = Phase::ForEach;
    lowering.scopes.push(Vec::new());
    let ku = lowering.is(Ty::Usize);
    let kid = lowering.declare(&fe.k, ku);
    let mut body: Vec<Stmt> = fe.body.iter().flat_map(|s| lowering.stmt(s)).collect();
    lowering.scopes.pop();

    lowering.phase = Phase::Epilogue;
    let mut epilogue = Vec::new();
    for s in shape.epilogue {
        epilogue.extend(lowering.stmt(s));
    }
    lowering.finish();
    let errs = std::mem::take(&mut lowering.errs);
    if !errs.is_empty() {
        return Err(errs.finish().expect_err("non-empty"));
    }
    for (_, v) in &mut prologue {
        lowering.resolve_types(v);
    }
    for x in [&mut lo, &mut hi, &mut init, &mut map] {
        lowering.resolve_types(x);
    }
    lowering.resolve_stmt_types(&mut body);
    lowering.resolve_stmt_types(&mut epilogue);
    let mut ctx: Vec<_> = lowering
        .prologue_locals_used_later
        .iter()
        .copied()
        .filter(|&l| l != task)
        .collect();
    ctx.sort_unstable();
    let locals = lowering.locals();
    let calls = lowering.calls();
    Ok(ir::Kernel {
        name: k.name.clone(),
        task,
        params: ir_params(k),
        locals,
        prologue,
        lo,
        hi,
        ctx,
        init,
        k: kid,
        map,
        reduce: ir::Reduce::MinMax { max: false },
        acc: Ty::U8,
        epilogue,
        calls,
        elementwise: false,
        for_each: Some(body),
        columns: None,
    })
}

/// Lowers a per-task map (a body without a nested pattern) into the shape
/// every executor already runs: an empty fine-task range `0..0`, a `u8`
/// fold that never runs (`init` 0, `map` 0, `u8::min`), and the whole body
/// as the epilogue. Owner-computes and typing are the epilogue's own rules.
fn elementwise<'a>(
    k: &'a parse::KernelFn,
    shape: &Shape<'a>,
    mut lowering: Lowering<'a>,
    task: LocalId,
) -> syn::Result<ir::Kernel> {
    let zero_usize = |l: &mut Lowering<'_>| {
        let tv = l.is(Ty::Usize);
        typed(ir::ExprKind::Lit(ir::Lit::Int(0)), tv)
    };
    let zero_u8 = |l: &mut Lowering<'_>| {
        let tv = l.is(Ty::U8);
        typed(ir::ExprKind::Lit(ir::Lit::Int(0)), tv)
    };
    let mut lo = zero_usize(&mut lowering);
    let mut hi = zero_usize(&mut lowering);
    let mut init = zero_u8(&mut lowering);
    let mut map = zero_u8(&mut lowering);
    // The fine-task index the (empty) map would bind, in a scope of its own;
    // the leading underscore keeps the twin's unused binding quiet.
    lowering.phase = Phase::Map;
    lowering.scopes.push(Vec::new());
    let ku = lowering.is(Ty::Usize);
    let kid = lowering.declare(&syn::Ident::new("_k", k.task.span()), ku);
    lowering.scopes.pop();

    lowering.phase = Phase::Epilogue;
    let mut epilogue = Vec::new();
    for s in shape.epilogue {
        epilogue.extend(lowering.stmt(s));
    }
    lowering.finish();
    let errs = std::mem::take(&mut lowering.errs);
    if !errs.is_empty() {
        return Err(errs.finish().expect_err("non-empty"));
    }
    for x in [&mut lo, &mut hi, &mut init, &mut map] {
        lowering.resolve_types(x);
    }
    lowering.resolve_stmt_types(&mut epilogue);
    let locals = lowering.locals();
    let calls = lowering.calls();
    Ok(ir::Kernel {
        name: k.name.clone(),
        task,
        params: k
            .params
            .iter()
            .map(|p| ir::Param {
                name: p.name.clone(),
                ty: p.ty,
                kind: p.kind,
            })
            .collect(),
        locals,
        prologue: Vec::new(),
        lo,
        hi,
        ctx: Vec::new(),
        init,
        k: kid,
        map,
        reduce: ir::Reduce::MinMax { max: false },
        acc: Ty::U8,
        epilogue,
        calls,
        elementwise: true,
        for_each: None,
        columns: None,
    })
}

pub fn device_fn(f: &parse::DeviceFnAst) -> syn::Result<ir::DeviceFn> {
    let mut lowering = Lowering::new(&[], Phase::DeviceFn);
    let params: Vec<_> = f
        .params
        .iter()
        .map(|(n, t)| {
            let tv = lowering.is(*t);
            lowering.declare(n, tv)
        })
        .collect();
    let mut lets: Vec<_> = f.block.lets.iter().flat_map(|l| lowering.let_(l)).collect();
    let mut body = lowering.expr(&f.block.tail);
    let ret = lowering.is(f.ret);
    lowering.unify_or(body.tv, ret, f.block.tail.sp, |found, want| {
        format!(
            "mismatched types: the #[device_fn] returns {want}, the value is {found}{}",
            cast_hint(&found)
        )
    });
    lowering.finish();
    let errs = std::mem::take(&mut lowering.errs);
    errs.finish()?;
    for (_, v) in &mut lets {
        lowering.resolve_types(v);
    }
    lowering.resolve_types(&mut body);
    let locals = lowering.locals();
    let calls = lowering.calls();
    Ok(ir::DeviceFn {
        name: f.name.clone(),
        params,
        locals,
        ret: f.ret,
        lets,
        body,
        calls,
    })
}

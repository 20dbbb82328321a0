//! The structural rules of the kernel language on the parsed AST: at most one
//! nested pattern (a fold `(lo..hi).map(..).fold(..)` or a push kernel's
//! `(lo..hi).for_each(..)`), at statement level, after a prologue of `let`s
//! only. A body without one is a per-task map (elementwise kernel): all of
//! it is epilogue, and it must have an effect (write an output, update a
//! shared array, or push).
//!
//! Returns the body's [`Shape`], which `lower` reads. Rules that need name
//! resolution or types (owner-computes, typing) are checked while lowering.

use crate::diag::Errors;
use crate::diag::SourceRange;
use crate::ir::BinOp;
use crate::parse::{Expr, ExprKind, ForEach, KernelFn, Let, Nested, Stmt, KERNEL};

const SHAPE: &str = "`(lo..hi).map(|k| ..).fold(init, op)`";
const SHAPES: &str = "`(lo..hi).map(|k| ..).fold(init, op)`, `(lo..hi).any(|k| ..)` / `.all(|k| ..)`, or `(lo..hi).for_each(|k| { .. });`";

/// A nested pattern found in the body.
#[derive(Clone, Copy)]
enum Found<'a> {
    Fold(&'a Expr),
    ForEach(&'a ForEach),
}

impl Found<'_> {
    fn sp(&self) -> SourceRange {
        match self {
            Found::Fold(e) => e.sp,
            Found::ForEach(f) => f.sp,
        }
    }
}

/// Why a position cannot hold the nested pattern.
#[derive(Clone, Copy)]
enum Blocked {
    If,
    Logic,
    Closure,
    Block,
    Index,
}

impl Blocked {
    fn message(self, found: Found<'_>) -> String {
        let why = match self {
            Blocked::If => "under an `if` (it would run conditionally, but every task runs its range exactly once)",
            Blocked::Logic => "in an operand of `&&`/`||` (it would run conditionally)",
            Blocked::Closure => "inside a closure (nested patterns do not nest)",
            Blocked::Block => "inside a block expression",
            Blocked::Index => "in the index of an output write",
        };
        match found {
            Found::Fold(n) => {
                let logic = match &n.kind {
                    ExprKind::Nested(n) => match n.reduce {
                        crate::parse::Reduce::Logic { all } => Some(all),
                        _ => None,
                    },
                    _ => None,
                };
                let (shape, example) = match logic {
                    Some(all) => {
                        let m = if all { "all" } else { "any" };
                        (format!("`(lo..hi).{m}(|k| ..)`"), format!("(lo..hi).{m}(..)"))
                    }
                    _ => (SHAPE.to_string(), "(lo..hi).map(..).fold(..)".to_string()),
                };
                format!(
                    "the nested pattern {shape} cannot appear {why}: bind it at statement level, e.g. `let s = {example};`, then use `s`"
                )
            }
            Found::ForEach(_) => format!(
                "the nested pattern `(lo..hi).for_each(..)` cannot appear {why}: write it as a statement of the kernel's body"
            ),
        }
    }
}

/// Reports every nested pattern found in `e` or below it, with the
/// position's verdict: a child is blocked for the first reason on its path
/// from the statement (inside a pattern: a closure; under `&&`/`||`, an
/// `if` or a block expression).
fn find<'a>(e: &'a Expr, blocked: Option<Blocked>, out: &mut Vec<(Found<'a>, Option<Blocked>)>) {
    let here = match &e.kind {
        ExprKind::Nested(_) => {
            out.push((Found::Fold(e), blocked));
            Some(Blocked::Closure)
        }
        ExprKind::Binary(BinOp::And | BinOp::Or, ..) => Some(Blocked::Logic),
        ExprKind::If(..) => Some(Blocked::If),
        ExprKind::Block(_) => Some(Blocked::Block),
        _ => None,
    };
    let inner = blocked.or(here);
    for child in e.children() {
        find(child, inner, out);
    }
}

fn find_stmt<'a>(
    s: &'a Stmt,
    blocked: Option<Blocked>,
    out: &mut Vec<(Found<'a>, Option<Blocked>)>,
) {
    match s {
        Stmt::Let(l) => find(&l.init, blocked, out),
        Stmt::Eval(e) | Stmt::Push { item: e, .. } => find(e, blocked, out),
        Stmt::ForEach(f) => {
            out.push((Found::ForEach(f), blocked));
            let inner = Some(blocked.unwrap_or(Blocked::Closure));
            find(&f.lo, blocked, out);
            find(&f.hi, blocked, out);
            f.body.iter().for_each(|s| find_stmt(s, inner, out));
        }
        Stmt::Assign { index, value, .. } => {
            find(index, Some(blocked.unwrap_or(Blocked::Index)), out);
            find(value, blocked, out);
        }
        Stmt::If {
            cond, then, els, ..
        } => {
            let b = Some(blocked.unwrap_or(Blocked::If));
            find(cond, b, out);
            then.iter().chain(els).for_each(|s| find_stmt(s, b, out));
        }
    }
}

/// A kernel body that passed the structural rules, in its three parts.
pub struct Shape<'a> {
    /// The `let`s before the nested pattern (none in a per-task map).
    pub prologue: Vec<&'a Let>,
    /// The one nested pattern `(lo..hi).map(..).fold(..)`; `None` for a
    /// per-task map, whose body has no fold (an empty range of fine tasks),
    /// and for a push kernel's `for_each`.
    pub nested: Option<&'a Nested>,
    /// The one `(lo..hi).for_each(..)` of a push kernel.
    pub for_each: Option<&'a ForEach>,
    /// A fold's: the statement holding the pattern (which stands there for
    /// the folded value) and the statements after it; a `for_each`'s: the
    /// statements after it; a per-task map's whole body.
    pub epilogue: &'a [Stmt],
}

/// Checks the body's shape and returns it: at most one nested pattern, at
/// statement level, after a prologue of `let`s only; a body without one
/// (a per-task map) writes an output. Reports every violation at once.
pub fn kernel(k: &KernelFn) -> syn::Result<Shape<'_>> {
    let mut errs = Errors::default();
    match shape(k, &mut errs) {
        Some(shape) => Ok(shape),
        None => Err(errs.finish().expect_err("`shape` reports why it has none")),
    }
}

fn shape<'a>(k: &'a KernelFn, errs: &mut Errors) -> Option<Shape<'a>> {
    let mut found = Vec::new();
    let mut at = None;
    for (i, s) in k.body.iter().enumerate() {
        let before = found.len();
        find_stmt(s, None, &mut found);
        if found.len() > before && at.is_none() {
            at = Some(i);
        }
    }
    let Some(&(first, _)) = found.first() else {
        // A per-task map: the whole body runs once per task, like an
        // epilogue over an empty fold. A body without an effect computes
        // nothing (every value it could produce is dropped).
        if !k.body.iter().any(writes) {
            errs.push(syn::Error::new_spanned(
                &k.name,
                format!(
                    "{KERNEL} without a nested pattern {SHAPES} is a per-task map and must have an effect: write an output at the task index, e.g. `y[{task}] = a * x[{task}] + y[{task}];`, update a shared array through an atomic intrinsic, or `push` to a worklist",
                    task = k.task
                ),
            ));
            return None;
        }
        return Some(Shape {
            prologue: Vec::new(),
            nested: None,
            for_each: None,
            epilogue: &k.body,
        });
    };
    let mut ok = true;
    for (i, (f, blocked)) in found.iter().enumerate() {
        if i > 0 {
            let what = match (first, f) {
                (Found::ForEach(_), Found::Fold(_)) | (Found::Fold(_), Found::ForEach(_)) => {
                    "a push kernel's `for_each` runs the fine tasks for their effects and has no fold: fold in one kernel, push in another"
                }
                _ => "one coarse task runs one range of fine tasks; split the work into two kernels",
            };
            errs.push(f.sp().error(format!(
                "a second nested pattern: {KERNEL} has exactly one, {SHAPES}; {what}"
            )));
            ok = false;
        } else if let Some(b) = blocked {
            errs.push(f.sp().error(b.message(*f)));
            ok = false;
        }
    }
    let at = at?;
    let mut prologue = Vec::new();
    for s in &k.body[..at] {
        match s {
            Stmt::Let(l) => {
                if let Some(e) = effect(&l.init) {
                    errs.push(e.sp.error(format!(
                        "atomic intrinsics run in the `for_each` body, in the epilogue after the nested pattern, or in a per-task map, not in the prologue of {KERNEL} (the prologue may run more than once per task)"
                    )));
                    ok = false;
                }
                prologue.push(l)
            }
            Stmt::Assign { sp, .. } => {
                errs.push(sp.error(format!(
                    "writes happen only in the epilogue of {KERNEL}, after the nested pattern {SHAPE}: move this write below it"
                )));
                ok = false;
            }
            Stmt::If { sp, .. } => {
                errs.push(sp.error(format!(
                    "`if` statements are only supported in the epilogue of {KERNEL}, after the nested pattern; before it, use `let` with an `if` expression"
                )));
                ok = false;
            }
            Stmt::Eval(Expr { sp, .. }) | Stmt::Push { sp, .. } => {
                errs.push(sp.error(format!(
                    "atomic intrinsics and `push` run in the `for_each` body, in the epilogue after the nested pattern, or in a per-task map, not in the prologue of {KERNEL} (the prologue may run more than once per task)"
                )));
                ok = false;
            }
            Stmt::ForEach(_) => {}
        }
    }
    match first {
        Found::Fold(e) => {
            let ExprKind::Nested(nested) = &e.kind else {
                unreachable!("`find` reports folds as nested patterns")
            };
            ok.then_some(Shape {
                prologue,
                nested: Some(nested),
                for_each: None,
                epilogue: &k.body[at..],
            })
        }
        Found::ForEach(f) => ok.then_some(Shape {
            prologue,
            nested: None,
            for_each: Some(f),
            epilogue: &k.body[at + 1..],
        }),
    }
}

/// The first atomic intrinsic in `e`, if any.
fn effect(e: &Expr) -> Option<&Expr> {
    if matches!(e.kind, ExprKind::Atomic { .. }) {
        return Some(e);
    }
    e.children().into_iter().find_map(effect)
}

/// Whether a statement has an effect: writes an output, updates a shared
/// array or pushes (itself or in an `if` branch).
fn writes(s: &Stmt) -> bool {
    match s {
        Stmt::Assign { .. } | Stmt::Eval(_) | Stmt::Push { .. } | Stmt::ForEach(_) => true,
        Stmt::Let(_) => false,
        Stmt::If { then, els, .. } => then.iter().chain(els).any(writes),
    }
}

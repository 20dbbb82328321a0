//! The structural rules of the kernel language on the parsed AST: at most one
//! nested pattern, at statement level, after a prologue of `let`s only. A
//! body without one is a per-task map (elementwise kernel): all of it is
//! epilogue, and it must write an output.
//!
//! Returns the body's [`Shape`], which `lower` reads. Rules that need name
//! resolution or types (owner-computes, typing) are checked while lowering.

use crate::diag::Errors;
use crate::ir::BinOp;
use crate::parse::{Expr, ExprKind, KernelFn, Let, Nested, Stmt, KERNEL};

const SHAPE: &str = "`(lo..hi).map(|k| ..).fold(init, op)`";

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
    fn message(self) -> String {
        let why = match self {
            Blocked::If => "under an `if` (it would run conditionally, but every task folds its range exactly once)",
            Blocked::Logic => "in an operand of `&&`/`||` (it would run conditionally)",
            Blocked::Closure => "inside a closure (nested patterns do not nest)",
            Blocked::Block => "inside a block expression",
            Blocked::Index => "in the index of an output write",
        };
        format!(
            "the nested pattern {SHAPE} cannot appear {why}: bind it at statement level, e.g. `let s = (lo..hi).map(..).fold(..);`, then use `s`"
        )
    }
}

/// Reports every nested pattern found in `e` or below it, with the
/// position's verdict: a child is blocked for the first reason on its path
/// from the statement (inside a pattern: a closure; under `&&`/`||`, an
/// `if` or a block expression).
fn find<'a>(e: &'a Expr, blocked: Option<Blocked>, out: &mut Vec<(&'a Expr, Option<Blocked>)>) {
    let here = match &e.kind {
        ExprKind::Nested(_) => {
            out.push((e, blocked));
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
    out: &mut Vec<(&'a Expr, Option<Blocked>)>,
) {
    match s {
        Stmt::Let(l) => find(&l.init, blocked, out),
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
    /// per-task map, whose body has no fold (an empty range of fine tasks).
    pub nested: Option<&'a Nested>,
    /// The statement holding the pattern (which stands there for the folded
    /// value) and the statements after it; a per-task map's whole body.
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
        // epilogue over an empty fold. A body that writes nothing computes
        // nothing (every value it could produce is dropped).
        if !k.body.iter().any(writes) {
            errs.push(syn::Error::new_spanned(
                &k.name,
                format!(
                    "{KERNEL} without a nested pattern {SHAPE} is a per-task map and must write an output at the task index, e.g. `y[{task}] = a * x[{task}] + y[{task}];`",
                    task = k.task
                ),
            ));
            return None;
        }
        return Some(Shape {
            prologue: Vec::new(),
            nested: None,
            epilogue: &k.body,
        });
    };
    let mut ok = true;
    for (i, (e, blocked)) in found.iter().enumerate() {
        if i > 0 {
            errs.push(e.sp.error(format!(
                "a second nested pattern: {KERNEL} has exactly one {SHAPE} (one coarse task folds one range of fine tasks); split the work into two kernels"
            )));
            ok = false;
        } else if let Some(b) = blocked {
            errs.push(e.sp.error(b.message()));
            ok = false;
        }
    }
    let at = at?;
    let mut prologue = Vec::new();
    for s in &k.body[..at] {
        match s {
            Stmt::Let(l) => prologue.push(l),
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
        }
    }
    let ExprKind::Nested(nested) = &first.kind else {
        unreachable!("`find` reports nested patterns only")
    };
    ok.then_some(Shape {
        prologue,
        nested: Some(nested),
        epilogue: &k.body[at..],
    })
}

/// Whether a statement writes an output (itself or in an `if` branch).
fn writes(s: &Stmt) -> bool {
    match s {
        Stmt::Assign { .. } => true,
        Stmt::Let(_) => false,
        Stmt::If { then, els, .. } => then.iter().chain(els).any(writes),
    }
}

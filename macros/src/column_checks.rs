//! Whether a 2-D kernel's loads may be checked at each row's first and last
//! column only (`KernelSpec::checks_at_end_columns`).
//!
//! A 2-D launch of many columns checks every gather of every column
//! (`x[col[e] as usize * k as usize + j]`: a compare and a fault flag per
//! load), and those checks, with the refold that records a fault and its
//! registers, cost a fold of few instructions about a third of its time
//! (BENCHMARKS.md, "Threads fold with a lean fault flag"). Where each load
//! of the map is either the same for every column `j` of a row or at
//! `base + j` with `base` the same for every column, a load is in range at
//! every column when it is at columns `0` and `k − 1`: a validation launch
//! runs the map there, and the fold then runs with its loads unchecked.
//!
//! The rule, on the flattened kernel (`columns.rs`): a value *depends on the
//! column* when it reads `j` (`task % k`), directly or through bindings and
//! loads at such indices; the row (`task / k`) does not. The map is admitted
//! when every load's index is column-free, or `base + j` in 64 bits with
//! `base` column-free (then no sum wraps: `base + k − 1` in range means every
//! `base + j` is); when no division, remainder or `#[device_fn]` call (which
//! may divide) takes a column-dependent operand; when no column-dependent
//! condition (`if`, `&&`, `||`) guards a load, a division or a call (every
//! column then reaches the same loads); and when it reads no output or
//! shared array. The reduce operator must not fault at all (a closure
//! without divisions, `min`/`max`, `any`/`all`): it combines
//! column-dependent values. The prologue, `init` and the epilogue are
//! checked at every column as before.

use crate::ir::{BinOp, Expr, ExprKind, Kernel, LocalId, Reduce, Ty};
use std::collections::BTreeSet;

/// Whether `k`'s loads may be validated at each row's first and last
/// column (false for every kernel that is not 2-D, and for a per-element
/// map, which has no fold to validate).
pub fn at_end_columns(k: &Kernel) -> bool {
    let Some(count) = k.columns else {
        return false;
    };
    if k.elementwise || k.for_each.is_some() || k.scatters() || !reduce_cannot_fault(k) {
        return false;
    }
    let columns = Columns { k, count };
    let mut tainted = BTreeSet::new();
    for (id, e) in &k.prologue {
        if columns.mentions_column(e, &tainted) {
            tainted.insert(*id);
        }
    }
    Walk {
        rule: &columns,
        tainted,
    }
    .admit(&k.map)
    .is_ok()
}

/// A 2-D kernel's load index that is `base + j` in 64 bits (either order):
/// `(base, j)`, so that the CUDA functor loads it as `ld_col(p, len, base,
/// j)`, whose address under a validated fold is the row's `p + base` plus
/// the column, the first made once for every column a thread folds. `None`
/// for any other index and for a kernel that is not 2-D; the emitter asks
/// only of the maps `at_end_columns` admits, where `base` is column-free.
pub fn column_gather<'e>(k: &Kernel, index: &'e Expr) -> Option<(&'e Expr, &'e Expr)> {
    let count = k.columns?;
    let columns = Columns { k, count };
    let ExprKind::Binary(BinOp::Add, a, b) = &index.kind else {
        return None;
    };
    if !matches!(index.ty, Ty::U64 | Ty::Usize) {
        return None;
    }
    match (columns.is_column(a), columns.is_column(b)) {
        (false, true) => Some((a, b)),
        (true, false) => Some((b, a)),
        _ => None,
    }
}

/// Whether the map of a kernel `at_end_columns` admits reads the arrays it
/// does not read at the fine-task index (its gathers, `ld` in the CUDA
/// functor) only for their values: no such value reaches a load's index,
/// an integer division, a call or a condition. The validation then checks
/// those loads' indices without loading them (`leaf_gathers` in the
/// functor, `ProbeFault` in thread.cuh): a pass over the matrix instead of
/// two scattered loads per nonzero.
pub fn leaf_gathers(k: &Kernel) -> bool {
    Walk {
        rule: &Leaves { fine: k.k },
        tainted: BTreeSet::new(),
    }
    .admit(&k.map)
    .is_ok()
}

/// A reduce operator that cannot fault whatever it combines.
fn reduce_cannot_fault(k: &Kernel) -> bool {
    match &k.reduce {
        Reduce::Closure { body, .. } => !can_fault(body),
        Reduce::MinMax { .. } | Reduce::Logic { .. } => true,
        Reduce::DeviceFn(_) => false,
    }
}

/// Whether evaluating `e` may fault: a load, an integer division or
/// remainder, a device function call, an output or shared array read, an
/// atomic.
fn can_fault(e: &Expr) -> bool {
    e.any(&mut |x| {
        matches!(
            x.kind,
            ExprKind::Load(..)
                | ExprKind::LoadOut(_)
                | ExprKind::LoadShared(..)
                | ExprKind::Atomic { .. }
                | ExprKind::Call(..)
        ) || integer_division(x)
    })
}

/// An integer `/` or `%`, which faults on a zero divisor (a float's does
/// not).
fn integer_division(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Binary(BinOp::Div | BinOp::Rem, a, _) if a.ty.is_int())
}

/// The map refused: a tainted value reaches where the rule forbids it.
struct Refused;

/// What a taint walk looks for: which values are tainted to begin with,
/// what a load yields, and what a tainted condition may guard.
trait Rule {
    /// Whether local `id` is tainted before the map binds any (the
    /// prologue's bindings: `tainted` holds those the walk found).
    fn local(&self, id: LocalId, tainted: &BTreeSet<LocalId>) -> bool;

    /// Whether the load `array[index]` yields a tainted value, or where
    /// its index is not admitted, `Refused`.
    fn load(&self, walk: &mut Walk<'_, Self>, index: &Expr) -> Result<bool, Refused>
    where
        Self: Sized;

    /// Whether a tainted condition may choose whether `guarded` runs.
    fn may_guard(&self, guarded: &Expr) -> bool;
}

/// One taint walk over a map: the locals found tainted so far.
struct Walk<'r, R> {
    rule: &'r R,
    tainted: BTreeSet<LocalId>,
}

impl<R: Rule> Walk<'_, R> {
    /// `Ok(tainted)` for an expression where no tainted value reaches an
    /// integer division, a call, an output or shared array read, or a
    /// condition guarding what the rule forbids; loads are the rule's.
    fn admit(&mut self, e: &Expr) -> Result<bool, Refused> {
        let sink = |tainted: bool| if tainted { Err(Refused) } else { Ok(false) };
        match &e.kind {
            ExprKind::Local(id) => Ok(self.rule.local(*id, &self.tainted)),
            ExprKind::Load(_, index) => self.rule.load(self, index),
            ExprKind::LoadOut(_) | ExprKind::LoadShared(..) | ExprKind::Atomic { .. } => {
                Err(Refused)
            }
            ExprKind::Binary(BinOp::Div | BinOp::Rem, a, b) if integer_division(e) => {
                let (a, b) = (self.admit(a)?, self.admit(b)?);
                sink(a || b)
            }
            ExprKind::Binary(BinOp::And | BinOp::Or, a, b) => {
                let guard = self.admit(a)?;
                if guard && !self.rule.may_guard(b) {
                    return Err(Refused);
                }
                Ok(guard | self.admit(b)?)
            }
            ExprKind::If(c, a, b) => {
                let guard = self.admit(c)?;
                if guard && !(self.rule.may_guard(a) && self.rule.may_guard(b)) {
                    return Err(Refused);
                }
                Ok(guard | self.admit(a)? | self.admit(b)?)
            }
            ExprKind::Call(_, args) => {
                for a in args {
                    let tainted = self.admit(a)?;
                    sink(tainted)?;
                }
                Ok(false)
            }
            ExprKind::Block(lets, tail) => {
                for (id, v) in lets {
                    if self.admit(v)? {
                        self.tainted.insert(*id);
                    }
                }
                self.admit(tail)
            }
            _ => {
                let mut tainted = false;
                for c in e.children() {
                    tainted |= self.admit(c)?;
                }
                Ok(tainted)
            }
        }
    }
}

/// The column rule: a value is tainted when it depends on the column `j`
/// (`task % k`; the row, `task / k`, does not), and a load's index may
/// depend on it only as `base + j` in 64 bits, `base` column-free. A
/// column-dependent condition may guard only what cannot fault.
struct Columns<'a> {
    k: &'a Kernel,
    count: usize,
}

impl Columns<'_> {
    /// Whether `e` is the column count `k` (through casts).
    fn is_count(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Cast(inner) => self.is_count(inner),
            ExprKind::Scalar(p) => *p == self.count,
            _ => false,
        }
    }

    /// Whether `e` is the flattened task (through casts).
    fn is_task(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Cast(inner) => self.is_task(inner),
            ExprKind::Local(id) => *id == self.k.task,
            _ => false,
        }
    }

    /// Whether `e` is the row, `task / k`, which no column changes.
    fn is_row(&self, e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Binary(BinOp::Div, t, n)
            if self.is_task(t) && self.is_count(n))
    }

    /// Whether the value of a prologue expression depends on the column.
    fn mentions_column(&self, e: &Expr, tainted: &BTreeSet<LocalId>) -> bool {
        if self.is_row(e) {
            return false;
        }
        match &e.kind {
            ExprKind::Local(id) => self.local(*id, tainted),
            _ => e
                .children()
                .into_iter()
                .any(|c| self.mentions_column(c, tainted)),
        }
    }

    /// Whether `e` is exactly the column `j` as a 64-bit unsigned value:
    /// the prologue's `task % k`, through copies and casts to 64 bits.
    fn is_column(&self, e: &Expr) -> bool {
        if !matches!(e.ty, Ty::U64 | Ty::Usize) {
            return false;
        }
        match &e.kind {
            ExprKind::Cast(inner) => self.is_column(inner),
            ExprKind::Local(id) => self
                .k
                .prologue
                .iter()
                .find(|(l, _)| l == id)
                .is_some_and(|(_, b)| self.is_column(b)),
            ExprKind::Binary(BinOp::Rem, t, n) => self.is_task(t) && self.is_count(n),
            _ => false,
        }
    }
}

impl Rule for Columns<'_> {
    fn local(&self, id: LocalId, tainted: &BTreeSet<LocalId>) -> bool {
        id == self.k.task || tainted.contains(&id)
    }

    /// Column-dependent only as `base + j` (either order, 64 bits).
    fn load(&self, walk: &mut Walk<'_, Self>, index: &Expr) -> Result<bool, Refused> {
        if let ExprKind::Binary(BinOp::Add, a, b) = &index.kind {
            if matches!(index.ty, Ty::U64 | Ty::Usize) {
                let base = match (self.is_column(a), self.is_column(b)) {
                    (false, true) => Some(a),
                    (true, false) => Some(b),
                    _ => None,
                };
                if let Some(base) = base {
                    return match walk.admit(base)? {
                        true => Err(Refused),
                        false => Ok(true),
                    };
                }
            }
        }
        match walk.admit(index)? {
            true => Err(Refused),
            false => Ok(false),
        }
    }

    fn may_guard(&self, guarded: &Expr) -> bool {
        !can_fault(guarded)
    }
}

/// The leaf rule: a value is tainted when it was read by a load not at the
/// fine-task index (a gather), and no tainted value may be a load's index
/// or any condition.
struct Leaves {
    fine: LocalId,
}

impl Rule for Leaves {
    /// The map's own bindings of gathered values (the prologue reads no
    /// gather).
    fn local(&self, id: LocalId, tainted: &BTreeSet<LocalId>) -> bool {
        tainted.contains(&id)
    }

    fn load(&self, walk: &mut Walk<'_, Self>, index: &Expr) -> Result<bool, Refused> {
        if walk.admit(index)? {
            return Err(Refused);
        }
        Ok(!matches!(index.kind, ExprKind::Local(id) if id == self.fine))
    }

    fn may_guard(&self, _: &Expr) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::at_end_columns;

    use crate::tests::flattened_2d;

    /// `at_end_columns` of a 2-D kernel whose map is `map`, folded with
    /// `reduce`.
    fn admitted_with(map: &str, reduce: &str) -> bool {
        at_end_columns(&flattened_2d(map, reduce))
    }

    fn admitted(map: &str) -> bool {
        admitted_with(map, "|a, b| a + b")
    }

    #[test]
    fn row_gathers_at_the_column_are_admitted() {
        for map in [
            "val[e] * x[col[e] as usize * k as usize + j]",
            "val[e] * x[j + (k as usize) * col[e] as usize]",
            // The column in a value only.
            "val[e] * (j as f32)",
            // A condition that is the same for every column.
            "if val[e] > 0.0 { x[col[e] as usize * k as usize + j] } else { 0.0 }",
            // Loads the same for every column, float division by a gathered value.
            "x[col[e] as usize * k as usize] / val[e] + x[col[e] as usize * k as usize + j] / val[e]",
        ] {
            assert!(admitted(map), "{map}");
        }
        assert!(admitted_with(
            "x[col[e] as usize * k as usize + j]",
            "|a, b| a.max(b)"
        ));
    }

    /// `leaf_gathers` of the same kernel, folded with `+`.
    fn leaves(map: &str) -> bool {
        super::leaf_gathers(&flattened_2d(map, "|a, b| a + b"))
    }

    #[test]
    fn gathered_values_used_only_as_values_are_leaves() {
        for map in [
            "val[e] * x[col[e] as usize * k as usize + j]",
            "if val[e] > 0.0 { x[col[e] as usize * k as usize + j].max(0.0) } else { 0.0 }",
            "{ let g = x[col[e] as usize * k as usize + j]; g * g / val[e] }",
        ] {
            assert!(leaves(map), "{map}");
        }
        for map in [
            // A gathered value as an index, a condition, a divisor.
            "x[x[col[e] as usize * k as usize] as usize * k as usize + j]",
            "if x[col[e] as usize * k as usize + j] > 0.0 { val[e] } else { 0.0 }",
            "{ let g = x[col[e] as usize * k as usize + j]; (col[e] / (g as u32)) as f32 }",
            // A load at an index made from a value read at the fine index
            // is a gather; one read at another index feeding an index is not a leaf.
            "x[col[e + 1] as usize * k as usize + j]",
        ] {
            assert!(!leaves(map), "{map}");
        }
    }

    #[test]
    fn loads_and_faults_that_vary_otherwise_are_refused() {
        for map in [
            // Not `base + j` in 64 bits, or `base` varies with the column.
            "x[col[e] as usize * k as usize + 2 * j]",
            "x[(col[e] as usize + j) * k as usize]",
            "x[(col[e] * k + j as u32) as usize]",
            "x[col[e] as usize * k as usize + j + j]",
            // Through a gathered value.
            "x[x[col[e] as usize * k as usize + j] as usize]",
            // A condition on the column guarding a load.
            "if j % 2 == 0 { x[col[e] as usize * k as usize + j] } else { 0.0 }",
            "if x[col[e] as usize * k as usize + j] > 0.0 { val[e] } else { 0.0 }",
            // An integer division by a value of the column.
            "val[e] * ((col[e] / (j as u32)) as f32)",
        ] {
            assert!(!admitted(map), "{map}");
        }
        // A reduce that may fault on the values it combines.
        assert!(!admitted_with(
            "val[e] * x[col[e] as usize * k as usize + j]",
            "|a, b| ((a as u32) / (b as u32)) as f32"
        ));
    }
}

//! Type inference by unification: type variables with bounds (any,
//! `{integer}`, `{float}`, a known type), merged by union-find.

use crate::ir::Ty;

/// A type variable of inference (an index into the unifier's tables).
pub type TypeVar = u32;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    Any,
    Int,
    Float,
    Is(Ty),
    /// The type of an expression that already failed: unifies silently.
    Error,
}

impl Bound {
    fn describe(self) -> String {
        match self {
            Bound::Any | Bound::Error => "_".into(),
            Bound::Int => "{integer}".into(),
            Bound::Float => "{float}".into(),
            Bound::Is(t) => format!("`{}`", t.rust_name()),
        }
    }

    fn meet(self, other: Bound) -> Option<Bound> {
        use Bound::*;
        Some(match (self, other) {
            (Error, _) | (_, Error) => Error,
            (Any, b) | (b, Any) => b,
            (Int, Int) => Int,
            (Float, Float) => Float,
            (Int, Is(t)) | (Is(t), Int) if t.is_int() => Is(t),
            (Float, Is(t)) | (Is(t), Float) if t.is_float() => Is(t),
            (Is(a), Is(b)) if a == b => Is(a),
            _ => return None,
        })
    }
}

#[derive(Default)]
pub struct Unifier {
    parent: Vec<TypeVar>,
    bound: Vec<Bound>,
}

impl Unifier {
    pub fn fresh(&mut self, b: Bound) -> TypeVar {
        let v = self.parent.len() as TypeVar;
        self.parent.push(v);
        self.bound.push(b);
        v
    }

    /// The representative of `v`'s class (with path compression).
    fn find(&mut self, v: TypeVar) -> TypeVar {
        let p = self.parent[v as usize];
        if p == v {
            return v;
        }
        let r = self.find(p);
        self.parent[v as usize] = r;
        r
    }

    pub fn get(&mut self, v: TypeVar) -> Bound {
        let r = self.find(v);
        self.bound[r as usize]
    }

    /// Unifies; on failure returns both sides' descriptions.
    pub fn unify(&mut self, a: TypeVar, b: TypeVar) -> Result<(), (String, String)> {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return Ok(());
        }
        let (ba, bb) = (self.bound[ra as usize], self.bound[rb as usize]);
        let m = ba.meet(bb).ok_or_else(|| (ba.describe(), bb.describe()))?;
        self.parent[ra as usize] = rb;
        self.bound[rb as usize] = m;
        Ok(())
    }

    /// The final type: literal variables default to `i32` / `f64` like Rust's.
    /// `None` when unknown, or when an earlier error already covers it.
    pub fn resolve(&mut self, v: TypeVar) -> Option<Ty> {
        match self.get(v) {
            Bound::Is(t) => Some(t),
            Bound::Int => Some(Ty::I32),
            Bound::Float => Some(Ty::F64),
            Bound::Any | Bound::Error => None,
        }
    }
}

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
    /// A tuple: its element variables are [`Unifier::tuple_elems`]`(id)`.
    Tuple(u32),
}

impl Bound {
    /// The scalar bounds meet by their kinds; tuples are met element by
    /// element in [`Unifier::unify`] (a tuple with a scalar: no meet).
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
    /// Each tuple bound's element variables.
    tuples: Vec<Vec<TypeVar>>,
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

    /// A fresh tuple of `elems`.
    pub fn tuple(&mut self, elems: Vec<TypeVar>) -> TypeVar {
        let id = self.tuples.len() as u32;
        self.tuples.push(elems);
        self.fresh(Bound::Tuple(id))
    }

    /// The element variables of `v`, when it is a tuple (one of
    /// inference's, or a known tuple type: then fresh variables of its
    /// elements' types).
    pub fn tuple_elems(&mut self, v: TypeVar) -> Option<Vec<TypeVar>> {
        match self.get(v) {
            Bound::Tuple(id) => Some(self.tuples[id as usize].clone()),
            Bound::Is(Ty::Tuple(t)) => Some(t.elems().map(|e| self.fresh(Bound::Is(e))).collect()),
            _ => None,
        }
    }

    /// How `v`'s type reads in a message (`{float}`, `f32`, `({float}, u32)`).
    pub fn describe(&mut self, v: TypeVar) -> String {
        match self.get(v) {
            Bound::Any | Bound::Error => "_".into(),
            Bound::Int => "{integer}".into(),
            Bound::Float => "{float}".into(),
            Bound::Is(t) => format!("`{}`", t.rust_name()),
            Bound::Tuple(id) => {
                let elems = self.tuples[id as usize].clone();
                let names: Vec<String> = elems
                    .into_iter()
                    .map(|e| self.describe(e).trim_matches('`').to_string())
                    .collect();
                let comma = if names.len() == 1 { "," } else { "" };
                format!("`({}{comma})`", names.join(", "))
            }
        }
    }

    /// Unifies; on failure returns both sides' descriptions.
    pub fn unify(&mut self, a: TypeVar, b: TypeVar) -> Result<(), (String, String)> {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return Ok(());
        }
        let (ba, bb) = (self.bound[ra as usize], self.bound[rb as usize]);
        let tuple = |b: Bound| matches!(b, Bound::Tuple(_) | Bound::Is(Ty::Tuple(_)));
        if tuple(ba) && tuple(bb) {
            return self.unify_tuples(a, b, ra, rb);
        }
        let Some(m) = ba.meet(bb) else {
            return Err((self.describe(a), self.describe(b)));
        };
        self.parent[ra as usize] = rb;
        self.bound[rb as usize] = m;
        Ok(())
    }

    /// Two tuples unify when they have as many elements and each pair does.
    fn unify_tuples(
        &mut self,
        a: TypeVar,
        b: TypeVar,
        ra: TypeVar,
        rb: TypeVar,
    ) -> Result<(), (String, String)> {
        let ea = self.tuple_elems(ra).expect("a tuple");
        let eb = self.tuple_elems(rb).expect("a tuple");
        if ea.len() != eb.len() {
            return Err((self.describe(a), self.describe(b)));
        }
        for (x, y) in ea.iter().zip(&eb) {
            if self.unify(*x, *y).is_err() {
                return Err((self.describe(a), self.describe(b)));
            }
        }
        // Keep the inference tuple (its variables now carry both sides).
        let keep = if matches!(self.bound[ra as usize], Bound::Tuple(_)) {
            ra
        } else {
            rb
        };
        let other = if keep == ra { rb } else { ra };
        self.parent[other as usize] = keep;
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
            Bound::Tuple(id) => {
                let elems = self.tuples[id as usize].clone();
                let tys = elems
                    .into_iter()
                    .map(|e| self.resolve(e))
                    .collect::<Option<Vec<Ty>>>()?;
                crate::ir::TupleTy::new(&tys).map(Ty::Tuple)
            }
        }
    }
}

//! The typed kernel IR both emitters read.
//!
//! Every expression carries its Rust type ([`Ty`]); names are resolved to
//! parameters or to locals with kernel-unique spellings, so the emitters never
//! see shadowing, untyped literals or the token stream.

use proc_macro2::Span;
use std::borrow::Cow;

/// The value types of the kernel language: the element/scalar types plus
/// `usize` (task and fine-task indices, range bounds, index arithmetic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ty {
    F32,
    F64,
    I32,
    U32,
    I64,
    U64,
    U8,
    Bool,
    Usize,
    /// A tuple of 1 to 8 of the types above (a fold value of several
    /// elements); no tuple nests in another.
    Tuple(TupleTy),
}

/// The scalar types, in the order [`TupleTy`] codes them.
const SCALARS: [Ty; 9] = [
    Ty::F32,
    Ty::F64,
    Ty::I32,
    Ty::U32,
    Ty::I64,
    Ty::U64,
    Ty::U8,
    Ty::Bool,
    Ty::Usize,
];

/// The most elements a tuple may have.
pub const TUPLE_MAX: usize = 8;

/// A tuple type's element types, packed (one code per element) so that
/// [`Ty`] stays `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TupleTy {
    len: u8,
    codes: [u8; TUPLE_MAX],
}

impl TupleTy {
    /// The tuple of `elems`: `None` when there are none, more than
    /// [`TUPLE_MAX`], or one of them is a tuple.
    pub fn new(elems: &[Ty]) -> Option<TupleTy> {
        if elems.is_empty() || elems.len() > TUPLE_MAX {
            return None;
        }
        let mut codes = [0u8; TUPLE_MAX];
        for (c, t) in codes.iter_mut().zip(elems) {
            *c = SCALARS.iter().position(|s| s == t)? as u8;
        }
        Some(TupleTy {
            len: elems.len() as u8,
            codes,
        })
    }

    pub fn len(self) -> usize {
        self.len as usize
    }

    /// The element types, in order.
    pub fn elems(self) -> impl Iterator<Item = Ty> {
        (0..self.len as usize).map(move |i| SCALARS[self.codes[i] as usize])
    }

    /// `sizeof` of the device's `warpfit::tuple`: the head, then the tail
    /// tuple at its alignment, the whole padded to the largest alignment.
    pub fn size(self) -> usize {
        let elems: Vec<Ty> = self.elems().collect();
        fn nested(elems: &[Ty]) -> (usize, usize) {
            let head = elems[0].size();
            if elems.len() == 1 {
                return (head, head);
            }
            let (tail_size, tail_align) = nested(&elems[1..]);
            let align = head.max(tail_align);
            let end = head.div_ceil(tail_align) * tail_align + tail_size;
            (end.div_ceil(align) * align, align)
        }
        nested(&elems).0
    }
}

impl Ty {
    /// Parses a type name (`f32`, …, `usize`).
    pub fn from_name(s: &str) -> Option<Ty> {
        Some(match s {
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            "i32" => Ty::I32,
            "u32" => Ty::U32,
            "i64" => Ty::I64,
            "u64" => Ty::U64,
            "u8" => Ty::U8,
            "bool" => Ty::Bool,
            "usize" => Ty::Usize,
            _ => return None,
        })
    }

    /// The Rust spelling (`f32`, `(f32, u32)`, `(f64,)`).
    pub fn rust_name(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::I32 => "i32",
            Ty::U32 => "u32",
            Ty::I64 => "i64",
            Ty::U64 => "u64",
            Ty::U8 => "u8",
            Ty::Bool => "bool",
            Ty::Usize => "usize",
            Ty::Tuple(t) => {
                let names: Vec<_> = t.elems().map(Ty::rust_name).collect();
                let comma = if t.len() == 1 { "," } else { "" };
                return Cow::Owned(format!("({}{comma})", names.join(", ")));
            }
        })
    }

    /// CUDA spelling; `usize` is 64-bit on every host CUDA supports; a
    /// tuple is the device library's `warpfit::tuple<..>`.
    pub fn cuda_name(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Ty::F32 => "float",
            Ty::F64 => "double",
            Ty::I32 => "int32_t",
            Ty::U32 => "uint32_t",
            Ty::I64 => "int64_t",
            Ty::U64 | Ty::Usize => "uint64_t",
            Ty::U8 => "uint8_t",
            Ty::Bool => "bool",
            Ty::Tuple(t) => {
                let names: Vec<_> = t.elems().map(Ty::cuda_name).collect();
                return Cow::Owned(format!("warpfit::tuple<{}>", names.join(", ")));
            }
        })
    }

    /// The tuple type, when this is one.
    pub fn tuple(self) -> Option<TupleTy> {
        match self {
            Ty::Tuple(t) => Some(t),
            _ => None,
        }
    }

    /// The `ScalarType` variant name; `None` for `usize`, which is not an element type.
    pub fn scalar_variant(self) -> Option<&'static str> {
        Some(match self {
            Ty::F32 => "F32",
            Ty::F64 => "F64",
            Ty::I32 => "I32",
            Ty::U32 => "U32",
            Ty::I64 => "I64",
            Ty::U64 => "U64",
            Ty::U8 => "U8",
            Ty::Bool => "Bool",
            Ty::Usize | Ty::Tuple(_) => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }

    pub fn is_int(self) -> bool {
        matches!(
            self,
            Ty::I32 | Ty::U32 | Ty::I64 | Ty::U64 | Ty::U8 | Ty::Usize
        )
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, Ty::I32 | Ty::I64)
    }

    pub fn size(self) -> usize {
        match self {
            Ty::F64 | Ty::I64 | Ty::U64 | Ty::Usize => 8,
            Ty::F32 | Ty::I32 | Ty::U32 => 4,
            Ty::U8 | Ty::Bool => 1,
            Ty::Tuple(t) => t.size(),
        }
    }

    /// Largest value of an integer type, as u128.
    pub fn int_max(self) -> u128 {
        match self {
            Ty::I32 => i32::MAX as u128,
            Ty::U32 => u32::MAX as u128,
            Ty::I64 => i64::MAX as u128,
            Ty::U64 | Ty::Usize => u64::MAX as u128,
            Ty::U8 => u8::MAX as u128,
            _ => 0,
        }
    }

    /// The type's name as an identifier; `None` for a tuple.
    pub fn ident(self) -> Option<proc_macro2::Ident> {
        (!matches!(self, Ty::Tuple(_)))
            .then(|| proc_macro2::Ident::new(&self.rust_name(), Span::call_site()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Input,
    Output,
    Scalar,
    /// `&[Atomic<T>]`: read with `.load()`, written through the atomic
    /// intrinsics by any task.
    Shared,
    /// `&Worklist`: pushed to with `push(list, item)` (its `ty` is `u32`).
    Worklist,
}

impl ParamKind {
    /// Whether the parameter is an array the kernel indexes (an input,
    /// output or shared array).
    pub fn is_array(self) -> bool {
        matches!(
            self,
            ParamKind::Input | ParamKind::Output | ParamKind::Shared
        )
    }
}

/// The atomic intrinsics on shared arrays; each returns the element's
/// previous value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtomicOp {
    Min,
    Max,
    Add,
    Or,
    /// `atomic_cas(&a[i], current, new)`.
    Cas,
    /// `atomic_apply(&a[i], v, f)`: `a[i] = f(a[i], v)` by a
    /// compare-and-swap loop; `f` is [`Kernel::calls`]`[i]`.
    Apply(usize),
}

impl AtomicOp {
    /// The intrinsic's name as kernels write it (and as the runtime and the
    /// device library spell it).
    pub fn name(&self) -> &'static str {
        match self {
            AtomicOp::Min => "atomic_min",
            AtomicOp::Max => "atomic_max",
            AtomicOp::Add => "atomic_add",
            AtomicOp::Or => "atomic_or",
            AtomicOp::Cas => "atomic_cas",
            AtomicOp::Apply(_) => "atomic_apply",
        }
    }
}

/// Element types a shared array `&[Atomic<T>]` may hold (the device has
/// atomics for them).
pub fn atomic_elem_ok(t: Ty) -> bool {
    matches!(t, Ty::F32 | Ty::F64 | Ty::I32 | Ty::U32 | Ty::I64 | Ty::U64)
}

/// A kernel parameter after the task index.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: syn::Ident,
    pub ty: Ty,
    pub kind: ParamKind,
}

pub type LocalId = usize;

/// A local binding: the task index, a `let`, a closure parameter.
#[derive(Debug, Clone)]
pub struct Local {
    /// Kernel-unique spelling (shadowed names get a numeric suffix).
    pub name: String,
    pub ty: Ty,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// Associated constants (`f32::INFINITY`, `u32::MAX`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstKind {
    Infinity,
    NegInfinity,
    Nan,
    Epsilon,
    Max,
    Min,
}

/// Whitelisted methods; the receiver is the first argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Min,
    Max,
    Abs,
    Sqrt,
    Exp,
    Ln,
    Powi,
    Powf,
    MulAdd,
    Floor,
    Ceil,
    Round,
    Trunc,
    Sin,
    Cos,
    Tanh,
    Exp2,
    Log2,
    Log10,
    Signum,
    IsNan,
    Clamp,
    Pow,
}

impl Method {
    pub const FLOAT: &'static [&'static str] = &[
        "min", "max", "abs", "sqrt", "exp", "ln", "powi", "powf", "mul_add", "floor", "ceil",
        "round", "trunc", "sin", "cos", "tanh", "exp2", "log2", "log10", "signum", "is_nan",
        "clamp",
    ];
    pub const INT: &'static [&'static str] = &["min", "max", "abs", "clamp", "pow"];

    pub fn from_name(s: &str) -> Option<Method> {
        Some(match s {
            "min" => Method::Min,
            "max" => Method::Max,
            "abs" => Method::Abs,
            "sqrt" => Method::Sqrt,
            "exp" => Method::Exp,
            "ln" => Method::Ln,
            "powi" => Method::Powi,
            "powf" => Method::Powf,
            "mul_add" => Method::MulAdd,
            "floor" => Method::Floor,
            "ceil" => Method::Ceil,
            "round" => Method::Round,
            "trunc" => Method::Trunc,
            "sin" => Method::Sin,
            "cos" => Method::Cos,
            "tanh" => Method::Tanh,
            "exp2" => Method::Exp2,
            "log2" => Method::Log2,
            "log10" => Method::Log10,
            "signum" => Method::Signum,
            "is_nan" => Method::IsNan,
            "clamp" => Method::Clamp,
            "pow" => Method::Pow,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Method::Min => "min",
            Method::Max => "max",
            Method::Abs => "abs",
            Method::Sqrt => "sqrt",
            Method::Exp => "exp",
            Method::Ln => "ln",
            Method::Powi => "powi",
            Method::Powf => "powf",
            Method::MulAdd => "mul_add",
            Method::Floor => "floor",
            Method::Ceil => "ceil",
            Method::Round => "round",
            Method::Trunc => "trunc",
            Method::Sin => "sin",
            Method::Cos => "cos",
            Method::Tanh => "tanh",
            Method::Exp2 => "exp2",
            Method::Log2 => "log2",
            Method::Log10 => "log10",
            Method::Signum => "signum",
            Method::IsNan => "is_nan",
            Method::Clamp => "clamp",
            Method::Pow => "pow",
        }
    }

    /// Number of arguments besides the receiver.
    pub fn arity(self) -> usize {
        match self {
            Method::Min | Method::Max | Method::Powi | Method::Powf | Method::Pow => 1,
            Method::MulAdd | Method::Clamp => 2,
            _ => 0,
        }
    }

    pub fn float_ok(self) -> bool {
        self != Method::Pow
    }

    pub fn int_ok(self) -> bool {
        Self::INT.contains(&self.name())
    }
}

/// A call target: a `#[device_fn]` named by a path, with the types this call
/// site gives it (checked against the real signature by a generated `const`).
#[derive(Debug, Clone)]
pub struct DeviceCall {
    pub path: syn::Path,
    pub args: Vec<ArgType>,
    pub ret: Ty,
}

/// The type a call site gives one argument of a device function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    /// Inferred in the kernel (checked against the callee's signature).
    Inferred(Ty),
    /// An unsuffixed literal argument: it takes the type of the callee's
    /// parameter, which only rustc sees (through the companion's `ParamN`
    /// alias); see [`ExprKind::CalleeTypedLit`].
    CalleeParam,
}

impl DeviceCall {
    /// Last path segment: the device function's name.
    pub fn name(&self) -> String {
        self.path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    /// Integer literal value (two's-complement bits for negated literals).
    Int(i128),
    /// Float literal, as written (digits only; the value is parsed per type).
    Float(String),
    Bool(bool),
}

#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
    /// The type variable inference assigned; `ty` is its solution.
    pub tv: u32,
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    Lit(Lit),
    Local(LocalId),
    /// A scalar parameter (index into [`Kernel::params`]).
    Scalar(usize),
    /// The folded value, in the epilogue.
    Acc,
    Const(ConstKind),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `e as ty` (the target is the node's own type).
    Cast(Box<Expr>),
    /// Checked read of an input array.
    Load(usize, Box<Expr>),
    /// Read of an output at the task index.
    LoadOut(usize),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    Block(Vec<(LocalId, Expr)>, Box<Expr>),
    Method(Method, Vec<Expr>),
    /// Call of [`Kernel::calls`]`[i]`.
    Call(usize, Vec<Expr>),
    /// `atomic_*(&a[i], args..)` on shared array parameter `param`: the
    /// element's previous value.
    Atomic {
        op: AtomicOp,
        param: usize,
        index: Box<Expr>,
        args: Vec<Expr>,
    },
    /// `a[i].load()` of shared array parameter `param`.
    LoadShared(usize, Box<Expr>),
    /// An unsuffixed literal passed straight to a device function: typed by
    /// the callee's parameter, as Rust types it (`add1(x, 1.0)` with an `f32`
    /// parameter). Its `ty` is meaningless; emitters write it so that it
    /// converts exactly to whichever parameter type the callee has. `span`
    /// is the literal's, for rustc's errors when it does not fit.
    CalleeTypedLit {
        lit: Lit,
        span: proc_macro2::Span,
    },
    /// A tuple literal `(a, b, ..)` (its type is a [`Ty::Tuple`]).
    Tuple(Vec<Expr>),
    /// Element `.i` of a tuple.
    Field(Box<Expr>, usize),
}

/// The one traversal of the IR: every pass that looks inside expressions
/// (type resolution, uses of locals, access analysis) goes through
/// `children`/`children_mut`, so a new expression form is added in one place.
impl Expr {
    /// The direct sub-expressions, in evaluation order.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Lit(_)
            | ExprKind::Local(_)
            | ExprKind::Scalar(_)
            | ExprKind::Acc
            | ExprKind::Const(_)
            | ExprKind::LoadOut(_)
            | ExprKind::CalleeTypedLit { .. } => Vec::new(),
            ExprKind::Unary(_, a)
            | ExprKind::Cast(a)
            | ExprKind::Load(_, a)
            | ExprKind::LoadShared(_, a)
            | ExprKind::Field(a, _) => vec![&**a],
            ExprKind::Binary(_, a, b) => vec![&**a, &**b],
            ExprKind::If(a, b, c) => vec![&**a, &**b, &**c],
            ExprKind::Block(lets, tail) => lets
                .iter()
                .map(|(_, v)| v)
                .chain(std::iter::once(&**tail))
                .collect(),
            ExprKind::Method(_, args) | ExprKind::Call(_, args) | ExprKind::Tuple(args) => {
                args.iter().collect()
            }
            ExprKind::Atomic { index, args, .. } => {
                std::iter::once(&**index).chain(args.iter()).collect()
            }
        }
    }

    /// [`Expr::children`], mutably.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match &mut self.kind {
            ExprKind::Lit(_)
            | ExprKind::Local(_)
            | ExprKind::Scalar(_)
            | ExprKind::Acc
            | ExprKind::Const(_)
            | ExprKind::LoadOut(_)
            | ExprKind::CalleeTypedLit { .. } => Vec::new(),
            ExprKind::Unary(_, a)
            | ExprKind::Cast(a)
            | ExprKind::Load(_, a)
            | ExprKind::LoadShared(_, a)
            | ExprKind::Field(a, _) => vec![&mut **a],
            ExprKind::Binary(_, a, b) => vec![&mut **a, &mut **b],
            ExprKind::If(a, b, c) => vec![&mut **a, &mut **b, &mut **c],
            ExprKind::Block(lets, tail) => lets
                .iter_mut()
                .map(|(_, v)| v)
                .chain(std::iter::once(&mut **tail))
                .collect(),
            ExprKind::Method(_, args) | ExprKind::Call(_, args) | ExprKind::Tuple(args) => {
                args.iter_mut().collect()
            }
            ExprKind::Atomic { index, args, .. } => std::iter::once(&mut **index)
                .chain(args.iter_mut())
                .collect(),
        }
    }

    /// Calls `f` on this expression and every one inside it, parents first.
    pub fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        for c in self.children() {
            c.visit(f);
        }
    }

    /// Calls `f` on this expression and every one inside it, parents first.
    pub fn visit_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        f(self);
        for c in self.children_mut() {
            c.visit_mut(f);
        }
    }

    /// Whether some expression in this one satisfies `pred`.
    pub fn any(&self, pred: &mut impl FnMut(&Expr) -> bool) -> bool {
        pred(self) || self.children().into_iter().any(|c| c.any(pred))
    }

    /// Structural equality: the same operations on the same operands with the
    /// same types (inference's variables and spans do not count).
    pub fn same_as(&self, other: &Expr) -> bool {
        use ExprKind as K;
        let same_node = self.ty == other.ty
            && match (&self.kind, &other.kind) {
                (K::Lit(a), K::Lit(b)) => a == b,
                (K::CalleeTypedLit { lit: a, .. }, K::CalleeTypedLit { lit: b, .. }) => a == b,
                (K::Local(a), K::Local(b))
                | (K::Scalar(a), K::Scalar(b))
                | (K::LoadOut(a), K::LoadOut(b))
                | (K::Load(a, _), K::Load(b, _))
                | (K::LoadShared(a, _), K::LoadShared(b, _))
                | (K::Call(a, _), K::Call(b, _)) => a == b,
                (K::Acc, K::Acc)
                | (K::Cast(_), K::Cast(_))
                | (K::If(..), K::If(..))
                | (K::Tuple(_), K::Tuple(_)) => true,
                (K::Field(_, a), K::Field(_, b)) => a == b,
                (K::Const(a), K::Const(b)) => a == b,
                (K::Unary(a, _), K::Unary(b, _)) => a == b,
                (K::Binary(a, ..), K::Binary(b, ..)) => a == b,
                (K::Method(a, _), K::Method(b, _)) => a == b,
                (K::Block(a, _), K::Block(b, _)) => {
                    a.iter().map(|(id, _)| id).eq(b.iter().map(|(id, _)| id))
                }
                _ => false,
            };
        let (mine, theirs) = (self.children(), other.children());
        same_node
            && mine.len() == theirs.len()
            && mine.iter().zip(&theirs).all(|(a, b)| a.same_as(b))
    }
}

#[derive(Debug, Clone)]
pub enum Stmt {
    Let(LocalId, Expr),
    /// `out[task] = value` (a compound `out[task] op= v` is lowered to
    /// `out[task] = out[task] op v`).
    Store {
        param: usize,
        value: Expr,
    },
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    /// An expression evaluated for its effect (an atomic intrinsic whose
    /// previous value is dropped).
    Eval(Expr),
    /// `push(list, item)` onto worklist parameter `param`.
    Push {
        param: usize,
        item: Expr,
    },
}

impl Stmt {
    /// Calls `f` on every expression of the statement (and of nested ones).
    pub fn visit_exprs<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        match self {
            Stmt::Let(_, v)
            | Stmt::Store { value: v, .. }
            | Stmt::Eval(v)
            | Stmt::Push { item: v, .. } => v.visit(f),
            Stmt::If(c, a, b) => {
                c.visit(f);
                a.iter().chain(b).for_each(|s| s.visit_exprs(f));
            }
        }
    }

    /// [`Stmt::visit_exprs`], mutably.
    pub fn visit_exprs_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        match self {
            Stmt::Let(_, v)
            | Stmt::Store { value: v, .. }
            | Stmt::Eval(v)
            | Stmt::Push { item: v, .. } => v.visit_mut(f),
            Stmt::If(c, a, b) => {
                c.visit_mut(f);
                a.iter_mut()
                    .chain(b.iter_mut())
                    .for_each(|s| s.visit_exprs_mut(f));
            }
        }
    }
}

/// The fold's operator.
#[derive(Debug, Clone)]
pub enum Reduce {
    /// `|a, b| body`.
    Closure { a: LocalId, b: LocalId, body: Expr },
    /// `T::min` / `T::max`.
    MinMax { max: bool },
    /// A two-argument `#[device_fn]` (index into [`Kernel::calls`]).
    DeviceFn(usize),
    /// `any` (`||`, settled by `true`) or `all` (`&&`, settled by
    /// `false`) over `bool`s: the fold may stop at the first settling value.
    Logic { all: bool },
}

impl Reduce {
    /// The accumulator value after which nothing folded changes it, for a
    /// fold that may stop there (`any`: `true`, `all`: `false`).
    pub fn settled_by(&self) -> Option<bool> {
        match self {
            Reduce::Logic { all } => Some(!all),
            _ => None,
        }
    }

    /// Whether the operator commutes and associates as the language defines
    /// it, so that a decomposition may fold fine tasks out of their order:
    /// `min`/`max`, `any`/`all`, and a closure that applies one of `+ * & |
    /// ^` (wrapping on integers) or `min`/`max` to its two parameters, a
    /// tuple literal whose element `i` does so to `a.i` and `b.i`, or an
    /// `if` that picks one parameter by a strict lexicographic order over
    /// all elements (`selects_by_order`: an argmin). Float
    /// `+` and `*` commute exactly and associate within rounding, as every
    /// parallel fold assumes. A `#[device_fn]` operator is opaque: `false`.
    pub fn commutes(&self) -> bool {
        match self {
            Reduce::MinMax { .. } | Reduce::Logic { .. } => true,
            Reduce::DeviceFn(_) => false,
            Reduce::Closure { a, b, body } => {
                // `p`, or `p.i` when folding element `i` of a tuple.
                let is = |x: &Expr, p: LocalId, field: Option<usize>| match (&x.kind, field) {
                    (ExprKind::Local(l), None) => *l == p,
                    (ExprKind::Field(inner, i), Some(f)) => {
                        *i == f && matches!(inner.kind, ExprKind::Local(l) if l == p)
                    }
                    _ => false,
                };
                let commuting = |e: &Expr, field: Option<usize>| {
                    let of_params = |x: &Expr, y: &Expr| {
                        (is(x, *a, field) && is(y, *b, field))
                            || (is(x, *b, field) && is(y, *a, field))
                    };
                    match &e.kind {
                        ExprKind::Binary(
                            BinOp::Add | BinOp::Mul | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor,
                            x,
                            y,
                        ) => of_params(x, y),
                        ExprKind::Method(Method::Min | Method::Max, args) => {
                            args.len() == 2 && of_params(&args[0], &args[1])
                        }
                        _ => false,
                    }
                };
                // A tuple folds element by element when each element does.
                match &body.kind {
                    ExprKind::Tuple(elems) => {
                        elems.iter().enumerate().all(|(i, e)| commuting(e, Some(i)))
                    }
                    ExprKind::If(cond, then, els) => selects_by_order(cond, then, els, *a, *b),
                    _ => commuting(body, None),
                }
            }
        }
    }
}

/// Whether `if cond { then } else { els }` picks the least (or greatest) of
/// the reduce's parameters `a` and `b` by a strict order over all of their
/// elements: `then` and `els` are the two parameters, and `cond` compares
/// the one it picks with the other, lexicographically, as in
/// `if b.0 < a.0 || (b.0 == a.0 && b.1 < a.1) { b } else { a }` (or, on a
/// scalar, `if b < a { b } else { a }`). Such a pick is a `min` (`max`)
/// of a total order: it commutes and associates. On floats that holds
/// for numbers; with a NaN element the pick depends on the order, as a
/// float sum's rounding does.
fn selects_by_order(cond: &Expr, then: &Expr, els: &Expr, a: LocalId, b: LocalId) -> bool {
    let (x, y) = match (&then.kind, &els.kind) {
        (ExprKind::Local(x), ExprKind::Local(y)) if (*x, *y) == (a, b) || (*x, *y) == (b, a) => {
            (*x, *y)
        }
        _ => return false,
    };
    let tuple = then.ty.tuple();
    let n = tuple.map_or(1, |t| t.len());
    // `p.i`, or `p` itself for a scalar.
    let is = |e: &Expr, p: LocalId, i: usize| match (&e.kind, tuple) {
        (ExprKind::Local(l), None) => *l == p,
        (ExprKind::Field(inner, f), Some(_)) => {
            *f == i && matches!(inner.kind, ExprKind::Local(l) if l == p)
        }
        _ => false,
    };
    // `x.i OP y.i`, or the same comparison mirrored.
    let compares = |e: &Expr, op: BinOp, i: usize| {
        let mirrored = match op {
            BinOp::Lt => BinOp::Gt,
            BinOp::Gt => BinOp::Lt,
            other => other,
        };
        match &e.kind {
            ExprKind::Binary(o, l, r) => {
                (*o == op && is(l, x, i) && is(r, y, i))
                    || (*o == mirrored && is(l, y, i) && is(r, x, i))
            }
            _ => false,
        }
    };
    type Compares<'c> = &'c dyn Fn(&Expr, BinOp, usize) -> bool;
    fn lex(e: &Expr, op: BinOp, i: usize, n: usize, compares: Compares<'_>) -> bool {
        if i + 1 == n {
            return compares(e, op, i);
        }
        match &e.kind {
            ExprKind::Binary(BinOp::Or, first, rest) => {
                compares(first, op, i)
                    && matches!(&rest.kind, ExprKind::Binary(BinOp::And, eq, next)
                        if compares(eq, BinOp::Eq, i) && lex(next, op, i + 1, n, compares))
            }
            _ => false,
        }
    }
    [BinOp::Lt, BinOp::Gt]
        .into_iter()
        .any(|op| lex(cond, op, 0, n, &compares))
}

/// A lowered `#[nested_reduce]` kernel.
pub struct Kernel {
    pub name: syn::Ident,
    pub task: LocalId,
    pub params: Vec<Param>,
    pub locals: Vec<Local>,
    pub prologue: Vec<(LocalId, Expr)>,
    pub lo: Expr,
    pub hi: Expr,
    /// Prologue bindings used after the prologue: the fields of `Ctx`.
    pub ctx: Vec<LocalId>,
    pub init: Expr,
    pub k: LocalId,
    pub map: Expr,
    pub reduce: Reduce,
    pub acc: Ty,
    pub epilogue: Vec<Stmt>,
    pub calls: Vec<DeviceCall>,
    /// A per-task map: the body had no nested pattern, so the range is
    /// empty, the fold a `u8` placeholder and the body the epilogue.
    pub elementwise: bool,
    /// A push kernel's `(lo..hi).for_each(|k| body)`: the body's
    /// statements, run once per fine task `k`. The fold is then a `u8`
    /// placeholder (`init` and `map` are `0`, the reduce `u8::min`) that
    /// every executor runs as the expansion without the reduction: `map`
    /// runs the body and yields `0`.
    pub for_each: Option<Vec<Stmt>>,
    /// A 2-D kernel (`#[nested_reduce(columns = k)]`), lowered as its
    /// flattened 1-D kernel over tasks `row·k + j` (`columns.rs`): the
    /// position of the column count `k` in [`Kernel::params`].
    pub columns: Option<usize>,
}

impl Kernel {
    /// Calls `f` on every part of the kernel a task evaluates: the
    /// prologue's bindings, `init`, the map, a closure reduce's body, and
    /// every expression of the epilogue's statements (nested ones
    /// included). `f` gets each part's root; [`Expr::visit`] reaches the rest.
    pub fn visit_parts<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        for (_, e) in &self.prologue {
            f(e);
        }
        f(&self.init);
        f(&self.map);
        if let Reduce::Closure { body, .. } = &self.reduce {
            f(body);
        }
        for s in &self.epilogue {
            s.visit_exprs(f);
        }
    }

    /// Calls `f` on every expression of the map phase: the map, or the
    /// `for_each` body's statements.
    pub fn visit_map<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        match &self.for_each {
            Some(body) => body.iter().for_each(|s| s.visit_exprs(f)),
            None => self.map.visit(f),
        }
    }

    /// Whether a launch may donate a long item's fine tasks to other warps
    /// (work donation): a `for_each` with nothing after it, so no epilogue
    /// waits for the donated part.
    pub fn donates(&self) -> bool {
        self.for_each.is_some() && self.epilogue.is_empty()
    }

    /// Whether the kernel has shared arrays or worklists (it scatters).
    pub fn scatters(&self) -> bool {
        self.params
            .iter()
            .any(|p| matches!(p.kind, ParamKind::Shared | ParamKind::Worklist))
    }
}

/// A lowered `#[device_fn]`.
pub struct DeviceFn {
    pub name: syn::Ident,
    pub params: Vec<LocalId>,
    pub locals: Vec<Local>,
    pub ret: Ty,
    pub lets: Vec<(LocalId, Expr)>,
    pub body: Expr,
    pub calls: Vec<DeviceCall>,
}

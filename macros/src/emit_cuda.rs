//! CUDA C++ for a kernel (the functor of `docs/codegen.md`) and for a
//! `#[device_fn]`.
//!
//! Every local is declared with its IR type (a Rust `0.0` the IR types as
//! `f32` is `0.0f`, never a double), and every operation whose C++ meaning
//! differs from Rust's goes through a `warpfit::` helper of the device library.

use crate::analyse::Access;
use crate::ir::{
    AtomicOp, BinOp, ConstKind, DeviceCall, DeviceFn, Expr, ExprKind, Kernel, Lit, Local, LocalId,
    Method, Param, ParamKind, Reduce, Stmt, Ty, UnOp,
};
use std::collections::HashSet;
use std::fmt::Write;

/// A name that is valid C++ and cannot collide with the device library.
pub fn cuda_ident(name: &str) -> String {
    let n = name.strip_prefix("r#").unwrap_or(name);
    if crate::lower::is_reserved(n) || n.starts_with("wf_") {
        format!("{n}_")
    } else {
        n.to_string()
    }
}

fn int_lit(v: i128, t: Ty) -> String {
    match t {
        Ty::I32 if v == i32::MIN as i128 => "(-2147483647 - 1)".into(),
        Ty::I32 if v < 0 => format!("({v})"),
        Ty::I32 => format!("{v}"),
        Ty::U32 => format!("{v}u"),
        Ty::I64 if v == i64::MIN as i128 => "int64_t(-9223372036854775807ll - 1)".into(),
        Ty::I64 => format!("int64_t({v}ll)"),
        Ty::U64 | Ty::Usize => format!("uint64_t({v}ull)"),
        Ty::U8 => format!("uint8_t({v})"),
        Ty::Bool => (if v != 0 { "true" } else { "false" }).into(),
        Ty::F32 => format!("{:?}f", v as f32),
        Ty::F64 => format!("{:?}", v as f64),
        // Lowering types every literal as a scalar.
        Ty::Tuple(_) => format!("{v}"),
    }
}

fn float_lit(digits: &str, t: Ty) -> String {
    if t == Ty::F32 {
        let v: f32 = digits.parse().unwrap_or(0.0);
        format!("{v:?}f")
    } else {
        let v: f64 = digits.parse().unwrap_or(0.0);
        format!("{v:?}")
    }
}

/// A literal passed to a device function parameter whose type only rustc
/// knows: spelled so that C++'s implicit conversion to that parameter gives
/// Rust's value. Integers are exact in `int64_t`/`uint64_t` (rustc rejects
/// values out of the parameter's range); a float as a `double` converts to a
/// `float` parameter with the rounding of Rust's own `f32` parse, which
/// lowering checked (`Cx::callee_typed_lit`).
fn callee_typed_lit(lit: &Lit) -> String {
    match lit {
        Lit::Int(v) if *v > i64::MAX as i128 => int_lit(*v, Ty::U64),
        Lit::Int(v) => int_lit(*v, Ty::I64),
        Lit::Float(d) => float_lit(d, Ty::F64),
        Lit::Bool(b) => b.to_string(),
    }
}

fn const_value(c: ConstKind, t: Ty) -> String {
    match (t, c) {
        (Ty::F32, ConstKind::Infinity) => "__int_as_float(0x7f800000)".into(),
        (Ty::F32, ConstKind::NegInfinity) => "(-__int_as_float(0x7f800000))".into(),
        (Ty::F32, ConstKind::Nan) => "__int_as_float(0x7fc00000)".into(),
        (Ty::F32, ConstKind::Epsilon) => format!("{:?}f", f32::EPSILON),
        (Ty::F32, ConstKind::Max) => format!("{:?}f", f32::MAX),
        (Ty::F32, ConstKind::Min) => format!("{:?}f", f32::MIN),
        (Ty::F64, ConstKind::Infinity) => "__longlong_as_double(0x7ff0000000000000ll)".into(),
        (Ty::F64, ConstKind::NegInfinity) => "(-__longlong_as_double(0x7ff0000000000000ll))".into(),
        (Ty::F64, ConstKind::Nan) => "__longlong_as_double(0x7ff8000000000000ll)".into(),
        (Ty::F64, ConstKind::Epsilon) => format!("{:?}", f64::EPSILON),
        (Ty::F64, ConstKind::Max) => format!("{:?}", f64::MAX),
        (Ty::F64, ConstKind::Min) => format!("{:?}", f64::MIN),
        (t, ConstKind::Max) => int_lit(t.int_max() as i128, t),
        (t, _) if t.is_signed_int() => int_lit(-(t.int_max() as i128) - 1, t),
        (t, _) => int_lit(0, t),
    }
}

pub struct Emitter<'a> {
    pub locals: &'a [Local],
    pub params: &'a [Param],
    pub calls: &'a [DeviceCall],
    /// Prologue bindings read through `wf_c` outside the prologue.
    pub ctx: HashSet<LocalId>,
    pub via_ctx: bool,
    pub task: Option<LocalId>,
    /// The fine-task index, while emitting `map`: loads at exactly it are
    /// `ld_k`, which a range-checked caller runs unchecked.
    pub fine: Option<LocalId>,
    /// The index array a throttled handle may hold as 16-bit offsets from
    /// the task (`delta_index`): its loads at the fine-task index are
    /// `ld_index`, which decodes them in such a launch.
    pub delta_index: Option<usize>,
    /// A 2-D kernel whose loads a validation may check at the end columns
    /// (`column_checks::at_end_columns`), while emitting `map`: its gathers
    /// at `base + j` are `ld_col` (`column_checks::column_gather`).
    pub columns_of: Option<&'a Kernel>,
}

impl Emitter<'_> {
    fn local(&self, id: LocalId) -> String {
        let n = cuda_ident(&self.locals[id].name);
        if self.via_ctx && self.ctx.contains(&id) {
            format!("wf_c.{n}")
        } else {
            n
        }
    }

    fn param(&self, i: usize) -> String {
        cuda_ident(&self.params[i].name.to_string())
    }

    fn task(&self) -> String {
        self.task
            .map(|t| cuda_ident(&self.locals[t].name))
            .unwrap_or_default()
    }

    /// A worklist parameter's staging slot: its position among the
    /// kernel's worklists (`warpfit::push<S>`, `stage_begin<S>`).
    fn stage(&self, i: usize) -> usize {
        stage_of(self.params, i)
    }

    /// An atomic intrinsic on shared array `param` (docs/codegen.md).
    fn atomic(&self, op: &AtomicOp, param: usize, index: &Expr, args: &[Expr], t: Ty) -> String {
        let p = self.param(param);
        let head = format!("wf_p.{p}, wf_p.{p}_len, {}", self.expr(index));
        let vals: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
        let vals = vals.join(", ");
        match op {
            AtomicOp::Apply(c) => {
                let tn = t.cuda_name();
                let name = cuda_ident(&self.calls[*c].name());
                format!(
                    "warpfit::atomic_apply({head}, {vals}, {param}, wf_f, [&](const {tn} wf_x, const {tn} wf_y) {{ return warpfit_user::{name}(wf_x, wf_y, wf_f); }})"
                )
            }
            op => format!("warpfit::{}({head}, {vals}, {param}, wf_f)", op.name()),
        }
    }

    pub fn expr(&self, x: &Expr) -> String {
        let t = x.ty;
        let tn = t.cuda_name();
        match &x.kind {
            ExprKind::Lit(Lit::Int(v)) => int_lit(*v, t),
            ExprKind::Lit(Lit::Float(d)) => float_lit(d, t),
            ExprKind::Lit(Lit::Bool(b)) => b.to_string(),
            ExprKind::Local(id) => self.local(*id),
            ExprKind::Scalar(i) => format!("wf_p.{}", self.param(*i)),
            ExprKind::Acc => "wf_acc".into(),
            ExprKind::Const(c) => const_value(*c, t),
            ExprKind::Unary(UnOp::Neg, a) if t.is_int() => {
                format!("warpfit::sub<{tn}>({}, {})", int_lit(0, t), self.expr(a))
            }
            ExprKind::Unary(UnOp::Neg, a) => format!("(-{})", self.expr(a)),
            ExprKind::Unary(UnOp::Not, a) if t == Ty::Bool => format!("(!{})", self.expr(a)),
            ExprKind::Unary(UnOp::Not, a) => format!("static_cast<{tn}>(~{})", self.expr(a)),
            ExprKind::Binary(op, a, b) => {
                let ot = a.ty.cuda_name();
                let (a, b) = (self.expr(a), self.expr(b));
                match op {
                    BinOp::Add => format!("warpfit::add<{ot}>({a}, {b})"),
                    BinOp::Sub => format!("warpfit::sub<{ot}>({a}, {b})"),
                    BinOp::Mul => format!("warpfit::mul<{ot}>({a}, {b})"),
                    BinOp::Div => format!("warpfit::div<{ot}>({a}, {b}, wf_f)"),
                    BinOp::Rem => format!("warpfit::rem<{ot}>({a}, {b}, wf_f)"),
                    BinOp::Shl => format!("warpfit::shl<{ot}>({a}, {b})"),
                    BinOp::Shr => format!("warpfit::shr<{ot}>({a}, {b})"),
                    // Integer promotion would widen u8/bool: cast back.
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                        format!("static_cast<{ot}>({a} {} {b})", op.symbol())
                    }
                    _ => format!("({a} {} {b})", op.symbol()),
                }
            }
            ExprKind::Cast(a) => format!("warpfit::cast<{tn}>({})", self.expr(a)),
            ExprKind::Load(i, idx) => {
                let p = self.param(*i);
                let at_fine = matches!(idx.kind, ExprKind::Local(id) if Some(id) == self.fine);
                if at_fine && self.delta_index == Some(*i) {
                    return format!(
                        "warpfit::ld_index(wf_p.{p}, wf_p.{p}_len, {}, {}, {i}, wf_f)",
                        self.expr(idx),
                        self.task()
                    );
                }
                if let Some((base, j)) = self
                    .columns_of
                    .and_then(|k| crate::column_checks::column_gather(k, idx))
                {
                    return format!(
                        "warpfit::ld_col(wf_p.{p}, wf_p.{p}_len, {}, {}, {i}, wf_f)",
                        self.expr(base),
                        self.expr(j)
                    );
                }
                let ld = if at_fine { "ld_k" } else { "ld" };
                format!(
                    "warpfit::{ld}(wf_p.{p}, wf_p.{p}_len, {}, {i}, wf_f)",
                    self.expr(idx)
                )
            }
            ExprKind::LoadOut(i) => {
                let p = self.param(*i);
                format!(
                    "warpfit::ld_out(wf_p.{p}, wf_p.{p}_len, {}, {i}, wf_f)",
                    self.task()
                )
            }
            ExprKind::If(c, a, b) => {
                format!("({} ? {} : {})", self.expr(c), self.expr(a), self.expr(b))
            }
            ExprKind::Block(lets, tail) => {
                // C++ has no block expressions: an immediately invoked lambda
                // keeps the `let`s scoped and evaluated only on this path.
                let mut s = format!("([&]() -> {tn} {{ ");
                for (id, v) in lets {
                    let _ = write!(
                        s,
                        "const {} {} = {}; ",
                        self.locals[*id].ty.cuda_name(),
                        self.local(*id),
                        self.expr(v)
                    );
                }
                let _ = write!(s, "return {}; }}())", self.expr(tail));
                s
            }
            ExprKind::Method(m, args) => self.method(*m, args),
            ExprKind::CalleeTypedLit { lit, .. } => callee_typed_lit(lit),
            ExprKind::Atomic {
                op,
                param,
                index,
                args,
            } => self.atomic(op, *param, index, args, t),
            ExprKind::LoadShared(i, idx) => {
                let p = self.param(*i);
                format!(
                    "warpfit::ld_shared(wf_p.{p}, wf_p.{p}_len, {}, {i}, wf_f)",
                    self.expr(idx)
                )
            }
            ExprKind::Call(i, args) => {
                let name = cuda_ident(&self.calls[*i].name());
                let mut a: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                a.push("wf_f".into());
                format!("warpfit_user::{name}({})", a.join(", "))
            }
            ExprKind::Tuple(elems) => {
                let e: Vec<String> = elems.iter().map(|e| self.expr(e)).collect();
                format!("{tn}({})", e.join(", "))
            }
            ExprKind::Field(a, i) => format!("warpfit::get<{i}>({})", self.expr(a)),
        }
    }

    fn method(&self, m: Method, args: &[Expr]) -> String {
        let rt = args[0].ty;
        let tn = rt.cuda_name();
        let a: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
        let a = a.join(", ");
        match m {
            Method::Min if rt.is_float() => format!("warpfit::fmin({a})"),
            Method::Max if rt.is_float() => format!("warpfit::fmax({a})"),
            // `wrapping_pow` by squaring, inline: the device library has no
            // integer `pow`. Products wrap, so the result is exact mod 2^bits.
            Method::Pow => format!(
                "([](const {tn} wf_x, const uint32_t wf_e) -> {tn} {{ {tn} r = {one}, b = wf_x; \
                 for (uint32_t e = wf_e; e != 0u; e >>= 1) {{ if (e & 1u) r = warpfit::mul<{tn}>(r, b); b = warpfit::mul<{tn}>(b, b); }} \
                 return r; }}({a}))",
                one = int_lit(1, rt)
            ),
            // Templates for integers: explicit type, no deduction surprises.
            Method::Min | Method::Max | Method::Abs | Method::Clamp | Method::Signum if rt.is_int() =>
            {
                format!("warpfit::{}<{tn}>({a})", m.name())
            }
            Method::Clamp => format!("warpfit::clamp<{tn}>({a})"),
            _ => format!("warpfit::{}({a})", m.name()),
        }
    }

    fn stmt(&self, s: &Stmt, out: &mut String, ind: usize) {
        let pad = "    ".repeat(ind);
        match s {
            Stmt::Let(id, v) => {
                let _ = writeln!(
                    out,
                    "{pad}const {} {} = {};",
                    self.locals[*id].ty.cuda_name(),
                    self.local(*id),
                    self.expr(v)
                );
            }
            Stmt::Store { param, value } => {
                let p = self.param(*param);
                let _ = writeln!(
                    out,
                    "{pad}warpfit::st_out(wf_p.{p}, wf_p.{p}_len, {}, {}, {param}, wf_f);",
                    self.task(),
                    self.expr(value)
                );
            }
            Stmt::Eval(v) => {
                let _ = writeln!(out, "{pad}(void)({});", self.expr(v));
            }
            Stmt::Push { param, item } => {
                let p = self.param(*param);
                let _ = writeln!(
                    out,
                    "{pad}warpfit::push<{}>(wf_p.{p}, {}, {param}, wf_f);",
                    self.stage(*param),
                    self.expr(item)
                );
            }
            Stmt::If(c, a, b) => {
                let _ = writeln!(out, "{pad}if ({}) {{", self.expr(c));
                a.iter().for_each(|s| self.stmt(s, out, ind + 1));
                if b.is_empty() {
                    let _ = writeln!(out, "{pad}}}");
                } else {
                    let _ = writeln!(out, "{pad}}} else {{");
                    b.iter().for_each(|s| self.stmt(s, out, ind + 1));
                    let _ = writeln!(out, "{pad}}}");
                }
            }
        }
    }
}

const QUAL: &str = "static __device__ __forceinline__";

/// Worklist parameter `i`'s position among the kernel's worklists.
fn stage_of(params: &[Param], i: usize) -> usize {
    params[..i]
        .iter()
        .filter(|p| p.kind == ParamKind::Worklist)
        .count()
}

/// The index array a throttled handle may hold as 16-bit offsets from the
/// task (gpu/cuda/index.cuh): a remapped plan's `u32` index array, which
/// the throttling roles guarantee is read only at the fine-task index.
fn delta_index(k: &Kernel, access: &Access) -> Option<usize> {
    crate::analyse::roles(k, access)
        .ok()
        .and_then(|r| r.remap.ok())
        .map(|r| r.index)
}

/// The kernel's functor, in `namespace wf_<name>`: one method per member.
pub fn kernel(k: &Kernel, access: &Access) -> String {
    let functor = FunctorEmitter {
        k,
        access,
        delta_index: delta_index(k, access),
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by #[nested_reduce] from `fn {}`; do not edit.",
        k.name
    );
    let _ = writeln!(s, "namespace wf_{} {{", k.name);
    s.push_str(&functor.params_struct());
    let _ = writeln!(s, "struct Kernel {{");
    for member in [
        functor.types(),
        functor.prologue(),
        functor.init(),
        functor.map(),
        functor.direct_len(),
        functor.gather_probe(),
        functor.leaf_gathers(),
        functor.reduce(),
        functor.epilogue(),
        functor.block_hooks(),
    ] {
        s.push_str(&member);
    }
    let _ = writeln!(s, "}};");
    let _ = writeln!(s, "}}  // namespace wf_{}", k.name);
    s
}

struct FunctorEmitter<'a> {
    k: &'a Kernel,
    access: &'a Access,
    /// [`delta_index`] of the kernel.
    delta_index: Option<usize>,
}

impl<'a> FunctorEmitter<'a> {
    /// Expressions of the prologue (its locals by name), or of the later
    /// members (prologue locals through the context, `wf_c.name`).
    fn emitter(&self, via_ctx: bool) -> Emitter<'a> {
        let k = self.k;
        Emitter {
            locals: &k.locals,
            params: &k.params,
            calls: &k.calls,
            ctx: k.ctx.iter().copied().collect(),
            via_ctx,
            task: Some(k.task),
            fine: None,
            delta_index: None,
            columns_of: None,
        }
    }

    fn task(&self) -> String {
        cuda_ident(&self.k.locals[self.k.task].name)
    }

    /// `struct Params`: the launch arguments as the device sees them.
    fn params_struct(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "struct Params {{");
        for p in &self.k.params {
            let n = cuda_ident(&p.name.to_string());
            let t = p.ty.cuda_name();
            let _ = match p.kind {
                ParamKind::Input => writeln!(s, "    const {t}* {n}; uint64_t {n}_len;"),
                ParamKind::Output | ParamKind::Shared => {
                    writeln!(s, "    {t}* {n}; uint64_t {n}_len;")
                }
                ParamKind::Scalar => writeln!(s, "    {t} {n};"),
                ParamKind::Worklist => writeln!(s, "    warpfit::WorklistRef {n};"),
            };
        }
        let _ = writeln!(s, "}};");
        s
    }

    /// `params_t`, `acc_t` and `ctx_t` (the prologue bindings read later).
    fn types(&self) -> String {
        let k = self.k;
        let mut s = String::new();
        let _ = writeln!(s, "    typedef Params params_t;");
        let _ = writeln!(s, "    typedef {} acc_t;", k.acc.cuda_name());
        if let Some(t) = k.acc.tuple() {
            // The host sizes split tasks' partials by the same layout.
            let _ = writeln!(
                s,
                "    static_assert(sizeof(acc_t) == {}, \"tuple layout differs from the host's\");",
                t.size()
            );
        }
        if k.for_each.is_some() {
            // CTE runs the expansion without the reduction (`CteForEach`).
            let _ = writeln!(s, "    static constexpr bool is_for_each = true;");
            if k.donates() {
                // Nothing after the `for_each`: long items may be donated.
                let _ = writeln!(s, "    static constexpr bool donates = true;");
            }
        }
        let _ = writeln!(s, "    struct ctx_t {{");
        for id in &k.ctx {
            let _ = writeln!(
                s,
                "        {} {};",
                k.locals[*id].ty.cuda_name(),
                cuda_ident(&k.locals[*id].name)
            );
        }
        let _ = writeln!(s, "    }};");
        s
    }

    fn prologue(&self) -> String {
        let k = self.k;
        let em = self.emitter(false);
        let task = self.task();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "    {QUAL} void prologue(const Params& wf_p, uint64_t {task}, ctx_t& wf_c, uint64_t& wf_lo, uint64_t& wf_hi, warpfit::Fault& wf_f) {{"
        );
        for (id, v) in &k.prologue {
            em.stmt(&Stmt::Let(*id, v.clone()), &mut s, 2);
        }
        for id in &k.ctx {
            let n = cuda_ident(&k.locals[*id].name);
            let _ = writeln!(s, "        wf_c.{n} = {n};");
        }
        let _ = writeln!(s, "        wf_lo = {};", em.expr(&k.lo));
        let _ = writeln!(s, "        wf_hi = {};", em.expr(&k.hi));
        let _ = writeln!(s, "    }}");
        s
    }

    fn init(&self) -> String {
        let em = self.emitter(true);
        let task = self.task();
        let mut s = String::new();
        let _ = writeln!(s, "    {QUAL} acc_t init(const Params& wf_p, uint64_t {task}, const ctx_t& wf_c, warpfit::Fault& wf_f) {{");
        let _ = writeln!(s, "        return {};", em.expr(&self.k.init));
        let _ = writeln!(s, "    }}");
        s
    }

    /// The map; its loads at exactly the fine-task index are `ld_k`, which a
    /// range-checked caller runs unchecked.
    fn map(&self) -> String {
        let k = self.k;
        let mut em = self.emitter(true);
        em.fine = Some(k.k);
        em.delta_index = self.delta_index;
        if crate::column_checks::at_end_columns(k) {
            em.columns_of = Some(k);
        }
        let task = self.task();
        let kn = cuda_ident(&k.locals[k.k].name);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "    template <class F> {QUAL} acc_t map(const Params& wf_p, uint64_t {task}, const ctx_t& wf_c, uint64_t {kn}, F& wf_f) {{"
        );
        match &k.for_each {
            // The `for_each` body, run for its effects; the fold it feeds is a
            // placeholder.
            Some(body) => {
                for st in body {
                    em.stmt(st, &mut s, 2);
                }
                let _ = writeln!(s, "        return acc_t(0);");
            }
            None => {
                let _ = writeln!(s, "        return {};", em.expr(&k.map));
            }
        }
        let _ = writeln!(s, "    }}");
        s
    }

    /// The kernel's worklists' staging in shared memory, set up before a
    /// block's items and flushed after them (`worklist.cuh`); none for a
    /// kernel without worklists.
    fn block_hooks(&self) -> String {
        let k = self.k;
        let lists: Vec<(usize, String)> = k
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.kind == ParamKind::Worklist)
            .map(|(i, p)| (stage_of(&k.params, i), cuda_ident(&p.name.to_string())))
            .collect();
        let mut s = String::new();
        if lists.is_empty() {
            return s;
        }
        for hook in ["begin", "end"] {
            let _ = writeln!(s, "    {QUAL} void block_{hook}(const Params& wf_p) {{");
            for (stage, n) in &lists {
                let _ = writeln!(s, "        warpfit::stage_{hook}<{stage}>(wf_p.{n});");
            }
            let _ = writeln!(s, "    }}");
        }
        s
    }

    /// The shortest array `map` reads at the fine-task index: an item whose
    /// range ends within it needs no check on those loads.
    fn direct_len(&self) -> String {
        let em = self.emitter(true);
        let lens: Vec<String> = self
            .access
            .direct
            .iter()
            .map(|&i| format!("wf_p.{}_len", em.param(i)))
            .collect();
        let direct_len = match lens.split_first() {
            None => "~0ull".to_string(),
            Some((first, rest)) => rest.iter().fold(first.clone(), |acc, l| {
                format!("warpfit::min<uint64_t>({acc}, {l})")
            }),
        };
        let mut s = String::new();
        let _ = writeln!(s, "    {QUAL} uint64_t direct_len(const Params& wf_p) {{");
        let _ = writeln!(s, "        return {direct_len};");
        let _ = writeln!(s, "    }}");
        s
    }

    /// An index array `map` gathers through (`x[col[k] as usize]`): CTE
    /// reads it at each item's first fine task to tell local gathers
    /// (neighbouring items read neighbouring data) from scattered ones.
    fn gather_probe(&self) -> String {
        let em = self.emitter(true);
        let probe = self.access.probe();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "    static constexpr bool has_gather = {};",
            probe.is_some()
        );
        let _ = writeln!(
            s,
            "    {QUAL} uint64_t gather_at(const Params& wf_p, uint64_t task, uint64_t k) {{"
        );
        match probe {
            Some(c) if Some(c) == self.delta_index => {
                let _ = writeln!(
                    s,
                    "        return warpfit::cast<uint64_t>(warpfit::index_at(wf_p.{}, k, task));",
                    em.param(c)
                );
            }
            Some(c) => {
                let _ = writeln!(
                    s,
                    "        return warpfit::cast<uint64_t>(wf_p.{}[k]);",
                    em.param(c)
                );
            }
            None => {
                let _ = writeln!(s, "        return 0;");
            }
        }
        let _ = writeln!(s, "    }}");
        s
    }

    /// For a 2-D kernel validated at its rows' end columns whose gathered
    /// values are only used as values (`column_checks::leaf_gathers`): its
    /// validation checks the gathers' indices without loading (`ProbeFault`,
    /// thread.cuh). Nothing for other kernels.
    fn leaf_gathers(&self) -> String {
        let k = self.k;
        match crate::column_checks::at_end_columns(k) && crate::column_checks::leaf_gathers(k) {
            true => "    static constexpr bool leaf_gathers = true;\n".into(),
            false => String::new(),
        }
    }

    fn reduce(&self) -> String {
        let k = self.k;
        let em = self.emitter(true);
        let mut s = String::new();
        match &k.reduce {
            Reduce::Closure { a, b, body } => {
                let (a, b) = (
                    cuda_ident(&k.locals[*a].name),
                    cuda_ident(&k.locals[*b].name),
                );
                let _ = writeln!(
                    s,
                    "    template <class F> {QUAL} acc_t reduce(acc_t {a}, acc_t {b}, F& wf_f) {{"
                );
                let _ = writeln!(s, "        return {};", em.expr(body));
            }
            Reduce::MinMax { max } => {
                let _ = writeln!(
                    s,
                    "    template <class F> {QUAL} acc_t reduce(acc_t wf_a, acc_t wf_b, F& wf_f) {{"
                );
                let m = if *max { "max" } else { "min" };
                if k.acc.is_float() {
                    let _ = writeln!(s, "        return warpfit::f{m}(wf_a, wf_b);");
                } else {
                    let _ = writeln!(s, "        return warpfit::{m}<acc_t>(wf_a, wf_b);");
                }
            }
            Reduce::DeviceFn(i) => {
                let _ = writeln!(
                    s,
                    "    template <class F> {QUAL} acc_t reduce(acc_t wf_a, acc_t wf_b, F& wf_f) {{"
                );
                let _ = writeln!(
                    s,
                    "        return warpfit_user::{}(wf_a, wf_b, wf_f);",
                    cuda_ident(&k.calls[*i].name())
                );
            }
            Reduce::Logic { all } => {
                let _ = writeln!(
                    s,
                    "    template <class F> {QUAL} acc_t reduce(acc_t wf_a, acc_t wf_b, F& wf_f) {{"
                );
                let op = if *all { "&&" } else { "||" };
                let _ = writeln!(s, "        return wf_a {op} wf_b;");
            }
        }
        let _ = writeln!(s, "    }}");
        if k.reduce.commutes() {
            // Lets CTE fold a round that one item owns whole without a scan
            // (warpfit::commutes).
            let _ = writeln!(s, "    static constexpr bool commutative = true;");
        }
        if let Some(v) = k.reduce.settled_by() {
            // `any` / `all`: decompositions stop folding a task once its
            // accumulator holds the settling value (warpfit::settled).
            let _ = writeln!(s, "    static constexpr bool short_circuit = true;");
            let _ = writeln!(s, "    {QUAL} bool settled(acc_t wf_a) {{");
            let _ = writeln!(s, "        return wf_a == {v};");
            let _ = writeln!(s, "    }}");
        }
        s
    }

    fn epilogue(&self) -> String {
        let em = self.emitter(true);
        let task = self.task();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "    {QUAL} void epilogue(const Params& wf_p, uint64_t {task}, const ctx_t& wf_c, acc_t wf_acc, warpfit::Fault& wf_f) {{"
        );
        for st in &self.k.epilogue {
            em.stmt(st, &mut s, 2);
        }
        let _ = writeln!(s, "    }}");
        s
    }
}

/// A `#[device_fn]` as a `__device__` function in `namespace warpfit_user`.
/// It takes the thread's fault state last, `warpfit::Fault` or the hot
/// loops' `warpfit::LeanFault` (integer division inside it records faults
/// like the kernel's own code).
pub fn device_fn(f: &DeviceFn) -> String {
    let em = Emitter {
        locals: &f.locals,
        params: &[],
        calls: &f.calls,
        ctx: HashSet::new(),
        via_ctx: false,
        task: None,
        fine: None,
        delta_index: None,
        columns_of: None,
    };
    let mut s = String::new();
    let params: Vec<String> = f
        .params
        .iter()
        .map(|id| {
            format!(
                "{} {}",
                f.locals[*id].ty.cuda_name(),
                cuda_ident(&f.locals[*id].name)
            )
        })
        .chain(std::iter::once("F& wf_f".to_string()))
        .collect();
    let _ = writeln!(s, "namespace warpfit_user {{");
    let _ = writeln!(
        s,
        "template <class F> __device__ __forceinline__ {} {}({}) {{",
        f.ret.cuda_name(),
        cuda_ident(&f.name.to_string()),
        params.join(", ")
    );
    for (id, v) in &f.lets {
        em.stmt(&Stmt::Let(*id, v.clone()), &mut s, 1);
    }
    let _ = writeln!(s, "    return {};", em.expr(&f.body));
    let _ = writeln!(s, "}}");
    let _ = writeln!(s, "}}  // namespace warpfit_user");
    s
}

//! Golden CUDA of the example kernels (insta snapshots) and property tests of
//! the pipeline on random expressions.

use crate::nested::{cuda_of, device_fn_cuda_of, device_fn_rust_of, rust_of};

const SPMV: &str = "
pub fn spmv(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| val[k] * x[col[k] as usize]).fold(0.0, |a, b| a + b);
}";

const RELAX: &str = "
pub fn relax(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi).map(|e| dist[src[e] as usize] + w[e]).fold(dist[v], f32::min);
}";

const PAGERANK: &str = "
pub fn pagerank(v: usize, ptr: &[u32], src: &[u32], rank: &[f32], inv_deg: &[f32], base: f32, damping: f32, next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = base + damping * (lo..hi).map(|e| rank[src[e] as usize] * inv_deg[src[e] as usize]).fold(0.0, |a, b| a + b);
}";

const BFS: &str = "
pub fn bfs_step(v: usize, ptr: &[u32], src: &[u32], level: &[i32], cur: i32, next: &mut [i32], changed: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let hits = (lo..hi).map(|e| if level[src[e] as usize] == cur { 1u32 } else { 0 }).fold(0, |a, b| a + b);
    if level[v] < 0 && hits > 0 {
        next[v] = cur + 1;
        changed[v] = 1;
    } else {
        next[v] = level[v];
        changed[v] = 0;
    }
}";

const MAX_PLUS: &str = "
pub fn max_plus(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}";

const LONGEST: &str = "
pub fn longest(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi).map(|e| dist[src[e] as usize] + w[e]).fold(f32::NEG_INFINITY, max_plus);
}";

const AXPY: &str = "
pub fn axpy(i: usize, a: f32, x: &[f32], y: &mut [f32]) {
    y[i] = a * x[i] + y[i];
}";

const DOT: &str = "
pub fn dot(t: usize, n: u32, x: &[f64], y: &[f64], out: &mut [f64]) {
    out[t] = (0..n as usize).map(|i| x[i] * y[i]).fold(0.0, |a, b| a + b);
}";

const SSSP_PUSH: &str = "
pub fn sssp_push(v: usize, ptr: &[u32], dst: &[u32], w: &[f32], dist: &[Atomic<f32>], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let dv = dist[v].load();
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        let nd = dv + w[e];
        if nd < atomic_min(&dist[u], nd) {
            push(out, u as u32);
        }
    });
}";

/// Every intrinsic once, a `#[device_fn]` through `atomic_apply`, two
/// worklists (staging slots 0 and 1) and an epilogue after the expansion.
const PUSH_FORMS: &str = "
pub fn push_forms(v: usize, ptr: &[u32], dst: &[u32], hist: &[Atomic<u64>], best: &[Atomic<i32>], a: &Worklist, b: &Worklist, deg: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        atomic_add(&hist[u], 1);
        atomic_or(&hist[u], 2);
        if atomic_max(&best[u], v as i32) < v as i32 {
            push(a, u as u32);
        }
        let old = best[u].load();
        if atomic_cas(&best[u], old, old - 1) == old && atomic_min(&best[u], 0) > 0 {
            push(b, u as u32);
        }
        atomic_apply(&best[u], 3, pick);
    });
    deg[v] = (hi - lo) as u32;
    if deg[v] > 4 {
        push(a, v as u32);
    }
}";

/// A per-task map that pushes.
const SEED: &str = "
pub fn seed(v: usize, flags: &[u8], out: &Worklist) {
    if flags[v] != 0 {
        push(out, v as u32);
    }
}";

fn cuda(src: &str) -> String {
    cuda_of(src).unwrap_or_else(|e| panic!("{e}"))
}

fn rust(src: &str) -> String {
    rust_of(src).unwrap_or_else(|e| panic!("{e}"))
}

// The generated Rust (CPU twin, launch API, work graph) of the same kernels.

#[test]
fn snapshot_sssp_push() {
    insta::assert_snapshot!(cuda(SSSP_PUSH));
}

#[test]
fn snapshot_push_forms() {
    insta::assert_snapshot!(cuda(PUSH_FORMS));
}

#[test]
fn snapshot_seed_map() {
    insta::assert_snapshot!(cuda(SEED));
}

#[test]
fn snapshot_rust_sssp_push() {
    insta::assert_snapshot!(rust(SSSP_PUSH));
}

#[test]
fn snapshot_rust_push_forms() {
    insta::assert_snapshot!(rust(PUSH_FORMS));
}

#[test]
fn snapshot_rust_seed_map() {
    insta::assert_snapshot!(rust(SEED));
}

#[test]
fn snapshot_rust_spmv() {
    insta::assert_snapshot!(rust(SPMV));
}

#[test]
fn snapshot_rust_relax() {
    insta::assert_snapshot!(rust(RELAX));
}

#[test]
fn snapshot_rust_pagerank() {
    insta::assert_snapshot!(rust(PAGERANK));
}

#[test]
fn snapshot_rust_bfs_step() {
    insta::assert_snapshot!(rust(BFS));
}

#[test]
fn snapshot_rust_max_plus_semiring() {
    let f = device_fn_rust_of(MAX_PLUS).unwrap_or_else(|e| panic!("{e}"));
    insta::assert_snapshot!(format!("{f}\n{}", rust(LONGEST)));
}

#[test]
fn snapshot_spmv() {
    insta::assert_snapshot!(cuda(SPMV));
}

#[test]
fn snapshot_relax() {
    insta::assert_snapshot!(cuda(RELAX));
}

#[test]
fn snapshot_pagerank() {
    insta::assert_snapshot!(cuda(PAGERANK));
}

#[test]
fn snapshot_bfs_step() {
    insta::assert_snapshot!(cuda(BFS));
}

/// `any` / `all`: the fold of bools that settles (`short_circuit`,
/// `settled`) and the twin's early exit.
const BOTTOM_UP: &str = "
pub fn bottom_up(v: usize, ptr: &[u32], src: &[u32], level: &[i32], cur: i32, next: &mut [i32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let found = (lo..hi).any(|e| level[src[e] as usize] == cur);
    next[v] = if found && level[v] < 0 { cur + 1 } else { level[v] };
}";

#[test]
fn snapshot_short_circuit() {
    insta::assert_snapshot!(cuda(BOTTOM_UP));
}

#[test]
fn snapshot_rust_short_circuit() {
    insta::assert_snapshot!(rust(BOTTOM_UP));
}

#[test]
fn snapshot_max_plus_semiring() {
    let f = device_fn_cuda_of(MAX_PLUS).unwrap_or_else(|e| panic!("{e}"));
    insta::assert_snapshot!(format!("{f}\n{}", cuda(LONGEST)));
}

/// The access facts of a kernel, through the real pipeline.
#[test]
fn snapshot_axpy_map() {
    insta::assert_snapshot!(cuda(AXPY));
}

#[test]
fn snapshot_dot_reduction() {
    insta::assert_snapshot!(cuda(DOT));
}

#[test]
fn snapshot_rust_axpy_map() {
    insta::assert_snapshot!(rust(AXPY));
}

#[test]
fn a_map_body_is_the_epilogue_of_an_empty_fold() {
    let (k, access) = access_of(AXPY);
    assert!(k.elementwise);
    assert!(k.prologue.is_empty() && k.ctx.is_empty());
    assert_eq!(k.acc, crate::ir::Ty::U8);
    assert_eq!(k.epilogue.len(), 1);
    assert!(access.direct.is_empty());
    let c = cuda(AXPY);
    assert!(c.contains("wf_lo = uint64_t(0ull);"), "{c}");
    assert!(c.contains("wf_hi = uint64_t(0ull);"), "{c}");
    assert!(!access_of(SPMV).0.elementwise);
}

fn access_of(src: &str) -> (crate::ir::Kernel, crate::analyse::Access) {
    let item: syn::ItemFn = syn::parse_str(src).unwrap_or_else(|e| panic!("{e}"));
    let ast = crate::parse::kernel(&item).unwrap_or_else(|e| panic!("{e}"));
    let shape = crate::check::kernel(&ast).unwrap_or_else(|e| panic!("{e}"));
    let kernel = crate::lower::kernel(&ast, &shape).unwrap_or_else(|e| panic!("{e}"));
    let access = crate::analyse::kernel(&kernel);
    (kernel, access)
}

fn param_index(k: &crate::ir::Kernel, name: &str) -> usize {
    k.params
        .iter()
        .position(|p| p.name == name)
        .unwrap_or_else(|| panic!("no parameter {name}"))
}

#[test]
fn access_facts_of_spmv() {
    let (k, access) = access_of(SPMV);
    let (col, val, x) = (
        param_index(&k, "col"),
        param_index(&k, "val"),
        param_index(&k, "x"),
    );
    assert_eq!(access.direct.iter().copied().collect::<Vec<_>>(), {
        let mut v = vec![col, val];
        v.sort_unstable();
        v
    });
    assert_eq!(
        access
            .prechecked_gathers
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![(x, col)]
    );
    assert_eq!(access.probe(), Some(col));
    let throttle = access.throttle.as_ref().ok().expect("one gather");
    assert_eq!(throttle.gathered, vec![x]);
}

#[test]
fn throttling_reasons_name_the_arrays() {
    // Two arrays at one index: one gather, a partition holds both.
    let (k, access) = access_of(PAGERANK);
    let throttle = access.throttle.as_ref().ok().expect("one gathered index");
    assert_eq!(
        throttle.gathered,
        vec![param_index(&k, "rank"), param_index(&k, "inv_deg")]
    );
    // Two arrays at different indices.
    let (k, access) = access_of(
        "
fn k(t: usize, p: &[u32], c: &[u32], d: &[u32], x: &[f32], w: &[f32], y: &mut [f32]) {
    let lo = p[t] as usize;
    let hi = p[t + 1] as usize;
    y[t] = (lo..hi).map(|e| x[c[e] as usize] * w[d[e] as usize]).fold(0.0, |a, b| a + b);
}",
    );
    let reason = access.throttle.as_ref().err().expect("two indices");
    assert_eq!(
        reason.reason(&k.params),
        "its map gathers `x`, `w` through different index expressions; a cache-fit partition holds the elements of one index"
    );
    let (k, access) = access_of(
        "
fn k(t: usize, p: &[u32], c: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = p[t] as usize;
    let hi = p[t + 1] as usize;
    y[t] = (lo..hi).map(|e| x[c[e] as usize] * x[c[e] as usize + 1]).fold(0.0, |a, b| a + b);
}",
    );
    let reason = access
        .throttle
        .as_ref()
        .err()
        .expect("two index expressions");
    assert_eq!(
        reason.reason(&k.params),
        "its map reads `x` through several different index expressions"
    );
    // The same index expression twice is one gather.
    let (_, access) = access_of(
        "
fn k(t: usize, p: &[u32], c: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = p[t] as usize;
    let hi = p[t + 1] as usize;
    y[t] = (lo..hi).map(|e| x[c[e] as usize] * x[c[e] as usize]).fold(0.0, |a, b| a + b);
}",
    );
    assert!(access.throttle.is_ok());
    let (k, access) = access_of(
        "
fn k(t: usize, p: &[u32], v: &[f32], y: &mut [f32]) {
    let lo = p[t] as usize;
    let hi = p[t + 1] as usize;
    y[t] = (lo..hi).map(|e| v[e]).fold(0.0, |a, b| a + b);
}",
    );
    let reason = access.throttle.as_ref().err().expect("no gather");
    assert!(reason
        .reason(&k.params)
        .starts_with("its map reads no array through an index array"));
    assert_eq!(access.probe(), None);
}

/// Which reduce operators CTE may fold out of fine-task order: the
/// generated `commutative` flag.
#[test]
fn commuting_operators_are_recognised() {
    let fold = |ty: &str, init: &str, op: &str| {
        let src = format!(
            "
fn k(t: usize, p: &[u32], v: &[{ty}], y: &mut [{ty}]) {{
    let lo = p[t] as usize;
    let hi = p[t + 1] as usize;
    y[t] = (lo..hi).map(|e| v[e]).fold({init}, {op});
}}"
        );
        let (k, _) = access_of(&src);
        let flagged = cuda(&src).contains("static constexpr bool commutative = true;");
        assert_eq!(flagged, k.reduce.commutes(), "{op}");
        k.reduce.commutes()
    };
    let floats = ["|a, b| a + b", "|a, b| b + a", "|a, b| a * b", "f32::min"];
    let ints = ["|a, b| a & b", "|a, b| b | a", "|a, b| a ^ b", "u32::max"];
    let methods = ["|a, b| a.max(b)", "|a, b| b.min(a)"];
    let others = [
        "|a, b| a - b",
        "|a, b| a / b",
        "|a, b| a + b + 1.0",
        "|a, b| a + a",
    ];
    // A pick by a strict order is a min or max; a constant pick is not.
    let picks = [
        "|a, b| if a > b { a } else { b }",
        "|a, b| if b < a { b } else { a }",
        "|a, b| if a < b { b } else { a }",
    ];
    let branches = ["|a, _b| a", "|a, b| if a > b { b } else { b }"];
    for (ty, init, ops, commutes) in [
        ("f32", "0.0", &floats[..], true),
        ("u32", "0", &ints[..], true),
        ("f32", "0.0", &methods[..], true),
        ("f32", "0.0", &others[..], false),
        ("f32", "0.0", &picks[..], true),
        ("u32", "0", &picks[..], true),
        ("f32", "0.0", &branches[..], false),
    ] {
        for op in ops {
            assert_eq!(fold(ty, init, op), commutes, "{op}");
        }
    }
}

#[test]
fn signed_index_arrays_are_not_prechecked() {
    let (k, access) = access_of(
        "
fn k(t: usize, p: &[u32], c: &[i32], x: &[f32], y: &mut [f32]) {
    let lo = p[t] as usize;
    let hi = p[t + 1] as usize;
    y[t] = (lo..hi).map(|e| x[c[e] as usize]).fold(0.0, |a, b| a + b);
}",
    );
    assert_eq!(
        access.direct.iter().copied().collect::<Vec<_>>(),
        vec![param_index(&k, "c")]
    );
    assert!(access.prechecked_gathers.is_empty());
    assert!(access.throttle.is_ok());
}

#[test]
fn callee_typed_literals_keep_their_value_in_cuda() {
    let src = "
fn k(t: usize, p: &[u32], x: &[f32], y: &mut [f32]) {
    let r = t;
    let lo = p[r] as usize;
    let hi = p[t + 1] as usize;
    let s = (lo..hi).map(|e| add(x[e], 0.1)).fold(0.0f32, |a, b| a + b);
    y[r] = scale(s, -2, 18446744073709551615);
}";
    let c = cuda(src);
    assert!(
        c.contains("warpfit_user::add(warpfit::ld_k(wf_p.x, wf_p.x_len, e, 1, wf_f), 0.1, wf_f)"),
        "{c}"
    );
    assert!(
        c.contains(
            "warpfit_user::scale(s, int64_t(-2ll), uint64_t(18446744073709551615ull), wf_f)"
        ),
        "{c}"
    );
    // The output written through the copy `r` is the task's own element.
    assert!(c.contains("warpfit::st_out(wf_p.y, wf_p.y_len, t, "), "{c}");
    let r = rust(src);
    assert!(
        r.contains("const _: fn(f32, add::Param1) -> f32 = add;"),
        "{r}"
    );
    assert!(
        r.contains("const _: fn(f32, scale::Param1, scale::Param2) -> f32 = scale;"),
        "{r}"
    );
}

#[test]
fn literals_take_the_type_of_their_context() {
    let src = "
fn k(t: usize, p: &[u32], a: &[f64], s: u8, y: &mut [f32], z: &mut [u8]) {
    let lo = p[t] as usize;
    let hi = p[t + 1] as usize;
    let half = 0.5;
    let r = (lo..hi).map(|i| a[i] * 2.0).fold(1.0, |x, w| x.max(w));
    y[t] = half * (r as f32);
    z[t] = s + 1;
}";
    let c = cuda(src);
    assert!(c.contains("typedef double acc_t;"), "{c}");
    assert!(c.contains("const float half = 0.5f;"), "{c}");
    assert!(
        c.contains("warpfit::add<uint8_t>(wf_p.s, uint8_t(1))"),
        "{c}"
    );
    assert!(c.contains("return 1.0;"), "{c}");
}

#[test]
fn shadowed_and_reserved_names_get_unique_spellings() {
    let src = "
fn k(t: usize, p: &[u32], y: &mut [i32]) {
    let lo = p[t] as usize;
    let int = 3;
    let lo = lo + 0;
    let hi = p[t + 1] as usize;
    let s = (lo..hi).map(|k| int + k as i32).fold(0, |a, b| a + b);
    let s = s * 2;
    y[t] = s;
}";
    let c = cuda(src);
    for decl in [
        "const uint64_t lo = ",
        "const uint64_t lo_1 = ",
        "const int32_t int_ = 3;",
        "const int32_t s = wf_acc;",
        "const int32_t s_1 = ",
    ] {
        assert!(c.contains(decl), "missing `{decl}` in\n{c}");
    }
    assert!(c.contains("wf_c.int_"), "{c}");
}

/// A tuple fold commutes when each element of its body's tuple literal
/// applies a commuting operator to the same element of both parameters.
#[test]
fn commuting_tuple_operators_are_recognised() {
    let fold = |op: &str| {
        let src = format!(
            "
fn k(t: usize, p: &[u32], v: &[f32], y: &mut [f32], z: &mut [u32]) {{
    let lo = p[t] as usize;
    let hi = p[t + 1] as usize;
    let (s, c) = (lo..hi).map(|e| (v[e], e as u32)).fold((0.0, 0), {op});
    y[t] = s;
    z[t] = c;
}}"
        );
        let (k, _) = access_of(&src);
        let c = cuda(&src);
        assert!(
            c.contains("typedef warpfit::tuple<float, uint32_t> acc_t;"),
            "{c}"
        );
        assert!(c.contains("static_assert(sizeof(acc_t) == 8,"), "{c}");
        let flagged = c.contains("static constexpr bool commutative = true;");
        assert_eq!(flagged, k.reduce.commutes(), "{op}");
        k.reduce.commutes()
    };
    for op in [
        "|a, b| (a.0 + b.0, a.1 + b.1)",
        "|a, b| (b.0 * a.0, a.1.max(b.1))",
        "|a, b| (a.0.min(b.0), b.1 ^ a.1)",
        // An argmin and an argmax by the whole tuple, written either way.
        "|a, b| if b.0 < a.0 || (b.0 == a.0 && b.1 < a.1) { b } else { a }",
        "|a, b| if a.0 > b.0 || (a.0 == b.0 && a.1 > b.1) { a } else { b }",
        "|a, b| if a.0 < b.0 || (b.0 == a.0 && b.1 > a.1) { a } else { b }",
    ] {
        assert!(fold(op), "{op}");
    }
    for op in [
        // Elements crossed, one element not folded, a branch, a subtraction.
        "|a, b| (a.0 + b.0, a.1 + b.0 as u32)",
        "|a, b| (a.0 + b.0, a.1)",
        "|a, b| if b.0 < a.0 { b } else { a }",
        "|a, b| if b.0 < a.0 || (b.0 == a.0 && b.1 > a.1) { b } else { a }",
        "|a, b| (a.0 - b.0, a.1 + b.1)",
        "|a, b| (a.0 + b.0, b.1 + b.1)",
    ] {
        assert!(!fold(op), "{op}");
    }
}

mod random {
    use super::*;
    use proptest::prelude::*;

    /// Random expressions of the language over `a: f32`, `b: f32`, `i: i32`,
    /// `u: u32` (locals of the map), rendered as source text, with their type.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum T {
        F,
        I,
        U,
        B,
    }

    fn leaf(t: T) -> BoxedStrategy<String> {
        match t {
            T::F => prop_oneof![
                Just("a".to_string()),
                Just("b".to_string()),
                (0u32..100).prop_map(|v| format!("{v}.5")),
                Just("f32::INFINITY".to_string())
            ]
            .boxed(),
            T::I => prop_oneof![
                Just("i".to_string()),
                (-50i32..50).prop_map(|v| format!("({v})")),
                Just("i32::MIN".to_string())
            ]
            .boxed(),
            T::U => prop_oneof![
                Just("u".to_string()),
                (0u32..50).prop_map(|v| v.to_string())
            ]
            .boxed(),
            T::B => prop_oneof![Just("true".to_string()), Just("(a < b)".to_string())].boxed(),
        }
    }

    fn expr(t: T, depth: u32) -> BoxedStrategy<String> {
        if depth == 0 {
            return leaf(t);
        }
        let sub = move |t| expr(t, depth - 1);
        match t {
            T::F => prop_oneof![
                leaf(T::F),
                (
                    sub(T::F),
                    sub(T::F),
                    prop::sample::select(vec!["+", "-", "*", "/", "%"])
                )
                    .prop_map(|(x, y, op)| format!("({x} {op} {y})")),
                (
                    sub(T::F),
                    prop::sample::select(vec!["sqrt", "abs", "floor", "exp", "tanh", "signum"])
                )
                    .prop_map(|(x, m)| format!("({x}).{m}()")),
                (
                    sub(T::F),
                    sub(T::F),
                    prop::sample::select(vec!["min", "max", "powf"])
                )
                    .prop_map(|(x, y, m)| format!("({x}).{m}({y})")),
                sub(T::I).prop_map(|x| format!("(({x}) as f32)")),
                (sub(T::B), sub(T::F), sub(T::F))
                    .prop_map(|(c, x, y)| format!("(if {c} {{ {x} }} else {{ {y} }})")),
                (sub(T::F), sub(T::F)).prop_map(|(x, y)| format!("{{ let q = {x}; q * {y} }}")),
            ]
            .boxed(),
            T::I => prop_oneof![
                leaf(T::I),
                (
                    sub(T::I),
                    sub(T::I),
                    prop::sample::select(vec!["+", "-", "*", "&", "|", "^"])
                )
                    .prop_map(|(x, y, op)| format!("({x} {op} {y})")),
                (sub(T::I), sub(T::U), prop::sample::select(vec!["<<", ">>"]))
                    .prop_map(|(x, y, op)| format!("({x} {op} {y})")),
                // `a +` ties the float literals to f32 (alone they would default to f64).
                sub(T::F).prop_map(|x| format!("((a + {x}) as i32)")),
                sub(T::I).prop_map(|x| format!("(-{x})")),
                (sub(T::I), sub(T::I)).prop_map(|(x, y)| format!("({x}).max({y})")),
            ]
            .boxed(),
            T::U => prop_oneof![
                leaf(T::U),
                (
                    sub(T::U),
                    sub(T::U),
                    prop::sample::select(vec!["+", "-", "*", "&"])
                )
                    .prop_map(|(x, y, op)| format!("({x} {op} {y})")),
                sub(T::I).prop_map(|x| format!("(({x}) as u32)")),
                (sub(T::U), sub(T::U)).prop_map(|(x, y)| format!("({x}).min({y})")),
            ]
            .boxed(),
            T::B => prop_oneof![
                leaf(T::B),
                (
                    sub(T::F),
                    sub(T::F),
                    prop::sample::select(vec!["<", "<=", "==", "!="])
                )
                    .prop_map(|(x, y, op)| format!("((a + {x}) {op} {y})")),
                (sub(T::B), sub(T::B), prop::sample::select(vec!["&&", "||"]))
                    .prop_map(|(x, y, op)| format!("({x} {op} {y})")),
                sub(T::I).prop_map(|x| format!("({x} > 0)")),
            ]
            .boxed(),
        }
    }

    fn kernel(body: &str) -> String {
        format!(
            "fn k(t: usize, p: &[u32], fa: &[f32], ia: &[i32], y: &mut [f32]) {{
                let lo = p[t] as usize;
                let hi = p[t + 1] as usize;
                y[t] = (lo..hi).map(|e| {{
                    let a = fa[e];
                    let b = fa[e + 1];
                    let i = ia[e];
                    let u = ia[e] as u32;
                    {body}
                }}).fold(0.0, |x, z| x + z);
            }}"
        )
    }

    fn balanced(s: &str) -> bool {
        let mut stack = Vec::new();
        for c in s.chars() {
            match c {
                '(' | '{' | '[' => stack.push(c),
                ')' | '}' | ']' => {
                    let open = stack.pop();
                    if open
                        != Some(match c {
                            ')' => '(',
                            '}' => '{',
                            _ => '[',
                        })
                    {
                        return false;
                    }
                }
                _ => {}
            }
        }
        stack.is_empty()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any well-typed f32 expression lowers, stays f32 in CUDA (no
        /// `double` anywhere) and gives balanced C++.
        #[test]
        fn f32_expressions_emit_well_formed_float_cuda(body in expr(T::F, 4)) {
            let src = kernel(&body);
            let c = cuda_of(&src).map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
            prop_assert!(balanced(&c), "unbalanced:\n{c}");
            prop_assert!(!c.contains("double"), "double in f32 kernel:\n{c}");
            prop_assert!(c.contains("typedef float acc_t;"));
        }

        /// Integer expressions are well-formed and use the wrapping helpers.
        #[test]
        fn int_expressions_emit_well_formed_cuda(body in expr(T::I, 4)) {
            let src = kernel(&format!("({body}) as f32"));
            let c = cuda_of(&src).map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
            prop_assert!(balanced(&c), "unbalanced:\n{c}");
            prop_assert!(!c.contains("double"));
            prop_assert!(!c.contains(" + ") && !c.contains(" * "), "raw arithmetic:\n{c}");
        }

        /// A fold of a random pair of expressions (an f32 and an i32) as a
        /// tuple, with a random element-wise operator, lowers to a tuple
        /// accumulator whose elements keep their types, on both backends.
        #[test]
        fn tuple_folds_of_random_elements_emit_well_formed_cuda(
            x in expr(T::F, 3),
            i in expr(T::I, 3),
            op in prop::sample::select(vec!["+", "*", "&", "|", "^"]),
        ) {
            let fop = if matches!(op, "+" | "*") { op } else { "+" };
            let src = format!(
                "fn k(t: usize, p: &[u32], fa: &[f32], ia: &[i32], y: &mut [f32], z: &mut [i32]) {{
                    let lo = p[t] as usize;
                    let hi = p[t + 1] as usize;
                    let (s, q) = (lo..hi).map(|e| {{
                        let a = fa[e];
                        let b = fa[e + 1];
                        let i = ia[e];
                        let u = ia[e] as u32;
                        ({x}, {i})
                    }}).fold((0.0, 0), |m, n| (m.0 {fop} n.0, m.1 {op} n.1));
                    y[t] = s;
                    z[t] = q;
                }}"
            );
            let c = cuda_of(&src).map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
            prop_assert!(balanced(&c), "unbalanced:\n{c}");
            prop_assert!(!c.contains("double"), "double in an f32/i32 kernel:\n{c}");
            prop_assert!(c.contains("typedef warpfit::tuple<float, int32_t> acc_t;"), "{c}");
            prop_assert!(c.contains("static constexpr bool commutative = true;"), "{c}");
            let file: syn::File = syn::parse_str(&src).expect("valid Rust");
            let syn::Item::Fn(item) = &file.items[0] else { unreachable!() };
            crate::nested::expand(item, None).map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
        }

        /// Mixing f32 and f64 operands is always a typing error, never a panic.
        #[test]
        fn mixed_float_widths_are_rejected(body in expr(T::F, 3)) {
            let src = kernel(&format!("({body}) * 2.0f64"));
            let err = cuda_of(&src).expect_err("f32 * f64 must not type-check");
            prop_assert!(err.to_string().contains("mismatched types"), "{err}");
        }
    }
}

/// A kernel whose result holds the index array's values (an argmin that
/// returns the column) cannot be remapped: the plan renames those values.
#[test]
fn index_values_in_the_result_rule_out_remapping() {
    let src = "
fn nearest(row: usize, ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], d: &mut [f32], at: &mut [u32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let (best, arg) = (lo..hi)
        .map(|k| (x[col[k] as usize] + val[k], col[k]))
        .fold((f32::INFINITY, u32::MAX), |a, b| if b.0 < a.0 { b } else { a });
    d[row] = best;
    at[row] = arg;
}";
    let (k, access) = access_of(src);
    let roles = crate::analyse::roles(&k, &access).unwrap_or_else(|e| panic!("{e}"));
    let why = roles.remap.err().expect("not remappable");
    assert!(why.contains("uses the values of `col`"), "{why}");
    // SpMV reads `col` only to gather: remappable.
    let (k, access) = access_of(SPMV);
    assert!(crate::analyse::roles(&k, &access).unwrap().remap.is_ok());
}

#[test]
fn throttling_roles_of_spmv() {
    let (k, access) = access_of(SPMV);
    let roles = crate::analyse::roles(&k, &access).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(roles.range, param_index(&k, "row_ptr"));
    let mut fine = vec![param_index(&k, "col"), param_index(&k, "val")];
    fine.sort_unstable();
    assert_eq!(roles.fine, fine);
    assert_eq!(roles.gathered, vec![param_index(&k, "x")]);
    // Two gathered arrays at one index: both gathered, remappable.
    let (k, access) = access_of(PAGERANK);
    let roles = crate::analyse::roles(&k, &access).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        roles.gathered,
        vec![param_index(&k, "rank"), param_index(&k, "inv_deg")]
    );
    let remap = roles.remap.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(!remap.gathered_at_task);
    assert_eq!(remap.task_indexed, vec![param_index(&k, "next")]);
}

#[test]
fn a_gathered_array_read_at_the_task_index_is_remapped_square() {
    // A cell's own value beside its neighbours' (the CFD flux's shape).
    let (k, access) = access_of(
        "
fn k(c: usize, p: &[u32], nb: &[u32], s: &[f32], y: &mut [f32]) {
    let lo = p[c] as usize;
    let hi = p[c + 1] as usize;
    y[c] = (lo..hi).map(|e| s[nb[e] as usize] - s[c]).fold(0.0, |a, b| a + b);
}",
    );
    let roles = crate::analyse::roles(&k, &access).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(roles.gathered, vec![param_index(&k, "s")]);
    let remap = roles.remap.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(remap.gathered_at_task);
    assert_eq!(remap.task_indexed, vec![param_index(&k, "y")]);
    // At another index it is refused, naming the array.
    let (k, access) = access_of(
        "
fn k(c: usize, p: &[u32], nb: &[u32], s: &[f32], y: &mut [f32]) {
    let lo = p[c] as usize;
    let hi = p[c + 1] as usize;
    y[c] = (lo..hi).map(|e| s[nb[e] as usize] - s[0]).fold(0.0, |a, b| a + b);
}",
    );
    let roles = crate::analyse::roles(&k, &access).unwrap_or_else(|e| panic!("{e}"));
    let why = roles.remap.err().expect("refused");
    assert!(why.contains("reads `s` other than through `nb`"), "{why}");
}

/// The flattened kernel (`columns.rs`) of an SpMM-shaped 2-D kernel whose
/// map is `map` (over `e`, with `j`, `k`, `ptr`, `col`, `val`, `x` in
/// scope), folded from `0.0` with `reduce`.
pub(crate) fn flattened_2d(map: &str, reduce: &str) -> crate::ir::Kernel {
    let src = format!(
        "
fn spmm(row: usize, j: usize, ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], k: u32, y: &mut [f32]) {{
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row * k as usize + j] = (lo..hi).map(|e| {map}).fold(0.0, {reduce});
}}"
    );
    let item: syn::ItemFn = syn::parse_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let attr = crate::columns::ColumnsAttr {
        count: syn::parse_str("k").unwrap(),
    };
    let flat = crate::columns::flatten(&item, &attr).unwrap_or_else(|e| panic!("{e}"));
    let ast = crate::parse::kernel(&flat.item).unwrap_or_else(|e| panic!("{e}"));
    let shape = crate::check::kernel(&ast).unwrap_or_else(|e| panic!("{e}"));
    let mut k = crate::lower::kernel(&ast, &shape).unwrap_or_else(|e| panic!("{map}: {e}"));
    k.columns = Some(flat.count_param);
    k
}

/// A 2-D kernel's roles, from its flattened kernel, with `index` the map's
/// gathered index.
fn column_roles(index: &str) -> Result<(crate::ir::Kernel, crate::analyse::Roles), String> {
    let k = flattened_2d(&format!("val[e] * x[{index}]"), "|a, b| a + b");
    let access = crate::analyse::kernel(&k);
    let roles = crate::analyse::roles(&k, &access)?;
    Ok((k, roles))
}

#[test]
fn throttling_roles_of_a_2d_kernel_gather_whole_rows() {
    for index in [
        "col[e] as usize * k as usize + j",
        "j + (k as usize) * col[e] as usize",
    ] {
        let (k, roles) = column_roles(index).unwrap_or_else(|e| panic!("{index}: {e}"));
        assert_eq!(roles.range, param_index(&k, "ptr"), "{index}");
        assert_eq!(roles.gathered, vec![param_index(&k, "x")], "{index}");
        assert_eq!(roles.through, Some(param_index(&k, "col")), "{index}");
        let why = roles.remap.err().expect("a 2-D kernel is not remapped");
        assert!(why.contains("2-D kernel"), "{why}");
    }
    // Not a row of `k` at the column index: refused, naming the form.
    for index in [
        "col[e] as usize",
        "col[e] as usize * k as usize",
        "col[e] as usize + j",
        "col[e] as usize * 2 + j",
    ] {
        let why = column_roles(index).err().expect(index);
        assert!(
            why.contains("gathers whole rows of `x`")
                && why.contains("col[e] as usize * k as usize + j"),
            "{index}: {why}"
        );
    }
}

// Generic kernels: the front end's substitution, rules and diagnostics.

const GENERIC_AXPY: &str = "
pub fn axpy<T>(i: usize, a: T, x: &[T], y: &mut [T]) {
    y[i] = a * x[i] + y[i];
}";

/// The expansion of a generic kernel, the instances' modules cut to their
/// documentation and imports: the rest is a non-generic kernel's module
/// (`snapshot_rust_axpy_map`), which `each_instance_is_the_hand_written_kernel`
/// compares item by item.
#[test]
fn snapshot_rust_generic_axpy() {
    let out =
        crate::generic::rust_of("T = [f32, f64]", GENERIC_AXPY).unwrap_or_else(|e| panic!("{e:?}"));
    let mut file: syn::File = syn::parse_str(&out).unwrap();
    for item in &mut file.items {
        let syn::Item::Mod(m) = item else { continue };
        for inner in &mut m.content.as_mut().unwrap().1 {
            match inner {
                syn::Item::Mod(instance) if instance.ident != "sealed" => {
                    let items = &mut instance.content.as_mut().unwrap().1;
                    items.retain(|i| matches!(i, syn::Item::Use(_)));
                }
                _ => {}
            }
        }
    }
    insta::assert_snapshot!(prettyplease::unparse(&file));
}

/// Each instance's module is the module of the kernel written by hand for
/// its types, named after the instance (`axpy_f64`), but for the paths that
/// leave it (one `super` more) and its documentation's first line.
#[test]
fn each_instance_is_the_hand_written_kernel() {
    /// The items of module `name` among `items`, as token text.
    fn module_items(items: &[syn::Item], name: &str) -> Vec<String> {
        let m = items
            .iter()
            .find_map(|i| match i {
                syn::Item::Mod(m) if m.ident == name => Some(m),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no module {name}"));
        let items = &m.content.as_ref().expect("inline").1;
        items
            .iter()
            .map(|i| quote::quote!(#i).to_string())
            .collect()
    }
    // Token for token, before any pretty-printing (whose line breaks
    // depend on the nesting).
    let item: syn::ItemFn = syn::parse_str(GENERIC_AXPY).unwrap();
    let out = crate::generic::expand(quote::quote!(T = [f32, f64]), &item)
        .unwrap_or_else(|e| panic!("{:?}", crate::generic::messages(&e)));
    let file: syn::File = syn::parse2(out).unwrap();
    let parent = file
        .items
        .iter()
        .find_map(|i| match i {
            syn::Item::Mod(m) if m.ident == "axpy" => Some(&m.content.as_ref().unwrap().1),
            _ => None,
        })
        .expect("the generic kernel's module");
    for t in ["f32", "f64"] {
        let instance: Vec<String> = module_items(parent, t)
            .into_iter()
            .map(|i| i.replace("use super :: super :: *", "use super :: *"))
            .collect();
        let name = format!("axpy_{t}");
        let src = GENERIC_AXPY
            .replace("<T>", "")
            .replace('T', t)
            .replace("axpy", &name);
        let hand = crate::nested::expand(&syn::parse_str(&src).unwrap(), None).unwrap();
        let hand: syn::File = syn::parse2(hand).unwrap();
        let hand = module_items(&hand.items, &name);
        assert_eq!(instance.len(), hand.len(), "{t}");
        for (i, h) in instance.iter().zip(&hand) {
            assert_eq!(i, h, "{t}");
        }
    }
}

/// The instances of a generic kernel's function, as source text.
fn instance_texts(attr: &str, src: &str) -> Vec<(String, String)> {
    crate::generic::instances_of(attr, src)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|(label, item)| (label, quote::quote!(#item).to_string()))
        .collect()
}

#[test]
fn generic_parameters_are_substituted_as_types_paths_and_casts() {
    let src = "
fn k<T>(t: usize, p: &[u32], x: &[T], s: T, y: &mut [T], n: &mut [u32]) {
    let lo = p[t] as usize;
    let hi = p[t + 1] as usize;
    let m: T = T::MAX;
    y[t] = (lo..hi).map(|k| x[k].min(m) * (k as T)).fold(s, T::max);
    n[t] = (hi - lo) as u32;
}";
    let inst = instance_texts("T = [f64, u8]", src);
    assert_eq!(inst.len(), 2);
    assert_eq!(inst[0].0, "T = f64");
    let f64 = &inst[0].1;
    for want in [
        "x : & [f64]",
        "s : f64",
        "y : & mut [f64]",
        "let m : f64 = f64 :: MAX",
        "(k as f64)",
        "fold (s , f64 :: max)",
        "n : & mut [u32]",
    ] {
        assert!(f64.contains(want), "{want}: {f64}");
    }
    assert!(
        !f64.contains('<'),
        "the generics stay on the function: {f64}"
    );
    assert!(
        !f64.split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|w| w == "T"),
        "{f64}"
    );
    assert_eq!(inst[1].0, "T = u8");
    assert!(inst[1].1.contains("u8 :: MAX"), "{}", inst[1].1);
    // Several parameters: every combination, the first parameter's types
    // outermost.
    let src = "fn g<T, I>(t: usize, c: &[I], x: &[T], y: &mut [T]) { y[t] = x[c[t] as usize]; }";
    let labels: Vec<String> = instance_texts("I = [u32, u64], T = [f32, f64]", src)
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    assert_eq!(
        labels,
        [
            "T = f32, I = u32",
            "T = f32, I = u64",
            "T = f64, I = u32",
            "T = f64, I = u64"
        ]
    );
}

/// The generated items: one module per instance, named by its types, each
/// kernel named after the function and its types, the function generic
/// over the sealed `Elem`.
#[test]
fn generic_kernels_expand_to_a_module_per_instance() {
    let src = "
pub fn g<T, I>(t: usize, c: &[I], x: &[T], y: &mut [T]) {
    let lo = c[t] as usize;
    let hi = c[t + 1] as usize;
    y[t] = (lo..hi).map(|k| x[k]).fold(0.0, |a, b| a + b);
}";
    let out = crate::generic::rust_of("T = [f32, f64], I = [u32, u64]", src)
        .unwrap_or_else(|e| panic!("{e:?}"));
    for want in [
        "pub fn g<T: g::Elem<I>, I>(t: usize, c: &[I], x: &[T], y: &mut [T])",
        "<T as g::Elem<I>>::__g(t, c, x, y)",
        "pub trait Elem<I>: sealed::Sealed<I> + ::core::marker::Sized",
        "impl sealed::Sealed<::core::primitive::u64> for ::core::primitive::f64 {}",
        "impl g::Elem<::core::primitive::u32> for ::core::primitive::f32",
        "pub mod f32_u32 {",
        "pub mod f64_u64 {",
        "use super::super::*;",
        "name: \"g_f64_u32\"",
        "namespace wf_g_f32_u64 {",
        "kernel `fn g` for `T = f64, I = u64`",
    ] {
        assert!(out.contains(want), "{want}:\n{out}");
    }
    assert!(!out.contains("mod g_f32"), "{out}");
}

/// `Atomic<T>` is a type for `T: AtomicScalar` only: the generic function
/// and the trait say so, as a supertrait for the first parameter and a
/// bound of the trait's and the function's for the others.
#[test]
fn shared_arrays_of_a_type_parameter_carry_its_bound() {
    let src = "
pub fn k<T, C>(v: usize, ptr: &[u32], w: &[T], cut: T, count: &[Atomic<C>], best: &[Atomic<T>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        if w[e] > cut {
            atomic_add(&count[v], 1);
            atomic_min(&best[v], w[e]);
        }
    });
}";
    let out = crate::generic::rust_of("T = [f32, u32], C = [u64]", src)
        .unwrap_or_else(|e| panic!("{e:?}"));
    // Without whitespace: the pretty-printer's line breaks are not the point.
    let flat: String = out.split_whitespace().collect();
    for want in [
        "pub fn k<T: k::Elem<C>, C: ::warpfit::__private::AtomicScalar>(",
        "pub trait Elem<C: ::warpfit::__private::AtomicScalar,>: sealed::Sealed<C> \
         + ::core::marker::Sized + ::warpfit::__private::AtomicScalar {",
        "best: &[Atomic<Self>]",
    ] {
        let want: String = want.split_whitespace().collect();
        assert!(flat.contains(&want), "{want}:\n{out}");
    }
}

/// A device function reached through `super::` from a generic kernel: the
/// instance's module is one level further down, and its path one `super`
/// longer than a non-generic kernel's.
#[test]
fn paths_out_of_an_instance_module_gain_a_super() {
    let src = "
pub fn s<T>(i: usize, x: &[T], y: &mut [T]) {
    let h: f64 = super::half(1.0);
    y[i] = x[i] * h as T;
}";
    let out = crate::generic::rust_of("T = [f32]", src).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(out.contains("super::super::super::half::cpu"), "{out}");
    assert!(!out.contains(" super::super::half::cpu"), "{out}");
    let plain = rust(&src.replace("<T>", "").replace('T', "f32"));
    assert!(plain.contains("super::super::half::cpu"), "{plain}");
}

#[test]
fn generic_errors_of_some_instances_name_them() {
    // `2.0f32` is an f32: the f64 instance multiplies an f64 by it.
    let src = "
fn k<T>(t: usize, x: &[T], y: &mut [T]) {
    y[t] = x[t] * 2.0f32;
}";
    let errs = crate::generic::rust_of("T = [f32, f64]", src).expect_err("f64 fails");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("in the `T = f64` instance: mismatched types"),
        "{errs:?}"
    );
    // An error of every instance is reported once, as it is.
    let src = "
fn k<T>(t: usize, x: &[T], y: &mut [T]) {
    let mut v = x[t];
    y[t] = v;
}";
    let errs = crate::generic::rust_of("T = [f32, f64, i32]", src).expect_err("`let mut`");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("`mut` bindings are not supported"),
        "{errs:?}"
    );
    // Integer instances have no `sqrt`: each of their errors names its type
    // and its instance.
    let src = "
fn k<T>(t: usize, x: &[T], y: &mut [T]) {
    y[t] = x[t].sqrt();
}";
    let errs = crate::generic::rust_of("T = [f32, u32, i64]", src).expect_err("integer sqrt");
    assert!(!errs.is_empty());
    assert!(
        errs.iter()
            .any(|e| e.starts_with("in the `T = u32` instance: ")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with("in the `T = i64` instance: ")),
        "{errs:?}"
    );
    assert!(
        errs.iter().all(|e| e.starts_with("in the `T = ")),
        "{errs:?}"
    );
    // The same error from some instances is reported once, naming them; one
    // from all of them, as it is.
    let span = proc_macro2::Span::call_site();
    let e = |m: &str| syn::Error::new(span, m);
    let mut both = e("common");
    both.combine(e("some"));
    let msgs = crate::generic::report_of(vec![
        ("T = f32", Some(e("common"))),
        ("T = u8", Some(both.clone())),
        ("T = i32", Some(both)),
    ]);
    assert_eq!(
        msgs,
        ["common", "in the `T = u8` and `T = i32` instances: some"]
    );
    let msgs = crate::generic::report_of(vec![("T = f32", None), ("T = f64", Some(e("f64 only")))]);
    assert_eq!(msgs, ["in the `T = f64` instance: f64 only"]);
}

#[test]
fn generic_attribute_rules_are_enforced() {
    let k = |generics: &str| {
        format!("fn k{generics}(t: usize, x: &[f32], y: &mut [f32]) {{ y[t] = x[t]; }}")
    };
    let cases: &[(&str, String, &str)] = &[
        (
            "cte",
            k("<T>"),
            "expected a type parameter and the element types",
        ),
        (
            "T = f32",
            k("<T>"),
            "expected `T`'s element types in brackets",
        ),
        ("T = []", k("<T>"), "`T` lists no element type"),
        ("T = [f32, f32]", k("<T>"), "`f32` is listed twice for `T`"),
        (
            "T = [f32, usize]",
            k("<T>"),
            "`usize` is not an element type",
        ),
        (
            "T = [f32], T = [f64]",
            k("<T>"),
            "type parameter `T` is listed twice",
        ),
        (
            "T = [f32]",
            k("<T, U>"),
            "type parameter `U` has no element types",
        ),
        ("", k("<T>"), "type parameter `T` has no element types"),
        (
            "T = [f32], I = [u32]",
            k("<T>"),
            "`I` is not a type parameter of `fn k`",
        ),
        ("T = [f32]", k(""), "`T` is not a type parameter of `fn k`"),
        ("T = [f32]", k("<T: Copy>"), "bounds are not needed on `T`"),
        (
            "T = [f32]",
            k("<'a, T>"),
            "lifetime parameters are not supported",
        ),
        (
            "T = [f32]",
            k("<T, const N: usize>"),
            "const generic parameters are not supported",
        ),
        (
            "T = [f32]",
            k("<T>").replace(") {", ") where T: Copy {"),
            "a `where` clause",
        ),
        ("f32 = [f32]", k("<f32>"), "may not be named `f32`"),
    ];
    for (attr, src, want) in cases {
        let errs = crate::generic::rust_of(attr, src).expect_err(src);
        assert!(
            errs.iter().any(|e| e.contains(want)),
            "#[nested_reduce({attr})] {src}: {errs:?}"
        );
    }
    // Without arguments or generics, the kernel is an ordinary one.
    let src = k("");
    let out = crate::generic::rust_of("", &src).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(out, rust(&src));
}

mod random_generic {
    use super::*;
    use proptest::prelude::*;

    /// A map over `x: &[T]` whose body is `body` with `f32` spelled `T`.
    fn kernel(body: &str, t: &str) -> String {
        format!(
            "fn k{g}(t: usize, p: &[u32], fa: &[{t}], ia: &[i32], y: &mut [{t}]) {{
                let lo = p[t] as usize;
                let hi = p[t + 1] as usize;
                y[t] = (lo..hi).map(|e| {{
                    let a = fa[e];
                    let b = fa[e + 1];
                    let i = ia[e];
                    {body}
                }}).fold(0.0, |x, z| x + z);
            }}",
            g = if t == "T" { "<T>" } else { "" },
            body = body.replace("f32", t),
        )
    }

    /// A kernel's CUDA, or its first error.
    fn cuda_or_error(src: &str) -> Result<String, String> {
        cuda_of(src).map_err(|e| e.to_string())
    }

    /// Random float expressions over `a`, `b` (f32 in the hand-written
    /// kernel), `i` (i32).
    fn float_expr() -> BoxedStrategy<String> {
        let leaf = prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            (0u32..100).prop_map(|v| format!("{v}.5")),
            Just("f32::INFINITY".to_string()),
            Just("f32::MAX".to_string()),
            Just("(i as f32)".to_string()),
        ];
        leaf.prop_recursive(3, 24, 2, |inner| {
            prop_oneof![
                (
                    inner.clone(),
                    inner.clone(),
                    prop::sample::select(vec!["+", "-", "*", "/"])
                )
                    .prop_map(|(x, y, op)| format!("({x} {op} {y})")),
                (
                    inner.clone(),
                    prop::sample::select(vec!["sqrt", "abs", "floor"])
                )
                    .prop_map(|(x, m)| format!("({x}).{m}()")),
                (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("({x}).min({y})")),
                (inner.clone(), inner.clone())
                    .prop_map(|(x, y)| format!("(if {x} < {y} {{ {x} }} else {{ {y} }})")),
                inner.prop_map(|x| format!("((({x}) as i32) as f32)")),
            ]
        })
        .boxed()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Each instance of a generic kernel is the kernel written by hand
        /// for its type: the same CUDA, or the same first error.
        #[test]
        fn instances_are_the_hand_written_kernels(body in float_expr()) {
            let generic = kernel(&body, "T");
            let instances = crate::generic::instances_of("T = [f32, f64]", &generic)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{generic}")))?;
            for ((label, item), t) in instances.iter().zip(["f32", "f64"]) {
                prop_assert_eq!(label, &format!("T = {t}"));
                let inst = cuda_or_error(&quote::quote!(#item).to_string());
                let hand = cuda_or_error(&kernel(&body, t));
                prop_assert!(hand.is_ok(), "{:?}\n{}", hand, kernel(&body, t));
                prop_assert_eq!(inst, hand, "{}", generic);
            }
        }
    }
}

/// The CUDA functor of the flattened 2-D kernel of `map`.
fn cuda_2d(map: &str) -> String {
    let k = flattened_2d(map, "|a, b| a + b");
    let access = crate::analyse::kernel(&k);
    crate::emit_cuda::kernel(&k, &access)
}

#[test]
fn gathers_at_base_plus_column_load_through_the_rows_address() {
    // A kernel the validation covers: each gather at `base + j` is `ld_col`
    // with `base` and `j` apart (either order), the loads at the fine-task
    // index `ld_k` as ever, and a load the same for every column `ld`.
    for (map, gathers) in [
        ("val[e] * x[col[e] as usize * k as usize + j]", 1),
        ("val[e] * x[j + (k as usize) * col[e] as usize]", 1),
        (
            "x[col[e] as usize * k as usize] / val[e] + x[col[e] as usize * k as usize + j] / val[e]",
            1,
        ),
    ] {
        let cuda = cuda_2d(map);
        assert_eq!(cuda.matches("warpfit::ld_col(wf_p.x, ").count(), gathers, "{map}");
        assert!(cuda.contains("warpfit::ld_k(wf_p.col, "), "{map}");
        assert!(cuda.contains(", wf_c.j, 3, wf_f)"), "{map}: {cuda}");
    }
    let same_for_every_column = cuda_2d(
        "x[col[e] as usize * k as usize] / val[e] + x[col[e] as usize * k as usize + j] / val[e]",
    );
    assert!(same_for_every_column.contains("warpfit::ld(wf_p.x, "));
    // Kernels the rule refuses keep every gather a plain checked `ld`.
    for map in [
        "x[col[e] as usize * k as usize + 2 * j]",
        "if j % 2 == 0 { x[col[e] as usize * k as usize + j] } else { 0.0 }",
    ] {
        let cuda = cuda_2d(map);
        assert!(!cuda.contains("ld_col"), "{map}");
        assert!(cuda.contains("warpfit::ld(wf_p.x, "), "{map}");
    }
}

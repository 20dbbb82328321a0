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
            crate::nested::expand(item).map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
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

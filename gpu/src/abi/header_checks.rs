//! Checks that the host mirror in `abi` and the device library's headers
//! (`gpu/cuda/*.cuh`) agree: the device side of each mirror is read from
//! the headers NVRTC compiles.

use super::*;
use std::collections::HashMap;

fn header(name: &str) -> &'static str {
    crate::compile::LIBRARY_HEADERS
        .iter()
        .find(|(n, _)| *n == format!("warpfit/{name}"))
        .map(|(_, s)| *s)
        .unwrap_or_else(|| panic!("no header {name}"))
}

/// `constexpr int NAME = VALUE;` of every header, VALUE a literal or an
/// earlier such constant.
fn int_constants() -> HashMap<String, i64> {
    let mut out = HashMap::new();
    for (_, text) in crate::compile::LIBRARY_HEADERS {
        for line in text.lines() {
            let line = line.trim();
            let Some(rest) = line
                .strip_prefix("constexpr int ")
                .or_else(|| line.strip_prefix("constexpr uint32_t "))
            else {
                continue;
            };
            let Some((name, value)) = rest.trim_end_matches(';').split_once(" = ") else {
                continue;
            };
            let value = value.trim();
            let v = value.parse().ok().or_else(|| out.get(value).copied());
            if let Some(v) = v {
                out.insert(name.trim().to_string(), v);
            }
        }
    }
    out
}

/// Field names of `struct NAME { ... };` in `text`, in order.
fn struct_fields(text: &str, name: &str) -> Vec<String> {
    let start = text
        .find(&format!("struct {name} {{"))
        .unwrap_or_else(|| panic!("struct {name} not found"));
    let body = &text[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("};").unwrap()];
    body.lines()
        .map(|l| l.split("//").next().unwrap().trim())
        .filter(|l| l.ends_with(';'))
        .map(|l| {
            l.trim_end_matches(';')
                .rsplit(|c: char| c.is_whitespace() || c == '*')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn block_warp_and_merge_widths_match_the_headers() {
    let c = int_constants();
    assert_eq!(c["WARP"], i64::from(WARP));
    assert_eq!(c["BLOCK"], i64::from(BLOCK));
    assert_eq!(c["MERGE_LANES"], MERGE_LANES as i64);
    assert_eq!(c["MERGE_LANES_WIDE"], MERGE_LANES_WIDE as i64);
    assert_eq!(c["MERGE_LANES_BLOCK"], MERGE_LANES_BLOCK as i64);
    assert_eq!(c["LEVEL_GROUP"], i64::from(LEVEL_GROUP));
    assert_eq!(c["LEVEL_GROWTH"], i64::from(LEVEL_GROWTH));
    assert_eq!(c["ROWS_GROUP"], i64::from(ROWS_GROUP));
    assert!(header("levels.cuh").contains("LEVEL_TILE = BLOCK / LEVEL_GROUP;"));
    // The level order's control words, as the host reads them.
    use crate::engines::level_order as lo;
    assert_eq!(c["CTL_WORDS"], lo::CTL_WORDS as i64);
    let levels = header("levels.cuh");
    for (name, at) in [
        ("START", lo::CTL_START),
        ("END", lo::CTL_END),
        ("BAD", lo::CTL_BAD),
        ("WIDEST", lo::CTL_WIDEST),
        ("PROJECTED", lo::CTL_PROJECTED),
    ] {
        assert!(levels.contains(&format!("    {name} = {at}")), "{name}");
    }
    for (name, mode) in [
        ("CARRY_NONE", CarryMode::None),
        ("CARRY_FIRST", CarryMode::First),
        ("CARRY_MIDDLE", CarryMode::Middle),
        ("CARRY_LAST", CarryMode::Last),
    ] {
        assert_eq!(c[name], mode as i64, "{name}");
    }
    assert_eq!(CarryMode::of(0, 1), CarryMode::None);
    assert_eq!(CarryMode::of(0, 3), CarryMode::First);
    assert_eq!(CarryMode::of(1, 3), CarryMode::Middle);
    assert_eq!(CarryMode::of(2, 3), CarryMode::Last);
    // Each merge entry point instantiates the width the host sizes it by.
    let k = header("kernel.cuh");
    for (entry, lanes) in [
        (MERGE_ENTRY, "MERGE_LANES>"),
        (MERGE_WIDE_ENTRY, "MERGE_LANES_WIDE>"),
        (MERGE_BLOCK_ENTRY, "merge_block<K>"),
        (MERGE_COLUMNS_ENTRY, "merge_columns<K>"),
    ] {
        let at = k.find(&format!("{entry}(")).unwrap();
        let body = &k[at..at + k[at..].find('}').unwrap()];
        assert!(body.contains(lanes), "{entry}: {body}");
    }
}

#[test]
fn the_minimum_architecture_matches_the_headers() {
    let want = format!("__CUDA_ARCH__ < {}{}0", MIN_ARCH.major, MIN_ARCH.minor);
    let t = header("types.cuh");
    let guard = t
        .lines()
        .position(|l| l.contains(&want))
        .unwrap_or_else(|| panic!("types.cuh has no `{want}` guard"));
    assert!(t.lines().nth(guard + 1).unwrap().contains("#error"));
    let pdl = format!("__CUDA_ARCH__ >= {}{}0", PDL_ARCH.major, PDL_ARCH.minor);
    assert!(header("pdl.cuh").contains(&pdl), "pdl.cuh: no `{pdl}`");
}

#[test]
fn entry_points_match_the_headers() {
    let k = header("kernel.cuh");
    // `#define WARPFIT_ENTRY_POINT_wf_cte_list(K) WARPFIT_ENTRY_(K, wf_cte_list, warpfit::Cte, warpfit::TaskList)`
    let mut defined = Vec::new();
    for l in k.lines() {
        let Some(rest) = l.trim().strip_prefix("#define WARPFIT_ENTRY_POINT_") else {
            continue;
        };
        let (name, body) = rest.split_once("(K)").unwrap();
        let body = body.trim();
        if let Some(args) = body.strip_prefix("WARPFIT_ENTRY_(K, ") {
            let parts: Vec<&str> = args.trim_end_matches(')').split(", ").collect();
            assert_eq!(parts[0], name, "{l}");
            let strip = |p: &str| p.trim_start_matches("warpfit::").to_string();
            // A 2-D launch's validation and the fold it lets run unchecked.
            let validation = match (strip(parts[1]).as_str(), strip(parts[2]).as_str()) {
                ("ValidateEnds", "RowEnds") => Some(VALIDATE_ALL_ENTRY),
                ("ValidateEnds", "PieceEnds") => Some(VALIDATE_COLUMNS_ENTRY),
                ("ThreadPairValidated", "AllTasks") => Some(PAIR_ALL_ENTRY),
                ("ThreadPairValidated", "ColumnList") => Some(PAIR_COLUMNS_ENTRY),
                ("ThreadStrided", "AllTasks") => Some(RECHECK_ALL_ENTRY),
                ("ThreadStrided", "ColumnList") => Some(RECHECK_COLUMNS_ENTRY),
                _ => None,
            };
            if let Some(entry) = validation {
                assert_eq!(entry, name, "{l}");
                assert!(
                    k.contains(&format!("    WARPFIT_ENTRY_POINT_{name}(K)")),
                    "WARPFIT_ENTRY_POINTS does not list {name}"
                );
                defined.push(name.to_string());
                continue;
            }
            let d = match parts[1].trim_start_matches("warpfit::") {
                "Thread" => Decomposition::Thread,
                "Cte" => Decomposition::Cte,
                t => Decomposition::SubWarp(
                    t.strip_prefix("SubWarp<")
                        .and_then(|w| w.strip_suffix('>'))
                        .and_then(|w| w.parse().ok())
                        .unwrap_or_else(|| panic!("unknown decomposition {t}")),
                ),
            };
            let source = match parts[2].trim_start_matches("warpfit::") {
                "AllTasks" => TaskSource::All,
                "TaskList" => TaskSource::List,
                "QueuedTaskList" => TaskSource::Queue,
                "FrontierTasks" => TaskSource::Frontier,
                "ColumnList" => TaskSource::Columns,
                other => panic!("unknown task source {other}"),
            };
            assert_eq!(entry_point(d, source).unwrap(), name, "{d} {source:?}");
        } else {
            // Hand-written entry points (merge, sizes, donation, the column
            // list with its own register bound): a multi-line body that
            // defines the function under the macro's name.
            assert!(
                [
                    entry_point(Decomposition::Thread, TaskSource::Columns).unwrap(),
                    MERGE_ENTRY,
                    MERGE_WIDE_ENTRY,
                    MERGE_BLOCK_ENTRY,
                    MERGE_COLUMNS_ENTRY,
                    SIZES_ENTRY,
                    DONATED_ENTRY
                ]
                .contains(&name),
                "unexpected entry point macro {name}"
            );
            assert!(
                k.contains(&format!(" {name}(const K::params_t")),
                "kernel.cuh defines no entry point {name}"
            );
        }
        // Every entry point is also in the whole-module list.
        assert!(
            k.contains(&format!("    WARPFIT_ENTRY_POINT_{name}(K)")),
            "WARPFIT_ENTRY_POINTS does not list {name}"
        );
        defined.push(name.to_string());
    }
    for d in Decomposition::ALL {
        for source in [TaskSource::All, TaskSource::List, TaskSource::Frontier] {
            let name = entry_point(d, source).unwrap();
            assert!(defined.iter().any(|n| n == name), "no macro for {name}");
        }
    }
    let mut listed: Vec<String> = ENTRY_POINTS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    defined.sort();
    assert_eq!(listed, defined);
    assert!(entry_point(Decomposition::SubWarp(3), TaskSource::All).is_err());
    // The queue is CTE's alone.
    assert_eq!(
        entry_point(Decomposition::Cte, TaskSource::Queue).unwrap(),
        "wf_cte_queue"
    );
    let e = entry_point(Decomposition::Thread, TaskSource::Queue).unwrap_err();
    assert!(e.to_string().contains("CTE decomposition only"), "{e}");
    // A column list is one thread per (piece, column).
    assert_eq!(
        entry_point(Decomposition::Thread, TaskSource::Columns).unwrap(),
        "wf_thread_columns"
    );
    let e = entry_point(Decomposition::Cte, TaskSource::Columns).unwrap_err();
    assert!(e.to_string().contains("one thread per"), "{e}");
}

#[test]
fn the_column_list_entry_runs_one_thread_per_piece_and_column() {
    let k = header("kernel.cuh");
    let at = k.find(" wf_thread_columns(const K::params_t").unwrap();
    let body = &k[at..at + k[at..].find('}').unwrap()];
    assert!(
        body.contains("nested_reduce<K, warpfit::Thread, warpfit::ColumnList>"),
        "{body}"
    );
}

#[test]
fn launch_args_and_fault_record_match_the_device_structs() {
    let l = struct_fields(header("task_source.cuh"), "LaunchArgs");
    assert_eq!(
        l,
        [
            "n_items",
            "segments",
            "whole",
            "scratch",
            "present",
            "split",
            "split_segments",
            "fault",
            "sizes",
            "cte_serial_max",
            "n_warps",
            "warp_first",
            "warp_task",
            "carry",
            "carry_mode",
            "flags",
            "queue",
            "queue_chunk",
            "queue_pad",
            "frontier",
            "frontier_count",
            "donated",
            "donation",
            "donated_bytes",
            "donate_min",
            "donate_pad",
            "columns",
            "column_slot",
            "gate",
            "gate_when",
            "validate_lanes"
        ]
    );
    // 9 pointers/counts + 2 u32 + 3 pointers + 2 u32 + 1 pointer + 2 u32
    // + 5 pointers/counts + 2 u32 + 3 pointers/counts + 2 u32.
    assert_eq!(std::mem::size_of::<LaunchArgs>(), 208);
    let t = header("task_source.cuh");
    for (name, gate) in [
        ("GATE_NONE", Gate::None),
        ("GATE_IF_VALID", Gate::IfValid),
        ("GATE_IF_INVALID", Gate::IfInvalid),
    ] {
        assert!(
            t.contains(&format!("constexpr uint32_t {name} = {};", gate as u32)),
            "{name}"
        );
    }
    assert!(header("task_source.cuh").contains(&format!(
        "constexpr uint32_t LIST_TRUSTED = {LIST_TRUSTED};"
    )));
    let f = struct_fields(header("fault.cuh"), "FaultRecord");
    assert_eq!(
        f,
        ["claimed", "kind", "array", "pad", "task", "index", "aux0", "aux1"]
    );
    assert_eq!(std::mem::size_of::<FaultRecord>(), 48);
    assert_eq!(FaultRecord::WORDS, 6);
}

#[test]
fn worklist_ref_and_push_variants_match_the_headers() {
    let w = header("worklist.cuh");
    assert_eq!(
        struct_fields(w, "WorklistRef"),
        ["items", "count", "spill", "seen", "capacity", "universe", "variant", "pad"]
    );
    assert_eq!(std::mem::size_of::<WorklistRef>(), 56);
    let r = WorklistRef {
        items: 1,
        count: 2,
        spill: 3,
        seen: 4,
        capacity: 5,
        universe: 6,
        variant: 7,
        pad: 0,
    };
    // SAFETY: plain `#[repr(C)]` data of the size checked above.
    let raw: [u8; 56] = unsafe { std::mem::transmute(r) };
    assert_eq!(r.to_ne_bytes(), raw);
    let c = int_constants();
    for (name, v) in [
        ("PUSH_ATOMIC", PushVariant::Atomic),
        ("PUSH_WARP", PushVariant::Warp),
        ("PUSH_BLOCK", PushVariant::Block),
    ] {
        assert_eq!(c[name], v as i64, "{name}");
        assert_eq!(v.name().parse::<PushVariant>().unwrap(), v);
    }
    assert!("fast".parse::<PushVariant>().is_err());
    // The library's own entry points are defined by its macro.
    for ep in crate::compile::WORKLIST_ENTRY_POINTS {
        assert!(
            w.contains(&format!(" {ep}(const warpfit::WorklistRef w")),
            "{ep}"
        );
    }
}

#[test]
fn fault_kinds_match_the_headers() {
    let f = header("fault.cuh");
    for (kind, name) in [
        (FaultKind::Index, "FAULT_INDEX"),
        (FaultKind::DivisionByZero, "FAULT_DIV_ZERO"),
        (FaultKind::Segment, "FAULT_SEGMENT"),
    ] {
        assert!(
            f.contains(&format!("{name} = {},", kind.code())),
            "{name} is not {} in fault.cuh",
            kind.code()
        );
        assert_eq!(FaultKind::from_code(kind.code()), Some(kind));
    }
    assert!(f.contains("FAULT_NONE = 0,"));
    assert_eq!(FaultKind::from_code(0), None);
    assert_eq!(FaultKind::from_code(4), None);
}

#[test]
fn fault_words_unpack_as_the_device_wrote_them() {
    let r = FaultRecord::from_words(&[(2u64 << 32) | 1, 5, 7, 9, 11, 13]);
    assert_eq!(
        r,
        FaultRecord {
            claimed: 1,
            kind: 2,
            array: 5,
            pad: 0,
            task: 7,
            index: 9,
            aux0: 11,
            aux1: 13
        }
    );
}

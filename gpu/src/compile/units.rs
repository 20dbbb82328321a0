//! The device library's sources as NVRTC sees them: the headers under their
//! include names, the translation unit of a kernel or of some of its entry
//! points, and the units of the library's own kernels (layouts, worklists,
//! rounds, level order), each with the entry points it defines.

use crate::spec::KernelSpec;
use warpfit_runtime::{Error, Result};

/// The device library, as NVRTC include names and contents.
pub const LIBRARY_HEADERS: &[(&str, &str)] = &[
    ("warpfit/types.cuh", include_str!("../../cuda/types.cuh")),
    ("warpfit/fault.cuh", include_str!("../../cuda/fault.cuh")),
    (
        "warpfit/rust_ops.cuh",
        include_str!("../../cuda/rust_ops.cuh"),
    ),
    ("warpfit/index.cuh", include_str!("../../cuda/index.cuh")),
    ("warpfit/warp.cuh", include_str!("../../cuda/warp.cuh")),
    ("warpfit/tuple.cuh", include_str!("../../cuda/tuple.cuh")),
    ("warpfit/pdl.cuh", include_str!("../../cuda/pdl.cuh")),
    (
        "warpfit/task_source.cuh",
        include_str!("../../cuda/task_source.cuh"),
    ),
    ("warpfit/thread.cuh", include_str!("../../cuda/thread.cuh")),
    (
        "warpfit/subwarp.cuh",
        include_str!("../../cuda/subwarp.cuh"),
    ),
    ("warpfit/cte.cuh", include_str!("../../cuda/cte.cuh")),
    ("warpfit/merge.cuh", include_str!("../../cuda/merge.cuh")),
    ("warpfit/kernel.cuh", include_str!("../../cuda/kernel.cuh")),
    ("warpfit/layout.cuh", include_str!("../../cuda/layout.cuh")),
    ("warpfit/atomic.cuh", include_str!("../../cuda/atomic.cuh")),
    (
        "warpfit/worklist.cuh",
        include_str!("../../cuda/worklist.cuh"),
    ),
    ("warpfit/rounds.cuh", include_str!("../../cuda/rounds.cuh")),
    ("warpfit/scan.cuh", include_str!("../../cuda/scan.cuh")),
    ("warpfit/levels.cuh", include_str!("../../cuda/levels.cuh")),
    ("warpfit/plan.cuh", include_str!("../../cuda/plan.cuh")),
    (
        "warpfit/task_cut.cuh",
        include_str!("../../cuda/task_cut.cuh"),
    ),
    (
        "warpfit/cte_for_each.cuh",
        include_str!("../../cuda/cte_for_each.cuh"),
    ),
];

/// The entry points of the worklist library (`worklist.cuh`): growth and
/// clearing of device worklists, compiled once per device
/// ([`worklist_unit`]).
pub const WORKLIST_ENTRY_POINTS: &[&str] = &["wf_unspill_count", "wf_unspill", "wf_clear"];

/// Source of the worklist library's module: every [`WORKLIST_ENTRY_POINTS`].
pub fn worklist_unit() -> String {
    "#include \"warpfit/worklist.cuh\"\nWARPFIT_WORKLIST_ENTRY_POINTS\n".to_string()
}

/// The entry points of the round backend's kernels (`rounds.cuh`): the
/// bookkeeping around a driver's rounds on CUDA (`CudaRounds`), compiled
/// once per device ([`rounds_unit`]).
pub const ROUNDS_ENTRY_POINTS: &[&str] = &[
    "wf_round_begin",
    "wf_round_finish",
    "wf_round_resume",
    "wf_round_iota",
    "wf_round_split_f32",
    "wf_round_min_key_f32",
    "wf_round_split_u32",
    "wf_round_min_key_u32",
];

/// Source of the round backend's module: every [`ROUNDS_ENTRY_POINTS`].
pub fn rounds_unit() -> String {
    "#include \"warpfit/rounds.cuh\"\nWARPFIT_ROUNDS_ENTRY_POINTS\n".to_string()
}

/// The entry points of the layout library (`layout.cuh`): no kernel of the
/// user's, compiled once per device ([`layout_unit`]).
pub const LAYOUT_ENTRY_POINTS: &[&str] = &[
    "wf_gather_1",
    "wf_gather_2",
    "wf_gather_4",
    "wf_gather_8",
    "wf_copy_ranges_1",
    "wf_copy_ranges_2",
    "wf_copy_ranges_4",
    "wf_copy_ranges_8",
    "wf_delta16_4",
    "wf_delta16_8",
];

/// Source of the layout library's module: every [`LAYOUT_ENTRY_POINTS`].
pub fn layout_unit() -> String {
    "#include \"warpfit/layout.cuh\"\nWARPFIT_LAYOUT_ENTRY_POINTS\n".to_string()
}

/// The entry points of the level order's library (`levels.cuh`): a
/// breadth-first order made on the device and the renumbering by it,
/// compiled once per device ([`levels_unit`]).
pub const LEVELS_ENTRY_POINTS: &[&str] = &[
    "wf_levels_reset",
    "wf_levels_start",
    "wf_levels_claim",
    "wf_levels_round",
    "wf_renumber_lengths",
    "wf_scan_carry",
    "wf_renumber_offsets",
    "wf_renumber_rows_1",
    "wf_renumber_rows_2",
    "wf_renumber_rows_4",
    "wf_renumber_rows_8",
];

/// The entry points of the device planner's library (`plan.cuh`): column
/// blocks, scans, renumbering permutations, the locality sample, the
/// content digest and a kept level order's check, compiled once per device
/// ([`plan_unit`]).
pub const PLAN_ENTRY_POINTS: &[&str] = &[
    "wf_cb_count",
    "wf_cb_place",
    "wf_scan_reduce",
    "wf_scan_sums",
    "wf_scan_apply",
    "wf_rows_lengths",
    "wf_rows_perm",
    "wf_locality",
    "wf_hash_words",
    "wf_invert_order",
    "wf_check_inverse",
];

/// Source of the device planner's module: every [`PLAN_ENTRY_POINTS`].
pub fn plan_unit() -> String {
    "#include \"warpfit/plan.cuh\"\nWARPFIT_PLAN_ENTRY_POINTS\n".to_string()
}

/// The entry points of the task cut's library (`task_cut.cuh`): a
/// launch's task list cut and its CTE warps packed on the device, with the
/// scan they need, compiled once per device ([`task_cut_unit`]).
pub const TASK_CUT_ENTRY_POINTS: &[&str] = &[
    "wf_cut_count",
    "wf_cut_write",
    "wf_pack_count",
    "wf_pack_write",
    "wf_pack_runs",
    "wf_cut_scan_reduce",
    "wf_cut_scan_sums",
    "wf_cut_scan_apply",
];

/// Source of the task cut's module: every [`TASK_CUT_ENTRY_POINTS`].
pub fn task_cut_unit() -> String {
    "#include \"warpfit/task_cut.cuh\"\nWARPFIT_TASK_CUT_ENTRY_POINTS\n".to_string()
}

/// Source of the level order's module: every [`LEVELS_ENTRY_POINTS`].
pub fn levels_unit() -> String {
    "#include \"warpfit/levels.cuh\"\nWARPFIT_LEVELS_ENTRY_POINTS\n".to_string()
}
/// Source of the entry points of `spec`: the device library include, the
/// kernel's device functions and functor, and the instantiation line.
pub fn translation_unit(spec: &KernelSpec) -> String {
    format!(
        "{}#include \"warpfit/kernel.cuh\"\n{}\nWARPFIT_ENTRY_POINTS(wf_{}::Kernel)\n",
        spec.index_encoding.unit_prefix(),
        spec.assembled_source(),
        spec.name
    )
}

/// Source of only `entry_points` of `spec` (names from
/// [`crate::abi::ENTRY_POINTS`]): what one module of a launch is compiled from.
pub fn entry_point_unit(spec: &KernelSpec, entry_points: &[&str]) -> Result<String> {
    let mut tu = format!(
        "{}#include \"warpfit/kernel.cuh\"\n{}\n",
        spec.index_encoding.unit_prefix(),
        spec.assembled_source()
    );
    for ep in entry_points {
        if !crate::abi::ENTRY_POINTS.contains(ep) {
            return Err(Error::invalid(format!(
                "kernel `{}`: `{ep}` is not an entry point of the device library",
                spec.name
            )));
        }
        tu.push_str(&format!(
            "WARPFIT_ENTRY_POINT_{ep}(wf_{}::Kernel)\n",
            spec.name
        ));
    }
    Ok(tu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn translation_unit_instantiates_the_kernel_namespace() {
        static SPEC: KernelSpec = KernelSpec {
            name: "k",
            cuda_source: "namespace wf_k {}",
            device_fns: &[],
            params: &[],
            acc: crate::spec::AccType::Scalar(crate::spec::ScalarType::F32),
            elementwise: false,
            donates: false,
            index_encoding: crate::spec::IndexEncoding::Plain,
            columns: None,
            checks_at_end_columns: false,
        };
        let tu = translation_unit(&SPEC);
        assert!(tu.starts_with("#include \"warpfit/kernel.cuh\"\n"));
        assert!(tu.contains("namespace wf_k {}"));
        assert!(tu
            .trim_end()
            .ends_with("WARPFIT_ENTRY_POINTS(wf_k::Kernel)"));
    }

    #[test]
    fn an_entry_point_unit_instantiates_only_the_entry_points_asked_for() {
        static SPEC: KernelSpec = KernelSpec {
            name: "k",
            cuda_source: "namespace wf_k {}",
            device_fns: &[],
            params: &[],
            acc: crate::spec::AccType::Scalar(crate::spec::ScalarType::F32),
            elementwise: false,
            donates: false,
            index_encoding: crate::spec::IndexEncoding::Plain,
            columns: None,
            checks_at_end_columns: false,
        };
        let tu = entry_point_unit(&SPEC, &["wf_sizes", "wf_cte_list"]).unwrap();
        assert!(tu.starts_with("#include \"warpfit/kernel.cuh\"\n"));
        assert!(tu.ends_with(
            "WARPFIT_ENTRY_POINT_wf_sizes(wf_k::Kernel)\n\
             WARPFIT_ENTRY_POINT_wf_cte_list(wf_k::Kernel)\n"
        ));
        assert!(!tu.contains("WARPFIT_ENTRY_POINTS"));
        // Every entry point has its macro in the device library.
        let kernel_cuh = include_str!("../../cuda/kernel.cuh");
        for ep in crate::abi::ENTRY_POINTS {
            assert!(
                kernel_cuh.contains(&format!("#define WARPFIT_ENTRY_POINT_{ep}(K)")),
                "{ep}"
            );
        }
    }

    #[test]
    fn the_layout_unit_defines_every_layout_entry_point() {
        let h = LIBRARY_HEADERS
            .iter()
            .find(|(n, _)| *n == "warpfit/layout.cuh")
            .unwrap()
            .1;
        for ep in LAYOUT_ENTRY_POINTS {
            let (kind, width) = ep.trim_start_matches("wf_").rsplit_once('_').unwrap();
            assert!(h.contains(&format!(" wf_{kind}_##W(")), "{ep}");
            assert!(
                h.contains(&format!(
                    "WARPFIT_LAYOUT_ENTRY_POINTS_(uint{}_t, {width})",
                    width.parse::<u32>().unwrap() * 8
                )),
                "{ep}"
            );
        }
        assert!(layout_unit().contains("WARPFIT_LAYOUT_ENTRY_POINTS"));
    }

    #[test]
    fn every_library_header_is_listed_once() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| format!("warpfit/{}", e.unwrap().file_name().to_string_lossy()))
            .filter(|n| n.ends_with(".cuh"))
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = LIBRARY_HEADERS.iter().map(|(n, _)| n.to_string()).collect();
        listed.sort();
        assert_eq!(on_disk, listed);
    }
}

//! How many lanes the merge of split tasks gives each task
//! ([`MergeWidth`]), from the most pieces one task has.

use crate::abi::{
    MERGE_BLOCK_ENTRY, MERGE_ENTRY, MERGE_LANES, MERGE_LANES_BLOCK, MERGE_LANES_WIDE,
    MERGE_WIDE_ENTRY,
};
use crate::launch::split_policy::{BLOCK_MERGE_PIECES, WIDE_MERGE_PIECES};
use warpfit_runtime::TaskList;

/// How many lanes the merge of a task list's split tasks gives each task,
/// from the most pieces one task has: a lane folds a contiguous chunk of its
/// task's partials, a chain of dependent loads, so a task of many pieces
/// wants many lanes, and a list of many small split tasks few each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum MergeWidth {
    /// `wf_merge`: [`MERGE_LANES`] lanes per task.
    Narrow,
    /// `wf_merge_wide`: a warp per task (past [`WIDE_MERGE_PIECES`]).
    Wide,
    /// `wf_merge_block`: a block per task (past [`BLOCK_MERGE_PIECES`]).
    Block,
}

impl MergeWidth {
    /// The width for a list whose largest split task has `most_pieces`.
    pub(crate) fn for_pieces(most_pieces: u32) -> Self {
        if most_pieces > BLOCK_MERGE_PIECES {
            MergeWidth::Block
        } else if most_pieces > WIDE_MERGE_PIECES {
            MergeWidth::Wide
        } else {
            MergeWidth::Narrow
        }
    }

    /// The width a task list's merge needs.
    pub(crate) fn of_list(list: &TaskList) -> Self {
        Self::for_pieces(
            list.split_tasks()
                .iter()
                .map(|t| t.count)
                .max()
                .unwrap_or(0),
        )
    }

    /// The merge's entry point and its lanes per split task.
    pub(crate) fn entry(self) -> (&'static str, u64) {
        match self {
            MergeWidth::Narrow => (MERGE_ENTRY, MERGE_LANES),
            MergeWidth::Wide => (MERGE_WIDE_ENTRY, MERGE_LANES_WIDE),
            MergeWidth::Block => (MERGE_BLOCK_ENTRY, MERGE_LANES_BLOCK),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wide_merge_runs_past_64_pieces_and_the_block_merge_past_512() {
        let width = |pieces| MergeWidth::of_list(&TaskList::chunked(&[0, 3, pieces], 1).unwrap());
        assert_eq!(width(64 + 3), MergeWidth::Narrow);
        assert_eq!(width(65 + 3), MergeWidth::Wide);
        assert_eq!(width(512 + 3), MergeWidth::Wide);
        assert_eq!(width(513 + 3), MergeWidth::Block);
        assert_eq!(
            MergeWidth::of_list(&TaskList::chunked(&[0, 9], 10).unwrap()),
            MergeWidth::Narrow
        );
    }
}

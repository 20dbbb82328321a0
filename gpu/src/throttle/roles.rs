//! Which of a kernel's parameters shape its work ([`ThrottleRoles`]), as
//! `#[throttled]` derives them from the kernel's IR.

/// Which parameters shape the work (generated `THROTTLE_ROLES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleRoles {
    /// The range array: task `t`'s fine tasks are `range[t]..range[t + 1]`.
    pub range: usize,
    /// The arrays read only at the fine-task index, sorted.
    pub fine: &'static [usize],
    /// The arrays the map gathers from, all at one index and of one length
    /// (passed to each launch; a cache-fit partition holds an element of
    /// each), sorted and never empty.
    pub gathered: &'static [usize],
    /// Whether a gathered array is also read at the task index: a remapped
    /// plan then needs tasks and gathered elements renumbered by one
    /// permutation, so as many of each.
    pub gathered_at_task: bool,
    /// The fine array the gathered arrays are read through, when a remapped
    /// plan can run the kernel (`None`: see `remap_refused`).
    pub index: Option<usize>,
    /// The `u32` fine array the gathered array is read through, remappable
    /// or not (`None`: read otherwise): what plans made on the device
    /// group each task's fine tasks by.
    pub gather_index: Option<usize>,
    /// Per-launch arrays read and written at the task index only: a
    /// remapped plan permutes them by the task permutation.
    pub task_indexed: &'static [usize],
    /// Of those, the outputs every task overwrites and nothing reads: a
    /// remapped launch in the caller's numbering permutes them back after
    /// the run but not into the plan's order before it.
    pub overwritten: &'static [usize],
    /// Why a remapped plan cannot run the kernel (empty when it can).
    pub remap_refused: &'static str,
}

impl ThrottleRoles {
    /// Whether parameter `i` is owned by the handle (given once, to
    /// `throttle`) rather than passed to each launch.
    pub fn shapes(&self, i: usize) -> bool {
        i == self.range || self.fine.contains(&i)
    }

    /// Whether a remapped schedule permutes per-launch parameter `i`.
    pub(crate) fn permuted(&self, i: usize) -> bool {
        self.gathered.contains(&i) || self.task_indexed.contains(&i)
    }

    /// The first gathered array, whose length the handle is given.
    pub(crate) fn first_gathered(&self) -> usize {
        self.gathered[0]
    }
}

/// The throttling roles of CSR SpMV (`y[row] = Σ val[k] * x[col[k]]`
/// over `row_ptr`'s range), as `#[throttled]` derives them for it, for the
/// crate's unit tests.
#[cfg(test)]
pub(crate) const SPMV_ROLES: ThrottleRoles = ThrottleRoles {
    range: 0,
    fine: &[1, 2],
    gathered: &[3],
    gathered_at_task: false,
    index: Some(1),
    gather_index: Some(1),
    task_indexed: &[4],
    overwritten: &[4],
    remap_refused: "",
};

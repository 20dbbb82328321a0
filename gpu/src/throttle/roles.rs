//! Which of a kernel's parameters shape its work ([`ThrottleRoles`]), as
//! `#[throttled]` derives them from the kernel's IR.

/// Which parameters shape the work (generated `THROTTLE_ROLES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleRoles {
    /// The range array: task `t`'s fine tasks are `range[t]..range[t + 1]`.
    pub range: usize,
    /// The arrays read only at the fine-task index, sorted.
    pub fine: &'static [usize],
    /// The array the map gathers from (passed to each launch).
    pub gathered: usize,
    /// The fine array the gathered array is read through, when a remapped
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
        i == self.gathered || self.task_indexed.contains(&i)
    }
}

/// The throttling roles of CSR SpMV (`y[row] = Σ val[k] * x[col[k]]`
/// over `row_ptr`'s range), as `#[throttled]` derives them for it, for the
/// crate's unit tests.
#[cfg(test)]
pub(crate) const SPMV_ROLES: ThrottleRoles = ThrottleRoles {
    range: 0,
    fine: &[1, 2],
    gathered: 3,
    index: Some(1),
    gather_index: Some(1),
    task_indexed: &[4],
    overwritten: &[4],
    remap_refused: "",
};

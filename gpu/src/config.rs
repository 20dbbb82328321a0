//! The options of a launch: decomposition, split of long tasks, and the
//! serial-fallback bound of CTE.

use warpfit_runtime::{Error, Result};

/// How a kernel's fine tasks are spread over GPU threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Decomposition {
    /// Collaborative task engagement: a warp expands its 32 tasks' fine tasks together.
    ///
    /// A task's fold keeps its fine tasks' order but regroups it (an
    /// associative operator gives the twin's result up to float rounding),
    /// except where the reduce operator commutes as the macro sees it
    /// (`+ * & | ^`, `min`/`max` of the two operands; `docs/codegen.md`):
    /// rounds of 32 fine tasks that lie inside one task then fold lane by
    /// lane, without a scan.
    #[default]
    Cte,
    /// One task per thread (1D).
    Thread,
    /// `W` threads per task, `W` in {2, 4, 8, 16, 32}.
    SubWarp(u32),
}

impl Decomposition {
    /// Every decomposition, in the order benchmarks report them.
    pub const ALL: [Decomposition; 7] = [
        Decomposition::Thread,
        Decomposition::SubWarp(2),
        Decomposition::SubWarp(4),
        Decomposition::SubWarp(8),
        Decomposition::SubWarp(16),
        Decomposition::SubWarp(32),
        Decomposition::Cte,
    ];

    /// Threads that work on one item.
    pub(crate) fn threads_per_item(self) -> u64 {
        match self {
            Decomposition::SubWarp(w) => u64::from(w),
            _ => 1,
        }
    }
}

impl std::fmt::Display for Decomposition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decomposition::Cte => f.write_str("cte"),
            Decomposition::Thread => f.write_str("thread"),
            Decomposition::SubWarp(w) => write!(f, "subwarp:{w}"),
        }
    }
}

impl std::str::FromStr for Decomposition {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        // Any letter case, as every enumerated value warpfit parses.
        let lowered = s.trim().to_ascii_lowercase();
        match lowered.as_str() {
            "cte" => Ok(Decomposition::Cte),
            "thread" => Ok(Decomposition::Thread),
            _ => {
                let w = lowered
                    .strip_prefix("subwarp:")
                    .and_then(|w| w.parse::<u32>().ok())
                    .filter(|w| matches!(w, 2 | 4 | 8 | 16 | 32));
                w.map(Decomposition::SubWarp).ok_or_else(|| {
                    Error::invalid(format!(
                        "unknown decomposition `{}`: expected cte, thread or subwarp:W with W in 2, 4, 8, 16, 32",
                        warpfit_runtime::error::excerpt(s.as_bytes())
                    ))
                })
            }
        }
    }
}

/// How a CTE launch over all tasks bounds the work of one warp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Split {
    /// Choose from the tasks' size distribution and the GPU's size: warps
    /// packed by work when tasks are long, nothing split when they are
    /// short (the policy and its constants are in `launch/split_policy.rs`).
    #[default]
    Auto,
    /// Never split: every task runs whole.
    Never,
    /// Split every task into segments of at most this many fine tasks.
    Max(u32),
    /// Split tasks longer than this many fine tasks into segments of at
    /// most that, and give each warp consecutive segments of at most that
    /// many fine tasks in all (and at most 32 of them): tasks that fit run
    /// whole wherever they fall, so only the longest need a merge.
    Budget(u32),
    /// [`Split::Budget`]'s groups, run by a persistent grid whose warps
    /// take them from a device queue in order, several groups (about 8K
    /// fine tasks) per dequeue: no warp slot waits for the slowest warp of
    /// its block. Faster on some large memory-bound launches (RMAT
    /// renumbered by levels at a budget of 2048), slower on others (RMAT
    /// in its generated order at 512): the throttled handle's `auto` times
    /// it; [`Split::Auto`] never picks it.
    Queued(u32),
}

/// Options of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub decomposition: Decomposition,
    /// Splitting of long tasks for [`Decomposition::Cte`] over all tasks
    /// (task lists are launched as given).
    pub split: Split,
    /// CTE folds each lane's own task serially (the 1D order) in a warp
    /// whose longest task has at most this many fine tasks: a few serial
    /// steps cost less than expansion's shuffles, and there is nothing to
    /// balance (the 5-point grid). 0 always expands. With [`Split::Auto`],
    /// local gathers raise it in a large launch (to 64).
    pub cte_serial_max: u32,
}

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig {
            decomposition: Decomposition::Cte,
            split: Split::Auto,
            cte_serial_max: 8,
        }
    }
}

impl LaunchConfig {
    /// The default options with `decomposition`.
    pub fn new(decomposition: Decomposition) -> Self {
        LaunchConfig {
            decomposition,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decomposition_names_round_trip() {
        for d in Decomposition::ALL {
            assert_eq!(d.to_string().parse::<Decomposition>().unwrap(), d);
        }
        assert!("subwarp:3".parse::<Decomposition>().is_err());
        assert!("warp".parse::<Decomposition>().is_err());
    }
}

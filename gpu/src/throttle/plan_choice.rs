//! What a plan made on the device is ([`DevicePlan`]): the choice `auto`
//! by the model makes, the plan cache keeps and a caller may pin. The
//! plans themselves are built in `device_plan`.

use warpfit_runtime::schedule::ThrottlePolicy;

/// A plan the device makes, as the model chose it and the plan cache
/// keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DevicePlan {
    /// The unthrottled launch.
    Org,
    /// `cf` over `k` column blocks of the gathered array.
    ColumnBlocks {
        /// Blocks (2 to 32).
        k: usize,
    },
    /// `org_r` in the breadth-first level order.
    Levels,
}

impl DevicePlan {
    /// The policy its schedule runs.
    pub fn policy(self) -> ThrottlePolicy {
        match self {
            DevicePlan::Org => ThrottlePolicy::Org,
            DevicePlan::ColumnBlocks { .. } => ThrottlePolicy::Cf,
            DevicePlan::Levels => ThrottlePolicy::OrgR,
        }
    }
}

impl std::fmt::Display for DevicePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DevicePlan::Org => f.write_str("org"),
            DevicePlan::ColumnBlocks { k } => write!(f, "cf over {k} column blocks"),
            DevicePlan::Levels => f.write_str("org_r in the level order"),
        }
    }
}

//! What the driver test suites share: every `--driver` choice of an app,
//! and the source vertex of the largest degree.

use warpfit::apps::{DrivenApp, DriverChoice, OrderChoice};
use warpfit::runtime::sparse::Csr;

/// Every driver choice for `app` (sssp adds near-far, default and narrow).
pub fn drivers(app: DrivenApp) -> Vec<DriverChoice> {
    let mut d = vec![
        DriverChoice::Topo,
        DriverChoice::TopoRounds,
        DriverChoice::Data(None),
        DriverChoice::Data(Some(OrderChoice::Fifo)),
        DriverChoice::Hybrid {
            up: None,
            down: None,
        },
        DriverChoice::Hybrid {
            up: Some(0.01),
            down: Some(0.001),
        },
        DriverChoice::Auto,
    ];
    if app == DrivenApp::Sssp {
        d.push(DriverChoice::Data(Some(OrderChoice::NearFar(None))));
        d.push(DriverChoice::Data(Some(OrderChoice::NearFar(Some(0.05)))));
    }
    d
}

/// A vertex of the largest degree.
pub fn hub(a: &Csr<f32>) -> usize {
    (0..a.nrows())
        .max_by_key(|&v| a.row_range(v).len())
        .unwrap_or(0)
}

//! `warpfit run mst`: Borůvka's minimum spanning forest, checked against
//! Kruskal's with `--check`.

use super::{write_output, AppRun, Outcome};
use std::time::{Duration, Instant};
use warpfit::apps::{self, IterationTimes};
use warpfit::runtime::Csr;
use warpfit::Result;

/// mst repetitions without `--iters`.
const MST_ITERS: usize = 3;

impl AppRun<'_> {
    /// Borůvka's minimum spanning forest, `--iters` times (the median
    /// reported); with `--check` against Kruskal's on one CPU thread.
    pub(super) fn mst(self, a: &Csr<f32>, read: Duration) -> Result<Outcome> {
        let device = &self.device;
        let backend = device.backend_name();
        let graph_start = Instant::now();
        let g = apps::MstGraph::from_matrix(a)?;
        let graph = graph_start.elapsed();
        let repeats = self.iters.unwrap_or(MST_ITERS);
        let mut times = IterationTimes::default();
        let mut setup = graph;
        let mut forest = None;
        for _ in 0..repeats {
            let f = apps::mst_of(device, &self.config, &g)?;
            times.push(f.solve);
            setup += f.setup;
            forest = Some(f);
        }
        let f = forest.expect("at least one repetition");
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let median = times.median().unwrap_or_default();
        say!(
            "mst: {} edges of total weight {}, {} trees, {} rounds; solve median {:.3} ms over {repeats} runs, first {:.3} ms ({backend})",
            f.edges.len(),
            f.weight,
            f.trees,
            f.rounds,
            ms(median),
            ms(times.first().unwrap_or_default())
        );
        say!(
            "rounds: vertices with an edge leaving their component {:?}; scanned {:?}",
            f.active,
            f.scanned
        );
        say!(
            "timing: read {:.1} ms; graph and set-up {:.1} ms",
            ms(read),
            ms(setup)
        );
        let mut outcome = Outcome::Done;
        if self.args.check {
            let start = Instant::now();
            let mut want = warpfit::runtime::reference::kruskal(a)?;
            let kruskal = start.elapsed();
            want.sort_unstable_by_key(|&(u, v, _)| (u, v));
            let same = want == f.edges;
            say!(
                "check: Kruskal's forest (one CPU thread) in {:.1} ms, {:.1}x the median solve; {}",
                ms(kruskal),
                kruskal.as_secs_f64() / median.as_secs_f64().max(1e-9),
                if same {
                    "the same edges"
                } else {
                    "DIFFERENT edges"
                }
            );
            if !same {
                let first = want.iter().zip(&f.edges).position(|(x, y)| x != y);
                outcome = Outcome::Mismatch(format!(
                    "the forest has {} edges, Kruskal's {}; first difference at edge {}",
                    f.edges.len(),
                    want.len(),
                    first.unwrap_or(want.len().min(f.edges.len()))
                ));
            }
        }
        write_output(
            self.output,
            f.edges.iter().map(|&(u, v, w)| format!("{u} {v} {w}")),
        )?;
        Ok(outcome)
    }
}

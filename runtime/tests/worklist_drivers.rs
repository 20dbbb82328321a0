//! The worklist drivers on the CPU backend: every strategy, with kernels
//! written in plain Rust over `Atomic` arrays, against the sequential
//! references (Dijkstra, queue BFS, union-find), bit for bit; growth from
//! tiny lists, several rounds per synchronisation, and the errors.

use proptest::prelude::*;
use warpfit_runtime::gen::{self, RoadOrder};
use warpfit_runtime::reference;
use warpfit_runtime::sparse::Csr;
use warpfit_runtime::worklist::drivers::{
    CpuRounds, Driver, DriverOptions, Order, RunReport, Start, Strategy, MAX_ROUNDS_PER_SYNC,
};
use warpfit_runtime::worklist::{atomic_cas, atomic_min, push, Atomic};

fn graphs() -> Vec<(&'static str, Csr<f32>)> {
    vec![
        (
            "road:side=40,order=random",
            gen::road(40, 0.15, 1, RoadOrder::Random).unwrap(),
        ),
        (
            "road:side=30,drop=0.4,order=natural",
            gen::road(30, 0.4, 2, RoadOrder::Natural).unwrap(),
        ),
        (
            "rmat:scale=10,sym=true",
            gen::rmat_symmetric(10, 8, 3).unwrap(),
        ),
        ("rmat:scale=9 (directed)", gen::rmat(9, 8, 4).unwrap()),
        ("rgg:n=2000", gen::rgg(2000, 5).unwrap()),
    ]
}

fn strategies(delta: f64) -> Vec<Strategy> {
    let near_far = Order::NearFar { delta };
    vec![
        Strategy::Topology,
        Strategy::Data(Order::Fifo),
        Strategy::Data(near_far),
        Strategy::Hybrid {
            order: Order::Fifo,
            to_topology: 0.05,
            to_data: 0.01,
        },
        Strategy::Hybrid {
            order: near_far,
            to_topology: 0.02,
            to_data: 0.02,
        },
    ]
}

/// SSSP with `options`: push relaxation as the frontier kernel, an
/// in-place pull as the topology kernel, the distance as the key.
fn sssp(a: &Csr<f32>, source: usize, options: &DriverOptions) -> (Vec<f32>, RunReport) {
    let n = a.nrows();
    let t = a.transpose();
    let mut dist = vec![f32::INFINITY; n];
    dist[source] = 0.0;
    let d = Atomic::from_mut_slice(&mut dist);
    let mut cpu = CpuRounds::new(n)
        .unwrap()
        .frontier(|u, step| {
            let du = d[u as usize].load();
            let (cols, w) = a.row(u as usize);
            for (&v, &w) in cols.iter().zip(w) {
                let nd = du + w.abs();
                if nd < atomic_min(&d[v as usize], nd) {
                    push(step.out, v);
                }
            }
        })
        .topology(|v, step| {
            let (cols, w) = t.row(v as usize);
            let best = cols
                .iter()
                .zip(w)
                .map(|(&u, &w)| d[u as usize].load() + w.abs())
                .fold(d[v as usize].load(), f32::min);
            // Only v writes d[v] in a topology round: no atomic needed.
            if best < d[v as usize].load() {
                d[v as usize].store(best);
                push(step.out, v);
            }
        })
        .key(|v| d[v as usize].load() as f64);
    let report = Driver::new(*options)
        .run(&mut cpu, Start::Items(&[source as u32]))
        .unwrap();
    drop(cpu);
    (dist, report)
}

/// BFS levels: top-down as the frontier kernel, bottom-up (looking for a
/// parent on the previous level) as the topology kernel.
fn bfs(a: &Csr<f32>, source: usize, options: &DriverOptions) -> (Vec<i32>, RunReport) {
    let n = a.nrows();
    let t = a.transpose();
    let mut level = vec![-1i32; n];
    level[source] = 0;
    let l = Atomic::from_mut_slice(&mut level);
    let mut cpu = CpuRounds::new(n)
        .unwrap()
        .frontier(|u, step| {
            let next = l[u as usize].load() + 1;
            for &v in a.row(u as usize).0 {
                if l[v as usize].load() < 0 && atomic_cas(&l[v as usize], -1, next) == -1 {
                    push(step.out, v);
                }
            }
        })
        .topology(|v, step| {
            if l[v as usize].load() >= 0 {
                return;
            }
            let parent = step.round as i32 - 1;
            if t.row(v as usize)
                .0
                .iter()
                .any(|&u| l[u as usize].load() == parent)
            {
                l[v as usize].store(parent + 1);
                push(step.out, v);
            }
        });
    let report = Driver::new(*options)
        .run(&mut cpu, Start::Items(&[source as u32]))
        .unwrap();
    drop(cpu);
    (level, report)
}

/// Connected components by min-label propagation over the undirected
/// neighbours (a row's entries and its column's).
fn cc(a: &Csr<f32>, options: &DriverOptions) -> (Vec<u32>, RunReport) {
    let n = a.nrows();
    let t = a.transpose();
    let mut label: Vec<u32> = (0..n as u32).collect();
    let lab = Atomic::from_mut_slice(&mut label);
    let neighbours = |v: u32| {
        a.row(v as usize)
            .0
            .iter()
            .chain(t.row(v as usize).0)
            .copied()
    };
    let mut cpu = CpuRounds::new(n)
        .unwrap()
        .frontier(|u, step| {
            let lu = lab[u as usize].load();
            for v in neighbours(u) {
                if lu < atomic_min(&lab[v as usize], lu) {
                    push(step.out, v);
                }
            }
        })
        .topology(|v, step| {
            let least = neighbours(v)
                .map(|u| lab[u as usize].load())
                .fold(lab[v as usize].load(), u32::min);
            if least < lab[v as usize].load() {
                lab[v as usize].store(least);
                push(step.out, v);
            }
        });
    let report = Driver::new(*options).run(&mut cpu, Start::All).unwrap();
    drop(cpu);
    (label, report)
}

fn mean_weight(a: &Csr<f32>) -> f64 {
    a.values().iter().map(|w| w.abs() as f64).sum::<f64>() / a.nnz().max(1) as f64
}

#[test]
fn sssp_equals_dijkstra_under_every_strategy() {
    for (name, a) in graphs() {
        let want = reference::dijkstra(&a, 0).unwrap();
        for s in strategies(2.0 * mean_weight(&a)) {
            let (got, report) = sssp(&a, 0, &DriverOptions::new(s));
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(g, w)| g.to_bits() == w.to_bits()),
                "{name}, {s}"
            );
            assert!(
                report.rounds >= 1 && report.syncs >= report.rounds,
                "{name}, {s}"
            );
        }
    }
}

#[test]
fn bfs_equals_the_queue_bfs_under_every_strategy() {
    for (name, a) in graphs() {
        let want = reference::bfs_levels(&a, 0).unwrap();
        for s in strategies(1.0).into_iter().filter(|s| !s.needs().key) {
            let (got, report) = bfs(&a, 0, &DriverOptions::new(s));
            assert_eq!(got, want, "{name}, {s}");
            // Level-synchronous: one round per level, and one to find the
            // frontier empty.
            let depth = *want.iter().max().unwrap() as u64;
            assert_eq!(report.rounds, depth + 1, "{name}, {s}");
        }
    }
}

#[test]
fn cc_equals_union_find_under_every_strategy() {
    for (name, a) in graphs() {
        let want = reference::components(&a).unwrap();
        for s in strategies(1.0).into_iter().filter(|s| !s.needs().key) {
            let (got, _) = cc(&a, &DriverOptions::new(s));
            assert_eq!(got, want, "{name}, {s}");
        }
    }
}

#[test]
fn growth_from_tiny_lists_gives_the_preallocated_results() {
    let a = gen::road(40, 0.15, 7, RoadOrder::Random).unwrap();
    let want = reference::dijkstra(&a, 5).unwrap();
    for s in strategies(2.0 * mean_weight(&a)) {
        for dedup in [true, false] {
            for k in [1, 3] {
                let options = DriverOptions {
                    initial_capacity: Some(1),
                    rounds_per_sync: Some(k),
                    dedup,
                    ..DriverOptions::new(s)
                };
                let (got, report) = sssp(&a, 5, &options);
                assert_eq!(got, want, "{s}, dedup {dedup}, k {k}");
                if s != Strategy::Topology {
                    assert!(report.growths > 0, "{s}: {report:?}");
                    assert!(report.capacity > 1, "{s}: {report:?}");
                }
            }
        }
    }
    // Connected components start from every vertex: the start list is
    // sized for them, the others grow.
    let want = reference::components(&a).unwrap();
    let options = DriverOptions {
        initial_capacity: Some(2),
        ..DriverOptions::new(Strategy::Data(Order::Fifo))
    };
    assert_eq!(cc(&a, &options).0, want);
}

/// A near-far width below the distances' resolution (1e-16 against
/// distances of about 1 to 100) still ends: each bucket holds one distance
/// (Dijkstra's order), never an empty bucket, and the answer is Dijkstra's.
#[test]
fn a_near_far_width_below_the_keys_resolution_ends_with_dijkstras_answer() {
    let a = gen::road(16, 0.15, 1, RoadOrder::Random).unwrap();
    let want = reference::dijkstra(&a, 0).unwrap();
    for delta in [1e-16, 1e-300, f64::MIN_POSITIVE] {
        for s in [
            Strategy::Data(Order::NearFar { delta }),
            Strategy::hybrid(Order::NearFar { delta }),
        ] {
            let (got, report) = sssp(&a, 0, &DriverOptions::new(s));
            assert_eq!(got, want, "{s}");
            assert!(report.rounds <= 4 * a.nrows() as u64, "{s}: {report:?}");
        }
    }
}

/// A capacity larger than the universe is clamped to it before anything
/// is allocated: a capacity of 2^40 items on a 1600-vertex graph runs in
/// lists of 1600 (a deduplicating list never holds more), with the same
/// result, where 4 TiB of slots would be refused by the memory budget.
#[test]
fn a_capacity_above_the_universe_is_clamped_before_allocating() {
    let a = gen::road(40, 0.15, 7, RoadOrder::Random).unwrap();
    let want = reference::dijkstra(&a, 5).unwrap();
    for s in strategies(2.0 * mean_weight(&a)) {
        for dedup in [true, false] {
            let options = DriverOptions {
                initial_capacity: Some(1 << 40),
                dedup,
                ..DriverOptions::new(s)
            };
            let (got, report) = sssp(&a, 5, &options);
            assert_eq!(got, want, "{s}, dedup {dedup}");
            assert!(report.capacity <= a.nrows(), "{s}: {report:?}");
        }
    }
}

/// BFS's hybrid on a broom (a hub of 100 neighbours, each with 10 leaves
/// of its own): the hub's level switches it to bottom-up rounds, whose
/// first one changes 1000 of 1101 vertices, more than a list of `n / 5`
/// holds. Its output is never read (a round changing that many does not
/// switch back), so the list does not grow. Lists of 5 (below the switch
/// back's threshold of 11) grow, for the hub's round first: a list smaller
/// than that threshold cannot hold the frontier that switched to topology
/// rounds (the threshold up is at least the one back), so a data-driven
/// round always overflows it before a topology round could.
#[test]
fn a_hybrids_overflowing_topology_rounds_grow_only_lists_they_may_read() {
    let (hubs, leaves) = (100usize, 10usize);
    let n = 1 + hubs + hubs * leaves;
    let mut edges = Vec::new();
    for h in 1..=hubs {
        edges.extend([(0, h), (h, 0)]);
        for l in 0..leaves {
            let v = 1 + hubs + (h - 1) * leaves + l;
            edges.extend([(h, v), (v, h)]);
        }
    }
    let mut coo = warpfit_runtime::Coo::empty(n, n).unwrap();
    for (u, v) in edges {
        coo.push(u, v, 1.0).unwrap();
    }
    let a = coo.to_csr().unwrap();
    let want = reference::bfs_levels(&a, 0).unwrap();
    let hybrid = Strategy::Hybrid {
        order: Order::Fifo,
        to_topology: 0.05,
        to_data: 0.01,
    };
    for (capacity, grows) in [(None, false), (Some(5), true)] {
        let options = DriverOptions {
            initial_capacity: capacity,
            ..DriverOptions::new(hybrid)
        };
        let (got, report) = bfs(&a, 0, &options);
        assert_eq!(got, want, "capacity {capacity:?}");
        assert!(report.topology_rounds >= 1, "{report:?}");
        assert_eq!(
            report.growths > 0,
            grows,
            "capacity {capacity:?}: {report:?}"
        );
    }
}

#[test]
fn several_rounds_per_sync_run_the_same_rounds_and_fewer_syncs() {
    let a = gen::road(40, 0.15, 3, RoadOrder::Random).unwrap();
    let want = reference::bfs_levels(&a, 0).unwrap();
    let one = bfs(&a, 0, &DriverOptions::new(Strategy::Data(Order::Fifo))).1;
    for k in [2, 8] {
        let options = DriverOptions {
            rounds_per_sync: Some(k),
            ..DriverOptions::new(Strategy::Data(Order::Fifo))
        };
        let (got, report) = bfs(&a, 0, &options);
        assert_eq!(got, want);
        assert_eq!(report.rounds, one.rounds);
        assert_eq!(report.processed, one.processed);
        // Rounds planned past the end ran as no-ops.
        assert!(report.enqueued > report.rounds, "{report:?}");
        assert!(report.enqueued < report.rounds + 2 * k as u64);
        assert!(
            report.syncs <= report.rounds.div_ceil(k as u64) + 2,
            "{report:?}"
        );
    }
}

#[test]
fn rounds_per_sync_out_of_range_is_an_error() {
    let run = |k: usize| {
        let options = DriverOptions {
            rounds_per_sync: Some(k),
            ..DriverOptions::new(Strategy::Data(Order::Fifo))
        };
        let mut cpu = CpuRounds::new(10).unwrap().frontier(|_, _| {});
        Driver::new(options).run(&mut cpu, Start::Items(&[0]))
    };
    for k in [0, MAX_ROUNDS_PER_SYNC + 1, usize::MAX] {
        let e = run(k).unwrap_err().to_string();
        assert!(
            e.contains("rounds_per_sync must lie in 1..=1024"),
            "{k}: {e}"
        );
    }
    // The bound itself runs.
    assert_eq!(run(MAX_ROUNDS_PER_SYNC).unwrap().rounds, 1);
}

#[test]
fn reports_count_the_work() {
    let a = gen::road(30, 0.0, 1, RoadOrder::Natural).unwrap();
    let n = a.nrows() as u64;
    // Topology-driven BFS: every element every round.
    let (_, topo) = bfs(&a, 0, &DriverOptions::new(Strategy::Topology));
    assert_eq!(topo.processed, n * topo.rounds);
    assert_eq!(topo.topology_rounds, topo.rounds);
    // Data-driven BFS on a connected graph: each vertex once, with dedup.
    let (_, data) = bfs(&a, 0, &DriverOptions::new(Strategy::Data(Order::Fifo)));
    assert_eq!(data.processed, n);
    assert_eq!(data.pushed, n - 1);
    assert_eq!((data.topology_rounds, data.switches), (0, 0));
    // Near-far advances buckets.
    let (_, nf) = sssp(
        &a,
        0,
        &DriverOptions::new(Strategy::Data(Order::NearFar { delta: 1.0 })),
    );
    assert!(nf.far_rounds > 5, "{nf:?}");
    // The hybrid switches on a graph whose frontier grows past n/100.
    let r = gen::rmat_symmetric(10, 8, 1).unwrap();
    let hub = (0..r.nrows())
        .max_by_key(|&v| r.row_range(v).len())
        .unwrap();
    let (_, hy) = bfs(
        &r,
        hub,
        &DriverOptions::new(Strategy::Hybrid {
            order: Order::Fifo,
            to_topology: 0.01,
            to_data: 0.001,
        }),
    );
    assert!(hy.switches >= 1 && hy.topology_rounds >= 1, "{hy:?}");
}

#[test]
fn misuse_and_faulty_kernels_are_errors() {
    let run = |cpu: &mut CpuRounds<'_>, s: Strategy, start| {
        Driver::new(DriverOptions::new(s))
            .run(cpu, start)
            .unwrap_err()
            .to_string()
    };
    // A strategy whose kernel is missing.
    let mut only_frontier = CpuRounds::new(4).unwrap().frontier(|_, _| {});
    let e = run(&mut only_frontier, Strategy::Topology, Start::All);
    assert!(e.contains("topology kernel"), "{e}");
    let e = run(
        &mut only_frontier,
        Strategy::Data(Order::NearFar { delta: 1.0 }),
        Start::All,
    );
    assert!(e.contains("key"), "{e}");
    let e = run(
        &mut only_frontier,
        Strategy::Data(Order::NearFar { delta: 0.0 }),
        Start::All,
    );
    assert!(e.contains("delta"), "{e}");
    let e = run(
        &mut only_frontier,
        Strategy::Hybrid {
            order: Order::Fifo,
            to_topology: 0.1,
            to_data: 0.2,
        },
        Start::All,
    );
    assert!(e.contains("to_data ≤ to_topology"), "{e}");
    let e = run(
        &mut only_frontier,
        Strategy::Data(Order::Fifo),
        Start::Items(&[4]),
    );
    assert!(e.contains("start item"), "{e}");
    // A kernel pushing outside the universe.
    let mut bad = CpuRounds::new(4)
        .unwrap()
        .frontier(|_, step| push(step.out, 9));
    let e = run(&mut bad, Strategy::Data(Order::Fifo), Start::Items(&[0]));
    assert!(e.contains("round 1") && e.contains("9"), "{e}");
    // A kernel that never stops pushing.
    let mut forever = CpuRounds::new(4)
        .unwrap()
        .frontier(|v, step| push(step.out, v));
    let e = Driver::new(DriverOptions {
        max_rounds: Some(50),
        ..DriverOptions::new(Strategy::Data(Order::Fifo))
    })
    .run(&mut forever, Start::Items(&[1]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("50 rounds"), "{e}");
    // A topology kernel that changes something after reporting a fixed
    // point: caught on the rounds run past the end.
    let calls = std::sync::atomic::AtomicU32::new(0);
    let mut flaky = CpuRounds::new(4).unwrap().topology(|v, step| {
        let c = calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if c >= 4 && v == 0 {
            push(step.out, 0);
        }
    });
    let e = Driver::new(DriverOptions {
        rounds_per_sync: Some(2),
        ..DriverOptions::new(Strategy::Topology)
    })
    .run(&mut flaky, Start::All)
    .unwrap_err()
    .to_string();
    assert!(e.contains("not monotone"), "{e}");
}

/// A random directed graph with weights in (0, 1] (some zero) from a list
/// of edges.
fn graph(n: usize, edges: &[(usize, usize, u8)]) -> Csr<f32> {
    let mut coo = warpfit_runtime::Coo::empty(n, n).unwrap();
    for &(u, v, w) in edges {
        coo.push(u % n, v % n, w as f32 / 64.0).unwrap();
    }
    coo.to_csr().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_strategy_equals_the_references_on_random_graphs(
        n in 1usize..60,
        edges in proptest::collection::vec((0usize..60, 0usize..60, 0u8..=64), 0..200),
        k in 1usize..4,
        capacity in 1usize..8,
        dedup in any::<bool>(),
    ) {
        let a = graph(n, &edges);
        let source = n / 2;
        let dist = reference::dijkstra(&a, source).unwrap();
        let levels = reference::bfs_levels(&a, source).unwrap();
        let comps = reference::components(&a).unwrap();
        for s in strategies(0.3) {
            let options = DriverOptions {
                initial_capacity: Some(capacity),
                rounds_per_sync: Some(k),
                dedup,
                ..DriverOptions::new(s)
            };
            let got = sssp(&a, source, &options).0;
            prop_assert!(got.iter().zip(&dist).all(|(g, w)| g.to_bits() == w.to_bits()), "{s}: {got:?} vs {dist:?}");
            if !s.needs().key {
                prop_assert_eq!(&bfs(&a, source, &options).0, &levels, "{}", s);
                prop_assert_eq!(&cc(&a, &options).0, &comps, "{}", s);
            }
        }
    }
}

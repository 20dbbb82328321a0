//! The worklist drivers on CUDA ([`CudaRounds`]): sssp, bfs and cc under
//! every driver, against the sequential references (Dijkstra, queue BFS,
//! union-find) and the CPU backend bit for bit, on generated road-like
//! (random numbering), symmetrised RMAT and rgg graphs; growth forced from
//! lists of one item; one and sixteen rounds per synchronisation; the
//! backend's protocol (halting, skipped rounds, errors) and kernel faults
//! reported at `wait`. Needs a CUDA GPU; skipped without one, unless
//! `WARPFIT_REQUIRE_GPU=1` (scripts/gpu-check). `WARPFIT_SMALL=1` (the
//! compute-sanitizer stages) shrinks the graphs.

mod gpu_common;

mod driver_common;

use driver_common::{drivers, hub};
use gpu_common::gpu;
use warpfit::apps::{self, push_kernels, DriveOptions, DrivenApp, DriverChoice, OrderChoice};
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::reference;
use warpfit::runtime::sparse::Csr;
use warpfit::runtime::worklist::drivers::{
    Bucket, CpuRounds, Driver, DriverOptions, ListId, Order, Round, RoundBackend, Start, Strategy,
};
use warpfit::runtime::worklist::Atomic;
use warpfit::CudaRounds;
use warpfit::{Decomposition, Device, LaunchConfig};

fn small() -> bool {
    std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1")
}

fn graphs() -> Vec<(String, Csr<f32>)> {
    let specs: &[&str] = if small() {
        &[
            "road:side=16,drop=0.15,seed=1,order=random",
            "rmat:scale=8,edge_factor=8,seed=3,sym=true",
            "rgg:n=400,seed=5",
        ]
    } else {
        &[
            "road:side=64,drop=0.15,seed=1,order=random",
            "rmat:scale=12,edge_factor=8,seed=3,sym=true",
            "rgg:n=4000,seed=5",
        ]
    };
    specs
        .iter()
        .map(|s| {
            (
                s.to_string(),
                s.parse::<GenSpec>().unwrap().generate().unwrap(),
            )
        })
        .collect()
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Every app under every driver with `opts` (the driver replaced), on
/// CUDA with `cfg`: equal to the references and to the CPU backend.
fn check_all(dev: &Device, cfg: &LaunchConfig, name: &str, a: &Csr<f32>, opts: DriveOptions) {
    let cpu = Device::cpu();
    let host = LaunchConfig::default();
    let mut grew = 0;
    for source in [0, hub(a)] {
        let dist = reference::dijkstra(a, source).unwrap();
        let levels = reference::bfs_levels(a, source).unwrap();
        for driver in drivers(DrivenApp::Sssp) {
            let o = DriveOptions { driver, ..opts };
            let what = format!("{name}: sssp from {source}, {o:?}, {:?}", cfg.decomposition);
            let (got, r) = apps::sssp_driven(dev, cfg, a, source, &o).unwrap();
            assert!(same_bits(&got, &dist), "{what}: reference");
            let (on_cpu, _) = apps::sssp_driven(&cpu, &host, a, source, &o).unwrap();
            assert!(same_bits(&got, &on_cpu), "{what}: CPU backend");
            grew += r.growths;
        }
        for driver in drivers(DrivenApp::Bfs) {
            let o = DriveOptions { driver, ..opts };
            let what = format!("{name}: bfs from {source}, {o:?}, {:?}", cfg.decomposition);
            let (got, r) = apps::bfs_driven(dev, cfg, a, source, &o).unwrap();
            assert_eq!(got, levels, "{what}: reference");
            let (on_cpu, c) = apps::bfs_driven(&cpu, &host, a, source, &o).unwrap();
            assert_eq!(got, on_cpu, "{what}: CPU backend");
            // Level-synchronous on both backends: the same rounds.
            assert_eq!(r.rounds, c.rounds, "{what}: rounds");
            grew += r.growths;
        }
    }
    let comps = reference::components(a).unwrap();
    for driver in drivers(DrivenApp::Cc) {
        let o = DriveOptions { driver, ..opts };
        let what = format!("{name}: cc, {o:?}, {:?}", cfg.decomposition);
        let (got, r) = apps::cc_driven(dev, cfg, a, &o).unwrap();
        assert_eq!(got, comps, "{what}: reference");
        let (on_cpu, _) = apps::cc_driven(&cpu, &host, a, &o).unwrap();
        assert_eq!(got, on_cpu, "{what}: CPU backend");
        grew += r.growths;
    }
    if opts.initial_capacity == Some(1) {
        assert!(grew > 0, "{name}: lists of one item never grew");
    }
}

#[test]
fn every_driver_equals_the_references_and_the_cpu() {
    let Some(dev) = gpu() else { return };
    for (name, a) in graphs() {
        for d in [Decomposition::Cte, Decomposition::Thread] {
            let cfg = LaunchConfig::new(d);
            check_all(&dev, &cfg, &name, &a, DriveOptions::new(DriverChoice::Auto));
        }
    }
}

/// Two runs of sssp on one backend, from `first` and then from `second`
/// over the distances the first left (`second` preset to 0 before either,
/// `first` to 10): the second run improves what the first reached, so a
/// list it kept with a stale item, count or dedup mark gives other
/// distances. On CUDA the driver prepares first, on the CPU it does not.
fn sssp_twice(
    dev: &Device,
    a: &Csr<f32>,
    (first, second): (usize, usize),
    opts: DriverOptions,
) -> (Vec<f32>, [u64; 2], usize) {
    let n = a.nrows();
    let inc = a.transpose();
    let mut init = vec![f32::INFINITY; n];
    init[second] = 0.0;
    init[first] = 10.0;
    let driver = Driver::new(opts);
    let starts = [[first as u32], [second as u32]];
    if dev.cuda().is_some() {
        let cfg = LaunchConfig::default();
        let up = |g: &Csr<f32>| {
            (
                dev.upload(g.row_ptr()).unwrap(),
                dev.upload(g.col_idx()).unwrap(),
                dev.upload(g.values()).unwrap(),
            )
        };
        let ((ptr, dst, w), (iptr, isrc, iw)) = (up(a), up(&inc));
        let dist = dev.upload(&init).unwrap();
        let mut rounds = CudaRounds::new(dev, n)
            .unwrap()
            .frontier(|b| {
                push_kernels::sssp_push::prepare(dev, &cfg, b.tasks, &ptr, &dst, &w, &dist, b.out)
            })
            .topology(|b| {
                push_kernels::sssp_pull::prepare(
                    dev, &cfg, b.tasks, &iptr, &isrc, &iw, &dist, b.out,
                )
            })
            .key(&dist)
            .unwrap();
        driver
            .prepare(&mut rounds, Start::Items(&starts[0]))
            .unwrap();
        let prepared = rounds.launches_prepared();
        let runs = starts.map(|s| driver.run(&mut rounds, Start::Items(&s)).unwrap().rounds);
        drop(rounds);
        return (dist.to_vec().unwrap(), runs, prepared);
    }
    let d = Atomic::from_mut_slice(&mut init);
    let mut cpu = CpuRounds::new(n)
        .unwrap()
        .frontier(|v, step| {
            push_kernels::sssp_push(
                v as usize,
                a.row_ptr(),
                a.col_idx(),
                a.values(),
                d,
                step.out,
            )
        })
        .topology(|v, step| {
            push_kernels::sssp_pull(
                v as usize,
                inc.row_ptr(),
                inc.col_idx(),
                inc.values(),
                d,
                step.out,
            )
        })
        .key(|v| d[v as usize].load() as f64);
    let runs = starts.map(|s| driver.run(&mut cpu, Start::Items(&s)).unwrap().rounds);
    drop(cpu);
    (init, runs, 0)
}

/// A case of [`sssp_twice`]: what it is, the graph, its two sources and
/// the driver's options.
type TwiceCase = (String, Csr<f32>, (usize, usize), DriverOptions);

/// The graphs with weights `|w|`, each with two sources and the strategies
/// and list options of [`sssp_twice`]'s runs.
fn twice_cases() -> Vec<TwiceCase> {
    let near_far = Order::NearFar { delta: 0.5 };
    let mut cases = Vec::new();
    for (name, a) in graphs() {
        let abs: Vec<f32> = a.values().iter().map(|w| w.abs()).collect();
        let a = Csr::new(
            a.nrows(),
            a.ncols(),
            a.row_ptr().to_vec(),
            a.col_idx().to_vec(),
            abs,
        )
        .unwrap();
        let sources = (0, hub(&a));
        for strategy in [
            Strategy::Topology,
            Strategy::Data(Order::Fifo),
            Strategy::Data(near_far),
            Strategy::hybrid(Order::Fifo),
            Strategy::hybrid(near_far),
        ] {
            for (capacity, dedup) in [(Some(1), true), (Some(1), false), (None, true)] {
                let opts = DriverOptions {
                    initial_capacity: capacity,
                    dedup,
                    ..DriverOptions::new(strategy)
                };
                let what = format!("{name}: {strategy}, capacity {capacity:?}, dedup {dedup}");
                cases.push((what, a.clone(), sources, opts));
            }
        }
    }
    cases
}

/// On the CPU backend (no GPU needed): the two runs end where one run from
/// both sources would.
#[test]
fn run_after_run_on_kept_lists_equals_dijkstra_on_the_cpu() {
    for (what, a, sources, opts) in twice_cases() {
        let ds = reference::dijkstra(&a, sources.0).unwrap();
        let dt = reference::dijkstra(&a, sources.1).unwrap();
        let (got, runs, _) = sssp_twice(&Device::cpu(), &a, sources, opts);
        for v in 0..a.nrows() {
            // Within a rounding: the sums run edge by edge from 10. An
            // unreachable vertex must stay exactly infinite (a tolerance
            // scaled by an infinite distance would accept anything).
            let want = (10.0 + ds[v]).min(dt[v]);
            let ok = if want.is_finite() {
                got[v].is_finite() && (got[v] - want).abs() <= 1e-4 * want.abs()
            } else {
                got[v] == want
            };
            assert!(ok, "{what}: vertex {v}: {} against {want}", got[v]);
        }
        assert!(runs[0] > 0 && runs[1] > 0, "{what}: {runs:?}");
    }
}

#[test]
fn prepared_lists_and_launches_serve_run_after_run() {
    let Some(dev) = gpu() else { return };
    for (what, a, sources, opts) in twice_cases() {
        let (got, runs, prepared) = sssp_twice(&dev, &a, sources, opts);
        let (on_cpu, _, _) = sssp_twice(&Device::cpu(), &a, sources, opts);
        assert!(same_bits(&got, &on_cpu), "{what}: CPU backend");
        assert!(runs[0] > 0 && runs[1] > 0, "{what}: {runs:?}");
        let needs = opts.strategy.needs();
        // Each kind of round the strategy runs, onto each output list.
        let kinds = usize::from(needs.frontier) + usize::from(needs.topology);
        assert_eq!(prepared, 2 * kinds, "{what}");
    }
}

#[test]
fn growth_from_one_item_and_batched_rounds_change_nothing() {
    let Some(dev) = gpu() else { return };
    let cfg = LaunchConfig::default();
    for (name, a) in graphs() {
        for (capacity, k, dedup) in [
            (Some(1), Some(1), true),
            (Some(1), Some(16), true),
            (None, Some(1), true),
            (None, Some(16), false),
        ] {
            let opts = DriveOptions {
                initial_capacity: capacity,
                rounds_per_sync: k,
                dedup,
                ..DriveOptions::new(DriverChoice::Auto)
            };
            check_all(&dev, &cfg, &name, &a, opts);
        }
    }
}

/// Two hubs (vertex 0 with `leaves` neighbours, vertex `leaves + 1` with
/// half as many and an edge to vertex 5), symmetric, with weights in
/// quarters: frontier items far longer than `apps::DONATE_MIN`.
fn hubs(leaves: usize) -> Csr<f32> {
    let second = leaves + 1;
    let n = second + leaves / 2 + 1;
    let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut edge = |u: usize, v: usize| {
        adj[u].push(v as u32);
        adj[v].push(u as u32);
    };
    for v in 1..=leaves {
        edge(0, v);
    }
    for v in second + 1..n {
        edge(second, v);
    }
    edge(second, 5);
    let mut ptr = vec![0u32];
    let (mut dst, mut w) = (Vec::new(), Vec::new());
    for (u, list) in adj.iter_mut().enumerate() {
        list.sort_unstable();
        for &v in list.iter() {
            dst.push(v);
            w.push(((u as u32 ^ v).wrapping_mul(2654435761) >> 28) as f32 * 0.25 + 0.25);
        }
        ptr.push(dst.len() as u32);
    }
    Csr::new(n, n, ptr, dst, w).unwrap()
}

#[test]
fn work_donation_spreads_hubs_and_changes_nothing() {
    let Some(dev) = gpu() else { return };
    let leaves = if small() { 9000 } else { 40_000 };
    assert!(leaves > apps::DONATE_MIN as usize);
    let a = hubs(leaves);
    let cfg = LaunchConfig::default();
    for donate in [true, false] {
        let opts = DriveOptions {
            donate,
            ..DriveOptions::new(DriverChoice::Auto)
        };
        check_all(&dev, &cfg, "two hubs", &a, opts);
    }
}

/// One run of each app that donates (the frontier kernels of sssp and
/// bfs), donating and not: the hubs' edges go to the donation launch only
/// when asked, and the results do not change. Short enough for racecheck
/// (scripts/gpu-check runs it there: the board's reservation, the chunks'
/// prologue values and the donation launch's reset of its counters).
#[test]
fn donated_rounds_of_one_run_each() {
    let Some(dev) = gpu() else { return };
    let a = hubs(9000);
    let cfg = LaunchConfig::default();
    let (dist, levels) = (
        reference::dijkstra(&a, 0).unwrap(),
        reference::bfs_levels(&a, 0).unwrap(),
    );
    for donate in [true, false] {
        let opts = DriveOptions {
            donate,
            ..DriveOptions::new(DriverChoice::Data(Some(OrderChoice::Fifo)))
        };
        let (got, s) = apps::sssp_driven(&dev, &cfg, &a, 0, &opts).unwrap();
        assert!(same_bits(&got, &dist), "sssp, donate {donate}");
        let (got, b) = apps::bfs_driven(&dev, &cfg, &a, 0, &opts).unwrap();
        assert_eq!(got, levels, "bfs, donate {donate}");
        // The hub's 9000 edges are 9 chunks of 1024 (the second hub's 4501
        // are under the bound); sssp may run the hub again.
        for (app, r) in [("sssp", &s), ("bfs", &b)] {
            let chunks = r.donated_chunks;
            assert!(
                if donate {
                    chunks >= 9 && chunks % 9 == 0
                } else {
                    chunks == 0
                },
                "{app}, donate {donate}: {chunks} chunks"
            );
        }
    }
}

#[test]
fn several_rounds_run_per_synchronisation() {
    let Some(dev) = gpu() else { return };
    let a = "road:side=32,drop=0.15,seed=1,order=random"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let cfg = LaunchConfig::default();
    let fifo = DriverChoice::Data(Some(OrderChoice::Fifo));
    let (_, one) = apps::bfs_driven(&dev, &cfg, &a, 0, &DriveOptions::new(fifo)).unwrap();
    let o = DriveOptions {
        rounds_per_sync: Some(16),
        ..DriveOptions::new(fifo)
    };
    let (_, batched) = apps::bfs_driven(&dev, &cfg, &a, 0, &o).unwrap();
    assert_eq!(one.rounds, batched.rounds);
    // The default (8 on CUDA) and 16 both wait far less often than once
    // per round on a graph of many levels.
    assert!(one.rounds > 40, "{one:?}");
    assert!(one.syncs * 4 < one.rounds, "{one:?}");
    assert!(batched.syncs * 8 < batched.rounds, "{batched:?}");
}

/// The path 0 → 1 → … → n-1 with unit weights, as a CSR.
fn path(n: usize) -> Csr<f32> {
    let ptr: Vec<u32> = (0..=n as u32).map(|i| i.min(n as u32 - 1)).collect();
    let dst: Vec<u32> = (1..n as u32).collect();
    Csr::new(n, n, ptr, dst, vec![1.0; n - 1]).unwrap()
}

#[test]
fn an_overflow_halts_the_rounds_after_it_on_the_device() {
    let Some(dev) = gpu() else { return };
    let cfg = LaunchConfig::default();
    // A star: vertex 0 reaches 1..=n-1, which reach nothing.
    let n = 50usize;
    let mut ptr = vec![0u32];
    ptr.resize(n + 1, (n - 1) as u32);
    let star = Csr::new(n, n, ptr, (1..n as u32).collect(), vec![1.0; n - 1]).unwrap();
    let (ptr, dst, w) = (
        dev.upload(star.row_ptr()).unwrap(),
        dev.upload(star.col_idx()).unwrap(),
        dev.upload(star.values()).unwrap(),
    );
    let mut start = vec![f32::INFINITY; n];
    start[0] = 0.0;
    let dist = dev.upload(&start).unwrap();
    let mut rounds = CudaRounds::new(&dev, n)
        .unwrap()
        .frontier(|b| {
            push_kernels::sssp_push::prepare(&dev, &cfg, b.tasks, &ptr, &dst, &w, &dist, b.out)
        })
        .key(&dist)
        .unwrap();
    let k = rounds.kernels();
    assert!(k.frontier && k.key && !k.topology);
    rounds.make_lists(3, 4, true).unwrap();
    rounds.fill(ListId(0), Start::Items(&[0])).unwrap();
    let round = |index, input, out| Round::Frontier {
        index,
        input: ListId(input),
        out: ListId(out),
        bucket: None,
    };
    // Round 1 pushes 49 items onto a list of 4: rounds 2 and 3 are skipped.
    for (i, (input, out)) in [(0, 1), (1, 0), (0, 1)].into_iter().enumerate() {
        rounds.enqueue(&round(i as u32 + 1, input, out)).unwrap();
    }
    let o = rounds.wait(3).unwrap();
    assert!(
        !o[0].skipped && o[0].out_overflowed && o[0].pushed == 49,
        "{o:?}"
    );
    assert!(o[1].skipped && o[2].skipped, "{o:?}");
    assert_eq!(o[0].processed, 1);
    // Grow, resume and run round 2 again: it sees all 49 items.
    assert!(rounds.wait(1).is_err(), "nothing is left to wait for");
    rounds.grow(ListId(1), 64).unwrap();
    rounds.resume().unwrap();
    rounds.enqueue(&round(2, 1, 0)).unwrap();
    let o = rounds.wait(1).unwrap();
    assert_eq!(
        (o[0].index, o[0].processed, o[0].pushed),
        (2, 49, 0),
        "{o:?}"
    );
    // A near-far round with every key above the bucket defers them all.
    rounds.make_lists(3, 64, true).unwrap();
    rounds.fill(ListId(0), Start::All).unwrap();
    let near_far = Round::Frontier {
        index: 1,
        input: ListId(0),
        out: ListId(1),
        bucket: Some(Bucket {
            lo: 0.5,
            hi: 0.75,
            deferred: ListId(2),
            clear_deferred: true,
        }),
    };
    rounds.enqueue(&near_far).unwrap();
    let o = rounds.wait(1).unwrap()[0];
    // Vertex 0 (key 0) is dropped, the others (key 1) deferred.
    assert_eq!(
        (o.dropped, o.deferred, o.processed, o.pushed),
        (1, 49, 0, 0),
        "{o:?}"
    );
    assert_eq!((o.deferred_len, o.min_key), (49, 1.0), "{o:?}");
    // Distinct lists are required, a list id must exist.
    assert!(rounds.enqueue(&round(2, 1, 1)).is_err());
    assert!(rounds.enqueue(&round(2, 7, 1)).is_err());
    drop(rounds);
    let _ = dist.to_vec().unwrap();
}

#[test]
fn a_kernel_fault_comes_back_as_an_error_at_wait() {
    let Some(dev) = gpu() else { return };
    let cfg = LaunchConfig::default();
    // Vertex 0's edges run past the end of `dst`: an index fault.
    let n = 4;
    let (ptr, dst, w) = (
        dev.upload(&[0u32, 3, 3, 3, 3]).unwrap(),
        dev.upload(&[1u32]).unwrap(),
        dev.upload(&[1.0f32, 1.0, 1.0]).unwrap(),
    );
    let dist = dev
        .upload(&[0.0f32, f32::INFINITY, f32::INFINITY, f32::INFINITY])
        .unwrap();
    let mut rounds = CudaRounds::new(&dev, n).unwrap().frontier(|b| {
        push_kernels::sssp_push::prepare(&dev, &cfg, b.tasks, &ptr, &dst, &w, &dist, b.out)
    });
    let e = Driver::new(DriverOptions::new(Strategy::Data(Order::Fifo)))
        .run(&mut rounds, Start::Items(&[0]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("kernel fault in round 1"), "{e}");
    assert!(e.contains("sssp_push"), "{e}");
}

#[test]
fn the_driver_checks_what_the_backend_was_given() {
    let Some(dev) = gpu() else { return };
    let a = path(10);
    let cfg = LaunchConfig::default();
    let (ptr, dst) = (
        dev.upload(a.row_ptr()).unwrap(),
        dev.upload(a.col_idx()).unwrap(),
    );
    let level = dev
        .upload(&[0i32, -1, -1, -1, -1, -1, -1, -1, -1, -1])
        .unwrap();
    let mut rounds = CudaRounds::new(&dev, 10).unwrap().frontier(|b| {
        push_kernels::bfs_top_down::prepare(&dev, &cfg, b.tasks, &ptr, &dst, &level, b.out)
    });
    // Near-far needs a key, topology a topology kernel.
    let e = Driver::new(DriverOptions::new(Strategy::Data(Order::NearFar {
        delta: 1.0,
    })))
    .run(&mut rounds, Start::Items(&[0]))
    .unwrap_err();
    assert!(e.to_string().contains("a key"), "{e}");
    let e = Driver::new(DriverOptions::new(Strategy::Topology))
        .run(&mut rounds, Start::Items(&[0]))
        .unwrap_err();
    assert!(e.to_string().contains("a topology kernel"), "{e}");
    let r = Driver::new(DriverOptions::new(Strategy::Data(Order::Fifo)))
        .run(&mut rounds, Start::Items(&[0]))
        .unwrap();
    assert_eq!(r.rounds, 10);
    drop(rounds);
    assert_eq!(level.to_vec().unwrap(), (0..10).collect::<Vec<i32>>());
    // A key of another size, or on the CPU.
    let short = dev.upload(&[0.0f32; 3]).unwrap();
    assert!(CudaRounds::new(&dev, 10).unwrap().key(&short).is_err());
    let on_cpu = Device::cpu().upload(&[0.0f32; 10]).unwrap();
    let e = CudaRounds::new(&dev, 10)
        .unwrap()
        .key(&on_cpu)
        .unwrap_err()
        .to_string();
    assert!(e.contains("the CPU"), "{e}");
}

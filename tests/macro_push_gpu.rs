//! Push kernels on a CUDA GPU against their CPU twin: every kernel x
//! decomposition x push variant, exact for integer kernels and as sets or
//! final fixed points where the order of pushes differs; worklists that
//! overflow a tiny capacity and grow on the device; frontier launches that
//! never read the count on the host; faults. Needs a CUDA GPU; skipped
//! without one, unless `WARPFIT_REQUIRE_GPU=1`. `WARPFIT_SMALL=1` (the
//! compute-sanitizer stages) shrinks the inputs.
//!
//! `push_variant_times` (ignored; `scripts/gpu-check push-bench`) times one
//! push per edge, and label propagation's first round, with each push
//! variant and decomposition.

mod gpu_common;
mod push_common;

use gpu_common::gpu;
use push_common::*;
use std::collections::BTreeSet;
use warpfit::prelude::*;

fn small() -> bool {
    std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1")
}

/// Vertices of the test graphs.
fn size() -> usize {
    if small() {
        300
    } else {
        3000
    }
}

fn configs() -> Vec<LaunchConfig> {
    let d = [
        Decomposition::Cte,
        Decomposition::Thread,
        Decomposition::SubWarp(4),
        Decomposition::SubWarp(32),
    ];
    let mut out: Vec<LaunchConfig> = d
        .into_iter()
        .map(|decomposition| LaunchConfig {
            decomposition,
            ..LaunchConfig::default()
        })
        .collect();
    // CTE expanding every warp (no serial fallback for short items).
    out.push(LaunchConfig {
        decomposition: Decomposition::Cte,
        cte_serial_max: 0,
        ..LaunchConfig::default()
    });
    out
}

/// Data-driven rounds on `device` from `seeds` until the frontier is
/// empty, each list made with `variant`, the output grown (on the device)
/// when a round overflowed it. Returns the rounds run.
fn rounds(
    device: &Device,
    universe: usize,
    capacity: usize,
    variant: PushVariant,
    seeds: &[u32],
    mut round: impl FnMut(&DeviceWorklist, &DeviceWorklist) -> warpfit::Result<()>,
) -> usize {
    let mut input = device
        .worklist(universe, capacity.max(seeds.len()))
        .unwrap();
    input.set_items(seeds).unwrap();
    let mut output = device.worklist(universe, capacity).unwrap();
    input.set_push_variant(variant);
    output.set_push_variant(variant);
    let mut n = 0;
    while !input.is_empty().unwrap() {
        output.clear().unwrap();
        round(&input, &output).unwrap();
        let needed = output.needed().unwrap();
        if output.overflowed().unwrap() {
            output.grow(needed).unwrap();
            assert!(!output.overflowed().unwrap());
        }
        std::mem::swap(&mut input, &mut output);
        n += 1;
        assert!(n <= 4 * universe + 8, "no fixed point");
    }
    n
}

#[test]
fn fixed_points_equal_the_references_on_every_decomposition_and_variant() {
    let Some(dev) = gpu() else { return };
    let n = size();
    let g = random_graph(n, 5);
    let s = symmetrise(&g);
    let w = edge_weights(g.1.len(), 5);
    let want_dist = dijkstra(&g, &w, 0);
    let want_level = bfs_levels(&g, 0);
    let want_label = components(&s);
    let want_cap = widest_reference(&g, &w, 0);
    let (ptr, dst, wd) = (
        dev.upload(&g.0).unwrap(),
        dev.upload(&g.1).unwrap(),
        dev.upload(&w).unwrap(),
    );
    let (sptr, sdst) = (dev.upload(&s.0).unwrap(), dev.upload(&s.1).unwrap());
    for cfg in configs() {
        for variant in PushVariant::ALL {
            let what = format!("{cfg:?} {variant}");
            let mut start = vec![f32::INFINITY; n];
            start[0] = 0.0;
            let mut dist = dev.upload(&start).unwrap();
            rounds(&dev, n, n / 5, variant, &[0], |i, o| {
                sssp_push::launch_with(&dev, &cfg, i, &ptr, &dst, &wd, &mut dist, o)
            });
            assert_eq!(dist.to_vec().unwrap(), want_dist, "sssp {what}");

            let mut start = vec![-1i32; n];
            start[0] = 0;
            let mut level = dev.upload(&start).unwrap();
            rounds(&dev, n, n / 5, variant, &[0], |i, o| {
                bfs_push::launch_with(&dev, &cfg, i, &ptr, &dst, &mut level, o)
            });
            assert_eq!(level.to_vec().unwrap(), want_level, "bfs {what}");

            let mut start = vec![u32::MAX; n];
            start[0] = 0;
            let mut level = dev.upload(&start).unwrap();
            rounds(&dev, n, n / 5, variant, &[0], |i, o| {
                bfs_min::launch_with(&dev, &cfg, i, &ptr, &dst, &mut level, o)
            });
            let got: Vec<i32> = level
                .to_vec()
                .unwrap()
                .into_iter()
                .map(|l| if l == u32::MAX { -1 } else { l as i32 })
                .collect();
            assert_eq!(got, want_level, "bfs_min {what}");

            let all: Vec<u32> = (0..n as u32).collect();
            let mut label = dev.upload(&all).unwrap();
            rounds(&dev, n, n, variant, &all, |i, o| {
                cc_push::launch_with(&dev, &cfg, i, &sptr, &sdst, &mut label, o)
            });
            assert_eq!(label.to_vec().unwrap(), want_label, "cc {what}");

            // Topology-driven pull with an atomic epilogue, to a fixed point.
            let (t, tw) = transpose(&g, &w);
            let mut start = vec![f32::INFINITY; n];
            start[0] = 0.0;
            let mut dist = dev.upload(&start).unwrap();
            let mut changed = dev.worklist(n, n).unwrap();
            changed.set_push_variant(variant);
            for round in 0.. {
                changed.clear().unwrap();
                pull_min::launch_with(&dev, &cfg, n, &t.0, &t.1, &tw, &mut dist, &changed).unwrap();
                if changed.is_empty().unwrap() {
                    break;
                }
                assert!(round <= n, "pull_min {what}: no fixed point");
            }
            assert_eq!(dist.to_vec().unwrap(), want_dist, "pull_min {what}");

            let mut start = vec![0.0f32; n];
            start[0] = f32::INFINITY;
            let mut cap = dev.upload(&start).unwrap();
            rounds(&dev, n, 16, variant, &[0], |i, o| {
                widest_push::launch_with(&dev, &cfg, i, &ptr, &dst, &wd, &mut cap, o)
            });
            assert_eq!(cap.to_vec().unwrap(), want_cap, "widest {what}");
        }
    }
}

#[test]
fn scatter_kernels_equal_the_twin_exactly() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let n = size();
    let g = random_graph(n, 9);
    let m = g.1.len();
    let key: Vec<u32> = (0..m as u32)
        .map(|e| e.wrapping_mul(2_654_435_761))
        .collect();
    let amount: Vec<u32> = (0..m as u32)
        .map(|e| if e % 50 == 0 { u32::MAX / 3 } else { e })
        .collect();
    let w64: Vec<f64> = (0..m).map(|e| (e % 13) as f64 * 0.5).collect();
    let bins = 17u32;
    let lists = [
        TaskList::chunked(&g.0, 5).unwrap(),
        TaskList::split_every_task(&g.0, 3).unwrap(),
    ];
    let every: Vec<u32> = (0..n as u32).rev().collect();
    let mut on_gpu = dev.worklist(n, n).unwrap();
    on_gpu.set_items(&every).unwrap();
    let mut on_cpu = cpu.worklist(n, n).unwrap();
    on_cpu.set_items(&every).unwrap();
    for cfg in configs() {
        for source in 0..4 {
            let tasks = |d: &Device| -> Tasks<'_> {
                match source {
                    0 => Tasks::from(n),
                    1 => Tasks::from(&lists[0]),
                    2 => Tasks::from(&lists[1]),
                    _ if d.cuda().is_some() => Tasks::from(&on_gpu),
                    _ => Tasks::from(&on_cpu),
                }
            };
            let what = format!("{cfg:?} source {source}");
            let run = |d: &Device| {
                let mut hist = vec![0u64; bins as usize];
                histogram::launch_with(d, &cfg, tasks(d), &g.0, &key, bins, &mut hist).unwrap();
                let mut total = vec![0u32; n];
                sat_scatter::launch_with(d, &cfg, tasks(d), &g.0, &g.1, &amount, &mut total)
                    .unwrap();
                let (mut sum, mut seen) = (vec![0.0f64; n], vec![0u64; n]);
                scatter_add::launch_with(d, &cfg, tasks(d), &g.0, &g.1, &w64, &mut sum, &mut seen)
                    .unwrap();
                let (mut hits, mut deg) = (vec![0u32; n], vec![0u32; n]);
                degree_push::launch_with(d, &cfg, tasks(d), &g.0, &g.1, &mut hits, &mut deg)
                    .unwrap();
                (hist, total, sum, seen, hits, deg)
            };
            assert_eq!(run(&dev), run(&cpu), "{what}");
        }
    }
}

#[test]
fn rounds_push_the_twins_sets() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let n = size();
    let g = random_graph(n, 13);
    let flags: Vec<u8> = (0..n).map(|v| u8::from(v % 5 == 1)).collect();
    for cfg in configs() {
        for variant in PushVariant::ALL {
            for dedup in [false, true] {
                let what = format!("{cfg:?} {variant} dedup {dedup}");
                // A BFS round's pushes are one per newly reached vertex,
                // whatever the order: the same set, and the same length.
                let round = |d: &Device, frontier: &[u32], level: &mut Vec<i32>| {
                    let mut input = d.worklist(n, n).unwrap();
                    input.set_items(frontier).unwrap();
                    let mut out = if dedup {
                        d.worklist_dedup(n, n).unwrap()
                    } else {
                        d.worklist(n, n).unwrap()
                    };
                    out.set_push_variant(variant);
                    bfs_push::launch_with(d, &cfg, &input, &g.0, &g.1, level, &out).unwrap();
                    let mut items = out.to_vec().unwrap();
                    items.sort_unstable();
                    items
                };
                let mut level = vec![-1i32; n];
                level[0] = 0;
                let mut gpu_level = level.clone();
                let mut frontier = vec![0u32];
                while !frontier.is_empty() {
                    let want = round(&cpu, &frontier, &mut level);
                    let got = round(&dev, &frontier, &mut gpu_level);
                    assert_eq!(got, want, "{what}");
                    assert_eq!(gpu_level, level, "{what}");
                    frontier = want;
                }
                // Every edge pushes its target: the multiset of targets.
                let out = dev.worklist(n, g.1.len()).unwrap();
                let mut out = out;
                out.set_push_variant(variant);
                push_all::launch_with(&dev, &cfg, n, &g.0, &g.1, &out).unwrap();
                let mut got = out.to_vec().unwrap();
                got.sort_unstable();
                let mut want = g.1.clone();
                want.sort_unstable();
                assert_eq!(got, want, "push_all {what}");
                // A per-task map and an epilogue push.
                let mut seeded = dev.worklist(n, n).unwrap();
                seeded.set_push_variant(variant);
                seed::launch_with(&dev, &cfg, n, &flags, &seeded).unwrap();
                let got: BTreeSet<u32> = seeded.to_vec().unwrap().into_iter().collect();
                let want: BTreeSet<u32> = (0..n as u32).filter(|v| v % 5 == 1).collect();
                assert_eq!(got, want, "seed {what}");
            }
        }
    }
}

#[test]
fn overflow_with_a_tiny_capacity_grows_on_the_device() {
    let Some(dev) = gpu() else { return };
    let n = size();
    let g = random_graph(n, 17);
    for cfg in configs() {
        for variant in PushVariant::ALL {
            for dedup in [false, true] {
                let what = format!("{cfg:?} {variant} dedup {dedup}");
                let make = |cap| {
                    let mut l = if dedup {
                        dev.worklist_dedup(n, cap).unwrap()
                    } else {
                        dev.worklist(n, cap).unwrap()
                    };
                    l.set_push_variant(variant);
                    l
                };
                // One push per edge into a list of 3 slots: nearly all spill.
                let mut tiny = make(3);
                push_all::launch_with(&dev, &cfg, n, &g.0, &g.1, &tiny).unwrap();
                let roomy = make(g.1.len());
                push_all::launch_with(&dev, &cfg, n, &g.0, &g.1, &roomy).unwrap();
                assert!(tiny.overflowed().unwrap(), "{what}");
                assert_eq!(tiny.needed().unwrap(), roomy.needed().unwrap(), "{what}");
                let needed = tiny.needed().unwrap();
                tiny.grow(needed).unwrap();
                assert!(!tiny.overflowed().unwrap(), "{what}");
                let got: BTreeSet<u32> = tiny.to_vec().unwrap().into_iter().collect();
                let want: BTreeSet<u32> = roomy.to_vec().unwrap().into_iter().collect();
                assert_eq!(got, want, "{what}");
                // Cleared, the list is empty and takes pushes again.
                tiny.clear().unwrap();
                assert!(tiny.is_empty().unwrap());
                seed::launch_with(&dev, &cfg, 4, &[1u8, 0, 1, 0], &tiny).unwrap();
                let mut got = tiny.to_vec().unwrap();
                got.sort_unstable();
                assert_eq!(got, [0, 2], "{what}");
                // A grow smaller than needed leaves the rest spilled, as on the CPU.
                let mut partial = make(2);
                push_all::launch_with(&dev, &cfg, n, &g.0, &g.1, &partial).unwrap();
                partial.grow(4).unwrap();
                assert_eq!(partial.len().unwrap(), 4.min(needed), "{what}");
            }
        }
    }
    // Data-driven SSSP from capacity 1 reaches Dijkstra's distances.
    let w = edge_weights(g.1.len(), 17);
    let mut start = vec![f32::INFINITY; n];
    start[0] = 0.0;
    let mut dist = dev.upload(&start).unwrap();
    rounds(&dev, n, 1, PushVariant::Block, &[0], |i, o| {
        sssp_push::launch(&dev, i, &g.0, &g.1, &w, &mut dist, o)
    });
    assert_eq!(dist.to_vec().unwrap(), dijkstra(&g, &w, 0));
}

#[test]
fn frontier_rounds_run_without_reading_the_count_on_the_host() {
    let Some(dev) = gpu() else { return };
    let n = size();
    let g = random_graph(n, 23);
    let w = edge_weights(g.1.len(), 23);
    let mut start = vec![f32::INFINITY; n];
    start[0] = 0.0;
    let (ptr, dst, wd) = (
        dev.upload(&g.0).unwrap(),
        dev.upload(&g.1).unwrap(),
        dev.upload(&w).unwrap(),
    );
    let dist = dev.upload(&start).unwrap();
    // Room for every push of a round: no growth needed.
    let mut a = dev.worklist(n, g.1.len() + 1).unwrap();
    a.set_items(&[0]).unwrap();
    let b = dev.worklist(n, g.1.len() + 1).unwrap();
    let cfg = LaunchConfig::default();
    let forth = sssp_push::prepare(&dev, &cfg, &a, &ptr, &dst, &wd, &dist, &b).unwrap();
    let back = sssp_push::prepare(&dev, &cfg, &b, &ptr, &dst, &wd, &dist, &a).unwrap();
    // More rounds than the longest path has edges: rounds after the
    // frontier emptied are no-ops. Only enqueues, no host read in between.
    for _ in 0..n.div_ceil(2) + 1 {
        b.clear().unwrap();
        forth.run().unwrap();
        a.clear().unwrap();
        back.run().unwrap();
    }
    forth.check().unwrap();
    back.check().unwrap();
    drop((forth, back));
    assert_eq!(dist.to_vec().unwrap(), dijkstra(&g, &w, 0));
}

#[test]
fn faults_are_the_twins_errors() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    for cfg in configs() {
        for variant in PushVariant::ALL {
            let what = format!("{cfg:?} {variant}");
            let err = |d: &Device, ptr: &[u32], dst: &[u32], universe: usize| {
                let w = vec![1.0f32; dst.len()];
                let mut dist = vec![f32::INFINITY; ptr.len() - 1];
                dist[0] = 0.0;
                let mut out = d.worklist(universe, 8).unwrap();
                out.set_push_variant(variant);
                sssp_push::launch_with(d, &cfg, ptr.len() - 1, ptr, dst, &w, &mut dist, &out)
                    .unwrap_err()
                    .to_string()
            };
            // An atomic at an index past the shared array.
            let (ptr, dst) = (vec![0u32, 2, 2], vec![1u32, 9]);
            let e = err(&dev, &ptr, &dst, 2);
            assert_eq!(e, err(&cpu, &ptr, &dst, 2), "{what}");
            assert_eq!(
                e,
                "kernel `sssp_push`, task 0: `dist`: index 9 out of range for length 2"
            );
            // A push outside the list's universe.
            let (ptr, dst) = (vec![0u32, 1, 1, 1], vec![2u32]);
            let e = err(&dev, &ptr, &dst, 1);
            assert_eq!(e, err(&cpu, &ptr, &dst, 1), "{what}");
            assert!(e.contains("item pushed to worklist `out`"), "{e}");
        }
    }
    // A list of the CPU cannot take a GPU's pushes.
    let host = Worklist::new(4, 4).unwrap();
    let e = push_all::launch(&dev, 1, &[0u32, 1], &[1u32], &host).unwrap_err();
    assert!(e.to_string().contains("is a worklist of the CPU"), "{e}");
}

/// Pushes timed per push variant and decomposition: one per edge, one per
/// edge into a deduplicating list, and a quarter of the edges (device time
/// per launch, the list cleared before each). `scripts/gpu-check
/// push-bench`; results in BENCHMARKS.md.
#[test]
#[ignore]
fn push_variant_times() {
    use warpfit::__private::EventTimer;
    use warpfit::runtime::gen::GenSpec;
    let Some(dev) = gpu() else { return };
    let cuda = dev.cuda().expect("a CUDA device");
    let timer = EventTimer::new(cuda).unwrap();
    for spec in ["rmat:scale=20", "grid2d:side=1024"] {
        let a = spec.parse::<GenSpec>().unwrap().generate().unwrap();
        let n = a.nrows();
        let m = a.col_idx().len();
        let (ptr, dst) = (
            dev.upload(a.row_ptr()).unwrap(),
            dev.upload(a.col_idx()).unwrap(),
        );
        println!("\n{spec}: {n} vertices, {m} edges");
        println!("| pushes | decomposition | atomic (ms) | warp (ms) | block (ms) |");
        println!("|---|---|---|---|---|");
        for decomposition in [
            Decomposition::Thread,
            Decomposition::SubWarp(8),
            Decomposition::SubWarp(32),
            Decomposition::Cte,
        ] {
            let cfg = LaunchConfig {
                decomposition,
                ..LaunchConfig::default()
            };
            for (name, dedup, some) in [
                ("every edge", false, false),
                ("every edge, dedup", true, false),
                ("a quarter of the edges", false, true),
            ] {
                let mut row = Vec::new();
                for variant in PushVariant::ALL {
                    let mut out = if dedup {
                        dev.worklist_dedup(n, m).unwrap()
                    } else {
                        dev.worklist(n, m).unwrap()
                    };
                    out.set_push_variant(variant);
                    let p = if some {
                        push_some::prepare(&dev, &cfg, n, &ptr, &dst, &out).unwrap()
                    } else {
                        push_all::prepare(&dev, &cfg, n, &ptr, &dst, &out).unwrap()
                    };
                    let ms = timer
                        .time_ms(20, &mut || {
                            out.clear()?;
                            p.run()
                        })
                        .unwrap();
                    p.check().unwrap();
                    assert!(!out.overflowed().unwrap());
                    row.push(ms);
                }
                println!(
                    "| {name} | {decomposition:?} | {:.3} | {:.3} | {:.3} |",
                    row[0], row[1], row[2]
                );
            }
        }
    }
}

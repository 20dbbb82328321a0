//! Push kernels (`(lo..hi).for_each(..)` with atomic intrinsics and
//! worklists) on the CPU twin: against sequential references (Dijkstra, BFS,
//! union-find, a label-correcting loop), against the plain functions the
//! macro keeps, over all tasks, task lists that split tasks, and worklist
//! frontiers; overflow and growth; faults instead of panics.

mod push_common;

use proptest::prelude::*;
use push_common::*;
use std::collections::BTreeSet;
use warpfit::prelude::*;

/// Runs data-driven rounds from `seeds` until the frontier is empty: each
/// round reads one list and pushes to the other (cleared first), which is
/// grown when it overflowed (the round is then complete: nothing was
/// dropped). Returns the rounds run and the largest `needed` seen.
fn rounds(
    device: &Device,
    universe: usize,
    capacity: usize,
    seeds: &[u32],
    mut round: impl FnMut(&DeviceWorklist, &DeviceWorklist) -> warpfit::Result<()>,
) -> (usize, usize) {
    let mut input = device
        .worklist(universe, capacity.max(seeds.len()))
        .unwrap();
    input.set_items(seeds).unwrap();
    let mut output = device.worklist(universe, capacity).unwrap();
    let (mut n, mut most) = (0, 0);
    while !input.is_empty().unwrap() {
        output.clear().unwrap();
        round(&input, &output).unwrap();
        let needed = output.needed().unwrap();
        most = most.max(needed);
        if output.overflowed().unwrap() {
            output.grow(needed).unwrap();
            assert!(!output.overflowed().unwrap());
        }
        std::mem::swap(&mut input, &mut output);
        n += 1;
        assert!(n <= 4 * universe + 8, "no fixed point");
    }
    (n, most)
}

fn sssp(device: &Device, g: &Graph, w: &[f32], source: usize, capacity: usize) -> Vec<f32> {
    let n = g.0.len() - 1;
    let mut dist = vec![f32::INFINITY; n];
    dist[source] = 0.0;
    rounds(device, n, capacity, &[source as u32], |input, output| {
        sssp_push::launch(device, input, &g.0, &g.1, w, &mut dist, output)
    });
    dist
}

#[test]
fn sssp_reaches_dijkstras_distances_from_any_capacity() {
    let device = Device::cpu();
    for seed in 0..4 {
        let g = random_graph(300, seed);
        let w = edge_weights(g.1.len(), seed);
        let want = dijkstra(&g, &w, 0);
        for capacity in [1, 7, 300 / 5, 2000] {
            assert_eq!(
                sssp(&device, &g, &w, 0, capacity),
                want,
                "seed {seed} capacity {capacity}"
            );
        }
    }
}

#[test]
fn a_round_pushes_exactly_the_vertices_it_lowered() {
    let device = Device::cpu();
    let g = random_graph(400, 7);
    let w = edge_weights(g.1.len(), 7);
    let n = 400;
    let mut dist = vec![f32::INFINITY; n];
    dist[0] = 0.0;
    let mut input = device.worklist(n, n).unwrap();
    input.set_items(&[0]).unwrap();
    let output = device.worklist(n, n).unwrap();
    for _ in 0..6 {
        let before = dist.clone();
        output.clear().unwrap();
        sssp_push::launch(&device, &input, &g.0, &g.1, &w, &mut dist, &output).unwrap();
        let pushed: BTreeSet<u32> = output.to_vec().unwrap().into_iter().collect();
        let lowered: BTreeSet<u32> = (0..n as u32)
            .filter(|&u| dist[u as usize] < before[u as usize])
            .collect();
        assert_eq!(pushed, lowered);
        input
            .set_items(&pushed.into_iter().collect::<Vec<_>>())
            .unwrap();
    }
}

#[test]
fn the_plain_function_is_the_reference_of_a_round() {
    // BFS rounds are deterministic as sets (a vertex's level changes once):
    // the twin's round equals the plain function run task by task.
    let g = random_graph(500, 3);
    let n = 500;
    let mut level = vec![-1i32; n];
    level[0] = 0;
    let mut frontier = vec![0u32];
    let device = Device::cpu();
    while !frontier.is_empty() {
        let mut plain_level = level.clone();
        let plain_out = Worklist::new(n, n).unwrap();
        {
            let shared = Atomic::from_mut_slice(&mut plain_level);
            for &v in &frontier {
                bfs_push(v as usize, &g.0, &g.1, shared, &plain_out);
            }
        }
        let mut input = device.worklist(n, n).unwrap();
        input.set_items(&frontier).unwrap();
        let out = device.worklist(n, n).unwrap();
        bfs_push::launch(&device, &input, &g.0, &g.1, &mut level, &out).unwrap();
        assert_eq!(level, plain_level);
        let mut got = out.to_vec().unwrap();
        let mut plain_out = plain_out;
        let mut want = plain_out.items().to_vec();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
        frontier = got;
    }
    assert_eq!(level, bfs_levels(&g, 0));
}

#[test]
fn a_pull_fold_over_shared_arrays_with_an_atomic_epilogue_converges() {
    // Topology-driven: every vertex each round until none changed.
    let device = Device::cpu();
    let g = random_graph(400, 31);
    let w = edge_weights(g.1.len(), 31);
    let (t, tw) = transpose(&g, &w);
    let n = 400;
    let mut dist = vec![f32::INFINITY; n];
    dist[0] = 0.0;
    let changed = device.worklist(n, n).unwrap();
    let mut rounds = 0;
    loop {
        changed.clear().unwrap();
        pull_min::launch(&device, n, &t.0, &t.1, &tw, &mut dist, &changed).unwrap();
        rounds += 1;
        if changed.is_empty().unwrap() {
            break;
        }
        assert!(rounds <= n + 1);
    }
    assert_eq!(dist, dijkstra(&g, &w, 0));
}

#[test]
fn bfs_by_atomic_min_matches_the_reference() {
    let device = Device::cpu();
    let g = random_graph(600, 11);
    let n = 600;
    let mut level = vec![u32::MAX; n];
    level[5] = 0;
    rounds(&device, n, n / 5, &[5], |input, output| {
        bfs_min::launch(&device, input, &g.0, &g.1, &mut level, output)
    });
    let want: Vec<u32> = bfs_levels(&g, 5)
        .into_iter()
        .map(|l| if l < 0 { u32::MAX } else { l as u32 })
        .collect();
    assert_eq!(level, want);
}

#[test]
fn label_propagation_finds_the_components() {
    let device = Device::cpu();
    for seed in 0..3 {
        // Sparse: several components.
        let g = symmetrise(&random_graph(500, 100 + seed));
        let n = 500;
        let mut label: Vec<u32> = (0..n as u32).collect();
        let all: Vec<u32> = (0..n as u32).collect();
        let (r, _) = rounds(&device, n, n / 5, &all, |input, output| {
            cc_push::launch(&device, input, &g.0, &g.1, &mut label, output)
        });
        assert!(r >= 1);
        assert_eq!(label, components(&g), "seed {seed}");
    }
}

#[test]
fn widest_paths_through_a_device_fn_operator() {
    let device = Device::cpu();
    let g = random_graph(300, 21);
    let width: Vec<f32> = edge_weights(g.1.len(), 5);
    let n = 300;
    let mut cap = vec![0.0f32; n];
    cap[0] = f32::INFINITY;
    rounds(&device, n, 16, &[0], |input, output| {
        widest_push::launch(&device, input, &g.0, &g.1, &width, &mut cap, output)
    });
    assert_eq!(cap, widest_reference(&g, &width, 0));
}

#[test]
fn scatter_kernels_equal_sequential_loops_on_every_task_source() {
    let device = Device::cpu();
    let g = random_graph(700, 9);
    let n = 700;
    let m = g.1.len();
    let key: Vec<u32> = (0..m as u32)
        .map(|e| e.wrapping_mul(2_654_435_761))
        .collect();
    let amount: Vec<u32> = (0..m as u32)
        .map(|e| if e % 50 == 0 { u32::MAX / 3 } else { e })
        .collect();
    let w64: Vec<f64> = (0..m).map(|e| (e % 13) as f64 * 0.5).collect();
    let bins = 17u32;
    let mut want_hist = vec![0u64; bins as usize];
    let mut want_total = vec![0u32; n];
    let mut want_sum = vec![0.0f64; n];
    let mut want_seen = vec![0u64; n];
    let mut want_hits = vec![0u32; n];
    for v in 0..n {
        for e in g.0[v] as usize..g.0[v + 1] as usize {
            let u = g.1[e] as usize;
            want_hist[(key[e] % bins) as usize] += 1;
            want_total[u] = want_total[u].saturating_add(amount[e]);
            want_sum[u] += w64[e];
            want_seen[u] |= 1 << (v % 64);
            want_hits[u] += 1;
        }
    }
    let want_deg: Vec<u32> = g.0.windows(2).map(|p| p[1] - p[0]).collect();
    // Every task once: all tasks, a task list that splits the hubs, and a
    // frontier holding every vertex.
    let lists = [
        TaskList::chunked(&g.0, 3).unwrap(),
        TaskList::split_every_task(&g.0, 2).unwrap(),
    ];
    let everyone = Worklist::new(n, n).unwrap();
    for v in (0..n as u32).rev() {
        everyone.push(v).unwrap();
    }
    let sources: Vec<Tasks<'_>> = vec![
        Tasks::from(n),
        Tasks::from(&lists[0]),
        Tasks::from(&lists[1]),
        Tasks::from(&everyone),
    ];
    for tasks in sources {
        let mut hist = vec![0u64; bins as usize];
        histogram::launch(&device, tasks, &g.0, &key, bins, &mut hist).unwrap();
        assert_eq!(hist, want_hist);
        let mut total = vec![0u32; n];
        sat_scatter::launch(&device, tasks, &g.0, &g.1, &amount, &mut total).unwrap();
        assert_eq!(total, want_total);
        let (mut sum, mut seen) = (vec![0.0f64; n], vec![0u64; n]);
        scatter_add::launch(&device, tasks, &g.0, &g.1, &w64, &mut sum, &mut seen).unwrap();
        // Halves: exact in any order.
        assert_eq!(sum, want_sum);
        assert_eq!(seen, want_seen);
        let (mut hits, mut deg) = (vec![0u32; n], vec![0u32; n]);
        degree_push::launch(&device, tasks, &g.0, &g.1, &mut hits, &mut deg).unwrap();
        assert_eq!(hits, want_hits);
        assert_eq!(deg, want_deg);
    }
}

#[test]
fn per_task_maps_and_epilogues_push() {
    let device = Device::cpu();
    let n = 1000;
    let flags: Vec<u8> = (0..n).map(|v| u8::from(v % 7 == 3)).collect();
    let out = device.worklist(n, 10).unwrap();
    seed::launch(&device, n, &flags, &out).unwrap();
    let want: BTreeSet<u32> = (0..n as u32).filter(|v| v % 7 == 3).collect();
    assert!(out.overflowed().unwrap());
    assert_eq!(out.needed().unwrap(), want.len());
    let mut out = out;
    out.grow(want.len()).unwrap();
    assert_eq!(
        out.to_vec().unwrap().into_iter().collect::<BTreeSet<_>>(),
        want
    );
    // A pull step's epilogue pushes the vertices it lowered.
    let g = random_graph(200, 2);
    let w = edge_weights(g.1.len(), 2);
    let dist: Vec<f32> = (0..200)
        .map(|v| if v % 3 == 0 { v as f32 } else { f32::INFINITY })
        .collect();
    let mut next = vec![0.0f32; 200];
    let changed = device.worklist(200, 200).unwrap();
    relax_changed::launch(&device, 200, &g.0, &g.1, &w, &dist, &mut next, &changed).unwrap();
    let lowered: BTreeSet<u32> = (0..200u32)
        .filter(|&v| next[v as usize] < dist[v as usize])
        .collect();
    assert!(!lowered.is_empty());
    assert_eq!(
        changed
            .to_vec()
            .unwrap()
            .into_iter()
            .collect::<BTreeSet<_>>(),
        lowered
    );
}

#[test]
fn a_deduplicating_list_holds_each_item_once() {
    let device = Device::cpu();
    let g = random_graph(300, 4);
    let n = 300;
    let plain = device.worklist(n, g.1.len()).unwrap();
    let dedup = device.worklist_dedup(n, n).unwrap();
    push_all::launch(&device, n, &g.0, &g.1, &plain).unwrap();
    push_all::launch(&device, n, &g.0, &g.1, &dedup).unwrap();
    // Every edge's target, once per edge or once in all.
    let mut all = plain.to_vec().unwrap();
    all.sort_unstable();
    let mut want = g.1.clone();
    want.sort_unstable();
    assert_eq!(all, want);
    let mut once = dedup.to_vec().unwrap();
    once.sort_unstable();
    want.dedup();
    assert_eq!(once, want);
    // Cleared, a deduplicating list takes each item again, once.
    dedup.clear().unwrap();
    push_all::launch(&device, n, &g.0, &g.1, &dedup).unwrap();
    assert_eq!(dedup.needed().unwrap(), want.len());
}

#[test]
fn prepared_launches_run_push_rounds_over_device_arrays() {
    let device = Device::cpu();
    let g = random_graph(250, 8);
    let w = edge_weights(g.1.len(), 8);
    let n = 250;
    let mut start = vec![f32::INFINITY; n];
    start[0] = 0.0;
    let (ptr, dst, wd) = (
        device.upload(&g.0).unwrap(),
        device.upload(&g.1).unwrap(),
        device.upload(&w).unwrap(),
    );
    let dist = device.upload(&start).unwrap();
    let mut a = device.worklist(n, n).unwrap();
    a.set_items(&[0]).unwrap();
    let b = device.worklist(n, n).unwrap();
    let cfg = LaunchConfig::default();
    let forth = sssp_push::prepare(&device, &cfg, &a, &ptr, &dst, &wd, &dist, &b).unwrap();
    let back = sssp_push::prepare(&device, &cfg, &b, &ptr, &dst, &wd, &dist, &a).unwrap();
    for _ in 0..n {
        b.clear().unwrap();
        forth.run().unwrap();
        if b.is_empty().unwrap() {
            break;
        }
        a.clear().unwrap();
        back.run().unwrap();
        if a.is_empty().unwrap() {
            break;
        }
    }
    drop((forth, back));
    assert_eq!(dist.to_vec().unwrap(), dijkstra(&g, &w, 0));
}

#[test]
fn bad_indices_and_pushes_are_faults_not_panics() {
    let device = Device::cpu();
    let (ptr, dst) = (vec![0u32, 2, 3], vec![1u32, 9, 0]);
    let w = vec![1.0f32; 3];
    let mut dist = vec![0.0f32, f32::INFINITY];
    let out = device.worklist(2, 4).unwrap();
    let e = sssp_push::launch(&device, 2, &ptr, &dst, &w, &mut dist, &out).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `sssp_push`, task 0: `dist`: index 9 out of range for length 2"
    );
    // A push outside the universe: the list is smaller than the arrays.
    let small = device.worklist(1, 4).unwrap();
    let mut dist = vec![0.0f32, f32::INFINITY, f32::INFINITY];
    let (ptr, dst) = (vec![0u32, 1, 1, 1], vec![2u32]);
    let e = sssp_push::launch(&device, 3, &ptr, &dst, &w, &mut dist, &small).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `sssp_push`, task 0: item pushed to worklist `out`: index 2 out of range for length 1"
    );
    // The plain function records the bad push in the list instead.
    let plain = Worklist::new(1, 4).unwrap();
    let mut d = vec![0.0f32, f32::INFINITY, f32::INFINITY];
    sssp_push(0, &ptr, &dst, &w, Atomic::from_mut_slice(&mut d), &plain);
    assert!(plain.take_fault().is_some());
    // A round may not push to the list it reads.
    let list = device.worklist(3, 3).unwrap();
    let e = sssp_push::launch(&device, &list, &ptr, &dst, &w, &mut d, &list).unwrap_err();
    assert!(e.to_string().contains("is also the launch's tasks"), "{e}");
    // A frontier item with no task behind it is the kernel's own index fault.
    let mut far = device.worklist(100, 1).unwrap();
    far.set_items(&[50]).unwrap();
    let e = sssp_push::launch(&device, &far, &ptr, &dst, &w, &mut d, &out).unwrap_err();
    assert!(e.to_string().contains("task 50: `ptr`: index 50"), "{e}");
}

#[test]
fn generated_specs_describe_the_new_parameter_kinds() {
    use warpfit::__private::{ParamKind, ScalarType};
    let kinds: Vec<_> = sssp_push::SPEC
        .params
        .iter()
        .map(|p| (p.kind, p.ty))
        .collect();
    assert_eq!(
        kinds,
        [
            (ParamKind::Input, ScalarType::U32),
            (ParamKind::Input, ScalarType::U32),
            (ParamKind::Input, ScalarType::F32),
            (ParamKind::Shared, ScalarType::F32),
            (ParamKind::Worklist, ScalarType::U32),
        ]
    );
    assert!(sssp_push::CUDA_SOURCE.contains("is_for_each = true"));
    assert!(sssp_push::CUDA_SOURCE.contains("warpfit::push<0>(wf_p.out"));
    assert!(!relax_changed::CUDA_SOURCE.contains("is_for_each"));
    // Work donation: a `for_each` with nothing after it may hand a long
    // item to other warps; one with an epilogue, a fold or a map may not.
    assert!(sssp_push::SPEC.donates && bfs_push::SPEC.donates);
    assert!(sssp_push::CUDA_SOURCE.contains("static constexpr bool donates = true;"));
    assert!(!degree_push::SPEC.donates);
    assert!(!degree_push::CUDA_SOURCE.contains("donates"));
    assert!(!relax_changed::SPEC.donates && !seed::SPEC.donates);
    assert_eq!(sssp_push::GATHERED, None);
    let e = histogram::work_graph(1, &[0, 0], &[], 1).unwrap_err();
    assert!(e.to_string().contains("`for_each` kernel"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_graphs_reach_the_references(n in 1usize..120, seed in 0u64..1000, capacity in 1usize..40) {
        let device = Device::cpu();
        let g = random_graph(n, seed);
        let w = edge_weights(g.1.len(), seed);
        let source = (seed as usize) % n;
        prop_assert_eq!(sssp(&device, &g, &w, source, capacity), dijkstra(&g, &w, source));
        let mut level = vec![-1i32; n];
        level[source] = 0;
        rounds(&device, n, capacity, &[source as u32], |input, output| {
            bfs_push::launch(&device, input, &g.0, &g.1, &mut level, output)
        });
        prop_assert_eq!(level, bfs_levels(&g, source));
        let s = symmetrise(&g);
        let mut label: Vec<u32> = (0..n as u32).collect();
        let all: Vec<u32> = (0..n as u32).collect();
        rounds(&device, n, capacity.max(n), &all, |input, output| {
            cc_push::launch(&device, input, &s.0, &s.1, &mut label, output)
        });
        prop_assert_eq!(label, components(&s));
    }
}

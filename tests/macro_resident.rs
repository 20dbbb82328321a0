//! Device-resident arrays and prepared launches through the generated API on
//! the CPU backend: `DeviceVec` arguments mixed with host slices, prepared
//! runs against plain launches, aliasing and type errors, faults and lengths.
//! (Arrays of another device need a GPU: tests/macro_gpu.rs.)

mod macro_common;

use macro_common::*;
use warpfit::prelude::*;

/// A graph, its weights and a vector, on the host.
struct Input {
    ptr: Vec<u32>,
    src: Vec<u32>,
    w: Vec<f32>,
    x: Vec<f32>,
}

fn input() -> Input {
    let (ptr, src) = skewed_graph(900, 5);
    let n = ptr.len() - 1;
    Input {
        w: quarters(src.len(), 3),
        x: quarters(n, 11),
        ptr,
        src,
    }
}

impl Input {
    fn n(&self) -> usize {
        self.ptr.len() - 1
    }

    /// `y = A·x` through the plain host-slice launch.
    fn spmv(&self, dev: &Device, x: &[f32]) -> Vec<f32> {
        let mut y = vec![0.0f32; self.n()];
        spmv::launch(dev, self.n(), &self.ptr, &self.src, &self.w, x, &mut y).unwrap();
        y
    }
}

#[test]
fn resident_and_host_arguments_mix() {
    let dev = Device::cpu();
    let a = input();
    let want = a.spmv(&dev, &a.x);
    let ptr = dev.upload(&a.ptr).unwrap();
    let w = dev.upload(&a.w).unwrap();
    // Resident inputs, a host input, a host output.
    let mut y = vec![0.0f32; a.n()];
    spmv::launch(&dev, a.n(), &ptr, &a.src, &w, &a.x, &mut y).unwrap();
    assert_eq!(y, want);
    // Everything resident, the output too.
    let src = dev.upload(&a.src).unwrap();
    let x = dev.upload(&a.x).unwrap();
    let mut y = dev.alloc::<f32>(a.n()).unwrap();
    spmv::launch(&dev, a.n(), &ptr, &src, &w, &x, &mut y).unwrap();
    dev.synchronize().unwrap();
    assert_eq!(y.to_vec().unwrap(), want);
    // Host inputs, a resident output, over a task list and another config.
    let list = TaskList::chunked(&a.ptr, 5).unwrap();
    let cfg = LaunchConfig::new(Decomposition::Thread);
    let mut z = dev.alloc::<f32>(a.n()).unwrap();
    spmv::launch_with(&dev, &cfg, &list, &a.ptr, &a.src, &a.w, &a.x, &mut z).unwrap();
    let mut got = vec![1.0f32; a.n()];
    z.download(&mut got).unwrap();
    assert_eq!(got, want);
}

#[test]
fn every_host_argument_form_still_launches() {
    let dev = Device::cpu();
    let ptr = [0u32, 2, 3];
    let col = vec![0u32, 1, 1];
    let mut y = vec![0.0f32; 2];
    spmv::launch(
        &dev,
        2,
        &ptr,
        &col[..],
        &[1.0, 2.0, 3.0],
        &vec![1.0, 1.0],
        &mut y,
    )
    .unwrap();
    assert_eq!(y, [3.0, 3.0]);
    let mut arr = [0.0f32; 2];
    let out: &mut [f32] = &mut arr;
    spmv::launch(&dev, 2, &ptr, &col, &[1.0; 3], &[2.0; 2], out).unwrap();
    // A `&mut [T]` parameter is reborrowed, not moved: usable after the launch.
    spmv::launch(&dev, 2, &ptr, &col, &[1.0; 3], &[3.0; 2], out).unwrap();
    assert_eq!(out, [6.0, 3.0]);
}

#[test]
fn prepared_runs_equal_plain_launches() {
    let dev = Device::cpu();
    let a = input();
    let ptr = dev.upload(&a.ptr).unwrap();
    let src = dev.upload(&a.src).unwrap();
    let w = dev.upload(&a.w).unwrap();
    let x = dev.upload(&a.x).unwrap();
    let y = dev.alloc::<f32>(a.n()).unwrap();
    let list = TaskList::chunked(&a.ptr, 16).unwrap();
    let cfg = LaunchConfig::default();
    for tasks in [Tasks::All(a.n()), Tasks::List(&list)] {
        let k = spmv::prepare(&dev, &cfg, tasks, &ptr, &src, &w, &x, &y).unwrap();
        for _ in 0..3 {
            k.run().unwrap();
            k.check().unwrap();
            assert_eq!(y.to_vec().unwrap(), a.spmv(&dev, &a.x));
        }
        assert_eq!(k.chosen_split(), None);
    }
}

#[test]
fn prepared_launches_iterate_on_the_device() {
    // PageRank by ping-pong between two prepared launches: upload once,
    // run in a loop, download once; the same as host-slice launches.
    let dev = Device::cpu();
    let a = input();
    let n = a.n();
    let inv: Vec<f32> = quarters(n, 5);
    let (base, damping) = (0.15 / n as f32, 0.85f32);
    let mut want = vec![1.0f32 / n as f32; n];
    let mut next = vec![0.0f32; n];
    for _ in 0..6 {
        pagerank::launch(
            &dev, n, &a.ptr, &a.src, &want, &inv, base, damping, &mut next,
        )
        .unwrap();
        std::mem::swap(&mut want, &mut next);
    }
    let ptr = dev.upload(&a.ptr).unwrap();
    let src = dev.upload(&a.src).unwrap();
    let inv_d = dev.upload(&inv).unwrap();
    let r0 = dev.upload(&vec![1.0f32 / n as f32; n]).unwrap();
    let r1 = dev.alloc::<f32>(n).unwrap();
    let cfg = LaunchConfig::default();
    let forth = pagerank::prepare(&dev, &cfg, n, &ptr, &src, &r0, &inv_d, base, damping, &r1);
    let back = pagerank::prepare(&dev, &cfg, n, &ptr, &src, &r1, &inv_d, base, damping, &r0);
    let (forth, back) = (forth.unwrap(), back.unwrap());
    for _ in 0..3 {
        forth.run().unwrap();
        back.run().unwrap();
    }
    back.check().unwrap();
    assert_eq!(r0.to_vec().unwrap(), want);
}

#[test]
fn an_output_passed_twice_is_an_error_naming_both() {
    let dev = Device::cpu();
    let a = input();
    let ptr = dev.upload(&a.ptr).unwrap();
    let src = dev.upload(&a.src).unwrap();
    let w = dev.upload(&a.w).unwrap();
    let dist = dev.upload(&a.x).unwrap();
    let e = relax::prepare(
        &dev,
        &LaunchConfig::default(),
        a.n(),
        &ptr,
        &src,
        &w,
        &dist,
        &dist,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "kernel `relax`: output argument 4 (`next`) is also passed as argument 3 (`dist`)"
        ),
        "{e}"
    );
}

#[test]
fn faults_of_resident_launches_are_the_twins_errors() {
    let dev = Device::cpu();
    let ptr = dev.upload(&[0u32, 2, 3]).unwrap();
    let num = dev.upload(&[i32::MIN, 7, 9]).unwrap();
    let den = dev.upload(&[-1, 2, 0]).unwrap();
    let y = dev.alloc::<i32>(2).unwrap();
    let k = quotient::prepare(&dev, &LaunchConfig::default(), 2, &ptr, &num, &den, &y).unwrap();
    for _ in 0..2 {
        let e = k.run().unwrap_err();
        assert!(matches!(e, Error::DivisionByZero { task: 1, .. }), "{e}");
    }
    // On the CPU a run reports its own fault; `check` has nothing left.
    k.check().unwrap();
    // A resident array shorter than the kernel reads: the index fault names it.
    let short = dev.upload(&[1.0f32]).unwrap();
    let mut out = dev.alloc::<f32>(2).unwrap();
    let e = spmv::launch(&dev, 2, &ptr, &[0, 1, 1], &[1.0; 3], &short, &mut out).unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                index: 1,
                len: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("`x`"), "{e}");
}

#[test]
fn lengths_are_checked_not_assumed() {
    let dev = Device::cpu();
    let v = dev.upload(&[1u32, 2, 3]).unwrap();
    let e = v.download(&mut [0; 4]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 3,
                got: 4,
                ..
            }
        ),
        "{e}"
    );
    let mut v = v;
    assert!(matches!(
        v.copy_from(&[1, 2]).unwrap_err(),
        Error::LengthMismatch {
            expected: 3,
            got: 2,
            ..
        }
    ));
    let e = dev.alloc::<u64>(usize::MAX / 2).unwrap_err().to_string();
    assert!(
        e.contains("cannot allocate") && e.contains("x 8 bytes"),
        "{e}"
    );
    assert_eq!(v.len(), 3);
    assert!(format!("{v:?}").contains("len: 3"), "{v:?}");
}

/// A kernel without input arrays: its launch has no input view to make.
#[nested_reduce]
pub fn triangle(i: usize, step: u32, y: &mut [u32]) {
    let lo = 0usize;
    let hi = i;
    y[i] = (lo..hi).map(|k| step * k as u32).fold(0, |a, b| a + b);
}

#[test]
fn kernels_without_inputs_launch_and_prepare() {
    let dev = Device::cpu();
    let mut y = dev.alloc::<u32>(5).unwrap();
    triangle::launch(&dev, 5, 2, &mut y).unwrap();
    assert_eq!(y.to_vec().unwrap(), [0, 0, 2, 6, 12]);
    let z = dev.alloc::<u32>(4).unwrap();
    let k = triangle::prepare(&dev, &LaunchConfig::default(), 4, 1, &z).unwrap();
    k.run().unwrap();
    assert_eq!(z.to_vec().unwrap(), [0, 0, 1, 3]);
}

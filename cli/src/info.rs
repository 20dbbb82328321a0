//! `warpfit info`: which backend runs kernels here.

use warpfit::{Device, Result};

pub fn run() -> Result<()> {
    let info = Device::best().describe();
    say!("backend: {}", info.backend);
    say!("device: {}", info.name);
    if let Some(arch) = &info.arch {
        say!("architecture: {arch}");
    }
    if let Some(sms) = info.sm_count {
        say!("multiprocessors: {sms}");
    }
    if let Some(l2) = info.l2_bytes {
        say!(
            "L2 cache: {} bytes ({:.1} MiB)",
            l2,
            l2 as f64 / (1 << 20) as f64
        );
    }
    say!("cpu threads: {}", rayon_threads());
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

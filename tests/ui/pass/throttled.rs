use warpfit::prelude::*;

// Both spellings of the attribute, every argument, a scalar and a
// per-launch input besides the gathered array.
#[nested_reduce]
#[warpfit::throttled(policy = auto, cache = "8MiB", partitioner = kd)]
fn scaled(row: usize, ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], d: &[f32], s: f32, y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = s * d[row] * (lo..hi).map(|k| val[k] * x[col[k] as usize]).fold(0.0, |a, b| a + b);
}

fn main() -> warpfit::Result<()> {
    let dev = Device::cpu();
    let (ptr, col, val) = (vec![0u32, 2, 3], vec![0u32, 1, 1], vec![1.0f32, 2.0, 3.0]);
    let opts = scaled::throttle_options()?;
    let mut t = scaled::throttle(&dev, &opts, 2, 2, &ptr, &col, &val)?;
    let mut y = vec![0.0f32; 2];
    t.launch(&[1.0f32, 10.0], &[1.0f32, 2.0], 0.5, &mut y[..])?;
    assert_eq!(y, [10.5, 30.0]);
    Ok(())
}

use warpfit::prelude::*;

// A cell's own value read in the prologue beside its neighbours' in the map:
// the work graph does not need it, and a remapped plan renumbers `s` once
// for cells and neighbours alike.
#[nested_reduce]
#[throttled]
fn diffuse(c: usize, ptr: &[u32], nbr: &[u32], s: &[f32], out: &mut [f32]) {
    let lo = ptr[c] as usize;
    let hi = ptr[c + 1] as usize;
    let own = s[c];
    out[c] = (lo..hi).map(|k| s[nbr[k] as usize] - own).fold(0.0, |a, b| a + b);
}

fn main() -> warpfit::Result<()> {
    const { assert!(diffuse::THROTTLE_ROLES.gathered_at_task) };
    assert_eq!(diffuse::THROTTLE_ROLES.index, Some(1));
    let device = warpfit::Device::cpu();
    let (ptr, nbr) = (vec![0u32, 1, 2], vec![1u32, 0]);
    let s = vec![1.0f32, 4.0];
    let options = diffuse::throttle_options()?;
    let mut t = diffuse::throttle(&device, &options, 2, 2, &ptr, &nbr)?;
    let mut out = vec![0.0f32; 2];
    t.launch(&s, &mut out[..])?;
    assert_eq!(out, [3.0, -3.0]);
    Ok(())
}

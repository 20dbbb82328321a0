//! Language corners that must be accepted: shadowing, annotations, every
//! compound assignment, `else if`, constants, blocks, methods, device
//! functions by path that call each other, kernels in modules.
use warpfit::prelude::*;

mod semiring {
    use warpfit::prelude::*;

    #[device_fn]
    #[cfg(not(feature = "no-such-feature"))]
    pub fn relu(a: f64) -> f64 {
        a.max(0.0)
    }

    #[device_fn]
    pub fn relu_add(a: f64, b: f64) -> f64 {
        let s: f64 = relu(a);
        s + b
    }
}

pub mod kernels {
    use warpfit::prelude::*;

    #[nested_reduce]
    pub(crate) fn mix(
        t: usize,
        ptr: &[u32],
        a: &[i64],
        f: &[f64],
        s: u8,
        flag: bool,
        o: &mut [i64],
        p: &mut [u8],
        q: &mut [f64],
    ) {
        let lo = ptr[t] as usize;
        let hi = ptr[t + 1] as usize;
        let lo = lo.min(hi);
        let n: u64 = (hi - lo) as u64;
        let r = (lo..hi)
            .map(|k: usize| {
                let v = a[k];
                if v < 0 {
                    -v
                } else if v == 0 {
                    i64::MAX
                } else {
                    v % 7
                }
            })
            .fold(0i64, |x: i64, y: i64| x + y);
        o[t] = r;
        o[t] += 1;
        o[t] -= 2;
        o[t] *= 3;
        o[t] /= 2;
        o[t] %= 1_000_000;
        o[t] |= 1;
        o[t] &= !2;
        o[t] ^= 4;
        o[t] <<= 1;
        o[t] >>= 1u32;
        p[t] = if flag && n > 0 { s * 3 } else { u8::MAX };
        let g = super::semiring::relu_add(f[t], f64::EPSILON);
        q[t] = if g.is_nan() {
            f64::NAN
        } else {
            g.clamp(-1.0, 1.0e9).powi(2).sqrt()
        };
    }
}

fn main() {
    let ptr = [0u32, 3, 3];
    let a = [-5i64, 0, 16];
    let f = [2.0f64, -1.0];
    let (mut o, mut p, mut q) = ([0i64; 2], [0u8; 2], [0.0f64; 2]);
    kernels::mix::launch(
        &Device::cpu(),
        2,
        &ptr,
        &a,
        &f,
        200,
        true,
        &mut o,
        &mut p,
        &mut q,
    )
    .unwrap();
    // Release semantics: the sum wraps, `s * 3` wraps in u8.
    let r = 5i64.wrapping_add(i64::MAX).wrapping_add(2);
    let r = ((r + 1 - 2).wrapping_mul(3) / 2 % 1_000_000 | 1) & !2 ^ 4;
    assert_eq!(o[0], r.wrapping_shl(1) >> 1);
    assert_eq!(o[1], (((1 - 2) * 3 / 2 % 1_000_000 | 1) & !2 ^ 4) << 1 >> 1);
    assert_eq!(p, [200u8.wrapping_mul(3), u8::MAX]);
    assert_eq!(q, [(2.0f64 + f64::EPSILON).powi(2).sqrt(), f64::EPSILON]);
    let spec = &kernels::mix::SPEC;
    assert_eq!(spec.device_fns[0].name, "relu_add");
    let src = spec.assembled_source();
    assert!(
        src.find("float relu(").is_none()
            && src.find("double relu(").unwrap() < src.find("double relu_add(").unwrap()
    );
}

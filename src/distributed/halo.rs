//! Packing the entries a member sends: one gather launch per member,
//! `buf[i] = x[idx[i]]` ([`fn@crate::apps::permute`]), typed per scalar.

use crate::apps::permute;
use crate::{Device, DeviceVec, LaunchConfig, PreparedLaunch, Result, Scalar};

/// A scalar type whose gathered arrays a
/// [`Distributed`](super::Distributed) pattern exchanges: the pack
/// kernel's instance for it.
pub trait HaloScalar: Scalar {
    /// Prepares `buf[i] = x[idx[i]]` for `i < n` on `device`.
    fn prepare_pack<'a>(
        device: &'a Device,
        n: usize,
        idx: &'a DeviceVec<u32>,
        x: &'a DeviceVec<Self>,
        buf: &'a DeviceVec<Self>,
    ) -> Result<PreparedLaunch<'a>>;
}

macro_rules! halo_scalar {
    ($($t:ident),*) => {$(
        impl HaloScalar for $t {
            fn prepare_pack<'a>(
                device: &'a Device,
                n: usize,
                idx: &'a DeviceVec<u32>,
                x: &'a DeviceVec<$t>,
                buf: &'a DeviceVec<$t>,
            ) -> Result<PreparedLaunch<'a>> {
                permute::$t::prepare(device, &LaunchConfig::default(), n, idx, x, buf)
            }
        }
    )*};
}
halo_scalar!(f32, f64, u32, i32);

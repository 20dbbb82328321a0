//! The loop of an iterative app on the device: rounds enqueued ahead of the
//! one the host inspects, so that the device never waits for the host.
//!
//! Each round ends with a small readback (a changed count, CG's scalars,
//! or a marker value) pushed into a [`Readback`](crate::gpu::Readback)
//! ring; the host takes round `k`'s values while rounds up to
//! `k + depth - 1` are enqueued behind it. A loop that stops after round
//! `k` has therefore also run up to `depth - 1` more rounds: every app that
//! uses this driver makes such rounds harmless (a fixed point stays fixed;
//! CG's update is a no-op once its residual is below the tolerance).

use crate::gpu::spec::Scalar;
use crate::{Device, DeviceVec, Result};
use std::time::{Duration, Instant};

/// Rounds in flight: the one the host waits for and two behind it, enough
/// to cover the host's wake-up and launch time on rounds of tens of
/// microseconds, at a cost of at most two rounds past the last one needed.
pub(crate) const DEPTH: usize = 3;

/// What [`pipelined`] ran.
#[derive(Debug)]
pub(crate) struct Rounds {
    /// Rounds inspected: the one that stopped the loop, or `max_rounds`.
    pub inspected: usize,
    /// Per inspected round: the time since the previous inspection (the
    /// first from the loop's start), i.e. the device's pace once the queue
    /// is full, host overhead included where the host falls behind.
    pub times: Vec<Duration>,
}

/// Runs rounds `1..=max_rounds`: `launch(k)` enqueues round `k`, then the
/// driver pushes a readback of `probe` (without one, a marker: the host
/// only waits); with up to `depth` rounds in flight it waits for the
/// oldest and calls `inspect(k, values)`, which returns `true` to stop
/// after round `k`. Rounds already enqueued past the stopping one still
/// run (see the module's note).
pub(crate) fn pipelined<T: Scalar>(
    device: &Device,
    probe: Option<&DeviceVec<T>>,
    depth: usize,
    max_rounds: usize,
    launch: &mut dyn FnMut(usize) -> Result<()>,
    inspect: &mut dyn FnMut(usize, &[T]) -> Result<bool>,
) -> Result<Rounds> {
    let mut readback = device.readback::<T>(probe.map_or(1, DeviceVec::len), depth)?;
    let mut launched = 0;
    let mut inspected = 0;
    let mut times = Vec::new();
    let mut last = Instant::now();
    while inspected < max_rounds {
        while launched < max_rounds && !readback.is_full() {
            launched += 1;
            launch(launched)?;
            match probe {
                Some(p) => readback.push(p)?,
                None => readback.push_marker()?,
            }
        }
        let values = readback.take()?;
        inspected += 1;
        let now = Instant::now();
        times.push(now - last);
        last = now;
        if inspect(inspected, values)? {
            return Ok(Rounds { inspected, times });
        }
    }
    Ok(Rounds { inspected, times })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_the_inspected_round_and_runs_at_most_depth_minus_one_more() {
        let device = Device::cpu();
        let probe = device.upload(&[7u32]).unwrap();
        let mut launched = Vec::new();
        let rounds = pipelined(
            &device,
            Some(&probe),
            3,
            100,
            &mut |k| {
                launched.push(k);
                Ok(())
            },
            &mut |k, v| {
                assert_eq!(v, &[7]);
                Ok(k == 5)
            },
        )
        .unwrap();
        assert_eq!(rounds.inspected, 5);
        assert_eq!(rounds.times.len(), 5);
        assert_eq!(launched, (1..=7).collect::<Vec<_>>());
    }

    #[test]
    fn runs_exactly_max_rounds_without_a_stop() {
        let device = Device::cpu();
        let probe = device.upload(&[1.5f64]).unwrap();
        let mut launched = 0;
        let rounds = pipelined(
            &device,
            Some(&probe),
            3,
            4,
            &mut |_| {
                launched += 1;
                Ok(())
            },
            &mut |_, v| {
                assert_eq!(v, &[1.5]);
                Ok(false)
            },
        )
        .unwrap();
        assert_eq!((rounds.inspected, launched), (4, 4));
        let none = pipelined(&device, Some(&probe), 3, 0, &mut |_| Ok(()), &mut |_, _| {
            Ok(true)
        })
        .unwrap();
        assert_eq!((none.inspected, none.times.len()), (0, 0));
        let marked = pipelined::<u8>(&device, None, 2, 3, &mut |_| Ok(()), &mut |_, v| {
            assert!(v.is_empty());
            Ok(false)
        })
        .unwrap();
        assert_eq!(marked.inspected, 3);
    }
}

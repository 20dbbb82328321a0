//! The loop of an iterative app on the device: rounds enqueued ahead of the
//! one the host inspects, so that the device never waits for the host.
//!
//! Each round ends with a [`Probe`]: values the round's last kernel wrote
//! into host-mapped memory (a changed count, CG's scalars), or only a
//! marker; the host waits for round `k` on a
//! [`Readback`](crate::Readback) ring of markers while rounds up to
//! `k + depth - 1` are enqueued behind it. No copy enters the stream: a
//! device-to-host copy between two kernels costs the device several
//! microseconds, a tenth of a round of a 4M-row grid (`BENCHMARKS.md`). A loop that stops after round
//! `k` has therefore also run up to `depth - 1` more rounds: every app that
//! uses this driver makes such rounds harmless (a fixed point stays fixed;
//! CG's update is a no-op once its residual is below the tolerance).

use super::IterationTimes;
use crate::Scalar;
use crate::{Device, DeviceVec, Result};
use std::time::Instant;

/// Rounds in flight: the one the host waits for and two behind it, enough
/// to cover the host's wake-up and launch time on rounds of tens of
/// microseconds, at a cost of at most two rounds past the last one needed.
pub const DEPTH: usize = 3;

/// What [`pipelined`] ran.
#[derive(Debug)]
pub struct Rounds {
    /// Rounds inspected: the one that stopped the loop, or `max_rounds`.
    pub inspected: usize,
    /// Per inspected round: the time since the previous inspection (the
    /// first from the loop's start), i.e. the device's pace once the queue
    /// is full, host overhead included where the host falls behind.
    pub times: IterationTimes,
}

/// What the host reads after each round.
#[derive(Debug, Clone, Copy)]
pub enum Probe<'a, T: Scalar> {
    /// Nothing: a marker paces the host.
    Marker,
    /// Written by the round itself into slot [`slot_of`]`(k, depth)` of a
    /// host-mapped array ([`Device::alloc_mapped`]) of `depth` slots of
    /// `len` elements.
    Mapped { slots: &'a DeviceVec<T>, len: usize },
}

/// The slot of round `k` (from 1) in a ring of `depth` slots.
pub fn slot_of(k: usize, depth: usize) -> usize {
    (k - 1) % depth
}

/// Runs rounds `1..=max_rounds`: `launch(k)` enqueues round `k`, then the
/// driver pushes the round's [`Probe`]; with up to `depth` rounds in
/// flight it waits for the oldest and calls `inspect(k, values)`, which
/// returns `true` to stop after round `k`. Rounds already enqueued past
/// the stopping one still run (see the module's note).
pub fn pipelined<T: Scalar>(
    device: &Device,
    probe: Probe<'_, T>,
    depth: usize,
    max_rounds: usize,
    launch: &mut dyn FnMut(usize) -> Result<()>,
    inspect: &mut dyn FnMut(usize, &[T]) -> Result<bool>,
) -> Result<Rounds> {
    let len = match probe {
        Probe::Marker => 1,
        Probe::Mapped { slots, len } => {
            if slots.len() != len * depth {
                return Err(crate::Error::length(
                    "the mapped probe (depth x values per round)",
                    len * depth,
                    slots.len(),
                ));
            }
            len
        }
    };
    let mut readback = device.readback::<T>(len, depth)?;
    // The buffer a mapped slot is read into (its initial values unused).
    let mut mapped = match probe {
        Probe::Mapped { slots, len } => {
            let mut v = slots.to_vec()?;
            v.truncate(len);
            v
        }
        _ => Vec::new(),
    };
    let mut launched = 0;
    let mut inspected = 0;
    let mut times = IterationTimes::new();
    let mut last = Instant::now();
    while inspected < max_rounds {
        while launched < max_rounds && !readback.is_full() {
            launched += 1;
            launch(launched)?;
            readback.push_marker()?;
        }
        let mut values = readback.take()?;
        inspected += 1;
        if let Probe::Mapped { slots, len } = probe {
            slots.read_completed(slot_of(inspected, depth) * len, &mut mapped)?;
            values = &mapped;
        }
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
        let probe = device.upload(&[7u32, 7, 7]).unwrap();
        let mut launched = Vec::new();
        let rounds = pipelined(
            &device,
            Probe::Mapped {
                slots: &probe,
                len: 1,
            },
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
        let probe = device.upload(&[1.5f64, 1.5, 1.5]).unwrap();
        let mut launched = 0;
        let rounds = pipelined(
            &device,
            Probe::Mapped {
                slots: &probe,
                len: 1,
            },
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
        let mapped = Probe::Mapped {
            slots: &probe,
            len: 1,
        };
        let none = pipelined(&device, mapped, 3, 0, &mut |_| Ok(()), &mut |_, _| Ok(true)).unwrap();
        assert_eq!((none.inspected, none.times.len()), (0, 0));
        // The mapped array must hold depth slots of `len`.
        let short = pipelined(&device, mapped, 2, 1, &mut |_| Ok(()), &mut |_, _| Ok(true));
        assert!(short.is_err());
        let marked = pipelined::<u8>(
            &device,
            Probe::Marker,
            2,
            3,
            &mut |_| Ok(()),
            &mut |_, v| {
                assert!(v.is_empty());
                Ok(false)
            },
        )
        .unwrap();
        assert_eq!(marked.inspected, 3);
    }
}

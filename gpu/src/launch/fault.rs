//! The launch's fault record read back as the error the CPU twin returns
//! for the same fault (fault.cuh records it; docs/codegen.md, "Faults").

use crate::abi::{FaultKind, FaultRecord};
use crate::spec::KernelSpec;
use warpfit_runtime::exec::Fault;
use warpfit_runtime::{Error, Segment};

/// The error for `rec`, or `None` when no thread recorded a fault.
/// `array_len` gives the element count of an array parameter by position;
/// `segment` gives the launch's task-list segment by id (`None` over all
/// tasks).
pub(crate) fn fault_error(
    spec: &KernelSpec,
    rec: &FaultRecord,
    array_len: impl Fn(usize) -> Option<u64>,
    segment: impl Fn(usize) -> Option<Segment>,
) -> Option<Error> {
    if rec.claimed == 0 {
        return None;
    }
    let name = spec.name;
    let task = rec.task as usize;
    Some(match FaultKind::from_code(rec.kind) {
        Some(FaultKind::Index) => {
            let array = rec.array as usize;
            match spec.params.get(array) {
                // A push outside the worklist's universe (its "length").
                Some(p) if p.kind == crate::spec::ParamKind::Worklist => Fault::Push {
                    worklist: p.name,
                    item: rec.index,
                    universe: array_len(array).unwrap_or(0),
                }
                .into_error(name, task),
                Some(p) => Fault::Index {
                    array: p.name,
                    index: rec.index,
                    len: array_len(array).unwrap_or(0),
                }
                .into_error(name, task),
                None => Error::Cuda {
                    context: format!("kernel `{name}`, task {task}"),
                    message: format!(
                        "out-of-range index {} into unknown parameter {array}",
                        rec.index
                    ),
                },
            }
        }
        Some(FaultKind::DivisionByZero) => Fault::DivisionByZero.into_error(name, task),
        Some(FaultKind::Segment) => {
            let seg = usize::try_from(rec.index)
                .ok()
                .and_then(segment)
                .unwrap_or_default();
            Fault::SegmentOutOfRange {
                lo: u64::from(seg.lo),
                hi: u64::from(seg.hi),
                task_lo: rec.aux0,
                task_hi: rec.aux1,
            }
            .into_error(name, task)
        }
        None => Error::Cuda {
            context: format!("kernel `{name}`"),
            message: format!("unknown fault kind {} in the fault record", rec.kind),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::spec::X_TO_Y as SPEC;

    fn record(kind: FaultKind) -> FaultRecord {
        FaultRecord {
            claimed: 1,
            kind: kind.code(),
            array: 1,
            task: 7,
            index: 12,
            aux0: 3,
            aux1: 9,
            ..Default::default()
        }
    }

    fn lens(i: usize) -> Option<u64> {
        [Some(4), Some(10)][i]
    }

    /// The error the CPU twin returns for `fault` in task 7.
    fn cpu(fault: Fault) -> String {
        fault.into_error("k", 7).to_string()
    }

    #[test]
    fn no_claim_is_no_fault() {
        assert!(fault_error(&SPEC, &FaultRecord::default(), lens, |_| None).is_none());
    }

    #[test]
    fn each_kind_is_the_cpu_twins_error() {
        let e = fault_error(&SPEC, &record(FaultKind::Index), lens, |_| None).unwrap();
        assert!(matches!(e, Error::IndexOutOfRange { len: 10, .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            cpu(Fault::Index {
                array: "y",
                index: 12,
                len: 10
            })
        );
        let e = fault_error(&SPEC, &record(FaultKind::DivisionByZero), lens, |_| None).unwrap();
        assert_eq!(e.to_string(), cpu(Fault::DivisionByZero));
        let mut segs = [Segment::default(); 13];
        segs[12] = Segment::new(7, 1, 20);
        let e = fault_error(&SPEC, &record(FaultKind::Segment), lens, |i| {
            segs.get(i).copied()
        })
        .unwrap();
        assert_eq!(
            e.to_string(),
            cpu(Fault::SegmentOutOfRange {
                lo: 1,
                hi: 20,
                task_lo: 3,
                task_hi: 9
            })
        );
    }

    #[test]
    fn a_push_outside_the_universe_is_the_twins_error() {
        use crate::spec::{AccType, ParamKind, ParamSpec, ScalarType};
        static PUSHES: KernelSpec = KernelSpec {
            name: "k",
            cuda_source: "",
            device_fns: &[],
            params: &[
                ParamSpec {
                    name: "x",
                    ty: ScalarType::F32,
                    kind: ParamKind::Input,
                },
                ParamSpec {
                    name: "out",
                    ty: ScalarType::U32,
                    kind: ParamKind::Worklist,
                },
            ],
            acc: AccType::Scalar(ScalarType::U8),
            elementwise: false,
            donates: false,
            index_encoding: crate::spec::IndexEncoding::Plain,
            columns: None,
            checks_at_end_columns: false,
        };
        let e = fault_error(&PUSHES, &record(FaultKind::Index), lens, |_| None).unwrap();
        assert_eq!(
            e.to_string(),
            cpu(Fault::Push {
                worklist: "out",
                item: 12,
                universe: 10
            })
        );
        assert!(
            e.to_string().contains("item pushed to worklist `out`"),
            "{e}"
        );
    }

    #[test]
    fn records_the_host_cannot_place_are_named() {
        let mut rec = record(FaultKind::Index);
        rec.array = 5;
        let e = fault_error(&SPEC, &rec, lens, |_| None)
            .unwrap()
            .to_string();
        assert!(e.contains("unknown parameter 5"), "{e}");
        rec.kind = 9;
        let e = fault_error(&SPEC, &rec, lens, |_| None)
            .unwrap()
            .to_string();
        assert!(e.contains("unknown fault kind 9"), "{e}");
    }
}

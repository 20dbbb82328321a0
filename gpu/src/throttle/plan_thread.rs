//! The handle's side of the plan thread: where the plan is
//! ([`Throttled::status`]), a finished plan taken in before a launch, or
//! waited for, and installed for the next launch to lay out.

use crate::throttle::handle::{ThrottleStatus, Throttled};
use crate::throttle::host_plan::{HostPlan, PendingPlan};
use warpfit_runtime::schedule::ThrottlePolicy;
use warpfit_runtime::{Error, Result};

impl Throttled {
    /// Where the plan is.
    pub fn status(&self) -> ThrottleStatus {
        match (&self.pending, &self.schedule) {
            (Some(_), _) => ThrottleStatus::Planning,
            (None, Some(s)) => ThrottleStatus::Running(s.policy),
            // `auto` by the model decides on the first launch.
            (None, None) if self.plans_on_device() => ThrottleStatus::Profiling,
            (None, None) if self.report.chosen == ThrottlePolicy::Org => {
                ThrottleStatus::Running(ThrottlePolicy::Org)
            }
            (None, None) => ThrottleStatus::Profiling,
        }
    }

    /// Takes a plan in: the next launch lays it out and runs the asked
    /// schedule (profiling first where the policy does).
    pub(in crate::throttle) fn install(&mut self, plan: HostPlan) {
        self.report
            .record_plan(plan.partitions, plan.planning, plan.detail.is_some());
        self.plan = Some(plan);
        self.schedule = None;
        self.spare = None;
        self.kept_configs.clear();
    }

    /// Takes a finished plan in (before a launch).
    pub(in crate::throttle) fn take_finished_plan(&mut self) -> Result<()> {
        if self.pending.as_ref().is_some_and(PendingPlan::is_finished) {
            self.wait_for_plan()?;
        }
        Ok(())
    }

    /// Waits for a pipelined plan and takes it in, so that the next launch
    /// runs the planned schedule.
    ///
    /// # Errors
    /// The planner's errors.
    pub fn wait_for_plan(&mut self) -> Result<()> {
        if let Some(handle) = self.pending.take() {
            let plan = handle.join().map_err(|_| Error::Unavailable {
                what: format!("the plan of kernel `{}`", self.spec.name),
                reason: "the planning thread panicked".into(),
            })??;
            self.install(plan);
        }
        Ok(())
    }
}

#[cfg(test)]
pub(in crate::throttle) mod tests {
    use super::*;
    use crate::config::LaunchConfig;
    use crate::driver::device::Device;
    use crate::launch::arg::Arg;
    use crate::launch::cpu_args::CpuArgs;
    use crate::throttle::handle::HostArray;
    use crate::throttle::host_plan::tests::SPMV;
    use crate::throttle::host_plan::{plan_on_host, Shape};
    use crate::throttle::roles::SPMV_ROLES;
    use warpfit_runtime::partition::WorkGraph;
    use warpfit_runtime::schedule::ThrottleOptions;
    use warpfit_runtime::{gen, Csr};

    fn no_twin(_: &CpuArgs<'_>, _: usize) -> Result<()> {
        Ok(())
    }

    /// A CPU handle for `a` under `policy`: the CPU plans nothing itself.
    pub(in crate::throttle) fn cpu_handle(a: &Csr<f32>, policy: ThrottlePolicy) -> Throttled {
        let shape: Vec<Option<Box<dyn HostArray>>> = vec![
            Some(Box::new(a.row_ptr().to_vec())),
            Some(Box::new(a.col_idx().to_vec())),
            Some(Box::new(a.values().to_vec())),
            None,
            None,
        ];
        Throttled::pipelined(
            &Device::Cpu,
            &SPMV,
            SPMV_ROLES,
            &ThrottleOptions::default().with_policy(policy),
            &LaunchConfig::default(),
            a.nrows(),
            a.ncols(),
            Some(WorkGraph::from_csr(a).unwrap()),
            shape,
            no_twin,
        )
        .unwrap()
    }

    /// A plan of `a` made on a thread, with a 4 KiB cache (several
    /// partitions).
    fn plan_thread(a: &Csr<f32>, policy: ThrottlePolicy) -> PendingPlan {
        let graph = WorkGraph::from_csr(a).unwrap();
        let ptr: Vec<u8> = a.row_ptr().iter().flat_map(|p| p.to_ne_bytes()).collect();
        std::thread::spawn(move || {
            let shape: Shape<'_> = vec![
                Some((&ptr[..], crate::spec::ScalarType::U32)),
                None,
                None,
                None,
                None,
            ];
            let options = ThrottleOptions::default().with_policy(policy);
            plan_on_host(&SPMV, SPMV_ROLES, &options, 4 << 10, &graph, &shape)
        })
    }

    #[test]
    fn a_cpu_handle_runs_org_without_a_plan_thread() {
        let a = gen::uniform(512, 4, 1).unwrap();
        let t = cpu_handle(&a, ThrottlePolicy::Cf);
        assert_eq!(t.status(), ThrottleStatus::Running(ThrottlePolicy::Org));
        assert_eq!(t.report().partitions, 0);
    }

    #[test]
    fn the_status_follows_the_plan_from_planning_to_running() {
        let a = gen::uniform(4096, 8, 3).unwrap();
        let mut t = cpu_handle(&a, ThrottlePolicy::Cf);
        t.pending = Some(plan_thread(&a, ThrottlePolicy::Cf));
        assert_eq!(t.status(), ThrottleStatus::Planning);
        t.wait_for_plan().unwrap();
        assert!(t.pending.is_none());
        assert!(t.report().partitions > 1, "{}", t.report().partitions);
        // The plan is in; the next launch lays it out.
        assert_eq!(t.status(), ThrottleStatus::Profiling);
        let x = vec![1f32; a.ncols()];
        let mut y = vec![0f32; a.nrows()];
        t.launch(&mut [Arg::input(&x), Arg::output(&mut y)])
            .unwrap();
        // The CPU runs the twin over the original arrays.
        assert_eq!(t.status(), ThrottleStatus::Running(ThrottlePolicy::Org));
        // Waiting again without a thread does nothing.
        t.wait_for_plan().unwrap();
    }

    #[test]
    fn a_finished_plan_is_taken_in_before_a_launch_and_a_pending_one_is_not() {
        let a = gen::uniform(4096, 8, 3).unwrap();
        let mut t = cpu_handle(&a, ThrottlePolicy::Cf);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let plan = plan_thread(&a, ThrottlePolicy::Cf);
        t.pending = Some(std::thread::spawn(move || {
            rx.recv().ok();
            plan.join().unwrap()
        }));
        t.take_finished_plan().unwrap();
        assert_eq!(t.status(), ThrottleStatus::Planning);
        tx.send(()).unwrap();
        while !t.pending.as_ref().unwrap().is_finished() {
            std::thread::yield_now();
        }
        t.take_finished_plan().unwrap();
        assert_eq!(t.status(), ThrottleStatus::Profiling);
    }

    #[test]
    fn a_panicking_plan_thread_is_an_error_naming_the_kernel() {
        let a = gen::uniform(256, 4, 1).unwrap();
        let mut t = cpu_handle(&a, ThrottlePolicy::Cf);
        t.pending = Some(std::thread::spawn(|| panic!("planner")));
        let e = t.wait_for_plan().unwrap_err().to_string();
        assert!(e.contains("kernel `spmv`") && e.contains("panicked"), "{e}");
    }

    #[test]
    fn one_partition_makes_the_plan_the_unthrottled_launch() {
        let a = gen::uniform(16, 2, 1).unwrap();
        let mut t = cpu_handle(&a, ThrottlePolicy::Sj);
        let graph = WorkGraph::from_csr(&a).unwrap();
        let ptr: Vec<u8> = a.row_ptr().iter().flat_map(|p| p.to_ne_bytes()).collect();
        let shape: Shape<'_> = vec![
            Some((&ptr[..], crate::spec::ScalarType::U32)),
            None,
            None,
            None,
            None,
        ];
        let options = ThrottleOptions::default().with_policy(ThrottlePolicy::Sj);
        let plan = plan_on_host(&SPMV, SPMV_ROLES, &options, 1 << 30, &graph, &shape).unwrap();
        assert_eq!(plan.partitions, 1);
        t.install(plan);
        assert_eq!(t.status(), ThrottleStatus::Running(ThrottlePolicy::Org));
        assert_eq!(t.report().chosen, ThrottlePolicy::Org);
    }
}

//! The throttled handle's schedules, one file per family of policies:
//! single launches (`org`, `org_r`), carried launches over a cover (`cf`,
//! `sj`), queued task lists over a cover (`cfq`, `sjq`), and the choice of
//! one for the asked policy.

mod carried_schedule;
mod queued_schedule;
mod schedule_choice;
mod single_launch;

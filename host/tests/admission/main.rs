//! Admission on virtual time: every figure here comes from the scheduler's own clock, so the
//! runs are deterministic and take no wall time to wait.

mod control;
mod deadlines;
mod fairness;
mod holds;
mod limits;
mod models;
mod monthly;
mod priority;
mod remaining;
mod sim;
mod utilization;

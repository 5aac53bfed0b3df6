//! Never a duplicated side effect: safe writes judged by what the provider received — through
//! crashes, damaged, restored or lost state, spent quotas and budgets, pools, and a group of
//! hosts sharing one journal.
//!
//! One test binary of the area (`cargo test -p sluice-tests --test never_twice`); a file is one
//! concern, run alone with its module's name as the filter (`-- writes_wire::`).

mod crash;
mod group_journal;
mod lost_records;
mod pool_writes;
mod quota_writes;
mod state_damage;
mod task_decision;
mod write_sim;
mod writes_lookup;
mod writes_wire;

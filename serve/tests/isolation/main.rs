//! One tenant cannot hurt another: two agents of two tenants on one credential behind the
//! sidecar, in front of a strict fake provider, one misbehaving beside one that does not.

#[path = "../support/mod.rs"]
mod support;

mod breakers;
mod credentials;
mod listener;
mod neighbours;
mod tasks;

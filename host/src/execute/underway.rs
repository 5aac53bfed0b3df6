//! A call under way, and what it gives back when its caller leaves before it ends.
//!
//! A caller may drop a call at any await: an agent that hangs up on `sluice serve` (its
//! connection closes, and the request's future with it), an embedder that drops the
//! `execute` future or cancels its task. Nothing more runs for the call then, so whatever it
//! would have settled at its end must be settled by dropping it. What an abandoned call
//! leaves is judged by evidence, like any other:
//!
//! - **its paths' breakers learn nothing.** No answer came back (or none was read), so no
//!   failure is counted on the credential's path, nor on its tenant's: a caller's hang-up is
//!   not evidence about the provider. A breaker probe the call took (it was the one call let
//!   through a half-open path) goes back, so the next call probes at once rather than every
//!   tenant of the credential waiting out another open time for an answer that will never
//!   be read.
//! - **its charge against its tenant's budgets follows what was sent.** Nothing sent (it was
//!   dropped in the queue, or before its first send): the charge is given back. An attempt
//!   sent (it may have reached the provider, which may bill it): the usage an answer
//!   reported, when one did, else the estimate stands — as for any call sent whose usage is
//!   unknown ([`crate::budget`]). A stream under way is the caller's [`super::Stream`], which
//!   settles itself when dropped: what its plugin counted of it.
//!
//! The rest is given back by the parts that hold it: a place in the queue or an admission
//! permit (its quota keeps the estimate of an attempt that may have been sent), a place among
//! the scope's delayed retries, a lease of the shared store.

use super::Executor;
use super::attempt::Prepared;
use super::tally::Tally;
use crate::budget::Reservation;
use crate::offload;

/// A call between its checks and its end: its plan, what it has done, and its charge.
pub(super) struct Underway<'a> {
    /// The executor that runs it, to give back to if its caller leaves; `None` once it
    /// ended and settled its paths and its charge itself. (One word for both: a waiting
    /// call holds this inline, `benches/call_memory.rs`.)
    pub(super) leaving_to: Option<&'a Executor>,
    pub(super) p: Prepared,
    pub(super) t: Tally,
    /// The call's charge against its tenant's budgets, once made.
    pub(super) reservation: Option<Box<Reservation>>,
}

impl<'a> Underway<'a> {
    /// A call run by `executor`, planned as `p`.
    pub(super) fn new(executor: &'a Executor, p: Prepared) -> Self {
        Self {
            leaving_to: Some(executor),
            p,
            t: Tally::default(),
            reservation: None,
        }
    }

    /// The call ended, and settles its paths and its charge itself.
    pub(super) fn ended(&mut self) {
        self.leaving_to = None;
    }
}

impl Drop for Underway<'_> {
    fn drop(&mut self) {
        let Some(executor) = self.leaving_to else {
            return;
        };
        tracing::debug!(
            tenant = %self.p.tenant,
            attempts = self.t.attempts,
            "the caller left before the call ended: its probes and its unsent charge go back"
        );
        executor.breakers.release(&self.p.paths);
        let Some(r) = self.reservation.take() else {
            return;
        };
        let remote = r.waits_on_network();
        if self.t.attempts == 0 {
            offload::detached(remote, move || (*r).release());
        } else if let Some(&(billed, cache)) = self.p.billed.as_deref() {
            offload::detached(remote, move || (*r).settle(Some(billed), cache));
        }
    }
}

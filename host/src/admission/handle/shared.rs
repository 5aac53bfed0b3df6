//! The handle's side of quotas shared with other hosts ([`crate::admission::shared`]): a
//! ticket the local queue admitted passes the store's gate, and what a response teaches
//! this host about a scope is shared with the others.

#[allow(clippy::wildcard_imports, reason = "the handle's own internals")]
use super::*;
use crate::admission::limits::MINUTE;

impl Shared {
    /// Shares the scope named `key` as it now stands here (its hold, its learned limits)
    /// with the hosts sharing the store, if any; `remaining` is what a response said is left
    /// of one of its quotas.
    ///
    /// The figure lands in one quota, as locally (`Scope::learn`): the one of the stated
    /// window, else the dimension's shortest of a minute or less — a figure without a
    /// window is about the per-minute quota, never the daily one.
    pub(super) fn share_with(&self, key: &ScopeKey, remaining: Option<Remaining>) {
        let Some(gate) = &self.gate else {
            return;
        };
        let mut figures = {
            let mut state = self.lock();
            state.scheduler.figures(self.now(), key)
        };
        if let Some(r) = remaining {
            let mut of_dimension = figures
                .quotas
                .iter_mut()
                .filter(|q| q.dimension == r.dimension);
            let quota = match r.window {
                Some(w) => of_dimension.find(|q| q.window == w),
                None => of_dimension
                    .filter(|q| q.window <= MINUTE)
                    .min_by_key(|q| q.window),
            };
            if let Some(q) = quota {
                q.available = Some(r.left);
            }
        }
        gate.share(figures);
    }

    pub(super) fn share(&self, key: &ScopeKey) {
        self.share_with(key, None);
    }
}

/// What a response said is left of one quota of a scope.
#[derive(Debug, Clone, Copy)]
pub(super) struct Remaining {
    pub(super) dimension: crate::admission::usage::Dimension,
    pub(super) window: Option<Duration>,
    pub(super) left: u64,
}

/// What a ticket needs to pass the shared store's gate once the local queue admits it.
pub(super) struct Gated {
    pub(super) gate: Gate,
    pub(super) class: Class,
    pub(super) tenant: Arc<str>,
    pub(super) submitted: Nanos,
    pub(super) deadline: Option<Nanos>,
}

impl Gated {
    /// Passes `permit` through the gate: asks the store, and while it says wait, waits and
    /// asks again then.
    ///
    /// Meanwhile the scope that refused is paused here, a little past the time the store
    /// named, and extended at every refusal: this host admits nothing more to it until this
    /// call passed, so that it keeps one call at the gate per scope rather than a pile, and
    /// its own queue (classes, tenants' shares, deadlines) still decides what goes next. A
    /// pause is not a hold: it leaves the scope's buckets alone and is never shared, so
    /// pacing behind other hosts does not look like a 429 to anyone.
    pub(super) async fn pass(
        self,
        shared: Arc<Shared>,
        mut permit: Permit,
    ) -> Result<Permit, Refused> {
        let mut waiting = AtGate {
            shared: shared.clone(),
            scopes: Vec::new(),
            passed: false,
        };
        // Long enough for this call to ask again before the pause ends, even when the
        // store takes its whole timeout to answer.
        let slack = PAUSE_SLACK.max(self.gate.config().timeout);
        loop {
            let charges = shared.lock().scheduler.charges(permit.grant);
            let Some(call) = charges else {
                return Err(Refused::Cancelled);
            };
            match self.gate.pass(call).await {
                Passed::Go(lease) => {
                    permit.lease = Some((self.gate, lease));
                    waiting.passed = true;
                    return Ok(permit);
                }
                Passed::Wait {
                    scope,
                    wait,
                    reason,
                } => {
                    // The store's answer holds for every call of this host to the scope,
                    // whether or not this one waits for it.
                    let first = !waiting.scopes.contains(&scope);
                    shared.change(|state, now| {
                        if first {
                            state.scheduler.gate_enter(&scope);
                        }
                        let until = now.saturating_add(nanos(wait + slack));
                        state.scheduler.pause(&scope, until, &reason);
                    });
                    if first {
                        waiting.scopes.push(scope.clone());
                    }
                    let now = shared.now();
                    let until = now.saturating_add(nanos(wait));
                    if self.deadline.is_some_and(|d| until > d) {
                        // Never sent: its charges here are given back.
                        permit.complete(Some(Usage::default()));
                        return Err(Refused::Expired(Box::new(Why {
                            class: self.class,
                            tenant: self.tenant,
                            waited: Duration::from_nanos(now.saturating_sub(self.submitted)),
                            deadline: self.deadline,
                            waiting: crate::admission::outcome::Waiting::Scope {
                                scope,
                                block: Block::Held(Hold {
                                    until,
                                    reason: reason.into(),
                                }),
                            },
                        })));
                    }
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

/// How far past the store's answer a scope stays paused while a call of this host waits at
/// the gate for it, at least: enough for that call to ask again first (a round trip, a
/// busy machine); the store's timeout, when longer, is used instead. Were the call gone
/// (its caller hung up), the pause ends by itself this much later.
const PAUSE_SLACK: Duration = Duration::from_millis(100);

/// The scopes a call waits at the gate for; leaving (however the call ends, even dropped)
/// tells the scheduler. The last to leave lifts the scope's pause if it passed; one that
/// gave up leaves the pause to run out.
struct AtGate {
    shared: Arc<Shared>,
    scopes: Vec<ScopeKey>,
    passed: bool,
}

impl Drop for AtGate {
    fn drop(&mut self) {
        if self.scopes.is_empty() {
            return;
        }
        let scopes = std::mem::take(&mut self.scopes);
        let passed = self.passed;
        self.shared.change(|state, _| {
            for scope in &scopes {
                state.scheduler.gate_leave(scope, passed);
            }
        });
    }
}

//! What a caller holds: a [`Ticket`] while its request waits, a [`Permit`] once admitted.

#[allow(clippy::wildcard_imports, reason = "the handle's own internals")]
use super::*;

/// A submitted request: a future that resolves to its [`Permit`] when it is admitted, or to
/// why it was not. Dropping it before then withdraws the request; dropping it after it was
/// admitted but before it was awaited releases the grant.
#[must_use = "a ticket withdraws its request when dropped"]
pub struct Ticket {
    pub(super) id: RequestId,
    /// The member of its pool it was queued on, for a pool's request.
    pub(super) member: Option<Arc<str>>,
    pub(super) shared: Arc<Shared>,
    pub(super) rx: oneshot::Receiver<WaitEnd>,
    /// The outcome was received: nothing left to withdraw or release.
    pub(super) settled: bool,
    /// The shared store's gate to pass once admitted here, when the quotas are shared.
    pub(super) gated: Option<Box<Gated>>,
    /// The admitted permit passing that gate.
    pub(super) passing: Option<Passing>,
}

/// A permit on its way through the shared store's gate.
pub(super) type Passing = Pin<Box<dyn Future<Output = Result<Permit, Refused>> + Send>>;

impl Ticket {
    /// The request, for [`Admission::explain`].
    pub fn id(&self) -> RequestId {
        self.id
    }

    /// The member of its pool the request was queued on, for a pool's request (see
    /// [`Acquire::pool`]); `None`: it goes with its own credential.
    pub fn member(&self) -> Option<&Arc<str>> {
        self.member.as_ref()
    }

    /// Why the request is still waiting, or `None` once it is not.
    pub fn explain(&self) -> Option<Why> {
        let state = self.shared.lock();
        state.scheduler.explain(self.shared.now(), self.id)
    }
}

impl Future for Ticket {
    type Output = Result<Permit, Refused>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(passing) = &mut self.passing {
            let out = passing.as_mut().poll(cx);
            if out.is_ready() {
                self.passing = None;
            }
            return out;
        }
        assert!(!self.settled, "a Ticket polled after it resolved");
        let outcome = match Pin::new(&mut self.rx).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(outcome) => outcome,
        };
        self.settled = true;
        Poll::Ready(match outcome {
            Ok(WaitEnd::Admitted(grant)) => {
                let permit = Permit {
                    grant,
                    request: self.id,
                    shared: Arc::downgrade(&self.shared),
                    done: false,
                    lease: None,
                    member: self.member.take(),
                };
                let Some(gated) = self.gated.take() else {
                    return Poll::Ready(Ok(permit));
                };
                // Admitted here; now the hosts sharing the quotas must agree.
                let mut passing = Box::pin(gated.pass(self.shared.clone(), permit));
                let out = passing.as_mut().poll(cx);
                if out.is_pending() {
                    self.passing = Some(passing);
                }
                return out;
            }
            Ok(WaitEnd::Expired(why)) => Err(Refused::Expired(why)),
            // The sender is dropped unsent only when the request is gone from the handle.
            Ok(WaitEnd::Cancelled) | Err(_) => Err(Refused::Cancelled),
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let id = self.id;
        let rx = &mut self.rx;
        self.shared.change(|state, now| {
            if state.take_waiter(id).is_some() {
                state.scheduler.withdraw(id);
            } else {
                // Decided under the lock before we took it: admitted, expired or cancelled.
                rx.close();
                if let Ok(WaitEnd::Admitted(grant)) = rx.try_recv() {
                    state.scheduler.complete(now, grant, None);
                }
            }
        });
    }
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("id", &self.id)
            .field("settled", &self.settled)
            .finish_non_exhaustive()
    }
}

/// An admitted call: send it now. Report its actual usage with [`Permit::complete`];
/// dropping the permit without that releases it with its estimate charged, so its
/// concurrency slots are freed however the call ends.
#[must_use = "dropping a permit releases it at once"]
pub struct Permit {
    pub(super) grant: GrantId,
    pub(super) request: RequestId,
    /// Weak: a permit alone does not keep the scheduler (or its driver) alive.
    pub(super) shared: Weak<Shared>,
    pub(super) done: bool,
    /// The lease the shared store gave the call, ended with it.
    pub(super) lease: Option<(Gate, crate::admission::shared::Lease)>,
    /// The member of its pool it was admitted on, for a pool's request.
    pub(super) member: Option<Arc<str>>,
}

impl Permit {
    /// The grant the call holds.
    pub fn grant(&self) -> GrantId {
        self.grant
    }

    /// The member of its pool it was admitted on, for a pool's request (see
    /// [`Acquire::pool`]); `None`: it goes with its own credential.
    pub fn member(&self) -> Option<&Arc<str>> {
        self.member.as_ref()
    }

    /// The request it was admitted as.
    pub fn request(&self) -> RequestId {
        self.request
    }

    /// Completes the call: corrects its charge from the estimate to `actual` (when the
    /// response said; `None` keeps the estimate) and frees its concurrency slots.
    pub fn complete(mut self, actual: Option<Usage>) {
        self.finish(actual.as_ref());
    }

    /// The key of the call's credential scope (`name: None`), or of its narrower scope
    /// `name`: where what a response says about quotas lands. `None` once the handle is gone.
    pub fn observed_scope(&self, name: Option<&str>) -> Option<ScopeKey> {
        let shared = self.shared.upgrade()?;
        let state = shared.lock();
        state.scheduler.observed_scope(self.grant, name)
    }

    /// Records what the plugin's `parse-quota` read from the call's response (see
    /// [`Scheduler::observe`]); call it before completing the permit. Returns how many
    /// observations were recorded: none once the handle is gone.
    pub fn observe(&self, observations: &[Observation]) -> usize {
        let Some(shared) = self.shared.upgrade() else {
            return 0;
        };
        let recorded =
            shared.change(|state, now| state.scheduler.observe(now, self.grant, observations));
        if shared.gate.is_some() {
            for o in observations {
                let Some(dimension) = super::super::usage::Dimension::from_policy(&o.dimension)
                else {
                    continue;
                };
                let key = shared
                    .lock()
                    .scheduler
                    .observed_scope(self.grant, o.scope.as_deref());
                if let Some(key) = key {
                    let remaining = o.remaining.map(|left| Remaining {
                        dimension,
                        window: o.window_ms.map(Duration::from_millis),
                        left,
                    });
                    shared.share_with(&key, remaining);
                }
            }
        }
        recorded
    }

    /// Holds the call's credential scope (`name: None`) or its narrower scope `name` for
    /// `retry_after` from now: call it on a 429, before retrying. Returns `false` when the
    /// handle is gone.
    pub fn hold_scope(&self, name: Option<&str>, retry_after: Duration, reason: &str) -> bool {
        let Some(shared) = self.shared.upgrade() else {
            return false;
        };
        let key = shared.change(|state, now| {
            let key = state.scheduler.observed_scope(self.grant, name)?;
            let until = now.saturating_add(nanos(retry_after));
            state.scheduler.hold(now, &key, until, reason);
            Some(key)
        });
        // Reported outside the lock: a subscriber may write to a terminal or a socket.
        key.inspect(|key| {
            held(key, retry_after, reason);
            shared.share(key);
        })
        .is_some()
    }

    fn finish(&mut self, actual: Option<&Usage>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        if let Some((gate, lease)) = self.lease.take() {
            gate.finish(lease, actual.copied());
        }
        if let Some(shared) = self.shared.upgrade() {
            let grant = self.grant;
            shared.change(|state, now| state.scheduler.complete(now, grant, actual));
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.finish(None);
    }
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("grant", &self.grant)
            .field("request", &self.request)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

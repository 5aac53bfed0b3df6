//! The gate a locally admitted call passes before it is sent: the shared store while it
//! answers, local conservative pacing while it does not; and the upkeep around it (renewing
//! the leases of calls in flight, probing a store that went away).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::answers::{Refusal, SliceAsk, Sliced, StoreError, Verdict};
use super::fallback::{Fallback, Local};
use super::redis::RedisStore;
use super::slices::{Need, Slices, Take, Taken};
use super::{ScopeFigures, SharedConfig, SharedConfigError};
use crate::admission::bucket::Nanos;
use crate::admission::scope::ScopeKey;
use crate::admission::usage::Usage;
use crate::clock::Clock;

/// The gate could not be set up.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GateError {
    /// A setting cannot work.
    #[error("store: {0}")]
    Config(#[from] SharedConfigError),
    /// The Redis client could not be made.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The ownership epoch this host joined could not be read.
    #[error("store: {0}")]
    Epoch(#[from] super::EpochFileError),
}

/// What the gate decided for one call.
#[derive(Debug)]
pub enum Passed {
    /// Send it; end the lease with [`Gate::finish`].
    Go(Lease),
    /// Not yet: the scope `scope` takes it in `wait` at the earliest.
    Wait {
        /// The scope that refused.
        scope: ScopeKey,
        /// How long to wait before asking again.
        wait: Duration,
        /// Why, in words, for an operator.
        reason: String,
    },
}

/// A call that passed the gate: what it charged and the leases it holds.
#[derive(Debug)]
pub struct Lease {
    id: String,
    call: Vec<ScopeFigures>,
    lease_keys: Vec<String>,
    /// Each quota's schedule end: in the store (µs on its clock), or in local pacing (ns on
    /// the gate's), as `shared` says.
    ends: Vec<u64>,
    /// Admitted by the store (else by local pacing).
    shared: bool,
    /// Taken from this host's slices of the store's quotas (then nothing else is held).
    sliced: Vec<Taken>,
}

impl Lease {
    /// The lease's name in the store (empty for a call taken from this host's slices,
    /// which holds nothing there).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the shared store admitted it (else local pacing did, the store being away).
    pub fn shared(&self) -> bool {
        self.shared
    }

    /// Whether it was taken from a slice this host holds of the store's quotas, without a
    /// round trip of its own.
    pub fn sliced(&self) -> bool {
        !self.sliced.is_empty()
    }
}

/// The gate; cheap to clone.
#[derive(Debug, Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: RedisStore,
    config: SharedConfig,
    host_id: String,
    clock: Arc<dyn Clock>,
    origin: Instant,
    up: AtomicBool,
    /// This process, among any that might use the same host id: part of its lease ids.
    nonce: String,
    /// Another live process holds this host id: claims are refused until it is gone.
    clash: AtomicBool,
    next_lease: AtomicU64,
    state: Mutex<State>,
    runtime: tokio::runtime::Handle,
    /// The ownership epoch this host joined (see [`super::ownership`]).
    ownership: super::ownership::Ownership,
    /// Whether the store can lose a claim, as it last said.
    durability: super::durability::Durability,
    /// Wakes the calls that wait for another call's slice of a quota.
    sliced: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct State {
    fallback: Fallback,
    slices: Slices,
    /// The lease sets each live lease is in, by lease id: renewed, and put back after the
    /// store lost them.
    live: HashMap<String, Vec<String>>,
    probing: bool,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> Nanos {
        let elapsed = self.clock.now().saturating_duration_since(self.origin);
        u64::try_from(elapsed.as_nanos()).unwrap_or(Nanos::MAX)
    }
}

impl Gate {
    /// A gate on the store `config` names, for the host `host_id`, keeping the ownership
    /// epoch it joins in `epoch_file` (in the state directory: see [`super::ownership`];
    /// `None`: in memory, so a restart cannot tell a store that lost its state). Spawns the
    /// task that renews leases on the current tokio runtime; it stops when the last clone
    /// is gone.
    ///
    /// # Errors
    /// [`GateError`] for settings that cannot work, or an epoch file that cannot be read.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(
        config: SharedConfig,
        host_id: String,
        clock: Arc<dyn Clock>,
        epoch_file: Option<std::path::PathBuf>,
    ) -> Result<Self, GateError> {
        config.validate()?;
        let ownership = super::ownership::Ownership::new(epoch_file)?;
        let store = RedisStore::new(&config)?;
        metrics::gauge!(crate::observe::SHARED_STORE_UP).set(1.0);
        let inner = Arc::new(Inner {
            store,
            host_id,
            origin: clock.now(),
            clock,
            up: AtomicBool::new(true),
            nonce: format!("{:016x}", fastrand::u64(..)),
            clash: AtomicBool::new(false),
            next_lease: AtomicU64::new(0),
            state: Mutex::new(State::default()),
            runtime: tokio::runtime::Handle::current(),
            ownership,
            durability: super::durability::Durability::default(),
            sliced: tokio::sync::Notify::new(),
            config,
        });
        inner.runtime.spawn(renew_leases(
            Arc::downgrade(&inner),
            inner.config.lease_ttl / 3,
        ));
        if !inner.config.slice.is_zero() {
            inner
                .runtime
                .spawn(settle_slices(Arc::downgrade(&inner), inner.config.slice));
        }
        Ok(Self { inner })
    }

    /// The store's settings.
    pub fn config(&self) -> &SharedConfig {
        &self.inner.config
    }

    /// This host's name in the store.
    pub fn host_id(&self) -> &str {
        &self.inner.host_id
    }

    /// The store itself.
    pub fn store(&self) -> &RedisStore {
        &self.inner.store
    }

    /// The ownership epoch this host joined.
    pub(super) fn ownership(&self) -> &super::ownership::Ownership {
        &self.inner.ownership
    }

    /// Whether the store can lose a claim, as it last said.
    pub(super) fn durability(&self) -> &super::durability::Durability {
        &self.inner.durability
    }

    /// The gate's clock, now.
    pub(super) fn clock_now(&self) -> Instant {
        self.inner.clock.now()
    }

    /// Whether the store lost its state since this host joined it: actions this host's
    /// journal does not hold are refused until an operator recovers it.
    pub fn store_lost_state(&self) -> bool {
        self.inner.ownership.is_lost()
    }

    /// Whether the store had no ownership epoch when this host last looked, and it joined
    /// none: no operator initialised it (`sluice store init`).
    pub fn store_uninitialized(&self) -> bool {
        self.inner.ownership.is_uninitialized()
    }

    /// Says how to list the actions this host's journal holds, which it re-registers when
    /// it finds the store lost its state.
    pub fn local_actions(&self, local: super::LocalActions) {
        self.inner.ownership.set_local(local);
    }

    /// Whether another live process holds this host's id (then new writes are refused).
    pub fn host_id_in_use(&self) -> bool {
        self.inner.clash.load(Ordering::Relaxed)
    }

    /// Whether the shared store answers (else admission paces locally).
    pub fn is_up(&self) -> bool {
        self.inner.up.load(Ordering::Relaxed)
    }

    /// Checks and charges `call` (see [`crate::admission::Scheduler::charges`]): in the
    /// shared store, or by local conservative pacing while it is away.
    ///
    /// The check runs as a task of its own: a caller that gives up while the store is
    /// answering leaves no lease stranded, since a lease nobody takes is finished at once
    /// (its slots freed, its charge kept as estimated).
    ///
    /// A call whose quotas this host holds slices of is taken from them at once, without
    /// the store; see [`super::slices`].
    pub async fn pass(&self, call: Vec<ScopeFigures>) -> Passed {
        let inner = &self.inner;
        let slice = nanos(inner.config.slice);
        let mut sliced = None;
        if let Some((needs, origin)) = self.needs(&call) {
            let now = inner.now();
            let mut state = inner.lock();
            state.slices.note(now, slice, &needs);
            if let Some(taken) = state.slices.take_ready(now, &needs) {
                return Passed::Go(sliced_lease(call, taken));
            }
            if state.slices.worth(slice, &needs) {
                sliced = Some((needs, origin));
            }
        }
        let (answer, answered) = tokio::sync::oneshot::channel();
        let gate = self.clone();
        // On the caller's runtime: it is gone only if the caller is.
        tokio::spawn(async move {
            let call = match sliced {
                Some((needs, origin)) => match gate.sliced(call, &needs, &origin).await {
                    Ok(passed) => {
                        if let Err(Passed::Go(lease)) = answer.send(passed) {
                            gate.finish(lease, None);
                        }
                        return;
                    }
                    Err(call) => call,
                },
                None => call,
            };
            if let Err(Passed::Go(lease)) = answer.send(gate.check(call).await) {
                gate.finish(lease, None);
            }
        });
        answered
            .await
            .expect("the gate's check ends with an answer unless it panicked")
    }

    /// Asks the store for `call` alone, or local pacing while it is away.
    async fn check(&self, call: Vec<ScopeFigures>) -> Passed {
        let inner = &self.inner;
        let n = inner.next_lease.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}#{}-{n}", inner.host_id, inner.nonce);
        let lease_keys: Vec<String> = call
            .iter()
            .map(|f| inner.store.lease_key(&f.scope))
            .collect();
        if self.is_up() {
            match inner.store.admit(&call, &id).await {
                Ok(Verdict::Admitted { ends }) => {
                    let mut state = inner.lock();
                    state.fallback.hold_slots(&call, &lease_keys);
                    let sets = sets_of(&call, &lease_keys);
                    if !sets.is_empty() {
                        state.live.insert(id.clone(), sets);
                    }
                    return Passed::Go(Lease {
                        id,
                        call,
                        lease_keys,
                        ends,
                        shared: true,
                        sliced: Vec::new(),
                    });
                }
                Ok(Verdict::Wait { scope, wait, why }) => {
                    let (label, reason) = match &why {
                        Refusal::Spent(q) => ("quota", spent(&call[scope], *q)),
                        Refusal::Held(r) => ("hold", format!("held by a host sharing it: {r}")),
                        Refusal::Full => (
                            "slots",
                            "every concurrency slot is leased by the hosts sharing it".into(),
                        ),
                    };
                    metrics::counter!(crate::observe::SHARED_WAITS, "reason" => label).increment(1);
                    return Passed::Wait {
                        scope: call[scope].scope.clone(),
                        wait,
                        reason,
                    };
                }
                Err(e) => self.went_away(&e),
            }
        }
        let keys = local_keys(&call);
        let now = inner.now();
        let hosts = inner.config.hosts.get();
        let local = inner
            .lock()
            .fallback
            .admit(now, hosts, &call, &keys, &lease_keys);
        match local {
            Local::Admitted(ends) => {
                let sets = sets_of(&call, &lease_keys);
                if !sets.is_empty() {
                    inner.lock().live.insert(id.clone(), sets);
                }
                Passed::Go(Lease {
                    id,
                    call,
                    lease_keys,
                    ends,
                    shared: false,
                    sliced: Vec::new(),
                })
            }
            Local::Wait(scope, wait) => Passed::Wait {
                scope: call[scope].scope.clone(),
                // Local pacing lasts only until the store answers again: a call asks again
                // soon, so that it waits for the store's own pace then, not for the rest of
                // a local one (a generation's charge at a quarter of the pace, from an
                // empty burst, is many seconds).
                wait: wait.min(LOCAL_RECHECK),
                reason: format!(
                    "the shared store is unreachable: paced locally at 1/{hosts} of its limits"
                ),
            },
        }
    }

    /// The quotas `call` would take from this host's slices, each with its scope's and its
    /// own index in the figures; `None` when it asks the store itself: slices are off, a
    /// scope has a concurrency limit (a slot is leased call by call), a quota's burst is
    /// too small to slice among the hosts, or the call charges no quota.
    fn needs(&self, call: &[ScopeFigures]) -> Option<(Vec<Need>, Origins)> {
        let config = &self.inner.config;
        if config.slice.is_zero() {
            return None;
        }
        let slice = nanos(config.slice);
        let mut needs = Vec::new();
        let mut origin = Vec::new();
        for (s, f) in call.iter().enumerate() {
            if f.concurrency.is_some() {
                return None;
            }
            for (i, q) in f.quotas.iter().enumerate().filter(|(_, q)| q.cost > 0) {
                let most = Need::most(q.interval, q.tolerance, slice, config.hosts.get(), q.cost)?;
                needs.push(Need {
                    key: self.inner.store.quota_key(&f.scope, q),
                    dimension: q.dimension,
                    cost: q.cost,
                    interval: q.interval,
                    tolerance: q.tolerance,
                    learned: q.learned,
                    most,
                });
                origin.push((s, i));
            }
        }
        (!needs.is_empty()).then_some((needs, origin))
    }

    /// Takes `call`'s `needs` from this host's slices, asking the store for those it lacks
    /// (one call of this host asks for a quota at a time; the others wait for its answer).
    /// `Err` gives the call back when the store does not answer, for local pacing.
    async fn sliced(
        &self,
        call: Vec<ScopeFigures>,
        needs: &[Need],
        origin: &[(usize, usize)],
    ) -> Result<Passed, Vec<ScopeFigures>> {
        let inner = &self.inner;
        let slice = nanos(inner.config.slice);
        let mut next = None;
        loop {
            let notified = inner.sliced.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let take = match next.take() {
                Some(take) => take,
                None => {
                    let now = inner.now();
                    inner.lock().slices.take(now, slice, needs)
                }
            };
            let asks = match take {
                Take::Taken(taken) => return Ok(Passed::Go(sliced_lease(call, taken))),
                Take::Busy => {
                    notified.await;
                    continue;
                }
                Take::Later(wait) => {
                    return Ok(Passed::Wait {
                        scope: call[origin[0].0].scope.clone(),
                        wait: Duration::from_nanos(wait),
                        reason: "its slice of a quota shared with other hosts starts then".into(),
                    });
                }
                Take::Ask(asks) => asks,
            };
            let asked = inner.now();
            let answer = if self.is_up() {
                let holds: Vec<String> = call
                    .iter()
                    .map(|f| inner.store.hold_key(&f.scope))
                    .collect();
                inner.store.slice(&asks, &holds, inner.config.slice).await
            } else {
                Err(StoreError::Redis("away".into()))
            };
            let mut state = inner.lock();
            let (scope, wait, label, reason) = match answer {
                Ok(Sliced::Granted(grants, wait)) => {
                    let now = inner.now();
                    state.slices.answered(
                        (asked, now),
                        slice,
                        &asks,
                        Some((&grants, nanos(wait))),
                        false,
                    );
                    let taken = grants.iter().filter(|(g, _)| *g > 0).count();
                    next = Some(state.slices.take(now, slice, needs));
                    drop(state);
                    inner.sliced.notify_waiters();
                    metrics::counter!(crate::observe::SHARED_SLICES).increment(taken as u64);
                    continue;
                }
                Ok(Sliced::Short(i, wait)) => {
                    let (s, q) = needs
                        .iter()
                        .position(|n| n.key == asks[i].key)
                        .map_or((0, usize::MAX), |n| origin[n]);
                    (s, wait, "quota", spent(&call[s], q))
                }
                Ok(Sliced::Held(s, wait, why)) => {
                    (s, wait, "hold", format!("held by a host sharing it: {why}"))
                }
                Err(e) => {
                    state
                        .slices
                        .answered((asked, inner.now()), slice, &asks, None, true);
                    drop(state);
                    inner.sliced.notify_waiters();
                    if self.is_up() {
                        self.went_away(&e);
                    }
                    return Err(call);
                }
            };
            state
                .slices
                .answered((asked, inner.now()), slice, &asks, None, false);
            drop(state);
            inner.sliced.notify_waiters();
            metrics::counter!(crate::observe::SHARED_WAITS, "reason" => label).increment(1);
            return Ok(Passed::Wait {
                scope: call[scope].scope.clone(),
                wait,
                reason,
            });
        }
    }

    /// Ends a call: frees its slots and corrects its charge to `actual` where it was
    /// charged: in the store (in the background; a store that does not answer lets the
    /// lease expire), or in local pacing, for a call admitted while the store was away.
    pub fn finish(&self, lease: Lease, actual: Option<Usage>) {
        let inner = &self.inner;
        if lease.sliced() {
            let now = inner.now();
            inner
                .lock()
                .slices
                .settle(now, &lease.sliced, actual.as_ref());
            return;
        }
        {
            let mut state = inner.lock();
            state.fallback.release(&lease.call, &lease.lease_keys);
            state.live.remove(&lease.id);
            if let (false, Some(actual)) = (lease.shared, &actual) {
                let used: Vec<u64> = lease
                    .call
                    .iter()
                    .flat_map(|f| f.quotas.iter().map(|q| actual.get(q.dimension)))
                    .collect();
                let hosts = inner.config.hosts.get();
                let keys = local_keys(&lease.call);
                let now = inner.now();
                state
                    .fallback
                    .settle(now, hosts, &lease.call, &keys, &lease.ends, &used);
            }
        }
        if !self.is_up() {
            return;
        }
        // A call admitted by local pacing has no charge in the store to correct, but its
        // leases may have been put back there when the store answered again.
        let actual = actual.filter(|_| lease.shared);
        let gate = self.clone();
        inner.runtime.spawn(async move {
            let store = &gate.inner.store;
            if let Err(e) = store
                .settle(&lease.call, &lease.id, &lease.ends, actual.as_ref())
                .await
            {
                tracing::debug!(error = %e, lease = %lease.id, "a lease could not be settled; it expires by itself");
            }
        });
    }

    /// Shares what a response taught this host about a scope (a hold, what is left, a
    /// learned limit) with every host, in the background.
    ///
    /// A hold ends this host's slices of the scope's quotas at once: what they left goes
    /// back to the store, and the scope's next call asks the store, which says it is held.
    pub fn share(&self, scope: ScopeFigures) {
        if scope.held_for.is_some() && !self.inner.config.slice.is_zero() {
            let keys: Vec<String> = scope
                .quotas
                .iter()
                .map(|q| self.inner.store.quota_key(&scope.scope, q))
                .collect();
            let now = self.inner.now();
            self.inner
                .lock()
                .slices
                .end(now, |key| keys.iter().any(|k| k == key));
        }
        if !self.is_up() {
            return;
        }
        let gate = self.clone();
        self.inner.runtime.spawn(async move {
            if let Err(e) = gate.inner.store.share(&scope).await {
                gate.went_away(&e);
            }
        });
    }

    /// The store stopped answering: pace locally, and probe it until it answers.
    pub(super) fn went_away(&self, error: &StoreError) {
        let inner = &self.inner;
        if inner.up.swap(false, Ordering::Relaxed) {
            tracing::warn!(
                error = %error,
                hosts = inner.config.hosts.get(),
                "the shared store is unreachable: admission paces every quota locally at its limit divided by the hosts"
            );
            metrics::gauge!(crate::observe::SHARED_STORE_UP).set(0.0);
            metrics::counter!(crate::observe::SHARED_STORE_FALLBACKS).increment(1);
        }
        let now = inner.now();
        let mut state = inner.lock();
        // Local pacing starts from an empty burst for this host's share: units of a slice
        // sent on top of it would be more than the share.
        state.slices.end(now, |_| true);
        if !std::mem::replace(&mut state.probing, true) {
            inner.runtime.spawn(probe(Arc::downgrade(inner)));
        }
    }
}

/// Each need's scope and quota, by their indexes in the call's figures.
type Origins = Vec<(usize, usize)>;

fn nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(Nanos::MAX)
}

/// A call taken from this host's slices: it holds nothing in the store.
fn sliced_lease(call: Vec<ScopeFigures>, taken: Vec<Taken>) -> Lease {
    Lease {
        id: String::new(),
        call,
        lease_keys: Vec::new(),
        ends: Vec::new(),
        shared: true,
        sliced: taken,
    }
}

/// Every `every` while the store answers, settles in the store what this host's ended
/// slices left unused and what their calls used above or below their estimates: one round
/// trip for all of them.
async fn settle_slices(inner: Weak<Inner>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if !inner.up.load(Ordering::Relaxed) {
            continue;
        }
        let now = inner.now();
        let asks: Vec<SliceAsk> = inner.lock().slices.due(now);
        if asks.is_empty() {
            continue;
        }
        if let Err(e) = inner.store.slice(&asks, &[], inner.config.slice).await {
            inner.lock().slices.unsettled(&asks);
            Gate { inner }.went_away(&e);
        }
    }
}

/// The names of a call's quotas in local pacing, scope by scope.
fn local_keys(call: &[ScopeFigures]) -> Vec<Vec<String>> {
    call.iter()
        .map(|f| {
            f.quotas
                .iter()
                .map(|q| {
                    format!(
                        "{}:{}:{}",
                        f.scope,
                        q.dimension.name(),
                        q.window.as_millis()
                    )
                })
                .collect()
        })
        .collect()
}

/// The lease sets of the scopes with a concurrency limit.
fn sets_of(call: &[ScopeFigures], lease_keys: &[String]) -> Vec<String> {
    call.iter()
        .zip(lease_keys)
        .filter(|(f, _)| f.concurrency.is_some())
        .map(|(_, k)| k.clone())
        .collect()
}

fn spent(scope: &ScopeFigures, quota: usize) -> String {
    scope.quotas.get(quota).map_or_else(
        || "a quota shared with other hosts is spent".into(),
        |q| {
            format!(
                "its {} quota ({} per {} ms) is spent by the hosts sharing it",
                q.dimension.name(),
                q.limit,
                q.window.as_millis()
            )
        },
    )
}

/// Every live lease, as (lease set, lease id) pairs.
fn live_pairs(inner: &Inner) -> Vec<(String, String)> {
    inner
        .lock()
        .live
        .iter()
        .flat_map(|(id, sets)| sets.iter().map(|k| (k.clone(), id.clone())))
        .collect()
}

/// Says this process holds its host id, then renews its live leases, every `every` while
/// the store answers (the first time at once).
async fn renew_leases(inner: Weak<Inner>, every: Duration) {
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            tokio::time::sleep(every).await;
        }
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if !inner.up.load(Ordering::Relaxed) {
            continue;
        }
        let ttl = inner.config.lease_ttl;
        match inner
            .store
            .heartbeat(&inner.host_id, &inner.nonce, ttl)
            .await
        {
            Ok(other) => clash(&inner, other.is_some()),
            Err(e) => {
                Gate { inner }.went_away(&e);
                continue;
            }
        }
        // Between claims too: a host that finds the store lost its state re-registers its
        // actions now, not at its next write, so an operator can recover without waiting.
        inner
            .ownership
            .check(&inner.store, &inner.host_id, inner.config.claim_ttl)
            .await;
        let pairs = live_pairs(&inner);
        if let Err(e) = inner.store.renew(&pairs, false).await {
            Gate { inner }.went_away(&e);
        }
    }
}

/// Records whether another live process holds this host's id, saying so when it changes.
fn clash(inner: &Inner, now: bool) {
    if inner.clash.swap(now, Ordering::Relaxed) == now {
        return;
    }
    if now {
        tracing::error!(
            host_id = %crate::printable::printable(&inner.host_id),
            "another live process uses this host id in the shared store: new writes are refused until it is gone (give each host its own [store] host_id)"
        );
    } else {
        tracing::info!(
            host_id = %crate::printable::printable(&inner.host_id),
            "this process alone holds its host id again: new writes are claimed again"
        );
    }
}

/// The longest a call paced locally waits before it asks the gate again.
const LOCAL_RECHECK: Duration = Duration::from_millis(250);

/// How often a host that fell back asks the store whether it answers again. Short, because
/// until every host is back, those still pacing locally add their share to what the store
/// admits: at most (hosts − 1)/hosts of the pace for this long, within the margin.
const PROBE_EVERY: Duration = Duration::from_millis(100);

/// Asks the store every [`PROBE_EVERY`] until it answers; then puts this host's live leases
/// back (the store may have lost them) before admitting through it again.
async fn probe(inner: Weak<Inner>) {
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.store.ping().await.is_err() {
            continue;
        }
        if inner.store.renew(&live_pairs(&inner), true).await.is_err() {
            continue;
        }
        {
            let mut state = inner.lock();
            state.probing = false;
            state.fallback.forget_quotas();
        }
        inner.up.store(true, Ordering::Relaxed);
        metrics::gauge!(crate::observe::SHARED_STORE_UP).set(1.0);
        tracing::info!(
            hosts = inner.config.hosts.get(),
            "the shared store answers again: admission uses the shared state"
        );
        return;
    }
}

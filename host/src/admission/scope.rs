//! One quota scope: the buckets of one provider quota, the concurrency slots, the hold a 429
//! put on it, and what responses said about it.
//!
//! A scope is wider than a request: every worker whose requests charge it shares it, so a 429
//! seen by one worker holds back all of them ([`Scope::hold`]). What responses say about it
//! (holds, learned limits, the provider's `remaining`) is in [`learn`].

use std::fmt;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

use super::bucket::{Denial, Nanos, QuotaError, Rate};
use super::limits::{Limits, MINUTE};
use super::usage::{Dimension, Usage};

pub mod learn;

pub use learn::{Learned, TOKEN_ROUNDING};

/// The name of a scope.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScopeKey {
    /// A provider quota: the credential's own bucket (`name: None`), or a narrower one the
    /// configuration or a response names (a model, an endpoint family, GitHub's `search`).
    Provider {
        /// The provider, as configured (`openai`).
        provider: Arc<str>,
        /// The credential (account, project or key label) the request is sent with.
        credential: Arc<str>,
        /// The narrower bucket, if any.
        name: Option<Arc<str>>,
    },
    /// A tenant's own quota, from its tier.
    Tenant(Arc<str>),
}

/// A scope's name, borrowed: what a scope is looked up by, so that a request's route is
/// found without making a key for each of its scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ScopeName<'a> {
    Provider {
        provider: &'a str,
        credential: &'a str,
        name: Option<&'a str>,
    },
    Tenant(&'a str),
}

impl ScopeKey {
    /// Its name, borrowed.
    pub(crate) fn name(&self) -> ScopeName<'_> {
        match self {
            Self::Provider {
                provider,
                credential,
                name,
            } => ScopeName::Provider {
                provider,
                credential,
                name: name.as_deref(),
            },
            Self::Tenant(t) => ScopeName::Tenant(t),
        }
    }
}

impl ScopeName<'_> {
    /// The key it names, owned.
    pub(crate) fn key(self) -> ScopeKey {
        match self {
            Self::Provider {
                provider,
                credential,
                name,
            } => ScopeKey::Provider {
                provider: provider.into(),
                credential: credential.into(),
                name: name.map(Into::into),
            },
            Self::Tenant(t) => ScopeKey::Tenant(t.into()),
        }
    }
}

/// Hashed as its borrowed name is, so either finds the same scope.
impl std::hash::Hash for ScopeKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl fmt::Display for ScopeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Provider {
                provider,
                credential,
                name: None,
            } => write!(f, "{provider}/{credential}"),
            Self::Provider {
                provider,
                credential,
                name: Some(name),
            } => write!(f, "{provider}/{credential}/{name}"),
            Self::Tenant(t) => write!(f, "tenant {t}"),
        }
    }
}

/// Where a quota's figures come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The configuration.
    Configured,
    /// A response: the header names (or `body`) the plugin read them from.
    Observed(Box<str>),
}

/// One rate quota of a scope, as configured or learned.
#[derive(Debug, Clone)]
pub(crate) struct QuotaSpec {
    pub dimension: Dimension,
    pub window: Duration,
    pub limit: NonZeroU64,
    pub origin: Origin,
    pub rate: Rate,
}

/// The quotas of a scope without their state. Scopes configured alike share one shape, so
/// an idle scope costs little more than one theoretical arrival time per quota.
#[derive(Debug, Clone)]
pub struct Shape {
    pub(crate) quotas: Vec<QuotaSpec>,
    pub(crate) concurrency: Option<u32>,
    pub(crate) margin: f64,
    /// How the provider refills these quotas, for those learned later too.
    pub(crate) refill: super::limits::Refill,
    /// The most requests waiting on a scope of this shape.
    pub(crate) max_queued: u32,
    /// The longest estimated wait a request is queued for.
    pub(crate) max_wait: Nanos,
}

impl Shape {
    /// The shape of a scope with the configured `limits`, paced at `margin`.
    ///
    /// # Errors
    /// The TOML key of the first quota that cannot be paced, and why.
    pub fn new(limits: &Limits, margin: f64) -> Result<Self, (String, QuotaError)> {
        let quotas = limits
            .quotas()
            .map(|(dimension, window, limit)| {
                Rate::refilled(limit, window, margin, limits.refill.unwrap_or_default())
                    .map(|rate| QuotaSpec {
                        dimension,
                        window,
                        limit,
                        origin: Origin::Configured,
                        rate,
                    })
                    .map_err(|e| (Limits::key(dimension, window), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if quotas.is_empty() && !(margin > 0.0 && margin <= 1.0) {
            return Err(("margin".into(), QuotaError::Margin(margin)));
        }
        Ok(Self {
            quotas,
            concurrency: limits.concurrent_requests.map(std::num::NonZeroU32::get),
            margin,
            refill: limits.refill.unwrap_or_default(),
            max_queued: u32::MAX,
            max_wait: Nanos::MAX,
        })
    }

    /// The same shape with queue bounds.
    #[must_use]
    pub fn bounded(mut self, max_queued: u32, max_wait: Nanos) -> Self {
        self.max_queued = max_queued;
        self.max_wait = max_wait;
        self
    }
}

/// Why a scope admits nothing until a given instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// Nothing is admitted before this instant.
    pub until: Nanos,
    /// What set the hold (a 429's `Retry-After`, `remaining: 0` with a reset, …).
    pub reason: Box<str>,
}

/// Why a scope cannot take a request now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A rate quota is spent until `until`.
    Quota {
        /// What the quota counts.
        dimension: Dimension,
        /// Its window.
        window: Duration,
        /// Its limit per window.
        limit: u64,
        /// Where the limit comes from.
        origin: Origin,
        /// When the request's share fits.
        until: Nanos,
    },
    /// A response put the scope on hold.
    Held(Hold),
    /// Every concurrency slot is taken; one frees when a request in flight finishes.
    Concurrency {
        /// The number of slots.
        limit: u32,
    },
}

impl Block {
    /// When the block lifts by itself, if it does.
    pub fn until(&self) -> Option<Nanos> {
        match self {
            Self::Quota { until, .. } => Some(*until),
            Self::Held(h) => Some(h.until),
            Self::Concurrency { .. } => None,
        }
    }
}

/// A request larger than a scope's whole limit per window: it can never be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Oversized {
    /// What the quota counts.
    pub dimension: Dimension,
    /// The request's amount.
    pub amount: u64,
    /// The quota's limit per window.
    pub limit: u64,
}

/// The state of one quota: its theoretical arrival time, and how far refunds have moved the
/// schedule earlier in all.
#[derive(Debug, Clone, Copy, Default)]
struct Tat {
    tat: Nanos,
    shifted: Nanos,
}

/// One quota scope.
#[derive(Debug)]
pub struct Scope {
    shape: Arc<Shape>,
    /// The state of each quota of the shape.
    tats: Box<[Tat]>,
    /// Concurrency slots taken.
    taken: u32,
    hold: Option<Box<Hold>>,
    /// A pause: nothing admitted before its end, but the buckets untouched and nothing
    /// shared (the shared store's gate asked this host to wait; see [`Scope::pause`]).
    pause: Option<Box<Hold>>,
    /// Calls of this host admitted here and waiting at the shared store's gate for this
    /// scope: while there are any, each of their refusals extends the pause, and the last
    /// to leave lifts it.
    gated: u32,
    /// Boxed: most scopes never learn anything, and an idle scope should stay small.
    #[allow(
        clippy::box_collection,
        reason = "one pointer for the common empty case, where a Vec would take three words"
    )]
    learned: Option<Box<Vec<Learned>>>,
}

impl Scope {
    /// An idle scope of the given shape.
    pub fn new(shape: Arc<Shape>) -> Self {
        let tats = vec![Tat::default(); shape.quotas.len()].into_boxed_slice();
        Self {
            shape,
            tats,
            taken: 0,
            hold: None,
            pause: None,
            gated: 0,
            learned: None,
        }
    }

    /// Each quota and its theoretical arrival time.
    pub(crate) fn quotas(&self) -> impl Iterator<Item = (&QuotaSpec, Nanos)> {
        self.shape
            .quotas
            .iter()
            .zip(self.tats.iter().map(|t| t.tat))
    }

    /// The first quota that `usage` exceeds on its own.
    pub fn oversized(&self, usage: &Usage) -> Option<Oversized> {
        self.shape.quotas.iter().find_map(|q| {
            let amount = usage.get(q.dimension);
            (amount > q.rate.limit()).then(|| Oversized {
                dimension: q.dimension,
                amount,
                limit: q.rate.limit(),
            })
        })
    }

    /// What keeps `usage` from being admitted at `now`, if anything: the hold first, then
    /// the quota that lifts last, then concurrency.
    pub fn blocked(&self, now: Nanos, usage: &Usage) -> Option<Block> {
        if let Some(hold) = self.held(now).or_else(|| self.paused(now)) {
            return Some(Block::Held(hold.clone()));
        }
        let mut worst: Option<(&QuotaSpec, Nanos)> = None;
        for (q, tat) in self.quotas() {
            let until = match q.rate.ready_at(tat, now, usage.get(q.dimension)) {
                Ok(at) => at,
                // Checked at submit; a quota learned since then may be smaller.
                Err(Denial::TooLarge { .. }) => Nanos::MAX,
                Err(Denial::Until(at)) => at,
            };
            if until > now && worst.is_none_or(|(_, w)| until > w) {
                worst = Some((q, until));
            }
        }
        if let Some((q, until)) = worst {
            return Some(Block::Quota {
                dimension: q.dimension,
                window: q.window,
                limit: q.limit.get(),
                origin: q.origin.clone(),
                until,
            });
        }
        match self.shape.concurrency {
            Some(limit) if self.taken >= limit => Some(Block::Concurrency { limit }),
            _ => None,
        }
    }

    /// Whether `usage` may be admitted at `now`: [`Scope::blocked`] without the reason.
    pub(crate) fn admits(&self, now: Nanos, usage: &Usage) -> bool {
        self.held(now).is_none()
            && self.paused(now).is_none()
            && self.quotas().all(|(q, tat)| {
                q.rate
                    .ready_at(tat, now, usage.get(q.dimension))
                    .is_ok_and(|at| at <= now)
            })
            && self
                .shape
                .concurrency
                .is_none_or(|limit| self.taken < limit)
    }

    /// Takes `usage` from every quota and a concurrency slot. Call only when
    /// [`Scope::admits`] said yes. Appends to `ends` the number of quotas and each one's
    /// state after the charge, which [`Scope::settle`] needs.
    pub(crate) fn take(&mut self, now: Nanos, usage: &Usage, ends: &mut impl Extend<Nanos>) {
        ends.extend([self.tats.len() as Nanos]);
        for (q, t) in self.shape.quotas.iter().zip(self.tats.iter_mut()) {
            q.rate.charge(&mut t.tat, now, usage.get(q.dimension));
            ends.extend([t.tat, t.shifted]);
        }
        if self.shape.concurrency.is_some() {
            self.taken += 1;
        }
    }

    /// Corrects the charge of a finished request from `estimate` to `actual` (when known),
    /// and frees its slot. `ends` is what [`Scope::take`] appended; returns the rest.
    ///
    /// Use above the estimate is charged now. Use below it is given back by shortening the
    /// request's place in the quota's schedule and moving every later place earlier, but
    /// never to before `now`: a request admitted later must not end up scheduled before its
    /// own admission, or a window could see more than the limit. The request's place ended
    /// at its recorded end less every refund moved since (an upper bound on how far places
    /// moved), so what lies between that and `now` is what can be given back; the rest of an
    /// unused estimate, already in the past, stays spent.
    pub(crate) fn settle<'e>(
        &mut self,
        now: Nanos,
        estimate: &Usage,
        actual: Option<&Usage>,
        ends: &'e [Nanos],
    ) -> &'e [Nanos] {
        let (count, rest) = ends.split_first().map_or((0, ends), |(n, r)| (*n, r));
        let count = usize::try_from(count).unwrap_or(0).min(rest.len() / 2);
        let (mine, rest) = rest.split_at(count * 2);
        if let Some(actual) = actual {
            let quotas = self.shape.quotas.iter().zip(self.tats.iter_mut());
            for ((q, t), end) in quotas.zip(mine.chunks_exact(2)) {
                let (was, is) = (estimate.get(q.dimension), actual.get(q.dimension));
                if is > was {
                    q.rate.charge(&mut t.tat, now, is - was);
                } else if let Some(moved_since) = t.shifted.checked_sub(end[1]) {
                    let ends_at = end[0].saturating_sub(moved_since);
                    let back = (was - is)
                        .saturating_mul(q.rate.interval())
                        .min(ends_at.saturating_sub(now))
                        .min(t.tat.saturating_sub(now));
                    t.tat -= back;
                    t.shifted += back;
                }
            }
        }
        if self.shape.concurrency.is_some() {
            self.taken = self.taken.saturating_sub(1);
        }
        rest
    }

    /// Admits nothing before `until`: every request charged to this scope waits.
    ///
    /// A quota whose window the hold can be about restarts at `until` with an empty burst:
    /// every quota of a minute or less (a 429 is about the provider's short windows), and a
    /// longer one only when the hold lasts as long as its window. A short hold leaves a
    /// day's or a month's quota as it was: emptying it would pace the scope at the day's
    /// rate for hours after a one-second `Retry-After`.
    pub fn hold(&mut self, now: Nanos, until: Nanos, reason: &str) {
        if self.hold.as_deref().is_some_and(|h| h.until >= until) {
            return;
        }
        let lasts = Duration::from_nanos(until.saturating_sub(now));
        for (q, t) in self.shape.quotas.iter().zip(self.tats.iter_mut()) {
            if q.window <= MINUTE.max(lasts) {
                q.rate.hold_until(&mut t.tat, until);
            }
        }
        self.hold = Some(Box::new(Hold {
            until,
            reason: reason.into(),
        }));
    }

    /// Admits nothing before `until`, and changes nothing else: the shared store's gate said
    /// the hosts sharing this scope have used it until then. Unlike [`Scope::hold`], the
    /// buckets keep their state (a burst saved up stays saved) and the pause is not
    /// reported as a hold, so it is never shared back as one.
    pub fn pause(&mut self, until: Nanos, reason: &str) {
        if self.pause.as_deref().is_some_and(|p| p.until >= until) {
            return;
        }
        self.pause = Some(Box::new(Hold {
            until,
            reason: reason.into(),
        }));
    }

    /// One more call of this host waits at the shared store's gate for this scope.
    pub(crate) fn gate_enter(&mut self) {
        self.gated += 1;
    }

    /// One call fewer waits at the gate. When the last one `passed`, it lifts the pause;
    /// one that gave up (its deadline, its caller gone) leaves the pause to run out, since
    /// the store's answer stands. Returns whether the pause was lifted.
    pub(crate) fn gate_leave(&mut self, passed: bool) -> bool {
        self.gated = self.gated.saturating_sub(1);
        passed && self.gated == 0 && self.pause.take().is_some()
    }

    /// The pause in force at `now`, if any.
    pub fn paused(&self, now: Nanos) -> Option<&Hold> {
        self.pause.as_deref().filter(|p| p.until > now)
    }

    /// Lifts the hold (a person says the provider's quota was raised): the scope admits
    /// again at once, at its pace, with no burst saved up while it was held.
    pub fn lift(&mut self, now: Nanos) {
        if self.hold.take().is_some() {
            for t in self.tats.iter_mut() {
                t.tat = t.tat.min(now);
            }
        }
    }
    /// The scope's shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The instant from which this scope owes nothing: its hold and pause ended, and every
    /// bucket full again. `None` while a call holds one of its concurrency slots or waits
    /// at the shared store's gate for it.
    pub(crate) fn rests_since(&self) -> Option<Nanos> {
        if self.taken > 0 || self.gated > 0 {
            return None;
        }
        let ends = [self.hold.as_deref(), self.pause.as_deref()]
            .into_iter()
            .flatten()
            .map(|h| h.until);
        Some(
            self.tats
                .iter()
                .map(|t| t.tat)
                .chain(ends)
                .max()
                .unwrap_or(0),
        )
    }

    /// The hold in force at `now`, if any.
    pub fn held(&self, now: Nanos) -> Option<&Hold> {
        self.hold.as_deref().filter(|h| h.until > now)
    }

    /// What responses said about this scope, one entry per dimension.
    pub fn learned(&self) -> &[Learned] {
        self.learned.as_deref().map_or(&[], Vec::as_slice)
    }

    /// The concurrency limit and the slots taken, when the scope has a limit.
    pub fn slots(&self) -> Option<(u32, u32)> {
        self.shape.concurrency.map(|limit| (limit, self.taken))
    }

    /// How long `usage` occupies this scope's scarcest quota at its paced rate: the
    /// currency of fair sharing.
    pub(crate) fn occupancy(&self, usage: &Usage) -> u64 {
        self.shape
            .quotas
            .iter()
            .map(|q| usage.get(q.dimension).saturating_mul(q.rate.interval()))
            .max()
            .unwrap_or(0)
    }

    /// When `usage` would fit after `ahead` of each dimension queued before it.
    pub(crate) fn estimate(&self, now: Nanos, ahead: &Usage, usage: &Usage) -> Nanos {
        let held = self.hold.as_deref().map_or(0, |h| h.until);
        let held = held.max(self.pause.as_deref().map_or(0, |p| p.until));
        self.quotas()
            .map(|(q, tat)| {
                q.rate
                    .estimate(tat, now, ahead.get(q.dimension), usage.get(q.dimension))
            })
            .fold(held.max(now), Nanos::max)
    }
}

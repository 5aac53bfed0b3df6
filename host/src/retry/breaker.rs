//! A circuit breaker per path: repeated identical failures stop the path for a while.
//!
//! The key is a sanitized fingerprint — method, route template (ids and numbers replaced by
//! `{}`), the request's stable fields (its model) — and the count is of one provider error
//! code; never a secret, a query string or a volatile header. Only identical failures in a
//! row count: a different error, or a success, resets the count.
//!
//! An open path refuses calls for `open_for`; then it is half-open, and exactly **one** call
//! probes it: the others are refused until the probe answers (a success closes the path, a
//! failure opens it again) or, if it never does, until another `open_for` has passed and the
//! next call probes instead. A probe that ends with no word on the path — answered 429 (its
//! scope's quota, not the path), or refused before it was sent (a spent budget, a full
//! queue, another breaker) — is released: the path is half-open again, and the next call
//! (its own retry, when it has one) probes it.
//!
//! Two kinds ([`Kind`]): a credential's breakers, shared by every tenant of it, which the
//! executor names `provider credential METHOD /route [model]` (the first two words are the
//! labels of [`crate::observe::BREAKER_OPEN`], the count of a credential's open paths); and
//! a tenant's own, for the failures its requests cause (see `execute::breaking`), counted in
//! [`crate::observe::TENANT_BREAKER_OPENED`]. Opening, half-opening and closing are each an
//! event.
//!
//! Each path has an **owner**, named by the caller: the credential (`provider credential`)
//! whose path it is, or the tenant whose own it is. At most [`MAX_PATHS`] paths are kept
//! over all owners, and room is made by owner (`breaker/table.rs`): a flood of new paths
//! forgets its own owner's paths, never another owner's open breaker while that owner holds
//! no more than its share of the table.

mod table;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use table::{Room, Table};

/// The sanitized path of a call: method and route template.
pub fn route_template(method: &str, url: &str) -> String {
    let path = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest.find('/').map_or("/", |i| &rest[i..]));
    let path = path.split(['?', '#']).next().unwrap_or("/");
    // Written in one string (an id's `{}` is at most one byte longer than the id): this runs
    // for every call.
    let mut template = String::with_capacity(method.len() + 1 + path.len() + 8);
    template.push_str(method);
    template.push(' ');
    for (i, s) in path.split('/').enumerate() {
        if i > 0 {
            template.push('/');
        }
        // A number, or a long token with digits in it, is an id; `v1` is not.
        let digits = s.chars().any(|c| c.is_ascii_digit());
        let volatile =
            (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())) || (digits && s.len() >= 8);
        template.push_str(if volatile { "{}" } else { s });
    }
    template
}

/// The most paths a set of breakers keeps, over all its owners.
pub const MAX_PATHS: usize = 10_000;

/// Whose breakers they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A credential's, shared by every tenant that calls with it.
    Credential,
    /// Tenants' own, each path naming its tenant.
    Tenant,
}

#[derive(Debug)]
struct Path {
    code: String,
    failures: u32,
    open_until: Option<Instant>,
    /// Half-open: a probe went at the instant given, and is awaited until then plus
    /// `open_for`.
    probing: Option<Instant>,
    /// Counted in [`crate::observe::BREAKER_OPEN`]: opened, not yet half-open or closed.
    counted: bool,
}

/// Why a breaker refuses a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    /// The path.
    pub route: String,
    /// The failure that repeated.
    pub error: String,
    /// How many times in a row.
    pub failures: u32,
    /// How long until the path is tried again.
    pub retry_in: Duration,
}

/// One path's breaker as it stands, for an operator to look at ([`Breakers::states`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BreakerState {
    /// The path: `provider credential METHOD /route`.
    pub route: String,
    /// The failure that repeats.
    pub error: String,
    /// How many times in a row.
    pub failures: u32,
    /// `closed` (failures counted, below the threshold), `open` (calls refused) or
    /// `half-open` (its time is up: the next call probes the path).
    pub state: &'static str,
    /// How long until an open path is tried again (0 unless open).
    pub retry_in_ms: u64,
}

/// Breakers for every path, kept by owner.
#[derive(Debug)]
pub struct Breakers {
    kind: Kind,
    threshold: u32,
    open_for: Duration,
    table: Mutex<Table>,
}

impl Breakers {
    /// A credential's breakers, that open after `threshold` identical failures in a row,
    /// for `open_for`.
    pub fn new(threshold: u32, open_for: Duration) -> Self {
        Self::of(Kind::Credential, threshold, open_for)
    }

    /// Breakers of `kind`, that open after `threshold` identical failures in a row, for
    /// `open_for`.
    pub fn of(kind: Kind, threshold: u32, open_for: Duration) -> Self {
        Self {
            kind,
            threshold: threshold.max(1),
            open_for,
            table: Mutex::default(),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `owner`'s path `route` may be tried at `now`: not while it is open, nor while
    /// it is half-open and another call is its probe.
    ///
    /// # Errors
    /// [`Open`] while the path's breaker is open or probed.
    pub fn check(&self, owner: &str, route: &str, now: Instant) -> Result<(), Open> {
        let mut table = self.table();
        let Some(p) = table.get_mut(owner, route) else {
            return Ok(());
        };
        let refused = |p: &Path, until: Instant| Open {
            route: route.to_owned(),
            error: p.code.clone(),
            failures: p.failures,
            retry_in: until.saturating_duration_since(now),
        };
        match (p.open_until, p.probing) {
            (Some(t), _) if t > now => Err(refused(p, t)),
            (Some(_), Some(at)) if at + self.open_for > now => Err(refused(p, at + self.open_for)),
            (Some(_), _) => {
                p.probing = Some(now);
                tracing::info!(
                    path = route,
                    error = %p.code,
                    "breaker half-open: one call probes the path"
                );
                if std::mem::replace(&mut p.counted, false) {
                    self.report_open(&table, owner, route);
                }
                Ok(())
            }
            (None, _) => Ok(()),
        }
    }

    /// Whether [`Breakers::check`] of `owner`'s `route` would refuse at `now` (open, or
    /// half-open with its probe out). Looking changes nothing.
    pub fn refuses(&self, owner: &str, route: &str, now: Instant) -> bool {
        let table = self.table();
        let Some(p) = table.get(owner, route) else {
            return false;
        };
        match (p.open_until, p.probing) {
            (Some(t), _) if t > now => true,
            (Some(_), Some(at)) => at + self.open_for > now,
            _ => false,
        }
    }

    /// Whether any path's breaker is open or half-open now.
    pub fn any_open(&self) -> bool {
        self.table().iter().any(|(_, p)| p.open_until.is_some())
    }

    /// Every path with failures counted, as it stands at `now`, sorted by path. Looking
    /// changes nothing: a path whose time is up shows `half-open` but stays counted open
    /// until a call probes it.
    pub fn states(&self, now: Instant) -> Vec<BreakerState> {
        let mut states: Vec<BreakerState> = self
            .table()
            .iter()
            .map(|(route, p)| {
                let (state, retry_in) = match (p.open_until, p.probing) {
                    (Some(t), _) if t > now => ("open", t - now),
                    (Some(_), Some(at)) if at + self.open_for > now => ("probing", Duration::ZERO),
                    (Some(_), _) => ("half-open", Duration::ZERO),
                    (None, _) => ("closed", Duration::ZERO),
                };
                BreakerState {
                    route: route.clone(),
                    error: p.code.clone(),
                    failures: p.failures,
                    state,
                    retry_in_ms: u64::try_from(retry_in.as_millis()).unwrap_or(u64::MAX),
                }
            })
            .collect();
        states.sort_by(|a, b| a.route.cmp(&b.route));
        states
    }

    /// A call that passed [`Breakers::check`] ends with no word on `owner`'s `route`: the
    /// path's probe, if one is out, is given back, and the path is half-open again for the
    /// next call. (A call that passed before the path opened, ending so while another
    /// probes, frees that probe too: at worst a second probe goes, never a path left stuck.)
    pub fn release(&self, owner: &str, route: &str) {
        if let Some(p) = self.table().get_mut(owner, route)
            && p.open_until.is_some()
        {
            p.probing = None;
        }
    }

    /// Records a success on `owner`'s `route`.
    pub fn success(&self, owner: &str, route: &str) {
        let mut table = self.table();
        if let Some(p) = table.remove(owner, route)
            && p.open_until.is_some()
        {
            tracing::info!(path = route, error = %p.code, "breaker closed: the path answered");
            if p.counted {
                self.report_open(&table, owner, route);
            }
        }
    }

    /// Records a failure with `code` (status and provider error code) on `owner`'s `route`.
    /// A path that was open fails its probe whatever the code: it opens again.
    pub fn failure(&self, owner: &str, route: &str, code: &str, now: Instant) {
        let mut table = self.table();
        if table.get(owner, route).is_none() {
            match table.make_room(owner) {
                Room::Free => {}
                Room::Made(gone) => {
                    if gone.path.counted {
                        self.report_open(&table, &gone.owner, &gone.route);
                    }
                }
                Room::Full => {
                    tracing::debug!(
                        path = route,
                        error = code,
                        "a failure not counted: the breakers keep as many owners as paths"
                    );
                    return;
                }
            }
        }
        let p = table.entry(owner, route, || Path {
            code: code.to_owned(),
            failures: 0,
            open_until: None,
            probing: None,
            counted: false,
        });
        if p.code == code {
            p.failures += 1;
        } else {
            p.code = code.to_owned();
            p.failures = 1;
        }
        if p.failures >= self.threshold || p.open_until.is_some() {
            p.open_until = Some(now + self.open_for);
            p.probing = None;
            let open_ms = u64::try_from(self.open_for.as_millis()).unwrap_or(u64::MAX);
            tracing::warn!(
                path = route,
                error = code,
                failures = p.failures,
                open_ms,
                "breaker opened: the path is stopped"
            );
            if !std::mem::replace(&mut p.counted, true) {
                if self.kind == Kind::Tenant {
                    metrics::counter!(crate::observe::TENANT_BREAKER_OPENED).increment(1);
                }
                self.report_open(&table, owner, route);
            }
        }
    }

    /// Sets [`crate::observe::BREAKER_OPEN`] for the credential `owner` of `route`: its
    /// paths counted open (a tenant's breakers are counted as they open instead).
    fn report_open(&self, table: &Table, owner: &str, route: &str) {
        if self.kind == Kind::Credential {
            let open = table.of(owner).filter(|p| p.counted).count();
            report_open(open, route);
        }
    }
}

/// The provider and credential of a path the executor named, the labels of the gauge.
fn labels(route: &str) -> (&str, &str) {
    let mut words = route.splitn(3, ' ');
    (words.next().unwrap_or(""), words.next().unwrap_or(""))
}

/// Sets [`crate::observe::BREAKER_OPEN`] for the credential of `route`: `open` paths.
fn report_open(open: usize, route: &str) {
    let (provider, credential) = labels(route);
    metrics::gauge!(
        crate::observe::BREAKER_OPEN,
        "provider" => provider.to_owned(),
        "credential" => credential.to_owned(),
    )
    .set(open as f64);
}

#[cfg(test)]
mod tests;

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
//! event. At most [`MAX_PATHS`] paths are kept: past it, paths that are counting but not
//! open are forgotten first, then the open path due to half-open first, so a new path's
//! failures are always counted.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// The most paths a set of breakers keeps.
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

/// Breakers for every path.
#[derive(Debug)]
pub struct Breakers {
    kind: Kind,
    threshold: u32,
    open_for: Duration,
    paths: Mutex<HashMap<String, Path>>,
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
            paths: Mutex::default(),
        }
    }

    fn paths(&self) -> std::sync::MutexGuard<'_, HashMap<String, Path>> {
        self.paths
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `route` may be tried at `now`: not while it is open, nor while it is
    /// half-open and another call is its probe.
    ///
    /// # Errors
    /// [`Open`] while the path's breaker is open or probed.
    pub fn check(&self, route: &str, now: Instant) -> Result<(), Open> {
        let mut paths = self.paths();
        let Some(p) = paths.get_mut(route) else {
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
                    self.report_open(&paths, route);
                }
                Ok(())
            }
            (None, _) => Ok(()),
        }
    }

    /// Whether [`Breakers::check`] of `route` would refuse at `now` (open, or half-open
    /// with its probe out). Looking changes nothing.
    pub fn refuses(&self, route: &str, now: Instant) -> bool {
        let paths = self.paths();
        let Some(p) = paths.get(route) else {
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
        self.paths().values().any(|p| p.open_until.is_some())
    }

    /// Every path with failures counted, as it stands at `now`, sorted by path. Looking
    /// changes nothing: a path whose time is up shows `half-open` but stays counted open
    /// until a call probes it.
    pub fn states(&self, now: Instant) -> Vec<BreakerState> {
        let mut states: Vec<BreakerState> = self
            .paths()
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

    /// A call that passed [`Breakers::check`] ends with no word on `route`: the path's probe,
    /// if one is out, is given back, and the path is half-open again for the next call.
    /// (A call that passed before the path opened, ending so while another probes, frees
    /// that probe too: at worst a second probe goes, never a path left stuck.)
    pub fn release(&self, route: &str) {
        if let Some(p) = self.paths().get_mut(route)
            && p.open_until.is_some()
        {
            p.probing = None;
        }
    }

    /// Records a success on `route`.
    pub fn success(&self, route: &str) {
        let mut paths = self.paths();
        if let Some(p) = paths.remove(route)
            && p.open_until.is_some()
        {
            tracing::info!(path = route, error = %p.code, "breaker closed: the path answered");
            if p.counted {
                self.report_open(&paths, route);
            }
        }
    }

    /// Records a failure with `code` (status and provider error code) on `route`. A path
    /// that was open fails its probe whatever the code: it opens again.
    pub fn failure(&self, route: &str, code: &str, now: Instant) {
        let mut paths = self.paths();
        if paths.len() >= MAX_PATHS && !paths.contains_key(route) {
            self.make_room(&mut paths);
        }
        let p = paths.entry(route.to_owned()).or_insert_with(|| Path {
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
                self.report_open(&paths, route);
            }
        }
    }

    /// Frees a place in a full map for a new path: forgets the paths that are counting but
    /// not open, and when every path is open, the one due to half-open first. A flood of
    /// paths (a tenant inventing model names or routes) thus never stops a new path from
    /// being counted: it only shortens the oldest open ones.
    fn make_room(&self, paths: &mut HashMap<String, Path>) {
        paths.retain(|_, p| p.open_until.is_some());
        if paths.len() < MAX_PATHS {
            return;
        }
        let oldest = paths
            .iter()
            .min_by_key(|(_, p)| p.open_until)
            .map(|(route, _)| route.clone());
        if let Some(route) = oldest
            && paths.remove(&route).is_some_and(|p| p.counted)
        {
            self.report_open(paths, &route);
        }
    }

    /// Sets [`crate::observe::BREAKER_OPEN`] for the credential of `route`: its paths
    /// counted open (a tenant's breakers are counted as they open instead).
    fn report_open(&self, paths: &HashMap<String, Path>, route: &str) {
        if self.kind == Kind::Credential {
            report_open(paths, route);
        }
    }
}

/// The provider and credential of a path the executor named, the labels of the gauge.
fn owner(route: &str) -> (&str, &str) {
    let mut words = route.splitn(3, ' ');
    (words.next().unwrap_or(""), words.next().unwrap_or(""))
}

/// Sets [`crate::observe::BREAKER_OPEN`] for the credential of `route`: its paths counted open.
fn report_open(paths: &HashMap<String, Path>, route: &str) {
    let (provider, credential) = owner(route);
    let open = paths
        .iter()
        .filter(|(k, p)| p.counted && owner(k) == (provider, credential))
        .count();
    metrics::gauge!(
        crate::observe::BREAKER_OPEN,
        "provider" => provider.to_owned(),
        "credential" => credential.to_owned(),
    )
    .set(open as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_drop_ids_queries_and_hosts() {
        assert_eq!(
            route_template("GET", "https://api.github.com/repos/o/r/issues/1234?page=2"),
            "GET /repos/o/r/issues/{}"
        );
        assert_eq!(
            route_template(
                "POST",
                "https://api.stripe.com/v1/charges/ch_3MmlLrLkdIwHu7ix0snN0B15/capture"
            ),
            "POST /v1/charges/{}/capture"
        );
    }

    #[test]
    fn states_show_counted_open_and_half_open_paths_without_changing_them() {
        let b = Breakers::new(2, Duration::from_secs(30));
        #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
        let t = Instant::now();
        assert!(b.states(t).is_empty());
        b.failure("p c GET /b", "500 boom", t);
        b.failure("p c GET /a", "401 invalid_api_key", t);
        b.failure("p c GET /a", "401 invalid_api_key", t);
        let states = b.states(t + Duration::from_secs(10));
        assert_eq!(states.len(), 2);
        assert_eq!(
            (
                states[0].route.as_str(),
                states[0].state,
                states[0].retry_in_ms
            ),
            ("p c GET /a", "open", 20_000)
        );
        assert_eq!((states[1].state, states[1].failures), ("closed", 1));
        let later = t + Duration::from_secs(31);
        assert_eq!(b.states(later)[0].state, "half-open");
        assert!(b.check("p c GET /a", t).is_err(), "looking closed nothing");
    }

    #[test]
    fn identical_failures_in_a_row_open_the_path() {
        let b = Breakers::new(3, Duration::from_secs(30));
        #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
        let t = Instant::now();
        b.failure("GET /x", "401 invalid_api_key", t);
        b.failure("GET /x", "404 not_found", t);
        b.failure("GET /x", "401 invalid_api_key", t);
        b.failure("GET /x", "401 invalid_api_key", t);
        assert!(
            b.check("GET /x", t).is_ok(),
            "a different error reset the count"
        );
        b.failure("GET /x", "401 invalid_api_key", t);
        let open = b.check("GET /x", t).unwrap_err();
        assert_eq!(open.failures, 3);
        assert!(b.check("GET /y", t).is_ok(), "other paths go on");
        assert!(
            b.check("GET /x", t + Duration::from_secs(31)).is_ok(),
            "it closes after a while"
        );
        b.success("GET /x");
        assert!(b.check("GET /x", t).is_ok());
    }

    #[test]
    fn a_half_open_path_lets_one_probe_through_and_its_answer_decides() {
        let open_for = Duration::from_secs(30);
        let b = Breakers::new(2, open_for);
        #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
        let t = Instant::now();
        b.failure("p c POST /x", "500 boom", t);
        b.failure("p c POST /x", "500 boom", t);
        let later = t + open_for + Duration::from_secs(1);
        assert!(b.check("p c POST /x", later).is_ok(), "the probe");
        let waiting = b.check("p c POST /x", later).unwrap_err();
        assert_eq!(waiting.retry_in, open_for, "the others wait for the probe");
        assert_eq!(b.states(later)[0].state, "probing");
        // The probe fails, with another error: open again.
        b.failure("p c POST /x", "502 bad_gateway", later);
        assert!(
            b.check("p c POST /x", later + Duration::from_secs(1))
                .is_err()
        );
        // A probe that never answers: after another while, the next call probes.
        let again = later + open_for * 2;
        assert!(b.check("p c POST /x", again).is_ok());
        assert!(b.check("p c POST /x", again).is_err());
        assert!(b.check("p c POST /x", again + open_for).is_ok());
        // A success closes it for everyone.
        b.success("p c POST /x");
        assert!(b.check("p c POST /x", again + open_for).is_ok());
        assert!(b.check("p c POST /x", again + open_for).is_ok());
    }

    #[test]
    fn a_probe_that_ends_with_no_word_on_the_path_leaves_it_to_the_next_call() {
        let open_for = Duration::from_secs(30);
        let b = Breakers::new(1, open_for);
        #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
        let t = Instant::now();
        b.failure("p c POST /x", "500 boom", t);
        let later = t + open_for + Duration::from_secs(1);
        assert!(b.check("p c POST /x", later).is_ok(), "the probe");
        assert!(b.check("p c POST /x", later).is_err(), "held by the probe");
        // Answered 429, or refused before its send: no word on the path.
        b.release("p c POST /x");
        assert!(
            b.check("p c POST /x", later).is_ok(),
            "the next call probes"
        );
        assert_eq!(b.states(later)[0].state, "probing");
        // Releasing a path that is closed, or not known, changes nothing.
        b.release("p c GET /y");
        b.success("p c POST /x");
        b.release("p c POST /x");
        assert!(b.check("p c POST /x", later).is_ok());
    }

    #[test]
    fn a_flood_of_new_paths_keeps_the_open_ones_and_stays_bounded() {
        let b = Breakers::of(Kind::Tenant, 1, Duration::from_secs(30));
        #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
        let t = Instant::now();
        b.failure("open", "400 bad", t);
        let b2 = Breakers::of(Kind::Tenant, 3, Duration::from_secs(30));
        b2.failure("open", "400 bad", t);
        b2.failure("open", "400 bad", t);
        b2.failure("open", "400 bad", t);
        for i in 0..(MAX_PATHS + 10) {
            b2.failure(&format!("path {i}"), "400 bad", t);
        }
        assert!(b2.paths().len() <= MAX_PATHS);
        assert!(b2.check("open", t).is_err(), "the open path was kept");
        assert!(b.check("open", t).is_err());
    }

    #[test]
    fn a_map_full_of_open_paths_still_opens_a_new_one() {
        let b = Breakers::of(Kind::Tenant, 1, Duration::from_secs(30));
        #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
        let t = Instant::now();
        for i in 0..MAX_PATHS {
            let at = t + Duration::from_millis(u64::try_from(i).unwrap());
            b.failure(&format!("flood {i}"), "400 bad", at);
        }
        let later = t + Duration::from_secs(1);
        b.failure("steady", "500 down", later);
        assert!(b.check("steady", later).is_err(), "the new path opened");
        assert_eq!(b.paths().len(), MAX_PATHS);
        assert!(
            b.check("flood 0", later).is_ok(),
            "the path due first made room"
        );
        assert!(b.check("flood 1", later).is_err());
    }
}

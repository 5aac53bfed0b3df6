//! A listener's places. Every connection arrives as a *visitor*: it holds one of a few
//! visitors' places, and has a short time (`serve.auth_timeout_ms`) to present a request
//! its listener takes (an agent's valid token). Then it is *seated*: it holds a place of its
//! agent, and one of its tenant, each bounded, and all seated connections are bounded
//! together. So no one can fill the listener:
//!
//! - idle or slow unauthenticated sockets hold only visitors' places, for at most the
//!   visitor's time each, and a new connection is never turned away for them: when the
//!   visitors' places are full, the oldest visitor is cut to make room;
//! - one agent's (or tenant's) connections, stalled or not, hold only its own places;
//!   past them its next connection is answered 503 and closed.
//!
//! The accept loop itself never waits for a place.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use crate::allowance::{Allowance, Hold, Short};
use crate::shape::SluiceError;

/// A listener's bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// Connections not yet seated, at once.
    pub visitors: u32,
    /// How long a visitor has to be seated.
    pub visitor_time: Duration,
    /// Seated connections of one agent.
    pub per_agent: u32,
    /// Seated connections of one tenant.
    pub per_tenant: u32,
    /// Seated connections in all.
    pub seated: u32,
}

pub(crate) use crate::metric_names::{SEATS_REFUSED, VISITORS_CUT};

/// A listener's places; see the module docs.
#[derive(Debug)]
pub(crate) struct Places {
    what: &'static str,
    bounds: Bounds,
    /// The visitors, oldest first, each with the signal that cuts it.
    visitors: Mutex<BTreeMap<u64, Arc<Notify>>>,
    next: AtomicU64,
    agents: Arc<Allowance>,
    tenants: Arc<Allowance>,
}

/// One connection's place, given back when it is dropped.
#[derive(Debug)]
pub(crate) struct Place {
    id: u64,
    places: Arc<Places>,
    cut: Arc<Notify>,
    seat: Mutex<Option<Seat>>,
}

/// A seated connection's holds.
#[derive(Debug)]
struct Seat {
    _agent: Hold,
    _tenant: Hold,
}

/// Why a connection was not seated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// Its agent holds every place it may.
    Agent(u32),
    /// Its tenant does.
    Tenant(u32),
    /// Every seat of the listener is taken.
    Listener(u32),
}

impl Full {
    /// Whose bound it is: `agent`, `tenant` or `listener`.
    pub(crate) fn whose(self) -> &'static str {
        match self {
            Self::Agent(_) => "agent",
            Self::Tenant(_) => "tenant",
            Self::Listener(_) => "listener",
        }
    }

    /// The bound.
    pub(crate) fn cap(self) -> u32 {
        match self {
            Self::Agent(n) | Self::Tenant(n) | Self::Listener(n) => n,
        }
    }

    /// What the request that found no seat is told: 503, try again in a second, and its
    /// connection closed.
    pub(crate) fn refusal(self) -> SluiceError {
        let key = match self {
            Self::Agent(_) => "serve.max_connections_per_agent",
            Self::Tenant(_) => "serve.max_connections_per_tenant",
            Self::Listener(_) => "serve.max_connections",
        };
        SluiceError::new(
            503,
            "too_many_connections",
            format!(
                "sluice: {} connections of the {} are open ({key}); send on those open, or \
                 close idle ones, and try again in a second",
                self.cap(),
                self.whose()
            ),
        )
        .detail(serde_json::json!({"bound": key, "connections": self.cap()}))
        .retry_after(1)
        .closing()
    }
}

impl Places {
    /// The places of listener `what`, within `bounds`.
    pub(crate) fn new(what: &'static str, bounds: Bounds) -> Arc<Self> {
        let seated = u64::from(bounds.seated);
        Arc::new(Self {
            what,
            bounds,
            visitors: Mutex::default(),
            next: AtomicU64::new(0),
            agents: Allowance::new(u64::from(bounds.per_agent), seated),
            tenants: Allowance::new(u64::from(bounds.per_tenant), seated),
        })
    }

    fn visitors(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Notify>>> {
        self.visitors.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for a connection just accepted, as a visitor; the oldest visitor is cut when
    /// the visitors' places are full.
    pub(crate) fn arrive(self: &Arc<Self>) -> Place {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let cut = Arc::new(Notify::new());
        let mut visitors = self.visitors();
        while visitors.len() >= self.bounds.visitors.max(1) as usize {
            let Some((_, oldest)) = visitors.pop_first() else {
                break;
            };
            oldest.notify_one();
            metrics::counter!(VISITORS_CUT, "listener" => self.what, "why" => "evicted")
                .increment(1);
        }
        visitors.insert(id, cut.clone());
        drop(visitors);
        Place {
            id,
            places: self.clone(),
            cut,
            seat: Mutex::new(None),
        }
    }

    /// Seated connections now, and of `agent`.
    #[cfg(test)]
    fn seated(&self, agent: &str) -> (u64, u64) {
        (self.agents.held_in_all(), self.agents.held_by(agent))
    }
}

impl Place {
    fn seat(&self) -> std::sync::MutexGuard<'_, Option<Seat>> {
        self.seat.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Seats the connection for `agent` of `tenant` (a seated one stays as it is).
    ///
    /// # Errors
    /// [`Full`]: whose places are all taken; the connection is still a visitor.
    pub(crate) fn sit(&self, agent: &str, tenant: &str) -> Result<(), Full> {
        let mut seat = self.seat();
        if seat.is_some() {
            return Ok(());
        }
        let p = &self.places;
        let refused = |short: Short, owner: Full| {
            let full = match short {
                Short::Owner { .. } => owner,
                Short::Total { cap } => Full::Listener(u32::try_from(cap).unwrap_or(u32::MAX)),
            };
            metrics::counter!(SEATS_REFUSED, "listener" => p.what, "whose" => full.whose())
                .increment(1);
            full
        };
        let a =
            (p.agents.take(agent, 1)).map_err(|s| refused(s, Full::Agent(p.bounds.per_agent)))?;
        let t = (p.tenants.take(tenant, 1))
            .map_err(|s| refused(s, Full::Tenant(p.bounds.per_tenant)))?;
        *seat = Some(Seat {
            _agent: a,
            _tenant: t,
        });
        p.visitors().remove(&self.id);
        Ok(())
    }

    /// Whether the connection is seated.
    pub(crate) fn is_seated(&self) -> bool {
        self.seat().is_some()
    }

    /// Ends when the connection must be cut: as a visitor past its time, or evicted to make
    /// room for a newer one. A seated connection is never cut here.
    pub(crate) async fn cut(&self) {
        tokio::select! {
            () = self.cut.notified() => {}
            () = tokio::time::sleep(self.places.bounds.visitor_time) => {
                if self.is_seated() {
                    std::future::pending::<()>().await;
                }
                metrics::counter!(VISITORS_CUT, "listener" => self.places.what, "why" => "timeout")
                    .increment(1);
            }
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.places.visitors().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds() -> Bounds {
        Bounds {
            visitors: 3,
            visitor_time: Duration::from_millis(50),
            per_agent: 2,
            per_tenant: 3,
            seated: 4,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_visitor_cuts_the_oldest_when_the_visitors_places_are_full() {
        let places = Places::new("test", bounds());
        let first = places.arrive();
        let _others: Vec<Place> = (0..3).map(|_| places.arrive()).collect();
        // The first was cut at once: its signal is waiting for it.
        tokio::time::timeout(Duration::from_millis(1), first.cut())
            .await
            .expect("the oldest visitor is cut");
        assert_eq!(places.visitors().len(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_visitor_is_cut_at_its_time_and_a_seated_connection_never() {
        let places = Places::new("test", bounds());
        let visitor = places.arrive();
        let seated = places.arrive();
        seated.sit("bot", "acme").unwrap();
        assert_eq!(
            places.visitors().len(),
            1,
            "a seated connection is no visitor"
        );
        tokio::time::timeout(Duration::from_millis(60), visitor.cut())
            .await
            .expect("cut at its time");
        assert!(
            tokio::time::timeout(Duration::from_secs(60), seated.cut())
                .await
                .is_err()
        );
    }

    #[test]
    fn seats_are_bounded_by_agent_then_tenant_then_listener_and_come_back() {
        let places = Places::new("test", bounds());
        let sit = |agent: &str, tenant: &str| {
            let p = places.arrive();
            p.sit(agent, tenant).map(|()| p)
        };
        let a1 = sit("a", "t").unwrap();
        let _a2 = sit("a", "t").unwrap();
        assert_eq!(sit("a", "t").unwrap_err(), Full::Agent(2));
        let _b1 = sit("b", "t").unwrap();
        assert_eq!(sit("b", "t").unwrap_err(), Full::Tenant(3));
        let _c1 = sit("c", "u").unwrap();
        assert_eq!(sit("d", "v").unwrap_err(), Full::Listener(4));
        drop(a1);
        assert_eq!(places.seated("a"), (3, 1));
        assert!(sit("d", "v").is_ok(), "a place given back is taken again");
    }
}

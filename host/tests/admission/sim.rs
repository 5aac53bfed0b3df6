//! A discrete-event simulation around the scheduler, on virtual time: arrivals are submitted
//! when they are due, admitted requests stay in flight for their latency and then complete
//! with their actual usage, and the clock jumps to the next thing that can happen.

use std::collections::BTreeMap;

use sluice::admission::{
    Ask, Class, Config, GrantId, Nanos, QueueEvent, Rejection, RequestId, Route, Scheduler, TaskId,
    TenantId, Usage,
};

pub const MS: Nanos = 1_000_000;
pub const SEC: Nanos = 1_000 * MS;
pub const MINUTE: Nanos = 60 * SEC;

/// One request of a workload.
#[derive(Debug, Clone)]
pub struct Arrival {
    pub at: Nanos,
    pub route: Route,
    pub tenant: TenantId,
    pub class: Class,
    pub usage: Usage,
    /// What the response will say it used.
    pub actual: Usage,
    /// How long it stays in flight once admitted.
    pub latency: Nanos,
    pub deadline: Option<Nanos>,
    pub task: Option<TaskId>,
}

/// What happened to one request.
#[derive(Debug, Clone)]
pub struct Admitted {
    pub request: RequestId,
    pub at: Nanos,
    /// When it completed (its latency after `at`).
    pub done: Nanos,
    pub submitted: Nanos,
    pub route: Route,
    pub tenant: TenantId,
    pub class: Class,
    pub actual: Usage,
}

#[derive(Debug)]
pub struct Sim {
    pub s: Scheduler,
    pub now: Nanos,
    pending: BTreeMap<RequestId, Arrival>,
    in_flight: BTreeMap<(Nanos, GrantId), Usage>,
    pub admitted: Vec<Admitted>,
    pub rejected: Vec<(Arrival, Rejection)>,
    pub expired: Vec<(Arrival, sluice::admission::Why)>,
}

impl Sim {
    pub fn new(config: &str) -> Self {
        Self {
            s: Scheduler::new(Config::from_toml(config).unwrap()).unwrap(),
            now: 0,
            pending: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            admitted: Vec::new(),
            rejected: Vec::new(),
            expired: Vec::new(),
        }
    }

    pub fn route(&mut self, provider: &str, credential: &str, names: &[&str]) -> Route {
        self.s.route(provider, credential, names)
    }

    pub fn tenant(&mut self, name: &str) -> TenantId {
        self.s.tenant(name)
    }

    /// Submits `a` now; `Some(id)` if it queued.
    pub fn submit(&mut self, a: Arrival) -> Option<RequestId> {
        let ask = Ask {
            route: a.route,
            tenant: a.tenant,
            class: a.class,
            usage: a.usage,
            deadline: a.deadline,
            task: a.task,
        };
        match self.s.submit(self.now, ask) {
            Ok(id) => {
                self.pending.insert(id, a);
                Some(id)
            }
            Err(e) => {
                self.rejected.push((a, e));
                None
            }
        }
    }

    /// Polls at the current instant and records what happened.
    pub fn poll(&mut self) {
        let mut events = Vec::new();
        self.s.poll(self.now, &mut events);
        for e in events {
            match e {
                QueueEvent::Admitted { request, grant } => {
                    let a = self
                        .pending
                        .remove(&request)
                        .expect("admitted twice or unknown");
                    self.in_flight
                        .insert((self.now + a.latency, grant), a.actual);
                    self.admitted.push(Admitted {
                        request,
                        at: self.now,
                        done: self.now + a.latency,
                        submitted: a.at,
                        route: a.route,
                        tenant: a.tenant,
                        class: a.class,
                        actual: a.actual,
                    });
                }
                QueueEvent::Expired { request, why } => {
                    let a = self
                        .pending
                        .remove(&request)
                        .expect("expired twice or unknown");
                    self.expired.push((a, *why));
                }
            }
        }
    }

    fn complete_due(&mut self) {
        while let Some((&(at, grant), _)) = self.in_flight.first_key_value() {
            if at > self.now {
                break;
            }
            let actual = self.in_flight.remove(&(at, grant)).unwrap();
            assert!(self.s.complete(self.now, grant, Some(&actual)));
        }
    }

    /// Runs `arrivals` (sorted by time) until `end`.
    pub fn run(&mut self, arrivals: impl IntoIterator<Item = Arrival>, end: Nanos) {
        let mut arrivals = arrivals.into_iter().peekable();
        loop {
            self.complete_due();
            while let Some(a) = arrivals.next_if(|a| a.at <= self.now) {
                self.submit(a);
            }
            self.poll();
            let next = [
                arrivals.peek().map(|a| a.at),
                self.s.next_wake(),
                self.in_flight.first_key_value().map(|(k, _)| k.0),
            ]
            .into_iter()
            .flatten()
            .filter(|t| *t > self.now)
            .min();
            match next {
                Some(t) if t <= end => self.now = t,
                _ => {
                    self.now = end;
                    self.complete_due();
                    self.poll();
                    return;
                }
            }
        }
    }

    /// When `id` was admitted, if it was.
    pub fn admitted_at(&self, id: RequestId) -> Option<Nanos> {
        self.admitted.iter().find(|a| a.request == id).map(|a| a.at)
    }

    /// Whether `id` is still waiting.
    pub fn waiting(&self, id: RequestId) -> bool {
        self.pending.contains_key(&id)
    }
}

/// A request of one unit and no tokens, that completes after `latency`.
pub fn call(at: Nanos, route: Route, tenant: TenantId, class: Class) -> Arrival {
    Arrival {
        at,
        route,
        tenant,
        class,
        usage: Usage::ONE_REQUEST,
        actual: Usage::ONE_REQUEST,
        latency: 50 * MS,
        deadline: None,
        task: None,
    }
}

/// Jain's fairness index of `xs`: 1 when all are equal, 1/n when one takes everything.
pub fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    #[allow(clippy::cast_precision_loss)]
    let n = xs.len() as f64;
    sum * sum / (n * squares)
}

/// The most of `admitted` in flight at once: each is in flight from `at` until `done`.
pub fn peak_in_flight<'a>(admitted: impl IntoIterator<Item = &'a Admitted>) -> usize {
    let mut edges: Vec<(Nanos, i32)> = admitted
        .into_iter()
        .flat_map(|a| [(a.at, 1), (a.done, -1)])
        .collect();
    // At one instant, completions come first: the scheduler frees before it admits.
    edges.sort_unstable();
    let (mut now, mut peak) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    usize::try_from(peak).unwrap_or(0)
}

impl Sim {
    /// Why each request still waiting waits.
    pub fn why_waiting(&self) -> Vec<sluice::admission::Why> {
        self.pending
            .keys()
            .filter_map(|id| self.s.explain(self.now, *id))
            .collect()
    }

    /// A scheduler on `config` with one call to provider `p` admitted at 0 and not
    /// completed: its grant, route and tenant.
    pub fn one_in_flight(config: &str) -> (Self, GrantId, Route, TenantId) {
        let mut sim = Self::new(config);
        let route = sim.route("p", "acct", &[]);
        let tenant = sim.tenant("t");
        sim.s.submit(0, ask(route, tenant)).unwrap();
        let mut events = Vec::new();
        sim.s.poll(0, &mut events);
        let [QueueEvent::Admitted { grant, .. }] = events[..] else {
            panic!("{events:?}")
        };
        (sim, grant, route, tenant)
    }
}

/// One standard request of `tenant` on `route`, with no deadline and no task.
pub fn ask(route: Route, tenant: TenantId) -> Ask {
    Ask {
        route,
        tenant,
        class: Class::Standard,
        usage: Usage::ONE_REQUEST,
        deadline: None,
        task: None,
    }
}

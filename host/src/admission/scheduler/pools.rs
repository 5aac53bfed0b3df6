//! Pools: the member a call is admitted on, chosen by the scheduler's own state — the one
//! whose scopes would admit it soonest, given every quota it charges, what is queued
//! ahead of it, holds and pauses, and concurrency — so a pool's use is as exact as any
//! credential's, on one host and across hosts sharing a store (whose waits land here as
//! pauses). Ties go by weight, then to the member chosen least recently.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Route, Scheduler, TenantId};
use crate::admission::bucket::Nanos;
use crate::admission::config::Config;
use crate::admission::scope::ScopeKey;
use crate::admission::snapshot::{HoldStatus, PoolMemberStatus, PoolStatus};
use crate::admission::usage::Usage;

/// The most sets of narrower scopes whose routes a pool keeps; past it they are made again.
const MAX_KEPT_ROUTES: usize = 256;

/// Every configured pool, by provider and name.
#[derive(Debug, Default)]
pub(super) struct Pools {
    /// By provider, then by pool name.
    by_name: HashMap<Arc<str>, HashMap<Arc<str>, Pool>>,
}

/// One pool's members and what the scheduler remembers of them.
#[derive(Debug)]
struct Pool {
    members: Box<[Member]>,
    /// Each member's route, by the narrower scopes a call charges (joined by `\n`).
    routes: HashMap<String, Box<[Route]>>,
}

#[derive(Debug)]
struct Member {
    credential: Arc<str>,
    weight: u64,
    /// Calls admitted on it through the pool.
    chosen: u64,
    /// When it was last chosen.
    last: Nanos,
}

impl Pools {
    /// The pools `config` names.
    pub(super) fn new(config: &Config) -> Self {
        let mut by_name = HashMap::new();
        for (provider, p) in &config.providers {
            for (name, pool) in &p.pools {
                let members = pool
                    .weighted()
                    .map(|(credential, weight)| Member {
                        credential: credential.into(),
                        weight: weight.into(),
                        chosen: 0,
                        last: 0,
                    })
                    .collect();
                let pool = Pool {
                    members,
                    routes: HashMap::new(),
                };
                by_name
                    .entry(provider.as_str().into())
                    .or_insert_with(HashMap::new)
                    .insert(name.as_str().into(), pool);
            }
        }
        Self { by_name }
    }

    /// Forgets every route kept: some lane they name was forgotten.
    pub(super) fn forget_routes(&mut self) {
        for pool in self.by_name.values_mut().flat_map(HashMap::values_mut) {
            pool.routes.clear();
        }
    }

    fn get(&self, provider: &str, pool: &str) -> Option<&Pool> {
        self.by_name.get(provider)?.get(pool)
    }

    fn get_mut(&mut self, provider: &str, pool: &str) -> Option<&mut Pool> {
        self.by_name.get_mut(provider)?.get_mut(pool)
    }
}

/// A call to place on one member of a pool: see [`Scheduler::choose`].
#[derive(Debug, Clone, Copy)]
pub struct PoolAsk<'a> {
    /// The provider.
    pub provider: &'a str,
    /// The pool's name.
    pub pool: &'a str,
    /// The narrower scopes the call charges (a model's).
    pub names: &'a [&'a str],
    /// The tenant it is billed to.
    pub tenant: TenantId,
    /// Its estimated usage.
    pub usage: &'a Usage,
    /// Members it goes with only when no other can take it.
    pub avoid: &'a [&'a str],
}

/// How soon a member would admit a call, and whether it can at all; ordered best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Soonest {
    /// Avoided (the caller's say: its breaker is open, it just failed), too small for the
    /// call, or its queue is full.
    unusable: bool,
    /// Every concurrency slot is taken: when one frees is not known.
    full: bool,
    /// When its quotas would admit the call, what is queued ahead of it first.
    at: Nanos,
}

impl Scheduler {
    /// The member of `ask.provider`'s pool `ask.pool` a call is admitted on: the one
    /// that would admit it soonest, members named in `ask.avoid` last; ties by weight, then
    /// least recently chosen. `None`: the configuration names no such pool.
    pub fn choose(&mut self, now: Nanos, ask: &PoolAsk<'_>) -> Option<Arc<str>> {
        let PoolAsk {
            provider,
            pool,
            names,
            tenant,
            usage,
            avoid,
        } = *ask;
        let now = self.now.max(now);
        let routes = self.member_routes(provider, pool, names)?;
        let band = self.tenants[tenant.0].band;
        let soonest: Vec<Soonest> = routes
            .iter()
            .map(|route| self.soonest(now, *route, band, usage))
            .collect();
        let members = &mut self.pools.get_mut(provider, pool)?.members;
        let mut best: Option<(usize, Soonest)> = None;
        for (i, (member, soonest)) in members.iter().zip(soonest).enumerate() {
            let soonest = Soonest {
                unusable: soonest.unusable || avoid.contains(&&*member.credential),
                ..soonest
            };
            let better = match best {
                None => true,
                Some((b, s)) if soonest == s => before(member, &members[b]),
                Some((_, s)) => soonest < s,
            };
            if better {
                best = Some((i, soonest));
            }
        }
        let member = &mut members[best?.0];
        member.chosen += 1;
        member.last = now;
        Some(member.credential.clone())
    }

    /// Each member's route for calls charging `names`, made on first use.
    fn member_routes(
        &mut self,
        provider: &str,
        pool: &str,
        names: &[&str],
    ) -> Option<Box<[Route]>> {
        let joined = names.join("\n");
        let p = self.pools.get(provider, pool)?;
        if let Some(routes) = p.routes.get(&joined) {
            return Some(routes.clone());
        }
        let members: Vec<Arc<str>> = p.members.iter().map(|m| m.credential.clone()).collect();
        let routes: Box<[Route]> = members
            .iter()
            .map(|credential| self.route(provider, credential, names))
            .collect();
        let p = self.pools.get_mut(provider, pool)?;
        if p.routes.len() >= MAX_KEPT_ROUTES {
            p.routes.clear();
        }
        p.routes.insert(joined, routes.clone());
        Some(routes)
    }

    /// How soon `route` would admit `usage` for a tenant served in `band`.
    fn soonest(&self, now: Nanos, route: Route, band: u8, usage: &Usage) -> Soonest {
        let lane = &self.lanes[route.0];
        let ahead = lane.ahead(band);
        let mut s = Soonest {
            unusable: false,
            full: false,
            at: now,
        };
        for &id in &lane.scopes {
            let slot = &self.scopes[id];
            let scope = &slot.scope;
            s.unusable |=
                scope.oversized(usage).is_some() || slot.queued >= scope.shape().max_queued;
            s.full |= scope.slots().is_some_and(|(limit, taken)| taken >= limit);
            s.at = s.at.max(scope.estimate(now, &ahead, usage));
        }
        s
    }

    /// Every pool and how its members are used, at `now`, by provider then pool name.
    pub(super) fn pool_statuses(&self, now: Nanos) -> Vec<PoolStatus> {
        let mut all = Vec::new();
        for (provider, pools) in &self.pools.by_name {
            for (name, pool) in pools {
                let members = pool
                    .members
                    .iter()
                    .map(|m| {
                        let key = ScopeKey::Provider {
                            provider: provider.clone(),
                            credential: m.credential.clone(),
                            name: None,
                        };
                        let held = self
                            .scopes
                            .find(&key)
                            .and_then(|id| self.scopes[id].scope.held(now))
                            .map(|h| HoldStatus {
                                reason: h.reason.to_string(),
                                left_ms: (h.until.saturating_sub(now)) / 1_000_000,
                            });
                        PoolMemberStatus {
                            credential: m.credential.to_string(),
                            scope: key.to_string(),
                            weight: m.weight,
                            chosen: m.chosen,
                            held,
                        }
                    })
                    .collect();
                all.push(PoolStatus {
                    provider: provider.to_string(),
                    pool: name.to_string(),
                    members,
                });
            }
        }
        all.sort_unstable_by(|a, b| (&a.provider, &a.pool).cmp(&(&b.provider, &b.pool)));
        all
    }

    /// Whether `provider` has a pool named `pool`.
    pub fn has_pool(&self, provider: &str, pool: &str) -> bool {
        self.pools.get(provider, pool).is_some()
    }

    /// The members of `provider`'s pool `pool`, by label, if it is configured.
    pub fn pool_members(&self, provider: &str, pool: &str) -> Option<Vec<Arc<str>>> {
        let p = self.pools.get(provider, pool)?;
        Some(p.members.iter().map(|m| m.credential.clone()).collect())
    }
}

/// Whether `a` goes before `b` when both would admit a call equally soon: the one with
/// fewer calls for its weight, then the one chosen less recently.
fn before(a: &Member, b: &Member) -> bool {
    let a_share = u128::from(a.chosen) * u128::from(b.weight);
    let b_share = u128::from(b.chosen) * u128::from(a.weight);
    a_share < b_share || (a_share == b_share && a.last < b.last)
}

#[cfg(test)]
mod tests {
    use super::PoolAsk;
    use crate::admission::{Ask, Class, Config, QueueEvent, Scheduler, ScopeKey, Usage};

    /// A provider `p` whose credentials admit 60 requests a minute (a burst of 1 at margin
    /// 1), `big` 600, and a pool `all` of `small`, `big` and `other`.
    fn scheduler(pool: &str) -> Scheduler {
        let c = Config::from_toml(&format!(
            "margin = 1.0\n[providers.p.limits]\nrequests_per_minute = 60\n\
             [providers.p.credentials.big.limits]\nrequests_per_minute = 600\n\
             [providers.p.pools.all]\n{pool}\n"
        ))
        .unwrap();
        Scheduler::new(c).unwrap()
    }

    fn choose(s: &mut Scheduler, now: u64, avoid: &[&str]) -> String {
        let ask = PoolAsk {
            provider: "p",
            pool: "all",
            names: &[],
            tenant: s.tenant("t"),
            usage: &Usage::ONE_REQUEST,
            avoid,
        };
        s.choose(now, &ask).unwrap().to_string()
    }

    /// Admits one request on `member` at `now`.
    fn take(s: &mut Scheduler, now: u64, member: &str) {
        let (route, tenant) = (s.route("p", member, &[]), s.tenant("t"));
        let ask = Ask {
            route,
            tenant,
            class: Class::Standard,
            usage: Usage::ONE_REQUEST,
            deadline: None,
            task: None,
        };
        s.submit(now, ask).unwrap();
        let mut events = Vec::new();
        s.poll(now, &mut events);
        assert!(
            matches!(events[..], [QueueEvent::Admitted { .. }]),
            "{events:?}"
        );
    }

    #[test]
    fn the_member_that_admits_soonest_is_chosen() {
        let mut s = scheduler(r#"members = ["small", "other", "big"]"#);
        // All free: ties by weight (all 1), then least recently chosen, in order.
        assert_eq!(choose(&mut s, 0, &[]), "small");
        take(&mut s, 0, "small");
        assert_eq!(choose(&mut s, 0, &[]), "other");
        take(&mut s, 0, "other");
        // `small` and `other` wait a second now; `big` a tenth of one.
        for k in 0..9 {
            let now = k * 100_000_000;
            assert_eq!(choose(&mut s, now, &[]), "big", "at {k}");
            take(&mut s, now, "big");
        }
        // A second on, `small` is free again and chosen least recently: its turn.
        assert_eq!(choose(&mut s, 1_000_000_000, &[]), "small");
        assert_eq!(s.pool_members("p", "all").unwrap().len(), 3);
        assert!(s.pool_members("p", "none").is_none());
    }

    #[test]
    fn a_held_or_avoided_member_goes_last() {
        let mut s = scheduler(r#"members = ["big", "small"]"#);
        let big = ScopeKey::Provider {
            provider: "p".into(),
            credential: "big".into(),
            name: None,
        };
        s.hold(0, &big, 30_000_000_000, "rate limited");
        assert_eq!(choose(&mut s, 0, &[]), "small");
        assert_eq!(
            choose(&mut s, 0, &["small"]),
            "big",
            "avoided, yet the only other is held"
        );
        assert_eq!(choose(&mut s, 0, &["big"]), "small");
        // Back when the hold passes.
        assert_eq!(choose(&mut s, 31_000_000_000, &["small"]), "big");
    }

    #[test]
    fn ties_go_by_weight() {
        let mut s = scheduler("members = [\"a\", \"b\"]\nweights = { b = 3 }");
        let mut chosen = std::collections::BTreeMap::<String, u32>::new();
        for _ in 0..400 {
            *chosen.entry(choose(&mut s, 0, &[])).or_default() += 1;
        }
        assert_eq!(chosen["a"], 100, "{chosen:?}");
        assert_eq!(chosen["b"], 300, "{chosen:?}");
    }
}

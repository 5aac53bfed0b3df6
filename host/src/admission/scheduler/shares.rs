//! Tenants' shares of a scope that several lanes charge. Within a lane, start-time fair
//! queuing keeps tenants to their weighted shares (`crate::admission::fair`); but one scope —
//! a credential's own bucket above all — is charged by every lane of its credential, one per
//! model or endpoint family. Taking turns by lane would give a tenant one share per lane it
//! queues in: a tenant inventing model names would take nearly the whole key. So each scope
//! keeps its own start-time fair order between tenants — a virtual time and each tenant's
//! finish tag — and when a scope frees, the lanes waiting on it go in the order of their next
//! tenant's start tag there: the tenant served least, by weight, first.

use std::collections::HashMap;

/// Past four times this many tenants remembered on one scope, those whose tags the virtual
/// time has passed are forgotten (a tenant's tag behind the virtual time starts from it
/// anyway); if more than twice as many are left, only this many are kept, those served
/// furthest ahead — forgetting a tenant served ahead would let it jump the queue, forgetting
/// one near the virtual time costs it at most what it was ahead.
const REMEMBERED: usize = 64;

/// Each scope's fair order between tenants, by scope id.
#[derive(Debug, Default)]
pub(super) struct Shares(HashMap<u32, Share>);

#[derive(Debug, Default)]
struct Share {
    vtime: u64,
    finish: HashMap<u32, u64>,
}

impl Shares {
    /// The start tag `tenant`'s next request would have on scope `s`.
    pub(super) fn start(&self, s: u32, tenant: u32) -> u64 {
        self.0.get(&s).map_or(0, |share| {
            share
                .finish
                .get(&tenant)
                .copied()
                .unwrap_or(0)
                .max(share.vtime)
        })
    }

    /// `tenant` was served a request of `size` (by its weight) on scope `s`.
    pub(super) fn served(&mut self, s: u32, tenant: u32, size: u64) {
        let share = self.0.entry(s).or_default();
        let finish = share.finish.entry(tenant).or_default();
        let start = (*finish).max(share.vtime);
        *finish = start.saturating_add(size);
        share.vtime = start;
        // Swept once in so many new tenants, not at each: a sweep costs the entries kept.
        if share.finish.len() > 4 * REMEMBERED {
            let vtime = share.vtime;
            share.finish.retain(|_, f| *f > vtime);
            if share.finish.len() > 2 * REMEMBERED {
                let mut tags: Vec<(u64, u32)> = share.finish.drain().map(|(t, f)| (f, t)).collect();
                tags.select_nth_unstable_by(REMEMBERED, |a, b| b.cmp(a));
                share
                    .finish
                    .extend(tags[..REMEMBERED].iter().map(|&(f, t)| (t, f)));
            }
        }
    }

    /// Forgets scope `s`: its id is free to name another scope.
    pub(super) fn forget(&mut self, s: u32) {
        self.0.remove(&s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_served_less_starts_first_and_one_served_more_waits_its_turn() {
        let mut shares = Shares::default();
        for _ in 0..10 {
            shares.served(0, 1, 100);
        }
        assert!(
            shares.start(0, 2) < shares.start(0, 1),
            "an idle tenant goes first"
        );
        shares.served(0, 2, 100);
        shares.served(0, 1, 100);
        assert!(shares.start(0, 2) <= shares.start(0, 1));
        assert_eq!(shares.start(1, 1), 0, "scopes are apart");
    }

    #[test]
    fn tenants_the_virtual_time_has_passed_are_forgotten() {
        let mut shares = Shares::default();
        for tenant in 0..200 {
            shares.served(0, tenant, 1);
        }
        assert!(shares.0[&0].finish.len() <= 4 * REMEMBERED);
        // Many served once, then one served a request fifty times larger, then many more:
        // it is still remembered ahead of a tenant never served.
        for tenant in 0..1000 {
            shares.served(0, 10_000 + tenant, 1);
        }
        shares.served(0, 7_000, 50);
        for tenant in 0..1000 {
            shares.served(0, 20_000 + tenant, 1);
        }
        assert!(shares.0[&0].finish.len() <= 4 * REMEMBERED);
        assert!(shares.start(0, 7_000) > shares.start(0, 99_999));
    }
}

//! Local conservative pacing, while the shared store cannot be reached: every quota at its
//! limit divided by the number of hosts, every concurrency limit likewise (at least one
//! slot), so that hosts that all fall back stay within the limit together.
//!
//! A quota starts here with an empty burst, as in a store that lost its state: the moment
//! the store went away, the provider may have counted a full window already. It starts at a
//! random phase of its pace, so that hosts that fell back at the same moment do not send
//! together.

use std::collections::HashMap;
use std::time::Duration;

use super::ScopeFigures;
use crate::admission::bucket::Nanos;

/// The local quotas and slots used while the store is away.
#[derive(Debug, Default)]
pub(super) struct Fallback {
    /// Theoretical arrival time per quota key, on the gate's clock.
    tats: HashMap<String, Nanos>,
    /// Slots this host holds per lease key, shared or local: calls still running from
    /// before the store went away count.
    slots: HashMap<String, u32>,
}

/// What the fallback decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Local {
    Admitted,
    /// The scope at this index refuses for this long.
    Wait(usize, Duration),
}

impl Fallback {
    /// Checks and charges one call at `now`; `keys` names each quota (scope by scope, in the
    /// figures' order) and `leases` each scope's lease set.
    pub(super) fn admit(
        &mut self,
        now: Nanos,
        hosts: u32,
        call: &[ScopeFigures],
        keys: &[Vec<String>],
        leases: &[String],
    ) -> Local {
        let hosts = u64::from(hosts.max(1));
        let mut worst: Option<(usize, Nanos)> = None;
        for (s, f) in call.iter().enumerate() {
            for (q, key) in f.quotas.iter().zip(&keys[s]) {
                let (interval, tolerance) = scaled(q.interval, q.tolerance, hosts);
                // Hosts fall back together, when the store goes: a random phase keeps their
                // local paces from lining up into bursts of one call per host.
                let tat = *self.tats.entry(key.clone()).or_insert_with(|| {
                    now.saturating_add(tolerance)
                        .saturating_add(fastrand::u64(..interval.max(1)))
                });
                let at = tat
                    .max(now)
                    .saturating_add(q.cost.saturating_mul(interval))
                    .saturating_sub(tolerance);
                if at > now && worst.is_none_or(|(_, w)| at > w) {
                    worst = Some((s, at));
                }
            }
            if let Some(limit) = f.concurrency {
                let mine = u64::from(limit) / hosts;
                let taken = self.slots.get(&leases[s]).copied().unwrap_or(0);
                if u64::from(taken) >= mine.max(1) && worst.is_none() {
                    // Polled: a slot frees when one of this host's calls ends.
                    worst = Some((s, now.saturating_add(POLL)));
                }
            }
        }
        if let Some((s, at)) = worst {
            return Local::Wait(s, Duration::from_nanos(at - now));
        }
        for (s, f) in call.iter().enumerate() {
            for (q, key) in f.quotas.iter().zip(&keys[s]) {
                let (interval, _) = scaled(q.interval, q.tolerance, hosts);
                let tat = self.tats.entry(key.clone()).or_insert(now);
                *tat = (*tat)
                    .max(now)
                    .saturating_add(q.cost.saturating_mul(interval));
            }
        }
        self.hold_slots(call, leases);
        Local::Admitted
    }

    /// Counts the slots of a call admitted by the store, so that a fallback counts them.
    pub(super) fn hold_slots(&mut self, call: &[ScopeFigures], leases: &[String]) {
        for (f, key) in call.iter().zip(leases) {
            if f.concurrency.is_some() {
                *self.slots.entry(key.clone()).or_default() += 1;
            }
        }
    }

    /// A call ended: its slots are free.
    pub(super) fn release(&mut self, call: &[ScopeFigures], leases: &[String]) {
        for (f, key) in call.iter().zip(leases) {
            if f.concurrency.is_some()
                && let Some(n) = self.slots.get_mut(key)
            {
                *n = n.saturating_sub(1);
            }
        }
    }

    /// Forgets the local quotas once the store answers again: the next fallback starts
    /// with empty bursts again.
    pub(super) fn forget_quotas(&mut self) {
        self.tats.clear();
    }
}

/// How often a call waiting for one of this host's slots looks again.
const POLL: Nanos = 20_000_000;

/// A quota's pace and burst with its limit divided by `hosts`: `hosts` times the interval,
/// and a burst of the host's share of the burst (at least one unit).
fn scaled(interval: Nanos, tolerance: Nanos, hosts: u64) -> (Nanos, Nanos) {
    let capacity = tolerance.checked_div(interval).unwrap_or(1);
    let interval = interval.saturating_mul(hosts);
    let capacity = (capacity / hosts).max(1);
    (interval, capacity.saturating_mul(interval))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::scope::ScopeKey;
    use crate::admission::shared::QuotaFigures;
    use crate::admission::usage::Dimension;

    const SEC: Nanos = 1_000_000_000;

    fn call(limit_per_min: u64, concurrency: Option<u32>) -> Vec<ScopeFigures> {
        let interval = 60 * SEC / limit_per_min;
        vec![ScopeFigures {
            scope: ScopeKey::Tenant("t".into()),
            quotas: vec![QuotaFigures {
                dimension: Dimension::Requests,
                window: Duration::from_secs(60),
                interval,
                tolerance: 10 * interval,
                limit: limit_per_min,
                cost: 1,
                available: None,
                learned: false,
            }],
            concurrency,
            held_for: None,
        }]
    }

    #[test]
    fn four_hosts_each_admit_a_quarter_of_the_pace() {
        let mut f = Fallback::default();
        let call = call(600, None);
        let keys = vec![vec!["q".to_owned()]];
        let leases = vec!["c".to_owned()];
        let mut admitted = 0;
        let mut now = 0;
        // One minute, asking every millisecond.
        while now < 60 * SEC {
            if f.admit(now, 4, &call, &keys, &leases) == Local::Admitted {
                admitted += 1;
            }
            now += 1_000_000;
        }
        // 600 a minute over 4 hosts: 150 a minute for this one, starting with no burst.
        assert!((148..=150).contains(&admitted), "{admitted}");
    }

    #[test]
    fn slots_are_divided_and_count_calls_from_before_the_fallback() {
        let mut f = Fallback::default();
        let call = call(1_000_000, Some(8));
        let keys = vec![vec!["q".to_owned()]];
        let leases = vec!["c".to_owned()];
        f.hold_slots(&call, &leases); // admitted by the store before it went away
        // The quota starts with an empty burst: the first call waits for its pace.
        assert!(matches!(
            f.admit(0, 4, &call, &keys, &leases),
            Local::Wait(0, _)
        ));
        assert_eq!(f.admit(SEC, 4, &call, &keys, &leases), Local::Admitted);
        assert!(matches!(
            f.admit(2 * SEC, 4, &call, &keys, &leases),
            Local::Wait(0, _)
        ));
        f.release(&call, &leases);
        assert_eq!(f.admit(3 * SEC, 4, &call, &keys, &leases), Local::Admitted);
    }
}

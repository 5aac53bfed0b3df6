//! Local conservative pacing, while the shared store cannot be reached: every quota at its
//! limit divided by the number of hosts (rounded down), paced and with a burst as a host
//! alone with that limit would be, and every concurrency limit likewise, so that hosts that
//! all fall back stay within the limit together. A limit smaller than the number of hosts
//! gives each host less than one unit: its calls wait for the store.
//!
//! A quota starts here with an empty burst, as in a store that lost its state: the moment
//! the store went away, the provider may have counted a full window already. It starts at a
//! random phase of its pace, so that hosts that fell back at the same moment do not send
//! together. A call's charge is corrected to its actual usage here too, as the store's is
//! ([`Fallback::settle`]): a generation charged at its `max_tokens` that wrote a tenth of
//! it gives the rest back, so pacing locally does not fall to a fraction of its share.

use std::collections::HashMap;
use std::time::Duration;

use super::{QuotaFigures, ScopeFigures};
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Local {
    /// Admitted: each quota's schedule end (in the figures' order; 0 for a quota this host
    /// has no share of), for the correction.
    Admitted(Vec<Nanos>),
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
                let Some((interval, tolerance)) = share_of(q, hosts) else {
                    worst = Some((s, Nanos::MAX));
                    continue;
                };
                // Hosts fall back together, when the store goes: a random phase keeps their
                // local paces from lining up into bursts of one call per host.
                let tat = *self.tats.entry(key.clone()).or_insert_with(|| {
                    now.saturating_add(tolerance)
                        .saturating_add(fastrand::u64(..interval.max(1)))
                });
                // As `Rate::ready_at`: from `tat`, so a cost above the burst fits once the
                // quota has been idle long enough.
                let at = tat
                    .saturating_add(q.cost.saturating_mul(interval))
                    .saturating_sub(tolerance);
                if at > now && worst.is_none_or(|(_, w)| at > w) {
                    worst = Some((s, at));
                }
            }
            if let Some(limit) = f.concurrency {
                let mine = u64::from(limit) / hosts;
                let taken = self.slots.get(&leases[s]).copied().unwrap_or(0);
                if u64::from(taken) >= mine && worst.is_none() {
                    // Polled: a slot frees when one of this host's calls ends.
                    worst = Some((s, now.saturating_add(POLL)));
                }
            }
        }
        if let Some((s, at)) = worst {
            // A share of less than one unit: look again for the store now and then.
            let at = if at == Nanos::MAX {
                now.saturating_add(POLL * 5)
            } else {
                at
            };
            return Local::Wait(s, Duration::from_nanos(at - now));
        }
        let mut ends = Vec::new();
        for (s, f) in call.iter().enumerate() {
            for (q, key) in f.quotas.iter().zip(&keys[s]) {
                let Some((interval, _)) = share_of(q, hosts) else {
                    ends.push(0);
                    continue;
                };
                let tat = self.tats.entry(key.clone()).or_insert(now);
                *tat = (*tat)
                    .max(now)
                    .saturating_add(q.cost.saturating_mul(interval));
                ends.push(*tat);
            }
        }
        self.hold_slots(call, leases);
        Local::Admitted(ends)
    }

    /// Corrects the charge of a call admitted here to what it used (`used`, per quota in
    /// the figures' order), as the store's `SETTLE` does: use above the charge is charged
    /// now; use below it is given back from the call's own place in the schedule (`ends`,
    /// from [`Local::Admitted`]), never to before `now` and never more than that place
    /// still ahead, so no window sees more than this host's share. A quota forgotten since
    /// (the store answered again) is left alone.
    pub(super) fn settle(
        &mut self,
        now: Nanos,
        hosts: u32,
        call: &[ScopeFigures],
        keys: &[Vec<String>],
        ends: &[Nanos],
        used: &[u64],
    ) {
        let hosts = u64::from(hosts.max(1));
        let quotas = call
            .iter()
            .zip(keys)
            .flat_map(|(f, keys)| f.quotas.iter().zip(keys));
        for (((q, key), end), used) in quotas.zip(ends).zip(used) {
            let (Some((interval, _)), Some(tat)) = (share_of(q, hosts), self.tats.get_mut(key))
            else {
                continue;
            };
            if *used > q.cost {
                let more = (used - q.cost).saturating_mul(interval);
                *tat = (*tat).max(now).saturating_add(more);
            } else {
                let back = (q.cost - used)
                    .saturating_mul(interval)
                    .min(end.saturating_sub(now))
                    .min(tat.saturating_sub(now));
                *tat -= back;
            }
        }
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

/// A quota's pace and burst for one of `hosts` hosts: its limit divided by `hosts`
/// (rounded down), paced at the quota's own share of its limit, the rest as burst, so that
/// no window sees more than that share from this host. `None` when the share is below one
/// unit.
fn share_of(q: &QuotaFigures, hosts: u64) -> Option<(Nanos, Nanos)> {
    let window = u64::try_from(q.window.as_nanos()).unwrap_or(u64::MAX);
    let share = q.limit / hosts;
    if share == 0 || q.interval == 0 {
        return None;
    }
    let paced = (window / q.interval / hosts).clamp(1, share);
    let interval = window.div_ceil(paced);
    let burst = share - paced + 1;
    Some((interval, burst.saturating_mul(interval)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::scope::ScopeKey;
    use crate::admission::usage::Dimension;

    const SEC: Nanos = 1_000_000_000;

    /// A call of `cost` to one per-minute quota of `limit`, paced at 90% as configured.
    fn call_of(limit: u64, cost: u64, concurrency: Option<u32>) -> Vec<ScopeFigures> {
        let paced = limit * 9 / 10;
        let interval = (60 * SEC).div_ceil(paced);
        vec![ScopeFigures {
            scope: ScopeKey::Tenant("t".into()),
            quotas: vec![QuotaFigures {
                dimension: Dimension::Requests,
                window: Duration::from_secs(60),
                interval,
                tolerance: (limit - paced + 1) * interval,
                limit,
                cost,
                available: None,
                learned: false,
            }],
            concurrency,
            held_for: None,
        }]
    }

    fn call(limit: u64, concurrency: Option<u32>) -> Vec<ScopeFigures> {
        call_of(limit, 1, concurrency)
    }

    fn keys() -> (Vec<Vec<String>>, Vec<String>) {
        (vec![vec!["q".to_owned()]], vec!["c".to_owned()])
    }

    #[test]
    fn four_hosts_each_admit_a_quarter_of_the_pace() {
        let mut f = Fallback::default();
        let call = call(600, None);
        let (keys, leases) = keys();
        let mut admitted = 0;
        let mut now = 0;
        // One minute, asking every millisecond: 540 a minute paced (an interval of
        // 111.1 ms, rounded up), 134 for this host (an interval of 447.8 ms). The first
        // admission comes one interval and a random phase (under one interval) after the
        // start, so the minute holds 133, or 132 when the phase is near a whole interval.
        while now < 60 * SEC {
            if matches!(f.admit(now, 4, &call, &keys, &leases), Local::Admitted(_)) {
                admitted += 1;
            }
            now += 1_000_000;
        }
        assert!((132..=133).contains(&admitted), "{admitted}");
    }

    #[test]
    fn four_hosts_together_never_see_more_than_the_limit_in_a_window() {
        let call = call(600, None);
        let (keys, leases) = keys();
        let mut times = Vec::new();
        for _ in 0..4 {
            let mut f = Fallback::default();
            // Busy for a minute, idle long enough to save a full burst, busy again.
            for now in (0..60_000).chain(130_000..190_000).map(|ms| ms * 1_000_000) {
                if matches!(f.admit(now, 4, &call, &keys, &leases), Local::Admitted(_)) {
                    times.push(now);
                }
            }
        }
        times.sort_unstable();
        let most = (0..times.len())
            .map(|i| {
                times[i..]
                    .iter()
                    .take_while(|t| **t - times[i] < 60 * SEC)
                    .count()
            })
            .max()
            .unwrap_or(0);
        assert!(most <= 600, "{most} in one minute");
        assert!(most >= 590, "{most}: the hosts' bursts were not used");
    }

    #[test]
    fn a_cost_above_the_burst_fits_once_the_quota_was_idle_long_enough() {
        let mut f = Fallback::default();
        // 60 000 a minute: 15 000 for one of 4 hosts, paced at 13 500, a burst of 1 501.
        let call = call_of(60_000, 4_000, None);
        let (keys, leases) = keys();
        assert!(matches!(
            f.admit(0, 4, &call, &keys, &leases),
            Local::Wait(0, _)
        ));
        let mut now = 0;
        while !matches!(f.admit(now, 4, &call, &keys, &leases), Local::Admitted(_)) {
            now += SEC / 10;
            assert!(now < 60 * SEC, "never admitted");
        }
        // From an empty burst, 4 000 units at 13 500 a minute: about 17.8 s, then it fits
        // although it is more than the burst.
        assert!((17 * SEC..=19 * SEC).contains(&now), "{now}");
    }

    #[test]
    fn a_charge_corrected_to_its_usage_gives_the_rest_back_and_no_more() {
        // 60 000 a minute: 15 000 for one of 4 hosts, paced at 13 500 (one unit every
        // 4.44 ms), a burst of 1 501. Calls of 4 000 that used 400.
        let call = call_of(60_000, 4_000, None);
        let (keys, leases) = keys();
        let next_after = |settle: bool| {
            let mut f = Fallback::default();
            let mut now = 0;
            let first = loop {
                if let Local::Admitted(ends) = f.admit(now, 4, &call, &keys, &leases) {
                    break ends;
                }
                now += SEC / 100;
            };
            if settle {
                f.settle(now, 4, &call, &keys, &first, &[400]);
            }
            let admitted = now;
            while !matches!(f.admit(now, 4, &call, &keys, &leases), Local::Admitted(_)) {
                now += SEC / 100;
            }
            now - admitted
        };
        // The next call waits for this one's charge and its own excess over the burst
        // (2 499 units): charged in full, 6 499 units (28.9 s); corrected to the 400 used,
        // 2 899 units (12.9 s).
        let (kept, corrected) = (next_after(false), next_after(true));
        assert!((28 * SEC..=30 * SEC).contains(&kept), "{kept}");
        assert!((12 * SEC..=14 * SEC).contains(&corrected), "{corrected}");
        // Use above the charge is charged now.
        let mut f = Fallback::default();
        let small = call_of(60_000, 100, None);
        let mut now = 0;
        let ends = loop {
            if let Local::Admitted(ends) = f.admit(now, 4, &small, &keys, &leases) {
                break ends;
            }
            now += SEC / 100;
        };
        let before = f.tats["q"];
        f.settle(now, 4, &small, &keys, &ends, &[1_100]);
        let (interval, _) = share_of(&small[0].quotas[0], 4).expect("a share");
        assert_eq!(f.tats["q"] - before, 1_000 * interval);
    }

    #[test]
    fn a_limit_smaller_than_the_hosts_gives_no_host_a_share() {
        let mut f = Fallback::default();
        let (keys, leases) = keys();
        let tiny = call(3, None);
        assert!(matches!(
            f.admit(60 * SEC, 4, &tiny, &keys, &leases),
            Local::Wait(0, _)
        ));
        let slots = call(1_000_000, Some(2));
        for now in [0, 60 * SEC] {
            assert!(matches!(
                f.admit(now, 4, &slots, &keys, &leases),
                Local::Wait(0, _)
            ));
        }
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
        assert!(matches!(
            f.admit(SEC, 4, &call, &keys, &leases),
            Local::Admitted(_)
        ));
        assert!(matches!(
            f.admit(2 * SEC, 4, &call, &keys, &leases),
            Local::Wait(0, _)
        ));
        f.release(&call, &leases);
        assert!(matches!(
            f.admit(3 * SEC, 4, &call, &keys, &leases),
            Local::Admitted(_)
        ));
    }
}

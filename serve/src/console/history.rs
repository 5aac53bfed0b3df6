//! What the console plots: each scope's utilization and each tenant's waits, sampled once a
//! second into a ring the sidecar keeps ([`KEPT`] samples, five minutes).
//!
//! The sidecar samples, not the page: a page opened now shows the last minutes at once, and
//! every open page shows the same figures. A sample is small (a number per scope, two per
//! tenant) and the ring fixed, so an idle console costs nothing that grows.
//!
//! - utilization: of each scope's quotas, the largest share of the bucket spent
//!   (`1 - available/burst`: an idle quota admits its burst at once, a busy or held one
//!   nothing), from the admission snapshot;
//! - waits: p50 and p99 of the admission waits of each tenant's calls admitted in the last
//!   [`WAIT_WINDOW_MS`] ([`sluice::execute::Executor::each_recent_wait`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use sluice::Sluice;
use sluice::admission::snapshot::Snapshot;

/// How many samples are kept: five minutes at one a second.
pub(crate) const KEPT: usize = 300;
/// How often a sample is taken.
pub(crate) const EVERY: Duration = Duration::from_secs(1);
/// The waits a sample's percentiles are over: those admitted this long before it.
pub(crate) const WAIT_WINDOW_MS: i64 = 10_000;

/// A tenant's waits in one sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Waits {
    /// Calls admitted in the window.
    pub calls: usize,
    /// The median wait, ms.
    pub p50_ms: u64,
    /// The 99th percentile wait, ms.
    pub p99_ms: u64,
}

/// One sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Sample {
    /// When (wall ms).
    pub at_ms: i64,
    /// Each scope's utilization, 0 to 1, by the scope's key.
    pub utilization: BTreeMap<String, f64>,
    /// Each tenant's waits, by tenant.
    pub waits: BTreeMap<String, Waits>,
}

/// The last [`KEPT`] samples, oldest first.
#[derive(Debug, Default)]
pub(crate) struct History(Mutex<VecDeque<Sample>>);

impl History {
    fn ring(&self) -> std::sync::MutexGuard<'_, VecDeque<Sample>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `sample`, dropping the oldest past [`KEPT`].
    pub(crate) fn push(&self, sample: Sample) {
        let mut ring = self.ring();
        if ring.len() >= KEPT {
            ring.pop_front();
        }
        ring.push_back(sample);
    }

    /// The samples, oldest first.
    pub(crate) fn samples(&self) -> Vec<Sample> {
        self.ring().iter().cloned().collect()
    }
}

/// Each tenant's waits in the window of one sample, gathered into buffers kept from one
/// sample to the next: once the tenants are known, a sample copies and allocates nothing of
/// the thousands of waits it reads.
#[derive(Debug, Default)]
pub(crate) struct Window(BTreeMap<String, Vec<u64>>);

impl Window {
    /// Notes one wait of `tenant`'s.
    pub(crate) fn note(&mut self, tenant: &str, waited_ms: u64) {
        match self.0.get_mut(tenant) {
            Some(ms) => ms.push(waited_ms),
            None => {
                self.0.insert(tenant.to_owned(), vec![waited_ms]);
            }
        }
    }

    /// Each tenant's percentiles over the waits noted since the last call; the buffers are
    /// emptied for the next window, and a tenant with no wait noted is forgotten.
    fn take(&mut self) -> BTreeMap<String, Waits> {
        self.0.retain(|_, ms| !ms.is_empty());
        self.0
            .iter_mut()
            .map(|(tenant, ms)| {
                ms.sort_unstable();
                let at =
                    |p: f64| ms[((ms.len() as f64 * p).ceil() as usize).clamp(1, ms.len()) - 1];
                let w = Waits {
                    calls: ms.len(),
                    p50_ms: at(0.50),
                    p99_ms: at(0.99),
                };
                ms.clear();
                (tenant.clone(), w)
            })
            .collect()
    }
}

/// A sample of `snapshot` and of the waits noted in `window` at `now_ms`.
pub(crate) fn sample(now_ms: i64, snapshot: &Snapshot, window: &mut Window) -> Sample {
    let utilization = snapshot
        .scopes
        .iter()
        .filter_map(|s| {
            let spent = s
                .quotas
                .iter()
                .map(|q| (q.available, q.burst.max(1)))
                .map(|(available, burst)| 1.0 - (available.min(burst) as f64 / burst as f64))
                .fold(None, |m: Option<f64>, u| Some(m.map_or(u, |m| m.max(u))))?;
            Some((s.key.clone(), spent))
        })
        .collect();
    Sample {
        at_ms: now_ms,
        utilization,
        waits: window.take(),
    }
}

/// Samples `sluice` into `history` every [`EVERY`], until the task is aborted.
pub(crate) async fn run(sluice: Arc<Sluice>, history: Arc<History>) {
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut window = Window::default();
    loop {
        tick.tick().await;
        let now = sluice.clock().wall_ms();
        let snapshot = sluice.admission().snapshot();
        sluice
            .executor()
            .each_recent_wait(now - WAIT_WINDOW_MS, |tenant, ms| window.note(tenant, ms));
        history.push(sample(now, &snapshot, &mut window));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Snapshot {
        Snapshot {
            scopes: Vec::new(),
            queue: Vec::new(),
            queued: 0,
            in_flight: 0,
            pools: Vec::new(),
        }
    }

    #[test]
    fn waits_are_percentiles_per_tenant_of_the_waits_noted_since_the_last_sample() {
        let mut window = Window::default();
        for ms in 1..=100 {
            window.note("acme", ms);
        }
        window.note("beta", 7);
        let s = sample(55_000, &empty(), &mut window);
        assert_eq!(
            s.waits["acme"],
            Waits {
                calls: 100,
                p50_ms: 50,
                p99_ms: 99
            }
        );
        assert_eq!((s.waits["beta"].calls, s.waits["beta"].p99_ms), (1, 7));
        // The next sample counts only what was noted after this one, and forgets a tenant
        // that did not wait since, buffer and all.
        window.note("acme", 3);
        let s = sample(56_000, &empty(), &mut window);
        assert_eq!(s.waits["acme"].calls, 1);
        assert!(!s.waits.contains_key("beta"), "{:?}", s.waits);
        assert!(!window.0.contains_key("beta"), "{:?}", window.0);
        sample(57_000, &empty(), &mut window);
        assert!(window.0.is_empty(), "{:?}", window.0);
    }

    #[test]
    fn the_ring_keeps_the_last_samples() {
        let h = History::default();
        for i in 0..(KEPT as i64 + 5) {
            h.push(sample(i, &empty(), &mut Window::default()));
        }
        let samples = h.samples();
        assert_eq!((samples.len(), samples[0].at_ms), (KEPT, 5));
    }
}

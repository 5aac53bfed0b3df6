//! A host's slices of the shared quotas: what it took from the store in one call and admits
//! its own calls against, without a round trip each.
//!
//! A slice is a number of a quota's units the store charged to its schedule when it granted
//! them (so the group's total is still admitted once, by the store), usable until the
//! slice ends: `slice` after the host asked for it. The store grants from the quota's
//! burst less `slice` of its pace, so a unit sent at the last moment of its slice still
//! fits the window the store counted it in.
//!
//! What a slice's calls used above their estimates is owed to the store, and what they
//! used below is given back: into the slice while it lasts, else to the store from the
//! slice's place in its schedule, as a call's correction is. What a slice leaves unused
//! when it ends is given back the same way. Both travel with the next slice asked for the
//! quota, or in the host's next settling round ([`Slices::due`]), never one call at a time.
//!
//! A slice's size follows this host's demand: its recent rate of use of the quota (a
//! moving average over spans of a slice's life) times the slice's life, at least the
//! call's cost; never more than the quota's burst divided by the hosts sharing it, so no
//! host can take the others' part of a burst. Demand is what comes to the gate, a call
//! sent back to wait counting again when it comes back, not what the store gave. Slices
//! are taken only where the host's demand is at least two calls a slice's life
//! ([`Slices::worth`]); below that a call asks the store itself. At the pace's edge, a slice
//! the store queued and the host spent before its end shows more demand than the host's
//! rate of use can: its calls waited for their turn in the store, and sent fewer for that.
//! So the next slice asked for is at least twice the one spent, up to the turn below, and a
//! host kept waiting does not see its slices shrink because it waited. (Away from the edge
//! a slice is not queued, its size is the rate as seen: a host whose calls come in bursts
//! would leave most of a doubled slice unused, and what a slice leaves is given back only
//! from its place in the schedule, none of it once that place is past.) At the pace's edge, where
//! the store queues the hosts' asks, the least a slice must hold is the host's demand up
//! to the same part of its share of the burst for every host ([`LEAST_PART`]): busy hosts
//! take equal turns, and a host given more does not for that ask for more.
//!
//! This table is pure bookkeeping under the gate's lock: the gate asks the store.

use std::collections::HashMap;

use super::SliceAsk;
use crate::admission::bucket::Nanos;
use crate::admission::usage::{Dimension, Usage};

/// One quota a call charges, as a slice sees it.
#[derive(Debug, Clone)]
pub(super) struct Need {
    /// The quota's key in the store.
    pub(super) key: String,
    /// What it counts.
    pub(super) dimension: Dimension,
    /// What the call charges it.
    pub(super) cost: u64,
    /// Nanoseconds per unit.
    pub(super) interval: Nanos,
    /// The burst's worth of time.
    pub(super) tolerance: Nanos,
    /// Its limit was learned from a response.
    pub(super) learned: bool,
    /// The most one slice of it may hold.
    pub(super) most: u64,
}

impl Need {
    /// The quota of `interval` and `tolerance` can be sliced for `hosts` hosts with slices
    /// of `slice` ns: the most one slice may hold, when that is at least [`LEAST_PART`]
    /// calls of `cost` (a smaller part would make the few calls it holds come in bursts,
    /// and a host's turn at the pace's edge worth less than one call).
    pub(super) fn most(
        interval: Nanos,
        tolerance: Nanos,
        slice: Nanos,
        hosts: u32,
        cost: u64,
    ) -> Option<u64> {
        let room = tolerance.checked_sub(slice)?;
        let most = room / interval.max(1) / u64::from(hosts.max(1));
        (most >= cost.max(1).saturating_mul(LEAST_PART)).then_some(most)
    }
}

/// Units a call took from a slice: to correct when it ends.
#[derive(Debug, Clone)]
pub(super) struct Taken {
    key: String,
    dimension: Dimension,
    cost: u64,
    generation: u64,
    /// Its slice's schedule end in the store: what it gives back, it gives from there.
    end_us: u64,
}

/// What [`Slices::take`] found.
#[derive(Debug)]
pub(super) enum Take {
    /// Taken from the slices; the call may go.
    Taken(Vec<Taken>),
    /// Another call of this host is asking the store for one of these slices: wait for it.
    Busy,
    /// A slice holds enough but starts only in this long (the store queued this host).
    Later(Nanos),
    /// Ask the store: these asks (marked as being asked for until [`Slices::answered`]).
    Ask(Vec<SliceAsk>),
}

#[derive(Debug, Default)]
struct Account {
    /// Units left in the slice.
    left: u64,
    /// When it starts and ends, on the gate's clock.
    starts_at: Nanos,
    ends_at: Nanos,
    /// Its schedule end in the store (µs on the store's clock).
    end_us: u64,
    /// Which slice this is, so that a late correction finds whether its slice is still on.
    generation: u64,
    /// What the store granted it, and whether the store queued it (it started after its
    /// answer: the quota is at the pace's edge).
    granted: u64,
    queued: bool,
    /// Units its calls came to the gate for since `since`: this host's demand.
    taken: u64,
    since: Nanos,
    /// The demand, units a second, averaged over spans of a slice's life at least.
    rate: f64,
    /// Used above estimates, not yet charged in the store.
    debt: u64,
    /// Used below estimates after the slice they came from ended: (that slice's schedule
    /// end, units), to give back.
    credits: Vec<(u64, u64)>,
    /// A call is asking the store for this quota's next slice.
    asking: bool,
    /// The quota's figures, as last seen, for settling it (a limit learned is not said
    /// again when settling).
    interval: Nanos,
    tolerance: Nanos,
    /// When a call last took from it or asked for it.
    touched: Nanos,
}

/// The slices of one host.
#[derive(Debug, Default)]
pub(super) struct Slices {
    accounts: HashMap<String, Account>,
}

/// A slice asked for at the pace's edge holds the host's demand, up to this part of its
/// share of the burst.
const LEAST_PART: u64 = 8;

/// How long an account with nothing left to settle is kept after its last use: its size
/// is this host's demand, worth keeping across short pauses.
const IDLE_FORGET: Nanos = 60_000_000_000;

impl Slices {
    /// Takes `needs` from the slices, all or none. When one is short, asks for it (and
    /// for any other of them that is short) as of `now`.
    pub(super) fn take(&mut self, now: Nanos, slice: Nanos, needs: &[Need]) -> Take {
        if let Some(taken) = self.take_ready(now, needs) {
            return Take::Taken(taken);
        }
        let mut short = Vec::new();
        let mut later = 0;
        for (i, n) in needs.iter().enumerate() {
            match self.accounts.get(&n.key) {
                Some(a) if a.asking => return Take::Busy,
                Some(a) if a.ends_at > now && a.left >= n.cost => {
                    later = later.max(a.starts_at.saturating_sub(now));
                }
                _ => short.push(i),
            }
        }
        if short.is_empty() {
            return Take::Later(later);
        }
        let asks = short
            .into_iter()
            .map(|i| {
                let n = &needs[i];
                let a = self.accounts.entry(n.key.clone()).or_default();
                a.asking = true;
                a.touched = now;
                a.interval = n.interval;
                a.tolerance = n.tolerance;
                // Spent before its end, at the pace's edge: this host's calls waited for
                // its turn, and its rate shows less than it would send.
                let kept_waiting = a.ends_at > now && a.granted > 0 && a.queued;
                let want = if kept_waiting {
                    let turn = n.most / LEAST_PART;
                    a.demand(slice).max(a.granted.saturating_mul(2).min(turn))
                } else {
                    a.demand(slice)
                };
                let want = want.clamp(n.cost, n.most.max(n.cost));
                // What the old slice left goes back from its place (the store gives back
                // none of it once that place is past); what was owed is paid.
                let change = i128::from(a.debt) - i128::from(a.left);
                let ends = a.end_us;
                a.left = 0;
                a.debt = 0;
                SliceAsk {
                    key: n.key.clone(),
                    interval: n.interval,
                    tolerance: n.tolerance,
                    learned: n.learned,
                    // At the pace's edge, a host that asked for one call's cost would get
                    // just that, and ask again at the next call: it waits instead for its
                    // demand, up to the same part of a host's share of the burst for every
                    // host, so that busy hosts queued in the store take equal turns.
                    need: want.min(n.most / LEAST_PART).max(n.cost),
                    want,
                    change,
                    ends,
                }
            })
            .collect();
        Take::Ask(asks)
    }

    /// Whether this host's demand makes slices of `needs` worth taking: at least two calls
    /// like this one over a slice's life, on every quota. Below that a slice would hold
    /// units no other call of this host uses while other hosts wait for them, so the call
    /// asks the store itself ([`Self::note`] counts it).
    pub(super) fn worth(&self, slice: Nanos, needs: &[Need]) -> bool {
        needs.iter().all(|n| {
            self.accounts
                .get(&n.key)
                .is_some_and(|a| a.demand(slice) >= n.cost.saturating_mul(2))
        })
    }

    /// Counts `needs` into this host's demand: every time a call comes to the gate, so a
    /// call the store sends back counts again when it comes back. A host that keeps
    /// calls waiting at the pace's edge thus asks for its whole turn
    /// ([`LEAST_PART`]), whatever it was given before.
    pub(super) fn note(&mut self, now: Nanos, slice: Nanos, needs: &[Need]) {
        for n in needs {
            let a = self.accounts.entry(n.key.clone()).or_default();
            a.touched = now;
            a.note(now, n.cost, slice);
        }
    }

    /// Takes `needs` from the slices when every one of them holds enough, else nothing.
    pub(super) fn take_ready(&mut self, now: Nanos, needs: &[Need]) -> Option<Vec<Taken>> {
        let ready = needs.iter().all(|n| {
            self.accounts.get(&n.key).is_some_and(|a| {
                !a.asking && a.starts_at <= now && a.ends_at > now && a.left >= n.cost
            })
        });
        if !ready {
            return None;
        }
        Some(
            needs
                .iter()
                .map(|n| {
                    let a = self.accounts.get_mut(&n.key).expect("checked above");
                    a.left -= n.cost;
                    a.touched = now;
                    Taken {
                        key: n.key.clone(),
                        dimension: n.dimension,
                        cost: n.cost,
                        generation: a.generation,
                        end_us: a.end_us,
                    }
                })
                .collect(),
        )
    }

    /// The store answered `asks` (made at `asked` and answered at `now`, on the gate's
    /// clock, for slices of `slice` ns): with the grants and how long after its answer
    /// they start, or with `None` when it granted nothing. A store that did not answer
    /// (`failed`) settled nothing, so what was owed is owed again.
    ///
    /// A slice starts no sooner than the answer plus the wait, and ends no later than the
    /// ask plus the wait plus its life: within the window the store granted it for,
    /// whatever the round trip took.
    pub(super) fn answered(
        &mut self,
        (asked, now): (Nanos, Nanos),
        slice: Nanos,
        asks: &[SliceAsk],
        grants: Option<(&[(u64, u64)], Nanos)>,
        failed: bool,
    ) {
        for (i, ask) in asks.iter().enumerate() {
            let Some(a) = self.accounts.get_mut(&ask.key) else {
                continue;
            };
            a.asking = false;
            if failed && ask.change > 0 {
                a.debt = a
                    .debt
                    .saturating_add(u64::try_from(ask.change).unwrap_or(0));
            }
            if let Some((grants, wait)) = grants
                && let Some(&(grant, end_us)) = grants.get(i)
                && grant > 0
            {
                a.left = grant;
                a.granted = grant;
                a.queued = wait > 0;
                a.end_us = end_us;
                a.starts_at = now.saturating_add(wait);
                a.ends_at = asked.saturating_add(wait).saturating_add(slice);
                a.generation += 1;
            }
        }
    }

    /// Corrects what `taken` charged to `actual` (when known): above the estimate is owed;
    /// below it is given back, into the slice while it lasts, else to the store.
    pub(super) fn settle(&mut self, now: Nanos, taken: &[Taken], actual: Option<&Usage>) {
        let Some(actual) = actual else {
            return;
        };
        for t in taken {
            let Some(a) = self.accounts.get_mut(&t.key) else {
                continue;
            };
            let used = actual.get(t.dimension);
            if used > t.cost {
                a.debt = a.debt.saturating_add(used - t.cost);
            } else if used < t.cost {
                let back = t.cost - used;
                if a.generation == t.generation && a.ends_at > now {
                    a.left += back;
                } else {
                    credit(&mut a.credits, t.end_us, back);
                }
            }
        }
    }

    /// Ends now the slices whose quota key `which` picks (a scope put on hold; every one
    /// when the store stops answering, whose pace local pacing then keeps from an empty
    /// burst, with no room for units granted before): what they left is given back at the
    /// next settling round the store answers.
    pub(super) fn end(&mut self, now: Nanos, which: impl Fn(&str) -> bool) {
        for (key, a) in &mut self.accounts {
            if a.ends_at > now && which(key) {
                a.ends_at = now;
            }
        }
    }

    /// What ended slices left and what their calls owe, to settle in the store (each ask
    /// needs nothing); forgets accounts long idle with nothing to settle.
    pub(super) fn due(&mut self, now: Nanos) -> Vec<SliceAsk> {
        let mut asks = Vec::new();
        self.accounts.retain(|key, a| {
            if a.asking {
                return true;
            }
            let ended = a.ends_at <= now;
            let ask = |change: i128, ends: u64| SliceAsk {
                key: key.clone(),
                interval: a.interval,
                tolerance: a.tolerance,
                learned: false,
                need: 0,
                want: 0,
                change,
                ends,
            };
            if ended && (a.left > 0 || a.debt > 0) {
                asks.push(ask(i128::from(a.debt) - i128::from(a.left), a.end_us));
                a.left = 0;
                a.debt = 0;
            }
            for (ends, units) in a.credits.drain(..) {
                asks.push(ask(-i128::from(units), ends));
            }
            !(ended && a.debt == 0 && now.saturating_sub(a.touched) > IDLE_FORGET)
        });
        asks
    }

    /// Settling `asks` from [`Self::due`] failed: what was owed is owed again (what was
    /// to be given back is kept by the store, the safe side).
    pub(super) fn unsettled(&mut self, asks: &[SliceAsk]) {
        for ask in asks {
            if ask.change > 0
                && let Some(a) = self.accounts.get_mut(&ask.key)
            {
                a.debt = a
                    .debt
                    .saturating_add(u64::try_from(ask.change).unwrap_or(0));
            }
        }
    }
}

impl Account {
    /// Counts `cost` taken at `now` into this host's demand, measured over spans of at
    /// least a slice's life (`slice` ns) and averaged across them.
    #[allow(
        clippy::cast_precision_loss,
        reason = "a rate: units and nanoseconds far below 2^52"
    )]
    fn note(&mut self, now: Nanos, cost: u64, slice: Nanos) {
        if self.since == 0 {
            self.since = now.max(1);
        }
        self.taken = self.taken.saturating_add(cost);
        let elapsed = now.saturating_sub(self.since);
        if elapsed >= slice.max(1) {
            let rate = self.taken as f64 * 1e9 / elapsed as f64;
            self.rate = if self.rate > 0.0 {
                (self.rate + rate) / 2.0
            } else {
                rate
            };
            self.since = now.max(1);
            self.taken = 0;
        }
    }

    /// This host's demand for the quota over a slice's life of `slice` ns.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a rate: units and nanoseconds far below 2^52, the result clamped"
    )]
    fn demand(&self, slice: Nanos) -> u64 {
        (self.rate * slice as f64 / 1e9).ceil() as u64
    }
}

fn credit(credits: &mut Vec<(u64, u64)>, ends: u64, units: u64) {
    match credits.iter_mut().find(|(e, _)| *e == ends) {
        Some((_, u)) => *u += units,
        None => credits.push((ends, units)),
    }
}

#[cfg(test)]
mod tests;

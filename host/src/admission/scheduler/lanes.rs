//! The scheduler's lanes, by compact id: one per set of scopes that requests charge
//! together, created on first use, and forgotten with a scope they charge (see
//! [`super::unconfigured`]); the id of a forgotten lane is given to the next one made.
//!
//! [`Lanes`] owns where each lane is in the scheduler's loop — idle, in the run queue, or
//! waiting on one of its scopes — and the lists that say so (the run queue, each scope's
//! waiters): the scheduler tells it what happened (a request queued or removed, a turn's
//! result, a scope that may admit again) and asks it which lane runs next. Each band's queue
//! counts its own requests ([`BandQueue`]).

use std::collections::{HashMap, VecDeque};
use std::ops::Index;

use super::index;
use crate::admission::fair::{BANDS, BandQueue};
use crate::admission::usage::Usage;

/// Where a lane is in the scheduler's loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LaneState {
    /// Nothing it can do: empty, or every flow parked.
    Idle,
    /// In the run queue.
    Runnable,
    /// Registered with one of its scopes, which wakes it.
    Waiting,
}

/// The requests that charge one set of scopes.
#[derive(Debug)]
pub(super) struct Lane {
    /// The scopes every request of the lane charges (the credential's first).
    pub(super) scopes: Box<[u32]>,
    /// Its bands, the first served first: tenants of a tier granted precedence queue in a
    /// band before the others' ([`band_of`](crate::admission::fair::band_of)).
    pub(super) bands: [BandQueue; BANDS],
    state: LaneState,
    /// The scope whose waiters list holds this lane, while it waits.
    waiting_on: Option<u32>,
}

impl Lane {
    fn new(scopes: Box<[u32]>) -> Self {
        Self {
            scopes,
            bands: Default::default(),
            state: LaneState::Idle,
            waiting_on: None,
        }
    }

    /// The usage queued in bands served before `band`, or with it.
    pub(super) fn ahead(&self, band: u8) -> Usage {
        let mut sum = Usage::default();
        for q in &self.bands[..=usize::from(band)] {
            sum.add(&q.queued());
        }
        sum
    }

    /// The usage that may go before a request of `band` with a deadline: everything queued
    /// in bands served before it, and what is queued with a deadline in its own (which the
    /// nearest-deadline order may put first). The rest of its band it overtakes when its
    /// deadline needs it to, within its tenant's share.
    pub(super) fn ahead_of_deadline(&self, band: u8) -> Usage {
        let mut sum = Usage::default();
        for q in &self.bands[..usize::from(band)] {
            sum.add(&q.queued());
        }
        sum.add(&self.bands[usize::from(band)].queued_with_deadlines());
        sum
    }

    /// Whether the lane waits on scope `s`.
    fn waits_on(&self, s: u32) -> bool {
        self.state == LaneState::Waiting && self.waiting_on == Some(s)
    }
}

/// Every lane in use; see the module docs.
#[derive(Debug, Default)]
pub(super) struct Lanes {
    /// By id; `None`: forgotten, its id in `free`.
    all: Vec<Option<Lane>>,
    free: Vec<u32>,
    ids: HashMap<Box<[u32]>, u32>,
    /// The lanes with a turn to take, in order.
    run: VecDeque<u32>,
    /// By scope: the lanes waiting on it, in the order they blocked.
    waiters: HashMap<u32, Vec<u32>>,
}

impl Lanes {
    /// The id of the lane of the scopes `scopes` (the credential's first, the rest sorted),
    /// created on first use.
    pub(super) fn id(&mut self, scopes: &[u32]) -> u32 {
        if let Some(&lane) = self.ids.get(scopes) {
            return lane;
        }
        let made = Some(Lane::new(scopes.into()));
        let lane = match self.free.pop() {
            Some(lane) => {
                self.all[lane as usize] = made;
                lane
            }
            None => {
                self.all.push(made);
                index(self.all.len() - 1)
            }
        };
        self.ids.insert(scopes.into(), lane);
        lane
    }

    /// Forgets every lane that charges scope `scope`, and the scope's waiters. The scope
    /// must be at rest: nothing waits in its lanes, and none of their requests is in flight.
    pub(super) fn forget_through(&mut self, scope: u32) {
        let gone: Vec<u32> = self
            .iter()
            .filter(|(_, l)| l.scopes.contains(&scope))
            .map(|(id, _)| id)
            .collect();
        for &id in &gone {
            if let Some(lane) = self.all[id as usize].take() {
                debug_assert!(lane.bands.iter().all(|b| b.count() == 0), "{lane:?}");
                self.ids.remove(&lane.scopes);
                self.free.push(id);
            }
        }
        self.waiters.remove(&scope);
        if !gone.is_empty() {
            self.waiters.retain(|_, waiting| {
                waiting.retain(|lane| !gone.contains(lane));
                !waiting.is_empty()
            });
        }
    }

    /// Every lane in use, with its id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &Lane)> {
        self.all
            .iter()
            .enumerate()
            .filter_map(|(id, l)| Some((index(id), l.as_ref()?)))
    }

    /// Band `band` of `lane`, to queue or serve flows in.
    pub(super) fn band(&mut self, lane: u32, band: usize) -> &mut BandQueue {
        &mut self.lane_mut(lane).bands[band]
    }

    /// A request of `usage` was queued in `band` of `lane`: counted there, and the lane
    /// takes a turn (a lane waiting for one request may take another, more urgent, now).
    pub(super) fn enqueued(&mut self, lane: u32, band: u8, usage: &Usage) {
        let l = self.lane_mut(lane);
        l.bands[usize::from(band)].enqueued(usage);
        if l.state != LaneState::Runnable {
            l.state = LaneState::Runnable;
            self.run.push_back(lane);
        }
    }

    /// A waiting request of `lane` was removed: it may have been what the lane waited for,
    /// so the next one gets a turn at the next poll instead of sleeping until its time.
    pub(super) fn removed(&mut self, lane: u32) {
        let l = self.lane_mut(lane);
        if l.state == LaneState::Waiting {
            l.state = LaneState::Runnable;
            self.run.push_back(lane);
        }
    }

    /// A flow of `lane` was queued again after being set aside: an idle lane takes a turn.
    pub(super) fn unparked(&mut self, lane: u32) {
        let l = self.lane_mut(lane);
        if l.state == LaneState::Idle {
            l.state = LaneState::Runnable;
            self.run.push_back(lane);
        }
    }

    /// The next lane to take a turn, out of the run queue.
    pub(super) fn next(&mut self) -> Option<u32> {
        self.run.pop_front()
    }

    /// `lane` admitted a request in its turn: it takes another after the others.
    pub(super) fn admitted(&mut self, lane: u32) {
        self.run.push_back(lane);
    }

    /// `lane` had nothing it could do in its turn.
    pub(super) fn emptied(&mut self, lane: u32) {
        self.lane_mut(lane).state = LaneState::Idle;
    }

    /// `lane` waits on scope `s`, which wakes it ([`Lanes::take_waiters`], [`Lanes::wake`]).
    pub(super) fn blocked(&mut self, lane: u32, s: u32) {
        let l = self.lane_mut(lane);
        l.state = LaneState::Waiting;
        if l.waiting_on != Some(s) {
            l.waiting_on = Some(s);
            self.waiters.entry(s).or_default().push(lane);
        }
    }

    /// The lanes waiting on scope `s`, in the order they blocked, taken off its list.
    pub(super) fn take_waiters(&mut self, s: u32) -> Vec<u32> {
        self.waiters.remove(&s).unwrap_or_default()
    }

    /// Puts `lanes`, taken off scope `s`'s list, in the run queue in their order.
    pub(super) fn wake(&mut self, lanes: Vec<u32>, s: u32) {
        for lane in lanes {
            let l = self.lane_mut(lane);
            if l.waiting_on == Some(s) {
                l.waiting_on = None;
            }
            if l.state == LaneState::Waiting {
                l.state = LaneState::Runnable;
                self.run.push_back(lane);
            }
        }
    }

    /// Whether a lane other than `lane` waits on scope `s` ahead of it.
    pub(super) fn waits_ahead_on(&self, s: u32, lane: u32) -> bool {
        for &w in self.waiters.get(&s).map_or(&[][..], Vec::as_slice) {
            if w == lane {
                return false;
            }
            if self[w].waits_on(s) {
                return true;
            }
        }
        false
    }

    fn lane_mut(&mut self, id: u32) -> &mut Lane {
        self.all[id as usize]
            .as_mut()
            .unwrap_or_else(|| panic!("lane {id} was forgotten while in use"))
    }
}

impl Index<u32> for Lanes {
    type Output = Lane;

    fn index(&self, id: u32) -> &Lane {
        self.all[id as usize]
            .as_ref()
            .unwrap_or_else(|| panic!("lane {id} was forgotten while in use"))
    }
}

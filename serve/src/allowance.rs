//! Units held at once — connections, calls, bytes of bodies — within a bound for each owner
//! (an agent, a tenant) and one for the whole process. What an owner holds is given back when
//! its [`Hold`] is dropped, however the work ends; an owner holding nothing takes no memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Which bound a take would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Short {
    /// The owner's own: it holds `cap` already, or would with this.
    Owner { cap: u64 },
    /// The whole process's.
    Total { cap: u64 },
}

impl Short {
    /// The bound passed.
    pub(crate) fn cap(self) -> u64 {
        match self {
            Self::Owner { cap } | Self::Total { cap } => cap,
        }
    }
}

/// The bounds, and what each owner holds now.
#[derive(Debug)]
pub(crate) struct Allowance {
    per_owner: u64,
    total: u64,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    total: u64,
    /// Only owners holding something: an entry goes with its last unit.
    by_owner: HashMap<Arc<str>, u64>,
}

/// Units held by one owner, given back when dropped.
#[derive(Debug)]
pub(crate) struct Hold {
    allowance: Arc<Allowance>,
    owner: Arc<str>,
    units: u64,
}

impl Allowance {
    /// At most `per_owner` units held by any one owner, `total` by all of them.
    pub(crate) fn new(per_owner: u64, total: u64) -> Arc<Self> {
        Arc::new(Self {
            per_owner,
            total,
            held: Mutex::default(),
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `units` for `owner`, if both bounds allow them.
    ///
    /// # Errors
    /// [`Short`]: the bound they would pass; nothing is taken.
    pub(crate) fn take(self: &Arc<Self>, owner: &str, units: u64) -> Result<Hold, Short> {
        let mut hold = Hold {
            allowance: self.clone(),
            owner: owner.into(),
            units: 0,
        };
        hold.grow(units)?;
        Ok(hold)
    }

    /// What `owner` holds now.
    #[cfg(test)]
    pub(crate) fn held_by(&self, owner: &str) -> u64 {
        self.held().by_owner.get(owner).copied().unwrap_or(0)
    }

    /// What every owner holds now, together.
    #[cfg(test)]
    pub(crate) fn held_in_all(&self) -> u64 {
        self.held().total
    }

    /// The bound on one owner.
    pub(crate) fn per_owner(&self) -> u64 {
        self.per_owner
    }

    /// How many owners hold something now.
    #[cfg(test)]
    fn owners(&self) -> usize {
        self.held().by_owner.len()
    }
}

impl Hold {
    /// `more` units added to this hold, if both bounds allow them.
    ///
    /// # Errors
    /// [`Short`]: the bound they would pass; the hold is as it was.
    pub(crate) fn grow(&mut self, more: u64) -> Result<(), Short> {
        if more == 0 {
            return Ok(());
        }
        let a = &self.allowance;
        let mut held = a.held();
        let mine = held.by_owner.get(&self.owner).copied().unwrap_or(0);
        if mine.saturating_add(more) > a.per_owner {
            return Err(Short::Owner { cap: a.per_owner });
        }
        if held.total.saturating_add(more) > a.total {
            return Err(Short::Total { cap: a.total });
        }
        held.total += more;
        *held.by_owner.entry(self.owner.clone()).or_default() += more;
        self.units += more;
        Ok(())
    }

    /// The units held.
    pub(crate) fn units(&self) -> u64 {
        self.units
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if self.units == 0 {
            return;
        }
        let mut held = self.allowance.held();
        held.total = held.total.saturating_sub(self.units);
        if let Some(n) = held.by_owner.get_mut(&self.owner) {
            *n = n.saturating_sub(self.units);
            if *n == 0 {
                held.by_owner.remove(&self.owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_held_to_its_bound_and_all_owners_to_the_total() {
        let a = Allowance::new(3, 5);
        let (x, y) = ("x", "y");
        let x1 = a.take(x, 3).unwrap();
        assert_eq!(a.take(x, 1).unwrap_err(), Short::Owner { cap: 3 });
        let _y1 = a.take(y, 2).unwrap();
        assert_eq!(a.take(y, 1).unwrap_err(), Short::Total { cap: 5 });
        drop(x1);
        assert_eq!(a.held_by("x"), 0);
        assert_eq!(a.owners(), 1, "an owner holding nothing is forgotten");
        assert!(a.take(y, 1).is_ok());
    }

    proptest::proptest! {
        /// Whatever is taken, grown and dropped, in any order: no owner holds more than its
        /// bound, all hold no more than the total, the counts are what the live holds
        /// hold, and a take refused for the total is refused only when the total is full.
        #[test]
        fn the_bounds_hold_and_every_unit_comes_back(
            steps in proptest::collection::vec((0u8..3, 0usize..4, 0u64..5), 0..80)
        ) {
            let a = Allowance::new(6, 10);
            let owners = ["a", "b", "c", "d"];
            let mut live: Vec<(usize, Hold)> = Vec::new();
            for (op, who, n) in steps {
                match op {
                    0 => match a.take(owners[who], n) {
                        Ok(h) => live.push((who, h)),
                        Err(Short::Owner { .. }) => {
                            proptest::prop_assert!(a.held_by(owners[who]) + n > 6);
                        }
                        Err(Short::Total { .. }) => {
                            proptest::prop_assert!(a.held_in_all() + n > 10);
                        }
                    },
                    1 => {
                        if let Some((_, h)) = live.iter_mut().find(|(w, _)| *w == who) {
                            let before = h.units();
                            if h.grow(n).is_err() {
                                proptest::prop_assert_eq!(h.units(), before);
                            }
                        }
                    }
                    _ => {
                        if let Some(i) = live.iter().position(|(w, _)| *w == who) {
                            live.swap_remove(i);
                        }
                    }
                }
                for (i, o) in owners.iter().enumerate() {
                    let sum: u64 = live.iter().filter(|(w, _)| *w == i).map(|(_, h)| h.units()).sum();
                    proptest::prop_assert_eq!(a.held_by(o), sum);
                    proptest::prop_assert!(sum <= 6);
                }
                let all: u64 = live.iter().map(|(_, h)| h.units()).sum();
                proptest::prop_assert_eq!(a.held_in_all(), all);
                proptest::prop_assert!(all <= 10);
            }
            live.clear();
            proptest::prop_assert_eq!(a.held_in_all(), 0);
            proptest::prop_assert_eq!(a.owners(), 0);
        }
    }
}

//! The scheduler's lanes, by compact id: one per set of scopes that requests charge
//! together, created on first use, and forgotten with a scope they charge (see
//! [`super::unconfigured`]); the id of a forgotten lane is given to the next one made.

use std::collections::HashMap;
use std::ops::{Index, IndexMut};

use super::index;
use crate::admission::fair::Lane;

/// Every lane in use; see the module docs.
#[derive(Debug, Default)]
pub(super) struct Lanes {
    /// By id; `None`: forgotten, its id in `free`.
    all: Vec<Option<Lane>>,
    free: Vec<u32>,
    ids: HashMap<Box<[u32]>, u32>,
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

    /// Forgets every lane that charges scope `scope`, and returns their ids. The scope must
    /// be at rest: nothing waits in its lanes, and none of their requests is in flight.
    pub(super) fn forget_through(&mut self, scope: u32) -> Vec<u32> {
        let gone: Vec<u32> = self
            .iter()
            .filter(|(_, l)| l.scopes.contains(&scope))
            .map(|(id, _)| id)
            .collect();
        for &id in &gone {
            if let Some(lane) = self.all[id as usize].take() {
                debug_assert!(lane.bands.iter().all(|b| b.count == 0), "{lane:?}");
                self.ids.remove(&lane.scopes);
                self.free.push(id);
            }
        }
        gone
    }

    /// Every lane in use, with its id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &Lane)> {
        self.all
            .iter()
            .enumerate()
            .filter_map(|(id, l)| Some((index(id), l.as_ref()?)))
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

impl IndexMut<u32> for Lanes {
    fn index_mut(&mut self, id: u32) -> &mut Lane {
        self.all[id as usize]
            .as_mut()
            .unwrap_or_else(|| panic!("lane {id} was forgotten while in use"))
    }
}

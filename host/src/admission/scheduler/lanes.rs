//! The scheduler's lanes, by compact id: one per set of scopes that requests charge
//! together, created on first use.

use std::collections::HashMap;
use std::ops::{Index, IndexMut};

use super::index;
use crate::admission::fair::Lane;

/// Every lane in use; see the module docs.
#[derive(Debug, Default)]
pub(super) struct Lanes {
    all: Vec<Lane>,
    ids: HashMap<Box<[u32]>, u32>,
}

impl Lanes {
    /// The id of the lane of the scopes `scopes` (the credential's first, the rest sorted),
    /// created on first use.
    pub(super) fn id(&mut self, scopes: &[u32]) -> u32 {
        if let Some(&lane) = self.ids.get(scopes) {
            return lane;
        }
        let lane = index(self.all.len());
        self.all.push(Lane::new(scopes.into()));
        self.ids.insert(scopes.into(), lane);
        lane
    }

    /// How many lanes are in use.
    pub(super) fn len(&self) -> usize {
        self.all.len()
    }

    /// Every lane, by id.
    pub(super) fn iter(&self) -> std::slice::Iter<'_, Lane> {
        self.all.iter()
    }
}

impl Index<u32> for Lanes {
    type Output = Lane;

    fn index(&self, id: u32) -> &Lane {
        &self.all[id as usize]
    }
}

impl IndexMut<u32> for Lanes {
    fn index_mut(&mut self, id: u32) -> &mut Lane {
        &mut self.all[id as usize]
    }
}

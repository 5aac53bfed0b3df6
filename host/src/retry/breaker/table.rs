//! The paths a set of breakers keeps, by owner, and how an owner's new path finds room.
//!
//! Paths are kept by **owner** — a credential (`provider credential`) for its breakers, a
//! tenant for its own — and at most [`MAX_PATHS`] over all owners of one set. Past it, room
//! is made the way a fair share is kept: each owner with paths has a share of the table,
//! `MAX_PATHS / owners` (the newcomer counted). An owner at or over its share makes room
//! among its own paths; an owner under it takes one path from the owner holding the most,
//! which is then over its share. So a path is only ever forgotten from an owner over its
//! share: a tenant inventing failing routes or model names on credential X fills X's part of
//! the table and then forgets X's oldest paths, never credential Y's open breaker while Y
//! holds no more than its share; and a tenant flooding its own breakers never forgets
//! another tenant's.
//!
//! Why a share and not a fixed bound per owner: the table stays one bound, whatever the
//! number of owners. Credentials are bounded by configuration, tenants are not (an agent
//! with `name_tenant`, or a plugin's plan, names them), and a fixed bound per owner would
//! let the table grow with every tenant named. With shares, many owners each get fewer
//! paths, and the owners themselves are bounded by the table: each holds at least one path.
//! Once `MAX_PATHS` owners hold one path each, a new owner's failure is not counted (no one
//! is over a share of less than one path); until then every new path is.
//!
//! Within an owner, paths that are counting but not open go first (a count below the
//! threshold, lost), then the open path due to half-open first (an open time shortened).

use std::collections::HashMap;

use super::{MAX_PATHS, Path};

/// Each owner's paths.
#[derive(Debug, Default)]
pub(super) struct Table {
    /// By owner, then path; an owner without paths is not kept.
    owners: HashMap<String, HashMap<String, Path>>,
    /// Paths over every owner.
    len: usize,
}

/// A path forgotten to make room for another owner's or its own owner's new path.
pub(super) struct Forgotten {
    pub(super) owner: String,
    pub(super) route: String,
    pub(super) path: Path,
}

/// What making room for a new path did.
pub(super) enum Room {
    /// There was room.
    Free,
    /// This path was forgotten.
    Made(Forgotten),
    /// None can be made: every owner holds no more than its share (more owners than the
    /// table has paths), and the new path's owner holds none.
    Full,
}

impl Table {
    /// Paths over every owner.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn get(&self, owner: &str, route: &str) -> Option<&Path> {
        self.owners.get(owner)?.get(route)
    }

    pub(super) fn get_mut(&mut self, owner: &str, route: &str) -> Option<&mut Path> {
        self.owners.get_mut(owner)?.get_mut(route)
    }

    /// `owner`'s paths.
    pub(super) fn of(&self, owner: &str) -> impl Iterator<Item = &Path> {
        self.owners.get(owner).into_iter().flat_map(HashMap::values)
    }

    /// Every path, with its route.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &Path)> {
        self.owners.values().flatten()
    }

    pub(super) fn remove(&mut self, owner: &str, route: &str) -> Option<Path> {
        let paths = self.owners.get_mut(owner)?;
        let path = paths.remove(route)?;
        self.len -= 1;
        if paths.is_empty() {
            self.owners.remove(owner);
        }
        Some(path)
    }

    /// `owner`'s path `route`, made with `new` if it has none; call [`Table::make_room`]
    /// first for a new path.
    pub(super) fn entry(
        &mut self,
        owner: &str,
        route: &str,
        new: impl FnOnce() -> Path,
    ) -> &mut Path {
        let paths = self.owners.entry(owner.to_owned()).or_default();
        if !paths.contains_key(route) {
            self.len += 1;
        }
        paths.entry(route.to_owned()).or_insert_with(new)
    }

    /// Room for a new path of `owner` (see the module's doc).
    pub(super) fn make_room(&mut self, owner: &str) -> Room {
        if self.len < MAX_PATHS {
            return Room::Free;
        }
        let held = self.owners.get(owner).map_or(0, HashMap::len);
        let share = MAX_PATHS / (self.owners.len() + usize::from(held == 0));
        let victim = if held >= share {
            owner.to_owned()
        } else {
            // The table is full and `owner` is under its share: another owner is over its
            // own (were every other at most at its share, the table would not be full).
            let most = self
                .owners
                .iter()
                .filter(|(o, _)| o.as_str() != owner)
                .max_by_key(|(_, paths)| paths.len());
            match most {
                Some((o, paths)) if paths.len() > share => o.clone(),
                _ => return Room::Full,
            }
        };
        let Some(paths) = self.owners.get(&victim) else {
            return Room::Full;
        };
        let counting = paths.iter().find(|(_, p)| p.open_until.is_none());
        let due_first = || paths.iter().min_by_key(|(_, p)| p.open_until);
        let Some(route) = counting.or_else(due_first).map(|(r, _)| r.clone()) else {
            return Room::Full;
        };
        match self.remove(&victim, &route) {
            Some(path) => Room::Made(Forgotten {
                owner: victim,
                route,
                path,
            }),
            None => Room::Full,
        }
    }
}

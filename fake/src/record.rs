//! A record that keeps every entry, or the last ones only: each entry known by its number,
//! from 0 in the order it came, whether or not it is still kept. The fake's attempts and its
//! stored writes are kept this way, so that a provider serving a long load does not grow
//! with every request.

use std::collections::VecDeque;

/// Entries in the order they came, the oldest let go past `bound`.
#[derive(Debug)]
pub(crate) struct Record<T> {
    kept: VecDeque<T>,
    /// How many of the first were let go to keep the record within `bound`.
    forgotten: usize,
    bound: Option<usize>,
}

impl<T> Default for Record<T> {
    fn default() -> Self {
        Self::bounded(None)
    }
}

impl<T> Record<T> {
    /// A record of at most `bound` entries (at least one); `None`: every one.
    pub fn bounded(bound: Option<usize>) -> Self {
        Self {
            kept: VecDeque::new(),
            forgotten: 0,
            bound: bound.map(|b| b.max(1)),
        }
    }

    /// Records `entry`: its number, and the oldest entry let go to make room for it.
    pub fn push(&mut self, entry: T) -> (usize, Option<T>) {
        let let_go = match self.bound {
            Some(bound) if self.kept.len() >= bound => {
                self.forgotten += 1;
                self.kept.pop_front()
            }
            _ => None,
        };
        self.kept.push_back(entry);
        (self.len() - 1, let_go)
    }

    /// How many entries were ever recorded, kept or let go.
    pub fn len(&self) -> usize {
        self.forgotten + self.kept.len()
    }

    /// Entry number `n`, if it is still kept.
    pub fn get(&self, n: usize) -> Option<&T> {
        self.kept.get(n.checked_sub(self.forgotten)?)
    }

    /// Entry number `n`, if it is still kept.
    pub fn get_mut(&mut self, n: usize) -> Option<&mut T> {
        self.kept.get_mut(n.checked_sub(self.forgotten)?)
    }

    /// The entries kept, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.kept.iter()
    }

    /// How many entries were let go to keep the record within its bound.
    pub fn forgotten(&self) -> usize {
        self.forgotten
    }
}

#[cfg(test)]
mod tests {
    use super::Record;

    #[test]
    fn a_bounded_record_keeps_the_last_entries_under_their_own_numbers() {
        let mut r = Record::bounded(Some(2));
        assert_eq!(r.push('a'), (0, None));
        assert_eq!(r.push('b'), (1, None));
        assert_eq!(r.push('c'), (2, Some('a')));
        assert_eq!((r.len(), r.forgotten()), (3, 1));
        assert_eq!(
            (r.get(0), r.get(1), r.get(2)),
            (None, Some(&'b'), Some(&'c'))
        );
        assert_eq!(r.iter().copied().collect::<String>(), "bc");
        let mut all = Record::default();
        for c in "abc".chars() {
            all.push(c);
        }
        assert_eq!((all.get(0), all.forgotten()), (Some(&'a'), 0));
    }
}

//! What a stream produced, counted by its plugin stretch by stretch as it passes.
//!
//! The usage a provider reports comes at a stream's end; a stream that never gets there (the
//! caller went away, the upstream cut it, a deadline or a shutdown ended it) would keep its
//! estimate, the prompt plus the whole output maximum. So the bytes of a stream are handed to
//! the plugin's `count-stream` in stretches cut at event boundaries, each byte once, and what
//! it counts is added up: the charge of a stream that ends without its usage.

use super::framing::Framing;
use crate::contract::Cost;

/// The length a stretch is cut at (at the last event boundary before it; past it only when
/// one event is longer).
pub(super) const STRETCH: usize = 32 * 1024;

/// The most a stretch holds when no event boundary comes: a longer event is counted in parts.
const MOST: usize = 8 * STRETCH;

/// The most dimensions summed: as many as one answer may name.
const MOST_DIMENSIONS: usize = 16;

/// A stream's stretch not yet counted, and the sums of those counted.
#[derive(Debug, Default)]
pub(super) struct Produced {
    framing: Framing,
    pending: Vec<u8>,
    /// The offset in the stream of `pending`'s first byte.
    at: u64,
    sums: Vec<Cost>,
}

impl Produced {
    /// Nothing counted yet, of a stream of `framing`.
    pub(super) fn new(framing: Framing) -> Self {
        Self {
            framing,
            ..Self::default()
        }
    }

    /// Takes the stream's next `chunk`, and hands `count` every stretch it completes.
    pub(super) fn take(&mut self, chunk: &[u8], mut count: impl FnMut(u64, &[u8]) -> Vec<Cost>) {
        self.pending.extend_from_slice(chunk);
        while self.pending.len() >= STRETCH {
            // The last boundary within a stretch, else (one event is longer) the first after.
            let framing = self.framing;
            let cut = framing
                .last_end(&self.pending[..STRETCH])
                .or_else(|| framing.first_end(&self.pending))
                .or((self.pending.len() >= MOST).then_some(self.pending.len()));
            let Some(cut) = cut else { break };
            self.count(cut, &mut count);
        }
    }

    /// Counts what is left, and gives the sums of every stretch: what the stream produced.
    pub(super) fn finish(&mut self, mut count: impl FnMut(u64, &[u8]) -> Vec<Cost>) -> &[Cost] {
        if !self.pending.is_empty() {
            self.count(self.pending.len(), &mut count);
        }
        &self.sums
    }

    fn count(&mut self, cut: usize, count: &mut impl FnMut(u64, &[u8]) -> Vec<Cost>) {
        for c in count(self.at, &self.pending[..cut]) {
            if let Some(s) = self.sums.iter_mut().find(|s| s.dimension == c.dimension) {
                s.amount = s.amount.saturating_add(c.amount);
            } else if self.sums.len() < MOST_DIMENSIONS {
                self.sums.push(c);
            }
        }
        self.pending.drain(..cut);
        self.at += cut as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::ReportedDimension as D;
    use proptest::prelude::*;

    /// A count of one output token per event that begins in the stretch (an SSE event's
    /// `data:`, an event-stream message's prelude), and the stretches seen.
    fn events(
        framing: Framing,
        seen: &mut Vec<(u64, Vec<u8>)>,
    ) -> impl FnMut(u64, &[u8]) -> Vec<Cost> + '_ {
        move |at, s| {
            seen.push((at, s.to_vec()));
            let n = match framing {
                Framing::Sse => s.windows(5).filter(|w| w == b"data:").count(),
                Framing::EventStream => {
                    let mut rest = s;
                    let mut n = 0;
                    while let Some(end) = framing.first_end(rest) {
                        rest = &rest[end..];
                        n += 1;
                    }
                    n
                }
            };
            vec![Cost {
                dimension: D::OutputTokens,
                amount: n as u64,
            }]
        }
    }

    /// The SSE line endings an event may end with, and the blank line each makes.
    const ENDINGS: [&str; 5] = ["\n\n", "\r\n\r\n", "\r\r", "\n\r\n", "\r\n\n"];

    /// A stream of events of `sizes`, each in `framing`'s form (an SSE event ended as
    /// `endings` picks), and where each event ends.
    fn stream_of(framing: Framing, sizes: &[usize], endings: &[usize]) -> (Vec<u8>, Vec<usize>) {
        let (mut stream, mut ends) = (Vec::new(), Vec::new());
        for (k, n) in sizes.iter().enumerate() {
            match framing {
                Framing::Sse => {
                    let end = ENDINGS[endings[k % endings.len()] % ENDINGS.len()];
                    stream.extend(format!("data: {}{end}", "x".repeat(*n)).into_bytes());
                }
                Framing::EventStream => {
                    stream.extend(crate::execute::framing::tests::message(&vec![b'x'; *n]));
                }
            }
            ends.push(stream.len());
        }
        (stream, ends)
    }

    proptest! {
        /// However a stream is chunked, and whatever ends its events (any blank line SSE
        /// allows, or binary messages), every byte is counted once, in order, each stretch
        /// starting where the last ended and ending where an event ends (the last may be
        /// cut), at most a stretch long unless one event is longer; and the sums are the
        /// stream's.
        #[test]
        fn every_byte_is_counted_once_at_event_boundaries(
            sizes in prop::collection::vec(prop_oneof![9 => 1_usize..3_000, 1 => 30_000_usize..50_000], 1..120),
            chunk in 1_usize..20_000,
            endings in prop::collection::vec(0_usize..5, 1..8),
            binary in any::<bool>(),
        ) {
            let framing = if binary { Framing::EventStream } else { Framing::Sse };
            let (stream, ends) = stream_of(framing, &sizes, &endings);
            let mut seen = Vec::new();
            let mut p = Produced::new(framing);
            for c in stream.chunks(chunk) {
                p.take(c, events(framing, &mut seen));
            }
            let sums = p.finish(events(framing, &mut seen)).to_vec();
            let joined: Vec<u8> = seen.iter().flat_map(|(_, s)| s.clone()).collect();
            prop_assert_eq!(&joined, &stream);
            let mut at = 0;
            for (i, (offset, s)) in seen.iter().enumerate() {
                prop_assert_eq!(*offset, at);
                at += s.len() as u64;
                if i + 1 < seen.len() {
                    let whole = ends.binary_search(&(at as usize)).is_ok();
                    prop_assert!(whole, "a stretch ends at {at}, inside an event");
                    let events = ends.iter().filter(|e| (*offset as usize) < **e && **e <= at as usize).count();
                    prop_assert!(s.len() <= STRETCH || events == 1, "{} bytes, {events} events", s.len());
                }
            }
            prop_assert_eq!(sums, vec![Cost { dimension: D::OutputTokens, amount: sizes.len() as u64 }]);
        }
    }

    #[test]
    fn an_event_longer_than_the_most_is_counted_in_parts() {
        let mut seen = Vec::new();
        let mut p = Produced::default();
        p.take(&vec![b'x'; MOST + 10], events(Framing::Sse, &mut seen));
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].1.len(), MOST + 10);
        assert!(
            p.finish(events(Framing::Sse, &mut seen))
                .iter()
                .all(|c| c.amount == 0)
        );
        assert_eq!(seen.len(), 1, "nothing left to count");
    }
}

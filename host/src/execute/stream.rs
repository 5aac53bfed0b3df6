//! A streamed answer handed to the caller chunk by chunk.
//!
//! Once the provider has begun to answer and the first chunk has arrived, the call belongs
//! to the caller: the chunks pass through as they come, and nothing is ever sent again for
//! it. A stream that breaks after that point is a [`PartialStream`], never a silent retry —
//! the caller has already shown part of an answer (and a model has already spent the
//! tokens). The stream keeps its admission permit while it runs (its concurrency slot is
//! taken for as long as it streams) and, when it ends whole, the provider's plugin reads its
//! first and last bytes for the usage it reports, which corrects the charge. However else it
//! ends — broken, abandoned by the caller (dropped), ended by a deadline or a shutdown — it is
//! charged what its plugin counted of it as it passed (`produced.rs`): the prompt, and the
//! output read so far.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::Terminal;
use super::framing::Framing;
use super::produced::Produced;
use super::usage::corrected;
use crate::admission::{Permit, Usage};
use crate::budget::Reservation;
use crate::contract::{
    Cost, ReportedDimension, Request, Response, ResponsePart, TransportFailure, Verdict,
    WireOutcome as Wire,
};
use crate::guard::GuardedPolicy;
use crate::transport::Started;

/// How much of a stream's start and of its end the plugin reads at its end.
const KEEP: usize = 32 * 1024;

/// How a streamed call began.
#[derive(Debug)]
pub enum StreamOutcome {
    /// The provider is answering: read the chunks from the [`Stream`].
    Streaming(Box<Stream>),
    /// The call ended without a stream (refused, failed, out of budget), as any call ends.
    Ended(Box<Terminal>),
}

/// A stream that ended before its end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the stream broke off after {delivered} bytes: {detail}")]
pub struct PartialStream {
    /// Bytes handed to the caller before the break.
    pub delivered: u64,
    /// How it broke, when the connection did (`None`: the provider reported an error in the
    /// stream itself).
    pub failure: Option<TransportFailure>,
    /// The provider's error code, when the stream carried one.
    pub error_code: Option<String>,
    /// What happened, for people.
    pub detail: String,
}

/// A streamed answer. Read it with [`Stream::next`] until `None`.
#[derive(Debug)]
pub struct Stream {
    /// The status.
    pub status: u16,
    /// The response headers, as a WIT `fields` block.
    pub headers: String,
    /// Attempts the call sent (the last one is streaming).
    pub attempts: u32,
    /// Time the call waited: in the admission queue and between attempts.
    pub waited: Duration,
    first: Option<Bytes>,
    body: Started,
    permit: Option<Permit>,
    policy: Arc<GuardedPolicy>,
    req: Request,
    estimate: Usage,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: bool,
    /// How its events are divided: where its stretches are cut, and its ends joined.
    framing: Framing,
    delivered: u64,
    usage: Option<Usage>,
    done: bool,
    /// What the plugin has counted of the stream so far; `None` for a plugin that counts no
    /// stream.
    produced: Option<Produced>,
    /// The call's charge against its tenant's budgets, corrected when the stream ends: to
    /// the usage it reports, else to what was counted of it.
    budget: Option<Reservation>,
}

pub(super) struct Opened {
    pub body: Started,
    pub first: Option<Bytes>,
    pub permit: Permit,
    pub policy: Arc<GuardedPolicy>,
    pub req: Request,
    pub estimate: Usage,
    pub attempts: u32,
    pub waited: Duration,
}

impl Stream {
    pub(super) fn new(o: Opened) -> Self {
        let framing = Framing::of(&o.body.headers);
        let produced = o.policy.counts_streams().then(|| Produced::new(framing));
        Self {
            status: o.body.status,
            headers: o.body.headers.clone(),
            attempts: o.attempts,
            waited: o.waited,
            first: o.first,
            body: o.body,
            permit: Some(o.permit),
            policy: o.policy,
            req: o.req,
            estimate: o.estimate,
            head: Vec::new(),
            tail: VecDeque::new(),
            dropped: false,
            framing,
            delivered: 0,
            usage: None,
            done: false,
            produced,
            budget: None,
        }
    }

    /// Corrects `reservation` when the stream ends.
    pub(super) fn charged_to(&mut self, reservation: Option<Reservation>) {
        self.budget = reservation;
    }

    /// The next chunk as the provider sent it; `None` once the stream has ended whole.
    ///
    /// # Errors
    /// A [`PartialStream`], once, when the stream broke off or carried an error: nothing is
    /// sent again for it.
    pub async fn next(&mut self) -> Option<Result<Bytes, PartialStream>> {
        if let Some(first) = self.first.take() {
            self.keep(&first);
            return Some(Ok(first));
        }
        if self.done {
            return None;
        }
        match self.body.chunk().await {
            Ok(Some(chunk)) => {
                self.keep(&chunk);
                Some(Ok(chunk))
            }
            Ok(None) => self.finish().map(Err),
            Err(fault) => {
                // Charged what was counted of it: the provider reports nothing now.
                self.settle(&[]);
                Some(Err(PartialStream {
                    delivered: self.delivered,
                    failure: Some(fault.failure),
                    error_code: None,
                    detail: fault.detail,
                }))
            }
        }
    }

    /// What the call was charged in the end: the provider's usage read at the stream's end,
    /// else what its plugin counted of the stream; `None` before the end, or when neither
    /// says anything (the estimate stands).
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// Bytes handed to the caller so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    fn keep(&mut self, chunk: &[u8]) {
        if let Some(produced) = &mut self.produced {
            let (policy, req) = (&self.policy, &self.req);
            produced.take(chunk, |at, s| policy.count_stream(req, at, s).value);
        }
        self.delivered += chunk.len() as u64;
        let room = KEEP.saturating_sub(self.head.len());
        let (head, rest) = chunk.split_at(room.min(chunk.len()));
        self.head.extend_from_slice(head);
        self.tail.extend(rest);
        if self.tail.len() > KEEP {
            self.tail.drain(..self.tail.len() - KEEP);
            self.dropped = true;
        }
    }

    /// The stream's first and last bytes, joined at an event boundary when the middle was
    /// dropped.
    fn ends(&mut self) -> Vec<u8> {
        let tail: Vec<u8> = self.tail.drain(..).collect();
        joined(
            self.framing,
            std::mem::take(&mut self.head),
            &tail,
            self.dropped,
        )
    }

    /// The stream ended whole: read its usage, correct the charge, and report an error the
    /// stream itself carried.
    fn finish(&mut self) -> Option<PartialStream> {
        let resp = Response {
            status: self.status,
            headers: std::mem::take(&mut self.headers),
            body: self.ends(),
        };
        let reading = self
            .policy
            .read_response(&self.req, &Wire::Response(resp), ResponsePart::StreamEnd)
            .value;
        self.settle(&reading.usage);
        let c = reading.classification;
        (c.verdict != Verdict::Success).then(|| PartialStream {
            delivered: self.delivered,
            failure: None,
            detail: format!(
                "the provider ended the stream with an error ({})",
                c.error_code.as_deref().unwrap_or("no code")
            ),
            error_code: c.error_code,
        })
    }
}

/// `head` and `tail` as one body; when the middle between them was dropped, the tail from
/// where its first whole event begins (`framing.rs`: after a blank line of any form, or at
/// a binary message's prelude), so no cut event stands in the middle.
fn joined(framing: Framing, mut head: Vec<u8>, tail: &[u8], dropped: bool) -> Vec<u8> {
    let from = if dropped {
        head.extend_from_slice(framing.separator());
        framing.first_start(tail).unwrap_or(tail.len())
    } else {
        0
    };
    head.extend_from_slice(&tail[from..]);
    head
}

impl Stream {
    /// Ends the call's charges, once: to `reported`, the usage the stream's end reported,
    /// each dimension it names; and, for the dimensions it does not name when it names no
    /// output (a stream that ended early, or whose provider reported none), to what the
    /// plugin counted of the stream.
    fn settle(&mut self, reported: &[Cost]) {
        if self.done {
            return;
        }
        self.done = true;
        let mut usage = reported.to_vec();
        let named = |u: &[Cost], d: &ReportedDimension| u.iter().any(|c| &c.dimension == d);
        if let Some(produced) = &mut self.produced
            && !named(reported, &ReportedDimension::OutputTokens)
        {
            let (policy, req) = (&self.policy, &self.req);
            let counted = produced.finish(|at, s| policy.count_stream(req, at, s).value);
            for c in counted {
                if !named(reported, &c.dimension) {
                    usage.push(c.clone());
                }
            }
        }
        self.usage = corrected(self.estimate, &usage);
        if let Some(permit) = self.permit.take() {
            permit.complete(self.usage);
        }
        if let Some(budget) = self.budget.take() {
            let billed = super::charge::billed(self.estimate, &usage);
            let cache = super::charge::cache_use(&usage);
            // A round trip to a group's journal holds up neither the stream's end nor the
            // thread it was polled on.
            crate::offload::detached(budget.waits_on_network(), move || {
                budget.settle(billed, cache);
            });
        }
    }
}

/// A stream dropped before its end (its caller went away, a deadline or a shutdown ended
/// it) is charged what was counted of it.
impl Drop for Stream {
    fn drop(&mut self) {
        self.settle(&[]);
    }
}

#[cfg(test)]
mod tests {
    use super::joined;
    use crate::execute::framing::Framing;
    use crate::execute::framing::tests::message;

    #[test]
    fn a_long_stream_keeps_its_last_events_whatever_ends_them() {
        for end in ["\n\n", "\r\n\r\n", "\r\r"] {
            let tail = format!("ut\": 3}}{end}data: {{\"usage\": 9}}{end}data: [DONE]{end}");
            let body = joined(
                Framing::Sse,
                b"data: {\"a\": 1}".to_vec(),
                tail.as_bytes(),
                true,
            );
            let body = String::from_utf8(body).unwrap();
            assert!(
                body.ends_with(&format!("\n\ndata: {{\"usage\": 9}}{end}data: [DONE]{end}")),
                "{body:?}"
            );
            let whole = joined(Framing::Sse, b"data: 1".to_vec(), b"\n\n", false);
            assert_eq!(whole, b"data: 1\n\n");
        }
    }

    #[test]
    fn a_long_binary_stream_keeps_its_last_whole_messages() {
        let (first, cut, last) = (message(b"first"), message(b"cut"), message(b"usage"));
        let tail = [&cut[5..], &last[..]].concat();
        let body = joined(Framing::EventStream, first.clone(), &tail, true);
        assert_eq!(body, [first, last].concat());
    }
}

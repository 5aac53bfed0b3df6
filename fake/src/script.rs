//! Scripted faults: what the provider does to the next attempts on a route instead of (or
//! before) answering normally.

use std::time::Duration;

/// How a rate-limited or unavailable answer says when to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// `Retry-After: <seconds>`.
    Seconds(u64),
    /// `Retry-After: <HTTP-date>`, this many seconds from now (negative: in the past).
    Date(i64),
    /// `retry-after-ms: <milliseconds>` (OpenAI), with no `Retry-After`.
    Millis(u64),
    /// A `Retry-After` header with this raw value (junk, negative, huge).
    Raw(&'static str),
}

/// What the provider does with one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 429 in the provider's style, whatever its own limits say.
    RateLimited {
        /// When to come back, if the answer says.
        retry_after: Option<RetryAfter>,
    },
    /// 503 (or the style's overload status), whose `Retry-After` is not a rate signal.
    Unavailable {
        /// When to come back, if the answer says.
        retry_after: Option<RetryAfter>,
    },
    /// Any status with a provider-style error body carrying `code`.
    Status {
        /// The status.
        status: u16,
        /// The provider's error code in the body.
        code: &'static str,
    },
    /// A redirect: `status` (301, 302, 307, 308...) with `Location: location`, no body.
    Redirect {
        /// The status.
        status: u16,
        /// Where it points.
        location: &'static str,
    },
    /// Answers normally, after a pause.
    Slow(Duration),
    /// Performs the write (stores it as the provider's style stores writes), then drops the
    /// connection without a response: the client cannot know the write happened. A read is
    /// only dropped.
    StoreThenDrop,
    /// Never answers; the connection stays open until the client gives up.
    Hang,
    /// Answers a streamed request normally, then breaks the connection after this many
    /// events, as a provider does when it fails mid-generation.
    CutStream {
        /// Events delivered before the cut.
        after_events: u32,
    },
}

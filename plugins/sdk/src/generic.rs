//! Generic HTTP semantics (RFC 9110, RFC 6585, the IETF rate-limit fields): the reading of a
//! response any provider's plugin starts from, and the host's own fallback when a plugin
//! cannot answer.
//!
//! The types here are plain Rust, independent of the WIT bindings, so the host (which has
//! its own bindings) and plugins share one implementation of the rules.

use crate::headers::Headers;
use crate::ratelimit;
use crate::retry_after::retry_after_ms;
use crate::time::MAX_DELAY_MS;

/// The kind of outcome (mirrors the WIT `verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The call did what was asked.
    Success,
    /// Slow the scope down.
    RateLimited,
    /// A periodic quota is used up.
    QuotaExhausted,
    /// The provider is overloaded; retry later without shrinking the pace.
    Overloaded,
    /// A transient failure worth a bounded retry.
    Transient,
    /// A conflict with the resource's state.
    Conflict,
    /// The request is wrong; never retried.
    ClientError,
    /// Credentials are wrong or lack permission; never retried.
    AuthError,
    /// The provider may or may not have acted.
    OutcomeUnknown,
}

/// Why an attempt produced no response (mirrors the WIT `transport-failure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Nothing was sent: the connection failed.
    ConnectFailed,
    /// Nothing was sent: timed out before writing.
    TimeoutBeforeSend,
    /// Bytes were written, then the attempt timed out.
    TimeoutAfterSend,
    /// Bytes were written, then the connection was reset.
    ResetAfterSend,
}

impl Transport {
    /// Whether the request surely never reached the provider.
    pub fn surely_not_sent(self) -> bool {
        matches!(self, Self::ConnectFailed | Self::TimeoutBeforeSend)
    }
}

/// The kind of a transport failure: transient when nothing was sent, unknown otherwise.
pub fn transport_kind(failure: Transport) -> Kind {
    if failure.surely_not_sent() {
        Kind::Transient
    } else {
        Kind::OutcomeUnknown
    }
}

/// The kind of a status code under generic HTTP semantics.
pub fn status_kind(status: u16) -> Kind {
    match status {
        100..=399 => Kind::Success,
        401 | 403 | 407 => Kind::AuthError,
        408 | 425 => Kind::Transient,
        409 => Kind::Conflict,
        429 => Kind::RateLimited,
        400..=499 => Kind::ClientError,
        503 | 529 => Kind::Overloaded,
        500..=599 => Kind::Transient,
        // Outside HTTP's range: nobody knows what happened.
        _ => Kind::OutcomeUnknown,
    }
}

/// Defines, for one set of WIT bindings (the guest's, or the host's):
/// `verdict(Kind) -> $verdict`, `transport($transport) -> Transport`, and
/// `ietf_observations(&Headers) -> Vec<$observation>` (the IETF rate-limit fields). The
/// bindings' `verdict`, `transport-failure`, `dimension` and `observation` types mirror the
/// plain types here case for case, so one definition serves both sides.
#[macro_export]
macro_rules! wit_conversions {
    ($vis:vis $verdict:ty, $transport:ty, $observation:ty, $dimension:ty) => {
        /// Observations for the IETF rate-limit fields.
        $vis fn ietf_observations(
            h: &$crate::headers::Headers<'_>,
        ) -> ::std::vec::Vec<$observation> {
            use $crate::ratelimit::Unit;
            type D = $dimension;
            type O = $observation;
            $crate::ratelimit::quotas(h)
                .into_iter()
                .map(|q| O {
                    scope: q.policy,
                    dimension: match q.unit {
                        Unit::Requests => D::Requests,
                        Unit::Concurrency => D::Concurrency,
                        Unit::Other(name) => D::Other(name),
                    },
                    limit: q.limit,
                    remaining: q.remaining,
                    used: None,
                    reset_after_ms: q.reset_after_ms,
                    window_ms: q.window_ms,
                    source: q.source.into(),
                })
                .collect()
        }

        /// The WIT verdict for a generic [`Kind`]($crate::generic::Kind).
        $vis fn verdict(kind: $crate::generic::Kind) -> $verdict {
            use $crate::generic::Kind as K;
            type V = $verdict;
            match kind {
                K::Success => V::Success,
                K::RateLimited => V::RateLimited,
                K::QuotaExhausted => V::QuotaExhausted,
                K::Overloaded => V::Overloaded,
                K::Transient => V::Transient,
                K::Conflict => V::Conflict,
                K::ClientError => V::ClientError,
                K::AuthError => V::AuthError,
                K::OutcomeUnknown => V::OutcomeUnknown,
            }
        }

        /// The generic [`Transport`]($crate::generic::Transport) for a WIT transport failure.
        $vis fn transport(failure: $transport) -> $crate::generic::Transport {
            use $crate::generic::Transport as T;
            type F = $transport;
            match failure {
                F::ConnectFailed => T::ConnectFailed,
                F::TimeoutBeforeSend => T::TimeoutBeforeSend,
                F::TimeoutAfterSend => T::TimeoutAfterSend,
                F::ResetAfterSend => T::ResetAfterSend,
            }
        }
    };
}

/// The delay a response asks for: `Retry-After` when present; else, on a 429 or 503, the
/// reset of an exhausted IETF quota, at most a day ([`MAX_DELAY_MS`]; a monthly quota's reset
/// may be weeks off, and the observation carries it whole).
pub fn requested_delay_ms(status: u16, headers: &Headers<'_>, now_ms: i64) -> Option<u64> {
    if let Some(ms) = retry_after_ms(headers, now_ms) {
        return Some(ms);
    }
    if status == 429 || status == 503 {
        return ratelimit::quotas(headers)
            .into_iter()
            .filter(|q| q.remaining == Some(0))
            .filter_map(|q| q.reset_after_ms)
            .max()
            .map(|ms| ms.min(MAX_DELAY_MS));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        assert_eq!(status_kind(200), Kind::Success);
        assert_eq!(status_kind(429), Kind::RateLimited);
        assert_eq!(status_kind(503), Kind::Overloaded);
        assert_eq!(status_kind(502), Kind::Transient);
        assert_eq!(status_kind(404), Kind::ClientError);
        assert_eq!(status_kind(401), Kind::AuthError);
        assert_eq!(status_kind(409), Kind::Conflict);
        assert_eq!(status_kind(999), Kind::OutcomeUnknown);
    }

    #[test]
    fn transport() {
        assert_eq!(transport_kind(Transport::ConnectFailed), Kind::Transient);
        assert_eq!(
            transport_kind(Transport::ResetAfterSend),
            Kind::OutcomeUnknown
        );
    }

    #[test]
    fn delay_from_exhausted_quota_when_no_retry_after() {
        let h = Headers::new([("RateLimit-Remaining", "0"), ("RateLimit-Reset", "7")]);
        assert_eq!(requested_delay_ms(429, &h, 0), Some(7000));
        assert_eq!(requested_delay_ms(200, &h, 0), None);
        let h = Headers::new([
            ("Retry-After", "3"),
            ("RateLimit-Remaining", "0"),
            ("RateLimit-Reset", "7"),
        ]);
        assert_eq!(
            requested_delay_ms(429, &h, 0),
            Some(3000),
            "Retry-After wins"
        );
    }

    #[test]
    fn a_monthly_quota_spent_asks_for_at_most_a_day() {
        let h = Headers::new([("RateLimit-Remaining", "0"), ("RateLimit-Reset", "1209600")]);
        assert_eq!(requested_delay_ms(429, &h, 0), Some(MAX_DELAY_MS));
        assert_eq!(ratelimit::quotas(&h)[0].reset_after_ms, Some(1_209_600_000));
    }
}

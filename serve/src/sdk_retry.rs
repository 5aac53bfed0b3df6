//! One retry layer: the sidecar's. An SDK that retries on its own multiplies every retry
//! the host already makes (and resends writes under new keys), so agents must set
//! `max_retries=0`. An SDK that retries anyway is detected and tagged: its answer carries
//! `x-sluice-sdk-retry`, a warning is logged once per agent, and
//! `sluice_serve_sdk_retries_total` counts them.
//!
//! The OpenAI and Anthropic SDKs (and every SDK generated the same way) number their
//! attempts in `x-stainless-retry-count`: anything above 0 is the SDK's own retry.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use hyper::HeaderMap;

/// The header the OpenAI and Anthropic SDKs number their attempts in (0: the first).
pub const RETRY_COUNT: &str = "x-stainless-retry-count";

/// Agents already warned about.
#[derive(Debug, Default)]
pub struct SdkRetries {
    warned: Mutex<HashSet<String>>,
}

impl SdkRetries {
    /// The SDK's retry number, when `headers` say the request is a retry by the SDK; logs
    /// and counts it.
    pub fn detect(&self, agent: &str, headers: &HeaderMap) -> Option<u32> {
        let n: u32 = headers
            .get(RETRY_COUNT)?
            .to_str()
            .ok()?
            .trim()
            .parse()
            .ok()?;
        if n == 0 {
            return None;
        }
        metrics::counter!(crate::metric_names::SDK_RETRIES, "agent" => agent.to_owned())
            .increment(1);
        let first = self
            .warned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(agent.to_owned());
        if first {
            tracing::warn!(
                agent = %sluice::printable::printable(agent),
                retry = n,
                "the agent's SDK retries on its own: set max_retries=0 (sluice already retries, \
                 within the quota and the call's budget)"
            );
        }
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_retry_count_above_zero_is_an_sdk_retry() {
        let r = SdkRetries::default();
        let mut h = HeaderMap::new();
        assert_eq!(r.detect("bot", &h), None);
        h.insert(RETRY_COUNT, "0".parse().unwrap());
        assert_eq!(r.detect("bot", &h), None);
        h.insert(RETRY_COUNT, "2".parse().unwrap());
        assert_eq!(r.detect("bot", &h), Some(2));
    }
}

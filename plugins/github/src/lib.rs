//! The GitHub REST API plugin.
//!
//! - Quotas: `x-ratelimit-{limit,remaining,used,reset,resource}`; `reset` is in epoch
//!   seconds, `resource` (`core`, `search`, `graphql`...) names the bucket: the scope.
//! - GitHub answers rate limits with 403 as well as 429. A 403 or 429 that carries
//!   `retry-after` (a secondary limit), or `x-ratelimit-remaining: 0` (the primary limit),
//!   or says so in its message, is rate-limited, not an auth error. The primary limit's
//!   delay is its reset; a secondary limit without `retry-after` waits a minute, as GitHub
//!   asks.
//! - Cost: one request, and GitHub's secondary-limit points (1 for a read, 5 for a write).
//! - Scopes: the resource a request counts in (`core`, `search`, `code_search`, `graphql`,
//!   ...), predicted from its route: the same name its response's observation carries.
//! - Uncertain writes: GitHub takes no idempotency key, so a created issue whose answer was
//!   lost is looked for by the client reference its body carries, in the repository's issue
//!   list ([`reconcile`]); never resent on the chance that it did not happen.

mod classify;
pub mod reconcile;
mod resource;

use sluice_plugin_sdk::headers::Headers;
use sluice_plugin_sdk::time::reset_after;
use sluice_plugin_sdk::{
    Classification, Cost, Description, Dimension, Observation, Outcome, Plugin, PolicyError,
    ReconcilePlan, Reconciliation, Request, Response, UncertainWrite, headers, observation,
};

/// The GitHub policy.
#[derive(Debug)]
pub struct GitHub;

impl Plugin for GitHub {
    fn describe() -> Description {
        Description {
            name: "github".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider: "GitHub".into(),
            hosts: vec!["api.github.com".into()],
            routes: vec!["/*".into()],
            read_routes: vec![],
            error_shape: Some(sluice_plugin_sdk::ErrorShape::Github),
            refill: None,
        }
    }

    fn classify(req: &Request, outcome: &Outcome) -> Result<Classification, PolicyError> {
        Ok(classify::classify(req, outcome))
    }

    fn parse_quota(req: &Request, resp: &Response) -> Result<Vec<Observation>, PolicyError> {
        Ok(primary(&headers(&resp.headers), req.now_ms)
            .into_iter()
            .collect())
    }

    fn scopes(req: &Request) -> Result<Vec<String>, PolicyError> {
        Ok(vec![resource::of(&req.method, &req.url).to_owned()])
    }

    fn estimate_cost(req: &Request) -> Result<Vec<Cost>, PolicyError> {
        let points = if matches!(req.method.as_str(), "GET" | "HEAD" | "OPTIONS") {
            1
        } else {
            5
        };
        Ok(vec![
            Cost {
                dimension: Dimension::Requests,
                amount: 1,
            },
            Cost {
                dimension: Dimension::Other("secondary-points".into()),
                amount: points,
            },
        ])
    }

    fn reconcile(write: &UncertainWrite) -> Result<ReconcilePlan, PolicyError> {
        Ok(reconcile::plan(write))
    }

    fn read_reconciliation(
        write: &UncertainWrite,
        resp: &Response,
    ) -> Result<Reconciliation, PolicyError> {
        Ok(reconcile::read(write, resp))
    }
}

/// The primary rate limit's observation, if the headers carry one.
pub fn primary(h: &Headers<'_>, now_ms: i64) -> Option<Observation> {
    let limit = h.get_u64("x-ratelimit-limit");
    let remaining = h.get_u64("x-ratelimit-remaining");
    let used = h.get_u64("x-ratelimit-used");
    if limit.is_none() && remaining.is_none() && used.is_none() {
        return None;
    }
    let mut o = observation(
        Dimension::Requests,
        "x-ratelimit-limit,x-ratelimit-remaining,x-ratelimit-used,x-ratelimit-reset,x-ratelimit-resource",
    );
    o.scope = h
        .get("x-ratelimit-resource")
        .filter(|r| !r.is_empty() && r.len() <= 64)
        .map(str::to_owned);
    o.limit = limit;
    o.remaining = remaining;
    o.used = used;
    o.reset_after_ms = reset_at_ms(h).map(|at| reset_after(at, now_ms));
    Some(o)
}

/// `x-ratelimit-reset` (epoch seconds) in epoch milliseconds.
pub fn reset_at_ms(h: &Headers<'_>) -> Option<i64> {
    h.get_u64("x-ratelimit-reset")
        .and_then(|s| i64::try_from(s).ok())
        .map(|s| s.saturating_mul(1000))
}

sluice_plugin_sdk::export_plugin!(GitHub);

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::test::request;
    use sluice_plugin_sdk::{RequestClass, ResponsePart};

    #[test]
    fn writes_cost_five_secondary_points() {
        let mut r = request("POST", "https://api.github.com/repos/o/r/issues", &[], "");
        r.class = RequestClass::UncertainWrite;
        let c = GitHub::estimate_cost(&r).unwrap();
        assert_eq!(c[1].amount, 5);
    }

    #[test]
    fn a_search_counts_in_the_scope_its_response_reports() {
        let r = request("GET", "https://api.github.com/search/issues?q=bug", &[], "");
        let plan = GitHub::plan_request(&r).unwrap();
        let resp = Response {
            status: 200,
            headers:
                "x-ratelimit-limit:30\nx-ratelimit-remaining:29\nx-ratelimit-resource:search\n"
                    .into(),
            body: vec![],
        };
        let reading =
            GitHub::read_response(&r, &Outcome::Response(resp), ResponsePart::Complete).unwrap();
        assert_eq!(plan.scopes, vec!["search".to_owned()]);
        assert_eq!(reading.observations[0].scope.as_deref(), Some("search"));
    }

    #[test]
    fn primary_reset_is_relative_to_now() {
        let h = Headers::new([("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "100")]);
        assert_eq!(primary(&h, 40_000).unwrap().reset_after_ms, Some(60_000));
        assert_eq!(primary(&h, 200_000).unwrap().reset_after_ms, Some(0));
    }
}

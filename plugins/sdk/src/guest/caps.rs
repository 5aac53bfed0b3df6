//! The host's caps on what a plugin returns, applied on the way out.
//!
//! The host checks every answer against caps (string and list lengths, names, delays,
//! amounts; docs/plugins.md, "The plugin sandbox") and treats an answer over one as invalid output: it
//! answers that call with its built-in policy, and quarantines a plugin that fails three
//! times in a row. The figures a plugin reports come from outside — a client's `max_tokens`,
//! a provider's headers and bodies — so without these caps one absurd request or response
//! could get a plugin quarantined for every tenant. [`export_plugin!`](crate::export_plugin)
//! therefore fits every answer to the caps before it leaves the component: amounts and delays
//! are clamped, strings and lists cut, a name that cannot be cut (an over-long scope or
//! dimension) dropped, and a status query that cannot be sent settled as unsupported. A
//! quota window longer than the host takes (a month) is dropped rather than clamped: the
//! same limit over a shorter window would let through more than the provider allows.

use super::{Cost, Dimension, Observation, Reading, ReconcilePlan, Reconciliation, RequestPlan};
/// The caps, as the host holds answers to them (`sluice-contract`, shared with the host).
pub use sluice_contract::caps::{
    MAX_AMOUNT, MAX_BODY_BYTES, MAX_DELAY_MS, MAX_DIMENSION_BYTES, MAX_LIST_LEN, MAX_NAME_BYTES,
    MAX_SCOPES, MAX_STRING_BYTES, MAX_WINDOW_MS,
};

/// `s` cut to at most `max` bytes, on a character boundary.
fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

fn dimension_fits(d: &Dimension) -> bool {
    match d {
        Dimension::Other(name) => !name.is_empty() && name.len() <= MAX_DIMENSION_BYTES,
        _ => true,
    }
}

/// Amounts clamped, each dimension once (the first), over-long dimension names dropped.
fn costs(costs: Vec<Cost>) -> Vec<Cost> {
    let mut out: Vec<Cost> = Vec::with_capacity(costs.len().min(MAX_LIST_LEN));
    for c in costs {
        if out.len() == MAX_LIST_LEN {
            break;
        }
        if dimension_fits(&c.dimension) && !out.iter().any(|o| o.dimension == c.dimension) {
            out.push(Cost {
                dimension: c.dimension,
                amount: c.amount.min(MAX_AMOUNT),
            });
        }
    }
    out
}

fn name(n: String) -> Option<String> {
    (!n.is_empty() && n.len() <= MAX_NAME_BYTES).then_some(n)
}

/// A plan within the caps: the tenant cut, a deadline before the epoch dropped, costs
/// clamped, scopes that are empty, too long or repeated dropped.
pub fn fit_plan(p: RequestPlan) -> RequestPlan {
    let mut scopes: Vec<String> = Vec::with_capacity(p.scopes.len().min(MAX_SCOPES));
    for s in p.scopes.into_iter().filter_map(name) {
        if scopes.len() < MAX_SCOPES && !scopes.contains(&s) {
            scopes.push(s);
        }
    }
    RequestPlan {
        class: p.class,
        tenant: p
            .tenant
            .map(|t| cut(t, MAX_NAME_BYTES))
            .filter(|t| !t.is_empty()),
        deadline_ms: p.deadline_ms.filter(|d| *d >= 0),
        cost: costs(p.cost),
        scopes,
    }
}

fn observation(o: Observation) -> Option<Observation> {
    if !dimension_fits(&o.dimension) {
        return None;
    }
    let amount = |v: Option<u64>| v.map(|v| v.min(MAX_AMOUNT));
    Some(Observation {
        scope: o.scope.and_then(name),
        dimension: o.dimension,
        limit: amount(o.limit),
        remaining: amount(o.remaining),
        used: amount(o.used),
        reset_after_ms: o.reset_after_ms.map(|v| v.min(MAX_WINDOW_MS)),
        window_ms: o.window_ms.filter(|w| *w <= MAX_WINDOW_MS),
        source: cut(o.source, MAX_STRING_BYTES),
    })
}

/// A reading within the caps: the delay clamped, the error code cut, observations and usage
/// fitted (an observation of an over-long dimension name dropped).
pub fn fit_reading(mut r: Reading) -> Reading {
    let c = &mut r.classification;
    c.retry_after_ms = c.retry_after_ms.map(|d| d.min(MAX_DELAY_MS));
    c.error_code = c.error_code.take().map(|e| cut(e, MAX_STRING_BYTES));
    // A scope the host would refuse is no scope: the observations' scopes stand.
    if let Some(crate::LimitedScope::Named(s)) = &c.scope
        && (s.is_empty() || s.len() > MAX_NAME_BYTES)
    {
        c.scope = None;
    }
    Reading {
        classification: r.classification,
        observations: r
            .observations
            .into_iter()
            .filter_map(observation)
            .take(MAX_LIST_LEN)
            .collect(),
        usage: costs(r.usage),
    }
}

/// Counted costs within the caps: each dimension once, at most the caps' number, amounts
/// clamped.
pub fn fit_costs(c: Vec<Cost>) -> Vec<Cost> {
    costs(c)
}

/// A reconciliation plan within the caps: a status query that the host could not send as
/// written (a URL or body over its cap) becomes unsupported, saying why.
pub fn fit_reconcile_plan(p: ReconcilePlan) -> ReconcilePlan {
    match p {
        ReconcilePlan::Query(q)
            if q.url.len() > MAX_STRING_BYTES || q.body.len() > MAX_BODY_BYTES =>
        {
            ReconcilePlan::Unsupported(format!(
                "the status query ({} bytes of URL, {} of body) is over the host's caps",
                q.url.len(),
                q.body.len()
            ))
        }
        ReconcilePlan::Unsupported(why) => ReconcilePlan::Unsupported(cut(why, MAX_STRING_BYTES)),
        other => other,
    }
}

/// A reconciliation within the caps: an operation id too long to be one is not trusted.
pub fn fit_reconciliation(r: Reconciliation) -> Reconciliation {
    match r {
        Reconciliation::Found(Some(id)) if id.len() > MAX_STRING_BYTES => Reconciliation::Unknown(
            format!("the provider named an operation id of {} bytes", id.len()),
        ),
        Reconciliation::Unknown(why) => Reconciliation::Unknown(cut(why, MAX_STRING_BYTES)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PriorityClass, StatusQuery, amount};

    #[test]
    fn an_absurd_max_tokens_is_clamped_not_refused() {
        let plan = fit_plan(RequestPlan {
            class: PriorityClass::Standard,
            tenant: Some("t".repeat(300)),
            deadline_ms: Some(-1),
            cost: vec![
                amount(Dimension::OutputTokens, 281_474_976_710_656),
                amount(Dimension::OutputTokens, 5),
                amount(Dimension::Other("d".repeat(65)), 1),
            ],
            scopes: vec!["a".into(), "a".into(), String::new(), "s".repeat(257)],
        });
        assert_eq!(plan.cost, vec![amount(Dimension::OutputTokens, MAX_AMOUNT)]);
        assert_eq!(plan.tenant.map(|t| t.len()), Some(MAX_NAME_BYTES));
        assert_eq!(plan.deadline_ms, None);
        assert_eq!(plan.scopes, vec!["a".to_owned()]);
    }

    #[test]
    fn a_provider_s_absurd_figures_are_clamped() {
        let mut o = crate::observation(Dimension::Requests, "x-ratelimit-limit");
        o.limit = Some(99_999_999_999_999);
        o.reset_after_ms = Some(u64::MAX);
        let r = fit_reading(Reading {
            classification: crate::Classification {
                verdict: crate::Verdict::RateLimited,
                retry_after_ms: Some(u64::MAX),
                error_code: Some("é".repeat(2000)),
                should_retry: None,
                scope: None,
            },
            observations: vec![o; 70],
            usage: vec![amount(Dimension::Tokens, u64::MAX)],
        });
        assert_eq!(r.classification.retry_after_ms, Some(MAX_DELAY_MS));
        assert!(r.classification.error_code.unwrap().len() <= MAX_STRING_BYTES);
        assert_eq!(r.observations.len(), MAX_LIST_LEN);
        assert_eq!(r.observations[0].limit, Some(MAX_AMOUNT));
        assert_eq!(r.observations[0].reset_after_ms, Some(MAX_WINDOW_MS));
        assert_eq!(r.usage[0].amount, MAX_AMOUNT);
    }

    #[test]
    fn a_monthly_window_is_kept_and_a_longer_one_dropped_not_shortened() {
        let window = |ms: u64| {
            let mut o = crate::observation(Dimension::Tokens, "ratelimit-policy");
            o.limit = Some(1_000_000);
            o.window_ms = Some(ms);
            let r = fit_reading(Reading {
                classification: crate::Classification {
                    verdict: crate::Verdict::Success,
                    retry_after_ms: None,
                    error_code: None,
                    should_retry: None,
                    scope: None,
                },
                observations: vec![o],
                usage: Vec::new(),
            });
            r.observations[0].window_ms
        };
        assert_eq!(window(30 * 86_400_000), Some(30 * 86_400_000));
        assert_eq!(window(MAX_WINDOW_MS), Some(MAX_WINDOW_MS));
        assert_eq!(window(MAX_WINDOW_MS + 1), None);
    }

    #[test]
    fn a_status_query_over_the_caps_is_unsupported() {
        let q = |url: String| {
            ReconcilePlan::Query(StatusQuery {
                method: "GET".into(),
                url,
                headers: String::new(),
                body: Vec::new(),
            })
        };
        let long = format!("https://api.stripe.com/v1/{}", "x".repeat(2048));
        assert!(matches!(
            fit_reconcile_plan(q(long)),
            ReconcilePlan::Unsupported(_)
        ));
        let short = "https://api.stripe.com/v1/charges/ch_1".to_owned();
        assert_eq!(fit_reconcile_plan(q(short.clone())), q(short));
        let found = fit_reconciliation(Reconciliation::Found(Some("i".repeat(3000))));
        assert!(matches!(found, Reconciliation::Unknown(_)));
    }
}

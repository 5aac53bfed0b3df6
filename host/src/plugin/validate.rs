//! Checks on everything a plugin returns. The canonical ABI already guarantees types; these
//! checks add the caps and ranges the host relies on, so a plugin cannot hand the scheduler
//! a year-long delay or quota window, a hundred scopes to charge, an absurd token count or a
//! megabyte error code.
//!
//! The module is public only with the `fuzzing` feature, for the fuzz targets in `fuzz/`.

use super::limits::Caps;
use crate::contract::{
    Classification, Cost, Description, Observation, Reading, ReconcilePlan, Reconciliation,
    ReportedDimension, RequestPlan,
};

/// `Ok`, or what is wrong with the output, for [`super::Failure::InvalidOutput`].
pub type Check = Result<(), String>;

fn string(field: &str, s: &str, caps: &Caps) -> Check {
    if s.len() > caps.max_string_bytes {
        return Err(format!(
            "{field} is {} bytes, over the cap of {}",
            s.len(),
            caps.max_string_bytes
        ));
    }
    Ok(())
}

fn list<T>(field: &str, l: &[T], caps: &Caps) -> Check {
    if l.len() > caps.max_list_len {
        return Err(format!(
            "{field} has {} entries, over the cap of {}",
            l.len(),
            caps.max_list_len
        ));
    }
    Ok(())
}

fn amount(field: &str, v: Option<u64>, max: u64) -> Check {
    match v {
        Some(v) if v > max => Err(format!("{field} is {v}, over the cap of {max}")),
        _ => Ok(()),
    }
}

fn dimension(d: &ReportedDimension, caps: &Caps) -> Check {
    if let ReportedDimension::Other(name) = d {
        let max = sluice_contract::caps::MAX_DIMENSION_BYTES;
        if name.is_empty() || name.len() > max {
            return Err(format!("dimension name {name:?} must be 1 to {max} bytes"));
        }
        string("dimension", name, caps)?;
    }
    Ok(())
}

fn headers(field: &str, block: &str, caps: &Caps) -> Check {
    string(field, block, caps)?;
    let pairs: Vec<(&str, &str)> = crate::headers::field_pairs(block).collect();
    list(field, &pairs, caps)?;
    crate::headers::encode_fields(pairs)
        .map(drop)
        .map_err(|e| format!("{field}: {e}"))
}

/// Cuts `s` to at most `max` bytes on a character boundary.
pub fn truncate(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// Checks `describe`'s answer: a name, and strings and lists within the caps.
pub fn description(d: &Description, caps: &Caps) -> Check {
    if d.name.is_empty() {
        return Err("name is empty".into());
    }
    for (f, s) in [
        ("name", &d.name),
        ("version", &d.version),
        ("provider", &d.provider),
    ] {
        string(f, s, caps)?;
    }
    list("hosts", &d.hosts, caps)?;
    list("routes", &d.routes, caps)?;
    list("read-routes", &d.read_routes, caps)?;
    for s in d.hosts.iter().chain(&d.routes).chain(&d.read_routes) {
        string("host or route", s, caps)?;
    }
    for r in &d.read_routes {
        if r.split_once(' ')
            .is_none_or(|(m, p)| m.is_empty() || !p.starts_with('/') || p.matches('*').count() > 1)
        {
            return Err(format!(
                "read-routes: {r:?} is not `METHOD /path` (one `*` at most, matching any run of characters)"
            ));
        }
    }
    Ok(())
}

fn classification(c: &Classification, caps: &Caps) -> Check {
    amount("retry-after-ms", c.retry_after_ms, caps.max_delay_ms)?;
    if let Some(code) = &c.error_code {
        string("error-code", code, caps)?;
    }
    if let Some(crate::contract::LimitedScope::Named(scope)) = &c.scope {
        name("classification scope", scope, caps)?;
    }
    Ok(())
}

/// A tenant's or a scope's name: not empty, at most [`Caps::max_name_bytes`].
fn name(field: &str, s: &str, caps: &Caps) -> Check {
    if s.is_empty() {
        return Err(format!("{field} is empty"));
    }
    if s.len() > caps.max_name_bytes {
        return Err(format!(
            "{field} is {} bytes, over the cap of {}",
            s.len(),
            caps.max_name_bytes
        ));
    }
    Ok(())
}

fn observations(o: &[Observation], caps: &Caps) -> Check {
    list("observations", o, caps)?;
    for ob in o {
        dimension(&ob.dimension, caps)?;
        string("source", &ob.source, caps)?;
        if let Some(s) = &ob.scope {
            name("observation scope", s, caps)?;
        }
        for (f, v) in [
            ("limit", ob.limit),
            ("remaining", ob.remaining),
            ("used", ob.used),
        ] {
            amount(f, v, caps.max_amount)?;
        }
        amount("reset-after-ms", ob.reset_after_ms, caps.max_window_ms)?;
        amount("window-ms", ob.window_ms, caps.max_window_ms)?;
    }
    Ok(())
}

/// Amounts per dimension (a plan's cost, a reading's usage): each dimension at most once,
/// each amount within [`Caps::max_amount`].
fn costs(field: &str, c: &[Cost], caps: &Caps) -> Check {
    list(field, c, caps)?;
    for (i, cost) in c.iter().enumerate() {
        dimension(&cost.dimension, caps)?;
        amount(field, Some(cost.amount), caps.max_amount)?;
        if c[..i]
            .iter()
            .any(|earlier| earlier.dimension == cost.dimension)
        {
            return Err(format!(
                "{field} names the dimension {:?} twice",
                cost.dimension
            ));
        }
    }
    Ok(())
}

/// Checks a `plan-request` answer: tenant and scope names, a deadline not before the epoch,
/// costs within the caps and each dimension once, few distinct scopes.
pub fn request_plan(p: &RequestPlan, caps: &Caps) -> Check {
    if let Some(t) = &p.tenant {
        name("tenant", t, caps)?;
    }
    if let Some(d) = p.deadline_ms
        && d < 0
    {
        return Err(format!("deadline-ms is {d}, before the Unix epoch"));
    }
    costs("cost", &p.cost, caps)?;
    if p.scopes.len() > caps.max_scopes {
        return Err(format!(
            "scopes has {} entries, over the cap of {}",
            p.scopes.len(),
            caps.max_scopes
        ));
    }
    for (i, s) in p.scopes.iter().enumerate() {
        name("scope", s, caps)?;
        if p.scopes[..i].contains(s) {
            return Err(format!("scope {s:?} is named twice"));
        }
    }
    Ok(())
}

/// Checks a `read-response` answer: the delay, the observations and the usage within the caps.
pub fn reading(r: &Reading, caps: &Caps) -> Check {
    classification(&r.classification, caps)?;
    observations(&r.observations, caps)?;
    costs("usage", &r.usage, caps)
}

/// Checks a `count-stream` answer: costs within the caps, each dimension once.
#[allow(
    clippy::ptr_arg,
    reason = "the shape of every check: a reference to the answer"
)]
pub fn counted(c: &Vec<Cost>, caps: &Caps) -> Check {
    costs("count", c, caps)
}

/// Checks a `reconcile` answer: a status query must be an absolute http(s) URL with a method.
pub fn reconcile_plan(p: &ReconcilePlan, caps: &Caps) -> Check {
    match p {
        ReconcilePlan::Query(q) => {
            if q.method.is_empty() || !q.method.bytes().all(|b| b.is_ascii_uppercase()) {
                return Err(format!(
                    "status query method {:?} is not an HTTP method",
                    q.method
                ));
            }
            if !(q.url.starts_with("https://") || q.url.starts_with("http://")) {
                return Err(format!(
                    "status query URL {:?} is not absolute http(s)",
                    truncate(&q.url, 80)
                ));
            }
            string("status query URL", &q.url, caps)?;
            headers("status query headers", &q.headers, caps)?;
            if q.body.len() > caps.max_body_bytes {
                return Err(format!(
                    "status query body is {} bytes, over the cap of {}",
                    q.body.len(),
                    caps.max_body_bytes
                ));
            }
            Ok(())
        }
        ReconcilePlan::ResendSameKey => Ok(()),
        ReconcilePlan::Unsupported(reason) => string("reason", reason, caps),
    }
}

/// Checks a `read-reconciliation` answer: strings within the caps.
pub fn reconciliation(r: &Reconciliation, caps: &Caps) -> Check {
    match r {
        Reconciliation::Found(Some(id)) => string("operation id", id, caps),
        Reconciliation::Unknown(reason) => string("reason", reason, caps),
        Reconciliation::Found(None) | Reconciliation::NotFound => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{PriorityClass, StatusQuery};

    fn caps() -> Caps {
        Caps::default()
    }

    fn plan() -> RequestPlan {
        RequestPlan {
            class: PriorityClass::Standard,
            tenant: Some("acme".into()),
            deadline_ms: Some(1),
            cost: vec![Cost {
                dimension: ReportedDimension::Requests,
                amount: 1,
            }],
            scopes: vec!["model:gpt-4o".into()],
        }
    }

    #[test]
    fn a_plan_names_few_short_distinct_scopes() {
        assert!(request_plan(&plan(), &caps()).is_ok());
        let p = RequestPlan {
            scopes: (0..17).map(|i| format!("s{i}")).collect(),
            ..plan()
        };
        assert!(
            request_plan(&p, &caps())
                .unwrap_err()
                .contains("scopes has 17 entries")
        );
        let p = RequestPlan {
            scopes: vec!["m".repeat(257)],
            ..plan()
        };
        assert!(
            request_plan(&p, &caps())
                .unwrap_err()
                .contains("scope is 257 bytes")
        );
        let p = RequestPlan {
            scopes: vec!["a".into(), "a".into()],
            ..plan()
        };
        assert!(request_plan(&p, &caps()).unwrap_err().contains("twice"));
        let p = RequestPlan {
            scopes: vec![String::new()],
            ..plan()
        };
        assert!(request_plan(&p, &caps()).unwrap_err().contains("empty"));
    }

    #[test]
    fn a_plan_s_tenant_deadline_and_cost_are_bounded() {
        let p = RequestPlan {
            tenant: Some("t".repeat(300)),
            ..plan()
        };
        assert!(request_plan(&p, &caps()).unwrap_err().contains("tenant"));
        let p = RequestPlan {
            deadline_ms: Some(-5),
            ..plan()
        };
        assert!(request_plan(&p, &caps()).unwrap_err().contains("deadline"));
        let p = RequestPlan {
            cost: vec![Cost {
                dimension: ReportedDimension::Tokens,
                amount: caps().max_amount + 1,
            }],
            ..plan()
        };
        assert!(request_plan(&p, &caps()).unwrap_err().contains("cost is"));
    }

    #[test]
    fn usage_amounts_are_capped_and_name_each_dimension_once() {
        let reading = |usage: Vec<Cost>| Reading {
            classification: Classification {
                verdict: crate::contract::Verdict::Success,
                retry_after_ms: None,
                error_code: None,
                should_retry: None,
                scope: None,
            },
            observations: vec![],
            usage,
        };
        let tokens = |amount| Cost {
            dimension: ReportedDimension::Tokens,
            amount,
        };
        assert!(super::reading(&reading(vec![tokens(10)]), &caps()).is_ok());
        assert!(
            super::reading(&reading(vec![tokens(u64::MAX)]), &caps())
                .unwrap_err()
                .contains("usage is")
        );
        assert!(
            super::reading(&reading(vec![tokens(1), tokens(2)]), &caps())
                .unwrap_err()
                .contains("twice")
        );
    }

    #[test]
    fn status_queries_must_be_absolute_http_with_a_method() {
        let q = |method: &str, url: &str| {
            ReconcilePlan::Query(StatusQuery {
                method: method.into(),
                url: url.into(),
                headers: String::new(),
                body: vec![],
            })
        };
        assert!(reconcile_plan(&q("GET", "https://api.stripe.com/v1/x"), &caps()).is_ok());
        assert!(reconcile_plan(&q("get", "https://api.stripe.com/v1/x"), &caps()).is_err());
        assert!(reconcile_plan(&q("GET", "file:///etc/passwd"), &caps()).is_err());
        assert!(reconcile_plan(&q("", "https://x"), &caps()).is_err());
    }

    #[test]
    fn a_quota_window_and_its_reset_may_run_31_days_and_not_32() {
        const DAY_MS: u64 = 86_400_000;
        let observed = |window_ms: u64, reset_after_ms: u64| Reading {
            classification: Classification {
                verdict: crate::contract::Verdict::Success,
                retry_after_ms: None,
                error_code: None,
                should_retry: None,
                scope: None,
            },
            observations: vec![Observation {
                scope: None,
                dimension: ReportedDimension::Tokens,
                limit: Some(1_000_000),
                remaining: Some(999_000),
                used: None,
                reset_after_ms: Some(reset_after_ms),
                window_ms: Some(window_ms),
                source: "ratelimit-policy,ratelimit".into(),
            }],
            usage: vec![],
        };
        assert_eq!(caps().max_window_ms, 31 * DAY_MS);
        assert!(reading(&observed(30 * DAY_MS, 14 * DAY_MS), &caps()).is_ok());
        assert!(reading(&observed(31 * DAY_MS, 31 * DAY_MS), &caps()).is_ok());
        let window = reading(&observed(32 * DAY_MS, DAY_MS), &caps()).unwrap_err();
        assert!(window.contains("window-ms is 2764800000"), "{window}");
        let reset = reading(&observed(DAY_MS, 32 * DAY_MS), &caps()).unwrap_err();
        assert!(reset.contains("reset-after-ms"), "{reset}");
        // A retry's delay keeps its cap of a day.
        assert_eq!(caps().max_delay_ms, DAY_MS);
    }

    #[test]
    fn caps_on_strings_and_delays() {
        let c = Classification {
            verdict: crate::contract::Verdict::Success,
            retry_after_ms: Some(caps().max_delay_ms + 1),
            error_code: None,
            should_retry: None,
            scope: None,
        };
        assert!(
            classification(&c, &caps())
                .unwrap_err()
                .contains("retry-after-ms")
        );
        let c = Classification {
            retry_after_ms: None,
            error_code: Some("e".repeat(3000)),
            ..c
        };
        assert!(
            classification(&c, &caps())
                .unwrap_err()
                .contains("error-code is 3000 bytes")
        );
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("abc", 10), "abc");
    }
}

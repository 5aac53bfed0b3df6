//! Checks on everything a plugin returns. The canonical ABI already guarantees types; these
//! checks add the caps and ranges the host relies on, so a plugin cannot hand the scheduler
//! a year-long delay, a zero weight or a megabyte error code.

use super::limits::Caps;
use crate::policy::{
    Classification, Cost, Description, Dimension, Observation, Priority, ReconcilePlan,
    Reconciliation,
};

type Check = Result<(), String>;

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

fn dimension(d: &Dimension, caps: &Caps) -> Check {
    if let Dimension::Other(name) = d {
        if name.is_empty() || name.len() > 64 {
            return Err(format!("dimension name {name:?} must be 1 to 64 bytes"));
        }
        string("dimension", name, caps)?;
    }
    Ok(())
}

fn headers(field: &str, block: &str, caps: &Caps) -> Check {
    string(field, block, caps)?;
    let pairs: Vec<(&str, &str)> = crate::policy::field_pairs(block).collect();
    list(field, &pairs, caps)?;
    crate::policy::encode_fields(pairs)
        .map(drop)
        .map_err(|e| format!("{field}: {e}"))
}

/// Cuts `s` to at most `max` bytes on a character boundary.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

pub(crate) fn description(d: &Description, caps: &Caps) -> Check {
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
    for s in d.hosts.iter().chain(&d.routes) {
        string("host or route", s, caps)?;
    }
    Ok(())
}

pub(crate) fn classification(c: &Classification, caps: &Caps) -> Check {
    amount("retry-after-ms", c.retry_after_ms, caps.max_delay_ms)?;
    if let Some(code) = &c.error_code {
        string("error-code", code, caps)?;
    }
    Ok(())
}

pub(crate) fn observations(o: &[Observation], caps: &Caps) -> Check {
    list("observations", o, caps)?;
    for ob in o {
        dimension(&ob.dimension, caps)?;
        string("source", &ob.source, caps)?;
        if let Some(s) = &ob.scope {
            string("scope", s, caps)?;
        }
        for (f, v) in [
            ("limit", ob.limit),
            ("remaining", ob.remaining),
            ("used", ob.used),
        ] {
            amount(f, v, caps.max_amount)?;
        }
        amount("reset-after-ms", ob.reset_after_ms, caps.max_delay_ms)?;
        amount("window-ms", ob.window_ms, caps.max_delay_ms)?;
    }
    Ok(())
}

pub(crate) fn priority(p: &Priority, caps: &Caps) -> Check {
    if p.weight == 0 || p.weight > 1000 {
        return Err(format!("weight is {}, must be 1 to 1000", p.weight));
    }
    if let Some(t) = &p.tenant {
        string("tenant", t, caps)?;
    }
    Ok(())
}

pub(crate) fn costs(c: &[Cost], caps: &Caps) -> Check {
    list("costs", c, caps)?;
    for cost in c {
        dimension(&cost.dimension, caps)?;
        amount("amount", Some(cost.amount), caps.max_amount)?;
    }
    Ok(())
}

pub(crate) fn reconcile_plan(p: &ReconcilePlan, caps: &Caps) -> Check {
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

pub(crate) fn reconciliation(r: &Reconciliation, caps: &Caps) -> Check {
    match r {
        Reconciliation::Found(Some(id)) => string("operation id", id, caps),
        Reconciliation::Unknown(reason) => string("reason", reason, caps),
        Reconciliation::Found(None) | Reconciliation::NotFound => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{PriorityClass, StatusQuery};

    fn caps() -> Caps {
        Caps::default()
    }

    #[test]
    fn weights_must_be_between_one_and_a_thousand() {
        let p = |weight| Priority {
            class: PriorityClass::Standard,
            tenant: None,
            weight,
            deadline_ms: None,
        };
        assert!(priority(&p(0), &caps()).is_err());
        assert!(priority(&p(1), &caps()).is_ok());
        assert!(priority(&p(1001), &caps()).is_err());
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
    fn caps_on_strings_and_delays() {
        let c = Classification {
            verdict: crate::policy::Verdict::Success,
            retry_after_ms: Some(caps().max_delay_ms + 1),
            error_code: None,
            should_retry: None,
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

//! The IETF rate-limit fields (draft-ietf-httpapi-ratelimit-headers), in both generations:
//!
//! - the older separate fields `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`
//!   (delta seconds), which many APIs still send (also under `X-RateLimit-*` names);
//! - the newer structured fields `RateLimit-Policy: "name";q=100;w=60` and
//!   `RateLimit: "name";r=50;t=30` (RFC 9651 lists), joined by policy name.
//!
//! A malformed field is ignored, never guessed at. The structured form wins when both are
//! present, as the draft says.
//!
//! Windows and resets run up to a month ([`MAX_WINDOW_MS`]): an API's monthly quota is read
//! as one. A reset further off is clamped to a month (the next answer says it again); a
//! window longer than a month is left out, never shortened, since the same limit over a
//! shorter window would let through many times what the provider allows.

use crate::headers::Headers;
use crate::time::MAX_WINDOW_MS;

/// What a quota unit counts, as the structured fields name it (`qu`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// `requests` (the default).
    Requests,
    /// `concurrent-requests`.
    Concurrency,
    /// Any other unit, such as `content-bytes`.
    Other(String),
}

/// One quota as the IETF fields describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quota {
    /// The policy's name (`None` for the older unnamed fields).
    pub policy: Option<String>,
    /// What the quota counts.
    pub unit: Unit,
    /// The quota per window.
    pub limit: Option<u64>,
    /// What is left in the current window.
    pub remaining: Option<u64>,
    /// Milliseconds until the window resets.
    pub reset_after_ms: Option<u64>,
    /// The window's length in milliseconds.
    pub window_ms: Option<u64>,
    /// The header names the figures came from.
    pub source: &'static str,
}

/// Reads the quotas the IETF fields report: the structured form when present, else the older
/// separate fields under `prefix` (`ratelimit` or `x-ratelimit`).
pub fn quotas(headers: &Headers<'_>) -> Vec<Quota> {
    let structured = structured(headers);
    if !structured.is_empty() {
        return structured;
    }
    ["ratelimit", "x-ratelimit"]
        .iter()
        .find_map(|p| separate(headers, p))
        .into_iter()
        .collect()
}

/// The older separate fields under `prefix`: `{prefix}-limit`, `-remaining`, `-reset`.
pub fn separate(headers: &Headers<'_>, prefix: &str) -> Option<Quota> {
    let limit = headers
        .get(&format!("{prefix}-limit"))
        .and_then(first_integer);
    let remaining = headers.get_u64(&format!("{prefix}-remaining"));
    let reset_after_ms = headers
        .get_u64(&format!("{prefix}-reset"))
        .map(seconds_to_reset_ms);
    if limit.is_none() && remaining.is_none() && reset_after_ms.is_none() {
        return None;
    }
    Some(Quota {
        policy: None,
        unit: Unit::Requests,
        limit,
        remaining,
        reset_after_ms,
        window_ms: None,
        source: if prefix == "ratelimit" {
            "ratelimit-limit,ratelimit-remaining,ratelimit-reset"
        } else {
            "x-ratelimit-limit,x-ratelimit-remaining,x-ratelimit-reset"
        },
    })
}

/// Delta seconds until a reset, in milliseconds, clamped to [`MAX_WINDOW_MS`].
fn seconds_to_reset_ms(seconds: u64) -> u64 {
    seconds.saturating_mul(1000).min(MAX_WINDOW_MS)
}

/// `100` or the draft-03 form `100, 100;w=60`: the first item's integer.
fn first_integer(v: &str) -> Option<u64> {
    crate::headers::parse_u64(v.split([',', ';']).next()?)
}

/// The structured `RateLimit-Policy` and `RateLimit` fields, joined by policy name.
fn structured(headers: &Headers<'_>) -> Vec<Quota> {
    let mut out: Vec<Quota> = Vec::new();
    for (name, params) in headers.all("ratelimit-policy").flat_map(items) {
        let unit = match param_token(&params, "qu").as_deref() {
            None | Some("requests") => Unit::Requests,
            Some("concurrent-requests") => Unit::Concurrency,
            Some(other) => Unit::Other(other.to_owned()),
        };
        let Some(limit) = param_int(&params, "q") else {
            continue; // q is required: a policy without it is malformed.
        };
        out.push(Quota {
            policy: Some(name),
            unit,
            limit: Some(limit),
            remaining: None,
            reset_after_ms: None,
            window_ms: param_int(&params, "w")
                .map(|w| w.saturating_mul(1000))
                .filter(|w| *w <= MAX_WINDOW_MS),
            source: "ratelimit-policy,ratelimit",
        });
    }
    for (name, params) in headers.all("ratelimit").flat_map(items) {
        let remaining = param_int(&params, "r");
        let reset = param_int(&params, "t").map(seconds_to_reset_ms);
        if remaining.is_none() {
            continue; // r is required.
        }
        match out
            .iter_mut()
            .find(|q| q.policy.as_deref() == Some(name.as_str()))
        {
            Some(q) => {
                q.remaining = remaining;
                q.reset_after_ms = reset;
            }
            None => out.push(Quota {
                policy: Some(name),
                unit: Unit::Requests,
                limit: None,
                remaining,
                reset_after_ms: reset,
                window_ms: None,
                source: "ratelimit",
            }),
        }
    }
    out
}

type Params = Vec<(String, sfv::BareItem)>;

/// The members of a structured list field whose value is a string or token (the policy
/// name), with their parameters. A field that does not parse yields nothing.
fn items(value: &str) -> Vec<(String, Params)> {
    let Ok(list) = sfv::Parser::new(value).parse::<sfv::List>() else {
        return Vec::new();
    };
    list.into_iter()
        .filter_map(|entry| match entry {
            sfv::ListEntry::Item(item) => {
                let name = match &item.bare_item {
                    sfv::BareItem::String(s) => s.as_str().to_owned(),
                    sfv::BareItem::Token(t) => t.as_str().to_owned(),
                    _ => return None,
                };
                let params = item
                    .params
                    .iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                    .collect();
                Some((name, params))
            }
            sfv::ListEntry::InnerList(_) => None,
        })
        .collect()
}

fn param_int(params: &Params, key: &str) -> Option<u64> {
    let (_, v) = params.iter().find(|(k, _)| k == key)?;
    u64::try_from(i64::from(v.as_integer()?)).ok()
}

fn param_token(params: &Params, key: &str) -> Option<String> {
    let (_, v) = params.iter().find(|(k, _)| k == key)?;
    v.as_token()
        .map(|t| t.as_str().to_owned())
        .or_else(|| v.as_string().map(|s| s.as_str().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_fields() {
        let h = Headers::new([
            ("RateLimit-Limit", "100"),
            ("RateLimit-Remaining", "7"),
            ("RateLimit-Reset", "30"),
        ]);
        let q = quotas(&h);
        assert_eq!(q.len(), 1);
        assert_eq!(
            (q[0].limit, q[0].remaining, q[0].reset_after_ms),
            (Some(100), Some(7), Some(30_000))
        );
    }

    #[test]
    fn draft_03_limit_with_policy_suffix() {
        let h = Headers::new([
            ("RateLimit-Limit", "100, 100;w=60"),
            ("RateLimit-Remaining", "1"),
        ]);
        assert_eq!(quotas(&h)[0].limit, Some(100));
    }

    #[test]
    fn structured_fields_join_by_name() {
        let h = Headers::new([
            (
                "RateLimit-Policy",
                r#""burst";q=100;w=60, "day";q=1000;w=86400"#,
            ),
            ("RateLimit", r#""burst";r=50;t=30"#),
        ]);
        let q = quotas(&h);
        assert_eq!(q.len(), 2);
        assert_eq!(q[0].policy.as_deref(), Some("burst"));
        assert_eq!(
            (q[0].limit, q[0].remaining, q[0].reset_after_ms),
            (Some(100), Some(50), Some(30_000))
        );
        assert_eq!(q[0].window_ms, Some(60_000));
        assert_eq!((q[1].limit, q[1].remaining), (Some(1000), None));
    }

    #[test]
    fn a_monthly_quota_keeps_its_month() {
        let h = Headers::new([
            ("RateLimit-Policy", r#""month";q=1000000;w=2592000"#),
            ("RateLimit", r#""month";r=999000;t=1209600"#),
        ]);
        let q = quotas(&h);
        assert_eq!(q[0].window_ms, Some(2_592_000_000));
        assert_eq!(q[0].reset_after_ms, Some(1_209_600_000));
        assert_eq!(
            (q[0].limit, q[0].remaining),
            (Some(1_000_000), Some(999_000))
        );
    }

    #[test]
    fn a_window_past_a_month_is_left_out_and_a_reset_past_it_is_clamped() {
        let h = Headers::new([
            ("RateLimit-Policy", r#""year";q=1000;w=31536000"#),
            ("RateLimit", r#""year";r=10;t=31536000"#),
        ]);
        let q = quotas(&h);
        assert_eq!((q[0].limit, q[0].window_ms), (Some(1000), None));
        assert_eq!(q[0].reset_after_ms, Some(MAX_WINDOW_MS));
        let h = Headers::new([
            ("RateLimit-Remaining", "0"),
            ("RateLimit-Reset", "99999999999"),
        ]);
        assert_eq!(quotas(&h)[0].reset_after_ms, Some(MAX_WINDOW_MS));
    }

    #[test]
    fn malformed_structured_fields_are_ignored() {
        let h = Headers::new([("RateLimit-Policy", "q=100;;"), ("RateLimit", "\"x\";r=-1")]);
        assert!(quotas(&h).is_empty());
        let h = Headers::new([("RateLimit-Remaining", "-3"), ("RateLimit-Limit", "abc")]);
        assert!(quotas(&h).is_empty());
    }

    #[test]
    fn concurrency_unit() {
        let h = Headers::new([("RateLimit-Policy", r#""conc";q=5;qu="concurrent-requests""#)]);
        assert_eq!(quotas(&h)[0].unit, Unit::Concurrency);
    }
}

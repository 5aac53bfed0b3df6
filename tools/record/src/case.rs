//! A captured exchange as vector cases: its credentials redacted, its body cut as the host
//! cuts one, and its expectations filled with what the plugin answers now. A streamed answer
//! (`text/event-stream`) becomes two cases, as the host reads it twice: its start (status
//! and headers) and its end (the body's first and last bytes).

use std::collections::BTreeMap;

use serde::Serialize;

use super::Capture;
use sluice::contract::{Reading, RequestPlan, ResponsePart};
use sluice::headers::{REDACTED, is_credential};
use sluice::vectors::{class_name, dimension_name, scope_name, verdict_name};
use sluice_plugin_sdk::time::format_rfc3339_ms as rfc3339;

/// Headers that set credentials, and headers that name the account rather than say
/// anything a plugin reads; their values are written as [`REDACTED`], in a request and in a
/// response alike. (A request's credentials are caught more widely, by
/// [`is_credential`]: its words, like `token`, would hide a response's quota headers.)
const NOT_WRITTEN: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
    "set-cookie",
    "set-cookie2",
    "openai-organization",
    "openai-project",
    "anthropic-organization-id",
];

/// The body a plugin reads of a complete answer: the host's default cap, 64 KiB.
const BODY_CAP: usize = 64 << 10;
/// What the host keeps of each end of a longer stream: half the cap.
const STREAM_KEEP: usize = BODY_CAP / 2;

/// One recorded case, in the vector format's field order.
#[derive(Debug, Serialize)]
pub(super) struct Case {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
    pub request: Req,
    pub response: Resp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<&'static str>,
    pub expect: Expectation,
}

/// A case's `expect`: a placeholder until the plugin has read the case, then its answer.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Expectation {
    /// Any valid expectation, so the case can be read before the plugin answers.
    Placeholder {
        /// Always `success`.
        verdict: &'static str,
    },
    /// What the plugin answered.
    Answered(Box<Answered>),
}

#[derive(Debug, Serialize)]
pub(super) struct Req {
    method: String,
    url: String,
    class: &'static str,
    headers: Vec<(String, String)>,
    body: String,
}

#[derive(Debug, Serialize)]
pub(super) struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

/// The cases of one capture, with a placeholder expectation; `class` is the vector name of
/// the request's class.
pub(super) fn cases(c: &Capture, name: &str, class: &'static str) -> Vec<Case> {
    let stream = c.response_headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("content-type")
            && v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
    });
    let parts: &[(Option<&'static str>, &str)] = if stream {
        &[
            (Some("stream-start"), " (stream start)"),
            (Some("stream-end"), " (stream end)"),
        ]
    } else {
        &[(None, "")]
    };
    parts
        .iter()
        .map(|&(part, suffix)| Case {
            name: format!("{name}{suffix}"),
            now: c.now_ms.map(rfc3339),
            request: Req {
                method: c.method.to_ascii_uppercase(),
                url: redact_query(&c.url),
                class,
                headers: redact(&c.request_headers, true),
                body: c.request_body.clone(),
            },
            response: Resp {
                status: c.status,
                headers: redact(&c.response_headers, false),
                body: match part {
                    None => prefix(&c.response_body, BODY_CAP).to_owned(),
                    Some("stream-start") => String::new(),
                    Some(_) => ends(&c.response_body),
                },
            },
            part,
            expect: Expectation::Placeholder { verdict: "success" },
        })
        .collect()
}

/// The headers with the values not to write replaced; `request` says whose they are.
fn redact(h: &[(String, String)], request: bool) -> Vec<(String, String)> {
    h.iter()
        .map(|(n, v)| {
            let hide = (request && is_credential(n))
                || NOT_WRITTEN.iter().any(|x| x.eq_ignore_ascii_case(n));
            (
                n.clone(),
                if hide { REDACTED.to_owned() } else { v.clone() },
            )
        })
        .collect()
}

/// Words that mark a query parameter as a credential (`?key=`, `?api_key=`,
/// `?access_token=`, `?X-Amz-Signature=`).
const SECRET_PARAMS: &[&str] = &[
    "key",
    "token",
    "secret",
    "password",
    "auth",
    "signature",
    "sig",
    "session",
    "credential",
];

/// `url` with the values of its credential-like query parameters replaced.
fn redact_query(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let (query, fragment) = query
        .split_once('#')
        .map_or((query, None), |(q, f)| (q, Some(f)));
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if secret_param(name) => format!("{name}={REDACTED}"),
            _ => pair.to_owned(),
        })
        .collect();
    let mut out = format!("{base}?{}", pairs.join("&"));
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

fn secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMS.iter().any(|w| name.contains(w))
}

/// At most `cap` bytes of `s`, cut at a character boundary.
fn prefix(s: &str, cap: usize) -> &str {
    &s[..s.floor_char_boundary(cap)]
}

/// A stream's body as the host hands it at `stream-end`: whole when it fits the cap, else
/// its first and last halves joined at an event boundary.
fn ends(s: &str) -> String {
    if s.len() <= BODY_CAP {
        return s.to_owned();
    }
    let head = prefix(s, STREAM_KEEP);
    let tail = &s[s.ceil_char_boundary(s.len() - STREAM_KEEP)..];
    let tail = tail.find("\n\n").map_or("", |i| &tail[i + 2..]);
    format!("{head}\n\n{tail}")
}

/// What the plugin answered, as the expectation of a case.
#[derive(Debug, Serialize)]
pub(super) struct Answered {
    verdict: &'static str,
    retry_after_ms: Option<u64>,
    error_code: Option<String>,
    should_retry: Option<bool>,
    scope: Option<String>,
    observations: Vec<Observed>,
    observations_exact: bool,
    usage: BTreeMap<String, u64>,
    usage_exact: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<Planned>,
}

#[derive(Debug, Serialize)]
struct Observed {
    dimension: String,
    scope: Option<String>,
    limit: Option<u64>,
    remaining: Option<u64>,
    used: Option<u64>,
    reset_after_ms: Option<u64>,
    window_ms: Option<u64>,
    source: String,
}

#[derive(Debug, Serialize)]
struct Planned {
    class: &'static str,
    tenant: Option<String>,
    deadline_ms: Option<i64>,
    cost: BTreeMap<String, u64>,
    cost_exact: bool,
    scopes: Vec<String>,
}

/// The expectation a case passes when the plugin answers `reading` (and `plan`, when it
/// planned the request): every field, every `_exact` flag set.
pub(super) fn expectation(
    reading: &Reading,
    plan: Option<&RequestPlan>,
    part: ResponsePart,
) -> Expectation {
    let c = &reading.classification;
    let amounts = |costs: &[sluice::contract::Cost]| {
        let mut m = BTreeMap::new();
        for cost in costs {
            // The check reads the first amount of a dimension; so does the expectation.
            m.entry(dimension_name(&cost.dimension).to_owned())
                .or_insert(cost.amount);
        }
        m
    };
    let answered = Answered {
        verdict: verdict_name(c.verdict),
        retry_after_ms: c.retry_after_ms,
        error_code: c.error_code.clone(),
        should_retry: c.should_retry,
        scope: c.scope.as_ref().map(|s| scope_name(s).to_owned()),
        observations: reading
            .observations
            .iter()
            .map(|o| Observed {
                dimension: dimension_name(&o.dimension).to_owned(),
                scope: o.scope.clone(),
                limit: o.limit,
                remaining: o.remaining,
                used: o.used,
                reset_after_ms: o.reset_after_ms,
                window_ms: o.window_ms,
                source: o.source.clone(),
            })
            .collect(),
        observations_exact: true,
        usage: amounts(&reading.usage),
        usage_exact: true,
        // A stream's end reads the same request as its start: its plan is checked once.
        plan: plan
            .filter(|_| part != ResponsePart::StreamEnd)
            .map(|p| Planned {
                class: class_name(p.class),
                tenant: p.tenant.clone(),
                deadline_ms: p.deadline_ms,
                cost: amounts(&p.cost),
                cost_exact: true,
                scopes: p.scopes.clone(),
            }),
    };
    Expectation::Answered(Box::new(answered))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_rfc3339_that_reads_back_the_same() {
        for ms in [
            0,
            86_400_000,
            1_795_953_600_000,
            1_795_953_600_123,
            951_782_400_000,
        ] {
            let text = rfc3339(ms);
            assert_eq!(
                sluice_plugin_sdk::time::parse_rfc3339_ms(&text),
                Some(ms),
                "{text}"
            );
        }
        assert_eq!(rfc3339(1_795_953_600_000), "2026-11-29T12:00:00Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn credentials_and_account_names_are_not_written() {
        let h = [
            ("Authorization", "Bearer sk-live"),
            ("x-api-key", "k"),
            ("Cookie", "a=b"),
            ("Set-Cookie", "s=1"),
            ("openai-organization", "org-1"),
            ("x-ratelimit-remaining-requests", "9"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned()));
        for request in [true, false] {
            let written = redact(&h, request);
            let values: Vec<&str> = written.iter().map(|(_, v)| v.as_str()).collect();
            assert_eq!(
                values,
                [REDACTED, REDACTED, REDACTED, REDACTED, REDACTED, "9"]
            );
        }
        let vendor = [("x-vendor-token".to_owned(), "t".to_owned())];
        assert_eq!(redact(&vendor, true)[0].1, REDACTED);
        let quota = [("x-ratelimit-remaining-tokens".to_owned(), "5".to_owned())];
        assert_eq!(redact(&quota, false)[0].1, "5");
    }

    #[test]
    fn credentials_in_the_query_are_not_written() {
        assert_eq!(
            redact_query("https://api.x.com/v1/m?key=AIza123&alt=json&access_token=t#f"),
            format!("https://api.x.com/v1/m?key={REDACTED}&alt=json&access_token={REDACTED}#f")
        );
        assert_eq!(
            redact_query("https://api.x.com/v1/m"),
            "https://api.x.com/v1/m"
        );
        assert_eq!(redact_query("https://x/?page=2"), "https://x/?page=2");
    }

    #[test]
    fn a_long_stream_keeps_its_ends_joined_at_an_event_boundary() {
        let event = "data: {\"x\":1}\n\n";
        let long = event.repeat(BODY_CAP / event.len() + 100) + "data: {\"usage\":1}\n\n";
        let kept = ends(&long);
        assert!(kept.len() <= BODY_CAP + 2, "{}", kept.len());
        assert!(kept.starts_with(event) && kept.ends_with("data: {\"usage\":1}\n\n"));
        assert!(kept.contains("\n\n\n\ndata: ") || kept.contains("\n\ndata: "));
        assert_eq!(ends("data: 1\n\n"), "data: 1\n\n");
    }
}

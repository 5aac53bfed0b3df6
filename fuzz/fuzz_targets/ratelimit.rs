//! The IETF rate-limit fields (`sluice_plugin_sdk::ratelimit`): `RateLimit` and
//! `RateLimit-Policy` (structured) and the older separate fields.
//!
//! Two inputs, by the first byte: an arbitrary header block, where every window and reset
//! read must be within a month (31 days), every delay asked for within a day, and every
//! structured quota must be named; or quotas written as structured fields, which must read
//! back as exactly the quotas written (a window past a month left out, a reset clamped).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sluice_plugin_sdk::generic::requested_delay_ms;
use sluice_plugin_sdk::headers::Headers;
use sluice_plugin_sdk::ratelimit::{Quota, Unit, quotas};
use sluice_plugin_sdk::time::{MAX_DELAY_MS, MAX_WINDOW_MS};

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((0, rest)) => written(rest),
        Some((_, rest)) => raw(rest),
        None => {}
    }
});

fn raw(data: &[u8]) {
    let Ok(block) = std::str::from_utf8(data) else {
        return;
    };
    let h = Headers::parse(block);
    for q in quotas(&h) {
        for ms in [q.reset_after_ms, q.window_ms].into_iter().flatten() {
            assert!(ms <= MAX_WINDOW_MS, "{q:?}");
        }
        if q.source.starts_with("ratelimit-policy") {
            assert!(q.policy.is_some() && q.limit.is_some(), "{q:?}");
        }
    }
    for status in [200, 429, 503] {
        if let Some(ms) = requested_delay_ms(status, &h, sluice_fuzz::NOW_MS) {
            assert!(ms <= MAX_DELAY_MS);
        }
    }
}

/// The largest integer a structured field can hold (15 digits).
const SF_MAX: u64 = 999_999_999_999_999;

#[derive(Debug)]
struct Policy {
    name: String,
    quota: Option<(u64, Option<u64>, Option<&'static str>)>,
    state: Option<(u64, Option<u64>)>,
}

fn written(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(policies) = policies(&mut u) else {
        return;
    };
    let mut policy_items = Vec::new();
    let mut state_items = Vec::new();
    for p in &policies {
        if let Some((q, w, unit)) = p.quota {
            let mut item = format!("\"{}\";q={q}", p.name);
            if let Some(w) = w {
                item.push_str(&format!(";w={w}"));
            }
            if let Some(unit) = unit {
                item.push_str(&format!(";qu=\"{unit}\""));
            }
            policy_items.push(item);
        }
        if let Some((r, t)) = p.state {
            let mut item = format!("{};r={r}", p.name);
            if let Some(t) = t {
                item.push_str(&format!(";t={t}"));
            }
            state_items.push(item);
        }
    }
    let policy_field = policy_items.join(", ");
    let state_field = state_items.join(", ");
    let h = Headers::new([
        ("RateLimit-Policy", policy_field.as_str()),
        ("RateLimit", state_field.as_str()),
    ]);
    let ms = |s: u64| (s * 1000).min(MAX_WINDOW_MS);
    let window = |s: u64| Some(s * 1000).filter(|w| *w <= MAX_WINDOW_MS);
    let mut want: Vec<Quota> = Vec::new();
    for p in policies.iter().filter(|p| p.quota.is_some()) {
        let (q, w, unit) = p.quota.unwrap();
        want.push(Quota {
            policy: Some(p.name.clone()),
            unit: match unit {
                None | Some("requests") => Unit::Requests,
                Some("concurrent-requests") => Unit::Concurrency,
                Some(other) => Unit::Other(other.into()),
            },
            limit: Some(q),
            remaining: p.state.map(|(r, _)| r),
            reset_after_ms: p.state.and_then(|(_, t)| t).map(ms),
            window_ms: w.and_then(window),
            source: "ratelimit-policy,ratelimit",
        });
    }
    for p in policies.iter().filter(|p| p.quota.is_none()) {
        if let Some((r, t)) = p.state {
            want.push(Quota {
                policy: Some(p.name.clone()),
                unit: Unit::Requests,
                limit: None,
                remaining: Some(r),
                reset_after_ms: t.map(ms),
                window_ms: None,
                source: "ratelimit",
            });
        }
    }
    assert_eq!(
        quotas(&h),
        want,
        "RateLimit-Policy: {policy_field}\nRateLimit: {state_field}"
    );
}

fn policies(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<Policy>> {
    let mut out: Vec<Policy> = Vec::new();
    for _ in 0..u.int_in_range(0..=4)? {
        // A token: a letter, then letters, digits and a few marks.
        let mut name = String::from(char::from(*u.choose(b"abcdefghijklmnopqrstuvwxyz")?));
        for _ in 0..u.int_in_range(0..=8)? {
            name.push(char::from(
                *u.choose(b"abcdefghijklmnopqrstuvwxyz0123456789-_.*")?,
            ));
        }
        if out.iter().any(|p| p.name == name) {
            continue;
        }
        let int = |u: &mut Unstructured<'_>| u.int_in_range(0..=SF_MAX);
        let quota = if bool::arbitrary(u)? {
            let q = int(u)?;
            let w = if bool::arbitrary(u)? {
                Some(int(u)?)
            } else {
                None
            };
            let unit = if bool::arbitrary(u)? {
                Some(*u.choose(&["requests", "concurrent-requests", "content-bytes"])?)
            } else {
                None
            };
            Some((q, w, unit))
        } else {
            None
        };
        let state = if bool::arbitrary(u)? {
            let r = int(u)?;
            let t = if bool::arbitrary(u)? {
                Some(int(u)?)
            } else {
                None
            };
            Some((r, t))
        } else {
            None
        };
        out.push(Policy { name, quota, state });
    }
    Ok(out)
}

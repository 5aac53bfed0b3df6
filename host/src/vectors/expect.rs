//! What a case expects (`expect` in `docs/PLUGIN-VECTORS.md`), read strictly: only the
//! fields present are checked, and a field given as `null` expects nothing there.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::contract::{LimitedScope, PriorityClass, Verdict};

/// A classification's scope as a case names it: `credential` for the credential's own
/// bucket, else the scope's name.
pub(super) fn limited_scope(name: &str) -> LimitedScope {
    match name {
        "credential" => LimitedScope::Credential,
        other => LimitedScope::Named(other.to_owned()),
    }
}

/// The name a case gives a classification's scope.
pub fn scope_name(scope: &LimitedScope) -> &str {
    match scope {
        LimitedScope::Credential => "credential",
        LimitedScope::Named(name) => name,
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExpect {
    pub verdict: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub retry_after_ms: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    pub error_code: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub should_retry: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub scope: Option<Option<String>>,
    pub observations: Option<Vec<ExpectedObservation>>,
    #[serde(default)]
    pub observations_exact: bool,
    pub usage: Option<BTreeMap<String, u64>>,
    #[serde(default)]
    pub usage_exact: bool,
    pub plan: Option<RawPlan>,
    pub tolerance_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlan {
    pub class: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub tenant: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub deadline_ms: Option<Option<i64>>,
    pub cost: Option<BTreeMap<String, u64>>,
    #[serde(default)]
    pub cost_exact: bool,
    pub scopes: Option<Vec<String>>,
}

/// One expected observation: only the fields present are checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedObservation {
    /// The dimension's name (`requests`, `tokens`, `input-tokens`, ...).
    pub dimension: String,
    /// The scope, when checked (`null` expects none).
    #[serde(default, deserialize_with = "present")]
    pub scope: Option<Option<String>>,
    /// The limit, when checked.
    #[serde(default, deserialize_with = "present")]
    pub limit: Option<Option<u64>>,
    /// The remaining amount, when checked.
    #[serde(default, deserialize_with = "present")]
    pub remaining: Option<Option<u64>>,
    /// The used amount, when checked.
    #[serde(default, deserialize_with = "present")]
    pub used: Option<Option<u64>>,
    /// Milliseconds until reset, when checked.
    #[serde(default, deserialize_with = "present")]
    pub reset_after_ms: Option<Option<u64>>,
    /// The window length, when checked.
    #[serde(default, deserialize_with = "present")]
    pub window_ms: Option<Option<u64>>,
    /// The source, when checked.
    pub source: Option<String>,
    /// Allowed difference for durations, overriding the case's.
    pub tolerance_ms: Option<u64>,
}

/// A field that is present (even as `null`) deserializes to `Some(value)`; an absent one
/// stays `None` through `#[serde(default)]`.
pub(super) fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A case's expectations.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The verdict, when checked.
    pub verdict: Option<Verdict>,
    /// The requested delay, when checked (`Some(None)`: none expected).
    pub retry_after_ms: Option<Option<u64>>,
    /// The error code, when checked (`Some(None)`: none expected).
    pub error_code: Option<Option<String>>,
    /// The provider's retry advice, when checked (`Some(None)`: none expected).
    pub should_retry: Option<Option<bool>>,
    /// The scope the classification says a limit is about, when checked (`Some(None)`: none
    /// expected).
    pub scope: Option<Option<LimitedScope>>,
    /// Expected observations, when checked.
    pub observations: Option<Vec<ExpectedObservation>>,
    /// Whether reported observations beyond the expected ones fail the case.
    pub observations_exact: bool,
    /// Expected usage, per dimension name, when checked.
    pub usage: Option<BTreeMap<String, u64>>,
    /// Whether reported usage of dimensions not expected fails the case.
    pub usage_exact: bool,
    /// The expected request plan, when checked (then `plan-request` is called too).
    pub plan: Option<ExpectedPlan>,
    /// Allowed difference for durations computed from dates.
    pub tolerance_ms: u64,
}

/// The expected answer of `plan-request`: only the fields present are checked.
#[derive(Debug, Clone, Default)]
pub struct ExpectedPlan {
    /// The queue class, when checked.
    pub class: Option<PriorityClass>,
    /// The tenant, when checked (`Some(None)`: none expected).
    pub tenant: Option<Option<String>>,
    /// The deadline, when checked (`Some(None)`: none expected).
    pub deadline_ms: Option<Option<i64>>,
    /// The expected cost, per dimension name, when checked.
    pub cost: Option<BTreeMap<String, u64>>,
    /// Whether a planned cost of a dimension not expected fails the case.
    pub cost_exact: bool,
    /// The scopes, when checked: the same names in any order.
    pub scopes: Option<Vec<String>>,
}

/// Validates the raw expectations; `has_response` says whether the case has a response to
/// read quotas and usage from. `case_tolerance` is the case-level `tolerance_ms`.
pub(super) fn validate(
    raw: RawExpect,
    has_response: bool,
    case_tolerance: Option<u64>,
) -> Result<Expect, String> {
    let verdict = raw.verdict.as_deref().map(verdict).transpose()?;
    if let Some(obs) = &raw.observations {
        if !has_response {
            return Err(
                "expect.observations: a transport failure has no response to read quotas from"
                    .into(),
            );
        }
        for (i, o) in obs.iter().enumerate() {
            dimension_name(&format!("expect.observations[{i}].dimension"), &o.dimension)?;
        }
    }
    if let Some(usage) = &raw.usage {
        if !has_response {
            return Err(
                "expect.usage: a transport failure has no response to read usage from".into(),
            );
        }
        dimension_names("expect.usage", usage)?;
    }
    vacuous(&raw)?;
    let plan = raw.plan.map(plan).transpose()?;
    Ok(Expect {
        verdict,
        retry_after_ms: raw.retry_after_ms,
        error_code: raw.error_code,
        should_retry: raw.should_retry,
        scope: raw.scope.map(|s| s.map(|s| limited_scope(&s))),
        observations: raw.observations,
        observations_exact: raw.observations_exact,
        usage: raw.usage,
        usage_exact: raw.usage_exact,
        plan,
        tolerance_ms: raw.tolerance_ms.or(case_tolerance).unwrap_or(0),
    })
}

/// Refuses, for a stretch of a stream (which the plugin counts and does not classify),
/// expectations of what only a reading has: a verdict, a delay, an error code, advice, a
/// scope, observations.
pub(super) fn counted_only(raw: &RawExpect) -> Result<(), String> {
    let read = [
        ("verdict", raw.verdict.is_some()),
        ("retry_after_ms", raw.retry_after_ms.is_some()),
        ("error_code", raw.error_code.is_some()),
        ("should_retry", raw.should_retry.is_some()),
        ("scope", raw.scope.is_some()),
        ("observations", raw.observations.is_some()),
    ];
    match read.iter().find(|(_, given)| *given) {
        Some((field, _)) => Err(format!(
            "expect.{field}: a stream-stretch case is counted (`count-stream`), not read: \
             check its usage"
        )),
        None => Ok(()),
    }
}

/// Refuses expectations that check nothing. A case that expects nothing passes whatever the
/// plugin answers, so it is nearly always a mistake (a field left out, an edit half made),
/// and one that would hide every regression of its response.
fn vacuous(raw: &RawExpect) -> Result<(), String> {
    let checks_any = raw.verdict.is_some()
        || raw.retry_after_ms.is_some()
        || raw.error_code.is_some()
        || raw.should_retry.is_some()
        || raw.scope.is_some()
        || raw.observations.is_some()
        || raw.usage.is_some()
        || raw.plan.is_some();
    if !checks_any {
        const CHECKS: &str =
            "verdict, retry_after_ms, error_code, should_retry, scope, observations, usage, plan";
        return Err(format!(
            "expect: checks nothing; name at least one of {CHECKS}"
        ));
    }
    empty_unless_exact(
        "observations",
        raw.observations.as_ref().map(Vec::len),
        raw.observations_exact,
    )?;
    empty_unless_exact(
        "usage",
        raw.usage.as_ref().map(BTreeMap::len),
        raw.usage_exact,
    )?;
    let Some(plan) = &raw.plan else {
        return Ok(());
    };
    if plan.class.is_none()
        && plan.tenant.is_none()
        && plan.deadline_ms.is_none()
        && plan.cost.is_none()
        && plan.scopes.is_none()
    {
        const CHECKS: &str = "class, tenant, deadline_ms, cost, scopes";
        return Err(format!(
            "expect.plan: checks nothing; name at least one of {CHECKS}"
        ));
    }
    empty_unless_exact(
        "plan.cost",
        plan.cost.as_ref().map(BTreeMap::len),
        plan.cost_exact,
    )
}

/// An `_exact` flag without its list checks nothing; nor does an empty list without the
/// flag (with it, the empty list says "none").
fn empty_unless_exact(field: &str, len: Option<usize>, exact: bool) -> Result<(), String> {
    let key = field.rsplit('.').next().unwrap_or(field);
    match (len, exact) {
        (None, true) => Err(format!(
            "expect.{field}_exact: checks nothing without \"{key}\""
        )),
        (Some(0), false) => Err(format!(
            "expect.{field}: empty, which checks nothing; to expect none, add \"{key}_exact\": true"
        )),
        _ => Ok(()),
    }
}

fn plan(raw: RawPlan) -> Result<ExpectedPlan, String> {
    let class = raw
        .class
        .as_deref()
        .map(|c| {
            CLASSES
                .iter()
                .find(|(n, _)| *n == c)
                .map(|(_, v)| *v)
                .ok_or_else(|| {
                    format!(
                        "expect.plan.class: {c:?} is not one of interactive, standard, background"
                    )
                })
        })
        .transpose()?;
    if let Some(cost) = &raw.cost {
        dimension_names("expect.plan.cost", cost)?;
    }
    if let Some(scopes) = &raw.scopes
        && let Some(i) = scopes.iter().position(String::is_empty)
    {
        return Err(format!("expect.plan.scopes[{i}]: empty"));
    }
    Ok(ExpectedPlan {
        class,
        tenant: raw.tenant,
        deadline_ms: raw.deadline_ms,
        cost: raw.cost,
        cost_exact: raw.cost_exact,
        scopes: raw.scopes,
    })
}

fn dimension_names(field: &str, amounts: &BTreeMap<String, u64>) -> Result<(), String> {
    for name in amounts.keys() {
        dimension_name(&format!("{field}.{name}"), name)?;
    }
    Ok(())
}

/// The dimensions the host knows by name.
const DIMENSIONS: &[&str] = &[
    "requests",
    "tokens",
    "input-tokens",
    "output-tokens",
    "concurrency",
];

/// Checks a dimension's name: a known one, or a provider's own that is not a misspelling of
/// a known one (`input_tokens`, `prompt-tokens`: "did you mean `input-tokens`?"). A
/// misspelt name would otherwise be a dimension of its own, which no plugin reports and no
/// quota counts.
fn dimension_name(field: &str, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("{field}: a dimension name is empty"));
    }
    if DIMENSIONS.contains(&name) {
        return Ok(());
    }
    let plain = name.to_ascii_lowercase().replace(['_', ' '], "-");
    let meant = match plain.as_str() {
        "prompt-tokens" | "input-token" | "input" => "input-tokens",
        "completion-tokens" | "output-token" | "output" => "output-tokens",
        "request" | "rpm" => "requests",
        "token" | "total-tokens" | "tpm" => "tokens",
        "concurrent" | "in-flight" => "concurrency",
        other => match DIMENSIONS.iter().find(|d| **d == other) {
            Some(d) => d,
            None => return Ok(()), // a provider's own dimension
        },
    };
    Err(format!(
        "{field}: {name:?} is not a dimension's name: did you mean {meant:?}? (the host's are \
         {}; any other name is a provider's own dimension)",
        DIMENSIONS.join(", ")
    ))
}

/// The verdict named `name` in the vector format.
fn verdict(name: &str) -> Result<Verdict, String> {
    VERDICTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<&str> = VERDICTS.iter().map(|(n, _)| *n).collect();
            format!(
                "expect.verdict: {name:?} is not one of {}",
                names.join(", ")
            )
        })
}

/// Vector names of the verdicts.
const VERDICTS: &[(&str, Verdict)] = &[
    ("success", Verdict::Success),
    ("rate-limited", Verdict::RateLimited),
    ("quota-exhausted", Verdict::QuotaExhausted),
    ("overloaded", Verdict::Overloaded),
    ("transient", Verdict::Transient),
    ("conflict", Verdict::Conflict),
    ("client-error", Verdict::ClientError),
    ("auth-error", Verdict::AuthError),
    ("outcome-unknown", Verdict::OutcomeUnknown),
];

/// Vector names of the queue classes.
const CLASSES: &[(&str, PriorityClass)] = &[
    ("interactive", PriorityClass::Interactive),
    ("standard", PriorityClass::Standard),
    ("background", PriorityClass::Background),
];

/// The vector name of a verdict.
pub fn verdict_name(v: Verdict) -> &'static str {
    VERDICTS
        .iter()
        .find(|(_, x)| *x == v)
        .map_or("?", |(n, _)| *n)
}

/// The vector name of a queue class.
pub fn class_name(c: PriorityClass) -> &'static str {
    CLASSES
        .iter()
        .find(|(_, x)| *x == c)
        .map_or("?", |(n, _)| *n)
}

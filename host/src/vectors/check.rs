//! Comparing what a plugin concluded with what a case expects. Every difference is reported,
//! in the order of the case's fields, so that one run shows all there is to fix.

use std::collections::BTreeMap;

use super::expect::{
    Expect, ExpectedObservation, ExpectedPlan, class_name, scope_name, verdict_name,
};
use super::format::dimension_name;
use crate::contract::{Classification, Cost, Observation, RequestPlan};

/// Every difference between the classification and the expectation, into `out`.
pub(super) fn classification(c: &Classification, e: &Expect, out: &mut Vec<String>) {
    if let Some(v) = e.verdict
        && v != c.verdict
    {
        out.push(format!(
            "verdict: expected {}, got {}",
            verdict_name(v),
            verdict_name(c.verdict)
        ));
    }
    if let Some(want) = e.retry_after_ms
        && !close(want, c.retry_after_ms, e.tolerance_ms)
    {
        out.push(format!(
            "retry_after_ms: expected {}, got {}{}",
            show(want),
            show(c.retry_after_ms),
            tolerance(e.tolerance_ms)
        ));
    }
    if let Some(want) = &e.error_code
        && want != &c.error_code
    {
        out.push(format!(
            "error_code: expected {}, got {}",
            show(want.as_ref()),
            show(c.error_code.as_ref())
        ));
    }
    if let Some(want) = e.should_retry
        && want != c.should_retry
    {
        out.push(format!(
            "should_retry: expected {}, got {}",
            show(want),
            show(c.should_retry)
        ));
    }
    if let Some(want) = &e.scope
        && want != &c.scope
    {
        out.push(format!(
            "scope: expected {}, got {}",
            show(want.as_ref().map(scope_name)),
            show(c.scope.as_ref().map(scope_name))
        ));
    }
}

/// Every difference between the reported usage and the expected one, into `out`.
pub(super) fn usage(got: &[Cost], e: &Expect, out: &mut Vec<String>) {
    if let Some(want) = e.usage.as_ref() {
        amounts("usage", got, want, e.usage_exact, out);
    }
}

/// Every difference between the plan and the expected one, into `out`.
pub(super) fn plan(p: &RequestPlan, want: &ExpectedPlan, out: &mut Vec<String>) {
    if let Some(class) = want.class
        && class != p.class
    {
        out.push(format!(
            "plan.class: expected {}, got {}",
            class_name(class),
            class_name(p.class)
        ));
    }
    if let Some(tenant) = &want.tenant
        && tenant != &p.tenant
    {
        out.push(format!(
            "plan.tenant: expected {}, got {}",
            show(tenant.as_ref()),
            show(p.tenant.as_ref())
        ));
    }
    if let Some(deadline) = want.deadline_ms
        && deadline != p.deadline_ms
    {
        out.push(format!(
            "plan.deadline_ms: expected {}, got {}",
            show(deadline),
            show(p.deadline_ms)
        ));
    }
    if let Some(cost) = &want.cost {
        amounts("plan.cost", &p.cost, cost, want.cost_exact, out);
    }
    if let Some(scopes) = &want.scopes {
        let mut expected: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let mut got: Vec<&str> = p.scopes.iter().map(String::as_str).collect();
        expected.sort_unstable();
        got.sort_unstable();
        if expected != got {
            out.push(format!("plan.scopes: expected {expected:?}, got {got:?}"));
        }
    }
}

/// Every difference between reported amounts and expected ones, per dimension name, into
/// `out`.
fn amounts(
    field: &str,
    got: &[Cost],
    want: &BTreeMap<String, u64>,
    exact: bool,
    out: &mut Vec<String>,
) {
    for (dimension, amount) in want {
        match got
            .iter()
            .find(|c| dimension_name(&c.dimension) == dimension)
        {
            None => {
                out.push(format!(
                    "{field}: no reported amount of {dimension:?} (reported: {})",
                    summary_amounts(got)
                ));
            }
            Some(c) if c.amount != *amount => {
                out.push(format!(
                    "{field}.{dimension}: expected {amount}, got {}",
                    c.amount
                ));
            }
            Some(_) => {}
        }
    }
    if exact {
        for extra in got
            .iter()
            .filter(|c| !want.contains_key(dimension_name(&c.dimension)))
        {
            out.push(format!(
                "{field}_exact: unexpected reported amount {} of {}",
                extra.amount,
                dimension_name(&extra.dimension)
            ));
        }
    }
}

fn summary_amounts(got: &[Cost]) -> String {
    if got.is_empty() {
        return "none".into();
    }
    got.iter()
        .map(|c| format!("{}={}", dimension_name(&c.dimension), c.amount))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every difference between the reported observations and the expected ones, into `out`:
/// each expected observation that no reported one matches, then each reported one left over
/// when the list is exact.
pub(super) fn observations(got: &[Observation], e: &Expect, out: &mut Vec<String>) {
    let Some(want) = e.observations.as_ref() else {
        return;
    };
    let mut used = vec![false; got.len()];
    for (i, w) in want.iter().enumerate() {
        let tol = w.tolerance_ms.unwrap_or(e.tolerance_ms);
        let candidates: Vec<usize> = (0..got.len())
            .filter(|&j| !used[j] && dimension_name(&got[j].dimension) == w.dimension)
            .filter(|&j| w.scope.as_ref().is_none_or(|s| *s == got[j].scope))
            .collect();
        match candidates
            .iter()
            .find(|&&j| mismatch(&got[j], w, tol).is_none())
        {
            Some(&j) => used[j] = true,
            None => {
                let scope = w
                    .scope
                    .as_ref()
                    .map_or(String::new(), |s| format!(" scope {}", show(s.as_ref())));
                out.push(match candidates.first() {
                    None => format!(
                        "observations[{i}]: no reported observation for dimension {:?}{scope} (reported: {})",
                        w.dimension,
                        summary(got)
                    ),
                    Some(&j) => format!(
                        "observations[{i}] ({}{scope}): {}",
                        w.dimension,
                        mismatch(&got[j], w, tol).unwrap_or_default()
                    ),
                });
            }
        }
    }
    if e.observations_exact {
        for j in (0..got.len()).filter(|&j| !used[j]) {
            out.push(format!(
                "observations_exact: unexpected reported observation {} ({})",
                dimension_name(&got[j].dimension),
                got[j].source
            ));
        }
    }
}

/// The first field of `w` that `g` does not match.
fn mismatch(g: &Observation, w: &ExpectedObservation, tol: u64) -> Option<String> {
    let exact = [
        ("limit", w.limit, g.limit),
        ("remaining", w.remaining, g.remaining),
        ("used", w.used, g.used),
    ];
    for (field, want, got) in exact {
        if let Some(want) = want
            && want != got
        {
            return Some(format!(
                "{field}: expected {}, got {}",
                show(want),
                show(got)
            ));
        }
    }
    let timed = [
        ("reset_after_ms", w.reset_after_ms, g.reset_after_ms),
        ("window_ms", w.window_ms, g.window_ms),
    ];
    for (field, want, got) in timed {
        if let Some(want) = want
            && !close(want, got, tol)
        {
            return Some(format!(
                "{field}: expected {}, got {}{}",
                show(want),
                show(got),
                tolerance(tol)
            ));
        }
    }
    if let Some(src) = &w.source
        && src != &g.source
    {
        return Some(format!("source: expected {src:?}, got {:?}", g.source));
    }
    None
}

fn close(want: Option<u64>, got: Option<u64>, tol: u64) -> bool {
    match (want, got) {
        (Some(a), Some(b)) => a.abs_diff(b) <= tol,
        (None, None) => true,
        _ => false,
    }
}

fn show<T: std::fmt::Debug>(v: Option<T>) -> String {
    v.map_or_else(|| "null".to_owned(), |x| format!("{x:?}"))
}

fn tolerance(t: u64) -> String {
    if t == 0 {
        String::new()
    } else {
        format!(" (tolerance {t} ms)")
    }
}

fn summary(got: &[Observation]) -> String {
    if got.is_empty() {
        return "none".into();
    }
    got.iter()
        .map(|o| match &o.scope {
            Some(s) => format!("{}@{s}", dimension_name(&o.dimension)),
            None => dimension_name(&o.dimension).to_owned(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

//! The plugin SDK's answer types as the host's: both are generated from `wit/policy.wit`,
//! case for case, so a bundled plugin's native answer can be checked by the host's
//! validation exactly as its component's answer is.

use sluice::contract as host;
use sluice_plugin_sdk as guest;

pub fn verdict(v: guest::Verdict) -> host::Verdict {
    use guest::Verdict as G;
    use host::Verdict as H;
    match v {
        G::Success => H::Success,
        G::RateLimited => H::RateLimited,
        G::QuotaExhausted => H::QuotaExhausted,
        G::Overloaded => H::Overloaded,
        G::Transient => H::Transient,
        G::Conflict => H::Conflict,
        G::ClientError => H::ClientError,
        G::AuthError => H::AuthError,
        G::OutcomeUnknown => H::OutcomeUnknown,
    }
}

pub fn dimension(d: guest::Dimension) -> host::ReportedDimension {
    use guest::Dimension as G;
    use host::ReportedDimension as H;
    match d {
        G::Requests => H::Requests,
        G::Tokens => H::Tokens,
        G::InputTokens => H::InputTokens,
        G::OutputTokens => H::OutputTokens,
        G::Concurrency => H::Concurrency,
        G::Other(name) => H::Other(name),
    }
}

pub fn class(c: guest::PriorityClass) -> host::PriorityClass {
    use guest::PriorityClass as G;
    use host::PriorityClass as H;
    match c {
        G::Interactive => H::Interactive,
        G::Standard => H::Standard,
        G::Background => H::Background,
    }
}

pub fn cost(c: guest::Cost) -> host::Cost {
    host::Cost {
        dimension: dimension(c.dimension),
        amount: c.amount,
    }
}

pub fn observation(o: guest::Observation) -> host::Observation {
    host::Observation {
        scope: o.scope,
        dimension: dimension(o.dimension),
        limit: o.limit,
        remaining: o.remaining,
        used: o.used,
        reset_after_ms: o.reset_after_ms,
        window_ms: o.window_ms,
        source: o.source,
    }
}

pub fn reading(r: guest::Reading) -> host::Reading {
    let c = r.classification;
    host::Reading {
        classification: host::Classification {
            verdict: verdict(c.verdict),
            retry_after_ms: c.retry_after_ms,
            error_code: c.error_code,
            should_retry: c.should_retry,
            scope: None,
        },
        observations: r.observations.into_iter().map(observation).collect(),
        usage: r.usage.into_iter().map(cost).collect(),
    }
}

pub fn request_plan(p: guest::RequestPlan) -> host::RequestPlan {
    host::RequestPlan {
        class: class(p.class),
        tenant: p.tenant,
        deadline_ms: p.deadline_ms,
        cost: p.cost.into_iter().map(cost).collect(),
        scopes: p.scopes,
    }
}

pub fn reconcile_plan(p: guest::ReconcilePlan) -> host::ReconcilePlan {
    match p {
        guest::ReconcilePlan::Query(q) => host::ReconcilePlan::Query(host::StatusQuery {
            method: q.method,
            url: q.url,
            headers: q.headers,
            body: q.body,
        }),
        guest::ReconcilePlan::ResendSameKey => host::ReconcilePlan::ResendSameKey,
        guest::ReconcilePlan::Unsupported(why) => host::ReconcilePlan::Unsupported(why),
    }
}

pub fn reconciliation(r: guest::Reconciliation) -> host::Reconciliation {
    match r {
        guest::Reconciliation::Found(id) => host::Reconciliation::Found(id),
        guest::Reconciliation::NotFound => host::Reconciliation::NotFound,
        guest::Reconciliation::Unknown(why) => host::Reconciliation::Unknown(why),
    }
}

pub fn description(d: guest::Description) -> host::Description {
    host::Description {
        name: d.name,
        version: d.version,
        provider: d.provider,
        hosts: d.hosts,
        routes: d.routes,
        read_routes: vec![],
        error_shape: None,
        refill: None,
    }
}

//! The host's checks on plugin output (`sluice::plugin::validate`), on answers built from
//! arbitrary input, as a hostile plugin could return them.
//!
//! Asserts: an answer that passes is within every documented cap (restated here from the
//! README's sandbox section, independently of the checks' code); and what passes can be
//! used: a plan's scopes and cost are submitted to a scheduler, a reading's observations
//! are observed on its grant, and the scheduler neither panics nor loses count.
#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use sluice::admission::{Ask, Class, Config, Scheduler, Usage};
use sluice::contract::{
    Classification, Cost, Description, LimitedScope, Observation, PriorityClass, Reading,
    ReconcilePlan, Reconciliation, ReportedDimension, RequestPlan, StatusQuery, Verdict,
};
use sluice::headers::{encode_fields, field_pairs};
use sluice::plugin::{Caps, validate};
use sluice_fuzz::drive::{self, Driver};

const CONFIG: &str = "
[providers.p.limits]
requests_per_minute = 600
tokens_per_minute = 90000
concurrent_requests = 8
[providers.p.models.m]
tokens_per_minute = 30000
[providers.p.scopes.search]
requests_per_minute = 30
";

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(answers) = Answers::arbitrary(&mut u) else {
        return;
    };
    let caps = Caps::default();
    let d = validate::description(&answers.description, &caps);
    if d.is_ok() {
        let d = &answers.description;
        assert!(!d.name.is_empty());
        for s in [&d.name, &d.version, &d.provider]
            .into_iter()
            .chain(&d.hosts)
            .chain(&d.routes)
        {
            assert!(s.len() <= caps.max_string_bytes);
        }
        assert!(d.hosts.len() <= caps.max_list_len && d.routes.len() <= caps.max_list_len);
    }
    let reading_ok = validate::reading(&answers.reading, &caps).is_ok();
    if reading_ok {
        reading_within_caps(&answers.reading, &caps);
    }
    let plan_ok = validate::request_plan(&answers.plan, &caps).is_ok();
    if plan_ok {
        plan_within_caps(&answers.plan, &caps);
    }
    if validate::reconcile_plan(&answers.reconcile, &caps).is_ok() {
        if let ReconcilePlan::Query(q) = &answers.reconcile {
            assert!(!q.method.is_empty() && q.method.bytes().all(|b| b.is_ascii_uppercase()));
            assert!(q.url.starts_with("https://") || q.url.starts_with("http://"));
            assert!(q.url.len() <= caps.max_string_bytes);
            assert!(q.headers.len() <= caps.max_string_bytes);
            assert!(field_pairs(&q.headers).count() <= caps.max_list_len);
            // Lines without a colon are no fields and are dropped; every field is valid.
            assert!(encode_fields(field_pairs(&q.headers)).is_ok());
            assert!(q.body.len() <= caps.max_body_bytes);
        }
    }
    if validate::reconciliation(&answers.reconciliation, &caps).is_ok() {
        if let Reconciliation::Found(Some(s)) | Reconciliation::Unknown(s) = &answers.reconciliation
        {
            assert!(s.len() <= caps.max_string_bytes);
        }
    }

    // What passed, used.
    if !(plan_ok && reading_ok) {
        return;
    }
    let config = Config::from_toml(CONFIG).expect("the fixed configuration");
    let mut s = Scheduler::new(config).expect("the fixed configuration");
    let scopes: Vec<&str> = answers.plan.scopes.iter().map(String::as_str).collect();
    let route = s.route("p", "c", &scopes);
    let tenant = s.tenant(answers.plan.tenant.as_deref().unwrap_or("default"));
    let ask = Ask {
        route,
        tenant,
        class: match answers.plan.class {
            PriorityClass::Interactive => Class::Interactive,
            PriorityClass::Standard => Class::Standard,
            PriorityClass::Background => Class::Background,
        },
        usage: Usage::from_estimate(&answers.plan.cost),
        deadline: None,
        task: None,
    };
    let mut driver = Driver::default();
    if let Ok(id) = s.submit(0, ask) {
        driver.submitted(id);
    }
    let routes = vec![("p".to_owned(), "c".to_owned(), answers.plan.scopes.clone())];
    let Ok(steps) = drive::steps(&mut u) else {
        return;
    };
    driver.run(&mut s, &routes, &steps, &answers.reading.observations);
});

fn reading_within_caps(r: &Reading, caps: &Caps) {
    let c = &r.classification;
    assert!(c.retry_after_ms.is_none_or(|d| d <= caps.max_delay_ms));
    assert!(
        c.error_code
            .as_ref()
            .is_none_or(|e| e.len() <= caps.max_string_bytes)
    );
    assert!(r.observations.len() <= caps.max_list_len);
    for o in &r.observations {
        dimension_ok(&o.dimension);
        assert!(o.source.len() <= caps.max_string_bytes);
        assert!(
            o.scope
                .as_ref()
                .is_none_or(|s| !s.is_empty() && s.len() <= caps.max_name_bytes)
        );
        for v in [o.limit, o.remaining, o.used].into_iter().flatten() {
            assert!(v <= caps.max_amount);
        }
        for v in [o.reset_after_ms, o.window_ms].into_iter().flatten() {
            assert!(v <= caps.max_window_ms);
        }
    }
    costs_ok(&r.usage, caps);
}

fn plan_within_caps(p: &RequestPlan, caps: &Caps) {
    assert!(
        p.tenant
            .as_ref()
            .is_none_or(|t| !t.is_empty() && t.len() <= caps.max_name_bytes)
    );
    assert!(p.deadline_ms.is_none_or(|d| d >= 0));
    costs_ok(&p.cost, caps);
    assert!(p.scopes.len() <= caps.max_scopes);
    for (i, s) in p.scopes.iter().enumerate() {
        assert!(!s.is_empty() && s.len() <= caps.max_name_bytes);
        assert!(!p.scopes[..i].contains(s), "scope {s:?} twice");
    }
}

fn costs_ok(costs: &[Cost], caps: &Caps) {
    assert!(costs.len() <= caps.max_list_len);
    for (i, c) in costs.iter().enumerate() {
        dimension_ok(&c.dimension);
        assert!(c.amount <= caps.max_amount);
        assert!(
            !costs[..i].iter().any(|e| e.dimension == c.dimension),
            "a dimension twice"
        );
    }
}

fn dimension_ok(d: &ReportedDimension) {
    if let ReportedDimension::Other(name) = d {
        assert!(!name.is_empty() && name.len() <= 64);
    }
}

/// Every answer a plugin gives, as a hostile plugin might give it.
#[derive(Debug)]
struct Answers {
    description: Description,
    reading: Reading,
    plan: RequestPlan,
    reconcile: ReconcilePlan,
    reconciliation: Reconciliation,
}

impl<'a> Arbitrary<'a> for Answers {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let description = Description {
            name: text(u)?,
            version: text(u)?,
            provider: text(u)?,
            hosts: list(u, text)?,
            routes: list(u, text)?,
            read_routes: list(u, text)?,
            error_shape: None,
            refill: None,
        };
        let reading = Reading {
            classification: Classification {
                verdict: *u.choose(&[
                    Verdict::Success,
                    Verdict::RateLimited,
                    Verdict::QuotaExhausted,
                    Verdict::Overloaded,
                    Verdict::Transient,
                    Verdict::Conflict,
                    Verdict::ClientError,
                    Verdict::AuthError,
                    Verdict::OutcomeUnknown,
                ])?,
                retry_after_ms: option(u, amount)?,
                error_code: option(u, text)?,
                should_retry: Option::<bool>::arbitrary(u)?,
                scope: match u.int_in_range(0..=2_u8)? {
                    0 => None,
                    1 => Some(LimitedScope::Credential),
                    _ => Some(LimitedScope::Named(text(u)?)),
                },
            },
            observations: list(u, observation)?,
            usage: list(u, cost)?,
        };
        let plan = RequestPlan {
            class: *u.choose(&[
                PriorityClass::Interactive,
                PriorityClass::Standard,
                PriorityClass::Background,
            ])?,
            tenant: option(u, scope_name)?,
            deadline_ms: Option::<i64>::arbitrary(u)?,
            cost: list(u, cost)?,
            scopes: list(u, scope_name)?,
        };
        let reconcile = match u.int_in_range(0..=2)? {
            0 => ReconcilePlan::ResendSameKey,
            1 => ReconcilePlan::Unsupported(text(u)?),
            _ => ReconcilePlan::Query(StatusQuery {
                method: u.choose(&["GET", "get", "", "POST", "G ET"])?.to_string(),
                url: match u.int_in_range(0..=2)? {
                    0 => text(u)?,
                    _ => format!("https://api.example.com/{}", text(u)?),
                },
                headers: text(u)?,
                body: big_bytes(u)?,
            }),
        };
        let reconciliation = match u.int_in_range(0..=2)? {
            0 => Reconciliation::Found(option(u, text)?),
            1 => Reconciliation::NotFound,
            _ => Reconciliation::Unknown(text(u)?),
        };
        Ok(Self {
            description,
            reading,
            plan,
            reconcile,
            reconciliation,
        })
    }
}

/// Text, sometimes long enough to cross a cap.
fn text(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=7)? {
        0 => "x".repeat(u.int_in_range(0..=4200)?),
        1 => "é".repeat(u.int_in_range(0..=1100)?),
        _ => String::arbitrary(u)?,
    })
}

fn scope_name(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=5)? {
        0 => "model:m".into(),
        1 => "search".into(),
        2 => format!("s{}", u.int_in_range(0..=20u8)?),
        _ => text(u)?,
    })
}

fn big_bytes(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    Ok(if u.ratio(1, 8)? {
        vec![b'x'; u.int_in_range(0..=70_000)?]
    } else {
        Vec::<u8>::arbitrary(u)?
    })
}

fn amount(u: &mut Unstructured<'_>) -> Result<u64> {
    Ok(match u.int_in_range(0..=3)? {
        0 => u64::arbitrary(u)?,
        1 => *u.choose(&[
            0,
            1,
            86_400_000,
            86_400_001,
            2_678_400_000,
            2_678_400_001,
            1_000_000_000_000,
            1_000_000_000_001,
        ])?,
        _ => u64::from(u32::arbitrary(u)?),
    })
}

fn option<T>(
    u: &mut Unstructured<'_>,
    f: impl FnOnce(&mut Unstructured<'_>) -> Result<T>,
) -> Result<Option<T>> {
    Ok(if bool::arbitrary(u)? {
        Some(f(u)?)
    } else {
        None
    })
}

fn list<T>(
    u: &mut Unstructured<'_>,
    mut f: impl FnMut(&mut Unstructured<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let n = if u.ratio(1, 16)? {
        u.int_in_range(0..=70)?
    } else {
        u.int_in_range(0..=4)?
    };
    (0..n).map(|_| f(u)).collect()
}

fn dimension(u: &mut Unstructured<'_>) -> Result<ReportedDimension> {
    Ok(match u.int_in_range(0..=5)? {
        0 => ReportedDimension::Requests,
        1 => ReportedDimension::Tokens,
        2 => ReportedDimension::InputTokens,
        3 => ReportedDimension::OutputTokens,
        4 => ReportedDimension::Concurrency,
        _ => ReportedDimension::Other(text(u)?),
    })
}

fn cost(u: &mut Unstructured<'_>) -> Result<Cost> {
    Ok(Cost {
        dimension: dimension(u)?,
        amount: amount(u)?,
    })
}

fn observation(u: &mut Unstructured<'_>) -> Result<Observation> {
    Ok(Observation {
        scope: option(u, scope_name)?,
        dimension: dimension(u)?,
        limit: option(u, amount)?,
        remaining: option(u, amount)?,
        used: option(u, amount)?,
        reset_after_ms: option(u, amount)?,
        window_ms: option(u, amount)?,
        source: text(u)?,
    })
}

//! Model scopes a configuration names: `[providers.X.models.<model>]` is the scope
//! `model:<model>`, the one requests for the model charge and the one the plugins' figures
//! about the model land in.

use std::sync::Arc;
use std::time::Duration;

use sluice::admission::{
    Acquire, Admission, Block, Config, Origin, ScopeKey, Waiting, model_scope,
};
use sluice::clock::{TokioClock, tokio_now};
use sluice::contract::{Observation, ReportedDimension as D};

/// 60 requests a minute on the model, paced at 90%: a burst of 7, then one every 60 s / 54.
const CONFIG: &str = "[providers.openai.models.gpt-4o]\nrequests_per_minute = 60\n";
const INTERVAL: Duration = Duration::from_nanos(60_000_000_000_u64.div_ceil(54));

fn admission() -> Admission {
    Admission::new(Config::from_toml(CONFIG).unwrap(), Arc::new(TokioClock)).unwrap()
}

fn for_the_model() -> Acquire {
    Acquire::new("openai", "org-1").scope(model_scope("gpt-4o"))
}

/// Admitted within a millisecond (tokio's timers tick in milliseconds) of `due`.
fn at(elapsed: Duration, due: Duration) -> bool {
    elapsed >= due && elapsed < due + Duration::from_millis(1)
}

#[tokio::test(start_paused = true)]
async fn a_models_table_limits_the_requests_that_name_its_scope() {
    let a = admission();
    let t0 = tokio_now();
    let burst: Vec<_> = permits(&a, 7).await;
    assert_eq!(tokio_now(), t0);
    let ticket = a.submit(for_the_model()).unwrap();
    let why = ticket.explain().expect("waiting");
    let Waiting::Scope { scope, block } = &why.waiting else {
        panic!("{why}")
    };
    assert_eq!(scope.to_string(), "openai/org-1/model:gpt-4o");
    assert!(
        matches!(
            block,
            Block::Quota {
                limit: 60,
                origin: Origin::Configured,
                ..
            }
        ),
        "{block:?}"
    );
    // The credential's own scope has no limits: a request that does not name the model goes.
    let other = a.acquire(Acquire::new("openai", "org-1")).await.unwrap();
    assert_eq!(tokio_now(), t0);
    let permit = ticket.await.unwrap();
    assert!(at(tokio_now() - t0, INTERVAL), "{:?}", tokio_now() - t0);
    drop((burst, other, permit));
}

/// `n` permits for the model, taken at once.
async fn permits(a: &Admission, n: usize) -> Vec<sluice::admission::Permit> {
    let mut permits = Vec::new();
    for _ in 0..n {
        permits.push(a.acquire(for_the_model()).await.unwrap());
    }
    permits
}

#[tokio::test(start_paused = true)]
async fn an_observation_on_the_model_scope_lands_in_the_scope_its_requests_charge() {
    let a = admission();
    let t0 = tokio_now();
    let permit = a.acquire(for_the_model()).await.unwrap();
    // What the OpenAI plugin reads from the answer: figures about the model's quota, which
    // the provider says has 2 requests left (it counted traffic the host did not see).
    let said = Observation {
        scope: Some(model_scope("gpt-4o")),
        dimension: D::Requests,
        limit: Some(60),
        remaining: Some(2),
        used: None,
        reset_after_ms: Some(50_000),
        window_ms: None,
        source: "x-ratelimit-remaining-requests".into(),
    };
    assert_eq!(permit.observe(&[said]), 1);
    let key = permit.observed_scope(Some("model:gpt-4o")).unwrap();
    assert_eq!(
        key,
        ScopeKey::Provider {
            provider: "openai".into(),
            credential: "org-1".into(),
            name: Some("model:gpt-4o".into()),
        }
    );
    permit.complete(None);
    // The configured bucket believed 6 were left; it now believes the provider's 2.
    let two = permits(&a, 2).await;
    assert_eq!(tokio_now(), t0);
    let third = a.acquire(for_the_model()).await.unwrap();
    assert!(at(tokio_now() - t0, INTERVAL), "{:?}", tokio_now() - t0);
    // And the figures are recorded on that same scope.
    let recorded = a.with_scheduler(|s| {
        let id = s.scope_id(&key);
        let (_, scope) = s.scope(id).unwrap();
        scope.learned().to_vec()
    });
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].remaining, Some(2));
    drop((two, third));
}

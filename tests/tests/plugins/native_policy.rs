//! A plugin's logic compiled natively, behind the same trait and the same guard as its
//! component: for every case of every bundled plugin's vectors, both give the same answer.

use std::sync::Arc;

use sluice::clock::ManualClock;
use sluice::contract::{ProviderPolicy, RequestClass, UncertainWrite};
use sluice::guard::{AnsweredBy, GuardedPolicy, QuarantinePolicy};
use sluice::plugin::NativePlugin;
use sluice::vectors::{self, Given};
use sluice_tests::{request, runtime, workspace};

fn guard(policy: Arc<dyn ProviderPolicy>) -> GuardedPolicy {
    GuardedPolicy::guarding(
        policy,
        QuarantinePolicy::default(),
        Arc::new(ManualClock::starting_at(1_795_953_600_000)),
    )
}

/// The guarded native `P` and the guarded component `name` answer every case of `name`'s
/// vectors alike, and neither leaves it to the fallback.
fn answers_alike<P: sluice_plugin_sdk::Plugin + 'static>(name: &str) -> usize {
    let native = NativePlugin::<P>::new().unwrap();
    let component = runtime().load_bundled(name).unwrap();
    assert_eq!(native.description(), component.description(), "{name}");

    let file = vectors::load(&workspace().join("plugins").join(name).join("vectors.json")).unwrap();
    // The native policy passes the vectors on its own, as the component does.
    let report = vectors::run(&native, &file);
    assert_eq!(report.failed(), 0, "{name}: {:#?}", report.results);

    let (native, component) = (guard(Arc::new(native)), guard(Arc::new(component)));
    for case in &file.cases {
        let at = format!("{name}: {}", case.name);
        match &case.given {
            Given::Outcome { outcome, part } => {
                let n = native.read_response(&case.request, outcome, *part);
                let c = component.read_response(&case.request, outcome, *part);
                assert!(matches!(n.by, AnsweredBy::Plugin), "{at}: {:?}", n.by);
                assert!(matches!(c.by, AnsweredBy::Plugin), "{at}: {:?}", c.by);
                assert_eq!(n.value, c.value, "{at}");
            }
            Given::Stretch { at: offset, bytes } => {
                let n = native.count_stream(&case.request, *offset, bytes);
                let c = component.count_stream(&case.request, *offset, bytes);
                assert!(matches!(n.by, AnsweredBy::Plugin), "{at}: {:?}", n.by);
                assert!(matches!(c.by, AnsweredBy::Plugin), "{at}: {:?}", c.by);
                assert_eq!(n.value, c.value, "{at}");
            }
        }

        let (n, c) = (
            native.plan_request(&case.request),
            component.plan_request(&case.request),
        );
        assert!(matches!(n.by, AnsweredBy::Plugin), "{at}: {:?}", n.by);
        assert_eq!(n.value, c.value, "{at}");
    }
    let write = UncertainWrite {
        method: "POST".into(),
        url: request(
            "POST",
            "https://api.stripe.com/v1/payment_intents",
            RequestClass::UncertainWrite,
        )
        .url,
        idempotency_key: Some("k-1".into()),
        client_reference: Some("order-7".into()),
        operation_id: None,
        now_ms: 1_795_953_600_000,
    };
    assert_eq!(
        native.reconcile(&write).value,
        component.reconcile(&write).value,
        "{name}"
    );
    file.cases.len()
}

#[test]
fn a_guarded_native_plugin_answers_every_vector_as_its_component_does() {
    let cases = answers_alike::<sluice_plugin_openai::OpenAi>("openai")
        + answers_alike::<sluice_plugin_anthropic::Anthropic>("anthropic")
        + answers_alike::<sluice_plugin_github::GitHub>("github")
        + answers_alike::<sluice_plugin_stripe::Stripe>("stripe")
        + answers_alike::<sluice_plugin_ietf::Ietf>("ietf")
        + answers_alike::<sluice_plugin_gemini::Gemini>("gemini")
        + answers_alike::<sluice_plugin_bedrock::Bedrock>("bedrock");
    assert!(cases >= 50, "only {cases} cases compared");
}

/// A native plugin whose answers break the caps: the guard counts it as failing, as it
/// would count the component, and quarantines it.
#[derive(Debug)]
struct Greedy;

impl sluice_plugin_sdk::Plugin for Greedy {
    fn describe() -> sluice_plugin_sdk::Description {
        sluice_plugin_sdk::Description {
            name: "greedy".into(),
            version: "1.0.0".into(),
            provider: "Example".into(),
            hosts: vec!["api.example.com".into()],
            routes: Vec::new(),
            read_routes: vec![],
            error_shape: None,
            refill: None,
        }
    }

    fn scopes(
        _req: &sluice_plugin_sdk::Request,
    ) -> Result<Vec<String>, sluice_plugin_sdk::PolicyError> {
        Ok((0..10_000).map(|i| format!("scope-{i}")).collect())
    }
}

#[test]
fn a_native_plugin_that_breaks_the_caps_is_quarantined_like_a_component() {
    let g = guard(Arc::new(NativePlugin::<Greedy>::new().unwrap()));
    let req = request("GET", "https://api.example.com/v1/x", RequestClass::Read);
    for i in 0..3 {
        let plan = g.plan_request(&req);
        assert!(
            matches!(&plan.by, AnsweredBy::Fallback(e) if e.plugin == "greedy" && e.function == "plan-request"),
            "call {i}: {:?}",
            plan.by
        );
        assert!(
            plan.value.scopes.is_empty(),
            "the built-in plan names no scope"
        );
    }
    assert!(matches!(
        g.plan_request(&req).by,
        AnsweredBy::Quarantined(_)
    ));
    assert_eq!(g.health().quarantines, 1);
}

//! Money exact through `sluice serve`: what decides a call's cost is read wherever the body
//! puts it, a body that could be read two ways is not sent, and a call whose cost cannot be
//! priced is refused while its tenant has a spend budget.
//!
//! Tenant `acme` may spend 0.05 USD a day; `gpt-4o` costs 2.50 per million input tokens and
//! 10.00 per million output. What it spent is priced from what the provider reported in each
//! answer's `usage`: what the provider bills.

use serde_json::{Value, json};

use crate::raw::post;
use crate::sidecar::World;

const AGENT_CHAT: &str = "/openai/v1/chat/completions";

/// The tenant's daily budget, in micro-dollars: 0.05 USD.
const BUDGET_MICROS: u64 = 50_000;

/// Input and output prices of `gpt-4o`, in micro-dollars per token.
const INPUT_MICROS: f64 = 2.5;
const OUTPUT_MICROS: f64 = 10.0;

/// The calls the test makes at most: far more than the budget allows.
const CALLS: usize = 300;

fn world() -> World {
    let world = World::new();
    world.configure(|text| {
        text + r#"
[tenants.budgets.acme]
spend_micros_per_day = 50000

[providers.openai.prices."gpt-4o"]
input_micros_per_million = 2500000
output_micros_per_million = 10000000
"#
    });
    world
}

/// A valid chat that names its model after 300 `logit_bias` entries (more fields than any
/// bounded view keeps) and 70 KB of whitespace (past the prefix a plugin is shown).
fn hidden_model_chat() -> String {
    let bias: serde_json::Map<String, Value> = (0..300)
        .map(|i| ((10_000 + i).to_string(), json!(-1)))
        .collect();
    format!(
        r#"{{"logit_bias":{}, {} "messages":[{{"role":"user","content":"{}"}}],"model":"gpt-4o","max_tokens":200}}"#,
        Value::Object(bias),
        " ".repeat(70_000),
        "word ".repeat(400)
    )
}

/// What the provider billed for one answer, from its `usage`, in micro-dollars.
fn billed(body: &str) -> f64 {
    let v: Value = serde_json::from_str(body).expect("a JSON answer");
    let tokens = |k: &str| v["usage"][k].as_u64().expect("usage in the answer") as f64;
    tokens("prompt_tokens") * INPUT_MICROS + tokens("completion_tokens") * OUTPUT_MICROS
}

/// A tenant with a 0.05 USD daily budget sends, again and again, a chat that names its
/// model after 300 `logit_bias` entries and 70 KB of whitespace: the model is found, the
/// calls are priced, and what the provider billed stays within 1.1× the budget before the
/// tenant is refused with 429.
#[test]
fn a_model_named_late_in_the_body_is_priced_and_the_budget_holds() {
    let world = world();
    let sidecar = world.serve();
    let body = hidden_model_chat();
    let mut spent = 0.0;
    let mut answered = 0;
    let refused = loop {
        let a = post(&sidecar, AGENT_CHAT, &[], &body);
        if a.status != 200 {
            break a;
        }
        spent += billed(&a.body);
        answered += 1;
        assert!(
            answered < CALLS,
            "{answered} calls answered: {spent} micro-dollars billed against a budget of \
             {BUDGET_MICROS}"
        );
    };
    eprintln!(
        "{answered} calls answered, {spent:.0} micro-dollars billed by the provider against a \
         budget of {BUDGET_MICROS} ({:.3}x)",
        spent / BUDGET_MICROS as f64
    );
    assert_eq!(refused.status, 429, "{refused:?}");
    assert!(refused.body.contains("budget"), "{}", refused.body);
    assert!(answered > 1, "the budget allows more than one such call");
    assert!(
        spent <= 1.1 * BUDGET_MICROS as f64,
        "{spent} micro-dollars billed against a budget of {BUDGET_MICROS}"
    );
}

/// A body that gives a key twice (the model, the maximum) is refused with 400 and never
/// reaches the provider: sluice would price one value and the provider might run the other.
#[test]
fn a_body_with_a_key_given_twice_gets_400_and_is_not_sent() {
    let world = world();
    let sidecar = world.serve();
    let before = world.openai.attempts().len();
    for body in [
        r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"model":"gpt-4o"}"#,
        r#"{"model":"gpt-4o","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"max_tokens":100000}"#,
    ] {
        let a = post(&sidecar, AGENT_CHAT, &[], body);
        assert_eq!(a.status, 400, "{body}: {a:?}");
        assert!(a.body.contains("more than once"), "{}", a.body);
    }
    assert_eq!(world.openai.attempts().len(), before, "nothing was sent");
}

/// A chat that names no model cannot be priced: refused before it is sent, saying why,
/// while the tenant has a spend budget (whatever `budgets.unpriced` says).
#[test]
fn a_chat_naming_no_model_is_refused_while_its_tenant_has_a_spend_budget() {
    let world = world();
    let sidecar = world.serve();
    let before = world.openai.attempts().len();
    let body = json!({"max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]});
    let a = post(&sidecar, AGENT_CHAT, &[], &body.to_string());
    assert_eq!(a.status, 403, "{a:?}");
    assert!(a.body.contains("no model was found"), "{}", a.body);
    assert_eq!(world.openai.attempts().len(), before, "nothing was sent");
}

//! A write through a pool keeps one member for its whole life: its answer lost, its resends
//! failing, the host gone and another started on its state, the write is settled with the
//! member it was first sent with — never sent with another member, whose account knows
//! nothing of it. Judged at the two members' providers (Stripe-style: a resend with the
//! write's key is answered with the first result, as Stripe does; a resend to the other
//! member would be a second payment).

use std::path::Path;
use std::time::Duration;

use sluice::config::SluiceConfig;
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice::retry::RetryConfig;
use sluice::writes::{Step, Write, WriteOutcome};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use sluice_tests::stack::{builder, transport};

const PAYMENTS: &str = "/v1/payment_intents";
/// The provider's base URL: nothing listens there.
const BASE: &str = "http://127.0.0.1:9";

/// A host whose provider `stripe` has a pool `cards` of `m0` and `m1`, each its own
/// provider, with its state in `dir`; `stop` is told each step of its writes.
fn host(
    dir: &Path,
    m0: &FakeProvider,
    m1: &FakeProvider,
    stop: impl Fn(Step) + Send + Sync + 'static,
) -> sluice::Sluice {
    // The provider's own base URL is no member's: every call goes where its member says.
    let text = format!(
        "[providers.stripe]\nplugin = \"stripe\"\nbase_url = \"{BASE}\"\n\
         [providers.stripe.limits]\nrequests_per_minute = 6000\n\
         [providers.stripe.credentials.m0]\nenv = \"SLUICE_TEST_UNUSED_KEY\"\nbase_url = \"{}\"\n\
         [providers.stripe.credentials.m1]\nenv = \"SLUICE_TEST_UNUSED_KEY\"\nbase_url = \"{}\"\n\
         [providers.stripe.pools.cards]\nmembers = [\"m0\", \"m1\"]\n",
        m0.url(""),
        m1.url("")
    );
    let mut config = SluiceConfig::from_toml(&text, Path::new(".")).expect("the configuration");
    let retry = RetryConfig {
        backoff_base_ms: 20,
        backoff_cap_ms: 50,
        ..RetryConfig::default()
    };
    config.retry = retry.clone();
    builder("stripe", "", retry, transport(Duration::from_secs(5)))
        .config(config)
        .state_dir(dir)
        .on_write_step(stop)
        .build()
        .expect("a host")
}

fn pay() -> Write {
    Write {
        task: "invoice-7".into(),
        action: "pay".into(),
        goal: "invoice-7: pay the supplier".into(),
        call: Call::post(
            "stripe",
            format!("{BASE}{PAYMENTS}"),
            "amount=700&currency=eur",
        )
        .pool("cards")
        .tenant("acme")
        .class(RequestClass::IdempotentWrite)
        .header("content-type", "application/x-www-form-urlencoded"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pools_write_keeps_its_member_across_a_lost_answer_and_a_restart() {
    let m0 = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .expect("fake");
    let m1 = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");

    // The first host sends the payment with m0 (both free: the first member); m0 stores it
    // and the answer is lost; the host stops dead as it goes to record that.
    m0.script(PAYMENTS, [Fault::StoreThenDrop]);
    let first = std::sync::Arc::new(host(dir.path(), &m0, &m1, |step| {
        assert!(step != Step::Answered(1), "the host stops here");
    }));
    let stopped = tokio::spawn({
        let first = first.clone();
        async move { first.write(&pay()).await }
    })
    .await;
    assert!(
        stopped.is_err(),
        "the first host stopped mid-write: {stopped:?}"
    );
    drop(first);
    assert!(m1.attempts().is_empty(), "nothing went with m1");

    assert_eq!(m0.stored().len(), 1, "m0 stored the payment");
    // A second host on the first one's state. A read through the pool goes with m0 first,
    // so a write chosen afresh would now go with m1; this one is settled by a resend with
    // its key, to m0, which answers with the first result.
    let second = host(dir.path(), &m0, &m1, |_| {});
    let read = Call::get("stripe", format!("{BASE}/v1/balance"))
        .pool("cards")
        .tenant("acme");
    assert!(matches!(
        second.execute(&read).await,
        Outcome::Succeeded { .. }
    ));
    let settled = second.write(&pay()).await.expect("the second host's write");
    assert!(
        matches!(settled, WriteOutcome::Succeeded { .. }),
        "{settled:?}"
    );
    let stored = m0.stored().len() + m1.stored().len();
    assert_eq!(stored, 1, "one payment, made once, at one member");
    assert!(
        m0.attempts_on(PAYMENTS) >= 2,
        "the second host settled the write with m0"
    );
    assert_eq!(m1.attempts_on(PAYMENTS), 0, "never with m1");
    assert_eq!(m0.duplicates() + m1.duplicates(), 0);
}

//! The operator's console at the wire: a sidecar in front of a fake provider, its console
//! used by a real headless chromium (through chromedriver), and every claim checked in the
//! journal, the verified audit log and what the provider received. The forms' defences are
//! checked without a browser, as a forging page would send them.
//!
//! `cargo test -p sluice-serve --test console -- --ignored screenshot` regenerates the
//! README's picture of the console (`docs/console.png`).

#[allow(
    dead_code,
    reason = "the admin tests' stack: the console uses part of it"
)]
#[path = "../admin/support.rs"]
mod support;
mod webdriver;

use std::time::Duration;

use serde_json::Value;
use sluice::journal::escalations::Choice;
use sluice_fake_provider::{Fault, Style};
use support::{ADMIN_TOKEN, Stack, sha256_hex, stack_with};
use webdriver::Browser;

const OPERATOR: &str = "ops@example.com";
const OPERATOR_TOKEN: &str = "operator-token-for-tests";

/// A sidecar whose console knows the operator `ops@example.com`.
async fn console_stack(style: Style, plugin: &str) -> Stack {
    let operators = format!(
        r#"operators = {{ "{OPERATOR}" = {{ sha256 = "{}" }} }}"#,
        sha256_hex(OPERATOR_TOKEN)
    );
    stack_with(style, plugin, &operators).await
}

/// A Stripe write whose outcome no one can tell (stored, its answer lost, twice): an
/// escalation a person must decide. Its id.
async fn uncertain_write(s: &Stack) -> i64 {
    s.fake
        .script("/v1/objects", [Fault::StoreThenDrop, Fault::StoreThenDrop]);
    let r = s
        .agent(
            "POST",
            "/stripe/v1/objects",
            &[
                ("x-sluice-class", "uncertain-write"),
                ("x-sluice-task", "pay-invoice-7"),
                ("x-sluice-action", "charge"),
                ("x-sluice-goal", "pay the supplier's invoice"),
            ],
        )
        .header("content-type", "application/x-www-form-urlencoded")
        .body("amount=700")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    r.headers()["x-sluice-escalation"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Signs `browser` in to the console of `s` with `token`.
async fn sign_in(browser: &Browser, s: &Stack, token: &str) {
    browser.go(&s.admin_url("/console")).await;
    browser.type_into("#token", token).await;
    browser.click("#sign-in").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_resolves_an_escalation_in_a_browser_and_the_decision_is_journaled_and_audited()
{
    if Browser::unavailable() {
        return;
    }
    let s = console_stack(Style::Stripe, "stripe").await;
    let id = uncertain_write(&s).await;
    assert_eq!(s.fake.stored().len(), 1);
    let browser = Browser::start(1280, 1000).await;

    // A wrong token is refused, saying so; the operator's signs in under the operator's name.
    sign_in(&browser, &s, "not-a-token").await;
    browser.until_text("#message", "not an operator").await;
    sign_in(&browser, &s, OPERATOR_TOKEN).await;
    browser.until_text("#operator", OPERATOR).await;

    // The live page lists the escalation; its page shows the sanitized case, no body.
    browser
        .click(&format!("a.open-escalation[data-id=\"{id}\"]"))
        .await;
    let case = browser
        .until_text("#case", "pay the supplier's invoice")
        .await;
    assert!(case.contains("POST /v1/objects"), "{case}");
    assert!(!case.contains("amount=700"), "no body in the case: {case}");
    for option in ["query-existing", "retry-same-key", "cancel", "send-as-new"] {
        browser.find(&format!("#option-{option}")).await;
    }

    // The operator found the object at the provider and has it asked about.
    let before = s.fake.attempts().len();
    browser.click("#option-query-existing").await;
    browser.type_into("#operation_id", "obj_000001").await;
    browser
        .type_into("#note", "found it in the dashboard")
        .await;
    browser.click("#submit-decision").await;
    let recorded = browser.until_text("#recorded", OPERATOR).await;
    assert!(recorded.contains("query-existing"), "{recorded}");
    browser.until_text("#state", "resolved").await;
    browser.until_text(".applied", "succeeded").await;

    // The journal holds the decision, by the signed-in operator.
    let approvals = s
        .sluice
        .journal()
        .escalations()
        .approvals("acme/pay-invoice-7")
        .unwrap();
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    let a = &approvals[0];
    assert_eq!(a.escalation_id, id);
    assert_eq!(a.decision.choice, Choice::QueryExisting);
    assert_eq!(a.decision.decided_by, OPERATOR);
    assert_eq!(a.decision.note, "found it in the dashboard");
    assert!(
        s.sluice
            .journal()
            .escalations()
            .get(id)
            .unwrap()
            .resolved_ms
            .is_some()
    );
    // Carried out at once: one status query, never a second object.
    let sent = s.fake.attempts()[before..].to_vec();
    assert_eq!(sent.len(), 1, "one status query: {sent:?}");
    assert_eq!(sent[0].method, "GET");
    assert_eq!(s.fake.stored().len(), 1, "never a second object");

    // The audit log verifies, and holds the decision with the operator's name.
    s.sluice.close().unwrap();
    let report = s.sluice.verify_audit(None).expect("the audit log verifies");
    assert!(report.records > 0 && report.checkpoints > 0, "{report:?}");
    let log = std::fs::read_to_string(s.dir.path().join("state").join("audit.log")).unwrap();
    let decision: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"decision\"") && l.contains(&format!("escalation {id}:")))
        .collect();
    assert_eq!(decision.len(), 1, "one decision record in:\n{log}");
    assert!(
        decision[0].contains(&format!("by {OPERATOR}")),
        "{}",
        decision[0]
    );
    // ... and the console says so, with the key's fingerprint.
    browser.go(&s.admin_url("/console")).await;
    browser.until_text("#audit-state", "verified").await;
    let key = browser.until_text("#audit-key", "sha256:").await;
    assert_eq!(key, report.key.to_string());
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn showing_a_body_is_recorded_and_audited_before_the_body_is_shown() {
    if Browser::unavailable() {
        return;
    }
    let s = console_stack(Style::Stripe, "stripe").await;
    let id = uncertain_write(&s).await;
    let browser = Browser::start(1000, 800).await;
    sign_in(&browser, &s, ADMIN_TOKEN).await;
    browser.until_text("#operator", "admin").await;
    browser
        .go(&s.admin_url(&format!("/console/escalations/{id}")))
        .await;
    browser.click("#show-body").await;
    let body = browser.until_text("#body", "amount=700").await;
    assert_eq!(body, "amount=700");
    let log = std::fs::read_to_string(s.dir.path().join("state").join("audit.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("body_disclosed") && l.contains("shown to admin")),
        "{log}"
    );
    browser.quit().await;
}

/// Signs in without a browser: the session cookie, and the page's CSRF token.
async fn session(s: &Stack) -> (String, String) {
    // The sign-in's own answer, not the page it sends the browser to.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client
        .post(s.admin_url("/console/sign-in"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={OPERATOR_TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age="] {
        assert!(cookie.contains(part), "{cookie}");
    }
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let page = s
        .client
        .get(s.admin_url("/console"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = page
        .split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no CSRF token in the page:\n{page}"))
        .to_owned();
    (cookie, csrf)
}

/// Issue 27: behind the TLS proxy the README recommends, the console refused every POST —
/// sign-in included — since the browser's origin was the proxy's `https://` one. With the
/// public origin configured, a sign-in from it goes, and one from the listener's own
/// `http://` origin is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_proxy_the_console_takes_forms_from_its_public_origin_only() {
    let operators = format!(
        "operators = {{ \"{OPERATOR}\" = {{ sha256 = \"{}\" }} }}\npublic_origin = \"https://ops.example.com/\"",
        sha256_hex(OPERATOR_TOKEN)
    );
    let s = stack_with(Style::Stripe, "stripe", &operators).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let sign_in = |origin: &'static str| {
        client
            .post(s.admin_url("/console/sign-in"))
            .header("host", "ops.example.com")
            .header("origin", origin)
            .header("sec-fetch-site", "same-origin")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={OPERATOR_TOKEN}"))
            .send()
    };
    let r = sign_in("https://ops.example.com").await.unwrap();
    assert_eq!(r.status(), 303, "{:?}", r.text().await);
    let local = format!("http://{}", s.running.admin_addr().unwrap());
    let r = client
        .post(s.admin_url("/console/sign-in"))
        .header("origin", local)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={OPERATOR_TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        403,
        "the listener's own origin is not the console's now"
    );
    assert_eq!(sign_in("https://evil.example").await.unwrap().status(), 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_forms_and_requests_without_a_session_are_refused_and_decide_nothing() {
    let s = console_stack(Style::Stripe, "stripe").await;
    let id = uncertain_write(&s).await;
    let (cookie, csrf) = session(&s).await;
    let resolve = s.admin_url(&format!("/console/escalations/{id}/resolve"));
    let host = s.running.admin_addr().unwrap().to_string();
    let post = |headers: Vec<(&'static str, String)>, body: String| {
        let mut req = s
            .client
            .post(&resolve)
            .header("content-type", "application/x-www-form-urlencoded");
        for (n, v) in headers {
            req = req.header(n, v);
        }
        req.body(body).send()
    };
    let good = format!("csrf={csrf}&option=cancel&note=");
    let forged = [
        (vec![("cookie", cookie.clone())], "option=cancel".to_owned()),
        (
            vec![("cookie", cookie.clone())],
            format!("csrf={}&option=cancel", "0".repeat(64)),
        ),
        (
            vec![
                ("cookie", cookie.clone()),
                ("origin", "http://evil.example".into()),
            ],
            good.clone(),
        ),
        (
            vec![
                ("cookie", cookie.clone()),
                ("sec-fetch-site", "cross-site".into()),
            ],
            good.clone(),
        ),
        (vec![], good.clone()),
    ];
    for (headers, body) in forged {
        let shown = format!("{headers:?} {body}");
        let r = post(headers, body).await.unwrap();
        assert!(
            r.status() == 403 || r.status() == 401,
            "{shown}: {}",
            r.status()
        );
    }
    assert!(
        s.sluice
            .journal()
            .escalations()
            .get(id)
            .unwrap()
            .resolved_ms
            .is_none(),
        "nothing was decided"
    );
    // The JSON the page polls needs the session; the admin API still needs its token.
    let r = s
        .client
        .get(s.admin_url("/console/data"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = s
        .client
        .get(s.admin_url("/scopes"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "a session is not the admin token");
    let data: Value = s
        .client
        .get(s.admin_url("/console/data"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(data["escalations"][0]["id"], id, "{data}");
    assert!(!data.to_string().contains("sk-test"), "never a credential");
    // The console's own form, from its own origin, decides.
    let r = post(
        vec![
            ("cookie", cookie.clone()),
            ("origin", format!("http://{host}")),
        ],
        good,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let a = &s
        .sluice
        .journal()
        .escalations()
        .approvals("acme/pay-invoice-7")
        .unwrap()[0];
    assert_eq!(
        (a.decision.choice, a.decision.decided_by.as_str()),
        (Choice::Cancel, OPERATOR)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_data_shows_429s_holds_breakers_and_sampled_waits() {
    let s = console_stack(Style::OpenAi, "openai").await;
    let (cookie, _) = session(&s).await;
    let r = s
        .held_by_429("POST", "/openai/v1/chat/completions", 600)
        .await;
    assert!(!r.status().is_success());
    // The sampler runs once a second.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let data: Value = s
        .client
        .get(s.admin_url("/console/data"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let r429 = &data["recent_429s"][0];
    assert_eq!(r429["tenant"], "acme", "{data}");
    assert!(
        r429["path"]
            .as_str()
            .unwrap()
            .contains("POST /v1/chat/completions"),
        "{data}"
    );
    assert_eq!(data["holds"][0]["scope"], "openai/team-key", "{data}");
    assert!(data["breakers"].is_array(), "{data}");
    let history = data["history"].as_array().unwrap();
    assert!(!history.is_empty(), "{data}");
    let last = history.last().unwrap();
    // Held: the bucket admits nothing, all of it is spent.
    assert_eq!(last["utilization"]["openai/team-key"], 1.0, "{last}");
    assert_eq!(last["waits"]["acme"]["calls"], 1, "{last}");
}

/// Regenerates `docs/console.png`, the README's picture of the console:
/// `cargo test -p sluice-serve --test console -- --ignored screenshot`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/console.png; run by hand to regenerate the README's picture"]
async fn screenshot() {
    if Browser::unavailable() {
        return;
    }
    let s = console_stack(Style::Stripe, "stripe").await;
    let id = uncertain_write(&s).await;
    // A few seconds of reads, in bursts, for the plots to draw.
    for i in 0..16 {
        for _ in 0..(i % 4 + 1) {
            let r = s
                .agent("GET", "/stripe/v1/objects", &[])
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "{}", r.status());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = s.held_by_429("GET", "/stripe/v1/balance", 90).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let browser = Browser::start(1200, 1900).await;
    sign_in(&browser, &s, OPERATOR_TOKEN).await;
    browser
        .find(&format!("a.open-escalation[data-id=\"{id}\"]"))
        .await;
    browser.until_text("#audit-state", "verified").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let png = browser.screenshot().await;
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/console.png");
    std::fs::write(&out, &png).unwrap();
    println!("wrote {} ({} bytes)", out.display(), png.len());
    browser.quit().await;
}

//! The admin API at the wire: a sidecar in front of a fake provider, asked over HTTP with
//! the admin token, and every claim checked against what the provider received.

mod support;

use serde_json::json;
use sluice_fake_provider::{Fault, RetryAfter, Style};
use sluice_serve::admin::ROUTES;
use support::{ADMIN_TOKEN, AGENT_TOKEN, chat, stack, stack_with_plugin, until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_but_healthz_refuses_a_missing_or_a_wrong_admin_token() {
    let s = stack(Style::OpenAi, "openai").await;
    let (status, v) = s.ask("GET", "/healthz", None, None).await;
    assert_eq!((status, &v["status"]), (200, &json!("ok")));
    for route in ROUTES.iter().filter(|r| **r != "GET /healthz") {
        let (method, path) = route.split_once(' ').unwrap();
        let path = path
            .replace("{name}", "t")
            .replace("{id}", "1")
            .replace("{provider}", "p");
        for token in [None, Some("not-the-token")] {
            let (status, v) = s.ask(method, &path, token, None).await;
            assert_eq!(status, 401, "{route} with {token:?}: {v}");
            let message = v["error"]["message"].as_str().unwrap();
            assert!(message.contains("Bearer <admin token>"), "{message}");
        }
    }
    // The agent's token is not the admin's.
    let (status, _) = s.ask("GET", "/scopes", Some(AGENT_TOKEN), None).await;
    assert_eq!(status, 401);
    // With the token: an unknown route is named, with the list; a wrong method is a 405.
    let (status, v) = s.ask("GET", "/nope", Some(ADMIN_TOKEN), None).await;
    assert_eq!(status, 404, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("GET /nope") && message.contains("GET /scopes"),
        "{message}"
    );
    assert_eq!(v["error"]["routes"].as_array().unwrap().len(), ROUTES.len());
    let (status, v) = s.ask("POST", "/scopes", Some(ADMIN_TOKEN), None).await;
    assert_eq!(status, 405, "{v}");
    let (status, v) = s
        .ask("GET", "/tasks/t/cancel", Some(ADMIN_TOKEN), None)
        .await;
    assert_eq!(status, 405, "{v}");
    assert!(s.fake.attempts().is_empty(), "nothing reached the provider");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_show_the_configured_limit_after_a_call_and_the_hold_after_a_429() {
    let s = stack(Style::OpenAi, "openai").await;
    let r = s
        .agent("POST", "/openai/v1/chat/completions", &[])
        .header("content-type", "application/json")
        .body(chat())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v = s.get("/scopes").await;
    let scope = v["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|sc| sc["key"] == "openai/team-key")
        .unwrap_or_else(|| panic!("no scope openai/team-key: {v}"))
        .clone();
    assert_eq!(scope["configured"], true, "{scope}");
    let quota = &scope["quotas"][0];
    assert_eq!(quota["key"], "requests_per_minute", "{scope}");
    assert_eq!(quota["limit"], 600, "{scope}");
    assert!(scope["held"].is_null(), "{scope}");
    assert_eq!(scope["next_allowed_ms"], 0, "{scope}");
    assert_eq!(
        (v["queued"].as_u64(), v["in_flight"].as_u64()),
        (Some(0), Some(0))
    );

    // A 429 asking for ten minutes, to a call that may take 300 ms: the call ends, and the
    // scope is held for every later one.
    let r = s
        .held_by_429("POST", "/openai/v1/chat/completions", 600)
        .await;
    assert!(!r.status().is_success(), "{}", r.status());
    let v = s.get("/scopes").await;
    let scope = v["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|sc| sc["key"] == "openai/team-key")
        .unwrap()
        .clone();
    let left = scope["held"]["left_ms"].as_u64().unwrap_or(0);
    assert!(left > 500_000, "held for about ten minutes: {scope}");
    assert!(
        scope["next_allowed_ms"].as_u64().unwrap() > 500_000,
        "{scope}"
    );
    assert!(scope["waiting_because"].is_string(), "{scope}");
    assert_eq!(s.fake.attempts_on("/v1/chat/completions"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_s_waiting_and_later_writes_never_reach_the_provider() {
    let s = stack(Style::OpenAi, "openai").await;
    // A 429 holds the scope for a minute: the task's write then waits in the queue.
    s.fake.script(
        "/v1/chat/completions",
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(60)),
        }],
    );
    let r = s
        .agent(
            "POST",
            "/openai/v1/chat/completions",
            &[("x-sluice-deadline-ms", "300")],
        )
        .body(chat())
        .send()
        .await
        .unwrap();
    assert!(!r.status().is_success());
    let task = [
        ("x-sluice-task", "nightly report"),
        ("x-sluice-action", "upload-1"),
    ];
    let waiting = tokio::spawn(
        s.agent("POST", "/openai/v1/files", &task)
            .body("purpose=assistants")
            .send(),
    );
    let q = until(&s, "/queue", |v| v["queued"] == 1).await;
    let row = &q["queue"][0];
    assert_eq!(
        (&row["tenant"], &row["queued"]),
        (&json!("acme"), &json!(1)),
        "{q}"
    );
    let tasks = s.get("/tasks").await;
    let row = &tasks["tasks"][0];
    // The task belongs to the agent's tenant.
    assert_eq!(row["task"], "acme/nightly report", "{tasks}");
    assert_eq!(
        (&row["agent"], &row["tenant"]),
        (&json!("bot"), &json!("acme"))
    );
    assert_eq!(
        (&row["in_flight"], &row["cancelled"]),
        (&json!(1), &json!(false))
    );

    // Names that are not text are refused before anything is cancelled.
    for bad in ["%ff%fe", "a%0Ab", "%zz", "%1b%5B31m"] {
        let (status, v) = s.post(&format!("/tasks/{bad}/cancel"), None).await;
        assert_eq!(status, 400, "{bad}: {v}");
    }
    let (status, v) = s.post("/tasks/acme%2Fnightly%20report/cancel", None).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["task"], "acme/nightly report");
    assert_eq!(
        (&v["seen_here"], &v["waiting_calls"]),
        (&json!(true), &json!(1)),
        "{v}"
    );
    let answered = waiting.await.unwrap().unwrap();
    assert!(!answered.status().is_success(), "{}", answered.status());
    let tasks = s.get("/tasks").await;
    assert_eq!(tasks["tasks"][0]["cancelled"], true, "{tasks}");
    assert_eq!(s.get("/queue").await["queued"], 0);

    // A write of the task sent afterwards is refused too.
    let later = [
        ("x-sluice-task", "nightly report"),
        ("x-sluice-action", "upload-2"),
    ];
    let r = s
        .agent("POST", "/openai/v1/files", &later)
        .body("purpose=assistants")
        .send()
        .await
        .unwrap();
    assert!(!r.status().is_success(), "{}", r.status());
    assert_eq!(
        s.fake.attempts_on("/v1/files"),
        0,
        "no write of the task went out"
    );
    assert_eq!(s.fake.attempts().len(), 1, "only the 429'd call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalation_is_listed_shown_and_resolved_and_its_decision_carried_out() {
    let s = stack(Style::Stripe, "stripe").await;
    // Stored and dropped, then the resend with the same key dropped too: a person decides.
    s.fake
        .script("/v1/objects", [Fault::StoreThenDrop, Fault::StoreThenDrop]);
    let hints = [
        ("x-sluice-class", "uncertain-write"),
        ("x-sluice-task", "pay-invoice-7"),
        ("x-sluice-action", "charge"),
        ("x-sluice-goal", "pay the supplier's invoice"),
    ];
    let r = s
        .agent("POST", "/stripe/v1/objects", &hints)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("amount=700")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    let id: i64 = r.headers()["x-sluice-escalation"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(s.fake.stored().len(), 1);

    let list = s.get("/escalations").await;
    let open = list["escalations"].as_array().unwrap();
    assert_eq!(open.len(), 1, "{list}");
    assert_eq!(
        (&open[0]["id"], &open[0]["state"]),
        (&json!(id), &json!("open"))
    );
    assert_eq!(open[0]["kind"], "uncertain_write");
    assert_eq!(open[0]["action"], "charge");

    let shown = s.get(&format!("/escalations/{id}")).await;
    assert_eq!(shown["task"], "acme/pay-invoice-7", "{shown}");
    assert_eq!(shown["case"]["endpoint"], "POST /v1/objects", "{shown}");
    assert_eq!(shown["case"]["goal"], "pay the supplier's invoice");
    assert_eq!(
        shown["options"],
        json!(["query-existing", "retry-same-key", "cancel", "send-as-new"])
    );
    assert!(
        !shown.to_string().contains("amount=700"),
        "no body in the case"
    );
    assert!(shown["decisions"].as_array().unwrap().is_empty());

    // Decisions the case does not take are refused, saying why; nothing is sent.
    let resolve = format!("/escalations/{id}/resolve");
    let refused = [
        (
            json!({"option": "wait", "by": "ops@example"}),
            "query-existing",
        ),
        (
            json!({"option": "teleport", "by": "ops@example"}),
            "not an option",
        ),
        (json!({"option": "cancel"}), "`by`"),
        (
            json!({"option": "cancel", "by": "ops\n@example"}),
            "operator",
        ),
        (
            json!({"option": "retry-same-key", "by": "ops@example", "operation_id": "obj_1"}),
            "operation",
        ),
    ];
    for (body, says) in refused {
        let (status, v) = s.post(&resolve, Some(body.clone())).await;
        assert_eq!(status, 400, "{body}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    assert_eq!(s.post("/escalations/x/resolve", None).await.0, 400);
    assert_eq!(
        s.ask("GET", "/escalations/999", Some(ADMIN_TOKEN), None)
            .await
            .0,
        404
    );
    let before = s.fake.attempts().len();

    // The operator found the object and has the provider asked about it.
    let (status, v) = s
        .post(
            &resolve,
            Some(json!({"option": "query-existing", "by": "ops@example",
                        "note": "found it in the dashboard", "operation_id": "obj_000001"})),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["decision"]["option"], "query-existing");
    assert_eq!(v["decision"]["by"], "ops@example");
    let applied = v["applied"].as_array().unwrap();
    assert_eq!(applied.len(), 1, "{v}");
    assert_eq!(applied[0]["outcome"], "succeeded", "{v}");
    assert_eq!(applied[0]["operation_id"], "obj_000001");
    let sent: Vec<_> = s.fake.attempts()[before..].to_vec();
    assert_eq!(sent.len(), 1, "one status query: {sent:?}");
    assert_eq!(sent[0].method, "GET");
    assert_eq!(s.fake.stored().len(), 1, "never a second object");

    assert!(
        s.get("/escalations").await["escalations"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let all = s.get("/escalations?all=true").await;
    assert_eq!(all["escalations"][0]["state"], "resolved", "{all}");
    let shown = s.get(&format!("/escalations/{id}")).await;
    assert_eq!(shown["decisions"][0]["note"], "found it in the dashboard");
    let (status, _) = s
        .post(
            &resolve,
            Some(json!({"option": "cancel", "by": "ops@example"})),
        )
        .await;
    assert_eq!(status, 409, "already resolved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_verifies_until_it_is_tampered_with() {
    let s = stack(Style::OpenAi, "openai").await;
    let fresh = s.get("/audit/verify").await;
    assert_eq!(fresh["result"], "ok", "{fresh}");
    assert_eq!(
        fresh["records"], 1,
        "a new log holds only the journal it is written beside: {fresh}"
    );
    let r = s
        .agent(
            "POST",
            "/openai/v1/files",
            &[("x-sluice-task", "t"), ("x-sluice-action", "upload")],
        )
        .body("purpose=assistants")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    s.sluice.close().unwrap();
    let ok = s.get("/audit/verify").await;
    assert_eq!(ok["result"], "ok", "{ok}");
    assert!(ok["records"].as_u64().unwrap() >= 3, "{ok}");
    assert!(ok["checkpoints"].as_u64().unwrap() >= 1, "{ok}");
    assert_eq!(ok["unsigned_tail"], 0, "{ok}");
    let key = ok["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("sha256:"), "{ok}");
    let pinned = s.get(&format!("/audit/verify?expect_key={key}")).await;
    assert_eq!(pinned["result"], "ok");
    let other = format!("sha256:{}", "0".repeat(64));
    let (status, v) = s
        .ask(
            "GET",
            &format!("/audit/verify?expect_key={other}"),
            Some(ADMIN_TOKEN),
            None,
        )
        .await;
    assert_eq!((status, &v["result"]), (409, &json!("failed")), "{v}");

    // One record edited, its JSON still valid: the chain breaks there.
    let log = s.dir.path().join("state").join("audit.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("\"upload\""), "{text}");
    std::fs::write(&log, text.replacen("\"upload\"", "\"uplaod\"", 1)).unwrap();
    let (status, v) = s.ask("GET", "/audit/verify", Some(ADMIN_TOKEN), None).await;
    assert_eq!(status, 409, "{v}");
    assert_eq!(v["result"], "failed");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("record"), "{message}");
    assert_eq!(v["key"], key.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_reload_takes_a_good_file_and_refuses_another_plugin_or_junk_while_the_old_one_serves()
 {
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("openai.wasm");
    let install = |bytes: &[u8]| {
        let tmp = files.path().join("openai.wasm.tmp");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    };
    let bundled = |name| sluice::plugin::bundled::get(name).unwrap();
    install(bundled("openai"));
    let s = stack_with_plugin(Style::OpenAi, "openai", &path.display().to_string()).await;
    let call = || async {
        s.agent("POST", "/openai/v1/chat/completions", &[])
            .header("content-type", "application/json")
            .body(chat())
            .send()
            .await
            .unwrap()
            .status()
    };
    assert_eq!(call().await, 200);

    // The same plugin again (a rebuild, in practice): taken.
    let (status, v) = s.post("/plugins/openai/reload", None).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["plugin"], json!("openai"));
    assert_eq!(v["contract"], json!("sluice:policy@0.5.0"));
    assert_eq!(v["version"], v["previous_version"]);

    // Another provider's plugin: a conflict with what serves, refused.
    install(bundled("anthropic"));
    let (status, v) = s.post("/plugins/openai/reload", None).await;
    assert_eq!(status, 409, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("the plugin `anthropic`, not `openai`")
            && message.contains("the old one keeps serving"),
        "{message}"
    );
    assert_eq!(call().await, 200, "the old version serves");

    // Not a component at all: unusable, refused.
    install(b"not a component");
    let (status, v) = s.post("/plugins/openai/reload", None).await;
    assert_eq!(status, 422, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is not a usable sluice plugin"),
        "{v}"
    );
    assert_eq!(call().await, 200, "the old version serves");

    let (status, v) = s.post("/plugins/nobody/reload", None).await;
    assert_eq!(status, 404, "{v}");
    let (status, _) = s
        .ask("GET", "/plugins/openai/reload", Some(ADMIN_TOKEN), None)
        .await;
    assert_eq!(status, 405);
    assert_eq!(
        s.fake.attempts_on("/v1/chat/completions"),
        3,
        "every call reached the provider once, none was lost to a reload"
    );
}

/// Issue 26: one token was accepted as both the admin API's and an agent's, so that agent
/// could govern the sidecar. The sidecar refuses to start, naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_is_both_an_agent_s_and_the_admin_s_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
        [serve.admin]
        token = {{ sha256 = "{t}" }}
        [serve.agents.bot]
        token = {{ sha256 = "{t}" }}
        tenant = "acme"
        "#,
        t = support::sha256_hex(AGENT_TOKEN),
    );
    let config =
        sluice_serve::config::from_toml(&text, std::path::Path::new(".")).expect("a configuration");
    let sluice = sluice::Sluice::builder()
        .config(config.host.clone())
        .state_dir(dir.path().join("state"))
        .seed(7)
        .build()
        .expect("a host");
    let Err(refused) = sluice_serve::Sidecar::new(std::sync::Arc::new(sluice), &config) else {
        panic!("the sidecar started with one token for the admin and an agent");
    };
    let message = refused.to_string();
    assert!(message.contains("serve.admin.token"), "{message}");
    assert!(message.contains("agent `bot`"), "{message}");
}

/// Issue 26: `/readyz` answered 200 while the journal could not be written, so a load
/// balancer kept sending writes a host could not record. Another process holding the
/// journal's lock past the busy timeout makes a write fail with nothing sent; `/readyz` then
/// answers 503 naming the journal until it can be written again, and then 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_is_not_ready_while_the_journal_cannot_be_written() {
    let s = stack(Style::Stripe, "stripe").await;
    // Ready once the start's recovery (of writes a previous run left) is done: `recovering`
    // until then, which a loaded machine makes last a moment.
    let mut ready = s.ask("GET", "/readyz", Some(ADMIN_TOKEN), None).await;
    for _ in 0..100 {
        if ready.1["status"] != json!("recovering") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        ready = s.ask("GET", "/readyz", Some(ADMIN_TOKEN), None).await;
    }
    let (status, v) = ready;
    assert_eq!((status, &v["status"]), (200, &json!("ready")), "{v}");
    let pay = |action: &'static str| {
        s.agent(
            "POST",
            "/stripe/v1/objects",
            &[
                ("x-sluice-class", "idempotent-write"),
                ("x-sluice-task", "invoices"),
                ("x-sluice-action", action),
            ],
        )
        .header("content-type", "application/x-www-form-urlencoded")
        .body("amount=700")
        .send()
    };

    // Another process takes the journal's write lock and keeps it.
    let other = rusqlite::Connection::open(s.dir.path().join("state/journal.sqlite")).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let r = pay("pay-1").await.unwrap();
    let status = r.status();
    assert!(
        status.is_server_error(),
        "{status}: {}",
        r.text().await.unwrap()
    );
    assert!(s.fake.attempts().is_empty(), "nothing unrecorded was sent");
    let (status, v) = s.ask("GET", "/readyz", Some(ADMIN_TOKEN), None).await;
    assert_eq!(
        (status, &v["status"]),
        (503, &json!("writes_refused")),
        "{v}"
    );
    let detail = v["detail"].as_str().unwrap();
    assert!(detail.contains("the journal cannot be written"), "{detail}");

    // The lock let go: ready again, and the write goes.
    other.execute_batch("ROLLBACK").unwrap();
    let (status, v) = s.ask("GET", "/readyz", Some(ADMIN_TOKEN), None).await;
    assert_eq!((status, &v["status"]), (200, &json!("ready")), "{v}");
    assert_eq!(pay("pay-2").await.unwrap().status(), 200);
    assert_eq!(s.fake.stored().len(), 1);
}

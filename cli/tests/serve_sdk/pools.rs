//! A pool of three credentials behind one name, each member its own provider endpoint
//! with its own limit, called by the official SDK through `sluice serve` with one base URL:
//! the pool's combined pace used, no member over its limit, and failover when a member's
//! quota is spent or its breaker opens.

use std::path::PathBuf;
use std::time::Duration;

use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};

use super::python::PYTHON;
use super::sidecar::{AGENT_TOKEN, OPENAI_KEY, Sidecar, agent_digest};
use super::{CHAT, calls};

/// The members' limits, requests a minute: 720 together, paced at 90%.
const LIMITS: [u64; 3] = [120, 240, 360];

/// Three OpenAI-style providers, one per member, and the configuration that pools them.
struct Pooled {
    members: Vec<FakeProvider>,
    dir: tempfile::TempDir,
    _runtime: tokio::runtime::Runtime,
}

impl Pooled {
    fn new(retry: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime for the fake providers");
        let members: Vec<FakeProvider> = LIMITS
            .iter()
            .map(|rpm| {
                let fake = runtime
                    .block_on(FakeProvider::start(
                        FakeConfig::new(Style::OpenAi).rpm(*rpm),
                    ))
                    .expect("start a fake provider");
                fake.require_credential("authorization", &format!("Bearer {OPENAI_KEY}"));
                fake
            })
            .collect();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let pooled = Self {
            members,
            dir,
            _runtime: runtime,
        };
        std::fs::write(pooled.config(), pooled.config_text(retry)).expect("the configuration");
        pooled
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("sluice.toml")
    }

    fn config_text(&self, retry: &str) -> String {
        let agent = agent_digest();
        let mut members = String::new();
        for (i, (fake, rpm)) in self.members.iter().zip(LIMITS).enumerate() {
            members.push_str(&format!(
                "[providers.openai.credentials.m{i}]\nenv = \"SDK_TEST_OPENAI_KEY\"\n\
                 base_url = \"{}\"\n[providers.openai.credentials.m{i}.limits]\n\
                 requests_per_minute = {rpm}\n",
                fake.url("")
            ));
        }
        format!(
            r#"
state_dir = "{state}"

# The provider's own base URL is no member's: every call goes where its member says.
[providers.openai]
base_url = "http://127.0.0.1:9"
[providers.openai.limits]
requests_per_minute = 60
{members}
[providers.openai.pools.gpt]
members = ["m0", "m1", "m2"]

[retry]
backoff_base_ms = 50
backoff_cap_ms = 500
{retry}

[serve]
listen = "127.0.0.1:0"
[serve.admin]
listen = "127.0.0.1:0"
token = {{ env = "SDK_TEST_ADMIN_TOKEN" }}
[serve.agents.bot]
token = {{ sha256 = "{agent}" }}
tenant = "acme"
credentials = {{ openai = "gpt" }}
"#,
            state = self.dir.path().join("state").display(),
        )
    }

    /// Every member's attempts' times, in seconds since its start, all together and sorted.
    fn times(&self) -> Vec<f64> {
        let mut all: Vec<f64> = self
            .members
            .iter()
            .flat_map(|m| m.attempts().into_iter().map(|a| a.at.as_secs_f64()))
            .collect();
        all.sort_by(f64::total_cmp);
        all
    }

    fn answered(&self, status: u16) -> Vec<usize> {
        self.members.iter().map(|m| m.answered(status)).collect()
    }
}

#[test]
fn a_pool_of_three_members_is_used_to_its_combined_pace_with_no_member_over_its_limit() {
    if PYTHON.unavailable() {
        return;
    }
    let pool = Pooled::new("");
    let sidecar = Sidecar::start(&pool.config(), &["--audit-key-in-state-dir"]);
    let count = 300;
    let seen = PYTHON.run(
        "openai_chat",
        &["--count", &count.to_string(), "--threads", "24"],
        &sidecar.url,
        AGENT_TOKEN,
    );
    let calls = calls(&seen);
    let ok = calls.iter().filter(|c| c["status"] == 200).count();
    assert_eq!(ok, count, "every read succeeds: {seen}");
    let limited: usize = pool.answered(429).iter().sum();
    let answered: Vec<usize> = pool.answered(200);
    // Each member enforces its own limit and answers 429 past it: none did.
    assert_eq!(limited, 0, "no member went over its limit: {answered:?}");
    // The pace after the first burst: every attempt from the 100th on, against the
    // members' paced rates together (90% of 720 a minute).
    let times = pool.times();
    let (from, to) = (times[99], times[times.len() - 1]);
    let rate = (times.len() - 100) as f64 / (to - from);
    let paced = LIMITS.iter().sum::<u64>() as f64 * 0.9 / 60.0;
    eprintln!(
        "pool: {answered:?} answered by member, {rate:.2}/s after the burst against {paced:.2}/s \
         paced ({:.1}%), {limited} 429s",
        rate / paced * 100.0
    );
    assert!(rate >= 0.95 * paced, "{rate:.2}/s of {paced:.2}/s");
    // The admin API says how the pool was used: every read admitted through it, each member's
    // calls counted.
    let scopes = sidecar.admin_json("/scopes");
    let members = scopes["pools"][0]["members"]
        .as_array()
        .expect("the pool's members");
    let chosen: Vec<u64> = members
        .iter()
        .map(|m| m["chosen"].as_u64().unwrap())
        .collect();
    let chosen_answered: Vec<u64> = answered.iter().map(|n| *n as u64).collect();
    assert_eq!(chosen, chosen_answered, "{scopes}");
    assert!(
        sidecar.metrics().contains("sluice_pool_chosen_total{"),
        "the pool's metrics"
    );
    // Each member took its share: at least 80% of what its own pace allows over the run.
    let span = to - times[0];
    for ((n, rpm), m) in answered.iter().zip(LIMITS).zip(0..) {
        let allowed = rpm as f64 * 0.9 / 60.0 * span;
        assert!(*n as f64 >= 0.8 * allowed, "m{m}: {n} of {allowed:.0}");
    }
}

#[test]
fn a_spent_member_and_a_broken_one_cost_no_read_and_the_spent_one_comes_back() {
    if PYTHON.unavailable() {
        return;
    }
    let retry = "quota_exhausted_hold_ms = 4000\nbreaker_threshold = 2\nbreaker_open_ms = 60000\n\
                 [retry.classes.read]\nmax_attempts = 6\nmax_wait_ms = 60000\n\
                 retry_statuses = [408, 429, 502, 503, 504, 529]\n";
    let pool = Pooled::new(retry);
    // m0's billing quota is spent for its next answers; m1 is broken for the whole test, so
    // an attempt at it begun before its breaker opened cannot close the breaker with a
    // success (a member that answers again is no longer broken, and its breaker rightly
    // closes).
    pool.members[0].script(
        CHAT,
        std::iter::repeat_n(
            Fault::Status {
                status: 429,
                code: "insufficient_quota",
            },
            2,
        ),
    );
    pool.members[1].script(
        CHAT,
        std::iter::repeat_n(Fault::Unavailable { retry_after: None }, 1000),
    );
    let sidecar = Sidecar::start(&pool.config(), &["--audit-key-in-state-dir"]);
    let seen = PYTHON.run(
        "openai_chat",
        &["--count", "60", "--threads", "6"],
        &sidecar.url,
        AGENT_TOKEN,
    );
    let calls = calls(&seen);
    let failed: Vec<_> = calls.iter().filter(|c| c["status"] != 200).collect();
    assert!(failed.is_empty(), "0 failed reads: {failed:?}");
    let retried = calls
        .iter()
        .filter(|c| c["headers"]["x-sluice-attempts"] != "1")
        .count();
    let attempts: Vec<usize> = pool.members.iter().map(|m| m.attempts_on(CHAT)).collect();
    eprintln!("failover: attempts by member {attempts:?}, {retried} reads retried once or more");
    // The spent member was held after its first answer (at most a second in flight with it),
    // the broken one's breaker opened after two failures: what it got beyond them was in
    // flight when the breaker opened, at most one attempt per agent thread. Without the
    // breaker it would take about a third of the attempts.
    assert!(pool.members[0].answered(429) <= 2, "{attempts:?}");
    assert!(pool.members[1].answered(503) <= 6, "{attempts:?}");
    // Each failed attempt moved the read to another member at its next attempt: a read takes
    // at most one attempt per member that failed it (two here), and the last one succeeds.
    for c in calls {
        let n: u32 = c["headers"]["x-sluice-attempts"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(n <= 3, "{c}");
    }
    assert!(
        sidecar.metrics().contains("sluice_pool_failovers_total{"),
        "failovers are counted"
    );
    // The spent member's hold passes: it takes reads again.
    let before = pool.members[0].answered(200);
    let broken_before = pool.members[1].attempts_on(CHAT);
    std::thread::sleep(Duration::from_secs(5));
    let again = PYTHON.run(
        "openai_chat",
        &["--count", "30", "--threads", "6"],
        &sidecar.url,
        AGENT_TOKEN,
    );
    assert!(
        super::calls(&again).iter().all(|c| c["status"] == 200),
        "{again}"
    );
    assert!(
        pool.members[0].answered(200) > before,
        "the spent member is back after its hold: {:?}",
        pool.answered(200)
    );
    assert_eq!(
        pool.members[1].attempts_on(CHAT),
        broken_before,
        "the broken member's breaker is open (60 s): it takes no attempt"
    );
}

//! `sluice demo`, run as the README and docs/demo.md run it: its JSON report must show what sluice promises —
//! no duplicate effect, the account used to at least 95%, at most 0.5% of attempts answered
//! 429, equal tenants treated equally — and the audit log verified.

use std::process::Command;

#[test]
fn the_demo_report_holds_sluice_to_its_promises() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("demo.json");
    let state = dir.path().join("demo-state");
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["demo", "--seed", "7", "--json"])
        .arg(&json)
        .arg("--state-dir")
        .arg(&state)
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .output()
        .expect("run sluice demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("checks on sluice"), "{stdout}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let s = &r["sluice"];
    let w = &s["writes"];
    assert!(w["logical_actions"].as_u64().unwrap() > 0, "{w}");
    assert!(w["dropped_after_storing"].as_u64().unwrap() > 0, "{w}");
    assert_eq!(w["duplicate_effects"], 0, "{w}");
    assert_eq!(w["effects_stored"], w["succeeded"], "{w}");
    assert_eq!(
        w["reconciliations"], w["dropped_after_storing"],
        "each drop settled by reconciliation: {w}"
    );
    let p = &s["provider"];
    let utilization = p["tpm_utilization"]
        .as_f64()
        .unwrap()
        .max(p["rpm_utilization"].as_f64().unwrap());
    assert!(utilization >= 0.95, "{p}");
    assert!(utilization <= 1.0, "never past the account's limit: {p}");
    assert!(p["rate_limited_share"].as_f64().unwrap() <= 0.005, "{p}");
    assert!(s["fairness_equal_tenants"].as_f64().unwrap() >= 0.95, "{s}");
    assert_eq!(s["audit"]["verified"], true, "{s}");
    // The noisy tenant, with nearly twice the agents of any other, gets no more than an
    // equal tenant.
    let share = |t: &str| {
        s["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["tenant"] == t)
            .unwrap()["share_of_capacity"]
            .as_f64()
            .unwrap()
    };
    assert!(share("noisy") <= share("acme"), "{s}");
    // The noisy tenant reaches its spend budget within the run: refused at once from then on.
    let b = &s["budget"];
    assert_eq!(b["tenant"], "noisy", "{b}");
    assert!(b["reached_at_s"].as_f64().unwrap() < 120.0, "{b}");
    assert!(b["refused_calls"].as_u64().unwrap() > 0, "{b}");
    assert!(b["spent_micros"].as_u64().unwrap() > 0, "{b}");
    assert!(
        stdout.contains("budget: tenant noisy's spend_micros_per_month"),
        "{stdout}"
    );
    // docs/writes.md: the kept journal holds no uncertain write (every drop was reconciled);
    // its open cases are the payments of `noisy` refused once its budget was spent.
    let listed = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["escalations", "list", "--journal"])
        .arg(state.join("journal.sqlite"))
        .output()
        .unwrap();
    let cases = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{cases}");
    assert!(!cases.contains("uncertain_write"), "{cases}");
    assert!(
        cases.lines().count() as u64 <= b["refused_calls"].as_u64().unwrap(),
        "{cases}"
    );
    for case in cases.lines() {
        assert!(
            case.contains(" open ") && case.contains("budget_spent") && case.contains("noisy-"),
            "{case}"
        );
    }
    // The naive client ran the same agents beside it.
    assert!(r["naive"]["provider"]["attempts"].as_u64().unwrap() > 0);
    assert!(
        r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["passed"] == true)
    );
}

#[test]
fn bad_options_are_named_and_an_earlier_run_is_never_mixed_in() {
    let dir = tempfile::tempdir().unwrap();
    let sluice = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg("demo")
            .args(args)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .output()
            .expect("run sluice demo")
    };
    let few = sluice(&["--agents", "3"]);
    assert_eq!(few.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&few.stderr).contains("--agents 3 is too few"));

    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("journal.sqlite"), b"an earlier run").unwrap();
    let used = sluice(&["--duration", "60", "--state-dir", state.to_str().unwrap()]);
    assert_eq!(used.status.code(), Some(2));
    let err = String::from_utf8_lossy(&used.stderr);
    assert!(
        err.contains(state.to_str().unwrap()) && err.contains("not empty"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(state.join("journal.sqlite")).unwrap(),
        b"an earlier run",
        "nothing overwritten"
    );
}

/// `--json` replaced whatever file it named (an audit log became a JSON report), and a
/// missing directory was named only after the whole run.
#[test]
fn a_json_path_that_is_taken_or_has_no_directory_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join("audit.log");
    std::fs::write(&taken, b"evidence").unwrap();
    for (path, said) in [
        (
            taken.clone(),
            "the path exists already; remove it or choose another path",
        ),
        (dir.path().join("nodir/demo.json"), "does not exist"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["demo", "--duration", "60", "--json"])
            .arg(&path)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .output()
            .expect("run sluice demo");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(said), "{err}");
        assert!(o.stdout.is_empty(), "refused before the run: {err}");
    }
    assert_eq!(std::fs::read(&taken).unwrap(), b"evidence");
}

#[test]
fn a_duration_or_agent_count_no_one_means_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for (args, said) in [
        (
            ["--duration", "18446744073709551615"],
            "--duration 18446744073709551615 is too long: at most 3600 seconds",
        ),
        (["--duration", "0"], "--duration must be at least 1 second"),
        (
            ["--agents", "1000000"],
            "--agents 1000000 is too many: at most 1000",
        ),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg("demo")
            .args(args)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run sluice demo");
        let start = sluice::clock::Clock::now(&sluice::clock::SystemClock);
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > std::time::Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("`sluice demo {}` still ran after 20 s", args.join(" "));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(said), "expected `{said}`: {err}");
    }
}

/// GETs `/metrics` from `addr`: the body, or `None` while nothing answers.
fn scrape(addr: &str) -> Option<String> {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

#[cfg(unix)]
#[test]
fn a_run_with_metrics_addr_serves_sluice_s_metrics_while_it_runs() {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;
    use std::time::Duration;

    let dir = tempfile::tempdir().unwrap();
    // On the wall clock, so the run lasts long enough to be scraped; stopped once it was.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["demo", "--real-time", "--duration", "60", "--agents", "7"])
        .args(["--metrics-addr", "127.0.0.1:0"])
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sluice demo");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let addr = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no address printed: {seen}"
        );
        seen.push_str(&line);
        if let Some(rest) = line.trim().strip_prefix("sluice demo: metrics at http://") {
            break rest.trim_end_matches("/metrics").to_owned();
        }
    };
    let mut body = String::new();
    for _ in 0..300 {
        body = scrape(&addr).unwrap_or_default();
        if body.contains("sluice_calls_admitted_total{") && body.contains("sluice_queue_depth{") {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "stopped by SIGTERM");
    assert!(body.contains(" 200 OK"), "{body}");
    let admitted = body
        .lines()
        .find(|l| {
            l.starts_with("sluice_calls_admitted_total{") && l.contains(r#"provider="openai""#)
        })
        .unwrap_or_else(|| panic!("no admitted calls of openai: {body}"));
    assert!(admitted.contains(r#"credential="team-key""#), "{admitted}");
    assert!(body.contains("sluice_queue_depth{scope="), "{body}");
    // Histograms, as the docs say — not the exporter's default summaries.
    assert!(
        body.contains("# TYPE sluice_plugin_call_seconds histogram"),
        "{body}"
    );
    assert!(
        body.contains("sluice_plugin_call_seconds_bucket{"),
        "{body}"
    );
    assert!(!body.contains("sk-demo"), "a secret in the metrics: {body}");
}

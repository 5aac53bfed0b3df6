//! What the load is sent to, all on loopback: the upstream (a fake OpenAI-style provider,
//! limits far above the load), and in front of it a plain hop, `sluice serve` as its own
//! process (the binary users run), the same sidecar inside this process, and the host
//! embedded in this process, called as a library.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use sluice::Sluice;
use sluice::config::SluiceConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_serve::{Running, Sidecar};

use crate::cpus;
use crate::load::{CREDENTIAL, PATH, Target, Via};

/// The provider key: sent by the direct client as an SDK would, and by the sidecar.
pub const PROVIDER_KEY: &str = "sk-bench-provider-key";
/// The admin API's token, for the real binary's `/metrics`.
const ADMIN_TOKEN: &str = "admin-bench-token";
/// The agent's token, which the sidecar knows by its SHA-256.
const AGENT_TOKEN: &str = "agent-bench-token";

type Error = Box<dyn std::error::Error>;

/// The upstream, demanding the provider's key.
pub async fn upstream() -> Result<FakeProvider, Error> {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi)).await?;
    fake.require_credential("authorization", &format!("Bearer {PROVIDER_KEY}"));
    Ok(fake)
}

/// The upstream itself, as an SDK calls it.
pub fn direct(fake: &FakeProvider) -> Target {
    Target {
        name: "direct",
        via: Via::Http {
            url: fake.url(PATH),
            authorization: format!("Bearer {PROVIDER_KEY}"),
        },
        pid: None,
        metrics: None,
    }
}

/// The program `name` on `PATH`, else in one of `also` (directories), if it is anywhere.
pub fn find_program(name: &str, also: &[&str]) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(also.iter().map(std::path::PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A process this bench started, stopped when dropped: asked with SIGTERM, as an operator
/// stops it, and killed when it has not exited within [`GRACE`]. `sluice serve` drains and
/// exits on SIGTERM, so a build that records its own profile (`scripts/build-release.sh`)
/// writes that profile as it does.
pub struct Process(pub Child);

/// How long a process has to exit on SIGTERM before it is killed.
const GRACE: std::time::Duration = std::time::Duration::from_secs(10);

impl Drop for Process {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use rustix::process::{Pid, Signal, kill_process};
            if kill_process(Pid::from_child(&self.0), Signal::TERM).is_ok() {
                let step = std::time::Duration::from_millis(20);
                let mut waited = std::time::Duration::ZERO;
                while waited < GRACE {
                    if matches!(self.0.try_wait(), Ok(Some(_)) | Err(_)) {
                        return;
                    }
                    std::thread::sleep(step);
                    waited += step;
                }
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The plain hop in front of `fake`: this binary again, as [`crate::hop`], on `cpu` when
/// one is given.
pub fn hop(fake: &FakeProvider, cpu: Option<usize>) -> Result<(Target, Process), Error> {
    let mut child = cpus::command(&std::env::current_exe()?, cpu)
        .args([crate::hop::HOP, &fake.url("")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("the hop's standard output")?;
    let process = Process(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("listening ")
        .ok_or_else(|| format!("the hop said {line:?}"))?
        .parse()?;
    let target = Target {
        name: "hop",
        via: Via::Http {
            url: format!("http://{addr}{PATH}"),
            authorization: format!("Bearer {PROVIDER_KEY}"),
        },
        pid: Some(process.0.id()),
        metrics: None,
    };
    Ok((target, process))
}

/// `sluice serve --config` on a configuration for `fake`, as its own process: `program`
/// (another build, to compare with), else the one built with this bench; on `cpu` when one
/// is given.
pub fn binary(
    dir: &Path,
    fake: &FakeProvider,
    name: &'static str,
    program: Option<&Path>,
    cpu: Option<usize>,
) -> Result<(Target, Process), Error> {
    let dir = dir.join(name.replace(' ', "-"));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("serve.toml");
    let own = match name {
        "baseline" => baseline_config(),
        _ => String::new(),
    };
    std::fs::write(&file, sidecar_text(&dir, fake, &own))?;
    let program = program.unwrap_or(Path::new(env!("CARGO_BIN_EXE_sluice")));
    let mut child = cpus::command(program, cpu)
        .arg("serve")
        .arg("--config")
        .arg(&file)
        .args(["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
        .arg("--audit-key-in-state-dir")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().ok_or("its standard error")?;
    let process = Process(child);
    let mut lines = BufReader::new(stderr).lines();
    let (mut addr, mut admin) = (None, None);
    let mut said = Vec::new();
    while addr.is_none() || admin.is_none() {
        let Some(line) = lines.next() else {
            return Err(format!(
                "sluice serve stopped before it said where it listens; it said:\n{}",
                said.join("\n")
            )
            .into());
        };
        let line = line?;
        said.push(line.clone());
        if let Some(rest) = line.split("agents connect to http://").nth(1) {
            let at = rest.split('/').next().unwrap_or_default();
            addr = Some(at.parse::<SocketAddr>()?);
        }
        if let Some(rest) = line.split("admin API at http://").nth(1) {
            admin = Some(rest.trim().parse::<SocketAddr>()?);
        }
    }
    let addr = addr.ok_or("sluice serve named no address for agents")?;
    // Whatever it says later is read and dropped, so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let target = Target {
        name,
        via: Via::Http {
            url: format!("http://{addr}/openai{PATH}"),
            authorization: format!("Bearer {AGENT_TOKEN}"),
        },
        pid: Some(process.0.id()),
        metrics: admin.map(|a| (format!("http://{a}/metrics"), ADMIN_TOKEN.to_owned())),
    };
    Ok((target, process))
}

/// The same sidecar inside this process, on its runtime.
pub async fn in_process(dir: &Path, fake: &FakeProvider) -> Result<(Target, Running), Error> {
    let inner = dir.join("in-process");
    std::fs::create_dir_all(&inner)?;
    let config = sluice_serve::config::from_toml(&config_text(&inner, &fake.url("")), &inner)?;
    let sluice = Arc::new(Sluice::builder().config(config.host.clone()).build()?);
    let running = Sidecar::new(sluice, &config)?
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .start()
        .await?;
    let target = Target {
        name: "sluice in-process",
        via: Via::Http {
            url: format!("http://{}/openai{PATH}", running.addr()),
            authorization: format!("Bearer {AGENT_TOKEN}"),
        },
        pid: None,
        metrics: None,
    };
    Ok((target, running))
}

/// The host embedded in this process, built from the same configuration, its calls made
/// with `Sluice::execute`: what a library user's call pays.
pub fn embedded(dir: &Path, fake: &FakeProvider) -> Result<Target, Error> {
    let inner = dir.join("embedded");
    std::fs::create_dir_all(&inner)?;
    let config = SluiceConfig::from_toml(&config_text(&inner, &fake.url("")), &inner)?;
    let sluice = Arc::new(Sluice::builder().config(config).build()?);
    Ok(Target {
        name: "embedded",
        via: Via::Embedded(sluice),
        pid: None,
        metrics: None,
    })
}

/// Spend budgets far above the load, and the model's price: every call is charged in the
/// journal before it is sent and corrected after (`ADDED_LATENCY_BUDGETS=1`).
const BUDGETS: &str = r#"
[budgets]
[tiers.free.budgets]
requests_per_day = 1000000000
spend_micros_per_month = 1000000000000
[tenants]
default_tier = "free"
[providers.openai.prices."gpt-4o-mini"]
input_micros_per_million = 150000
output_micros_per_million = 600000
"#;

/// Whether the targets charge budgets: `ADDED_LATENCY_BUDGETS=1`.
pub fn budgets() -> bool {
    std::env::var("ADDED_LATENCY_BUDGETS").is_ok_and(|v| v.trim() == "1")
}

/// The group journal every target keeps, when one is given: `ADDED_LATENCY_JOURNAL`, a
/// `postgres://` URL (each target is a host of its own in it), else each keeps its own file.
pub fn journal() -> Option<String> {
    std::env::var("ADDED_LATENCY_JOURNAL")
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// TOML added to every target's configuration: `ADDED_LATENCY_CONFIG`.
pub fn extra_config() -> String {
    std::env::var("ADDED_LATENCY_CONFIG").unwrap_or_default()
}

/// `ADDED_LATENCY_BASELINE_CONFIG`: TOML added to the baseline's configuration alone, after
/// its admin table.
pub fn baseline_config() -> String {
    std::env::var("ADDED_LATENCY_BASELINE_CONFIG").unwrap_or_default()
}

/// A sidecar's whole configuration: [`config_text`], its admin table, then `own`.
fn sidecar_text(dir: &Path, fake: &FakeProvider, own: &str) -> String {
    format!(
        "{}\n[serve.admin]\ntoken = {{ sha256 = \"{}\" }}\n{own}\n",
        config_text(dir, &fake.url("")),
        digest(ADMIN_TOKEN)
    )
}

/// Reads the configurations the targets will be given, with [`extra_config`] and
/// [`baseline_config`], in a scratch directory under `dir`, before any target starts: a bad
/// `ADDED_LATENCY_CONFIG` or `ADDED_LATENCY_BASELINE_CONFIG` is named as such, not found in
/// a sidecar's start-up error.
pub fn check_extra_config(dir: &Path, fake: &FakeProvider) -> Result<(), Error> {
    let scratch = dir.join("checked");
    let (extra, baseline) = (extra_config(), baseline_config());
    let checks = [
        ("ADDED_LATENCY_CONFIG", &extra, "", "every target's"),
        (
            "ADDED_LATENCY_BASELINE_CONFIG",
            &baseline,
            baseline.as_str(),
            "the baseline's",
        ),
    ];
    for (variable, added, own, whose) in checks {
        if added.trim().is_empty() {
            continue;
        }
        std::fs::create_dir_all(&scratch)?;
        sluice_serve::config::from_toml(&sidecar_text(&scratch, fake, own), &scratch).map_err(
            |e| {
                format!(
                    "{variable}: the configuration it adds to {whose} is refused: {e}. It \
                     comes after the tables the bench writes ([providers.openai], its \
                     credentials and limits, [serve.agents.bench], [serve.admin]), which it \
                     may not name again."
                )
            },
        )?;
    }
    Ok(())
}

/// The host's configuration: one OpenAI-style provider at `base_url`, limits far above the
/// load, one agent known by its token's digest; the key in a file beside it; with
/// [`BUDGETS`] when [`budgets`] says so, in the group journal [`journal`] names, and with
/// [`extra_config`] last.
fn config_text(dir: &Path, base_url: &str) -> String {
    std::fs::write(dir.join("openai.key"), format!("{PROVIDER_KEY}\n")).expect("the key file");
    let digest = digest(AGENT_TOKEN);
    let budgets = if budgets() { BUDGETS } else { "" };
    let journal = journal().map_or_else(String::new, |url| {
        // A JSON string is a TOML basic string.
        format!("[journal]\nurl = {}\n", serde_json::Value::String(url))
    });
    format!(
        r#"
        state_dir = "{dir}/state"
        [providers.openai]
        plugin = "openai"
        base_url = "{base_url}"
        [providers.openai.credentials.{CREDENTIAL}]
        file = "{dir}/openai.key"
        [providers.openai.limits]
        requests_per_minute = 6000000
        [serve.agents.bench]
        token = {{ sha256 = "{digest}" }}
        tenant = "bench"
        {budgets}
        {journal}
        {extra}"#,
        dir = dir.display(),
        extra = extra_config(),
    )
}

/// A token's SHA-256 in hex, as the configuration names it.
fn digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

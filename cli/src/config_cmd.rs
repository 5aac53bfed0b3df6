//! `sluice config check`: a pre-deploy gate over configuration files. Each is validated
//! (providers' plugins — loaded and run against their vectors, as the host does before it
//! serves — their own limits, base URLs and credentials, admission, retry, audit, transport, budgets
//! and prices) and shows how each scope will be paced and what each tenant may spend.
//!
//! Every name printed comes from the file (providers, scopes, models, tiers), so each goes
//! through `sluice::printable`: a key such as `"a\nfake: valid"` would otherwise print a
//! forged line, and one holding an ESC would drive the terminal. The library's errors are
//! escaped already.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use sluice::admission::{Limits, Rate};
use sluice::budget::{BudgetConfig, BudgetLimits};
use sluice::config::{PluginSource, ProviderSetup, ReloadTrigger};
use sluice::plugin::{ComponentCache, PluginLimits, PluginRuntime, RuntimeConfig, bundled};
use sluice::printable::printable;
use sluice::vectors;
use sluice_serve::config::{AgentProviderKeys, ServeConfig, TokenSource};

/// Admission configuration commands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate configuration files (TOML) as the host would start on each: every key, each
    /// provider's plugin loaded and run against its vectors, each credential and the signing
    /// key read; print how every scope is paced. Exits 2 when a file is invalid, 1 when a
    /// valid file's host would not start as things are, else 0 (the worst of all files).
    Check {
        /// The configuration files.
        #[arg(required = true, num_args = 1..)]
        files: Vec<PathBuf>,
    },
    /// Print the configuration reference (every key, its type, default and range) as
    /// Markdown: the text of docs/configuration.md.
    Reference,
}

pub fn run(command: ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Check { files } => {
            // The plugins of every file are compiled by one runtime, and cached as the host
            // caches them.
            let runtime =
                PluginRuntime::new(RuntimeConfig::default(), ComponentCache::user_default())?;
            let mut worst = 0;
            for (i, file) in files.iter().enumerate() {
                if i > 0 {
                    crate::print_once("\n")?;
                }
                worst = worst.max(check(file, &runtime)?);
            }
            Ok(ExitCode::from(worst))
        }
        ConfigCommand::Reference => crate::print_once(&crate::config_reference::markdown()),
    }
}

/// Appends a line to the report.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

mod pools;

/// What the report says of a part without which the host does not start: `config check`
/// then exits 1, whatever else is valid.
const WILL_NOT_START: &str = "will not start";

/// Checks one file and prints its report: 2 invalid, 1 would not start, 0 ready.
fn check(file: &std::path::Path, runtime: &PluginRuntime) -> anyhow::Result<u8> {
    let origin = printable(&file.display().to_string()).into_owned();
    let (host, serve) = match sluice_serve::config::from_file(file) {
        Ok(c) => (c.host, c.serve),
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(2);
        }
    };
    for (name, setup) in &host.providers {
        if let Err(why) = plugin_found(&setup.plugin) {
            eprintln!(
                "error: {origin}: `providers.{}.plugin`: {why}",
                printable(name)
            );
            return Ok(2);
        }
        if let Some(vectors) = setup.vectors.as_deref().filter(|v| !v.is_file()) {
            eprintln!(
                "error: {origin}: `providers.{}.vectors`: {}: no such file",
                printable(name),
                printable(&vectors.display().to_string())
            );
            return Ok(2);
        }
    }
    let config = &host.admission;
    // The report is printed in one write: a reader that stops early (`| head`) is not an
    // error.
    let mut out = String::new();
    outln!(out, "{origin}: valid");
    match &host.state_dir {
        Some(dir) => outln!(out, "state: {}", printable(&dir.display().to_string())),
        None => outln!(out, "state: the user's state directory (no state_dir set)"),
    }
    match &host.store {
        None => outln!(out, "store: in memory, this host only"),
        Some(store) => outln!(
            out,
            "store: {} shared by {} hosts (each paces at 1/{} of a limit while it is unreachable), host id {}, leases {} ms, key prefix {}",
            printable(&store.shown_url()),
            store.hosts,
            store.hosts,
            store.host_id.as_deref().map_or_else(
                || "the host name and the state directory".to_owned(),
                |h| printable(h).into_owned()
            ),
            store.lease_ttl.as_millis(),
            printable(&store.key_prefix)
        ),
    }
    if let Some(store) = &host.store {
        let claims = if host.journal.url.is_some() {
            "rows of the group's journal, not the store"
        } else if store.accept_claim_loss {
            "in the store, even one that can lose a claim (accept_claim_loss: an evicted claim \
             lets a second host send its action again)"
        } else {
            "in the store, only while it can lose none (no eviction, an append-only file; \
             `sluice store init` makes a new group's epoch once)"
        };
        outln!(out, "  claims of writes: {claims}");
    }
    match &host.journal.url {
        None => outln!(
            out,
            "journal: the state directory's own file (journal.sqlite)"
        ),
        Some(url) => outln!(
            out,
            "journal: {} shared by the group, each action owned by the host that recorded it, leases {} ms",
            printable(&url.shown()),
            host.journal.lease_ttl.as_millis()
        ),
    }
    outln!(
        out,
        "queue: at most {} waiting ({} per scope), {} s longest wait",
        config.queue.max_queued,
        config.queue.max_queued_per_scope,
        config.queue.max_wait_ms.get() / 1000
    );
    for (name, p) in &config.providers {
        let margin = p.margin.unwrap_or(config.margin);
        outln!(
            out,
            "provider {} (paced at {:.0}%)",
            printable(name),
            margin * 100.0
        );
        if let Some(setup) = host.providers.get(name) {
            print_setup(&mut out, setup);
            print_plugin_check(&mut out, runtime, setup);
        }
        print_limits(&mut out, "  each credential", &p.limits, margin)?;
        for named in p.named_scopes() {
            let what = format!(
                "  scope {} ({})",
                printable(&named.name),
                printable(&named.key)
            );
            print_limits(&mut out, &what, named.limits, margin)?;
        }
        pools::print(&mut out, p, host.providers.get(name), margin)?;
    }
    for (name, t) in &config.tiers {
        let queued = t.max_queued.map_or("no bound".into(), |n| n.to_string());
        let flying = t.max_in_flight.map_or("no bound".into(), |n| n.to_string());
        let classes = t.classes.as_deref().map_or("all".to_owned(), |c| {
            c.iter()
                .map(|c| format!("{c:?}").to_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
        });
        outln!(
            out,
            "tier {}: weight {}, precedence {}, classes {classes}, queued {queued}, in flight \
             {flying}",
            printable(name),
            t.weight,
            t.precedence
        );
        print_limits(&mut out, "  each tenant", &t.limits, config.margin)?;
    }
    outln!(
        out,
        "tenants: {} assigned, others in tier {}",
        config.tenants.assign.len(),
        printable(&config.tenants.default_tier)
    );
    for (class, budget) in &host.retry.classes {
        outln!(
            out,
            "retry {class}: {} attempts within {} s, on {:?}",
            budget.max_attempts,
            budget.max_wait_ms / 1000,
            budget.retry_statuses
        );
    }
    let t = &host.transport.timeouts;
    outln!(
        out,
        "transport: connect within {} ms, first byte within {} ms, idle at most {} ms, {} extra roots",
        t.connect.as_millis(),
        t.first_byte.as_millis(),
        t.idle.as_millis(),
        host.transport.extra_roots.len()
    );
    outln!(
        out,
        "audit: a checkpoint every {} records, {}",
        host.audit.checkpoint_every,
        host.audit
            .retention
            .map_or("kept forever".to_owned(), |r| format!(
                "kept {} days",
                r.as_secs() / 86_400
            ))
    );
    let key = match &host.audit.key_file {
        Some(file) => match sluice::audit::load_signing(file) {
            Ok(k) => format!(
                "{} (key {})",
                printable(&file.display().to_string()),
                sluice::audit::Fingerprint::of(&k.verifying_key())
            ),
            Err(e) => format!(
                "{} (NOT READABLE NOW, the host {WILL_NOT_START}: {e})",
                printable(&file.display().to_string())
            ),
        },
        None => "audit.key in the state directory, beside the log (sluice serve needs \
                 --audit-key-in-state-dir for that; name a key kept apart in [audit] key_file)"
            .to_owned(),
    };
    outln!(out, "  signing key: {key}");
    let secret = match &host.journal.key_secret_file {
        Some(file) => match sluice::journal::KeySecret::from_file(file) {
            Ok(_) => printable(&file.display().to_string()).into_owned(),
            Err(e) => format!("NOT USABLE NOW, the host {WILL_NOT_START}: {e}"),
        },
        None => "derived from the audit signing key".to_owned(),
    };
    outln!(out, "  idempotency key secret: {secret}");
    print_serve(&mut out, &serve);
    print_budgets(&mut out, &host.budgets);
    if out.contains(WILL_NOT_START) {
        outln!(
            out,
            "the configuration is valid, but the host {WILL_NOT_START} as things are: see \
             above"
        );
        crate::print_once(&out)?;
        return Ok(1);
    }
    crate::print_once(&out)?;
    Ok(0)
}

/// Loads the provider's plugin as the host would and runs its vectors: a plugin that does
/// not load, or fails a case, keeps the host from starting.
fn print_plugin_check(out: &mut String, runtime: &PluginRuntime, setup: &ProviderSetup) {
    let plugin = match sluice::reload::load(runtime, &setup.plugin, &setup.plugin_limits) {
        Ok(p) => p,
        Err(e) => {
            outln!(
                out,
                "  loaded: NO, DOES NOT LOAD, the host {WILL_NOT_START}: {e}"
            );
            return;
        }
    };
    let d = plugin.description();
    outln!(
        out,
        "  loaded: {} {}",
        printable(&d.name),
        printable(&d.version)
    );
    let Some(path) = &setup.vectors else {
        return;
    };
    let shown = printable(&path.display().to_string()).into_owned();
    let file = match vectors::load(path) {
        Ok(f) => f,
        Err(e) => {
            outln!(
                out,
                "  vectors run: {shown}: UNREADABLE, the host {WILL_NOT_START}: {e}"
            );
            return;
        }
    };
    let report = vectors::run(&plugin, &file);
    if report.failed() == 0 {
        outln!(out, "  vectors run: {} cases pass", report.passed());
        return;
    }
    outln!(
        out,
        "  vectors run: {shown}: {} of {} cases FAIL, the host {WILL_NOT_START} (`sluice plugin \
         test` shows every difference):",
        report.failed(),
        report.results.len()
    );
    for r in report.results.iter().filter(|r| r.failure.is_some()) {
        outln!(
            out,
            "    {}: {}",
            printable(&r.name),
            printable(r.failure.as_deref().unwrap_or_default())
        );
    }
}

/// Budgets and prices: the calendar, each tier's and tenant's budgets, each model's price.
fn print_budgets(out: &mut String, budgets: &BudgetConfig) {
    if !budgets.is_active() {
        outln!(out, "budgets: none");
        return;
    }
    let thresholds: Vec<String> = budgets
        .thresholds_percent
        .iter()
        .map(|t| format!("{t}%"))
        .collect();
    outln!(
        out,
        "budgets: calendar days and months in {}, money in micro-units of {}, reported at {}",
        printable(budgets.calendar.name()),
        budgets.currency,
        thresholds.join(", ")
    );
    let limits = |l: &BudgetLimits| -> String {
        let parts: Vec<String> = l.iter().map(|(b, n)| format!("{b} {n}")).collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    };
    for (tier, l) in &budgets.tiers {
        if !l.is_empty() {
            outln!(out, "  tier {}: each tenant {}", printable(tier), limits(l));
        }
    }
    for (tenant, l) in &budgets.tenants {
        outln!(out, "  tenant {}: {}", printable(tenant), limits(l));
    }
    for (provider, models) in &budgets.prices {
        for (model, p) in models {
            let cached = p
                .cached_input_micros_per_million
                .map_or_else(|| "the input price".to_owned(), |c| c.to_string());
            outln!(
                out,
                "  price {} {}: per million tokens, input {}, output {}, cached input {cached}",
                printable(provider),
                printable(model),
                p.input_micros_per_million,
                p.output_micros_per_million
            );
        }
    }
}

/// The `[serve]` table: where agents and the admin API connect, and each agent's tenant and
/// whether its token can be read now (`sluice serve` does not start without it).
fn print_serve(out: &mut String, serve: &ServeConfig) {
    let keys = match serve.agent_provider_keys {
        AgentProviderKeys::Refuse => "refused",
        AgentProviderKeys::Strip => "stripped",
    };
    outln!(
        out,
        "serve: agents at {}, {}, shutdown within {} ms, provider keys sent by agents {keys}",
        serve.listen,
        crate::count(serve.agents.len() as u64, "agent"),
        serve.shutdown_deadline.as_millis()
    );
    outln!(
        out,
        "  at most {} connections, each request read within {} ms, {} wrong tokens an \
         address a minute",
        serve.max_connections,
        serve.read_timeout.as_millis(),
        serve.failed_tokens_per_minute
    );
    let readable = |key: &str, source: &TokenSource| -> String {
        let from = match source {
            TokenSource::Env(var) => format!("${}", printable(var)),
            TokenSource::File(path) => printable(&path.display().to_string()).into_owned(),
            TokenSource::Sha256(_) => return "its SHA-256".to_owned(),
        };
        match sluice_serve::agents::load_token(key, source) {
            Ok(_) => format!("{from} (readable now)"),
            Err(e) => format!("{from} (NOT READABLE NOW, sluice serve {WILL_NOT_START}: {e})"),
        }
    };
    match &serve.admin {
        Some(admin) => {
            outln!(
                out,
                "  admin API at {} (at most {} connections{}), token from {}",
                admin.listen,
                admin.max_connections,
                admin
                    .public_origin
                    .as_deref()
                    .map(|o| format!(", console forms from {o}"))
                    .unwrap_or_default(),
                readable("serve.admin.token", &admin.token)
            );
            for (name, token) in &admin.operators {
                outln!(
                    out,
                    "  console operator {}: token from {}",
                    printable(name),
                    readable(&format!("serve.admin.operators.{name}"), token)
                );
            }
        }
        None => outln!(out, "  no admin API ([serve.admin] not set)"),
    }
    for (name, agent) in &serve.agents {
        outln!(
            out,
            "  agent {}: tenant {}{}, priorities {}{}, token from {}",
            printable(name),
            printable(&agent.tenant),
            if agent.name_tenant {
                " (may name others)"
            } else {
                ""
            },
            agent
                .priorities
                .classes()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(", "),
            if agent.pass_headers.is_empty() {
                String::new()
            } else {
                format!(", may set {}", agent.pass_headers.join(", "))
            },
            readable(&format!("serve.agents.{name}.token"), &agent.token)
        );
    }
}

/// Whether the plugin `source` names can be loaded: a bundled name, or a file that exists.
fn plugin_found(source: &PluginSource) -> Result<(), String> {
    match source {
        PluginSource::Bundled(name) if bundled::get(name).is_some() => Ok(()),
        PluginSource::Bundled(name) => Err(format!(
            "no bundled plugin is named `{}` (bundled: {}); set `plugin` to one of them or to \
             the path of a .wasm file",
            printable(name),
            bundled::names().collect::<Vec<_>>().join(", ")
        )),
        PluginSource::File(path) if path.is_file() => Ok(()),
        PluginSource::File(path) => Err(format!(
            "{}: no such file",
            printable(&path.display().to_string())
        )),
    }
}

/// A provider's plugin, base URL and credentials (where each secret comes from, and
/// whether it can be read now: a host does not start without it).
fn print_setup(out: &mut String, setup: &ProviderSetup) {
    match &setup.plugin {
        PluginSource::Bundled(name) => outln!(out, "  plugin: bundled {}", printable(name)),
        PluginSource::File(path) => {
            outln!(out, "  plugin: {}", printable(&path.display().to_string()));
        }
    }
    if let Some(vectors) = &setup.vectors {
        outln!(
            out,
            "  vectors: {} (must pass at start and at each reload)",
            printable(&vectors.display().to_string())
        );
    }
    print_plugin_limits(out, &setup.plugin_limits);
    match setup.reload {
        ReloadTrigger::Manual => outln!(out, "  reload: on request (admin API, the library)"),
        ReloadTrigger::Watch => outln!(
            out,
            "  reload: on request, and when the file changes (looked at every {} s)",
            sluice::reload::watch::WATCH_INTERVAL.as_secs()
        ),
    }
    if let Some(url) = &setup.base_url {
        outln!(out, "  base URL: {}", printable(url));
    }
    for (label, source) in &setup.credentials {
        let from = match (&source.env, &source.file) {
            (Some(var), _) => format!("${}", printable(var)),
            (None, Some(path)) => printable(&path.display().to_string()).into_owned(),
            (None, None) => "nowhere".to_owned(),
        };
        let state = match source.check() {
            Ok(()) if source.readable_by_others() => {
                "readable now, and by other users too: chmod 600 it".to_owned()
            }
            Ok(()) => "readable now".to_owned(),
            Err(e) => format!("NOT READABLE NOW, the host {WILL_NOT_START}: {e}"),
        };
        outln!(
            out,
            "  credential {}: {from}, sent in {} ({state})",
            printable(label),
            printable(&source.header)
        );
    }
}

/// A plugin's own limits, those it sets; the runtime's defaults for the rest.
fn print_plugin_limits(out: &mut String, limits: &PluginLimits) {
    if limits.is_default() {
        outln!(out, "  plugin limits: the runtime's");
        return;
    }
    let mut set = Vec::new();
    if let Some(d) = limits.call_deadline {
        set.push(format!("call deadline {} ms", d.as_millis()));
    }
    if let Some(m) = limits.max_memory_bytes {
        set.push(format!("memory {} MiB", m >> 20));
    }
    if let Some(t) = limits.max_table_elements {
        set.push(format!("table {t} elements"));
    }
    if let Some(w) = limits.max_warm_instances {
        set.push(format!("{w} warm instances"));
    }
    if let Some(n) = limits.instance_max_calls {
        set.push(format!("{n} calls per instance"));
    }
    outln!(
        out,
        "  plugin limits: {}; the runtime's for the rest",
        set.join(", ")
    );
}

fn print_limits(out: &mut String, what: &str, limits: &Limits, margin: f64) -> anyhow::Result<()> {
    if limits.is_empty() {
        outln!(out, "{what}: no limits (learned from responses)");
        return Ok(());
    }
    outln!(out, "{what}:");
    for (dimension, window, limit) in limits.quotas() {
        let rate = Rate::new(limit, window, margin)?;
        let paced = limit.get() - rate.capacity() + 1;
        outln!(
            out,
            "    {}: {limit}, paced at {paced} per {} s with a burst of {}",
            Limits::key(dimension, window),
            window.as_secs(),
            rate.capacity()
        );
    }
    if let Some(n) = limits.concurrent_requests {
        outln!(out, "    concurrent_requests: {n}");
    }
    Ok(())
}

//! `sluice serve`: the sidecar that agents in any language point their provider SDK at.
//!
//! An agent changes only its SDK's base URL (`http://127.0.0.1:8700/openai/v1`) and its API
//! key (its own sluice agent token). Each request `/{provider}/...` then goes through the
//! whole host — admission, the retry engine, the provider's plugin, the journal for writes
//! and the audit log — to the provider's configured base URL, with the sidecar's credential
//! added on the way out. The answer is the provider's, with `x-sluice-attempts` and
//! `x-sluice-waited-ms`; a call that ended without success is answered in the provider's
//! own error shape, with sluice's reason and the next safe action in it.
//!
//! - [`config`]: the `[serve]` table, read with the rest of the file ([`config::from_file`]);
//! - [`agents`]: agent tokens, and provider keys kept out;
//! - [`hints`]: the `x-sluice-*` request hints and answer headers;
//! - [`upstream`]: where each provider is, which routes are reads;
//! - `forward`: one request through the host; `streaming`: server-sent events passed
//!   through; `reply`: answers and errors in the provider's shape;
//! - [`admin`]: the admin API on its own listener and token;
//! - `console`: the operators' page on the admin listener (`/console`), signed in by token;
//! - `drain`: the writes a shutdown waits for.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use sluice::Sluice;
//! use sluice_serve::Sidecar;
//!
//! let config = sluice_serve::config::from_file("sluice.toml".as_ref())?;
//! let sluice = Arc::new(Sluice::builder().config(config.host.clone()).build()?);
//! let running = Sidecar::new(sluice, &config)?.start().await?;
//! println!("agents connect to http://{}", running.addr());
//! // ... on a stop signal:
//! let drained = running.shutdown().await;
//! println!("{} writes left to the next start", drained.writes_left);
//! # Ok(()) }
//! ```

pub mod admin;
pub mod agents;
mod allowance;
mod bodies;
pub mod config;
mod console;
mod drain;
mod error;
mod failed_tokens;
mod forward;
pub mod hints;
mod listener;
pub mod metric_names;
mod places;
mod reply;
pub mod request_path;
mod sdk_retry;
mod shape;
mod stream_usage;
mod streaming;
mod task_names;
pub mod tasks;
pub mod upstream;
mod workers;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use config::{ServeConfig, SidecarConfig};
use metrics::Counter;
use metrics_exporter_prometheus::PrometheusHandle;
use sluice::Sluice;
use sluice::observe::Handles;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use error::ServeError;
pub use shape::SluiceError;

use agents::Agents;
use drain::Drain;
use failed_tokens::FailedTokens;
use sdk_retry::SdkRetries;
use tasks::TaskBoard;
use upstream::Upstream;

/// What every request's handler shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub sluice: Arc<Sluice>,
    pub upstreams: BTreeMap<String, Upstream>,
    pub agents: Agents,
    pub max_body_bytes: usize,
    /// The memory request bodies may hold, by tenant and in all.
    pub bodies: Arc<allowance::Allowance>,
    /// How long a request's headers, then its body, may each take to arrive.
    pub read_timeout: Duration,
    /// Wrong tokens by source address, over every listener.
    pub failed_tokens: FailedTokens,
    pub tasks: TaskBoard,
    pub sdk_retries: SdkRetries,
    pub drain: Drain,
    /// The writes a previous run left unfinished are carried on: until then, not ready.
    pub ready: AtomicBool,
    pub metrics: Option<PrometheusHandle>,
    /// `sluice_serve_requests_total`'s handles, by provider and status.
    pub requests: Handles<Counter, 2>,
}

impl Shared {
    /// A request body's bounds.
    pub(crate) fn body_bounds(&self) -> bodies::Bounds {
        bodies::Bounds {
            max_body: self.max_body_bytes,
            memory: self.bodies.clone(),
            within: self.read_timeout,
        }
    }
}

/// A sidecar, configured, not yet listening.
#[derive(Debug)]
pub struct Sidecar {
    shared: Arc<Shared>,
    serve: ServeConfig,
    admin_token: Option<[u8; 32]>,
    /// The console's operators: name and token digest.
    operators: Vec<(String, [u8; 32])>,
}

impl Sidecar {
    /// A sidecar for `sluice`, configured by `config` (its `[serve]` table and the host's
    /// providers: [`config::from_file`]). Agents' tokens are read now.
    ///
    /// # Errors
    /// [`ServeError`]: a provider has no base URL, or a token cannot be read.
    pub fn new(sluice: Arc<Sluice>, config: &SidecarConfig) -> Result<Self, ServeError> {
        let serve = config.serve.clone();
        let admin_token = serve
            .admin
            .as_ref()
            .map(|a| agents::load_token("serve.admin.token", &a.token))
            .transpose()?;
        let operators = serve
            .admin
            .iter()
            .flat_map(|a| &a.operators)
            .map(|(name, source)| {
                let key = format!("serve.admin.operators.{name}");
                agents::load_token(&key, source).map(|digest| (name.clone(), digest))
            })
            .collect::<Result<Vec<_>, ServeError>>()?;
        // Read and error shapes as each plugin describes itself now, at start.
        let upstreams = Upstream::all(config, &|name| {
            let policy = sluice.executor().policy(name)?;
            Some(policy.plugin().description().clone())
        })?;
        let agents = Agents::load(&serve)?;
        // A token that is both the admin's (or an operator's) and an agent's would let that
        // agent govern the sidecar.
        let privileged = admin_token
            .iter()
            .map(|d| ("serve.admin.token".to_owned(), d))
            .chain(
                operators
                    .iter()
                    .map(|(name, d)| (format!("serve.admin.operators.{name}"), d)),
            );
        for (key, digest) in privileged {
            if let Some(agent) = agents.by_digest(digest) {
                return Err(ServeError::Token {
                    key,
                    why: format!(
                        "it is also the token of agent `{}`: give the admin API and each \
                         operator a token no agent has",
                        agent.name
                    ),
                });
            }
        }
        let shared = Shared {
            sluice,
            upstreams,
            agents,
            max_body_bytes: usize::try_from(serve.max_body_bytes).unwrap_or(usize::MAX),
            bodies: allowance::Allowance::new(
                serve.max_body_memory_per_tenant,
                serve.max_body_memory,
            ),
            read_timeout: serve.read_timeout,
            failed_tokens: FailedTokens::new(serve.failed_tokens_per_minute),
            tasks: TaskBoard::default(),
            sdk_retries: SdkRetries::default(),
            drain: Drain::default(),
            ready: AtomicBool::new(false),
            metrics: None,
            requests: Handles::new(forward::REQUESTS, ["provider", "status"]),
        };
        Ok(Self {
            shared: Arc::new(shared),
            serve,
            admin_token,
            operators,
        })
    }

    /// Serves `/metrics` on the admin API from `handle` (the Prometheus recorder the
    /// process installed), and drains its histogram samples every few seconds while the
    /// sidecar runs, so that they do not pile up between scrapes.
    #[must_use]
    pub fn metrics(mut self, handle: PrometheusHandle) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.metrics = Some(handle);
        }
        self
    }

    /// Listens on `addr` instead of `serve.listen` (port 0: any free port).
    #[must_use]
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.serve.listen = addr;
        self
    }

    /// Listens for the admin API on `addr` instead of `serve.admin.listen`.
    #[must_use]
    pub fn admin_listen(mut self, addr: SocketAddr) -> Self {
        if let Some(admin) = &mut self.serve.admin {
            admin.listen = addr;
        }
        self
    }

    /// Binds the listeners and starts serving, agents' connections on threads of their own
    /// (`serve.workers`); carries on, in the background, the writes a previous run left
    /// unfinished (`/readyz` answers 200 once that is done). Journaled writes, and the admin
    /// API, run on the runtime this is called on.
    ///
    /// # Errors
    /// [`ServeError::Bind`] naming the address; [`ServeError::Workers`] when the threads
    /// cannot be started.
    pub async fn start(self) -> Result<Running, ServeError> {
        let listener = bind(self.serve.listen, "serve.listen").await?;
        let addr = listener.local_addr().unwrap_or(self.serve.listen);
        let admin = match (&self.serve.admin, self.admin_token) {
            (Some(a), Some(token)) => {
                let l = bind(a.listen, "serve.admin.listen").await?;
                Some((l.local_addr().unwrap_or(a.listen), l, token))
            }
            _ => None,
        };
        if self.shared.agents.is_empty() {
            tracing::warn!("no agents are configured ([serve.agents]): every request is refused");
        }
        // Agents' connections are served on the workers (or, with none, on this runtime).
        // A journaled write runs here: the journal's calls block their thread, and a
        // worker's thread serves every connection handed to it.
        let workers = match self.serve.workers {
            Some(0) => None,
            given => Some(Arc::new(workers::Workers::start(given.map_or_else(
                || std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
                |n| usize::try_from(n).unwrap_or(1),
            ))?)),
        };
        self.shared.drain.run_on(tokio::runtime::Handle::current());
        let (stop, stopped) = watch::channel(false);
        let shared = self.shared.clone();
        let recovery = tokio::spawn(recover(shared.clone()));
        if let Some(handle) = shared.metrics.clone() {
            tokio::spawn(upkeep(handle, stopped.clone()));
        }
        let agents_task = tokio::spawn(listener::accept(
            listener,
            stopped.clone(),
            listener::Limits {
                bounds: places::Bounds {
                    visitors: self.serve.max_unauthenticated,
                    visitor_time: self.serve.auth_timeout,
                    per_agent: self.serve.max_connections_per_agent,
                    per_tenant: self.serve.max_connections_per_tenant,
                    seated: self.serve.max_connections,
                },
                read_timeout: self.serve.read_timeout,
                seat_on_request: None,
                trusted: self.serve.trusted_proxies.clone().into(),
            },
            "agents",
            workers.clone(),
            {
                let shared = shared.clone();
                move |req, peer| forward::handle(shared.clone(), req, peer)
            },
        ));
        let (admin_addr, admin_task, sampler) = match admin {
            Some((a, l, token)) => {
                let history = Arc::new(console::history::History::default());
                let sampler = tokio::spawn(console::history::run(
                    shared.sluice.clone(),
                    history.clone(),
                ));
                let public_origin = self
                    .serve
                    .admin
                    .as_ref()
                    .and_then(|a| a.public_origin.clone());
                let console = console::Console::new(token, self.operators, history, public_origin);
                let state = Arc::new(admin::Admin::new(shared.clone(), token));
                let console = Arc::new(console);
                let max = self
                    .serve
                    .admin
                    .as_ref()
                    .map_or(config::DEFAULT_ADMIN_MAX_CONNECTIONS, |a| a.max_connections);
                // One owner, the operators, seated at their first request.
                let limits = listener::Limits {
                    bounds: places::Bounds {
                        visitors: max,
                        visitor_time: self.serve.auth_timeout,
                        per_agent: max,
                        per_tenant: max,
                        seated: max,
                    },
                    read_timeout: self.serve.read_timeout,
                    seat_on_request: Some("operators"),
                    trusted: self.serve.trusted_proxies.clone().into(),
                };
                let task = tokio::spawn(listener::accept(
                    l,
                    stopped,
                    limits,
                    "admin",
                    None,
                    move |req, peer| admin_request(state.clone(), console.clone(), req, peer),
                ));
                (Some(a), Some(task), Some(sampler))
            }
            None => (None, None, None),
        };
        tracing::info!(%addr, admin = ?admin_addr, "sluice serve is listening");
        Ok(Running {
            addr,
            admin_addr,
            stop,
            accept: agents_task,
            admin: admin_task,
            sampler,
            recovery,
            shared,
            deadline: self.serve.shutdown_deadline,
            _workers: workers,
        })
    }
}

async fn bind(addr: SocketAddr, what: &'static str) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, what, source })
}

/// How often the recorder's histogram samples are drained into their buckets.
const UPKEEP: Duration = Duration::from_secs(5);

/// Drains the recorder's histogram samples into their buckets every [`UPKEEP`], as a scrape
/// of `/metrics` does, until the sidecar stops: the recorder keeps each sample until then,
/// so a sidecar nobody scrapes would grow with every call it governs.
async fn upkeep(handle: PrometheusHandle, mut stopped: watch::Receiver<bool>) {
    let mut every = tokio::time::interval(UPKEEP);
    loop {
        tokio::select! {
            _ = every.tick() => handle.run_upkeep(),
            _ = stopped.changed() => return,
        }
    }
}

/// Carries on the writes a previous run left unfinished, then says the sidecar is ready.
async fn recover(shared: Arc<Shared>) {
    match shared.sluice.recover().await {
        Ok(done) if done.is_empty() => {}
        Ok(done) => tracing::info!(
            writes = done.len(),
            "carried on the writes the previous run left unfinished"
        ),
        Err(e) => tracing::error!("carrying on unfinished writes failed: {e}"),
    }
    shared.ready.store(true, Ordering::Release);
    if !shared.sluice.journal().is_shared() {
        return;
    }
    // A group's journal: a decision an operator made through another host, on an action
    // this host owns, is carried out here.
    loop {
        tokio::time::sleep(DECISIONS_EVERY).await;
        match shared.sluice.escalations().apply().await {
            Ok(done) if done.is_empty() => {}
            Ok(done) => tracing::info!(
                writes = done.len(),
                "carried out decisions made through the group's other hosts"
            ),
            Err(e) => tracing::error!("carrying out decisions failed: {e}"),
        }
    }
}

/// How often a host of a group looks for decisions made through its other hosts.
const DECISIONS_EVERY: Duration = Duration::from_secs(2);

/// A sidecar that is serving.
#[derive(Debug)]
pub struct Running {
    addr: SocketAddr,
    admin_addr: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    accept: JoinHandle<()>,
    admin: Option<JoinHandle<()>>,
    /// Samples what the console plots, while the admin API serves.
    sampler: Option<JoinHandle<()>>,
    recovery: JoinHandle<()>,
    shared: Arc<Shared>,
    deadline: Duration,
    /// The threads agent connections are served on; stopped when this is dropped.
    _workers: Option<Arc<workers::Workers>>,
}

/// What a shutdown left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Journaled writes still running at the deadline: the journal holds them, and the
    /// next start carries them on.
    pub writes_left: usize,
    /// Whether every connection finished its request in flight before the deadline.
    pub connections_closed: bool,
}

impl Running {
    /// Where agents connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where the admin API listens, when configured.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// Whether the writes a previous run left were carried on.
    pub fn ready(&self) -> bool {
        self.shared.ready.load(Ordering::Acquire)
    }

    /// Stops: accepts nothing more, lets requests in flight finish and journaled writes
    /// settle, all within the configured deadline (`serve.shutdown_deadline_ms`); then cuts
    /// what is left (a write cut short is in the journal, and the next start carries it
    /// on) and signs the audit log's tail.
    pub async fn shutdown(self) -> Drained {
        let clock = self.shared.sluice.clock().clone();
        let started = clock.now();
        let _ = self.stop.send(true);
        let aborts: Vec<_> = std::iter::once(self.accept.abort_handle())
            .chain(self.admin.as_ref().map(JoinHandle::abort_handle))
            .collect();
        let closed = tokio::time::timeout(self.deadline, async {
            let _ = self.accept.await;
            if let Some(admin) = self.admin {
                let _ = admin.await;
            }
        })
        .await
        .is_ok();
        for a in aborts {
            a.abort();
        }
        let spent = clock.now().saturating_duration_since(started);
        let left = self.deadline.saturating_sub(spent);
        let writes_left = self.shared.drain.wait(left).await;
        self.shared.drain.abort_all();
        self.recovery.abort();
        if let Some(sampler) = &self.sampler {
            sampler.abort();
        }
        if let Err(e) = self.shared.sluice.close() {
            tracing::error!("signing the audit log's tail failed: {e}");
        }
        Drained {
            writes_left,
            connections_closed: closed,
        }
    }
}

/// One request on the admin listener: the operator's console, which signs people in with a
/// session of its own, else the admin API.
async fn admin_request(
    admin: Arc<admin::Admin>,
    console: Arc<console::Console>,
    mut req: hyper::Request<hyper::body::Incoming>,
    peer: std::net::IpAddr,
) -> Result<hyper::Response<reply::Body>, std::convert::Infallible> {
    // The admin API and the console read the address from the request (few requests).
    req.extensions_mut().insert(listener::Peer(peer));
    if console::owns(req.uri().path()) {
        return Ok(console::handle(&admin.shared, &console, req).await);
    }
    admin::handle(admin, req).await
}

//! The damage soak's store loss: two hosts share a Redis without persistence, and it is
//! restarted empty while one of them lies killed mid-write.
//!
//! Host `a` is the run's host; host `b`, with its own journal, joins the store before the
//! run and then tries the run's own task — the same actions, so the same client references
//! — twice: once right after the store lost its state, when only `a`'s journal knows who did
//! what (every action must be refused: nothing may reach the provider), and once after `a`
//! finished (every action must be refused as `a`'s). Between the two, the operator's
//! remedy: `a` is started again and re-registers the actions its journal holds, and once
//! the store says it did, a new ownership epoch is set (what `sluice store recover
//! --all-hosts-running` does).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use sluice::admission::shared::{RedisStore, SharedConfig};
use std::time::Instant;

use sluice::clock::{Clock, SystemClock};
use sluice_fake_provider::FakeProvider;

use crate::crash_run::Launch;
use crate::redis_server::RedisServer;

/// The run's own host.
pub const HOST_ID: &str = "a";

/// The other host.
const OTHER_ID: &str = "b";

/// The hosts' lease in the store: a host restarted after a kill waits this long for the
/// mark of its previous process to expire, or its claims are refused (one id, two
/// processes).
pub const LEASE_TTL_MS: u64 = 600;

/// How long a host is given to join the store or re-register its actions.
const PATIENCE: Duration = Duration::from_secs(15);

/// A store-loss run's Redis and its other host.
#[derive(Debug)]
pub struct StoreLoss {
    redis: RedisServer,
    /// The other host's state.
    other: PathBuf,
    /// When a process of each host id last ended, while the store still holds its mark.
    ended: Vec<(&'static str, Instant)>,
}

impl StoreLoss {
    /// A new Redis; the other host's state under `dir`.
    ///
    /// # Panics
    /// When `redis-server` cannot be started.
    pub fn start(dir: &Path) -> Self {
        let other = dir.join("other-host");
        std::fs::create_dir_all(&other).expect("the other host's directory");
        Self {
            redis: RedisServer::start(),
            other,
            ended: Vec::new(),
        }
    }

    /// The options of host `id`.
    pub fn options(&self, id: &str) -> Vec<String> {
        vec![
            "--store".into(),
            self.redis.url(),
            "--host-id".into(),
            id.into(),
        ]
    }

    /// Before the run: the other host starts once, doing nothing, so that it knows the
    /// store's epoch (`store.epoch` in its state) as a host of the group does.
    pub(crate) async fn join_other(&mut self, launch: &Launch) {
        let epoch = self.other.join("store.epoch");
        let (child, lines) = self.lingering(launch, OTHER_ID, 0).await;
        let joined = wait_for(|| async { epoch.exists() }).await;
        self.end(child, OTHER_ID);
        assert!(
            joined,
            "the other host never joined the store's epoch: {lines:?}"
        );
    }

    /// The damage: Redis restarted without persistence (every claim, lease and the epoch
    /// gone).
    pub fn lose_state(&mut self) {
        self.redis.restart();
        self.ended.clear();
    }

    /// Right after the loss: the other host tries every action of the task, and must be
    /// refused each one with nothing sent; then the operator's remedy — the run's host
    /// started again (it settles what its journal holds and re-registers it), and once the
    /// store holds its re-registration, a new ownership epoch. Returns how the damaged
    /// start went.
    pub(crate) async fn damaged_start(
        &mut self,
        launch: &Launch,
        fake: &FakeProvider,
        log: &mut Vec<String>,
        problems: &mut Vec<String>,
    ) -> &'static str {
        self.other_tries(
            launch,
            fake,
            "lost its state",
            "right after the store lost its state",
            log,
            problems,
        )
        .await;
        let (child, lines) = self.lingering(launch, HOST_ID, launch.actions).await;
        log.push("-- restarted after the store lost its state --".into());
        log.extend(lines);
        let store = self.store();
        let back = wait_for(|| async { store.reclaimed(HOST_ID).await.unwrap_or(false) }).await;
        if back {
            store
                .recover_ownership()
                .await
                .expect("a new ownership epoch");
        } else {
            problems.push("the host never re-registered its actions in the store".into());
        }
        self.end(child, HOST_ID);
        "refused"
    }

    /// Before a start of host `id`: waits out the mark of its previous process.
    pub(crate) async fn before_start(&mut self, id: &str) {
        let lease = Duration::from_millis(LEASE_TTL_MS + 150);
        if let Some((_, at)) = self.ended.iter().find(|(h, _)| *h == id) {
            let passed = SystemClock.now().saturating_duration_since(*at);
            tokio::time::sleep(lease.saturating_sub(passed)).await;
        }
    }

    /// After the run's host finished: the other host tries every action again, and must be
    /// refused each one as the run's host's, with nothing sent.
    pub(crate) async fn after_finish(
        &mut self,
        launch: &Launch,
        fake: &FakeProvider,
        log: &mut Vec<String>,
        problems: &mut Vec<String>,
    ) {
        self.other_tries(
            launch,
            fake,
            "belongs to host \"a\"",
            "after the run's host finished",
            log,
            problems,
        )
        .await;
    }

    /// The other host tries the task's actions: each must be refused saying `refusal`, and
    /// the provider must see no attempt.
    async fn other_tries(
        &mut self,
        launch: &Launch,
        fake: &FakeProvider,
        refusal: &str,
        when: &str,
        log: &mut Vec<String>,
        problems: &mut Vec<String>,
    ) {
        let before = fake.attempts().len();
        self.before_start(OTHER_ID).await;
        let (child, lines) = self.lingering(launch, OTHER_ID, launch.actions).await;
        self.end(child, OTHER_ID);
        let sent = fake.attempts().len() - before;
        log.push(format!("-- the other host, {when} --"));
        log.extend(lines.iter().cloned());
        let refused = lines
            .iter()
            .filter(|l| l.starts_with("error ") && l.contains(refusal))
            .count();
        if sent > 0 || refused != launch.actions {
            problems.push(format!(
                "the other host, {when}: {sent} attempt(s) reached the provider and \
                 {refused} of {} action(s) were refused saying `{refusal}`",
                launch.actions
            ));
        }
    }

    /// Host `id` started on its state doing the task's first `actions`, read until it says
    /// `done` (it then lingers, for the store's upkeep); with what it printed.
    async fn lingering(
        &mut self,
        launch: &Launch,
        id: &'static str,
        actions: usize,
    ) -> (Child, Vec<String>) {
        let dir = if id == HOST_ID {
            self.other.parent().expect("the run's directory").to_owned()
        } else {
            self.other.clone()
        };
        let mut options = self.options(id);
        options.extend(["--linger-ms".into(), PATIENCE.as_millis().to_string()]);
        let launch = launch.clone();
        tokio::task::spawn_blocking(move || {
            let mut child = launch.child(&dir, actions, None, &options);
            let stdout = child.stdout.take().expect("piped");
            let mut lines = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let done = line == "done";
                lines.push(line);
                if done {
                    break;
                }
            }
            (child, lines)
        })
        .await
        .expect("a host process")
    }

    /// Ends host `id`'s lingering process.
    fn end(&mut self, mut child: Child, id: &'static str) {
        let _ = child.kill();
        let _ = child.wait();
        self.ended(id);
    }

    /// A process of host `id` ended now.
    pub(crate) fn ended(&mut self, id: &'static str) {
        self.ended.retain(|(h, _)| *h != id);
        self.ended.push((id, SystemClock.now()));
    }

    fn store(&self) -> RedisStore {
        let mut config = SharedConfig::new(self.redis.url(), 2.try_into().expect("two"));
        config.timeout = Duration::from_secs(2);
        RedisStore::new(&config).expect("a store client")
    }
}

/// Polls `check` until it holds or [`PATIENCE`] runs out; whether it held.
async fn wait_for<F: Future<Output = bool>>(check: impl Fn() -> F) -> bool {
    let until = SystemClock.now() + PATIENCE;
    while SystemClock.now() < until {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

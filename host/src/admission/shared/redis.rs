//! The store on Redis: one connection (multiplexed, reconnecting by itself), the scripts of
//! [`super::scripts`], and the keys they touch. A `rediss://` store is reached over TLS
//! (rustls on ring), its certificate checked against the configured CA and its host name; a
//! certificate refused is named in the store's error ([`crate::tls::refusal`]).

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Script, Value};

use super::answers::{Claimed, EpochCheck, Refusal, SliceAsk, Sliced, StoreError, Verdict};
use super::scripts::{
    ADMIT, CLAIM, HEARTBEAT, IDLE_KEEP_MS, LEARNED_FOR_US, RENEW, SETTLE, SHARE, SLICE,
    SLOT_POLL_US,
};
use super::{QuotaFigures, ScopeFigures, SharedConfig, StoreTls};
use crate::admission::scope::ScopeKey;
use crate::admission::usage::Usage;
use crate::tls::refusal::Peer;

/// The shared store on Redis.
#[derive(Clone)]
pub struct RedisStore {
    conn: ConnectionManager,
    prefix: String,
    timeout: Duration,
    lease_ttl_us: u64,
    admit: Script,
    settle: Script,
    slice: Script,
    share: Script,
    renew: Script,
    heartbeat: Script,
    claim: Script,
    /// The server, for the words of a refused certificate (`None`: no TLS).
    peer: Option<Peer>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A store for `config`. Connects lazily: a Redis that is down at start is found at the
    /// first admission, which then falls back to local pacing.
    ///
    /// # Errors
    /// [`StoreError::Redis`] for a URL the client cannot use, or certificate files that
    /// cannot be read.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(config: &SharedConfig) -> Result<Self, StoreError> {
        let tls = config.tls().map_err(|e| StoreError::Redis(e.to_string()))?;
        let peer = tls.as_ref().map(|t| {
            Peer::new(
                "the Redis server",
                t.ca.as_ref().map(|c| c.path.as_path()),
                t.identity.as_ref().map(|i| i.cert_path.clone()),
            )
        });
        let client = match tls {
            None => redis::Client::open(config.url.as_str()),
            Some(tls) => tls_client(&config.url, tls),
        }
        .map_err(|e| redis_error(&e, None))?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.timeout))
            .set_response_timeout(Some(config.timeout))
            .set_number_of_retries(1)
            .set_max_delay(config.timeout);
        let conn = ConnectionManager::new_lazy_with_config(client, manager)
            .map_err(|e| redis_error(&e, peer.as_ref()))?;
        Ok(Self {
            conn,
            prefix: config.key_prefix.clone(),
            timeout: config.timeout,
            lease_ttl_us: micros(config.lease_ttl),
            admit: Script::new(ADMIT),
            settle: Script::new(SETTLE),
            slice: Script::new(SLICE),
            share: Script::new(SHARE),
            renew: Script::new(RENEW),
            heartbeat: Script::new(HEARTBEAT),
            claim: Script::new(CLAIM),
            peer,
        })
    }

    /// The key of a quota of `scope`.
    pub(super) fn quota_key(&self, scope: &ScopeKey, q: &QuotaFigures) -> String {
        format!(
            "{}:q:{scope}:{}:{}",
            self.prefix,
            q.dimension.name(),
            q.window.as_millis()
        )
    }

    pub(super) fn hold_key(&self, scope: &ScopeKey) -> String {
        format!("{}:h:{scope}", self.prefix)
    }

    /// The key of the set of `scope`'s concurrency leases.
    pub(super) fn lease_key(&self, scope: &ScopeKey) -> String {
        format!("{}:c:{scope}", self.prefix)
    }

    pub(super) fn claim_key(&self, action: &str) -> String {
        format!("{}:a:{action}", self.prefix)
    }

    fn epoch_key(&self) -> String {
        format!("{}:epoch", self.prefix)
    }

    fn recovered_key(&self) -> String {
        format!("{}:epoch-recovered", self.prefix)
    }

    fn reclaimed_key(&self, host: &str) -> String {
        format!("{}:reclaimed:{host}", self.prefix)
    }

    /// Whether `host` re-registered its actions in this store since it last lost its state.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn reclaimed(&self, host: &str) -> Result<bool, StoreError> {
        let mut cmd = redis::cmd("EXISTS");
        cmd.arg(self.reclaimed_key(host));
        let n: i64 = self.run(cmd.query_async(&mut self.conn.clone())).await?;
        Ok(n > 0)
    }

    /// The hosts that re-registered their actions in this store, with how many each.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn reclaimed_hosts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let prefix = format!("{}:reclaimed:", self.prefix);
        let mut cmd = redis::cmd("KEYS");
        cmd.arg(format!("{prefix}*"));
        let keys: Vec<String> = self.run(cmd.query_async(&mut self.conn.clone())).await?;
        let mut hosts = Vec::new();
        for key in keys {
            let mut get = redis::cmd("GET");
            get.arg(&key);
            let n: Option<u64> = self.run(get.query_async(&mut self.conn.clone())).await?;
            if let Some(host) = key.strip_prefix(&prefix) {
                hosts.push((host.to_owned(), n.unwrap_or(0)));
            }
        }
        Ok(hosts)
    }

    /// Checks and charges every quota, hold and concurrency limit of one call, in one
    /// round trip; `lease` names its concurrency leases.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn admit(&self, call: &[ScopeFigures], lease: &str) -> Result<Verdict, StoreError> {
        let mut inv = self.admit.prepare_invoke();
        // Index of each quota, hold and lease set in KEYS, back to its scope.
        let mut quota_of = Vec::new();
        let mut lease_of = Vec::new();
        for (s, f) in call.iter().enumerate() {
            for (i, q) in f.quotas.iter().enumerate() {
                inv.key(self.quota_key(&f.scope, q));
                quota_of.push((s, i));
            }
        }
        for f in call {
            inv.key(self.hold_key(&f.scope));
        }
        for (s, f) in call.iter().enumerate() {
            if f.concurrency.is_some() {
                inv.key(self.lease_key(&f.scope));
                lease_of.push(s);
            }
        }
        inv.arg(lease)
            .arg(self.lease_ttl_us)
            .arg(quota_of.len())
            .arg(call.len())
            .arg(lease_of.len())
            .arg(LEARNED_FOR_US)
            .arg(IDLE_KEEP_MS)
            .arg(SLOT_POLL_US);
        for f in call {
            for q in &f.quotas {
                inv.arg(q.interval)
                    .arg(q.tolerance)
                    .arg(q.cost)
                    .arg(u8::from(q.learned));
            }
        }
        for f in call {
            if let Some(limit) = f.concurrency {
                inv.arg(limit);
            }
        }
        let reply: Vec<Value> = self.run(inv.invoke_async(&mut self.conn.clone())).await?;
        let number = |i: usize| number(&reply, i);
        let bad = || StoreError::Reply(format!("{reply:?}"));
        let (verdict, index, wait) = head(&reply).ok_or_else(bad)?;
        Ok(match verdict {
            0 => Verdict::Admitted {
                ends: (4..reply.len()).filter_map(number).collect(),
            },
            1 => {
                let &(scope, quota) = index
                    .checked_sub(1)
                    .and_then(|i| quota_of.get(i))
                    .ok_or_else(bad)?;
                Verdict::Wait {
                    scope,
                    wait,
                    why: Refusal::Spent(quota),
                }
            }
            2 => Verdict::Wait {
                scope: index
                    .checked_sub(1)
                    .filter(|i| *i < call.len())
                    .ok_or_else(bad)?,
                wait,
                why: Refusal::Held(match reply.get(3) {
                    Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                    _ => String::new(),
                }),
            },
            3 => Verdict::Wait {
                scope: *index
                    .checked_sub(1)
                    .and_then(|i| lease_of.get(i))
                    .ok_or_else(bad)?,
                wait,
                why: Refusal::Full,
            },
            _ => return Err(bad()),
        })
    }

    /// Takes slices of quotas and settles earlier ones, in one round trip: `asks`, checking
    /// the holds `holds` (keys from [`Self::hold_key`]) when any ask needs a slice. See
    /// [`super::scripts::SLICE`]; `reserve` is how long a slice may be used.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn slice(
        &self,
        asks: &[SliceAsk],
        holds: &[String],
        reserve: Duration,
    ) -> Result<Sliced, StoreError> {
        let mut inv = self.slice.prepare_invoke();
        for ask in asks {
            inv.key(&ask.key);
        }
        for hold in holds {
            inv.key(hold);
        }
        inv.arg(asks.len())
            .arg(holds.len())
            .arg(LEARNED_FOR_US)
            .arg(IDLE_KEEP_MS)
            .arg(micros(reserve));
        for ask in asks {
            inv.arg(ask.interval)
                .arg(ask.tolerance)
                .arg(u8::from(ask.learned))
                .arg(ask.need)
                .arg(ask.want)
                .arg(ask.change.to_string())
                .arg(ask.ends);
        }
        let reply: Vec<Value> = self.run(inv.invoke_async(&mut self.conn.clone())).await?;
        let number = |i: usize| number(&reply, i);
        let bad = || StoreError::Reply(format!("{reply:?}"));
        let (verdict, index, wait) = head(&reply).ok_or_else(bad)?;
        Ok(match verdict {
            0 if reply.len() == 4 => Sliced::Granted(vec![(0, 0); asks.len()], wait),
            0 => Sliced::Granted(
                (0..asks.len())
                    .map(|i| Some((number(4 + 2 * i)?, number(5 + 2 * i)?)))
                    .collect::<Option<_>>()
                    .ok_or_else(bad)?,
                wait,
            ),
            1 => Sliced::Short(
                index
                    .checked_sub(1)
                    .filter(|i| *i < asks.len())
                    .ok_or_else(bad)?,
                wait,
            ),
            2 => Sliced::Held(
                index
                    .checked_sub(1)
                    .filter(|i| *i < holds.len())
                    .ok_or_else(bad)?,
                wait,
                match reply.get(3) {
                    Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                    _ => String::new(),
                },
            ),
            _ => return Err(bad()),
        })
    }

    /// Ends a call admitted by [`RedisStore::admit`]: releases its leases, and corrects its
    /// charge from the figures' costs to `actual` (when known).
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn settle(
        &self,
        call: &[ScopeFigures],
        lease: &str,
        ends: &[u64],
        actual: Option<&Usage>,
    ) -> Result<(), StoreError> {
        let mut inv = self.settle.prepare_invoke();
        let mut quotas = Vec::new();
        for f in call {
            for q in &f.quotas {
                inv.key(self.quota_key(&f.scope, q));
                quotas.push(q);
            }
        }
        let leases: Vec<_> = call.iter().filter(|f| f.concurrency.is_some()).collect();
        for f in &leases {
            inv.key(self.lease_key(&f.scope));
        }
        inv.arg(lease).arg(quotas.len()).arg(leases.len());
        for (i, q) in quotas.iter().enumerate() {
            let change = actual.map_or(0, |u| i128::from(u.get(q.dimension)) - i128::from(q.cost));
            inv.arg(q.interval)
                .arg(change.to_string())
                .arg(ends.get(i).copied().unwrap_or(0));
        }
        let _: i64 = self.run(inv.invoke_async(&mut self.conn.clone())).await?;
        Ok(())
    }

    /// Shares what a response taught this host about a scope: its hold, what its quotas
    /// have left (where the figures say), and the limits it learned.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn share(&self, scope: &ScopeFigures) -> Result<(), StoreError> {
        let mut inv = self.share.prepare_invoke();
        inv.key(self.hold_key(&scope.scope));
        for q in &scope.quotas {
            inv.key(self.quota_key(&scope.scope, q));
        }
        let (hold_ns, reason) = scope
            .held_for
            .as_ref()
            .map_or((0, ""), |(ns, reason)| (*ns, &**reason));
        inv.arg(hold_ns / 1_000)
            .arg(reason)
            .arg(scope.quotas.len())
            .arg(LEARNED_FOR_US)
            .arg(IDLE_KEEP_MS);
        for q in &scope.quotas {
            let left = q.available.map_or(-1, i128::from);
            inv.arg(q.interval)
                .arg(q.tolerance)
                .arg(left.to_string())
                .arg(u8::from(q.learned));
        }
        let _: i64 = self.run(inv.invoke_async(&mut self.conn.clone())).await?;
        Ok(())
    }

    /// Renews `leases` (each a lease set's key and a lease id); with `restore`, adds back
    /// any the store lost (after it was away), else renews only those still there.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn renew(
        &self,
        leases: &[(String, String)],
        restore: bool,
    ) -> Result<(), StoreError> {
        if leases.is_empty() {
            return Ok(());
        }
        let mut inv = self.renew.prepare_invoke();
        inv.arg(self.lease_ttl_us)
            .arg(if restore { "restore" } else { "renew" });
        for (key, id) in leases {
            inv.key(key).arg(id);
        }
        let _: i64 = self.run(inv.invoke_async(&mut self.conn.clone())).await?;
        Ok(())
    }

    /// Claims `action` for `host` for `ttl`, in the epoch the host `joined` (`None`: the
    /// store's; a store without one answers [`Claimed::Uninitialized`]): see
    /// [`super::ownership`].
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn claim(
        &self,
        action: &str,
        host: &str,
        ttl: Duration,
        joined: Option<&str>,
    ) -> Result<Claimed, StoreError> {
        let mut inv = self.claim.prepare_invoke();
        inv.key(self.claim_key(action))
            .key(self.epoch_key())
            .key(self.recovered_key())
            .arg(host)
            .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
            .arg(joined.unwrap_or(""));
        let reply: Vec<String> = self.run(inv.invoke_async(&mut self.conn.clone())).await?;
        match reply.as_slice() {
            [lost] if lost == "lost" => Ok(Claimed::Lost),
            [none] if none == "uninitialized" => Ok(Claimed::Uninitialized),
            [ok, epoch, owner] if ok == "ok" => Ok(Claimed::Ok {
                epoch: epoch.clone(),
                owner: Some(owner.clone()).filter(|o| !o.is_empty() && o != host),
                ours_before: owner == host,
            }),
            other => Err(StoreError::Reply(format!("{other:?}"))),
        }
    }

    /// The store's epoch, if it has one (hosts never make it: see [`Self::init`]).
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn join(&self) -> Result<Option<String>, StoreError> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(self.epoch_key());
        self.run(cmd.query_async(&mut self.conn.clone())).await
    }

    /// Makes the store's first epoch, as an operator does once for a new group: `Ok(None)`
    /// when it had one already (then nothing changes), else the new epoch.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn init(&self) -> Result<Option<String>, StoreError> {
        let token = new_token();
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.epoch_key()).arg(&token).arg("NX");
        let made: Option<String> = self.run(cmd.query_async(&mut self.conn.clone())).await?;
        Ok(made.map(|_| token))
    }

    /// The store's epoch against `joined`, the one a host joined.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn epoch(&self, joined: &str) -> Result<EpochCheck, StoreError> {
        let mut cmd = redis::cmd("MGET");
        cmd.arg(self.epoch_key()).arg(self.recovered_key());
        let (epoch, recovered): (Option<String>, Option<String>) =
            self.run(cmd.query_async(&mut self.conn.clone())).await?;
        Ok(match epoch {
            Some(e) if e == joined => EpochCheck::Same,
            Some(e) if recovered.as_deref() == Some(e.as_str()) => EpochCheck::Recovered(e),
            _ => EpochCheck::Lost,
        })
    }

    /// Re-registers `actions` as `host`'s for `ttl`, each unless another host claimed it
    /// meanwhile: those, with their owner.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn reclaim(
        &self,
        actions: &[String],
        host: &str,
        ttl: Duration,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let mut taken = Vec::new();
        for chunk in actions.chunks(500) {
            let mut pipe = redis::pipe();
            for action in chunk {
                pipe.cmd("SET")
                    .arg(self.claim_key(action))
                    .arg(host)
                    .arg("NX")
                    .arg("GET")
                    .arg("PX")
                    .arg(ttl_ms);
            }
            let owners: Vec<Option<String>> =
                self.run(pipe.query_async(&mut self.conn.clone())).await?;
            taken.extend(
                chunk
                    .iter()
                    .zip(owners)
                    .filter_map(|(a, o)| o.filter(|o| o != host).map(|o| (a.clone(), o))),
            );
        }
        // Set last: the mark says every action above is back.
        let mut mark = redis::cmd("SET");
        mark.arg(self.reclaimed_key(host)).arg(actions.len());
        let () = self.run(mark.query_async(&mut self.conn.clone())).await?;
        Ok(taken)
    }

    /// Starts a new ownership epoch after the store lost its state, as an operator does
    /// once every host re-registered its actions: the hosts adopt it and claim again.
    /// Returns the new epoch.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn recover_ownership(&self) -> Result<String, StoreError> {
        let token = new_token();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("SET")
            .arg(self.epoch_key())
            .arg(&token)
            .ignore()
            .cmd("SET")
            .arg(self.recovered_key())
            .arg(&token)
            .ignore();
        let () = self.run(pipe.query_async(&mut self.conn.clone())).await?;
        Ok(token)
    }

    /// The host ids with a live process in the store.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn live_hosts(&self) -> Result<Vec<String>, StoreError> {
        let prefix = format!("{}:host:", self.prefix);
        let mut cmd = redis::cmd("KEYS");
        cmd.arg(format!("{prefix}*"));
        let keys: Vec<String> = self.run(cmd.query_async(&mut self.conn.clone())).await?;
        Ok(keys
            .into_iter()
            .filter_map(|k| k.strip_prefix(&prefix).map(str::to_owned))
            .collect())
    }

    /// Says this process (`nonce`) is alive as `host` for `ttl`: `None`, or the nonce of
    /// another process that holds the host id.
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer.
    pub async fn heartbeat(
        &self,
        host: &str,
        nonce: &str,
        ttl: Duration,
    ) -> Result<Option<String>, StoreError> {
        let mut inv = self.heartbeat.prepare_invoke();
        inv.key(format!("{}:host:{host}", self.prefix))
            .arg(nonce)
            .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        self.run(inv.invoke_async(&mut self.conn.clone())).await
    }

    /// What Redis says of how it keeps keys: its `INFO` (every default section).
    ///
    /// # Errors
    /// [`StoreError`] when Redis does not answer, or refuses `INFO`.
    pub async fn info(&self) -> Result<String, StoreError> {
        self.run(redis::cmd("INFO").query_async(&mut self.conn.clone()))
            .await
    }

    /// Whether Redis answers.
    ///
    /// # Errors
    /// [`StoreError`] when it does not.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let _: String = self
            .run(redis::cmd("PING").query_async(&mut self.conn.clone()))
            .await?;
        Ok(())
    }

    async fn run<T>(
        &self,
        f: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => r.map_err(|e| redis_error(&e, self.peer.as_ref())),
            Err(_) => Err(StoreError::Timeout(self.timeout)),
        }
    }
}

/// A client for the `rediss://` store at `url`, trusting `tls.ca` (else the operating
/// system's roots) and showing `tls.identity` when the server asks for a certificate.
fn tls_client(url: &str, tls: StoreTls) -> redis::RedisResult<redis::Client> {
    // The Redis client builds its TLS settings on the process's crypto provider: ring, as
    // every TLS connection of sluice, unless the embedding program chose one already.
    let _ =
        rustls::crypto::CryptoProvider::install_default(rustls::crypto::ring::default_provider());
    redis::Client::build_with_tls(
        url,
        redis::TlsCertificates {
            client_tls: tls.identity.map(|i| redis::ClientTlsConfig {
                client_cert: i.cert_pem,
                client_key: i.key_pem,
            }),
            root_cert: tls.ca.map(|c| c.pem),
        },
    )
}

/// The store's error for `e`: a refused certificate in the words of `peer` (the server
/// reached over TLS), anything else as the client says it.
fn redis_error(e: &redis::RedisError, peer: Option<&Peer>) -> StoreError {
    StoreError::Redis(
        peer.and_then(|p| p.explain(e))
            .unwrap_or_else(|| e.to_string()),
    )
}

/// The `i`th value of a script's reply, as a count.
fn number(reply: &[Value], i: usize) -> Option<u64> {
    match reply.get(i) {
        Some(Value::Int(n)) => u64::try_from(*n).ok(),
        _ => None,
    }
}

/// The head every admission script's reply starts with: its verdict, the index (from 1)
/// of what it is about, and a wait.
fn head(reply: &[Value]) -> Option<(u64, usize, Duration)> {
    let verdict = number(reply, 0)?;
    let index = usize::try_from(number(reply, 1)?).ok()?;
    Some((verdict, index, Duration::from_micros(number(reply, 2)?)))
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// A new epoch token, as an operator's `sluice store init` and `store recover` make it: 128
/// random bits, in hex.
fn new_token() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

//! `sluice store`: the shared store of a group of hosts, as an operator sees it.
//!
//! `sluice store init --config F` makes a new group's first ownership epoch, once: hosts
//! never make it themselves (a host that never joined, meeting a store that lost its state,
//! would otherwise make a fresh one and take other hosts' actions as new), so until it is
//! made every write is refused (503 `shared_store_not_initialized`). Run again, it changes
//! nothing and says so.
//!
//! `sluice store recover --config F` starts a new ownership epoch after the store lost its
//! state (a restart without persistence, a flush). Until then, every host that had joined
//! the group refuses actions its own journal does not hold: after the loss, who did them
//! can no longer be told. Each host re-registers its journal's actions as soon as it sees
//! the loss; run this once every host of the group is running again (the hosts with a live
//! process are listed, each with whether it has re-registered; nothing changes while one
//! has not), so that no action a stopped host did is left without its owner.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use sluice::admission::shared::RedisStore;
use sluice::config::SluiceConfig;
use sluice::printable::printable;

/// `sluice store` commands.
#[derive(Debug, clap::Subcommand)]
pub enum StoreCommand {
    /// Make a new group's ownership epoch, once, before its hosts take writes (changes
    /// nothing when the store has one).
    Init {
        /// The configuration file naming the store (`[store]`).
        #[arg(long)]
        config: PathBuf,
    },
    /// Start a new ownership epoch after the shared store lost its state, once every host
    /// of the group is running again and has re-registered its actions.
    Recover {
        /// The configuration file naming the store (`[store]`).
        #[arg(long)]
        config: PathBuf,
        /// Say that every host of the group is running (listed above the question):
        /// without it, the hosts are listed and nothing changes.
        #[arg(long)]
        all_hosts_running: bool,
    },
}

pub fn run(command: StoreCommand) -> anyhow::Result<ExitCode> {
    let (config, all_hosts_running) = match command {
        StoreCommand::Init { config } => (config, None),
        StoreCommand::Recover {
            config,
            all_hosts_running,
        } => (config, Some(all_hosts_running)),
    };
    let config = SluiceConfig::from_file(&config)?;
    let store = config.store.context(
        "the configuration has no [store] table: only a group of hosts sharing a store has an \
         ownership epoch",
    )?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let at = format!("the shared store at {}", store.shown_url());
    let Some(all_hosts_running) = all_hosts_running else {
        return rt.block_on(async move {
            let store = RedisStore::new(&store).with_context(|| at.clone())?;
            match store.init().await.with_context(|| at.clone())? {
                Some(epoch) => println!(
                    "the group's ownership epoch ({epoch}) is made: its hosts join it and \
                     claim writes."
                ),
                None => println!(
                    "nothing changed: the store has an ownership epoch already (to start a \
                     new one after the store lost its state, run `sluice store recover`)."
                ),
            }
            Ok(ExitCode::SUCCESS)
        });
    };
    rt.block_on(async move {
        let store = RedisStore::new(&store).with_context(|| at.clone())?;
        let hosts = store.live_hosts().await.with_context(|| at.clone())?;
        let reclaimed = store.reclaimed_hosts().await.with_context(|| at.clone())?;
        println!("hosts with a live process in the store ({}):", hosts.len());
        let mut waiting = Vec::new();
        for h in &hosts {
            match reclaimed.iter().find(|(r, _)| r == h) {
                Some((_, n)) => println!("  {}: re-registered its {n} actions", printable(h)),
                None => {
                    println!("  {}: has not re-registered its actions yet", printable(h));
                    waiting.push(h);
                }
            }
        }
        if all_hosts_running && !waiting.is_empty() {
            println!(
                "nothing changed: {} running host(s) have not re-registered their actions yet \
                 (each does within a few seconds of seeing the loss); run again shortly.",
                waiting.len()
            );
            return Ok(ExitCode::from(1));
        }
        if !all_hosts_running {
            println!(
                "nothing changed. Once every host of the group is running again (each \
                 re-registers the actions its journal holds when it sees the loss), run again \
                 with --all-hosts-running."
            );
            return Ok(ExitCode::from(1));
        }
        let epoch = store
            .recover_ownership()
            .await
            .with_context(|| at.clone())?;
        println!(
            "a new ownership epoch ({epoch}) is set: the hosts adopt it and claim new actions \
             again."
        );
        Ok(ExitCode::SUCCESS)
    })
}

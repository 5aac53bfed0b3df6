//! A host's part in a group that shares its journal: every half lease it looks for hosts of
//! the group that are gone (`take_over`) and settles the writes it took from
//! them as a restarted owner would ([`Writes::recover`]: reconcile first, never a blind
//! resend, escalate when unsure).

use std::sync::{Arc, Weak};

use tokio::task::JoinHandle;

use crate::journal::Journal;
use crate::observe::TAKEOVERS;
use crate::writes::Writes;

/// Looks for hosts that are gone every half lease for as long as `writes` lives.
pub(super) fn take_over_the_gone(writes: Weak<Writes>, journal: Arc<Journal>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let every = journal.group().ttl() / 2;
        loop {
            tokio::time::sleep(every).await;
            let Some(writes) = writes.upgrade() else {
                return;
            };
            let taken = match journal.group().take_over(journal.group().ttl()) {
                Ok(taken) => taken,
                Err(e) => {
                    tracing::error!("looking for the group's hosts that are gone failed: {e}");
                    continue;
                }
            };
            if taken.is_empty() {
                continue;
            }
            for t in &taken {
                metrics::counter!(TAKEOVERS).increment(1);
                tracing::warn!(
                    from = %crate::printable::printable(&t.from),
                    actions = t.actions,
                    "took over the unfinished writes of a host of the group whose lease ran out"
                );
            }
            match writes.recover().await {
                Ok(done) => tracing::info!(
                    writes = done.len(),
                    "settled the writes taken over from the group's hosts that are gone"
                ),
                Err(e) => tracing::error!("settling the writes taken over failed: {e}"),
            }
        }
    })
}

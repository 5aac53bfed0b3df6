//! Hosts of a group, in a journal they share: each host's lease, and the takeover of a
//! host that is gone.
//!
//! A host that connects as an owner ([`Journal::connect_with`]) holds a lease in the table
//! `hosts`, renewed every quarter of its length by the journal's own runtime, on the
//! database's clock (so the hosts' clocks need not agree). A host whose lease ran out, and
//! then a grace as long again, is gone: another host takes its unfinished actions
//! ([`Leases::take_over`]) and settles them as a restarted owner would — reconcile first,
//! never a blind resend, escalate when unsure ([`crate::writes::Writes::recover`]).
//!
//! **Fencing.** Every state change of an action checks, in its own transaction, that this
//! host still owns it; an attempt is marked `sent` (which comes before its first byte) only
//! while this host's lease has at least a quarter of its length to run (so a renewal may be
//! late by half a lease before a send is refused)
//! ([`JournalError::LeaseLost`] otherwise). A host that was paused and comes back finds its
//! actions taken and sends none of them. What this cannot fence is a host frozen between
//! marking an attempt `sent` and writing its first byte for longer than a quarter of a lease
//! and the grace together (by default 12.5 s, in a window of microseconds); the taker's first
//! move on such an attempt is a lookup that is believed only when a second one, a provider
//! timeout later, agrees.
//!
//! In a host's own file there is one host: no lease, and nothing to take over.

use std::time::Duration;

use super::db::Conn;
#[cfg(feature = "postgres")]
use super::postgres::take_lease_sql;
use super::value::{NOW_MS, ms, values};
use super::{Fail, Journal, JournalError};

/// How long a host's lease lasts unless configured (`[journal] lease_ttl_ms`).
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// What a takeover took from a host that is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenOver {
    /// The host that is gone.
    pub from: String,
    /// How many of its unfinished actions are this host's now.
    pub actions: usize,
}

/// How many renewals in a row (a quarter of a lease each) a host needs before it calls
/// another host gone: two leases' worth, so that a host back from an outage of the
/// database, whose own lease had run out with everyone's, takes nothing from hosts that
/// are coming back with it.
const RENEWALS_BEFORE_TAKING: u32 = 8;

/// How long a starting host waits for an earlier process with its id to let go.
#[cfg(feature = "postgres")]
const ID_PATIENCE_LEASES: u32 = 2;

/// A group's leases: which host owns which actions, and taking over those of a host that
/// is gone ([`Journal::group`]). A view of the one journal.
#[derive(Debug, Clone, Copy)]
pub struct Leases<'j> {
    pub(crate) journal: &'j Journal,
}

impl Leases<'_> {
    /// Refuses, inside a transaction on `c`, an attempt this host may no longer send: its
    /// lease has less than a quarter of its length to run, so another host may take its
    /// actions before the attempt is done. Nothing to check in a host's own file.
    pub(crate) fn check(&self, c: Conn<'_>) -> Result<(), Fail> {
        if !self.journal.is_shared() || self.journal.owner.is_empty() {
            return Ok(());
        }
        let left: Option<i64> = c.one(
            &format!(
                "SELECT max(lease_until_ms) - {NOW_MS} FROM hosts \
                 WHERE host = ?1 AND process = ?2"
            ),
            values![&self.journal.owner, &self.journal.process],
        )?;
        let margin = ms(self.journal.lease_ttl) / 4;
        match left {
            Some(left) if left > margin => Ok(()),
            _ => Err(JournalError::LeaseLost {
                host: self.journal.owner.clone(),
            }
            .into()),
        }
    }

    /// Takes the unfinished actions (and the escalated ones) of every host of the group
    /// whose lease ran out more than `grace` ago: they are this host's from the commit on,
    /// and their hosts are forgotten (one that comes back takes a new lease and finds its
    /// actions gone). Returns what was taken, from whom. Nothing in a host's own file.
    ///
    /// # Errors
    /// A database failure; then nothing was taken.
    pub fn take_over(&self, grace: Duration) -> Result<Vec<TakenOver>, JournalError> {
        if !self.journal.is_shared()
            || self.journal.owner.is_empty()
            || self
                .journal
                .renewed
                .load(std::sync::atomic::Ordering::Relaxed)
                < RENEWALS_BEFORE_TAKING
        {
            return Ok(Vec::new());
        }
        self.journal.write_marked(|c| {
            // A taker holds its own lease, in the same transaction.
            self.check(c)?;
            let gone = c.rows(
                &format!(
                    "SELECT host FROM hosts WHERE host <> ?1 AND lease_until_ms + ?2 < {NOW_MS} \
                     ORDER BY host"
                ),
                values![&self.journal.owner, ms(grace)],
            )?;
            let mut taken = Vec::new();
            for row in gone {
                let from: String = row.get(0)?;
                let n = c.exec(
                    "UPDATE actions SET owner = ?1 WHERE owner = ?2 \
                     AND state NOT IN ('succeeded', 'failed', 'cancelled')",
                    values![&self.journal.owner, &from],
                )?;
                c.exec("DELETE FROM hosts WHERE host = ?1", values![&from])?;
                taken.push(TakenOver {
                    from,
                    actions: usize::try_from(n).unwrap_or(usize::MAX),
                });
            }
            Ok(taken)
        })
    }

    /// How long this host's lease lasts (renewed every quarter of it).
    pub fn ttl(&self) -> Duration {
        self.journal.lease_ttl
    }

    /// Takes this host's lease now, and has the journal's runtime renew it every quarter of
    /// its length. Only for a group's journal and an owner.
    #[cfg(feature = "postgres")]
    pub(crate) fn hold(&self) -> Result<(), JournalError> {
        if let super::Backend::Postgres(pg) = &self.journal.backend
            && !self.journal.owner.is_empty()
        {
            let take = take_lease_sql();
            let mut waited = 0;
            // An earlier process with this id (a restart while the old one drains) must
            // let go first: wait up to two leases for its lease to run out.
            while self.journal.write(|c| {
                Ok(c.exec(
                    &take,
                    values![
                        &self.journal.owner,
                        ms(self.journal.lease_ttl),
                        &self.journal.process
                    ],
                )?)
            })? == 0
            {
                waited += 1;
                if waited > ID_PATIENCE_LEASES * 4 {
                    return Err(JournalError::HostIdInUse {
                        host: self.journal.owner.clone(),
                    });
                }
                std::thread::sleep(self.journal.lease_ttl / 4);
            }
            pg.keep_lease(
                self.journal.owner.clone(),
                self.journal.process.clone(),
                self.journal.lease_ttl,
                self.journal.renewed.clone(),
            );
        }
        Ok(())
    }
}

// PostgreSQL only: a file has one host.
#[cfg(all(test, feature = "postgres"))]
mod tests;

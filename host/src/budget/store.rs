//! Budget use, kept in the journal's SQLite (the journal owns the table and its migration;
//! this module owns what the rows mean) so that a restart keeps what every tenant has
//! spent: one row per tenant and calendar period (`day` `2026-03-14`, `month` `2026-03`),
//! with the requests, tokens and spend (in micro-units) counted against its budgets.
//!
//! Each change is one transaction committed before it returns, like every journal write;
//! amounts never go below zero (a correction gives back at most what was charged).

use rusqlite::{OptionalExtension, params};

use super::{Amounts, Period, Window};
use crate::journal::{Journal, JournalError};

/// One tenant's use in one calendar period, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeriodUse {
    /// The tenant.
    pub tenant: String,
    /// The window: a day or a month.
    pub window: Window,
    /// The period's label (`2026-03-14`, `2026-03`).
    pub period: String,
    /// When the period began, in milliseconds since the Unix epoch.
    pub starts_ms: i64,
    /// When it resets, in milliseconds since the Unix epoch.
    pub resets_ms: i64,
    /// What was counted in it.
    pub amounts: Amounts,
}

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl Journal {
    /// What `tenant` has used in `period` (nothing, when no row exists yet).
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn budget_use(&self, tenant: &str, period: &Period) -> Result<Amounts, JournalError> {
        let conn = self.conn();
        let found = conn
            .query_row(
                "SELECT requests, tokens, spend_micros FROM budget_use \
                 WHERE tenant = ?1 AND window = ?2 AND period = ?3",
                params![tenant, period.window.name(), period.label],
                |r| {
                    Ok(Amounts {
                        requests: unsigned(r.get(0)?),
                        tokens: unsigned(r.get(1)?),
                        spend_micros: unsigned(r.get(2)?),
                    })
                },
            )
            .optional()
            .map_err(|e| self.sqlite(e))?;
        Ok(found.unwrap_or_default())
    }

    /// Adds `add` to and takes `remove` from `tenant`'s use in each of `periods`, in one
    /// transaction, never below zero.
    ///
    /// # Errors
    /// A SQLite failure; then nothing changed.
    pub fn change_budget_use(
        &self,
        tenant: &str,
        periods: &[Period],
        add: &Amounts,
        remove: &Amounts,
    ) -> Result<(), JournalError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.sqlite(e))?;
        for p in periods {
            tx.execute(
                "INSERT INTO budget_use (tenant, window, period, starts_ms, resets_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                params![tenant, p.window.name(), p.label, p.starts_ms, p.resets_ms],
            )
            .map_err(|e| self.sqlite(e))?;
            tx.execute(
                "UPDATE budget_use SET \
                 requests = max(0, requests + ?4 - ?5), \
                 tokens = max(0, tokens + ?6 - ?7), \
                 spend_micros = max(0, spend_micros + ?8 - ?9) \
                 WHERE tenant = ?1 AND window = ?2 AND period = ?3",
                params![
                    tenant,
                    p.window.name(),
                    p.label,
                    signed(add.requests),
                    signed(remove.requests),
                    signed(add.tokens),
                    signed(remove.tokens),
                    signed(add.spend_micros),
                    signed(remove.spend_micros),
                ],
            )
            .map_err(|e| self.sqlite(e))?;
        }
        tx.commit().map_err(|e| self.sqlite(e))
    }

    /// Every tenant's use in every period recorded, by tenant, then window, then period.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn budget_uses(&self) -> Result<Vec<PeriodUse>, JournalError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT tenant, window, period, starts_ms, resets_ms, requests, tokens, \
                 spend_micros FROM budget_use ORDER BY tenant, window, period",
            )
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt
            .query_map([], |r| {
                let window: String = r.get(1)?;
                Ok(PeriodUse {
                    tenant: r.get(0)?,
                    window: Window::parse(&window).unwrap_or(Window::Day),
                    period: r.get(2)?,
                    starts_ms: r.get(3)?,
                    resets_ms: r.get(4)?,
                    amounts: Amounts {
                        requests: unsigned(r.get(5)?),
                        tokens: unsigned(r.get(6)?),
                        spend_micros: unsigned(r.get(7)?),
                    },
                })
            })
            .map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }
}

//! Budget use, kept in the journal's SQLite (the journal owns the table and its migration;
//! this module owns what the rows mean) so that a restart keeps what every tenant has
//! spent: one row per tenant and calendar period (`day` `2026-03-14`, `month` `2026-03`),
//! with the requests, tokens and spend (in micro-units) counted against its budgets.
//!
//! Each change is one transaction committed before it returns, like every journal write;
//! amounts never go below zero (a correction gives back at most what was charged). In a
//! group's journal every call of a tenant, on every host, changes the same two rows: a
//! change locks them (`SELECT … FOR UPDATE` at `READ COMMITTED`,
//! [`Journal::write_locking`]), so the group's charges of one tenant wait for each other in
//! turn rather than fail as conflicts and run again after a pause.

use super::{Amounts, Period, Window};
use crate::journal::db::Conn;
use crate::journal::value::{BadColumn, values};
use crate::journal::{Fail, Journal, JournalError};

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

/// Makes `tenant`'s row of each of `periods`, empty, where there is none yet: one
/// statement for both.
fn make_rows(c: Conn<'_>, tenant: &str, periods: &[Period; 2]) -> Result<(), Fail> {
    let [d, m] = periods;
    c.exec(
        "INSERT INTO budget_use (tenant, \"window\", period, starts_ms, resets_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5), (?1, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
        values![
            tenant,
            d.window.name(),
            &d.label,
            d.starts_ms,
            d.resets_ms,
            m.window.name(),
            &m.label,
            m.starts_ms,
            m.resets_ms,
        ],
    )?;
    Ok(())
}

/// `tenant`'s use in each of `periods`, read on `c` in a transaction of
/// [`Journal::write_locking`] in one statement and, where the database locks rows, locked
/// until it ends: a host charging the same tenant meanwhile waits, then reads what this one
/// left. The rows are made first there, so that there is one to lock, and are locked in the
/// order of their window's name, the same on every host.
fn used_in(c: Conn<'_>, tenant: &str, periods: &[Period; 2]) -> Result<[Amounts; 2], Fail> {
    let lock = c.for_update();
    if !lock.is_empty() {
        make_rows(c, tenant, periods)?;
    }
    let sql = format!(
        "SELECT \"window\", period, requests, tokens, spend_micros FROM budget_use \
         WHERE tenant = ?1 AND ((\"window\" = ?2 AND period = ?3) \
                                OR (\"window\" = ?4 AND period = ?5)) \
         ORDER BY \"window\"{lock}"
    );
    let [d, m] = periods;
    let rows = c.rows(
        &sql,
        values![tenant, d.window.name(), &d.label, m.window.name(), &m.label],
    )?;
    let mut out = [Amounts::default(); 2];
    for r in &rows {
        let (window, period): (String, String) = (r.get(0)?, r.get(1)?);
        let Some(i) = periods
            .iter()
            .position(|p| p.window.name() == window && p.label == period)
        else {
            continue;
        };
        out[i] = Amounts {
            requests: unsigned(r.get(2)?),
            tokens: unsigned(r.get(3)?),
            spend_micros: unsigned(r.get(4)?),
        };
    }
    Ok(out)
}

/// Adds `add` to and takes `remove` from `tenant`'s use in each of `periods` on `c`, never
/// below zero, in one statement; after [`used_in`], in the same transaction.
fn change_in(
    c: Conn<'_>,
    tenant: &str,
    periods: &[Period; 2],
    add: &Amounts,
    remove: &Amounts,
) -> Result<(), Fail> {
    if c.for_update().is_empty() {
        // Where [`used_in`] did not make them.
        make_rows(c, tenant, periods)?;
    }
    let [d, m] = periods;
    c.exec(
        "UPDATE budget_use SET \
         requests = CASE WHEN requests + ?6 - ?7 < 0 THEN 0 ELSE requests + ?6 - ?7 END, \
         tokens = CASE WHEN tokens + ?8 - ?9 < 0 THEN 0 ELSE tokens + ?8 - ?9 END, \
         spend_micros = CASE WHEN spend_micros + ?10 - ?11 < 0 THEN 0 \
                        ELSE spend_micros + ?10 - ?11 END \
         WHERE tenant = ?1 AND ((\"window\" = ?2 AND period = ?3) \
                                OR (\"window\" = ?4 AND period = ?5))",
        values![
            tenant,
            d.window.name(),
            &d.label,
            m.window.name(),
            &m.label,
            signed(add.requests),
            signed(remove.requests),
            signed(add.tokens),
            signed(remove.tokens),
            signed(add.spend_micros),
            signed(remove.spend_micros),
        ],
    )?;
    Ok(())
}

/// What each tenant has spent in each period, kept in the journal ([`Journal::budget_use`]):
/// a view of the one journal, on its connection and in its transactions.
#[derive(Debug, Clone, Copy)]
pub struct BudgetUse<'j> {
    pub(crate) journal: &'j Journal,
}

// The journal's view of budgets' use is made here, beside what its rows mean: `budget` sits
// above the journal (docs/architecture.md, "Floors"), so the journal does not name it.
impl Journal {
    /// What each tenant has spent in each budget period.
    pub fn budget_use(&self) -> BudgetUse<'_> {
        BudgetUse { journal: self }
    }
}

impl BudgetUse<'_> {
    /// What `tenant` has used in `period` (nothing, when no row exists yet).
    ///
    /// # Errors
    /// A database failure.
    pub fn get(&self, tenant: &str, period: &Period) -> Result<Amounts, JournalError> {
        self.journal.read(|c| {
            let row = c.row(
                "SELECT requests, tokens, spend_micros FROM budget_use \
                 WHERE tenant = ?1 AND \"window\" = ?2 AND period = ?3",
                values![tenant, period.window.name(), &period.label],
            )?;
            Ok(match row {
                None => Amounts::default(),
                Some(r) => Amounts {
                    requests: unsigned(r.get(0)?),
                    tokens: unsigned(r.get(1)?),
                    spend_micros: unsigned(r.get(2)?),
                },
            })
        })
    }

    /// Adds `add` to and takes `remove` from `tenant`'s use in each of `periods`, in one
    /// transaction, never below zero. Returns the use before.
    ///
    /// # Errors
    /// A database failure; then nothing changed.
    pub fn change(
        &self,
        tenant: &str,
        periods: &[Period; 2],
        add: &Amounts,
        remove: &Amounts,
    ) -> Result<[Amounts; 2], JournalError> {
        self.journal.write_locking(|c| {
            let before = used_in(c, tenant, periods)?;
            change_in(c, tenant, periods, add, remove)?;
            Ok(before)
        })
    }

    /// Charges `add` to `tenant`'s use in each of `periods` if `check`, given the use
    /// before, lets it: the check and the charge are one transaction, so hosts sharing the
    /// journal never both pass a check that only one of them should. Returns the use
    /// before, or what `check` said.
    ///
    /// # Errors
    /// A database failure; then nothing changed.
    pub fn charge<E>(
        &self,
        tenant: &str,
        periods: &[Period; 2],
        add: &Amounts,
        check: impl Fn(&[Amounts; 2]) -> Result<(), E>,
    ) -> Result<Result<[Amounts; 2], E>, JournalError> {
        self.journal.write_locking(|c| {
            let before = used_in(c, tenant, periods)?;
            if let Err(refused) = check(&before) {
                return Ok(Err(refused));
            }
            change_in(c, tenant, periods, add, &Amounts::default())?;
            Ok(Ok(before))
        })
    }

    /// Every tenant's use in every period recorded, by tenant, then window, then period.
    ///
    /// # Errors
    /// A database failure.
    pub fn all(&self) -> Result<Vec<PeriodUse>, JournalError> {
        self.journal.read(|c| {
            let rows = c.rows(
                "SELECT tenant, \"window\", period, starts_ms, resets_ms, requests, tokens, \
                 spend_micros FROM budget_use ORDER BY tenant, \"window\", period",
                &[],
            )?;
            Ok(rows
                .iter()
                .map(|r| {
                    Ok(PeriodUse {
                        tenant: r.get(0)?,
                        window: r.parsed(1, "budget window", Window::parse)?,
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
                .collect::<Result<_, BadColumn>>()?)
        })
    }
}

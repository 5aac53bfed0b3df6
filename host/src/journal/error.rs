//! What can go wrong with the journal, each named so that an operator knows what to do: a
//! file that is not a journal is named and left alone, a damaged one is called corrupt (never
//! "no escalation 3"), and text a person types is refused before it is stored.

/// A journal failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// SQLite failed. Its message is part of this one and not repeated as a cause.
    #[error("the journal at {path}: {error}")]
    Sqlite {
        /// The journal file.
        path: String,
        /// What SQLite said.
        error: rusqlite::Error,
    },
    /// PostgreSQL failed, or could not be reached. Its message is part of this one.
    #[error("the journal at {path}: {error}")]
    Postgres {
        /// The database, without its password.
        path: String,
        /// What PostgreSQL (or the connection to it) said.
        error: String,
    },
    /// The file or its directory could not be made or inspected.
    #[error("the journal at {path}: {error}")]
    Io {
        /// The journal file.
        path: String,
        /// What the system said. Its message is part of this one and not repeated as a
        /// cause.
        error: std::io::Error,
    },
    /// No file where a journal should be (only a host creates one).
    #[error("no journal at {path}: pass the --journal file the host writes")]
    NotFound {
        /// The path given.
        path: String,
    },
    /// The path is a directory, a fifo, a device: not a journal file.
    #[error("{path} is not a regular file: pass the journal file the host writes")]
    NotAFile {
        /// The path given.
        path: String,
    },
    /// The file is empty: nothing was ever recorded in it.
    #[error(
        "{path} is empty, not a sluice journal; it was left as it is (only a host creates a \
         journal): pass the journal file the host writes"
    )]
    Empty {
        /// The file.
        path: String,
    },
    /// The file is not a sluice journal: another program's database, or no database at all.
    #[error(
        "{path} is not a sluice journal ({found}); it was left as it is: pass the journal file \
         the host writes"
    )]
    NotAJournal {
        /// The file.
        path: String,
        /// What it is instead.
        found: String,
    },
    /// The journal was written by a newer sluice, with a schema this one does not know.
    #[error(
        "{path} is a sluice journal of schema version {version}; this sluice knows versions \
         up to {supported}: use the sluice that wrote it, or a newer one"
    )]
    NewerSchema {
        /// The file.
        path: String,
        /// Its schema version.
        version: i32,
        /// The newest version this build reads.
        supported: i32,
    },
    /// The journal is damaged: its pages or its records are not what sluice wrote.
    #[error(
        "the journal at {path} is corrupt ({detail}): nothing in it can be trusted; stop the \
         host and restore the file from a backup (`sqlite3 FILE .recover` saves what it can)"
    )]
    Corrupt {
        /// The file.
        path: String,
        /// What SQLite found.
        detail: String,
    },
    /// The journal changed under this running host: its mark is behind the one this
    /// process last committed, or another journal's (restored from an older copy, replaced,
    /// its database dropped and made again while the host ran).
    #[error(
        "the journal at {path} changed under this running host: it had reached {known}, and \
         now holds {found} (restored from an older copy, replaced, or its database made \
         again), so the writes it lost would be sent again; nothing more is recorded or \
         sent. Stop the host, put the right journal back and start it: the start holds the \
         journal to the audit log (docs/writes.md)"
    )]
    MovedUnder {
        /// The file or database.
        path: String,
        /// The mark this process last committed.
        known: super::Mark,
        /// The mark the journal holds.
        found: super::Mark,
    },
    /// Text a person gave cannot be stored: empty, several lines, control characters, too
    /// long.
    #[error("{field} {problem}")]
    Text {
        /// What the text is (`the operator's name`, `the note`, `the operation id`).
        field: &'static str,
        /// What is wrong with it and what to write instead.
        problem: String,
    },
    /// An operation id given with a choice that does not ask the provider by one.
    #[error(
        "`{choice}` takes no operation id: only `query-existing` asks the provider by one; \
         leave the operation id out"
    )]
    OperationIdNotTaken {
        /// The choice made.
        choice: &'static str,
    },
    /// The same action was recorded with another body.
    #[error(
        "action `{action}` of task `{task}` was recorded with a different body; its \
         idempotency key belongs to the first body: name the new action differently"
    )]
    BodyMismatch {
        /// The task.
        task: String,
        /// The action.
        action: String,
    },
    /// Another host of the group recorded the action: it sends and settles it, and this
    /// host does neither.
    #[error(
        "action `{action}` of task `{task}` belongs to host `{owner}` of the group, which \
         sends and settles it: ask that host, or `sluice escalations list` for its state"
    )]
    OwnedElsewhere {
        /// The task.
        task: String,
        /// The action.
        action: String,
        /// The host that recorded it.
        owner: String,
    },
    /// This host's lease in the group ran out (or has too little left to finish an attempt):
    /// another host may take its actions, so it sends nothing more until it holds one again.
    #[error(
        "host `{host}` does not hold its lease in the group's journal now (the database was \
         slow or unreachable, or the host was paused): nothing was sent; the action stays to \
         be settled by its owner"
    )]
    LeaseLost {
        /// This host.
        host: String,
    },
    /// Another live process holds this host's id in the group's journal: two processes that
    /// both owned its actions could both send one.
    #[error(
        "another live process holds host id `{host}` in the group's journal, and its lease \
         did not run out: stop it first, or give this host another `host_id`"
    )]
    HostIdInUse {
        /// The host id.
        host: String,
    },
    /// A state change the journal does not allow.
    #[error("action {id} cannot go from {from} to {to}")]
    Transition {
        /// The action's row id.
        id: i64,
        /// Its state.
        from: &'static str,
        /// The state asked for.
        to: &'static str,
    },
    /// No such action.
    #[error("no action {0} in the journal")]
    Missing(i64),
    /// The task was cancelled: none of its actions may start.
    #[error("task `{0}` was cancelled: its actions never start")]
    TaskCancelled(String),
    /// No such escalation.
    #[error("no escalation {0}: `sluice escalations list` shows the open ones")]
    NoEscalation(i64),
    /// The escalation is about a task, not an action: there is no body to show.
    #[error("escalation {0} is about a task, not an action: it has no body")]
    NoBody(i64),
    /// The escalation was resolved before.
    #[error("escalation {0} is already resolved")]
    AlreadyResolved(i64),
    /// A decision that is not one of the escalation's options.
    #[error("`{choice}` is not an option for escalation {id} ({kind}): choose one of {options}")]
    NotAnOption {
        /// The escalation.
        id: i64,
        /// The choice made.
        choice: &'static str,
        /// The escalation's kind.
        kind: &'static str,
        /// The valid choices.
        options: String,
    },
    /// The operating system gave no randomness for an idempotency key.
    #[error("no randomness from the operating system for an idempotency key: {0}")]
    Random(String),
}

impl JournalError {
    /// The error for `error`, which SQLite raised on the journal at `path`: damage (a
    /// malformed page, a value of the wrong type, a name sluice never writes) is
    /// [`JournalError::Corrupt`], anything else [`JournalError::Sqlite`].
    pub(super) fn from_sqlite(path: &str, error: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        let damaged = match &error {
            rusqlite::Error::SqliteFailure(e, _) => {
                matches!(e.code, DatabaseCorrupt | NotADatabase)
            }
            rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::IntegralValueOutOfRange(..) => true,
            _ => false,
        };
        if damaged {
            Self::Corrupt {
                path: path.into(),
                detail: crate::printable::printable(&error.to_string()).into_owned(),
            }
        } else {
            Self::Sqlite {
                path: path.into(),
                error,
            }
        }
    }
}

//! An action's states and the moves between them.

/// Where an action is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// The intent is committed; nothing was sent.
    Pending,
    /// An attempt went out.
    Sent,
    /// The provider did it.
    Succeeded,
    /// The provider refused it, for sure.
    Failed,
    /// An attempt went out and no trustworthy answer came back.
    Uncertain,
    /// A status query is under way.
    Reconciling,
    /// A person must decide.
    Escalated,
    /// Its task was cancelled before it finished.
    Cancelled,
    /// Refused before its first byte went out (backpressure, an open breaker, a lost lease,
    /// a deadline): nothing happened, and the agent was told so. Nothing sends it again —
    /// not a restart, not a takeover — unless the agent submits the same action again.
    Refused,
    /// Known to the audit log but not to the journal, which lost its record (a journal
    /// restored from an older copy, replaced or emptied, accepted by an operator): it may
    /// have happened. It is never sent; a resubmit of it goes to a person.
    Lost,
}

impl State {
    const ALL: [Self; 10] = [
        Self::Pending,
        Self::Sent,
        Self::Succeeded,
        Self::Failed,
        Self::Uncertain,
        Self::Reconciling,
        Self::Escalated,
        Self::Cancelled,
        Self::Refused,
        Self::Lost,
    ];

    /// The state's name in the journal.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Sent => "sent",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Uncertain => "uncertain",
            Self::Reconciling => "reconciling",
            Self::Escalated => "escalated",
            Self::Cancelled => "cancelled",
            Self::Refused => "refused",
            Self::Lost => "lost",
        }
    }

    /// The states that may become `to`, as an SQL list of names (`'pending', 'sent'`): a
    /// query that moves actions takes its states from the table of moves, not a copy.
    pub(super) fn sql_may_become(to: Self) -> String {
        Self::ALL
            .into_iter()
            .filter(|s| s.may_become(to))
            .map(|s| format!("'{}'", s.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.name() == s)
    }

    /// Whether the action may still be sent or settled by its host, as a restarted host
    /// resumes it: `pending`, `sent`, `uncertain`, `reconciling`.
    pub fn is_unfinished(self) -> bool {
        matches!(
            self,
            Self::Pending | Self::Sent | Self::Uncertain | Self::Reconciling
        )
    }

    /// Whether nothing more happens to the action.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled)
    }

    /// Whether the journal allows moving from `self` to `to`.
    pub fn may_become(self, to: Self) -> bool {
        use State as S;
        match (self, to) {
            (from, _) if from.is_final() => false,
            (_, S::Cancelled) => true,
            (S::Pending, S::Sent | S::Failed | S::Refused) => true,
            // Only the agent's resubmit of the same action reopens a refused one.
            (S::Refused, S::Pending) => true,
            // A resubmit of an action whose record was lost goes to a person.
            (S::Lost, S::Escalated) => true,
            // A journal accepted on an operator's word, whose row the audit log saw move on
            // since: what the row says is old, so the action is lost.
            (
                S::Pending | S::Sent | S::Uncertain | S::Reconciling | S::Escalated | S::Refused,
                S::Lost,
            ) => true,
            (S::Sent, S::Sent | S::Succeeded | S::Failed | S::Uncertain) => true,
            (S::Uncertain, S::Reconciling | S::Escalated) => true,
            (S::Reconciling, S::Succeeded | S::Sent | S::Escalated | S::Reconciling) => true,
            // A person's decision: query again, or resend with the same key.
            (S::Escalated, S::Reconciling | S::Sent) => true,
            // Nothing happened (nothing went out, or every answer refused it) and a person
            // must decide: a spent time budget.
            (S::Pending | S::Sent, S::Escalated) => true,
            _ => false,
        }
    }
}

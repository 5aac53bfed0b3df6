//! What a person must decide ([`Kind`]) and what they may choose ([`Choice`]): the options
//! each kind of escalation offers, and what each option does.

/// What a person must decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A write may or may not have happened, and the plugin could not tell.
    UncertainWrite,
    /// The task's time budget ran out before the action was sent.
    TimeBudget,
    /// The provider's quota (a billing or daily one) is spent: the write was refused, or
    /// could not be sent before it resets.
    QuotaExhausted,
    /// A budget of the write's tenant is spent (see `budget`): nothing was sent.
    BudgetSpent,
    /// The journal lost its record of the action (restored from an older copy, replaced,
    /// emptied) and the audit log shows it was asked for: it may have happened, and it is
    /// never sent. A person checks with the provider; the agent sends it again under a new
    /// action name only if it did not happen.
    RecordLost,
}

impl Kind {
    /// The kind's name in the journal.
    pub fn name(self) -> &'static str {
        match self {
            Self::UncertainWrite => "uncertain_write",
            Self::TimeBudget => "time_budget",
            Self::QuotaExhausted => "quota_exhausted",
            Self::BudgetSpent => "budget_spent",
            Self::RecordLost => "record_lost",
        }
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
        [
            Self::UncertainWrite,
            Self::TimeBudget,
            Self::QuotaExhausted,
            Self::BudgetSpent,
            Self::RecordLost,
        ]
        .into_iter()
        .find(|k| k.name() == s)
    }

    /// The options a person may choose.
    pub fn options(self) -> &'static [Choice] {
        match self {
            Self::UncertainWrite => &[
                Choice::QueryExisting,
                Choice::RetrySameKey,
                Choice::Cancel,
                Choice::SendAsNew,
            ],
            Self::TimeBudget => &[Choice::ContinueAccess, Choice::Cancel],
            Self::QuotaExhausted => &[
                Choice::Wait,
                Choice::RaiseQuota,
                Choice::ChangePlan,
                Choice::Cancel,
            ],
            Self::BudgetSpent => &[Choice::Wait, Choice::RaiseBudget, Choice::Cancel],
            Self::RecordLost => &[Choice::Cancel],
        }
    }
}

/// A person's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Ask the provider about the existing operation again (optionally by an operation id
    /// the person found).
    QueryExisting,
    /// Resend with the same idempotency key: safe where the provider suppresses duplicates.
    RetrySameKey,
    /// Give the action up.
    Cancel,
    /// Send as a new operation with a new key: **may create a second side effect**.
    SendAsNew,
    /// Let the task go on: an approval of continued access, not of any one action.
    ContinueAccess,
    /// Send it with the same key once the quota is back (the scope's hold paces it).
    Wait,
    /// The quota was raised at the provider: lift the scope's hold and send it now, with the
    /// same key.
    RaiseQuota,
    /// Give this action up; the task goes on another way.
    ChangePlan,
    /// The tenant's budget was raised in the configuration: send it now, with the same key
    /// (the budget is checked again).
    RaiseBudget,
}

impl Choice {
    /// The choice's name, as the CLI takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::QueryExisting => "query-existing",
            Self::RetrySameKey => "retry-same-key",
            Self::Cancel => "cancel",
            Self::SendAsNew => "send-as-new",
            Self::ContinueAccess => "continue-access",
            Self::Wait => "wait",
            Self::RaiseQuota => "raise-quota",
            Self::ChangePlan => "change-plan",
            Self::RaiseBudget => "raise-budget",
        }
    }

    /// Every choice, in the order the CLI lists them.
    pub const ALL: [Self; 9] = [
        Self::QueryExisting,
        Self::RetrySameKey,
        Self::Cancel,
        Self::SendAsNew,
        Self::ContinueAccess,
        Self::Wait,
        Self::RaiseQuota,
        Self::ChangePlan,
        Self::RaiseBudget,
    ];

    /// Parses a name from [`Choice::name`].
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }

    /// What choosing it does, for the operator.
    pub fn describe(self) -> &'static str {
        match self {
            Self::QueryExisting => "query the provider for the existing operation again",
            Self::RetrySameKey => {
                "resend with the same idempotency key (safe where the provider suppresses \
                 duplicates)"
            }
            Self::Cancel => "give the action up; nothing more is sent for it",
            Self::SendAsNew => {
                "send as a new operation with a new key: MAY CREATE A SECOND SIDE EFFECT"
            }
            Self::ContinueAccess => "let the task continue: approves access, not any one action",
            Self::Wait => {
                "send it with the same key once the quota or budget is back (a budget is \
                 checked again when it is sent)"
            }
            Self::RaiseQuota => {
                "you raised the quota at the provider: send it now, with the same key"
            }
            Self::ChangePlan => "give this action up; the task goes on another way",
            Self::RaiseBudget => {
                "you raised the tenant's budget in the configuration: send it now, with the \
                 same key (the budget is checked again)"
            }
        }
    }

    /// Whether it can create a second side effect.
    pub fn may_duplicate(self) -> bool {
        self == Self::SendAsNew
    }

    /// Whether a person may give an operation id with it: only a query asks the provider by
    /// one.
    pub fn takes_operation_id(self) -> bool {
        self == Self::QueryExisting
    }

    /// Whether the approval is of continued access (else of one action).
    pub fn is_access(self) -> bool {
        self == Self::ContinueAccess
    }
}

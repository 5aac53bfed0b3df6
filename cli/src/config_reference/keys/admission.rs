//! The keys admission reads beside the providers': the root's `state_dir` and `margin`, the
//! queue, tiers and tenants.

use super::super::KeyDoc;

/// The root and queue keys.
pub(in crate::config_reference) const ADMISSION: &[KeyDoc] = &[
    KeyDoc {
        key: "state_dir",
        kind: "path",
        default: "`$XDG_STATE_HOME/sluice`, else `~/.local/state/sluice`",
        range: "",
        what: "The directory of the journal of writes, the audit log, its witness and (by \
            default) its key. A relative path is taken from the file's directory.",
    },
    KeyDoc {
        key: "margin",
        kind: "number",
        default: "0.9",
        range: "0.01 <= x <= 1",
        what: "The share of every provider limit admission paces at (0.9: 90%). A provider's own \
            `margin` replaces it.",
    },
    KeyDoc {
        key: "queue",
        kind: "table",
        default: "",
        range: "",
        what: "The bounds of the admission queue.",
    },
    KeyDoc {
        key: "queue.max_queued",
        kind: "integer",
        default: "100000",
        range: "1 ..= 10000000",
        what: "The most requests waiting, all scopes together; past it a request is refused at \
            once.",
    },
    KeyDoc {
        key: "queue.max_queued_per_scope",
        kind: "integer",
        default: "10000",
        range: "1 ..= 10000000",
        what: "The most requests waiting on any one scope; a provider's `max_queued` replaces it.",
    },
    KeyDoc {
        key: "queue.max_wait_ms",
        kind: "integer",
        default: "600000",
        range: "1 ..= 86400000",
        what: "The longest estimated wait a request is queued for, in ms; one that would wait \
            longer is refused at once. A provider's `max_wait_ms` replaces it.",
    },
    KeyDoc {
        key: "queue.max_unconfigured_scopes",
        kind: "integer",
        default: "256",
        range: "0 ..= 65536",
        what: "The most names of narrower scopes this file does not configure (a model an agent \
            names in its request) each provider keeps at once, over all its credentials; a name \
            past them is queued and paced under the scope `model:other` (a model) or `other`. \
            A provider's `max_unconfigured_scopes` replaces it.",
    },
    KeyDoc {
        key: "queue.unconfigured_idle_ms",
        kind: "integer",
        default: "600000",
        range: "1 ..= 86400000",
        what: "How long, in ms, such a scope stays at rest (nothing waiting or in flight, no \
            hold, its buckets full) before it is forgotten and its name's place freed.",
    },
];

/// The tier and tenant keys.
pub(in crate::config_reference) const TENANTS: &[KeyDoc] = &[
    KeyDoc {
        key: "tiers",
        kind: "map",
        default: "none",
        range: "",
        what: "Tenant tiers by name (TIER → table). The tier `standard` exists without a table: \
            the tier of every tenant when no other is named.",
    },
    KeyDoc {
        key: "tenants",
        kind: "table",
        default: "",
        range: "",
        what: "Which tenant is in which tier, and named tenants' own budgets.",
    },
    KeyDoc {
        key: "tiers.TIER",
        kind: "table",
        default: "none",
        range: "",
        what: "One tier: the share, queue bounds, quotas and budgets of each of its tenants.",
    },
    KeyDoc {
        key: "tiers.TIER.weight",
        kind: "integer",
        default: "1",
        range: "1 ..= 10000",
        what: "The weight of each tenant's fair share of a scope; 1 is ordinary.",
    },
    KeyDoc {
        key: "tiers.TIER.precedence",
        kind: "integer",
        default: "0",
        range: "0 ..= 2",
        what: "Its requests that may go are served before those of every tier of lower \
            precedence; tiers of one precedence share by weight.",
    },
    KeyDoc {
        key: "tiers.TIER.classes",
        kind: "array of strings",
        default: "all: \"interactive\", \"standard\", \"background\"",
        range: "a non-empty list of \"interactive\", \"standard\", \"background\"",
        what: "The queue classes its tenants' requests may use; a request of another class queues \
            in the nearest allowed one, less urgent first.",
    },
    KeyDoc {
        key: "tiers.TIER.max_queued",
        kind: "integer",
        default: "none",
        range: "1 ..= 10000000",
        what: "The most requests one tenant of the tier may have waiting.",
    },
    KeyDoc {
        key: "tiers.TIER.max_in_flight",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000",
        what: "The most requests one tenant of the tier may have in flight.",
    },
    KeyDoc {
        key: "tiers.TIER.limits",
        kind: "table",
        default: "",
        range: "",
        what: "Each tenant's own quotas, across every provider.",
    },
    KeyDoc {
        key: "tiers.TIER.limits.requests_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Requests per minute for each tenant of the tier, paced at the root `margin`.",
    },
    KeyDoc {
        key: "tiers.TIER.limits.tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Tokens, input and output together, per minute for each tenant of the tier, paced \
            at the root `margin`.",
    },
    KeyDoc {
        key: "tiers.TIER.limits.input_tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Input tokens per minute for each tenant of the tier, paced at the root `margin`.",
    },
    KeyDoc {
        key: "tiers.TIER.limits.output_tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Output tokens per minute for each tenant of the tier, paced at the root `margin`.",
    },
    KeyDoc {
        key: "tiers.TIER.limits.requests_per_day",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 86400000000000 (one a nanosecond)",
        what: "Requests per day (24 hours) for each tenant of the tier, paced at the root \
            `margin`.",
    },
    KeyDoc {
        key: "tiers.TIER.limits.tokens_per_day",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 86400000000000 (one a nanosecond)",
        what: "Tokens per day (24 hours) for each tenant of the tier, paced at the root `margin`.",
    },
    KeyDoc {
        key: "tiers.TIER.limits.concurrent_requests",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000",
        what: "Requests in flight at once for each tenant of the tier.",
    },
    KeyDoc {
        key: "tiers.TIER.limits.refill",
        kind: "string",
        default: "\"window\"",
        range: "\"window\" or \"continuous\"",
        what: "How the provider refills these quotas: \"window\" (safe for any provider) lets \
            only the part of a limit above the pace go at once; \"continuous\" (a token bucket, \
            as Anthropic documents its limits) lets the whole pace go at once.",
    },
    KeyDoc {
        key: "tiers.TIER.budgets",
        kind: "table",
        default: "",
        range: "",
        what: "Each tenant's own budgets: every tenant of the tier has its own.",
    },
    KeyDoc {
        key: "tiers.TIER.budgets.requests_per_day",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Calls each tenant of the tier may use in a calendar day (in `budgets.time_zone`); \
            once used up, its next call is refused until the reset.",
    },
    KeyDoc {
        key: "tiers.TIER.budgets.requests_per_month",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Calls each tenant of the tier may use in a calendar month (in \
            `budgets.time_zone`); once used up, its next call is refused until the reset.",
    },
    KeyDoc {
        key: "tiers.TIER.budgets.tokens_per_day",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Tokens of any kind each tenant of the tier may use in a calendar day (in \
            `budgets.time_zone`); once used up, its next call is refused until the reset.",
    },
    KeyDoc {
        key: "tiers.TIER.budgets.tokens_per_month",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Tokens of any kind each tenant of the tier may use in a calendar month (in \
            `budgets.time_zone`); once used up, its next call is refused until the reset.",
    },
    KeyDoc {
        key: "tiers.TIER.budgets.spend_micros_per_day",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Spend, in micro-units (millionths) of the currency, each tenant of the tier may \
            use in a calendar day (in `budgets.time_zone`); once used up, its next call is \
            refused until the reset.",
    },
    KeyDoc {
        key: "tiers.TIER.budgets.spend_micros_per_month",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Spend, in micro-units (millionths) of the currency, each tenant of the tier may \
            use in a calendar month (in `budgets.time_zone`); once used up, its next call is \
            refused until the reset.",
    },
    KeyDoc {
        key: "tenants.default_tier",
        kind: "string",
        default: "\"standard\"",
        range: "\"standard\" or a tier under `[tiers]`",
        what: "The tier of a tenant not in `assign`.",
    },
    KeyDoc {
        key: "tenants.assign",
        kind: "map",
        default: "none",
        range: "",
        what: "Named tenants' tiers (TENANT → tier name). The tiers the sidecar's agents name are \
            added.",
    },
    KeyDoc {
        key: "tenants.assign.TENANT",
        kind: "string",
        default: "none",
        range: "\"standard\" or a tier under `[tiers]`",
        what: "The tenant's tier.",
    },
    KeyDoc {
        key: "tenants.budgets",
        kind: "map",
        default: "none",
        range: "",
        what: "Named tenants' own budgets (TENANT → table).",
    },
    KeyDoc {
        key: "tenants.budgets.TENANT",
        kind: "table",
        default: "none",
        range: "",
        what: "One tenant's budgets: each key replaces its tier's.",
    },
    KeyDoc {
        key: "tenants.budgets.TENANT.requests_per_day",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Calls the tenant may use in a calendar day (in `budgets.time_zone`); once used up, \
            its next call is refused until the reset.",
    },
    KeyDoc {
        key: "tenants.budgets.TENANT.requests_per_month",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Calls the tenant may use in a calendar month (in `budgets.time_zone`); once used \
            up, its next call is refused until the reset.",
    },
    KeyDoc {
        key: "tenants.budgets.TENANT.tokens_per_day",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Tokens of any kind the tenant may use in a calendar day (in `budgets.time_zone`); \
            once used up, its next call is refused until the reset.",
    },
    KeyDoc {
        key: "tenants.budgets.TENANT.tokens_per_month",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Tokens of any kind the tenant may use in a calendar month (in \
            `budgets.time_zone`); once used up, its next call is refused until the reset.",
    },
    KeyDoc {
        key: "tenants.budgets.TENANT.spend_micros_per_day",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Spend, in micro-units (millionths) of the currency, the tenant may use in a \
            calendar day (in `budgets.time_zone`); once used up, its next call is refused until \
            the reset.",
    },
    KeyDoc {
        key: "tenants.budgets.TENANT.spend_micros_per_month",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000000000000",
        what: "Spend, in micro-units (millionths) of the currency, the tenant may use in a \
            calendar month (in `budgets.time_zone`); once used up, its next call is refused until \
            the reset.",
    },
];

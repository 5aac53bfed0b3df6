//! Every key of the configuration file (see the module above).

use super::KeyDoc;

/// Every key, in the order the reference shows them: the file's root keys, then each table's.
pub const KEYS: &[KeyDoc] = &[
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
        key: "providers",
        kind: "map",
        default: "none",
        range: "",
        what: "The providers by name (NAME → table): each one's plugin, base URL, credentials, \
            limits, scopes, models, generations and prices.",
    },
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
        key: "retry",
        kind: "table",
        default: "",
        range: "",
        what: "Retry budgets by request class, backoff and circuit breakers.",
    },
    KeyDoc {
        key: "audit",
        kind: "table",
        default: "",
        range: "",
        what: "The audit log: its checkpoints, retention, signing key and witness.",
    },
    KeyDoc {
        key: "journal",
        kind: "table",
        default: "",
        range: "",
        what: "The journal of writes.",
    },
    KeyDoc {
        key: "transport",
        kind: "table",
        default: "",
        range: "",
        what: "The timeouts of one attempt, and the roots trusted for TLS.",
    },
    KeyDoc {
        key: "plugins",
        kind: "table",
        default: "",
        range: "",
        what: "Settings of every plugin.",
    },
    KeyDoc {
        key: "budgets",
        kind: "table",
        default: "",
        range: "",
        what: "The calendar, currency, thresholds and unpriced models of spend budgets; the \
            budgets themselves are under `tiers.TIER.budgets` and `tenants.budgets`.",
    },
    KeyDoc {
        key: "store",
        kind: "table or string",
        default: "none (admission state in memory, per host)",
        range: "a table, or the string \"memory\"",
        what: "The Redis store of admission state shared by several hosts. `\"memory\"`, like no \
            `store`, keeps it in memory, per host.",
    },
    KeyDoc {
        key: "serve",
        kind: "table",
        default: "",
        range: "",
        what: "The sidecar, `sluice serve`: its listener, agents, admin API and how it speaks to \
            each provider.",
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
        key: "providers.NAME",
        kind: "table",
        default: "none",
        range: "",
        what: "One provider, by the name calls and the sidecar's paths use.",
    },
    KeyDoc {
        key: "providers.NAME.plugin",
        kind: "string",
        default: "the provider's name (its bundled plugin)",
        range: "a bundled plugin's name, or a path ending in `.wasm` or holding a `/`",
        what: "Its plugin: a plugin bundled with sluice, by name, or a component file (`.wasm`), \
            taken from the file's directory.",
    },
    KeyDoc {
        key: "providers.NAME.vectors",
        kind: "path",
        default: "none",
        range: "",
        what: "A file of test vectors (docs/PLUGIN-VECTORS.md) its plugin must pass before it \
            serves, at start and at each reload; taken from the file's directory.",
    },
    KeyDoc {
        key: "providers.NAME.reload",
        kind: "string",
        default: "\"manual\"",
        range: "\"manual\" or \"watch\"; \"watch\" needs a `.wasm` plugin",
        what: "What reloads its plugin besides a request (the admin API, `reload_plugin`): \
            \"manual\", nothing; \"watch\", a change of the plugin file.",
    },
    KeyDoc {
        key: "providers.NAME.base_url",
        kind: "string",
        default: "none",
        range: "an absolute http:// or https:// URL",
        what: "What a call's relative URL (`/v1/models`) is resolved against; the sidecar \
            forwards `/NAME/...` to it.",
    },
    KeyDoc {
        key: "providers.NAME.margin",
        kind: "number",
        default: "the root `margin`",
        range: "0.01 <= x <= 1",
        what: "The share of this provider's limits admission paces at, instead of the root \
            `margin`.",
    },
    KeyDoc {
        key: "providers.NAME.max_queued",
        kind: "integer",
        default: "`queue.max_queued_per_scope`",
        range: "1 ..= 10000000",
        what: "The most requests waiting on any one scope of this provider.",
    },
    KeyDoc {
        key: "providers.NAME.max_wait_ms",
        kind: "integer",
        default: "`queue.max_wait_ms`",
        range: "1 ..= 86400000",
        what: "The longest estimated wait a request to this provider is queued for, in ms.",
    },
    KeyDoc {
        key: "providers.NAME.plugin_limits",
        kind: "table",
        default: "",
        range: "",
        what: "Its plugin's own limits; a key left out keeps the runtime's.",
    },
    KeyDoc {
        key: "providers.NAME.plugin_limits.call_deadline_ms",
        kind: "integer",
        default: "`plugins.call_deadline_ms` (5)",
        range: "1 ..= 60000",
        what: "How long one call of its plugin may run, in ms.",
    },
    KeyDoc {
        key: "providers.NAME.plugin_limits.max_memory_mib",
        kind: "integer",
        default: "16",
        range: "1 ..= 4096",
        what: "The linear memory one instance of its plugin may grow to, in MiB.",
    },
    KeyDoc {
        key: "providers.NAME.plugin_limits.max_table_elements",
        kind: "integer",
        default: "10000",
        range: "1 ..= 1000000",
        what: "The table elements one instance of its plugin may hold.",
    },
    KeyDoc {
        key: "providers.NAME.plugin_limits.max_warm_instances",
        kind: "integer",
        default: "8",
        range: "0 ..= 1024",
        what: "Instances of its plugin kept warm between calls; 0: a fresh instance for every \
            call, so the plugin keeps no state.",
    },
    KeyDoc {
        key: "providers.NAME.plugin_limits.instance_max_calls",
        kind: "integer",
        default: "10000",
        range: "1 ..= 1000000000",
        what: "The calls one warm instance serves before it is replaced.",
    },
    KeyDoc {
        key: "providers.NAME.credentials",
        kind: "map",
        default: "none",
        range: "",
        what: "Its credentials by label (LABEL → table): a call names the label, never the secret.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL",
        kind: "table",
        default: "none",
        range: "exactly one of `env` or `file`",
        what: "Where one credential's secret is read from, and the header it is sent in. It is \
            read at each send, never stored.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.env",
        kind: "string",
        default: "none",
        range: "",
        what: "The environment variable that holds the secret (surrounding whitespace trimmed).",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.file",
        kind: "path",
        default: "none",
        range: "",
        what: "The file that holds the secret (surrounding whitespace trimmed, at most 16 KiB), \
            taken from the file's directory; read again at each send, so a rotated file takes \
            effect.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.header",
        kind: "string",
        default: "\"authorization\"",
        range: "an HTTP header name (checked at start)",
        what: "The header that carries the secret, sent in lower case.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.scheme",
        kind: "string",
        default: "`Bearer` for `authorization`, else none",
        range: "",
        what: "What precedes the secret in the header's value (trimmed); empty: nothing.",
    },
    KeyDoc {
        key: "providers.NAME.limits",
        kind: "table",
        default: "",
        range: "",
        what: "The quotas of each of its credentials (each credential is its own bucket).",
    },
    KeyDoc {
        key: "providers.NAME.limits.requests_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Requests per minute for each credential, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.limits.tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Tokens, input and output together, per minute for each credential, paced at the \
            provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.limits.input_tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Input tokens per minute for each credential, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.limits.output_tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Output tokens per minute for each credential, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.limits.requests_per_day",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 86400000000000 (one a nanosecond)",
        what: "Requests per day (24 hours) for each credential, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.limits.tokens_per_day",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 86400000000000 (one a nanosecond)",
        what: "Tokens per day (24 hours) for each credential, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.limits.concurrent_requests",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000",
        what: "Requests in flight at once for each credential.",
    },
    KeyDoc {
        key: "providers.NAME.limits.refill",
        kind: "string",
        default: "\"window\"",
        range: "\"window\" or \"continuous\"",
        what: "How the provider refills these quotas: \"window\" (safe for any provider) lets \
            only the part of a limit above the pace go at once; \"continuous\" (a token bucket, \
            as Anthropic documents its limits) lets the whole pace go at once.",
    },
    KeyDoc {
        key: "providers.NAME.scopes",
        kind: "map",
        default: "none",
        range: "",
        what: "Narrower scopes by the name requests and responses use (SCOPE → table), such as \
            GitHub's `search`.",
    },
    KeyDoc {
        key: "providers.NAME.scopes.SCOPE",
        kind: "table",
        default: "none",
        range: "",
        what: "The quotas of one narrower scope.",
    },
    KeyDoc {
        key: "providers.NAME.scopes.SCOPE.requests_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Requests per minute in this scope, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.scopes.SCOPE.tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Tokens, input and output together, per minute in this scope, paced at the \
            provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.scopes.SCOPE.input_tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Input tokens per minute in this scope, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.scopes.SCOPE.output_tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Output tokens per minute in this scope, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.scopes.SCOPE.requests_per_day",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 86400000000000 (one a nanosecond)",
        what: "Requests per day (24 hours) in this scope, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.scopes.SCOPE.tokens_per_day",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 86400000000000 (one a nanosecond)",
        what: "Tokens per day (24 hours) in this scope, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.scopes.SCOPE.concurrent_requests",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000",
        what: "Requests in flight at once in this scope.",
    },
    KeyDoc {
        key: "providers.NAME.scopes.SCOPE.refill",
        kind: "string",
        default: "\"window\"",
        range: "\"window\" or \"continuous\"",
        what: "How the provider refills these quotas: \"window\" (safe for any provider) lets \
            only the part of a limit above the pace go at once; \"continuous\" (a token bucket, \
            as Anthropic documents its limits) lets the whole pace go at once.",
    },
    KeyDoc {
        key: "providers.NAME.models",
        kind: "map",
        default: "none",
        range: "",
        what: "Models' own quotas by model name (MODEL → table): `gpt-4o` configures the scope \
            `model:gpt-4o`. A name with a dot is quoted (`models.\"gpt-4.1\"`).",
    },
    KeyDoc {
        key: "providers.NAME.models.MODEL",
        kind: "table",
        default: "none",
        range: "its scope `model:MODEL` not also under `scopes`",
        what: "The quotas of one model: the scope its requests charge and its plugin's figures \
            land in.",
    },
    KeyDoc {
        key: "providers.NAME.models.MODEL.requests_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Requests per minute for this model, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.models.MODEL.tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Tokens, input and output together, per minute for this model, paced at the \
            provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.models.MODEL.input_tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Input tokens per minute for this model, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.models.MODEL.output_tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Output tokens per minute for this model, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.models.MODEL.requests_per_day",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 86400000000000 (one a nanosecond)",
        what: "Requests per day (24 hours) for this model, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.models.MODEL.tokens_per_day",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 86400000000000 (one a nanosecond)",
        what: "Tokens per day (24 hours) for this model, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.models.MODEL.concurrent_requests",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000",
        what: "Requests in flight at once for this model.",
    },
    KeyDoc {
        key: "providers.NAME.models.MODEL.refill",
        kind: "string",
        default: "\"window\"",
        range: "\"window\" or \"continuous\"",
        what: "How the provider refills these quotas: \"window\" (safe for any provider) lets \
            only the part of a limit above the pace go at once; \"continuous\" (a token bucket, \
            as Anthropic documents its limits) lets the whole pace go at once.",
    },
    KeyDoc {
        key: "providers.NAME.generations",
        kind: "map",
        default: "none",
        range: "",
        what: "Per-model settings of its generations (MODEL → table); `\"*\"` is every model \
            without its own entry, and a dated model (`o3-2025-04-16`) falls back to its family \
            (`o3`).",
    },
    KeyDoc {
        key: "providers.NAME.generations.MODEL",
        kind: "table",
        default: "none",
        range: "",
        what: "One model's settings of generations; each key falls back on its own.",
    },
    KeyDoc {
        key: "providers.NAME.generations.MODEL.default_max_output",
        kind: "integer",
        default: "none (the plugin's own)",
        range: "1 ..= 10000000",
        what: "The output tokens a generation that names no maximum is counted for.",
    },
    KeyDoc {
        key: "providers.NAME.generations.MODEL.timeout_ms",
        kind: "integer",
        default: "`transport.generation_timeout_ms`",
        range: "1 ..= 3600000",
        what: "How long an answer read whole (not streamed) may take to arrive, in ms.",
    },
    KeyDoc {
        key: "providers.NAME.prices",
        kind: "map",
        default: "none",
        range: "",
        what: "Its prices by model (MODEL → table). A dated model without a price of its own is \
            priced as its family (`gpt-4o-2024-08-06` as `gpt-4o`).",
    },
    KeyDoc {
        key: "providers.NAME.prices.MODEL",
        kind: "table",
        default: "none",
        range: "",
        what: "One model's prices, in micro-units (millionths) of the currency per million tokens.",
    },
    KeyDoc {
        key: "providers.NAME.prices.MODEL.input_micros_per_million",
        kind: "integer",
        default: "required",
        range: "0 ..= 1000000000000",
        what: "The price of a million input tokens, in micro-units.",
    },
    KeyDoc {
        key: "providers.NAME.prices.MODEL.output_micros_per_million",
        kind: "integer",
        default: "required",
        range: "0 ..= 1000000000000",
        what: "The price of a million output tokens, in micro-units; tokens an estimate does not \
            split are priced at it.",
    },
    KeyDoc {
        key: "providers.NAME.prices.MODEL.cached_input_micros_per_million",
        kind: "integer",
        default: "the input price",
        range: "0 ..= 1000000000000",
        what: "The price of a million input tokens read from the provider's prompt cache, in \
            micro-units.",
    },
    KeyDoc {
        key: "providers.NAME.prices.MODEL.cache_write_micros_per_million",
        kind: "integer",
        default: "the input price",
        range: "0 ..= 1000000000000",
        what: "The price of a million input tokens written to the provider's prompt cache, in \
            micro-units.",
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
    KeyDoc {
        key: "retry.backoff_base_ms",
        kind: "integer",
        default: "500",
        range: "0 ..= 86400000, at most `backoff_cap_ms`",
        what: "The backoff's first window, in ms: a retry waits a random time up to it (full \
            jitter), or the provider's `Retry-After` if longer.",
    },
    KeyDoc {
        key: "retry.backoff_cap_ms",
        kind: "integer",
        default: "30000",
        range: "0 ..= 86400000",
        what: "The backoff's largest window, in ms.",
    },
    KeyDoc {
        key: "retry.max_delayed_requests",
        kind: "integer",
        default: "64",
        range: "0 ..= 1000000",
        what: "The most calls of one scope waiting to retry at once; past it a failed call ends \
            instead.",
    },
    KeyDoc {
        key: "retry.task_max_attempts",
        kind: "integer",
        default: "0",
        range: "0 ..= 1000000",
        what: "The most attempts one task may send over all its calls; 0: no task budget.",
    },
    KeyDoc {
        key: "retry.breaker_threshold",
        kind: "integer",
        default: "5",
        range: "0 ..= 1000000 (0 counts as 1)",
        what: "Identical failures in a row on one path (provider, credential, route, model) that \
            open its circuit breaker.",
    },
    KeyDoc {
        key: "retry.breaker_open_ms",
        kind: "integer",
        default: "30000",
        range: "0 ..= 86400000",
        what: "How long an open breaker refuses calls on its path, in ms.",
    },
    KeyDoc {
        key: "retry.quota_exhausted_hold_ms",
        kind: "integer",
        default: "900000",
        range: "0 ..= 86400000",
        what: "How long a spent quota (a billing or daily quota) holds its scope when the \
            provider does not say when it resets, in ms.",
    },
    KeyDoc {
        key: "retry.resend_unanswered_generation",
        kind: "boolean",
        default: "false",
        range: "",
        what: "Whether a generation that was sent and got no answer is sent once more; the \
            provider may have generated and billed it.",
    },
    KeyDoc {
        key: "retry.classes",
        kind: "map",
        default: "read, idempotent_write and uncertain_write, as below",
        range: "",
        what: "Retry budgets by request class (CLASS → table). A class given replaces its default \
            whole; the others keep theirs.",
    },
    KeyDoc {
        key: "retry.classes.CLASS",
        kind: "table",
        default: "none",
        range: "\"read\", \"idempotent_write\" or \"uncertain_write\"",
        what: "One request class's retry budget; its three keys are required.",
    },
    KeyDoc {
        key: "retry.classes.CLASS.max_attempts",
        kind: "integer",
        default: "required",
        range: "1 ..= 100; 1 for uncertain_write",
        what: "Attempts in all, the first included. The defaults: read 4, idempotent_write 3, \
            uncertain_write 1 (a write that may have happened is reconciled, never resent).",
    },
    KeyDoc {
        key: "retry.classes.CLASS.max_wait_ms",
        kind: "integer",
        default: "required",
        range: "0 ..= 86400000",
        what: "The most time spent waiting between attempts, in ms. The defaults: read 90000, \
            idempotent_write 120000, uncertain_write 0.",
    },
    KeyDoc {
        key: "retry.classes.CLASS.retry_statuses",
        kind: "array of integers",
        default: "required",
        range: "each 100 ..= 599",
        what: "The HTTP statuses worth another attempt. The defaults: read [408, 429, 500, 502, \
            503, 504, 529], idempotent_write those and 409, uncertain_write [].",
    },
    KeyDoc {
        key: "audit.checkpoint_every",
        kind: "integer",
        default: "64",
        range: "1 ..= 1000000",
        what: "A signed checkpoint every this many records.",
    },
    KeyDoc {
        key: "audit.retention_days",
        kind: "integer",
        default: "none (every record kept)",
        range: "1 ..= 3650",
        what: "How long records are kept, in days.",
    },
    KeyDoc {
        key: "audit.key_file",
        kind: "path",
        default: "`audit.key` in the state directory",
        range: "",
        what: "The Ed25519 key that signs the checkpoints. `sluice serve` refuses one in the \
            state directory unless started with `--audit-key-in-state-dir`.",
    },
    KeyDoc {
        key: "audit.witness",
        kind: "path",
        default: "`audit.witness` in the state directory",
        range: "",
        what: "The witness, a copy of every checkpoint: kept apart from the log (another disk, \
            another host's mount), it shows a deleted tail.",
    },
    KeyDoc {
        key: "journal.keep_answers_days",
        kind: "integer",
        default: "7",
        range: "0 ..= 3650",
        what: "How long the provider's answer to a write is kept, in days, to answer a \
            resubmission of the write as the provider did; 0 keeps none.",
    },
    KeyDoc {
        key: "transport.connect_timeout_ms",
        kind: "integer",
        default: "5000",
        range: "1 ..= 3600000",
        what: "How long opening a connection (TCP and TLS) may take, in ms; failing here sent \
            nothing.",
    },
    KeyDoc {
        key: "transport.first_byte_timeout_ms",
        kind: "integer",
        default: "120000",
        range: "1 ..= 3600000",
        what: "How long a request whose answer is streamed may wait for the status line and \
            headers, in ms.",
    },
    KeyDoc {
        key: "transport.generation_timeout_ms",
        kind: "integer",
        default: "600000",
        range: "1 ..= 3600000",
        what: "How long a request whose answer is read whole may wait for the status line and \
            headers, in ms: the longest a non-streamed generation may take.",
    },
    KeyDoc {
        key: "transport.idle_timeout_ms",
        kind: "integer",
        default: "30000",
        range: "1 ..= 3600000",
        what: "The longest silence between two chunks of a response body, in ms.",
    },
    KeyDoc {
        key: "transport.extra_roots",
        kind: "array of strings",
        default: "none",
        range: "paths of PEM files",
        what: "Certificate authorities trusted besides the built-in roots (PEM files, taken from \
            the file's directory).",
    },
    KeyDoc {
        key: "plugins.call_deadline_ms",
        kind: "integer",
        default: "5",
        range: "1 ..= 60000",
        what: "How long one plugin call may run, in ms; a provider's \
            `plugin_limits.call_deadline_ms` replaces it.",
    },
    KeyDoc {
        key: "budgets.time_zone",
        kind: "string",
        default: "\"UTC\"",
        range: "an IANA time zone name",
        what: "The time zone of the calendar days and months budgets count: a month resets at \
            midnight on the first there.",
    },
    KeyDoc {
        key: "budgets.currency",
        kind: "string",
        default: "\"USD\"",
        range: "1 to 16 ASCII letters or digits",
        what: "What a micro-unit is a millionth of; for display only.",
    },
    KeyDoc {
        key: "budgets.thresholds_percent",
        kind: "array of integers",
        default: "[80, 100]",
        range: "each 1 ..= 100",
        what: "The shares of a budget, in percent, whose crossing logs an event and counts in a \
            metric.",
    },
    KeyDoc {
        key: "budgets.unpriced",
        kind: "string",
        default: "\"warn\"",
        range: "\"refuse\", \"warn\" or \"free\"",
        what: "What a call to a model with no price does when its tenant has a spend budget: \
            refused, free with a warning once per model, or free silently.",
    },
    KeyDoc {
        key: "store.url",
        kind: "string",
        default: "required",
        range: "a redis:// URL",
        what: "The Redis server (7.0 or later) every host of the group names.",
    },
    KeyDoc {
        key: "store.hosts",
        kind: "integer",
        default: "required",
        range: "1 ..= 10000",
        what: "How many hosts share the quotas: while the store cannot be reached, each paces at \
            1/hosts of every limit.",
    },
    KeyDoc {
        key: "store.host_id",
        kind: "string",
        default: "the machine's host name and the state directory",
        range: "",
        what: "This host's name in the store; every host needs its own.",
    },
    KeyDoc {
        key: "store.lease_ttl_ms",
        kind: "integer",
        default: "10000",
        range: "300 ..= 3600000",
        what: "How long a concurrency lease lives without renewal, in ms: a dead host's slots \
            come back after it.",
    },
    KeyDoc {
        key: "store.timeout_ms",
        kind: "integer",
        default: "250",
        range: "1 ..= 60000",
        what: "How long one store command may take, in ms, before the host paces locally instead.",
    },
    KeyDoc {
        key: "store.key_prefix",
        kind: "string",
        default: "\"sluice\"",
        range: "not empty, no whitespace",
        what: "The prefix of every key the store writes.",
    },
    KeyDoc {
        key: "serve.listen",
        kind: "string",
        default: "\"127.0.0.1:8700\"",
        range: "an address and port",
        what: "Where agents connect.",
    },
    KeyDoc {
        key: "serve.shutdown_deadline_ms",
        kind: "integer",
        default: "10000",
        range: "1 ..= 3600000",
        what: "How long calls in flight get to finish, and writes to settle, after a stop signal, \
            in ms.",
    },
    KeyDoc {
        key: "serve.max_body_bytes",
        kind: "integer",
        default: "33554432 (32 MiB)",
        range: "1024 ..= 1073741824",
        what: "The largest request body taken, in bytes.",
    },
    KeyDoc {
        key: "serve.max_connections",
        kind: "integer",
        default: "1024",
        range: "1 ..= 1000000",
        what: "Agents' connections served at once; more wait to be accepted.",
    },
    KeyDoc {
        key: "serve.read_timeout_ms",
        kind: "integer",
        default: "30000",
        range: "100 ..= 3600000",
        what: "How long a request's headers, then its body, may each take to arrive, in ms.",
    },
    KeyDoc {
        key: "serve.failed_tokens_per_minute",
        kind: "integer",
        default: "10",
        range: "1 ..= 1000000",
        what: "Wrong tokens (agent, admin, console sign-in) one address may present in a minute; \
            past it the address's attempts are refused (429) until the minute is over.",
    },
    KeyDoc {
        key: "serve.agent_provider_keys",
        kind: "string",
        default: "\"refuse\"",
        range: "\"refuse\" or \"strip\"",
        what: "What happens to a request that carries a provider key of its own: refused (403), \
            or sent without it.",
    },
    KeyDoc {
        key: "serve.priority_above_allowed",
        kind: "string",
        default: "\"refuse\"",
        range: "\"refuse\" or \"lower\"",
        what: "What happens to an `x-sluice-priority` its agent may not use: refused (400), or \
            lowered to the nearest class the agent may use.",
    },
    KeyDoc {
        key: "serve.admin",
        kind: "table",
        default: "none (no admin API)",
        range: "",
        what: "The admin API and the operator's console, on a listener of their own.",
    },
    KeyDoc {
        key: "serve.admin.listen",
        kind: "string",
        default: "\"127.0.0.1:8701\"",
        range: "an address and port",
        what: "Where the admin API listens.",
    },
    KeyDoc {
        key: "serve.admin.token",
        kind: "table",
        default: "required",
        range: "exactly one of `env`, `file` or `sha256`",
        what: "The token the admin API's callers present (`authorization: Bearer`); it signs in \
            to the console as `admin`.",
    },
    KeyDoc {
        key: "serve.admin.token.env",
        kind: "string",
        default: "none",
        range: "",
        what: "The environment variable that holds the admin token, read at start.",
    },
    KeyDoc {
        key: "serve.admin.token.file",
        kind: "path",
        default: "none",
        range: "",
        what: "A file that holds the admin token (surrounding whitespace trimmed), read at start; \
            taken from the file's directory.",
    },
    KeyDoc {
        key: "serve.admin.token.sha256",
        kind: "string",
        default: "none",
        range: "64 hex digits",
        what: "The SHA-256 of the admin token, in hex: the configuration never holds the token \
            itself.",
    },
    KeyDoc {
        key: "serve.admin.operators",
        kind: "map",
        default: "none",
        range: "",
        what: "People who sign in to the console by name (OPERATOR → table); a decision records \
            the name.",
    },
    KeyDoc {
        key: "serve.admin.operators.OPERATOR",
        kind: "table",
        default: "none",
        range: "exactly one of `env`, `file` or `sha256`; the name one line of visible \
            characters, at most 256 bytes",
        what: "One operator's console token.",
    },
    KeyDoc {
        key: "serve.admin.operators.OPERATOR.env",
        kind: "string",
        default: "none",
        range: "",
        what: "The environment variable that holds the operator's token, read at start.",
    },
    KeyDoc {
        key: "serve.admin.operators.OPERATOR.file",
        kind: "path",
        default: "none",
        range: "",
        what: "A file that holds the operator's token (surrounding whitespace trimmed), read at \
            start; taken from the file's directory.",
    },
    KeyDoc {
        key: "serve.admin.operators.OPERATOR.sha256",
        kind: "string",
        default: "none",
        range: "64 hex digits",
        what: "The SHA-256 of the operator's token, in hex: the configuration never holds the \
            token itself.",
    },
    KeyDoc {
        key: "serve.admin.public_origin",
        kind: "string",
        default: "none (`http://` and the listener's own address)",
        range: "`http://` or `https://`, a host and an optional port, no path",
        what: "The origin browsers reach the console at through a TLS proxy: a form must come \
            from it.",
    },
    KeyDoc {
        key: "serve.admin.max_connections",
        kind: "integer",
        default: "64",
        range: "1 ..= 100000",
        what: "The admin listener's connections served at once, apart from the agents'.",
    },
    KeyDoc {
        key: "serve.agents",
        kind: "map",
        default: "none",
        range: "",
        what: "The agents by name (AGENT → table).",
    },
    KeyDoc {
        key: "serve.agents.AGENT",
        kind: "table",
        default: "none",
        range: "",
        what: "One agent: the token it presents and the tenant it bills.",
    },
    KeyDoc {
        key: "serve.agents.AGENT.token",
        kind: "table",
        default: "required",
        range: "exactly one of `env`, `file` or `sha256`",
        what: "The token the agent presents, as its SDK's API key or in `x-sluice-token`.",
    },
    KeyDoc {
        key: "serve.agents.AGENT.token.env",
        kind: "string",
        default: "none",
        range: "",
        what: "The environment variable that holds the agent's token, read at start.",
    },
    KeyDoc {
        key: "serve.agents.AGENT.token.file",
        kind: "path",
        default: "none",
        range: "",
        what: "A file that holds the agent's token (surrounding whitespace trimmed), read at \
            start; taken from the file's directory.",
    },
    KeyDoc {
        key: "serve.agents.AGENT.token.sha256",
        kind: "string",
        default: "none",
        range: "64 hex digits",
        what: "The SHA-256 of the agent's token, in hex: the configuration never holds the token \
            itself.",
    },
    KeyDoc {
        key: "serve.agents.AGENT.tenant",
        kind: "string",
        default: "required",
        range: "",
        what: "The tenant its calls are billed to.",
    },
    KeyDoc {
        key: "serve.agents.AGENT.tier",
        kind: "string",
        default: "none",
        range: "\"standard\" or a tier under `[tiers]`, agreeing with `tenants.assign`",
        what: "The tenant's tier; it is entered in `tenants.assign`.",
    },
    KeyDoc {
        key: "serve.agents.AGENT.name_tenant",
        kind: "boolean",
        default: "false",
        range: "",
        what: "Whether its requests may name another tenant (`x-sluice-tenant`): one token for a \
            platform that serves many customers.",
    },
    KeyDoc {
        key: "serve.agents.AGENT.credentials",
        kind: "map",
        default: "none",
        range: "",
        what: "The credential label it uses, by provider (NAME → label).",
    },
    KeyDoc {
        key: "serve.agents.AGENT.credentials.NAME",
        kind: "string",
        default: "the provider's only credential, else `default`",
        range: "a provider under `[providers]` and one of its credentials' labels",
        what: "The label of the credential its calls to the provider are sent with.",
    },
    KeyDoc {
        key: "serve.agents.AGENT.priorities",
        kind: "array of strings",
        default: "all: \"interactive\", \"standard\", \"background\"",
        range: "a non-empty list of \"interactive\", \"standard\", \"background\"",
        what: "The queue classes it may ask for with `x-sluice-priority`.",
    },
    KeyDoc {
        key: "serve.agents.AGENT.pass_headers",
        kind: "array of strings",
        default: "none",
        range: "\"openai-organization\", \"openai-project\"",
        what: "The account headers it may set; every other one it sends is stripped.",
    },
    KeyDoc {
        key: "serve.providers",
        kind: "map",
        default: "none",
        range: "",
        what: "How the sidecar speaks to each provider's SDKs (NAME → table).",
    },
    KeyDoc {
        key: "serve.providers.NAME",
        kind: "table",
        default: "none",
        range: "a provider under `[providers]`",
        what: "How the sidecar speaks to one provider's SDKs.",
    },
    KeyDoc {
        key: "serve.providers.NAME.error_shape",
        kind: "string",
        default: "the shape its plugin describes, else \"openai\"",
        range: "\"openai\", \"anthropic\", \"github\" or \"stripe\"",
        what: "The JSON shape of the errors the sidecar answers for the provider.",
    },
    KeyDoc {
        key: "serve.providers.NAME.read_routes",
        kind: "array of strings",
        default: "the routes its plugin describes as reads",
        range: "`METHOD /path`, the method in capitals; a trailing `*` matches any rest",
        what: "Routes besides GET, HEAD and OPTIONS that are reads (no side effect, safe to \
            resend); any other route is a write, journaled.",
    },
];

//! The providers' keys: each one's plugin, base URL, credentials, limits, scopes, models,
//! generations and prices.

use super::super::KeyDoc;

/// The `[providers]` keys.
pub(in crate::config_reference) const PROVIDERS: &[KeyDoc] = &[
    KeyDoc {
        key: "providers",
        kind: "map",
        default: "none",
        range: "",
        what: "The providers by name (NAME → table): each one's plugin, base URL, credentials, \
            limits, scopes, models, generations and prices.",
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
        key: "providers.NAME.max_unconfigured_scopes",
        kind: "integer",
        default: "`queue.max_unconfigured_scopes`",
        range: "0 ..= 65536",
        what: "The most names of this provider's narrower scopes the file does not configure it \
            keeps at once; past them, `model:other` or `other`.",
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
        range: "exactly one of `env`, `file` or `sigv4`",
        what: "Where one credential's secret is read from, and the header it is sent in (or, \
            for `sigv4`, the keys each request is signed with). It is added at each send, \
            never written anywhere.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.env",
        kind: "string",
        default: "none",
        range: "",
        what: "The environment variable that holds the secret (surrounding whitespace trimmed); \
            read at the first send that finds it, then kept (a running process's environment \
            changes only by its own hand).",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.file",
        kind: "path",
        default: "none",
        range: "",
        what: "The file that holds the secret (surrounding whitespace trimmed, at most 16 KiB), \
            taken from the file's directory; checked at each send and read again when it \
            changed (its inode, size or times), so a rotated file takes effect at the next send.",
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
        key: "providers.NAME.credentials.LABEL.sigv4",
        kind: "table",
        default: "none",
        range: "without `env`, `file` and `scheme`",
        what: "Sign each request with AWS Signature Version 4 (Amazon Bedrock) instead of \
            sending a header: at send time, on the request as sent, for every attempt, so no \
            signature ages in the queue. Signs `host`, `content-type`, the `x-amz-*` headers \
            and the body; a caller's own signature is dropped.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.sigv4.region",
        kind: "string",
        default: "none (required)",
        range: "an AWS region name (`us-east-1`)",
        what: "The region signed for: the one of the endpoint the calls go to.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.sigv4.service",
        kind: "string",
        default: "\"bedrock\"",
        range: "lower-case letters, digits and `-`",
        what: "The service signed for (Bedrock's runtime signs as `bedrock`).",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.sigv4.file",
        kind: "path",
        default: "none: the keys come from the environment",
        range: "at most 16 KiB",
        what: "An AWS shared credentials file (`aws_access_key_id`, `aws_secret_access_key`, \
            `aws_session_token` under `[profile]`), taken from the file's directory; checked \
            at each send and read again when it changed, so refreshed temporary keys are used \
            at the next send.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.sigv4.profile",
        kind: "string",
        default: "\"default\"",
        range: "only with `sigv4.file`",
        what: "The file's section (`[name]` or `[profile name]`).",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.sigv4.access_key_id_env",
        kind: "string",
        default: "\"AWS_ACCESS_KEY_ID\"",
        range: "not with `sigv4.file`",
        what: "The environment variable holding the access key id; read at the first send, \
            then kept.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.sigv4.secret_access_key_env",
        kind: "string",
        default: "\"AWS_SECRET_ACCESS_KEY\"",
        range: "not with `sigv4.file`",
        what: "The environment variable holding the secret access key.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.sigv4.session_token_env",
        kind: "string",
        default: "\"AWS_SESSION_TOKEN\", used when set",
        range: "not with `sigv4.file`",
        what: "The environment variable holding a session token (temporary keys); a \
            variable named here must be set.",
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
        default: "the plugin's (`describe`), else \"window\"",
        range: "\"window\" or \"continuous\"",
        what: "How the provider refills these quotas: \"window\" (safe for any provider) lets \
            only the part of a limit above the pace go at once; \"continuous\" (a token bucket, \
            as Anthropic documents its limits) lets the whole pace go at once. Unset, the \
            provider's plugin says (the bundled `anthropic` plugin: \"continuous\").",
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
        default: "the plugin's (`describe`), else \"window\"",
        range: "\"window\" or \"continuous\"",
        what: "How the provider refills these quotas: \"window\" (safe for any provider) lets \
            only the part of a limit above the pace go at once; \"continuous\" (a token bucket, \
            as Anthropic documents its limits) lets the whole pace go at once. Unset, the \
            provider's plugin says (the bundled `anthropic` plugin: \"continuous\").",
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
        default: "the plugin's (`describe`), else \"window\"",
        range: "\"window\" or \"continuous\"",
        what: "How the provider refills these quotas: \"window\" (safe for any provider) lets \
            only the part of a limit above the pace go at once; \"continuous\" (a token bucket, \
            as Anthropic documents its limits) lets the whole pace go at once. Unset, the \
            provider's plugin says (the bundled `anthropic` plugin: \"continuous\").",
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
];

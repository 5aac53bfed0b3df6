//! The keys of a credential's own endpoint and limits, and of pools of credentials.

use super::super::KeyDoc;

/// The keys of `[providers.NAME.credentials.LABEL]` besides its secret's, and
/// `[providers.NAME.pools]`.
pub(in crate::config_reference) const POOLS: &[KeyDoc] = &[
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.base_url",
        kind: "string",
        default: "the provider's `base_url`",
        range: "an absolute http:// or https:// URL",
        what: "Where calls made with this credential go instead (another region, an Azure \
            OpenAI resource): a call's URL under the provider's base URL is moved under it.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.path",
        kind: "string",
        default: "the call's path",
        range: "starts with `/`",
        what: "The path calls made with this credential go to: `{path}` stands for the call's \
            path after its first segment (`/v1/chat/completions` → `chat/completions`), and the \
            call's query joins the template's (an Azure OpenAI deployment: \
            `/openai/deployments/gpt-4o/{path}?api-version=2024-10-21`).",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.limits",
        kind: "table",
        default: "the provider's `limits`",
        range: "the keys of `providers.NAME.limits`",
        what: "This credential's own bucket, instead of the provider's `limits` (a pool's \
            members with different quotas).",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.limits.requests_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Requests per minute for each credential, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.limits.tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Tokens, input and output together, per minute for each credential, paced at the \
            provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.limits.input_tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Input tokens per minute for each credential, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.limits.output_tokens_per_minute",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 60000000000 (one a nanosecond)",
        what: "Output tokens per minute for each credential, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.limits.requests_per_day",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 86400000000000 (one a nanosecond)",
        what: "Requests per day (24 hours) for each credential, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.limits.tokens_per_day",
        kind: "integer",
        default: "none",
        range: "at least 1; limit × margin at most 86400000000000 (one a nanosecond)",
        what: "Tokens per day (24 hours) for each credential, paced at the provider's margin.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.limits.concurrent_requests",
        kind: "integer",
        default: "none",
        range: "1 ..= 1000000",
        what: "Requests in flight at once for each credential.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.limits.refill",
        kind: "string",
        default: "the plugin's (`describe`), else \"window\"",
        range: "\"window\" or \"continuous\"",
        what: "How the provider refills these quotas: \"window\" (safe for any provider) lets \
            only the part of a limit above the pace go at once; \"continuous\" (a token bucket, \
            as Anthropic documents its limits) lets the whole pace go at once. Unset, the \
            provider's plugin says (the bundled `anthropic` plugin: \"continuous\").",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.models",
        kind: "map",
        default: "the provider's `models`",
        range: "the keys of `providers.NAME.models.MODEL`",
        what: "This credential's models' quotas (MODEL → table), each instead of the \
            provider's entry of the same model.",
    },
    KeyDoc {
        key: "providers.NAME.credentials.LABEL.scopes",
        kind: "map",
        default: "the provider's `scopes`",
        range: "the keys of `providers.NAME.scopes.SCOPE`",
        what: "This credential's narrower scopes' quotas (SCOPE → table), each instead of the \
            provider's entry of the same name.",
    },
    KeyDoc {
        key: "providers.NAME.pools",
        kind: "map",
        default: "none",
        range: "",
        what: "Pools of its credentials by name (POOL → table): a call, or an agent's \
            `credentials` entry, names the pool instead of a credential, and each read goes with \
            the member that would admit it soonest; a write keeps one member for its whole life.",
    },
    KeyDoc {
        key: "providers.NAME.pools.POOL",
        kind: "table",
        default: "none",
        range: "a name no credential of the provider has",
        what: "One pool.",
    },
    KeyDoc {
        key: "providers.NAME.pools.POOL.members",
        kind: "array of strings",
        default: "none",
        range: "1 to 1000 of the provider's credential labels, each once",
        what: "Its members, by credential label.",
    },
    KeyDoc {
        key: "providers.NAME.pools.POOL.weights",
        kind: "map",
        default: "1 for each member",
        range: "members only; 1 to 10000",
        what: "Members' weights (LABEL → integer): between members that would admit a call \
            equally soon, each gets calls in proportion to its weight.",
    },
];

//! The sidecar's tables: `[serve]`, its admin API and console, its agents and its providers.

use super::super::KeyDoc;

/// The sidecar's keys.
pub(in crate::config_reference) const SERVE: &[KeyDoc] = &[
    KeyDoc {
        key: "serve",
        kind: "table",
        default: "",
        range: "",
        what: "The sidecar, `sluice serve`: its listener, agents, admin API and how it speaks to \
            each provider. Read and checked against the rest of the file by `sluice serve` and \
            `sluice config check`; a host embedded in another program takes it as written.",
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
        what: "Agents' connections seated at once (a connection is seated when its first \
               request presents a valid agent token); past it a connection is answered 503 \
               `too_many_connections` with Retry-After and closed.",
    },
    KeyDoc {
        key: "serve.max_connections_per_agent",
        kind: "integer",
        default: "256",
        range: "1 ..= 1000000",
        what: "One agent's connections seated at once; past it, its next connection is \
               answered 503 `too_many_connections` and closed, and the other agents are \
               unhurt.",
    },
    KeyDoc {
        key: "serve.max_connections_per_tenant",
        kind: "integer",
        default: "512",
        range: "1 ..= 1000000",
        what: "One tenant's connections seated at once, its agents' together.",
    },
    KeyDoc {
        key: "serve.max_unauthenticated",
        kind: "integer",
        default: "256",
        range: "1 ..= 1000000",
        what: "Connections yet to present a valid token, at once. Past it the oldest of them \
               is cut to make room for the newest, so they never keep an agent out.",
    },
    KeyDoc {
        key: "serve.auth_timeout_ms",
        kind: "integer",
        default: "2000",
        range: "100 ..= 60000",
        what: "How long a new connection has to present a valid token, in ms; then it is \
               cut. (The admin listener's connections have as long to send a request.)",
    },
    KeyDoc {
        key: "serve.max_body_memory",
        kind: "integer",
        default: "1073741824 (1 GiB)",
        range: "1024 ..= 2^40",
        what: "Request bodies held in memory at once, in bytes, over every tenant. Checked \
               by Content-Length before a body is read and as a chunked body arrives; past it \
               the request is answered 503 `body_memory_full` with Retry-After. A body's \
               memory is given back when its call ends.",
    },
    KeyDoc {
        key: "serve.max_body_memory_per_tenant",
        kind: "integer",
        default: "268435456 (256 MiB)",
        range: "1024 ..= 2^40",
        what: "One tenant's request bodies held in memory at once, in bytes; past it its \
               request is answered 503 `body_memory_full` with Retry-After, or 413 \
               `body_too_large` when its body alone is larger.",
    },
    KeyDoc {
        key: "serve.workers",
        kind: "integer",
        default: "one per CPU the process may use",
        range: "0 ..= 1024",
        what: "The threads agents' connections are served on, each connection wholly on one \
               thread, with connections of its own to the providers: the least CPU and \
               latency a call adds. 0: none; the connections are served on the threads \
               the rest of the sidecar runs on, which take work from each other: better \
               when the machine is near saturation (BENCHMARKS.md).",
    },
    KeyDoc {
        key: "serve.code_on_huge_pages",
        kind: "boolean",
        default: "true",
        range: "",
        what: "At start, move the binary's own machine code onto 2 MB pages (Linux, with \
               transparent huge pages not `never`): a call then misses far fewer address \
               translations: 6–18% less CPU a request at 500 a second in most runs, less at \
               2 000 (BENCHMARKS.md). Costs the code's size in memory (about 24 MB, no longer \
               shared with other processes running the same file); a profiler that reads \
               symbols from the file (perf) sees the moved code as anonymous, so turn it off \
               to profile. Where the system refuses, the code stays where it was and the log \
               says why.",
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
        what: "Wrong tokens one token may be presented from one address in a minute (its first \
            characters, hashed, mark it), and ten times as many from one address whatever \
            it presents, at each door apart (agents'; the admin API's and the console's \
            together); past it those attempts at that door are refused (429) until the \
            minute is over. A stale token one client keeps sending locks out only that token.",
    },
    KeyDoc {
        key: "serve.trusted_proxies",
        kind: "list of strings",
        default: "none",
        range: "addresses (`10.0.0.5`) or networks (`10.0.0.0/8`)",
        what: "Proxies in front of the listeners. A request whose peer is one of them is \
            counted (wrong tokens) against the client its `X-Forwarded-For` names: the \
            nearest address in it that is not itself a trusted proxy. From any other peer \
            `X-Forwarded-For` is ignored.",
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
        what: "The admin listener's connections served at once, apart from the agents' (past \
               it: 503, and the connection closed); as many again may wait to send their \
               first request, within serve.auth_timeout_ms, the oldest cut to make room.",
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
        key: "serve.agents.AGENT.class_hints",
        kind: "boolean",
        default: "false",
        range: "",
        what: "Whether its `x-sluice-class: read` is taken on a request the sidecar treats as a \
            write (any method but GET, HEAD and OPTIONS outside the read routes); without it \
            such a hint is refused (400) and the request is not sent.",
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
        range: "\"openai\", \"anthropic\", \"github\", \"stripe\", \"google\" or \"aws\"",
        what: "The JSON shape of the errors the sidecar answers for the provider.",
    },
    KeyDoc {
        key: "serve.providers.NAME.read_routes",
        kind: "array of strings",
        default: "the routes its plugin describes as reads",
        range: "`METHOD /path`, the method in capitals; a `*` matches any run of characters",
        what: "Routes besides GET, HEAD and OPTIONS that are reads (no side effect, safe to \
            resend); any other route is a write, journaled.",
    },
];

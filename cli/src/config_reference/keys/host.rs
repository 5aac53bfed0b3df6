//! The host's own tables: retries and breakers, the audit log, the journal, the transport,
//! plugins, budgets and the shared store.

use super::super::KeyDoc;

/// The host's own tables' keys.
pub(in crate::config_reference) const HOST: &[KeyDoc] = &[
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
            instead. Its tenants share them: a tenant holding fewer than its share (this bound \
            over the tenants holding places) takes one back from the tenant holding the most, \
            whose waiting call then ends.",
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
        key: "journal.url",
        kind: "string",
        default: "`journal.sqlite` in the state directory",
        range: "a postgres:// URL; libpq's sslmode, sslrootcert, sslcert and sslkey with \
            absolute paths",
        what: "The PostgreSQL database a group of hosts keeps its journal in: writes, \
            escalations, decisions and budget use, each action owned by the host that \
            recorded it. Every host of the group names the same one. TLS as libpq: \
            `?sslmode=verify-full&sslrootcert=/etc/sluice/db-ca.pem` checks the server's \
            certificate against that CA and the URL's host name; `verify-ca` the CA only; \
            `require` encrypts without checking unless `sslrootcert` is given; `prefer` (the \
            default) encrypts when the server offers it; `disable` never. `sslrootcert=system` \
            trusts the operating system's roots (with `verify-full`). `sslcert` and `sslkey`: \
            a client certificate and its key.",
    },
    KeyDoc {
        key: "journal.lease_ttl_ms",
        kind: "integer",
        default: "10000",
        range: "300 ..= 600000",
        what: "How long a host's lease in the group's journal lasts, renewed every quarter of \
            it. A host whose lease ran out, and then as long again, is gone: another host \
            takes over its unfinished writes. With `url` only.",
    },
    KeyDoc {
        key: "journal.key_secret_file",
        kind: "path",
        default: "derived from the audit signing key",
        range: "a file of at least 32 bytes",
        what: "The secret each write's idempotency key is derived from (with its task and \
            action), so a resend after any loss of the journal carries the same key. Keep it \
            outside the state directory, as the audit key; every host of a group names the \
            same secret.",
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
            refused, free with a warning once per model, or free silently. A call that uses \
            tokens and names no model is refused whatever this says: no price could apply.",
    },
    KeyDoc {
        key: "budgets.per_host",
        kind: "boolean",
        default: "false",
        range: "true or false",
        what: "Whether each host of a group that shares a [store] but no [journal] url counts \
            budgets on its own, knowingly: N hosts then let a tenant use up to N times each \
            budget. Without it, budgets in such a group are refused at start and by `config \
            check`.",
    },
    KeyDoc {
        key: "store.url",
        kind: "string",
        default: "required",
        range: "a redis:// or rediss:// URL",
        what: "The Redis server (7.0 or later) every host of the group names: `redis://HOST:PORT` \
            in clear text, `rediss://HOST:PORT` over TLS (its certificate checked against \
            `ca_file` and the URL's host name; no `#insecure`).",
    },
    KeyDoc {
        key: "store.ca_file",
        kind: "path",
        default: "none (the operating system's roots)",
        range: "a PEM file of CA certificates; with rediss:// only",
        what: "The CA that signed the Redis server's certificate (a managed Redis's CA bundle). \
            A certificate it did not sign is refused, saying so.",
    },
    KeyDoc {
        key: "store.client_cert_file",
        kind: "path",
        default: "none",
        range: "a PEM file; with rediss:// and `client_key_file` only",
        what: "This host's certificate (then any intermediates), shown to a Redis server that \
            asks for one (`tls-auth-clients yes`).",
    },
    KeyDoc {
        key: "store.client_key_file",
        kind: "path",
        default: "none",
        range: "a PEM file (PKCS#8, PKCS#1 or SEC1); with `client_cert_file` only",
        what: "The private key of `client_cert_file`; a key that is not the certificate's is \
            refused when the file is loaded.",
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
        key: "store.slice_ms",
        kind: "integer",
        default: "250",
        range: "0, or 10 ..= 10000",
        what: "How long a slice of a shared quota lives, in ms: each host takes quota from the \
            store in slices and admits against them locally; 0 asks the store for every call.",
    },
    KeyDoc {
        key: "store.key_prefix",
        kind: "string",
        default: "\"sluice\"",
        range: "not empty, no whitespace",
        what: "The prefix of every key the store writes.",
    },
    KeyDoc {
        key: "store.accept_claim_loss",
        kind: "boolean",
        default: "false",
        range: "",
        what: "Claim writes even in a Redis that can lose a claim (a maxmemory with a policy \
            other than noeviction, or no append-only file): an evicted claim lets a second host \
            send its action again. By default writes are refused while the store can lose one.",
    },
];

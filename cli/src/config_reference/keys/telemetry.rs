//! `[telemetry]`: `sluice serve`'s export of spans and metrics over OTLP.

use super::super::KeyDoc;

/// The keys of `[telemetry]`.
pub(in crate::config_reference) const TELEMETRY: &[KeyDoc] = &[
    KeyDoc {
        key: "telemetry",
        kind: "table",
        default: "none (nothing exported unless an OTEL_EXPORTER_OTLP_*ENDPOINT variable is set)",
        range: "",
        what: "`sluice serve` exports its spans and metrics over OTLP/HTTP (protobuf) to a \
            collector. Each key left out is taken from the standard `OTEL_*` variable named \
            beside it, else its default: where both say, the table wins. With the table, \
            export is on unless `enabled = false`.",
    },
    KeyDoc {
        key: "telemetry.enabled",
        kind: "boolean",
        default: "true (with the table); `OTEL_SDK_DISABLED=true` turns it off",
        range: "",
        what: "`false` exports nothing, whatever the environment says; `true` exports even \
            when `OTEL_SDK_DISABLED=true`.",
    },
    KeyDoc {
        key: "telemetry.endpoint",
        kind: "string",
        default: "`OTEL_EXPORTER_OTLP_ENDPOINT` (a signal's own `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `..._METRICS_ENDPOINT` is taken whole), else http://localhost:4318",
        range: "an http:// or https:// URL",
        what: "The collector's OTLP/HTTP base URL: spans go to its `/v1/traces`, metrics to \
            its `/v1/metrics`. HTTPS is rustls, trusting Mozilla's roots.",
    },
    KeyDoc {
        key: "telemetry.protocol",
        kind: "string",
        default: "`OTEL_EXPORTER_OTLP_PROTOCOL`, else \"http/protobuf\"",
        range: "\"http/protobuf\"",
        what: "The OTLP protocol: this build speaks HTTP with protobuf bodies only (gRPC and \
            JSON are refused, naming the key or the variable).",
    },
    KeyDoc {
        key: "telemetry.service_name",
        kind: "string",
        default: "`OTEL_SERVICE_NAME`, else \"sluice\"",
        range: "",
        what: "The `service.name` every span and metric is exported under \
            (`OTEL_RESOURCE_ATTRIBUTES` adds others).",
    },
    KeyDoc {
        key: "telemetry.headers",
        kind: "map",
        default: "`OTEL_EXPORTER_OTLP_HEADERS`",
        range: "header names to values",
        what: "Headers sent with every export (a collector's token), beside the variable's; \
            where both name a header, the table's value is sent. A secret is better kept in \
            the variable than in the file.",
    },
    KeyDoc {
        key: "telemetry.traces",
        kind: "boolean",
        default: "true, unless `OTEL_TRACES_EXPORTER=none`",
        range: "",
        what: "Whether spans are exported: a `sluice.call` span per call and a \
            `sluice.attempt` span per attempt, with the GenAI attributes \
            ([observability](observability.md)).",
    },
    KeyDoc {
        key: "telemetry.metrics",
        kind: "boolean",
        default: "true, unless `OTEL_METRICS_EXPORTER=none`",
        range: "",
        what: "Whether metrics are exported (the same series `/metrics` serves to \
            Prometheus).",
    },
    KeyDoc {
        key: "telemetry.metrics_interval_ms",
        kind: "integer",
        default: "`OTEL_METRIC_EXPORT_INTERVAL`, else 60000",
        range: "100 ..= 3600000",
        what: "How often the metrics are exported, in ms.",
    },
    KeyDoc {
        key: "telemetry.timeout_ms",
        kind: "integer",
        default: "`OTEL_EXPORTER_OTLP_TIMEOUT`, else 10000",
        range: "1 ..= 600000",
        what: "The longest one export may take, in ms; a collector that does not answer in \
            time loses that batch, never a call.",
    },
];

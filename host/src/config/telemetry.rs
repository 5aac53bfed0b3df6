//! `[telemetry]`: exporting the spans and metrics over OpenTelemetry's protocol (OTLP). The
//! library only reads the table; `sluice serve` exports, and fills in what the table leaves
//! out from the standard `OTEL_*` variables (the table wins where both say).

use std::time::Duration;

use serde::Deserialize;

use super::ConfigFileError;
use super::read::{NonEmpty, Ranged, Reader};

/// The only OTLP protocol this build exports with (`protocol`, `OTEL_EXPORTER_OTLP_PROTOCOL`).
pub const HTTP_PROTOBUF: &str = "http/protobuf";

/// Headers sent with every export: a collector's token among them, so only their names
/// print.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ExportHeaders(pub Vec<(String, String)>);

impl std::fmt::Debug for ExportHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(n, _)| n))
            .finish()
    }
}

/// The `[telemetry]` table: every key left out is `None` (or empty), for the environment's
/// `OTEL_*` variables or the defaults to fill in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// Whether the file has a `[telemetry]` table: with one, telemetry is on unless
    /// `enabled = false`; without, only when an `OTEL_EXPORTER_OTLP_*ENDPOINT` variable says
    /// where to.
    pub present: bool,
    /// `enabled`: `false` turns the export off whatever the environment says; `true`, on
    /// even when `OTEL_SDK_DISABLED=true`.
    pub enabled: Option<bool>,
    /// `endpoint`: the collector's OTLP/HTTP base URL (`/v1/traces` and `/v1/metrics` are
    /// appended), as `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: Option<String>,
    /// `protocol`: `http/protobuf`, the only one this build speaks.
    pub protocol: Option<String>,
    /// `service_name`: the `service.name` of the resource, as `OTEL_SERVICE_NAME`.
    pub service_name: Option<String>,
    /// `headers`: sent with every export (a collector's token), beside those of
    /// `OTEL_EXPORTER_OTLP_HEADERS`; where both name a header, the table's value.
    pub headers: ExportHeaders,
    /// `traces`: whether spans are exported (`OTEL_TRACES_EXPORTER=none` turns them off).
    pub traces: Option<bool>,
    /// `metrics`: whether metrics are exported (`OTEL_METRICS_EXPORTER=none`).
    pub metrics: Option<bool>,
    /// `metrics_interval_ms`: how often metrics are exported, as
    /// `OTEL_METRIC_EXPORT_INTERVAL`.
    pub metrics_interval: Option<Duration>,
    /// `timeout_ms`: the longest one export may take, as `OTEL_EXPORTER_OTLP_TIMEOUT`.
    pub timeout: Option<Duration>,
}

/// `[telemetry]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct TelemetryTable {
    enabled: Option<bool>,
    endpoint: Option<NonEmpty>,
    protocol: Option<NonEmpty>,
    service_name: Option<NonEmpty>,
    headers: std::collections::BTreeMap<String, String>,
    traces: Option<bool>,
    metrics: Option<bool>,
    metrics_interval_ms: Option<Ranged<100, 3_600_000>>,
    timeout_ms: Option<Ranged<1, 600_000>>,
}

impl TelemetryTable {
    /// The table read and checked; `table` is `None` when the file has none.
    pub(super) fn config(
        table: Option<Self>,
        reader: &Reader<'_>,
    ) -> Result<TelemetryConfig, ConfigFileError> {
        let Some(t) = table else {
            return Ok(TelemetryConfig::default());
        };
        let endpoint = t.endpoint.map(NonEmpty::into_string);
        if let Some(e) = &endpoint
            && !(e.starts_with("http://") || e.starts_with("https://"))
        {
            return Err(reader.invalid(
                "telemetry.endpoint",
                "the collector's OTLP/HTTP URL, http://HOST:4318 or https://HOST:4318 \
                 (/v1/traces and /v1/metrics are appended)",
            ));
        }
        let protocol = t.protocol.map(NonEmpty::into_string);
        if let Some(p) = protocol.as_deref()
            && p != HTTP_PROTOBUF
        {
            return Err(reader.invalid(
                "telemetry.protocol",
                format!(
                    "`{p}` is not spoken by this build: OTLP goes over HTTP with protobuf \
                     bodies (\"{HTTP_PROTOBUF}\"); point it at the collector's HTTP port \
                     (4318), or leave the key out"
                ),
            ));
        }
        for (name, value) in &t.headers {
            if http_token(name).is_none() || value.bytes().any(|b| b.is_ascii_control()) {
                return Err(reader.invalid(
                    &format!("telemetry.headers.{name}"),
                    "a header name of letters, digits and `-`, with a value on one line",
                ));
            }
        }
        Ok(TelemetryConfig {
            present: true,
            enabled: t.enabled,
            endpoint,
            protocol,
            service_name: t.service_name.map(NonEmpty::into_string),
            headers: ExportHeaders(t.headers.into_iter().collect()),
            traces: t.traces,
            metrics: t.metrics,
            metrics_interval: t.metrics_interval_ms.map(Ranged::ms),
            timeout: t.timeout_ms.map(Ranged::ms),
        })
    }
}

/// `name` if it is an HTTP header name.
fn http_token(name: &str) -> Option<&str> {
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    ok.then_some(name)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use crate::config::SluiceConfig;

    fn read(text: &str) -> Result<super::TelemetryConfig, String> {
        SluiceConfig::from_toml(text, Path::new("."))
            .map(|c| c.telemetry)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_table_is_read_and_its_absence_leaves_every_key_to_the_environment() {
        let none = read("").unwrap();
        assert!(!none.present);
        assert_eq!(none, super::TelemetryConfig::default());
        let t = read(
            "[telemetry]\nendpoint = \"http://c:4318\"\nservice_name = \"gw\"\n\
             metrics_interval_ms = 500\ntraces = false\n[telemetry.headers]\nx-token = \"s3cret\"\n",
        )
        .unwrap();
        assert!(t.present);
        assert_eq!(t.endpoint.as_deref(), Some("http://c:4318"));
        assert_eq!(t.service_name.as_deref(), Some("gw"));
        assert_eq!(t.metrics_interval, Some(Duration::from_millis(500)));
        assert_eq!((t.traces, t.metrics, t.enabled), (Some(false), None, None));
        assert_eq!(
            t.headers.0,
            vec![("x-token".to_owned(), "s3cret".to_owned())]
        );
        assert!(
            !format!("{t:?}").contains("s3cret"),
            "a header's value is never printed"
        );
        assert!(read("[telemetry]\n").unwrap().present);
    }

    #[test]
    fn a_bad_key_is_named_with_what_to_do() {
        for (text, named) in [
            ("[telemetry]\nendpoint = \"c:4318\"\n", "telemetry.endpoint"),
            ("[telemetry]\nprotocol = \"grpc\"\n", "telemetry.protocol"),
            (
                "[telemetry]\nmetrics_interval_ms = 5\n",
                "telemetry.metrics_interval_ms",
            ),
            ("[telemetry]\nendpont = \"http://c\"\n", "telemetry.endpont"),
            (
                "[telemetry.headers]\n\"x y\" = \"v\"\n",
                "telemetry.headers.x y",
            ),
        ] {
            let e = read(text).unwrap_err();
            assert!(e.contains(named), "{text}: {e}");
        }
        let e = read("[telemetry]\nprotocol = \"grpc\"\n").unwrap_err();
        assert!(e.contains("http/protobuf"), "{e}");
    }
}

//! What `sluice serve` exports and where: the `[telemetry]` table, then the standard
//! `OTEL_*` variables for what it leaves out, then the defaults. Where the table and a
//! variable both say, the table wins (explicit configuration over the environment, as the
//! OpenTelemetry SDKs order code over variables).
//!
//! The endpoint alone is handed on as given: a signal's own variable
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and the general one are read by the exporter
//! itself, below the table's `endpoint`, as the specification says.

use std::time::Duration;

use sluice::config::{ExportHeaders, HTTP_PROTOBUF, TelemetryConfig};

/// The service name when neither the table nor `OTEL_SERVICE_NAME` gives one.
pub const DEFAULT_SERVICE_NAME: &str = "sluice";
/// How often metrics are exported by default (the specification's 60 s).
const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);
/// The longest one export takes by default (the specification's 10 s).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The export, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The base URL from the table; `None`: the exporter reads the `OTEL_*ENDPOINT`
    /// variables, else `http://localhost:4318`.
    pub endpoint: Option<String>,
    pub service_name: String,
    /// The table's headers, set on each export over the exporter's own (which come from
    /// `OTEL_EXPORTER_OTLP_HEADERS`); `None`: the variable's alone.
    pub headers: Option<ExportHeaders>,
    pub traces: bool,
    pub metrics: bool,
    pub metrics_interval: Duration,
    pub timeout: Duration,
}

/// The variables that say where to export: one set turns telemetry on without a table.
const ENDPOINT_VARS: [&str; 3] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];

/// The export `table` and the environment (`var`: a variable's value, `None` when unset or
/// empty) ask for; `Ok(None)`: nothing is exported.
///
/// # Errors
/// A variable with a value this build cannot follow (a protocol other than
/// `http/protobuf`, an interval that is not a number), named with what to do.
pub fn resolve(
    table: &TelemetryConfig,
    var: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Option<Settings>> {
    let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    let on = match table.enabled {
        Some(enabled) => enabled,
        None if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) => {
            false
        }
        None => table.present || ENDPOINT_VARS.iter().any(|v| var(v).is_some()),
    };
    if !on {
        return Ok(None);
    }
    if table.protocol.is_none() {
        for name in [
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        ] {
            if let Some(p) = var(name)
                && p.trim() != HTTP_PROTOBUF
            {
                anyhow::bail!(
                    "{name}={p}: this build exports OTLP over HTTP with protobuf bodies only \
                     (\"{HTTP_PROTOBUF}\"): point it at the collector's HTTP port (4318), or \
                     set `[telemetry] protocol = \"{HTTP_PROTOBUF}\"`"
                );
            }
        }
    }
    let exporter_on = |given: Option<bool>, name: &str| {
        given.unwrap_or_else(|| {
            var(name).is_none_or(|v| !v.split(',').any(|e| e.trim().eq_ignore_ascii_case("none")))
        })
    };
    let millis = |given: Option<Duration>, name: &str, default: Duration| {
        if let Some(d) = given {
            return Ok(d);
        }
        match var(name) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| anyhow::anyhow!("{name}={v}: a number of milliseconds")),
        }
    };
    Ok(Some(Settings {
        endpoint: table.endpoint.clone(),
        service_name: table
            .service_name
            .clone()
            .or_else(|| var("OTEL_SERVICE_NAME"))
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned()),
        headers: (!table.headers.0.is_empty()).then(|| table.headers.clone()),
        traces: exporter_on(table.traces, "OTEL_TRACES_EXPORTER"),
        metrics: exporter_on(table.metrics, "OTEL_METRICS_EXPORTER"),
        metrics_interval: millis(
            table.metrics_interval,
            "OTEL_METRIC_EXPORT_INTERVAL",
            DEFAULT_INTERVAL,
        )?,
        timeout: millis(table.timeout, "OTEL_EXPORTER_OTLP_TIMEOUT", DEFAULT_TIMEOUT)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn table() -> TelemetryConfig {
        TelemetryConfig {
            present: true,
            ..TelemetryConfig::default()
        }
    }

    #[test]
    fn nothing_is_exported_without_a_table_or_an_endpoint_variable() {
        let none = TelemetryConfig::default();
        assert_eq!(resolve(&none, env(&[])).unwrap(), None);
        assert_eq!(
            resolve(&none, env(&[("OTEL_SERVICE_NAME", "agent-gw")])).unwrap(),
            None
        );
        let on = resolve(
            &none,
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]),
        )
        .unwrap()
        .expect("on by the variable");
        assert_eq!(on.endpoint, None, "the exporter reads the variable itself");
        assert!(on.traces && on.metrics);
    }

    #[test]
    fn the_table_wins_over_the_variables() {
        let mut t = table();
        t.service_name = Some("from-table".into());
        t.traces = Some(true);
        t.metrics_interval = Some(Duration::from_millis(500));
        t.headers = ExportHeaders(vec![("x-token".into(), "t".into())]);
        let vars = [
            ("OTEL_SERVICE_NAME", "from-env"),
            ("OTEL_TRACES_EXPORTER", "none"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "9000"),
            ("OTEL_SDK_DISABLED", "true"),
        ];
        // OTEL_SDK_DISABLED turns off a table that does not say `enabled`...
        assert_eq!(resolve(&t, env(&vars)).unwrap(), None);
        // ... and not one that does.
        t.enabled = Some(true);
        let s = resolve(&t, env(&vars)).unwrap().unwrap();
        assert_eq!(s.service_name, "from-table");
        assert!(s.traces);
        assert_eq!(s.metrics_interval, Duration::from_millis(500));
        assert_eq!(
            s.headers,
            Some(ExportHeaders(vec![("x-token".into(), "t".into())]))
        );
        assert!(
            !format!("{s:?}").contains("\"t\""),
            "a header's value is never printed"
        );
        t.enabled = Some(false);
        assert_eq!(
            resolve(&t, env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c")])).unwrap(),
            None
        );
    }

    #[test]
    fn the_variables_fill_in_what_the_table_leaves_out() {
        let vars = [
            ("OTEL_SERVICE_NAME", "from-env"),
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "1500"),
        ];
        let s = resolve(&table(), env(&vars)).unwrap().unwrap();
        assert_eq!(s.service_name, "from-env");
        assert!(s.traces && !s.metrics);
        assert_eq!(s.metrics_interval, Duration::from_millis(1500));
        assert_eq!(s.headers, None);
        let s = resolve(&table(), env(&[])).unwrap().unwrap();
        assert_eq!(s.service_name, DEFAULT_SERVICE_NAME);
        assert_eq!(s.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn a_protocol_this_build_does_not_speak_is_refused_naming_the_variable() {
        let e = resolve(&table(), env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")])).unwrap_err();
        assert!(
            e.to_string().contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc"),
            "{e}"
        );
        let ok = [("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")];
        assert!(resolve(&table(), env(&ok)).unwrap().is_some());
        let e = resolve(&table(), env(&[("OTEL_METRIC_EXPORT_INTERVAL", "soon")])).unwrap_err();
        assert!(e.to_string().contains("OTEL_METRIC_EXPORT_INTERVAL"), "{e}");
    }
}

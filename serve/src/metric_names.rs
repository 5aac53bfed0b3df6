//! The sidecar's own metrics, beside the host's (`sluice::observe::METRICS`): one list of
//! names, kinds and help texts, described to the recorder from it.

/// Counter: requests the sidecar answered, by provider (`unknown` for a path naming none)
/// and status.
pub(crate) const REQUESTS: &str = "sluice_serve_requests_total";
/// Counter: visitors cut, by listener and why (`timeout`, `evicted`).
pub(crate) const VISITORS_CUT: &str = "sluice_serve_visitors_cut_total";
/// Counter: connections refused a seat, by listener and whose bound was full (`agent`,
/// `tenant`, `listener`).
pub(crate) const SEATS_REFUSED: &str = "sluice_serve_seats_refused_total";
/// Counter: connections a listener failed to accept, by listener.
pub(crate) const ACCEPT_FAILURES: &str = "sluice_serve_accept_failures_total";
/// Counter: requests with a token no agent has, by listener.
pub(crate) const FAILED_TOKENS: &str = "sluice_serve_failed_tokens_total";
/// Counter: retries an agent's SDK made on its own, by agent.
pub(crate) const SDK_RETRIES: &str = "sluice_serve_sdk_retries_total";

/// Every metric the sidecar records (all counters): its name and help text.
pub const METRICS: [(&str, &str); 6] = [
    (
        REQUESTS,
        "Requests the sidecar answered, by provider and status",
    ),
    (
        VISITORS_CUT,
        "Connections without a token cut, by listener and why",
    ),
    (
        SEATS_REFUSED,
        "Connections refused a seat, by listener and whose bound was full",
    ),
    (ACCEPT_FAILURES, "Connections a listener failed to accept"),
    (
        FAILED_TOKENS,
        "Requests presenting a token no agent has, by listener",
    ),
    (
        SDK_RETRIES,
        "Retries an agent's SDK made on its own, by agent",
    ),
];

/// Describes the sidecar's metrics to the installed recorder (`# HELP`), as
/// `sluice::observe::describe` does the host's.
pub fn describe() {
    for (name, help) in METRICS {
        metrics::describe_counter!(name, help);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No name is written anywhere else in the sidecar's code: each comes from this list.
    #[test]
    fn every_sidecar_metric_is_in_the_one_list() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut stack = vec![dir];
        let mut files = 0;
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.ends_with("metric_names.rs")
                {
                    files += 1;
                    let text = std::fs::read_to_string(&path).unwrap();
                    assert!(
                        !text.contains("\"sluice_serve_"),
                        "{} names a metric of its own",
                        path.display()
                    );
                }
            }
        }
        assert!(files > 20, "{files} files read");
        // The operator's table names each series the host and the sidecar record, and no
        // other.
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/observability.md"),
        )
        .unwrap();
        let documented: Vec<&str> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("| `sluice_"))
            .filter_map(|l| l.split('`').next())
            .collect();
        let recorded: Vec<&str> = METRICS
            .iter()
            .map(|(n, _)| *n)
            .chain(sluice::observe::METRICS.iter().map(|(n, ..)| *n))
            .map(|n| &n["sluice_".len()..])
            .collect();
        for name in &recorded {
            assert!(
                documented.contains(name),
                "sluice_{name} is not in docs/observability.md"
            );
        }
        for name in &documented {
            assert!(
                recorded.contains(name),
                "docs/observability.md names sluice_{name}, which nothing records"
            );
        }
        let mut seen = std::collections::HashSet::new();
        for (name, help) in METRICS {
            assert!(
                name.starts_with("sluice_serve_") && name.ends_with("_total"),
                "{name}"
            );
            assert!(seen.insert(name), "{name} twice");
            assert!(!help.is_empty());
        }
    }
}

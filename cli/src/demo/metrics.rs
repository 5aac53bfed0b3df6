//! `--metrics-addr`: the run's metrics, served to Prometheus at `/metrics` while it runs.
//!
//! The exporter's listener runs on a thread and a runtime of its own, on the wall clock: the
//! demo's runtime is on tokio's paused clock, where a scrape would wait on time that only
//! moves when the workload's timers do. It is installed as the process's recorder before
//! the host is built, so every series the host registers (a scope's queue depth, once) goes
//! to it. What the names mean: `sluice::observe`.

use std::net::{SocketAddr, TcpListener};

use anyhow::Context as _;

/// Serves the metrics of this process at `http://{addr}/metrics`, and returns the address
/// it listens on (`addr` with port 0 gets a free port).
///
/// # Errors
/// When the address cannot be bound, or a recorder is installed already.
pub fn serve(addr: SocketAddr) -> anyhow::Result<SocketAddr> {
    // The exporter binds the address itself and does not say which port it got: for port
    // 0, ask the system for a free one first, so that the address can be printed. Another
    // process could take it in between; then the bind below fails and says so.
    let addr = if addr.port() == 0 {
        TcpListener::bind(addr)
            .and_then(|l| l.local_addr())
            .with_context(|| format!("find a free port on {}", addr.ip()))?
    } else {
        addr
    };
    // Outside any runtime: `install` starts the listener on a thread of its own.
    crate::prometheus()?
        .with_http_listener(addr)
        .install()
        .with_context(|| format!("serve metrics on {addr}"))?;
    sluice::observe::describe();
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;
    use std::time::Duration;

    use super::*;

    /// GETs `/metrics` from `addr`, retrying while the listener starts.
    fn scrape(addr: SocketAddr) -> String {
        for _ in 0..50 {
            if let Ok(mut s) = TcpStream::connect(addr) {
                s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
                    .unwrap();
                let mut body = String::new();
                s.read_to_string(&mut body).unwrap();
                return body;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("nothing listens on {addr}");
    }

    #[test]
    fn the_exporter_serves_what_the_library_records_on_the_port_it_printed() {
        let addr = serve("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_ne!(addr.port(), 0);
        metrics::counter!(sluice::observe::RETRIES, "provider" => "openai", "reason" => "rate-limited")
            .increment(3);
        let body = scrape(addr);
        assert!(
            body.starts_with("HTTP/1.0 200") || body.starts_with("HTTP/1.1 200"),
            "{body}"
        );
        assert!(
            body.contains(r#"sluice_retries_total{provider="openai",reason="rate-limited"} 3"#),
            "{body}"
        );
        assert!(
            body.contains("# HELP sluice_retries_total"),
            "described: {body}"
        );
    }
}

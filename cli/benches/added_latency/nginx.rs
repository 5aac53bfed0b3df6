//! nginx from the distribution as a second yardstick beside [`crate::hop`]: the reverse
//! proxy operators put in front of services, set up as a plain hop (one worker process, the
//! upstream's connections kept, no access log), so a figure "within so many times a hop" can
//! be read against the proxy people know as well as against the leanest hop hyper makes.
//!
//! Found as `ADDED_LATENCY_NGINX` (a path), else `nginx` on `PATH` or in `/usr/sbin`. When
//! none is found the target is left out with a line saying so, unless it was asked for by
//! name (`ADDED_LATENCY_TARGETS=…,nginx`), which is then an error.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use sluice_fake_provider::FakeProvider;

use crate::cpus;
use crate::load::PATH;
use crate::load::{Target, Via};
use crate::targets::{PROVIDER_KEY, Process};

type Error = Box<dyn std::error::Error>;

pub const NAME: &str = "nginx";

/// The nginx program to run, if any.
fn program() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ADDED_LATENCY_NGINX").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    crate::targets::find_program("nginx", &["/usr/sbin"])
}

/// nginx in front of `fake`, in `dir`, on `cpu` when one is given; `None` (and a line on
/// standard error) when no nginx is found and `required` is false.
pub fn start(
    dir: &Path,
    fake: &FakeProvider,
    cpu: Option<usize>,
    required: bool,
) -> Result<Option<(Target, Process)>, Error> {
    let Some(program) = program() else {
        let why = "no nginx found (ADDED_LATENCY_NGINX, PATH, /usr/sbin); \
                   install it (Debian: `apt-get install nginx-light`) or set ADDED_LATENCY_NGINX";
        if required {
            return Err(format!("the target `nginx` was asked for, but {why}").into());
        }
        eprintln!("the target `nginx` is left out: {why}");
        return Ok(None);
    };
    let dir = dir.join(NAME);
    std::fs::create_dir_all(&dir)?;
    // nginx takes a port, not port 0: one the kernel just gave out and took back.
    let port = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?
        .local_addr()?
        .port();
    let upstream: SocketAddr = fake
        .url("")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()?;
    let file = dir.join("nginx.conf");
    std::fs::write(&file, config(&dir, port, upstream, &temp_modules(&program)))?;
    let child = cpus::command(&program, cpu)
        .arg("-p")
        .arg(&dir)
        .arg("-e")
        .arg(dir.join("error.log"))
        .arg("-c")
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let mut process = Process(child);
    // A configuration it refuses ends it at once: say why, not "never answered" later.
    std::thread::sleep(std::time::Duration::from_millis(300));
    if let Some(status) = process.0.try_wait()? {
        let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
        return Err(format!(
            "nginx ({}) stopped at once ({status}): {log}",
            program.display()
        )
        .into());
    }
    let target = Target {
        name: NAME,
        via: Via::Http {
            url: format!("http://127.0.0.1:{port}{PATH}"),
            authorization: format!("Bearer {PROVIDER_KEY}"),
        },
        pid: Some(process.0.id()),
        metrics: None,
    };
    Ok(Some((target, process)))
}

/// The modules of `program` with a temporary directory of their own (`fastcgi`, `scgi`,
/// `uwsgi`, as `nginx -V` names them), which it creates at start: each is pointed into the
/// bench's directory, so that nothing is written outside it.
fn temp_modules(program: &Path) -> Vec<&'static str> {
    let built = std::process::Command::new(program)
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default();
    ["fastcgi", "scgi", "uwsgi"]
        .into_iter()
        .filter(|m| !built.contains(&format!("--without-http_{m}_module")))
        .collect()
}

/// One worker, in the foreground, without a master process (so the process the bench
/// started is the one that serves, and its CPU is the hop's); HTTP/1.1 to the upstream with
/// its connections kept; no request-count limit on either side's keep-alive; every
/// temporary directory in `dir`.
fn config(dir: &Path, port: u16, upstream: SocketAddr, temp_modules: &[&str]) -> String {
    let d = dir.display();
    let temps: String = temp_modules
        .iter()
        .map(|m| format!("    {m}_temp_path {d}/{m};\n"))
        .collect();
    format!(
        r#"daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
{temps}    keepalive_requests 100000000;
    upstream provider {{
        server {upstream};
        keepalive 256;
        keepalive_requests 100000000;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://provider;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"#
    )
}

//! Where the bench's processes run. Left to the kernel, a proxy's process lands on the
//! generator's CPU in some runs and on the other CPU in others, and what a request costs
//! differs by several times between the two: a wake-up on another CPU of a virtual machine
//! costs more than the whole of a hop on the waker's own. So a comparison can be pinned:
//!
//! - `any` (the default): no pinning, the kernel places every thread;
//! - `shared`: everything on the first CPU this bench may use: each target pays its own work
//!   and no wake-up across CPUs;
//! - `apart`: each process target (the hop, `sluice serve`, the baseline) on the last CPU
//!   this bench may use, this process (the generator, the provider, the in-process sidecar
//!   and the embedded host) where the kernel places it: a proxy on a CPU of its own, between
//!   agents and a provider that run elsewhere. (Pinning this process to one CPU too would
//!   measure its own threads' turns on that CPU: milliseconds at the p99, direct or not.)
//!
//! Pinned with `taskset` (util-linux), as an operator would pin a process.

use std::path::Path;
use std::process::Command;

type Error = Box<dyn std::error::Error>;

/// Where the processes run (`ADDED_LATENCY_CPUS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    Any,
    Shared,
    Apart,
}

impl Placement {
    /// The placement `ADDED_LATENCY_CPUS` names; `any` when unset.
    pub fn from_env() -> Result<Self, Error> {
        match std::env::var("ADDED_LATENCY_CPUS")
            .as_deref()
            .map(str::trim)
        {
            Err(_) | Ok("" | "any") => Ok(Self::Any),
            Ok("shared") => Ok(Self::Shared),
            Ok("apart") => Ok(Self::Apart),
            Ok(other) => Err(format!(
                "ADDED_LATENCY_CPUS={other:?}: name `any`, `shared` (every process on one CPU) \
                 or `apart` (the proxies on a CPU of their own)"
            )
            .into()),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Any => "any",
            Self::Shared => "shared",
            Self::Apart => "apart",
        }
    }

    /// Pins this process as the placement says, and returns the CPU the process targets are
    /// to run on (none for `any`). Call it before any thread starts: threads started later
    /// inherit it.
    pub fn pin_self(self) -> Result<Option<usize>, Error> {
        let allowed = allowed_cpus()?;
        match (self, allowed.as_slice()) {
            (Self::Any, _) => Ok(None),
            (Self::Shared, [first, ..]) => {
                let pid = std::process::id().to_string();
                taskset(&["-a", "-p", "-c", &first.to_string(), &pid])?;
                Ok(Some(*first))
            }
            (Self::Apart, [_, .., last]) => Ok(Some(*last)),
            _ => Err(format!(
                "ADDED_LATENCY_CPUS={} needs {} CPUs; this process may use {allowed:?}",
                self.name(),
                if self == Self::Apart { "two" } else { "one" }
            )
            .into()),
        }
    }
}

/// A command that runs `program` on `cpu` when one is given.
pub fn command(program: &Path, cpu: Option<usize>) -> Command {
    match cpu {
        None => Command::new(program),
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &cpu.to_string()]).arg(program);
            c
        }
    }
}

/// The CPUs this process may run on, from `/proc/self/status`.
fn allowed_cpus() -> Result<Vec<usize>, Error> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or("/proc/self/status names no Cpus_allowed_list")?;
    let mut cpus = Vec::new();
    for part in list.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.trim().parse::<usize>()?..=b.trim().parse::<usize>()?);
    }
    Ok(cpus)
}

fn taskset(args: &[&str]) -> Result<(), Error> {
    let out = Command::new("taskset")
        .args(args)
        .output()
        .map_err(|e| format!("ADDED_LATENCY_CPUS needs `taskset` (util-linux): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "taskset {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into())
    }
}

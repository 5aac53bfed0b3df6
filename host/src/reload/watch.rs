//! `reload = "watch"`: a provider's plugin reloaded when its file changes.
//!
//! The file's modification time and size are polled every [`WATCH_INTERVAL`] on tokio's
//! clock rather than asked of the OS's notification API: one `stat` a second per watched
//! file costs nothing, works alike on every filesystem (network mounts and container volumes
//! included, where notifications are unreliable), and needs no dependency. A change is
//! reloaded on a blocking thread through [`PluginSet::reload`], so a watched reload passes
//! the same checks as any other; a refused version is logged and counted like any refusal,
//! and is not tried again until the file changes again.
//!
//! Replace the file with a rename (write the new build beside it, then `mv` it over), so the
//! watcher never reads half of it. A file rewritten in place may be read half-written and
//! refused; it is reloaded at the next tick after the write ends, as its stamp changes
//! again. The watcher stops once the host is dropped.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use super::PluginSet;

/// How often a watched file is looked at.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// What tells one version of a file from the next: its modification time and size.
type Stamp = (SystemTime, u64);

fn stamp(path: &std::path::Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Watches each `(provider, file)` of `files` on the current tokio runtime.
pub(super) fn spawn(plugins: &Arc<PluginSet>, files: Vec<(String, PathBuf)>) {
    if !files.is_empty() {
        // Stamped now, as the files were loaded, not when the task first runs: a change
        // made before then is still a change.
        let seen = files.iter().map(|(_, path)| stamp(path)).collect();
        tokio::spawn(watch(Arc::downgrade(plugins), files, seen));
    }
}

async fn watch(
    plugins: Weak<PluginSet>,
    files: Vec<(String, PathBuf)>,
    mut seen: Vec<Option<Stamp>>,
) {
    let mut tick = tokio::time::interval(WATCH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        for ((provider, path), last) in files.iter().zip(seen.iter_mut()) {
            // A file missing for a moment (between an unlink and a rename) is waited out.
            let Some(now) = stamp(path).filter(|now| Some(*now) != *last) else {
                continue;
            };
            *last = Some(now);
            let Some(set) = plugins.upgrade() else {
                return;
            };
            let provider = provider.clone();
            // The reload logs and counts its own result, taken or refused.
            let _ = tokio::task::spawn_blocking(move || set.reload(&provider)).await;
        }
        if plugins.strong_count() == 0 {
            return;
        }
    }
}

//! What becomes of a plugin's stdout and stderr: each is kept in memory during a call, up to
//! [`MAX_STDIO_LOG_BYTES`], and logged after it — a warning with the plugin's name, the call
//! and the stream, escaped to one line of visible characters.
//!
//! Why in memory and not the process's own streams: a plugin that prints (a debugging
//! `println!`, the message of a panic, the "memory allocation failed" of a plugin out of
//! memory) must neither block the call on the host's output nor reach a terminal with escape
//! sequences; the host's log is where an operator looks, and it is capped per call like the
//! plugin's `log` import. Writes past the cap are accepted and dropped (counted in the
//! message), so a plugin never fails because it printed too much.
//!
//! The streams are always ready, which is what lets the plugin's stdio calls run on any
//! thread, a tokio worker included (see [`super::nonblocking`]).

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::printable::printable;

/// Bytes of a plugin's stdout, and as many of its stderr, logged per call; the rest is
/// dropped.
pub const MAX_STDIO_LOG_BYTES: usize = 4096;

/// A plugin instance's stdout and stderr.
#[derive(Debug, Default, Clone)]
pub(crate) struct PluginStdio {
    pub(crate) stdout: Captured,
    pub(crate) stderr: Captured,
}

impl PluginStdio {
    /// Logs what the plugin wrote during its call of `function`, and starts over.
    pub(crate) fn log_call(&self, plugin: &str, function: &str) {
        for (stream, captured) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if let Some(text) = captured.take() {
                tracing::warn!(plugin, function, stream, "{text}");
            }
        }
    }
}

/// One output stream, kept in memory up to [`MAX_STDIO_LOG_BYTES`]. Clones share the buffer:
/// the WASI context holds one, the host the other.
#[derive(Debug, Default, Clone)]
pub(crate) struct Captured(Arc<Mutex<Buffer>>);

#[derive(Debug, Default)]
struct Buffer {
    kept: Vec<u8>,
    dropped: usize,
}

impl Captured {
    fn lock(&self) -> MutexGuard<'_, Buffer> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn append(&self, bytes: &[u8]) {
        let mut b = self.lock();
        let room = MAX_STDIO_LOG_BYTES.saturating_sub(b.kept.len());
        let (kept, dropped) = bytes.split_at(bytes.len().min(room));
        b.kept.extend_from_slice(kept);
        b.dropped = b.dropped.saturating_add(dropped.len());
    }

    /// What was written since the last take, as one printable line (`None` when nothing
    /// was), and empties the buffer.
    pub(crate) fn take(&self) -> Option<String> {
        let Buffer { kept, dropped } = std::mem::take(&mut *self.lock());
        if kept.is_empty() && dropped == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&kept);
        let text = printable(text.strip_suffix('\n').unwrap_or(&text)).into_owned();
        Some(match dropped {
            0 => text,
            n => format!("{text}… ({n} more bytes not logged)"),
        })
    }
}

impl IsTerminal for Captured {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Captured {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for Captured {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always room: what does not fit is dropped, not refused.
        Ok(64 << 10)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Captured {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for Captured {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.append(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_written_is_nothing_to_log() {
        assert_eq!(Captured::default().take(), None);
    }

    #[test]
    fn what_was_written_is_taken_once_on_one_line() {
        let c = Captured::default();
        c.append(b"first\n\x1b[2Jsecond\n");
        assert_eq!(c.take().as_deref(), Some(r"first\n\u{1b}[2Jsecond"));
        assert_eq!(c.take(), None);
    }

    #[test]
    fn what_passes_the_cap_is_dropped_and_counted() {
        let c = Captured::default();
        c.append(&[b'a'; MAX_STDIO_LOG_BYTES - 1]);
        c.append(b"bcd");
        let text = c.take().unwrap();
        assert!(text.starts_with("aaa"), "{text}");
        assert!(text.ends_with("ab… (2 more bytes not logged)"), "{text}");
        assert_eq!(text.matches('a').count(), MAX_STDIO_LOG_BYTES - 1);
    }

    #[test]
    fn invalid_utf8_is_logged_as_replacement_characters() {
        let c = Captured::default();
        c.append(b"ok \xff\xfe");
        assert_eq!(c.take().as_deref(), Some("ok \u{fffd}\u{fffd}"));
    }
}

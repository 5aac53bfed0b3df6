//! Work that would hold for long the thread a call is awaited on, moved to the runtime's
//! blocking pool: reading a body of megabytes, a round trip to a group's journal.
//!
//! The thread a call is awaited on is seldom the call's alone: one of the sidecar's
//! connection workers serves every connection it accepted, and an embedder's
//! single-threaded runtime serves everything. Twenty milliseconds spent there reading one
//! tenant's 20 MB body are twenty milliseconds in which no other tenant's call on that
//! thread moves. Short work stays where it is: handing it to another thread and back costs
//! two wake-ups across threads, more than it saves below a few tens of microseconds
//! (`docs/benchmarks/added-latency.md`, "Where the processes run").

use bytes::Bytes;
use tokio::task::JoinError;

/// Bodies longer than this are read on the blocking pool: 64 KiB, the prefix a plugin is
/// shown. Reading that much takes tens of microseconds; a 20 MB body, about 13 ms
/// (`host/benches/large_request.rs`).
pub const READ_INLINE_BYTES: usize = 64 << 10;

/// Runs `f` on the runtime's blocking pool when `offload` is set and a runtime is running,
/// else here.
///
/// Why not always the pool: with a budget's call to a journal in a local file, handing it
/// over cost more than it saved on the machine of `docs/benchmarks/` (a budgeted call through
/// the sidecar took 77–159 µs longer at the median, and 50–110 µs more CPU, one at a time
/// and at 500 requests a second). A round trip to PostgreSQL, though, holds a thread for
/// milliseconds.
///
/// # Errors
/// The runtime was stopping, and `f` never ran. A panic in `f` is resumed here.
pub async fn blocking<T: Send + 'static>(
    offload: bool,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, JoinError> {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) if offload => rt
            .spawn_blocking(f)
            .await
            .map_err(|e| match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(stopped) => stopped,
            }),
        _ => Ok(f()),
    }
}

/// As [`blocking`], for work no one waits on (a budget's correction at a stream's end): sent
/// to the blocking pool and not awaited when `offload` is set, done here otherwise.
pub fn detached(offload: bool, f: impl FnOnce() + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) if offload => drop(rt.spawn_blocking(f)),
        _ => f(),
    }
}

/// `read(body)`: here for a body of at most [`READ_INLINE_BYTES`], on the blocking pool for
/// a longer one, at most [`long_reads`] at once (here after all if the runtime is stopping).
pub async fn read<T, F>(body: &Bytes, read: F) -> T
where
    T: Send + 'static,
    F: Fn(&[u8]) -> T + Clone + Send + 'static,
{
    if body.len() <= READ_INLINE_BYTES {
        return read(body);
    }
    // Boxed: a caller's future (each call's, while it waits in the queue) keeps room for
    // the pool's hand-off only when a long body needs it.
    Box::pin(on_pool(body, read)).await
}

/// Long bodies read at once: one fewer than the cores the process may use (at least one).
/// However many long bodies arrive together — one tenant's flood of 20 MB uploads — reading
/// them never takes every core: the calls of every other tenant keep one.
fn long_reads() -> &'static tokio::sync::Semaphore {
    static READS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    READS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        tokio::sync::Semaphore::new(cores.saturating_sub(1).max(1))
    })
}

/// [`read`] on the blocking pool, once a place among the [`long_reads`] is free (they are
/// given in turn).
async fn on_pool<T, F>(body: &Bytes, read: F) -> T
where
    T: Send + 'static,
    F: Fn(&[u8]) -> T + Clone + Send + 'static,
{
    let _place = long_reads().acquire().await;
    let (whole, reader) = (body.clone(), read.clone());
    match blocking(true, move || reader(&whole)).await {
        Ok(t) => t,
        Err(_) => read(body),
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    use std::thread::{self, ThreadId};

    use super::*;

    fn reader(_: &[u8]) -> ThreadId {
        thread::current().id()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_long_body_is_read_on_another_thread_and_a_short_one_here() {
        let here = thread::current().id();
        let short = Bytes::from(vec![b'x'; READ_INLINE_BYTES]);
        let long = Bytes::from(vec![b'x'; READ_INLINE_BYTES + 1]);
        assert_eq!(read(&short, reader).await, here);
        assert_ne!(read(&long, reader).await, here);
    }

    /// Polls `f` once, outside any runtime: it must be ready.
    fn ready<T>(f: impl Future<Output = T>) -> T {
        let mut cx = Context::from_waker(Waker::noop());
        match pin!(f).poll(&mut cx) {
            Poll::Ready(t) => t,
            Poll::Pending => panic!("waited outside a runtime"),
        }
    }

    #[test]
    fn without_a_runtime_the_work_is_done_here() {
        let here = thread::current().id();
        let long = Bytes::from(vec![b'x'; READ_INLINE_BYTES + 1]);
        assert_eq!(ready(read(&long, reader)), here);
        let on = ready(blocking(true, || thread::current().id()));
        assert_eq!(on.unwrap(), here);
    }

    #[tokio::test(flavor = "current_thread")]
    #[should_panic(expected = "the reader's own panic")]
    async fn a_panic_on_the_pool_is_resumed_here() {
        let _ = blocking(true, || panic!("the reader's own panic")).await;
    }
}

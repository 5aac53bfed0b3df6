//! `wasi:io/streams` and `wasi:io/poll` for plugins, never blocking on a tokio runtime.
//!
//! Why not wasmtime-wasi's synchronous bindings: their blocking functions
//! (`blocking-write-and-flush`, `blocking-flush`, `block`, `poll`, and dropping a stream)
//! run the stream's future with `Handle::block_on` on the calling thread's tokio runtime. A
//! plugin call is a synchronous wasmtime call made from the executor's async tasks, on a
//! thread that already drives that runtime, and `block_on` there panics ("Cannot start a
//! runtime from within a runtime"): a plugin that printed a line, panicked (the panic
//! message goes to stderr) or ran out of memory (so does the allocator's message) took the
//! host's task down with it.
//!
//! A plugin has nothing to wait for: its only streams are its stdout and stderr, kept in
//! memory ([`super::stdio`]) and always ready, and a closed stdin. So each of these
//! functions polls its future once, with no waker: ready, it answers; not ready (a plugin
//! waiting on a clock's pollable, say), the call traps — it would block the host, and a
//! plugin call may not. The trap ends the call as any other failure of the plugin does.
//!
//! These definitions replace wasmtime-wasi's two interfaces in the plugins' linker
//! ([`add_to_linker`]); the rest of WASI is wasmtime-wasi's. A plugin's test binary
//! (`sluice plugin run-test`), run outside tokio with the process's real stdout and stderr,
//! keeps wasmtime-wasi's.

use std::future::Future;
use std::pin::pin;

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::p2::bindings::io::{poll as async_poll, streams as async_streams};
use wasmtime_wasi::p2::bindings::sync::io::{poll, streams};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable, StreamError, StreamResult};
use wasmtime_wasi::runtime::{poll_noop, with_ambient_tokio_runtime};

/// Defines `wasi:io/streams` and `wasi:io/poll` in `linker`, replacing wasmtime-wasi's
/// definitions when it has them.
///
/// # Errors
/// When the linker refuses the definitions.
pub(crate) fn add_to_linker<T: WasiView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let defined = streams::add_to_linker::<T, HasNonBlocking>(linker, table)
        .and_then(|()| poll::add_to_linker::<T, HasNonBlocking>(linker, table));
    linker.allow_shadowing(false);
    defined
}

fn table<T: WasiView>(state: &mut T) -> NonBlocking<'_> {
    NonBlocking(state.ctx().table)
}

/// The resource table, seen through the non-blocking bindings.
struct NonBlocking<'a>(&'a mut ResourceTable);

struct HasNonBlocking;

impl HasData for HasNonBlocking {
    type Data<'a> = NonBlocking<'a>;
}

/// The trap that ends a call whose plugin would have waited: in which function it would.
#[derive(Debug, thiserror::Error)]
#[error("blocked in `wasi:io` `{0}`: a plugin call cannot wait")]
pub(crate) struct Blocked(&'static str);

/// `f`'s output if it is ready at once; a [`Blocked`] trap naming `what` if it would have
/// to wait.
fn at_once<F: Future>(what: &'static str, f: F) -> wasmtime::Result<F::Output> {
    let mut f = pin!(f);
    // A clock's pollable makes a tokio timer, which needs a runtime to exist (not to run).
    with_ambient_tokio_runtime(|| poll_noop(f.as_mut()))
        .ok_or_else(|| wasmtime::Error::new(Blocked(what)))
}

/// As [`at_once`], for the stream functions that answer a [`StreamResult`].
fn stream_at_once<T>(
    what: &'static str,
    f: impl Future<Output = StreamResult<T>>,
) -> StreamResult<T> {
    at_once(what, f).map_err(StreamError::Trap)?
}

impl streams::Host for NonBlocking<'_> {
    fn convert_stream_error(&mut self, err: StreamError) -> wasmtime::Result<streams::StreamError> {
        Ok(
            match async_streams::Host::convert_stream_error(self.0, err)? {
                async_streams::StreamError::LastOperationFailed(e) => {
                    streams::StreamError::LastOperationFailed(e)
                }
                async_streams::StreamError::Closed => streams::StreamError::Closed,
            },
        )
    }
}

impl streams::HostOutputStream for NonBlocking<'_> {
    fn drop(&mut self, stream: Resource<DynOutputStream>) -> wasmtime::Result<()> {
        at_once(
            "drop",
            async_streams::HostOutputStream::drop(self.0, stream),
        )?
    }

    fn check_write(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<u64> {
        async_streams::HostOutputStream::check_write(self.0, stream)
    }

    fn write(&mut self, stream: Resource<DynOutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        async_streams::HostOutputStream::write(self.0, stream, bytes)
    }

    fn blocking_write_and_flush(
        &mut self,
        stream: Resource<DynOutputStream>,
        bytes: Vec<u8>,
    ) -> StreamResult<()> {
        stream_at_once(
            "blocking-write-and-flush",
            async_streams::HostOutputStream::blocking_write_and_flush(self.0, stream, bytes),
        )
    }

    fn blocking_write_zeroes_and_flush(
        &mut self,
        stream: Resource<DynOutputStream>,
        len: u64,
    ) -> StreamResult<()> {
        stream_at_once(
            "blocking-write-zeroes-and-flush",
            async_streams::HostOutputStream::blocking_write_zeroes_and_flush(self.0, stream, len),
        )
    }

    fn subscribe(
        &mut self,
        stream: Resource<DynOutputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        async_streams::HostOutputStream::subscribe(self.0, stream)
    }

    fn write_zeroes(&mut self, stream: Resource<DynOutputStream>, len: u64) -> StreamResult<()> {
        async_streams::HostOutputStream::write_zeroes(self.0, stream, len)
    }

    fn flush(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<()> {
        async_streams::HostOutputStream::flush(self.0, stream)
    }

    fn blocking_flush(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<()> {
        stream_at_once(
            "blocking-flush",
            async_streams::HostOutputStream::blocking_flush(self.0, stream),
        )
    }

    fn splice(
        &mut self,
        dst: Resource<DynOutputStream>,
        src: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        async_streams::HostOutputStream::splice(self.0, dst, src, len)
    }

    fn blocking_splice(
        &mut self,
        dst: Resource<DynOutputStream>,
        src: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        stream_at_once(
            "blocking-splice",
            async_streams::HostOutputStream::blocking_splice(self.0, dst, src, len),
        )
    }
}

impl streams::HostInputStream for NonBlocking<'_> {
    fn drop(&mut self, stream: Resource<DynInputStream>) -> wasmtime::Result<()> {
        at_once("drop", async_streams::HostInputStream::drop(self.0, stream))?
    }

    fn read(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<Vec<u8>> {
        async_streams::HostInputStream::read(self.0, stream, len)
    }

    fn blocking_read(
        &mut self,
        stream: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<Vec<u8>> {
        stream_at_once(
            "blocking-read",
            async_streams::HostInputStream::blocking_read(self.0, stream, len),
        )
    }

    fn skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        async_streams::HostInputStream::skip(self.0, stream, len)
    }

    fn blocking_skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        stream_at_once(
            "blocking-skip",
            async_streams::HostInputStream::blocking_skip(self.0, stream, len),
        )
    }

    fn subscribe(
        &mut self,
        stream: Resource<DynInputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        async_streams::HostInputStream::subscribe(self.0, stream)
    }
}

impl poll::Host for NonBlocking<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        at_once("poll", async_poll::Host::poll(self.0, pollables))?
    }
}

impl poll::HostPollable for NonBlocking<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        at_once("ready", async_poll::HostPollable::ready(self.0, pollable))?
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        at_once("block", async_poll::HostPollable::block(self.0, pollable))?
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        async_poll::HostPollable::drop(self.0, pollable)
    }
}

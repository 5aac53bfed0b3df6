//! A client of its own for each single-threaded runtime that sends.
//!
//! A pooled connection is driven by a task on the runtime that opened it. Shared between
//! runtimes, a connection opened on one would be used from another, and each exchange on it
//! would wake the first runtime's thread and then the sender's: two wake-ups between
//! threads per call, costly beside a call's own work. A single-threaded runtime (the
//! sidecar runs one per core) therefore sends on a client of its own, whose connections run
//! where they are used; and a runtime that ends takes its connections with it, instead of
//! leaving dead ones in a pool other runtimes draw from.
//!
//! A multi-threaded runtime, or a send outside any runtime, uses the transport's shared
//! client.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::runtime::{Handle, RuntimeFlavor};

use super::client::{HttpClient, Recipe};

/// Clients a runtime owns are kept per thread, at most this many (the oldest goes first):
/// a thread runs one runtime at a time, and a transport seldom has more than one.
const KEPT_PER_THREAD: usize = 8;

/// Transports are told apart by a number, never reused.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static CLIENTS: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// One runtime's client of one transport.
struct Entry {
    transport: u64,
    runtime: tokio::runtime::Id,
    client: HttpClient,
}

/// How a transport builds the client of each single-threaded runtime that sends with it.
#[derive(Debug)]
pub(super) struct LocalClients {
    id: u64,
    recipe: Recipe,
}

impl LocalClients {
    pub(super) fn new(recipe: Recipe) -> Self {
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            recipe,
        }
    }

    /// The client of the single-threaded runtime this runs on, built at its first send;
    /// `None` on a multi-threaded runtime or outside one, for the shared client.
    pub(super) fn current(&self) -> Option<HttpClient> {
        let handle = Handle::try_current().ok()?;
        if handle.runtime_flavor() != RuntimeFlavor::CurrentThread {
            return None;
        }
        let runtime = handle.id();
        CLIENTS.with_borrow_mut(|clients| {
            if let Some(e) = clients
                .iter()
                .find(|e| e.transport == self.id && e.runtime == runtime)
            {
                return Some(e.client.clone());
            }
            let client = self.recipe.build();
            if clients.len() >= KEPT_PER_THREAD {
                clients.remove(0);
            }
            clients.push(Entry {
                transport: self.id,
                runtime,
                client: client.clone(),
            });
            Some(client)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;

    use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
    use tokio::sync::oneshot;

    use super::super::{Timeouts, Transport};
    use crate::contract::{Request, RequestClass, WireOutcome};

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// `work` run on a single-threaded runtime of its own thread, which keeps running (and
    /// driving what it opened) until the returned sender is dropped.
    fn on_own_thread<T: Send + 'static>(
        work: impl Future<Output = T> + Send + 'static,
    ) -> (T, oneshot::Sender<()>) {
        let (done, out) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::spawn(move || {
            current_thread().block_on(async move {
                let _ = done.send(work.await);
                let _ = stopped.await;
            });
        });
        (out.recv().unwrap(), stop)
    }

    async fn send(transport: &Transport, fake_url: &str) {
        let req = Request::new("GET", fake_url, RequestClass::Read, String::new(), "", 0);
        let WireOutcome::Response(r) = transport.send(&req, &[]).await else {
            panic!("the fake provider did not answer");
        };
        assert_eq!(r.status, 200);
    }

    #[test]
    fn each_single_threaded_runtime_sends_on_connections_of_its_own() {
        let (fake, _fake_stop) = on_own_thread(async {
            FakeProvider::start(FakeConfig::new(Style::OpenAi))
                .await
                .unwrap()
        });
        let url = fake.url("/v1/models");
        let connection = || fake.attempts().last().unwrap().connection;
        let transport = Transport::new(Timeouts::default()).unwrap();

        // Runtime A sends, and keeps running: its connection stays open, driven by it.
        let (_, a_stop) = on_own_thread({
            let (transport, url) = (transport.clone(), url.clone());
            async move { send(&transport, &url).await }
        });
        let a = connection();
        // Runtime B, with A's connection idle in reach, sends on one of its own, and
        // reuses it.
        let rt = current_thread();
        rt.block_on(send(&transport, &url));
        let b = connection();
        rt.block_on(send(&transport, &url));
        assert_ne!(a, b, "runtime B sent on runtime A's connection");
        assert_eq!(
            connection(),
            b,
            "runtime B did not reuse its own connection"
        );
        drop(a_stop);
    }
}

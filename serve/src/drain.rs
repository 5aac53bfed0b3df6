//! Work that must not be cut short by a shutdown: each journaled write runs in a task of its
//! own, which a shutdown waits for until none is left or its deadline passes. What runs then
//! is cut, as a process that exits cuts it: the journal holds every such write, and the
//! next start carries it on from its state (never resending blindly).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::{AbortHandle, JoinHandle};

/// The work in flight.
#[derive(Debug, Default)]
pub struct Drain {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    count: AtomicUsize,
    idle: Notify,
    next: AtomicU64,
    tasks: Mutex<HashMap<u64, AbortHandle>>,
    /// Where the work runs, once the sidecar has started: its main runtime, whose threads
    /// the journal's waits may block (else the runtime of whoever spawns it).
    runtime: OnceLock<Handle>,
}

impl Inner {
    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<u64, AbortHandle>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Held while one piece of work runs.
#[derive(Debug)]
struct Guard(Arc<Inner>, u64);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.tasks().remove(&self.1);
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Drain {
    /// Runs the work spawned from now on on `runtime`.
    pub fn run_on(&self, runtime: Handle) {
        let _ = self.inner.runtime.set(runtime);
    }

    /// Runs `work` in a task of its own, counted until it ends.
    pub fn spawn<F>(&self, work: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let id = self.inner.next.fetch_add(1, Ordering::Relaxed);
        self.inner.count.fetch_add(1, Ordering::AcqRel);
        let guard = Guard(self.inner.clone(), id);
        // The task's guard removes its entry under this lock: holding it while the entry is
        // made keeps a task that ends at once from leaving its entry behind.
        let mut tasks = self.inner.tasks();
        let task = async move {
            let out = work.await;
            drop(guard);
            out
        };
        let handle = match self.inner.runtime.get() {
            Some(runtime) => runtime.spawn(task),
            None => tokio::spawn(task),
        };
        tasks.insert(id, handle.abort_handle());
        handle
    }

    /// Work in flight now.
    pub fn in_flight(&self) -> usize {
        self.inner.count.load(Ordering::Acquire)
    }

    /// Waits until no work is in flight, or `deadline` passes; the work left then.
    pub async fn wait(&self, deadline: Duration) -> usize {
        let idle = async {
            loop {
                let notified = self.inner.idle.notified();
                if self.in_flight() == 0 {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(deadline, idle).await;
        self.in_flight()
    }

    /// Cuts the work still in flight, as the process's exit would.
    pub fn abort_all(&self) {
        for task in self.inner.tasks().values() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn waiting_ends_when_the_work_ends_or_at_the_deadline() {
        let drain = Drain::default();
        let quick = drain.spawn(tokio::time::sleep(Duration::from_millis(10)));
        assert_eq!(drain.wait(Duration::from_secs(5)).await, 0);
        quick.await.unwrap();
        let slow = drain.spawn(tokio::time::sleep(Duration::from_secs(60)));
        assert_eq!(drain.wait(Duration::from_secs(1)).await, 1);
        drain.abort_all();
        assert!(slow.await.unwrap_err().is_cancelled());
        assert_eq!(drain.in_flight(), 0, "an aborted task's guard is dropped");
    }

    #[test]
    fn work_runs_on_the_runtime_it_was_given_whoever_spawns_it() {
        let main = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("main-runtime")
            .build()
            .unwrap();
        let drain = Drain::default();
        drain.run_on(main.handle().clone());
        let worker = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let ran_on = worker
            .block_on(drain.spawn(async { std::thread::current().name().map(str::to_owned) }))
            .unwrap();
        assert_eq!(ran_on.as_deref(), Some("main-runtime"));
    }
}

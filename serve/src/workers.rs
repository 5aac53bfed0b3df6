//! Connection workers: one thread per core, each running a single-threaded runtime that
//! serves the agent connections handed to it, whole. A request's server side and the
//! upstream exchange it makes run on one thread, so a request wakes no other thread on its
//! way through; a multi-threaded runtime would wake a second worker for every task it
//! schedules, and on small machines those wake-ups cost more than the request's own work.
//! Each keeps a timer within a second (`sluice::near_timer`), so that the timers a request
//! arms (a connection's header-read timer, the attempt's deadlines) cost no system call.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::error::ServeError;

/// The workers; dropping this stops them (the tasks still on them are dropped).
#[derive(Debug)]
pub(crate) struct Workers {
    workers: Vec<Worker>,
    next: AtomicUsize,
}

#[derive(Debug)]
struct Worker {
    handle: Handle,
    /// Dropped to stop the worker's thread.
    _stop: oneshot::Sender<()>,
}

impl Workers {
    /// `count` workers (at least one), their threads named `sluice-conn-N`.
    ///
    /// # Errors
    /// [`ServeError::Workers`] when a runtime or a thread cannot be made.
    pub(crate) fn start(count: usize) -> Result<Self, ServeError> {
        let workers = (0..count.max(1))
            .map(|n| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(ServeError::Workers)?;
                let handle = rt.handle().clone();
                let (stop, stopped) = oneshot::channel::<()>();
                std::thread::Builder::new()
                    .name(format!("sluice-conn-{n}"))
                    .spawn(move || {
                        // The worker's request timers arm without a system call.
                        rt.block_on(sluice::near_timer::keep_a_timer_near(stopped));
                    })
                    .map_err(ServeError::Workers)?;
                Ok(Worker {
                    handle,
                    _stop: stop,
                })
            })
            .collect::<Result<Vec<_>, ServeError>>()?;
        Ok(Self {
            workers,
            next: AtomicUsize::new(0),
        })
    }

    /// Runs `task` on the next worker, in turn.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let n = self.next.fetch_add(1, Ordering::Relaxed) % self.workers.len();
        drop(self.workers[n].handle.spawn(task));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_go_to_each_worker_in_turn_and_end_with_them() {
        let workers = Workers::start(2).unwrap();
        let names: Vec<String> = (0..4)
            .map(|_| {
                let (tx, rx) = std::sync::mpsc::channel();
                workers.spawn(async move {
                    let name = std::thread::current().name().map(str::to_owned);
                    let _ = tx.send(name.unwrap_or_default());
                });
                rx.recv().unwrap()
            })
            .collect();
        assert_eq!(
            names,
            [
                "sluice-conn-0",
                "sluice-conn-1",
                "sluice-conn-0",
                "sluice-conn-1"
            ]
        );
        // A task still running when the workers stop is dropped with them.
        let (held, released) = oneshot::channel::<()>();
        workers.spawn(async move {
            let _held = held;
            std::future::pending::<()>().await;
        });
        drop(workers);
        assert!(
            released.blocking_recv().is_err(),
            "the task outlived its worker"
        );
    }

    #[test]
    fn zero_workers_is_one() {
        assert_eq!(Workers::start(0).unwrap().workers.len(), 1);
    }
}

//! Work that must not be cut short by a shutdown: each journaled write holds a guard while
//! it runs, and a shutdown waits until none is left, or its deadline passes (the journal
//! then holds what is unfinished, and the next start carries it on).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Counts the work in flight.
#[derive(Debug, Default)]
pub struct Drain {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    count: AtomicUsize,
    idle: Notify,
}

/// Held while one piece of work runs.
#[derive(Debug)]
pub struct Guard(Arc<Inner>);

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Drain {
    /// A piece of work begins; it ends when the guard is dropped.
    pub fn enter(&self) -> Guard {
        self.inner.count.fetch_add(1, Ordering::AcqRel);
        Guard(self.inner.clone())
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn waiting_ends_when_the_last_guard_drops_or_at_the_deadline() {
        let drain = Drain::default();
        let g = drain.enter();
        assert_eq!(drain.wait(Duration::from_secs(1)).await, 1);
        let later = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            drop(g);
        });
        assert_eq!(drain.wait(Duration::from_secs(5)).await, 0);
        later.await.unwrap();
    }
}

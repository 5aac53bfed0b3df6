//! A timer kept within a second on a runtime, so that arming a request's timers costs no
//! system call and wakes no thread.
//!
//! tokio's time driver remembers the earliest moment it planned to wake for when it last
//! parked. A timer armed earlier than that moment makes it unpark the driver (a write to
//! the runtime's eventfd), from whichever thread arms it, awake or not: on a
//! multi-threaded runtime that wakes the thread parked on the driver, which finds nothing
//! to do and parks again. With no timer pending, every timer armed is earlier than nothing
//! planned. A request arms several, all of them seconds long or more: the header-read
//! timer its connection arms afresh when it waits for the next request (hyper drops it
//! once a head is read), the wait for the request's body, its attempt's deadline, the wait
//! for the provider's head, the idle limit of the provider's body. A driver that parked
//! with none of them pending, or with its next wake planned later than one of them, paid
//! an unpark for arming it: at the sidecar, a write for every other request.
//!
//! [`keep_a_timer_near`] keeps one timer pending, never more than [`NEAR`] away: the planned
//! wake is then always within a second, and no timer of a second or longer unparks. It
//! costs the runtime one wake-up a second.

use std::future::Future;
use std::time::Duration;

/// How far the kept timer is at most.
pub const NEAR: Duration = Duration::from_secs(1);

/// Keeps a timer within [`NEAR`] on the runtime that polls it until `until` ends; spawn it
/// on each runtime that serves requests (the connection workers, an embedder's runtime
/// while its host lives, the PostgreSQL journal's client).
pub async fn keep_a_timer_near<F: Future>(until: F) {
    let hold = async {
        loop {
            tokio::time::sleep(NEAR).await;
        }
    };
    tokio::select! {
        _ = until => {}
        () = hold => {}
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::Poll;

    use super::*;

    /// The write system calls this thread has made (Linux).
    fn writes_of_this_thread() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
        io.lines()
            .find_map(|l| l.strip_prefix("syscw:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap()
    }

    /// Arms `n` timers of 30 s on the runtime that polls it, each dropped at once, after
    /// the runtime has parked once; the write system calls that cost.
    async fn writes_for_far_timers(n: usize) -> u64 {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let before = writes_of_this_thread();
        for _ in 0..n {
            let mut far = pin!(tokio::time::sleep(Duration::from_secs(30)));
            std::future::poll_fn(|cx| {
                assert!(far.as_mut().poll(cx).is_pending());
                Poll::Ready(())
            })
            .await;
        }
        writes_of_this_thread() - before
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn far_timers_armed_beside_a_near_one_make_no_system_call() {
        // Alone on the runtime, each far timer unparks the driver: a write to its eventfd.
        let alone = runtime().block_on(writes_for_far_timers(100));
        assert!(alone >= 100, "{alone} writes for 100 timers alone");
        let beside = runtime().block_on(async {
            let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
            tokio::spawn(keep_a_timer_near(stopped));
            writes_for_far_timers(100).await
        });
        assert_eq!(beside, 0, "writes for 100 timers beside a near one");
    }

    #[tokio::test(start_paused = true)]
    async fn it_ends_with_what_it_was_given_and_not_before() {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let held = tokio::spawn(keep_a_timer_near(stopped));
        tokio::time::sleep(NEAR * 5).await;
        assert!(!held.is_finished(), "the timer stopped on its own");
        drop(stop);
        tokio::time::timeout(NEAR, held)
            .await
            .expect("it outlived its end")
            .unwrap();
    }
}

//! Leases and takeover in a group's journal (PostgreSQL only: a file has one host).

use std::time::Duration;

use super::*;
use crate::journal::tests::{Place, intent, places};
use crate::journal::{Recorded, State};

/// The tests' lease: renewed every quarter of it, and lost when a renewal is more than
/// half of it late. A second, so that a machine saturated by the rest of the test run
/// (two cores, every test binary at once) cannot make a live host lose its lease.
const TTL: Duration = Duration::from_secs(1);

/// Each group database of the tests: none when PostgreSQL is not given.
fn groups() -> Vec<String> {
    places()
        .into_iter()
        .filter_map(|p| match p {
            Place::File(_) => None,
            Place::Shared(url) => Some(url),
        })
        .collect()
}

/// Sets `host`'s lease to end `ms` from now on the database's clock, as a pause or a slow
/// database would leave it.
fn lease_ends_in(j: &Journal, host: &str, ms: i64) {
    j.write(|c| {
        c.exec(
            &format!("UPDATE hosts SET lease_until_ms = {NOW_MS} + ?2 WHERE host = ?1"),
            values![host, ms],
        )?;
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_live_host_keeps_its_lease_and_its_actions() {
    for url in groups() {
        let a = Journal::connect_with(&url, "host-a", TTL).unwrap();
        let b = Journal::connect_with(&url, "host-b", TTL).unwrap();
        a.record(&intent("pay-1", "x")).unwrap();
        // Three lease lengths: renewed all along by the journal's own runtime.
        std::thread::sleep(TTL * 3);
        assert_eq!(b.group().take_over(TTL).unwrap(), vec![]);
        assert_eq!(a.unfinished().unwrap().len(), 1);
    }
}

#[test]
fn a_host_gone_for_a_lease_and_a_grace_has_its_unfinished_actions_taken_once() {
    for url in groups() {
        let a = Journal::connect_with(&url, "host-a", TTL).unwrap();
        let Recorded::New(sent) = a.record(&intent("pay-1", "x")).unwrap() else {
            panic!("new")
        };
        a.advance(sent.id, State::Sent, None).unwrap();
        let Recorded::New(done) = a.record(&intent("pay-2", "y")).unwrap() else {
            panic!("new")
        };
        a.advance(done.id, State::Sent, None).unwrap();
        a.advance(done.id, State::Succeeded, None).unwrap();
        drop(a); // kill -9: no renewal from now on
        let b = Journal::connect_with(&url, "host-b", TTL).unwrap();
        let c = Journal::connect_with(&url, "host-c", TTL).unwrap();
        assert_eq!(b.group().take_over(TTL).unwrap(), vec![], "not gone yet");
        // Long enough for host-a's lease and grace to run out, and for the survivors to renew
        // theirs the times a host must before it may take over.
        std::thread::sleep(TTL * 3);
        // Two hosts look at once: one takes, the other finds nothing left.
        let (by_b, by_c) = std::thread::scope(|s| {
            let tb = s.spawn(|| b.group().take_over(TTL).unwrap());
            let tc = s.spawn(|| c.group().take_over(TTL).unwrap());
            (tb.join().unwrap(), tc.join().unwrap())
        });
        let taken: Vec<&TakenOver> = by_b.iter().chain(&by_c).collect();
        assert_eq!(
            taken,
            [&TakenOver {
                from: "host-a".into(),
                actions: 1
            }],
            "the unfinished action, once; the finished one stays host-a's"
        );
        let taker = if by_b.is_empty() { &c } else { &b };
        let resumed = taker.unfinished().unwrap();
        assert_eq!(resumed.iter().map(|a| a.id).collect::<Vec<_>>(), [sent.id]);
        assert_eq!(resumed[0].idempotency_key, sent.idempotency_key, "its key");
    }
}

/// Host `owner` as a process whose lease is never renewed by itself (a paused one): it
/// holds a lease of ten lengths, until the test changes it.
fn paused_host(url: &str, owner: &str) -> Journal {
    let j = Journal::connect_to(url, owner, true, TTL).unwrap();
    take_lease(&j, ms(TTL) * 10);
    j
}

/// `j`'s process takes (or takes again) its host's lease for `for_ms`.
fn take_lease(j: &Journal, for_ms: i64) {
    let n = j
        .write(|c| Ok(c.exec(&take_lease_sql(), values![&j.owner, for_ms, &j.process])?))
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn a_paused_host_that_comes_back_sends_nothing_it_lost() {
    for url in groups() {
        let a = paused_host(&url, "host-a");
        let b = Journal::connect_with(&url, "host-b", TTL).unwrap();
        let Recorded::New(act) = a.record(&intent("pay-1", "x")).unwrap() else {
            panic!("new")
        };
        // Nearly out of lease (a slow database, a long pause): no attempt may start.
        lease_ends_in(&a, "host-a", 20);
        let e = a.advance(act.id, State::Sent, None).unwrap_err();
        assert!(matches!(e, JournalError::LeaseLost { .. }), "{e}");
        // Paused past the lease and the grace: the group takes its action, once the taker
        // has held its own lease for two lengths.
        lease_ends_in(&a, "host-a", -ms(TTL) - 10);
        assert_eq!(
            b.group().take_over(TTL).unwrap(),
            vec![],
            "the taker is new"
        );
        std::thread::sleep(TTL * 3);
        assert_eq!(b.group().take_over(TTL).unwrap().len(), 1);
        // The host comes back with a new lease and finds it is not its own any more.
        take_lease(&a, ms(TTL) * 10);
        let e = a.advance(act.id, State::Sent, None).unwrap_err();
        assert!(matches!(e, JournalError::OwnedElsewhere { .. }), "{e}");
        assert!(a.unfinished().unwrap().is_empty());
        b.advance(act.id, State::Sent, None).unwrap();
    }
}

/// A second live process with a host's id (a restart while the first drains) waits for the
/// first's lease, and is refused while the first holds it: both would own its actions.
#[test]
fn a_second_live_process_with_a_host_s_id_is_refused() {
    // Longer than the other tests' lease: the first must renew its lease on time for as long
    // as the second waits, and on a loaded machine a renewal can be late by more than 300 ms.
    let ttl = Duration::from_secs(1);
    for url in groups() {
        let first = Journal::connect_with(&url, "host-a", ttl).unwrap();
        let e = Journal::connect_with(&url, "host-a", ttl).unwrap_err();
        assert!(matches!(e, JournalError::HostIdInUse { .. }), "{e}");
        drop(first); // it stops: its lease runs out, and the id is free again
        let again = Journal::connect_with(&url, "host-a", ttl).unwrap();
        assert_eq!(again.owner(), "host-a");
    }
}

//! The shares of the places, on generated interleavings of takes and drops by several
//! tenants, and a retry storm told step by step.

use std::time::Duration;

use proptest::prelude::*;

use super::{DelayPlaces, Delayed};
use crate::clock::tokio_now;

const TENANTS: [&str; 4] = ["a", "b", "c", "d"];

/// What the tenants do to one scope's places.
#[derive(Debug, Clone)]
enum Op {
    /// Tenant `.0` asks for a place.
    Take(usize),
    /// Tenant `.0` gives back its place `.1` (modulo what it holds), taken back or not.
    Drop(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..TENANTS.len()).prop_map(Op::Take),
        (0..TENANTS.len(), any::<usize>()).prop_map(|(t, k)| Op::Drop(t, k)),
    ]
}

/// The places each tenant holds, by its own guards that were not taken back.
fn holdings(guards: &mut [Vec<Delayed<'_>>]) -> Vec<usize> {
    guards
        .iter_mut()
        .map(|held| {
            held.iter_mut()
                .map(|d| usize::from(!d.was_taken_back()))
                .sum()
        })
        .collect()
}

proptest! {
    /// For any interleaving: the places never number more than `max`; a free place is always
    /// given; a tenant holding fewer than its share (`max / tenants holding places`, itself
    /// counted) is never refused; a place is only taken back from a tenant over its share,
    /// one at a time, and only when none is free.
    #[test]
    fn a_tenant_under_its_share_is_never_refused_and_the_places_never_overflow(
        max in 0u32..12,
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let places = DelayPlaces::new(max);
        let max = max as usize;
        let mut guards: Vec<Vec<Delayed<'_>>> = TENANTS.iter().map(|_| Vec::new()).collect();
        for op in ops {
            let before = holdings(&mut guards);
            match op {
                Op::Take(t) => {
                    let total: usize = before.iter().sum();
                    let holders =
                        before.iter().filter(|h| **h > 0).count() + usize::from(before[t] == 0);
                    let share = max / holders;
                    let got = places.take("p", "c", TENANTS[t]);
                    let granted = got.is_some();
                    guards[t].extend(got);
                    let after = holdings(&mut guards);
                    if total < max {
                        prop_assert!(granted, "a free place was refused: {before:?}");
                    }
                    if before[t] < share {
                        prop_assert!(granted, "tenant {t} under its share {share} refused: {before:?}");
                    }
                    if !granted {
                        prop_assert!(total == max && before[t] >= share);
                        prop_assert_eq!(&after, &before);
                        continue;
                    }
                    prop_assert_eq!(after[t], before[t] + 1);
                    let lost: Vec<usize> = (0..TENANTS.len())
                        .filter(|&u| u != t && after[u] != before[u])
                        .collect();
                    if total < max {
                        prop_assert!(lost.is_empty(), "taken back with a place free: {before:?}");
                    } else {
                        prop_assert_eq!(lost.len(), 1, "{:?} -> {:?}", before, after);
                        let u = lost[0];
                        prop_assert_eq!(after[u] + 1, before[u]);
                        prop_assert!(
                            before[u] > share,
                            "taken back from tenant {} holding {} of share {}", u, before[u], share
                        );
                    }
                }
                Op::Drop(t, k) => {
                    if !guards[t].is_empty() {
                        let k = k % guards[t].len();
                        drop(guards[t].remove(k));
                    }
                }
            }
            // The places' own count agrees with the guards, and stays within its bound.
            let now = holdings(&mut guards);
            let total: usize = now.iter().sum();
            prop_assert!(total <= max);
            prop_assert_eq!(places.taken("p", "c") as usize, total);
            for (t, h) in now.iter().enumerate() {
                prop_assert_eq!(places.held("p", "c", TENANTS[t]), *h);
            }
        }
        drop(guards);
        prop_assert_eq!(places.taken("p", "c"), 0);
        prop_assert!(places.lock().scopes.is_empty(), "an empty scope was kept");
    }
}

#[test]
fn a_storm_uses_every_place_alone_and_gives_back_its_excess_to_a_calm_tenant() {
    let places = DelayPlaces::new(4);
    let mut storm: Vec<_> = (0..4)
        .map(|_| places.take("p", "c", "storm").expect("a free place"))
        .collect();
    assert!(
        places.take("p", "c", "storm").is_none(),
        "its share is every place, and it holds them"
    );
    // The calm tenant's share is two: it takes them back, the newest first.
    let calm: Vec<_> = (0..2)
        .map(|_| places.take("p", "c", "calm").expect("its share"))
        .collect();
    let taken_back: Vec<bool> = storm.iter_mut().map(Delayed::was_taken_back).collect();
    assert_eq!(taken_back, [false, false, true, true]);
    assert!(places.take("p", "c", "calm").is_none(), "past its share");
    assert!(places.take("p", "c", "storm").is_none(), "at its share");
    // Another place of another scope is another count.
    assert!(places.take("p", "other", "storm").is_some());
    // The storm's retries that were taken back end; one of the calm's ends: the storm may
    // use the free place, beyond its share.
    storm.truncate(2);
    drop(calm);
    assert_eq!(places.taken("p", "c"), 2);
    assert!(places.take("p", "c", "storm").is_some());
}

#[test]
fn a_scope_without_places_gives_none() {
    let places = DelayPlaces::new(0);
    assert!(places.take("p", "c", "a").is_none());
    assert!(places.lock().scopes.is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_retry_whose_place_is_taken_back_stops_waiting_at_once() {
    let places = DelayPlaces::new(2);
    let _older = places.take("p", "c", "storm").unwrap();
    let mut storm = places.take("p", "c", "storm").unwrap();
    let started = tokio_now();
    let (waited, calm) = tokio::join!(storm.wait(Duration::from_secs(10)), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        places.take("p", "c", "calm")
    });
    assert!(!waited, "its place was taken back");
    assert!(calm.is_some());
    assert_eq!(tokio_now() - started, Duration::from_secs(1));
    let mut calm = calm.unwrap();
    assert!(
        calm.wait(Duration::from_secs(2)).await,
        "waited its delay out"
    );
}

use super::*;

const MS: Nanos = 1_000_000;
const SLICE: Nanos = 250 * MS;

fn need(cost: u64) -> Need {
    Need {
        key: "q".into(),
        dimension: Dimension::Requests,
        cost,
        interval: MS,
        tolerance: 10_000 * MS,
        learned: false,
        most: 1_000,
    }
}

fn used(n: u64) -> Usage {
    Usage {
        requests: n,
        ..Usage::default()
    }
}

/// Asks for `needs` at `now`, and has the store grant `grant` of each, starting at once.
fn granted(slices: &mut Slices, now: Nanos, needs: &[Need], grant: u64) -> Vec<SliceAsk> {
    let Take::Ask(asks) = slices.take(now, SLICE, needs) else {
        panic!("an ask")
    };
    let grants = vec![(grant, 5_000_000); asks.len()];
    slices.answered((now, now), SLICE, &asks, Some((&grants, 0)), false);
    asks
}

#[test]
fn a_quota_is_sliced_only_when_its_burst_holds_a_slice_for_every_host() {
    // 10 s of burst at 1 ms a unit, 250 ms kept back, four hosts: 2 437 units each, which
    // must hold eight calls.
    assert_eq!(Need::most(MS, 10_000 * MS, SLICE, 4, 1), Some(2_437));
    assert_eq!(Need::most(MS, 10_000 * MS, SLICE, 4, 304), Some(2_437));
    assert_eq!(Need::most(MS, 10_000 * MS, SLICE, 4, 305), None);
    // 300 requests a minute, a burst of 31: a few units a host, not sliced.
    assert_eq!(Need::most(222 * MS, 31 * 222 * MS, SLICE, 4, 1), None);
    // A burst shorter than a slice's life cannot be sliced at all.
    assert_eq!(Need::most(MS, 200 * MS, SLICE, 1, 1), None);
}

#[test]
fn calls_take_from_a_slice_until_it_is_spent_or_ends() {
    let mut s = Slices::default();
    let n = [need(3)];
    granted(&mut s, 0, &n, 10);
    for _ in 0..3 {
        assert!(s.take_ready(MS, &n).is_some());
    }
    // 1 left: the next call asks, and gives the 1 back.
    assert!(s.take_ready(MS, &n).is_none());
    let Take::Ask(asks) = s.take(MS, SLICE, &n) else {
        panic!("an ask")
    };
    assert_eq!(asks[0].change, -1);
    // Another call of the host waits for that ask rather than asking too.
    assert!(matches!(s.take(MS, SLICE, &n), Take::Busy));
    s.answered((MS, MS), SLICE, &asks, Some((&[(10, 9)], 0)), false);
    assert!(s.take_ready(MS, &n).is_some());
    // Past the slice's life nothing is taken, however much is left.
    assert!(s.take_ready(SLICE + MS, &n).is_none());
}

#[test]
fn a_slice_queued_by_the_store_starts_no_sooner_than_its_answer_and_ends_by_its_ask() {
    let mut s = Slices::default();
    let n = [need(1)];
    let Take::Ask(asks) = s.take(0, SLICE, &n) else {
        panic!("an ask")
    };
    // Asked at 0, answered at 2 ms, to start 5 ms after the store's answer.
    s.answered((0, 2 * MS), SLICE, &asks, Some((&[(4, 9)], 5 * MS)), false);
    assert!(matches!(s.take(6 * MS, SLICE, &n), Take::Later(w) if w == MS));
    assert!(s.take_ready(7 * MS, &n).is_some());
    assert!(s.take_ready(5 * MS + SLICE - 1, &n).is_some());
    assert!(s.take_ready(5 * MS + SLICE, &n).is_none());
}

#[test]
fn corrections_go_into_the_live_slice_or_back_to_the_store_from_their_own_slice() {
    let mut s = Slices::default();
    let n = [need(10)];
    granted(&mut s, 0, &n, 30);
    let a = s.take_ready(0, &n).expect("taken");
    let b = s.take_ready(0, &n).expect("taken");
    let c = s.take_ready(0, &n).expect("taken");
    // Used 4 of 10 while the slice lives: 6 back into it.
    s.settle(MS, &a, Some(&used(4)));
    assert!(s.take_ready(MS, &[need(6)]).is_some());
    // Used 15: 5 owed, paid with the next ask.
    s.settle(MS, &b, Some(&used(15)));
    // Ends after the slice: 7 given back to the store from that slice's end.
    s.settle(SLICE + MS, &c, Some(&used(3)));
    let due = s.due(SLICE + MS);
    assert_eq!(
        due.iter().map(|a| (a.change, a.ends)).collect::<Vec<_>>(),
        [(5, 5_000_000), (-7, 5_000_000)]
    );
    assert!(due.iter().all(|a| a.need == 0));
    // Nothing is settled twice.
    assert!(s.due(SLICE + 2 * MS).is_empty());
}

#[test]
fn what_a_failed_settling_owed_is_owed_again_and_what_it_gave_back_stays_charged() {
    let mut s = Slices::default();
    let n = [need(10)];
    granted(&mut s, 0, &n, 10);
    let t = s.take_ready(0, &n).expect("taken");
    s.settle(MS, &t, Some(&used(12)));
    let due = s.due(SLICE);
    assert_eq!(due[0].change, 2);
    s.unsettled(&due);
    assert_eq!(s.due(SLICE)[0].change, 2);
}

#[test]
fn a_hold_ends_the_slice_and_what_it_left_is_given_back() {
    let mut s = Slices::default();
    let n = [need(1)];
    granted(&mut s, 0, &n, 10);
    s.end(MS, |k| k == "q");
    assert!(s.take_ready(MS, &n).is_none());
    assert_eq!(s.due(MS)[0].change, -10);
}

#[test]
fn slices_follow_the_host_s_demand_and_are_taken_only_where_it_is_steady() {
    let mut s = Slices::default();
    let n = [need(1)];
    // Unknown demand: not worth a slice; every call that comes counts into it.
    assert!(!s.worth(SLICE, &n));
    for i in 0..=400 {
        s.note(i * MS, SLICE, &n);
    }
    // 1 000 a second, over a slice's life 250.
    assert!(s.worth(SLICE, &n));
    let Take::Ask(asks) = s.take(401 * MS, SLICE, &n) else {
        panic!("an ask")
    };
    assert!((240..=260).contains(&asks[0].want), "{asks:?}");
    // At the pace's edge it waits for all of that, up to an eighth of its share of the
    // burst (1 000 here): the same for every busy host.
    assert_eq!(asks[0].need, 125);
    // Never more than its part of the burst.
    let mut small = need(1);
    small.most = 100;
    s.answered((401 * MS, 401 * MS), SLICE, &asks, None, false);
    let Take::Ask(asks) = s.take(402 * MS, SLICE, &[small]) else {
        panic!("an ask")
    };
    assert_eq!(asks[0].want, 100);
}

#[test]
fn at_the_pace_s_edge_a_slice_spent_before_its_end_is_followed_by_a_larger_one() {
    let mut s = Slices::default();
    let n = [need(1)];
    // A host seen sending 40 a second (10 over a slice's life, once a span of a slice's life
    // is seen)...
    for i in 0..=11 {
        s.note(i * 25 * MS, SLICE, &n);
    }
    // ...is queued by the store for a slice of 10 (it starts 5 ms after the answer)...
    let Take::Ask(asks) = s.take(301 * MS, SLICE, &n) else {
        panic!("an ask")
    };
    s.answered(
        (301 * MS, 301 * MS),
        SLICE,
        &asks,
        Some((&[(10, 9)], 5 * MS)),
        false,
    );
    // ...and spends it in 5 ms: its calls had waited for their turn, and now come at once.
    for _ in 0..10 {
        assert!(s.take_ready(310 * MS, &n).is_some());
    }
    let Take::Ask(asks) = s.take(311 * MS, SLICE, &n) else {
        panic!("an ask")
    };
    assert_eq!((asks[0].want, asks[0].need), (20, 20), "{asks:?}");
    // Doubling each time it is spent early, up to its turn at the pace's edge: an eighth
    // of the most it may hold (1 000 here).
    s.answered(
        (311 * MS, 311 * MS),
        SLICE,
        &asks,
        Some((&[(640, 9)], MS)),
        false,
    );
    for _ in 0..640 {
        assert!(s.take_ready(313 * MS, &n).is_some());
    }
    let Take::Ask(asks) = s.take(314 * MS, SLICE, &n) else {
        panic!("an ask")
    };
    assert_eq!((asks[0].want, asks[0].need), (125, 125), "{asks:?}");
}

#[test]
fn away_from_the_pace_s_edge_a_slice_is_sized_by_the_rate_seen() {
    let mut s = Slices::default();
    let n = [need(1)];
    for i in 0..=11 {
        s.note(i * 25 * MS, SLICE, &n);
    }
    // 12 over 275 ms: 11 over a slice's life. Granted at once (not queued), and spent at once:
    // a burst, not a wait. A doubled slice would lie mostly unused once the burst is over.
    granted(&mut s, 301 * MS, &n, 10);
    for _ in 0..10 {
        assert!(s.take_ready(302 * MS, &n).is_some());
    }
    let Take::Ask(asks) = s.take(303 * MS, SLICE, &n) else {
        panic!("an ask")
    };
    assert_eq!(asks[0].want, 11, "{asks:?}");
    // Nor after a slice that ran to its end with units left, queued or not.
    s.answered(
        (303 * MS, 303 * MS),
        SLICE,
        &asks,
        Some((&[(1_000, 9)], MS)),
        false,
    );
    let Take::Ask(asks) = s.take(304 * MS + SLICE, SLICE, &n) else {
        panic!("an ask")
    };
    assert_eq!(asks[0].want, 11, "{asks:?}");
}

#[test]
fn a_store_gone_away_ends_every_slice() {
    let mut s = Slices::default();
    let n = [need(1)];
    granted(&mut s, 0, &n, 10);
    s.end(MS, |_| true);
    assert!(s.take_ready(MS, &n).is_none());
    assert_eq!(s.due(MS)[0].change, -10);
}

//! The breakers' state machine, and the room owners share.

use super::*;

/// The owner of the paths of the tests that have one.
const O: &str = "p c";

#[test]
fn templates_drop_ids_queries_and_hosts() {
    assert_eq!(
        route_template("GET", "https://api.github.com/repos/o/r/issues/1234?page=2"),
        "GET /repos/o/r/issues/{}"
    );
    assert_eq!(
        route_template(
            "POST",
            "https://api.stripe.com/v1/charges/ch_3MmlLrLkdIwHu7ix0snN0B15/capture"
        ),
        "POST /v1/charges/{}/capture"
    );
}

#[test]
fn states_show_counted_open_and_half_open_paths_without_changing_them() {
    let b = Breakers::new(2, Duration::from_secs(30));
    #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
    let t = Instant::now();
    assert!(b.states(t).is_empty());
    b.failure(O, "p c GET /b", "500 boom", t);
    b.failure(O, "p c GET /a", "401 invalid_api_key", t);
    b.failure(O, "p c GET /a", "401 invalid_api_key", t);
    let states = b.states(t + Duration::from_secs(10));
    assert_eq!(states.len(), 2);
    assert_eq!(
        (
            states[0].route.as_str(),
            states[0].state,
            states[0].retry_in_ms
        ),
        ("p c GET /a", "open", 20_000)
    );
    assert_eq!((states[1].state, states[1].failures), ("closed", 1));
    let later = t + Duration::from_secs(31);
    assert_eq!(b.states(later)[0].state, "half-open");
    assert!(
        b.check(O, "p c GET /a", t).is_err(),
        "looking closed nothing"
    );
}

#[test]
fn identical_failures_in_a_row_open_the_path() {
    let b = Breakers::new(3, Duration::from_secs(30));
    #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
    let t = Instant::now();
    b.failure(O, "GET /x", "401 invalid_api_key", t);
    b.failure(O, "GET /x", "404 not_found", t);
    b.failure(O, "GET /x", "401 invalid_api_key", t);
    b.failure(O, "GET /x", "401 invalid_api_key", t);
    assert!(
        b.check(O, "GET /x", t).is_ok(),
        "a different error reset the count"
    );
    b.failure(O, "GET /x", "401 invalid_api_key", t);
    let open = b.check(O, "GET /x", t).unwrap_err();
    assert_eq!(open.failures, 3);
    assert!(b.check(O, "GET /y", t).is_ok(), "other paths go on");
    assert!(
        b.check(O, "GET /x", t + Duration::from_secs(31)).is_ok(),
        "it closes after a while"
    );
    b.success(O, "GET /x");
    assert!(b.check(O, "GET /x", t).is_ok());
}

#[test]
fn a_half_open_path_lets_one_probe_through_and_its_answer_decides() {
    let open_for = Duration::from_secs(30);
    let b = Breakers::new(2, open_for);
    #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
    let t = Instant::now();
    b.failure(O, "p c POST /x", "500 boom", t);
    b.failure(O, "p c POST /x", "500 boom", t);
    let later = t + open_for + Duration::from_secs(1);
    assert!(b.check(O, "p c POST /x", later).is_ok(), "the probe");
    let waiting = b.check(O, "p c POST /x", later).unwrap_err();
    assert_eq!(waiting.retry_in, open_for, "the others wait for the probe");
    assert_eq!(b.states(later)[0].state, "probing");
    // The probe fails, with another error: open again.
    b.failure(O, "p c POST /x", "502 bad_gateway", later);
    assert!(
        b.check(O, "p c POST /x", later + Duration::from_secs(1))
            .is_err()
    );
    // A probe that never answers: after another while, the next call probes.
    let again = later + open_for * 2;
    assert!(b.check(O, "p c POST /x", again).is_ok());
    assert!(b.check(O, "p c POST /x", again).is_err());
    assert!(b.check(O, "p c POST /x", again + open_for).is_ok());
    // A success closes it for everyone.
    b.success(O, "p c POST /x");
    assert!(b.check(O, "p c POST /x", again + open_for).is_ok());
    assert!(b.check(O, "p c POST /x", again + open_for).is_ok());
}

#[test]
fn a_probe_that_ends_with_no_word_on_the_path_leaves_it_to_the_next_call() {
    let open_for = Duration::from_secs(30);
    let b = Breakers::new(1, open_for);
    #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
    let t = Instant::now();
    b.failure(O, "p c POST /x", "500 boom", t);
    let later = t + open_for + Duration::from_secs(1);
    assert!(b.check(O, "p c POST /x", later).is_ok(), "the probe");
    assert!(
        b.check(O, "p c POST /x", later).is_err(),
        "held by the probe"
    );
    // Answered 429, or refused before its send: no word on the path.
    b.release(O, "p c POST /x");
    assert!(
        b.check(O, "p c POST /x", later).is_ok(),
        "the next call probes"
    );
    assert_eq!(b.states(later)[0].state, "probing");
    // Releasing a path that is closed, or not known, changes nothing.
    b.release(O, "p c GET /y");
    b.success(O, "p c POST /x");
    b.release(O, "p c POST /x");
    assert!(b.check(O, "p c POST /x", later).is_ok());
}

#[test]
fn a_flood_of_new_paths_keeps_its_owner_s_open_ones_and_stays_bounded() {
    let b = Breakers::of(Kind::Tenant, 3, Duration::from_secs(30));
    #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
    let t = Instant::now();
    for _ in 0..3 {
        b.failure(O, "open", "400 bad", t);
    }
    for i in 0..(MAX_PATHS + 10) {
        b.failure(O, &format!("path {i}"), "400 bad", t);
    }
    assert!(b.table().len() <= MAX_PATHS);
    assert!(b.check(O, "open", t).is_err(), "the open path was kept");
}

#[test]
fn a_table_full_of_one_owner_s_open_paths_still_opens_its_new_one() {
    let b = Breakers::of(Kind::Tenant, 1, Duration::from_secs(30));
    #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
    let t = Instant::now();
    for i in 0..MAX_PATHS {
        let at = t + Duration::from_millis(u64::try_from(i).unwrap());
        b.failure(O, &format!("flood {i}"), "400 bad", at);
    }
    let later = t + Duration::from_secs(1);
    b.failure(O, "steady", "500 down", later);
    assert!(b.check(O, "steady", later).is_err(), "the new path opened");
    assert_eq!(b.table().len(), MAX_PATHS);
    assert!(
        b.check(O, "flood 0", later).is_ok(),
        "the path due first made room"
    );
    assert!(b.check(O, "flood 1", later).is_err());
}

/// A flood of `n` failing paths of `owner`, each at its own instant from `t` on, generated
/// as a tenant inventing routes and model names would name them; every one opens (a
/// threshold of 1).
fn flood(b: &Breakers, owner: &str, n: usize, t: Instant, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for i in 0..n {
        let at = t + Duration::from_micros(u64::try_from(i).unwrap());
        let route = format!(
            "{owner} POST /v1/{} gpt-{}",
            rng.alphanumeric(),
            rng.u64(..)
        );
        b.failure(owner, &route, "404 model_not_found", at);
    }
}

#[test]
fn a_flood_on_one_credential_leaves_another_credential_s_open_breaker_open() {
    let b = Breakers::new(1, Duration::from_secs(30));
    #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
    let t = Instant::now();
    // Y's path opened first: the flood's paths are all due to half-open after it.
    b.failure("p y", "p y POST /v1/chat gpt-4o", "500 boom", t);
    flood(&b, "p x", MAX_PATHS * 2, t + Duration::from_millis(1), 7);
    let later = t + Duration::from_secs(1);
    assert!(
        b.check("p y", "p y POST /v1/chat gpt-4o", later).is_err(),
        "Y's open breaker stayed open"
    );
    assert_eq!(b.table().len(), MAX_PATHS, "the table stayed bounded");
    b.failure("p x", "p x GET /last", "500 boom", later);
    assert!(
        b.check("p x", "p x GET /last", later).is_err(),
        "X's newest path was counted, at the cost of its own oldest"
    );
}

#[test]
fn a_tenant_s_flood_never_forgets_another_tenant_s_open_breaker() {
    let b = Breakers::of(Kind::Tenant, 1, Duration::from_secs(30));
    #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
    let t = Instant::now();
    b.failure("calm", "p c POST /v1/chat tenant=calm", "400 bad", t);
    flood(
        &b,
        "noisy",
        MAX_PATHS + 500,
        t + Duration::from_millis(1),
        11,
    );
    let later = t + Duration::from_secs(1);
    assert!(
        b.check("calm", "p c POST /v1/chat tenant=calm", later)
            .is_err()
    );
    assert!(b.table().len() <= MAX_PATHS);
}

#[test]
fn an_owner_under_its_share_takes_room_from_the_owner_holding_the_most() {
    let b = Breakers::new(1, Duration::from_secs(30));
    #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
    let t = Instant::now();
    flood(&b, "p x", MAX_PATHS, t, 3);
    // Y holds nothing, and its share is half the table: X, over its own, gives one up.
    for i in 0..10 {
        b.failure("p y", &format!("p y GET /{i}"), "500 boom", t);
    }
    assert_eq!(b.table().len(), MAX_PATHS);
    assert_eq!(b.table().of("p y").count(), 10);
    assert_eq!(b.table().of("p x").count(), MAX_PATHS - 10);
}

#[test]
fn a_flood_of_owners_keeps_the_owners_within_their_share() {
    let b = Breakers::of(Kind::Tenant, 1, Duration::from_secs(30));
    #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
    let t = Instant::now();
    b.failure("calm", "calm's path", "400 bad", t);
    // Invented tenants, one failing path each: past the table's size, the newcomers are
    // the ones not counted.
    for i in 0..(MAX_PATHS + 100) {
        let tenant = format!("invented-{i}");
        b.failure(&tenant, &format!("{tenant}'s path"), "400 bad", t);
    }
    assert_eq!(b.table().len(), MAX_PATHS);
    assert!(b.check("calm", "calm's path", t).is_err());
    assert!(b.check("invented-0", "invented-0's path", t).is_err());
    let last = format!("invented-{}", MAX_PATHS + 99);
    assert!(b.check(&last, &format!("{last}'s path"), t).is_ok());
}

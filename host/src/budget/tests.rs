//! Budgets on a manual clock against a journal in a temporary directory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::*;
use crate::clock::ManualClock;

const DAY: Duration = Duration::from_secs(86_400);

fn utc(s: &str) -> i64 {
    s.parse::<jiff::Timestamp>().unwrap().as_millisecond()
}

fn spend_month() -> Budget {
    Budget::new(Measure::SpendMicros, Window::Month)
}

/// `free` tenants may spend 10 000 micro-units a month, in Berlin; gpt-4o is priced.
fn config() -> BudgetConfig {
    let mut c = BudgetConfig {
        calendar: Calendar::named("Europe/Berlin").unwrap(),
        ..BudgetConfig::default()
    };
    c.tiers.insert(
        "free".into(),
        BudgetLimits::none().with(spend_month(), 10_000),
    );
    let price = Price {
        input_micros_per_million: 2_500_000,
        output_micros_per_million: 10_000_000,
        cached_input_micros_per_million: None,
        cache_write_micros_per_million: None,
    };
    c.prices
        .entry("openai".into())
        .or_default()
        .insert("gpt-4o".into(), price);
    c
}

struct Host {
    budgets: Arc<Budgets>,
    clock: Arc<ManualClock>,
}

fn host(journal: &std::path::Path, clock: Arc<ManualClock>) -> Host {
    let tenants = TenantsConfig {
        default_tier: "free".into(),
        ..TenantsConfig::default()
    };
    let journal = Arc::new(Journal::open_or_create(journal).unwrap());
    Host {
        budgets: Arc::new(Budgets::new(config(), tenants, journal, clock.clone())),
        clock,
    }
}

/// A call of 1 000 input and 500 output tokens of gpt-4o: 7 500 micro-units.
fn call(tenant: &str) -> Charge<'_> {
    Charge {
        tenant,
        provider: "openai",
        model: Some("gpt-4o"),
        estimate: Usage::tokens(1_000, 500),
    }
}

fn month_spend(h: &Host, tenant: &str) -> u64 {
    let standing = h.budgets.standing(tenant).unwrap();
    standing
        .iter()
        .find(|s| s.budget == spend_month())
        .unwrap()
        .used
}

#[test]
fn a_spent_budget_refuses_at_once_naming_the_tenant_the_budget_and_the_reset() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::starting_at(utc("2026-03-10T12:00:00Z")));
    let h = host(&dir.path().join("j.sqlite"), clock);
    h.budgets.admit(&call("acme")).unwrap().unwrap();
    h.budgets.admit(&call("acme")).unwrap().unwrap(); // 15 000: over, let through
    let Err(BudgetError::Spent(spent)) = h.budgets.admit(&call("acme")) else {
        panic!("a spent budget must refuse");
    };
    assert_eq!(spent.tenant, "acme");
    assert_eq!(spent.budget, spend_month());
    assert_eq!((spent.used, spent.limit), (15_000, 10_000));
    // April begins at midnight in Berlin: 22:00 UTC on 31 March (summer time).
    assert_eq!(spent.resets_at_ms, utc("2026-03-31T22:00:00Z"));
    assert_eq!(
        spent.to_string(),
        "tenant `acme` has spent its budget spend_micros_per_month (15000 of 10000): it \
         resets at 2026-04-01 00:00 +02:00"
    );
    // Another tenant of the same tier has its own budget.
    assert!(h.budgets.admit(&call("bob")).unwrap().is_some());
}

#[test]
fn an_estimate_is_corrected_to_the_actual_usage_and_a_call_that_sent_nothing_gives_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::starting_at(utc("2026-03-10T12:00:00Z")));
    let h = host(&dir.path().join("j.sqlite"), clock);
    let r = h.budgets.admit(&call("acme")).unwrap().unwrap();
    assert_eq!(month_spend(&h, "acme"), 7_500, "the estimate is charged");
    // The answer used 1 000 input tokens (400 of them cached, at the input price here) and
    // 100 output: 2 500 + 1 000.
    r.settle(
        Some(Usage::tokens(1_000, 100)),
        CacheUse {
            read_of_input: 400,
            ..CacheUse::default()
        },
    );
    assert_eq!(month_spend(&h, "acme"), 3_500);
    let r = h.budgets.admit(&call("acme")).unwrap().unwrap();
    r.release();
    assert_eq!(
        month_spend(&h, "acme"),
        3_500,
        "nothing sent, nothing spent"
    );
    let tokens = h.budgets.standing("acme").unwrap();
    let tokens = tokens
        .iter()
        .find(|s| s.budget == Budget::new(Measure::Tokens, Window::Day))
        .unwrap();
    assert_eq!(
        (tokens.used, tokens.limit, tokens.left()),
        (1_100, None, None)
    );
}

#[test]
fn a_month_ends_at_midnight_in_the_configured_zone_and_the_next_starts_empty() {
    let dir = tempfile::tempdir().unwrap();
    // 31 March, 23:00 Berlin time (21:00 UTC): still March.
    let clock = Arc::new(ManualClock::starting_at(utc("2026-03-31T21:00:00Z")));
    let h = host(&dir.path().join("j.sqlite"), clock);
    h.budgets.admit(&call("acme")).unwrap().unwrap();
    h.budgets.admit(&call("acme")).unwrap().unwrap();
    assert!(h.budgets.admit(&call("acme")).is_err(), "March is spent");
    // 30 minutes later: 23:30 in Berlin, still March.
    h.clock.advance(Duration::from_secs(30 * 60));
    assert!(
        h.budgets.admit(&call("acme")).is_err(),
        "still March in Berlin"
    );
    // 21:00 UTC + 1 h: 00:00 on 1 April in Berlin, 22:00 on 31 March in UTC.
    h.clock.advance(Duration::from_secs(30 * 60));
    let r = h.budgets.admit(&call("acme")).unwrap();
    assert!(r.is_some(), "April's budget is whole");
    assert_eq!(month_spend(&h, "acme"), 7_500);
    let standing = h.budgets.standing("acme").unwrap();
    let month = standing.iter().find(|s| s.budget == spend_month()).unwrap();
    assert_eq!(month.period.label, "2026-04");
}

#[test]
fn a_restart_in_the_middle_of_a_month_keeps_the_spend() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite");
    let clock = Arc::new(ManualClock::starting_at(utc("2026-03-10T12:00:00Z")));
    let first = host(&path, clock.clone());
    first
        .budgets
        .admit(&call("acme"))
        .unwrap()
        .unwrap()
        .settle(Some(Usage::tokens(1_000, 500)), CacheUse::default());
    drop(first);
    clock.advance(DAY * 5);
    let second = host(&path, clock);
    assert_eq!(month_spend(&second, "acme"), 7_500, "the spend survives");
    second.budgets.admit(&call("acme")).unwrap().unwrap();
    assert!(second.budgets.admit(&call("acme")).is_err());
}

#[test]
fn a_charge_in_one_period_is_corrected_in_that_period_after_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::starting_at(utc("2026-03-31T21:59:00Z")));
    let h = host(&dir.path().join("j.sqlite"), clock);
    let r = h.budgets.admit(&call("acme")).unwrap().unwrap();
    h.clock.advance(Duration::from_secs(120)); // April in Berlin
    r.settle(Some(Usage::tokens(1_000, 0)), CacheUse::default());
    assert_eq!(month_spend(&h, "acme"), 0, "April is untouched");
    let rows = h.budgets.journal.budget_use().all().unwrap();
    let march = rows
        .iter()
        .find(|r| r.window == Window::Month && r.period == "2026-03")
        .unwrap();
    assert_eq!(march.amounts.spend_micros, 2_500);
}

#[test]
fn nothing_is_counted_when_nothing_is_budgeted_or_priced() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(Journal::open_or_create(&dir.path().join("j.sqlite")).unwrap());
    let clock = Arc::new(ManualClock::starting_at(0));
    let b = Arc::new(Budgets::new(
        BudgetConfig::default(),
        TenantsConfig::default(),
        journal.clone(),
        clock,
    ));
    assert!(b.admit(&call("acme")).unwrap().is_none());
    assert!(journal.budget_use().all().unwrap().is_empty());
}

/// Budgets of tier `free` (the default tier) with `unpriced` as chosen, on a journal of
/// their own in `dir`.
fn budgets_with(dir: &std::path::Path, unpriced: Unpriced) -> Arc<Budgets> {
    let clock = Arc::new(ManualClock::starting_at(utc("2026-03-10T12:00:00Z")));
    let tenants = TenantsConfig {
        default_tier: "free".into(),
        ..TenantsConfig::default()
    };
    let journal = Arc::new(Journal::open_or_create(&dir.join("j.sqlite")).unwrap());
    let config = BudgetConfig {
        unpriced,
        ..config()
    };
    Arc::new(Budgets::new(config, tenants, journal, clock))
}

#[test]
fn a_model_without_a_price_is_refused_warned_of_or_free_as_configured() {
    let dir = tempfile::tempdir().unwrap();
    let unpriced = Charge {
        model: Some("o3-pro"),
        ..call("acme")
    };
    let dated = Charge {
        model: Some("gpt-4o-2024-08-06"),
        ..call("acme")
    };
    for (choice, refused) in [
        (Unpriced::Refuse, true),
        (Unpriced::Warn, false),
        (Unpriced::Free, false),
    ] {
        let b = budgets_with(dir.path(), choice);
        match b.admit(&unpriced) {
            Err(BudgetError::Unpriced(u)) => {
                assert!(refused, "{choice:?}");
                assert_eq!(u.model.as_deref(), Some("o3-pro"));
                assert!(
                    u.to_string()
                        .contains("[providers.openai.prices.\"o3-pro\"]"),
                    "{u}"
                );
            }
            Ok(r) => {
                assert!(!refused, "{choice:?}");
                assert_eq!(
                    r.map_or(0, |r| r.charged().spend_micros),
                    0,
                    "costs nothing"
                );
            }
            Err(e) => panic!("{choice:?}: {e}"),
        }
        // A dated model is priced as its family, whatever the choice.
        let r = b.admit(&dated).unwrap().unwrap();
        assert_eq!(r.charged().spend_micros, 7_500, "{choice:?}");
        r.release();
    }
}

/// Budgets fail closed: a call that uses tokens and names no model (one that hid it from
/// the host) cannot be priced, and is refused under every `budgets.unpriced` choice; one
/// that uses no tokens (a list, a download) has nothing to price and goes on.
#[test]
fn a_call_with_tokens_and_no_model_is_refused_whatever_unpriced_says() {
    let dir = tempfile::tempdir().unwrap();
    let hidden = Charge {
        model: None,
        ..call("acme")
    };
    let free_of_tokens = Charge {
        model: None,
        estimate: Usage::tokens(0, 0),
        ..call("acme")
    };
    for choice in [Unpriced::Refuse, Unpriced::Warn, Unpriced::Free] {
        let b = budgets_with(dir.path(), choice);
        match b.admit(&hidden) {
            Err(BudgetError::Unpriced(u)) => {
                assert_eq!(u.model, None);
                assert!(u.to_string().contains("no model was found"), "{u}");
            }
            other => panic!("{choice:?}: {other:?}"),
        }
        if let Some(r) = b
            .admit(&free_of_tokens)
            .unwrap_or_else(|e| panic!("{choice:?}: {e}"))
        {
            r.release();
        }
    }
}

/// Two hosts sharing one journal (a group's database; a file two processes open, else),
/// with `agents` agents between them calling until the tenant's monthly budget of `limit`
/// calls is spent, each call corrected to a smaller usage than its estimate when `correct`:
/// how many calls were let through, after checking that each host shows the group's use,
/// and how many threshold crossings were reported. A charge or a correction the journal
/// failed to record fails the test.
fn spend_together(
    place: &crate::journal::tests::Place,
    agents: usize,
    limit: u64,
    correct: bool,
) -> (u64, usize) {
    let requests_month = Budget::new(Measure::Requests, Window::Month);
    let clock = Arc::new(ManualClock::starting_at(utc("2026-03-10T12:00:00Z")));
    let mut config = config();
    config.tiers.insert(
        "free".into(),
        BudgetLimits::none().with(requests_month, limit),
    );
    let tenants = TenantsConfig {
        default_tier: "free".into(),
        ..TenantsConfig::default()
    };
    let hosts: Vec<Arc<Budgets>> = ["host-a", "host-b"]
        .iter()
        .map(|h| {
            Arc::new(Budgets::new(
                config.clone(),
                tenants.clone(),
                Arc::new(place.open_as(h)),
                clock.clone(),
            ))
        })
        .collect();
    let actual = correct.then(|| Usage::tokens(800, 100));
    let crossings = Crossings::default();
    let admitted: u64 = std::thread::scope(|scope| {
        let agents: Vec<_> = (0..agents)
            .map(|i| {
                let b = hosts[i % 2].clone();
                let crossings = crossings.clone();
                scope.spawn(move || {
                    let _counted = tracing::subscriber::set_default(crossings);
                    let mut n = 0;
                    loop {
                        match b.admit(&call("acme")) {
                            Ok(Some(r)) => {
                                n += 1;
                                r.settle(actual, CacheUse::default());
                            }
                            Ok(None) => panic!("the tenant has a budget"),
                            Err(BudgetError::Spent(_)) => return n,
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        agents.into_iter().map(|a| a.join().unwrap()).sum()
    });
    for b in &hosts {
        let standing = b.standing("acme").unwrap();
        let used = standing
            .iter()
            .find(|s| s.budget == requests_month)
            .unwrap()
            .used;
        assert_eq!(
            used, admitted,
            "every host shows the group's use ({place:?})"
        );
    }
    (admitted, crossings.0.load(Ordering::SeqCst))
}

/// Counts the events that report a budget's threshold crossed, on every thread it is the
/// default of.
#[derive(Debug, Clone, Default)]
struct Crossings(Arc<AtomicUsize>);

impl tracing::Subscriber for Crossings {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(bool);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "message" && format!("{v:?}") == "budget threshold crossed" {
                    self.0 = true;
                }
            }
        }
        let mut m = Message(false);
        event.record(&mut m);
        if m.0 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Eight agents on two hosts sharing a journal let 40 calls through in all, not 40 a host.
#[test]
fn hosts_sharing_a_journal_spend_a_budget_once() {
    for place in crate::journal::tests::places() {
        assert_eq!(spend_together(&place, 8, 40, false).0, 40, "{place:?}");
    }
}

/// Sixteen agents on two hosts, each call charged and then corrected, all on the same two
/// rows of the tenant: every charge and correction is recorded, the limit lets exactly its
/// calls through, and each of its thresholds (80% and 100%) is reported crossed once in
/// the group, by the call that crossed it. (In a group's journal the rows' locks keep one
/// host's check and charge from passing beside another's: without `FOR UPDATE`, 401
/// passed here.)
#[test]
fn many_agents_charging_one_tenant_at_once_are_all_recorded_and_reported_once() {
    for place in crate::journal::tests::places() {
        let (admitted, crossings) = spend_together(&place, 16, 400, true);
        assert_eq!(admitted, 400, "{place:?}");
        assert_eq!(crossings, 2, "{place:?}");
    }
}

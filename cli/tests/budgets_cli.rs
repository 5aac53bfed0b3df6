//! `sluice budgets` and `sluice config check` on the budgets example: what each tenant has
//! spent this day and month, against its budgets, from a host's journal.

mod support;

use std::path::Path;

use sluice::budget::{Amounts, Calendar, Window};
use sluice::clock::{Clock, SystemClock};
use sluice::journal::Journal;

use support::{sluice, stderr, stdout};

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/budgets.toml")
        .display()
        .to_string()
}

#[test]
fn the_budgets_example_checks_and_config_check_prints_every_budget_and_price() {
    let o = sluice(&["config", "check", &example()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for shown in [
        "budgets: calendar days and months in Europe/Berlin, money in micro-units of USD, \
         reported at 80%, 100%",
        "  tier free: each tenant requests_per_day 500, tokens_per_day 200000, \
         spend_micros_per_month 5000000",
        "  tenant acme: spend_micros_per_month 1000000000",
        "  price openai gpt-4o: per million tokens, input 2500000, output 10000000, cached \
         input 1250000",
        "  price openai gpt-4o-mini: per million tokens, input 150000, output 600000, cached \
         input the input price",
    ] {
        assert!(out.contains(shown), "no `{shown}` in:\n{out}");
    }
}

#[test]
fn budgets_shows_what_each_tenant_spent_and_what_is_left_in_this_days_and_months_periods() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    let journal = Journal::open_or_create(&path).unwrap();
    let berlin = Calendar::named("Europe/Berlin").unwrap();
    let now = SystemClock.wall_ms();
    let periods = Window::ALL.map(|w| berlin.period(w, now));
    // A free tenant that spent its month's 5 USD, and acme, a paid one, 9.10 USD.
    let spent = |spend_micros| Amounts {
        requests: 40,
        tokens: 120_000,
        spend_micros,
    };
    journal
        .budget_use()
        .change("bob", &periods, &spent(5_000_000), &Amounts::default())
        .unwrap();
    journal
        .budget_use()
        .change("acme", &periods, &spent(9_100_000), &Amounts::default())
        .unwrap();
    drop(journal);

    let journal_arg = path.display().to_string();
    let o = sluice(&["budgets", "--journal", &journal_arg, "--config", &example()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let (day, month) = (&periods[0], &periods[1]);
    for shown in [
        "budgets in Europe/Berlin (2 tenants), amounts of money in USD".to_owned(),
        format!(
            "  spend_micros_per_month {}: 9.100000 USD of 1000.000000 USD used (0%), \
             990.900000 USD left; resets {}",
            month.label,
            berlin.local_time(month.resets_ms)
        ),
        format!(
            "  spend_micros_per_day {}: 9.100000 USD of 20.000000 USD used (45%), \
             10.900000 USD left",
            day.label
        ),
        format!(
            "  spend_micros_per_month {}: 5.000000 USD of 5.000000 USD used, spent: calls \
             refused until {}",
            month.label,
            berlin.local_time(month.resets_ms)
        ),
        format!(
            "  requests_per_day {}: 40 of 500 used (8%), 460 left",
            day.label
        ),
    ] {
        assert!(out.contains(&shown), "no `{shown}` in:\n{out}");
    }

    // Without the configuration: the periods as recorded.
    let o = sluice(&["budgets", "--journal", &journal_arg]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("4 periods recorded"), "{out}");
    assert!(
        out.contains(&format!(
            "tenant bob month {}: 40 requests, 120000 tokens, 5000000 micro-units spent",
            month.label
        )),
        "{out}"
    );
}

#[test]
fn budgets_never_creates_a_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    let o = sluice(&["budgets", "--journal", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!path.exists());
}

/// Two hosts of a group count one tenant's spend in the group's PostgreSQL journal:
/// `sluice budgets --journal postgres://…` shows the sum, as it would on either host.
#[test]
fn budgets_of_a_group_show_every_host_s_spend_from_its_database() {
    let Some(url) = sluice_fake_provider::services::postgres_schema() else {
        return;
    };
    let berlin = Calendar::named("Europe/Berlin").unwrap();
    let periods = Window::ALL.map(|w| berlin.period(w, SystemClock.wall_ms()));
    for (host, spend_micros) in [("host-a", 3_000_000), ("host-b", 6_100_000)] {
        let journal = Journal::connect(&url, host).unwrap();
        let spent = Amounts {
            requests: 20,
            tokens: 60_000,
            spend_micros,
        };
        journal
            .budget_use()
            .change("acme", &periods, &spent, &Amounts::default())
            .unwrap();
    }
    let o = sluice(&["budgets", "--journal", &url, "--config", &example()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let shown = format!(
        "  spend_micros_per_month {}: 9.100000 USD of 1000.000000 USD used (0%)",
        periods[1].label
    );
    assert!(out.contains(&shown), "no `{shown}` in:\n{out}");
    assert!(!out.contains("postgres@"), "the URL is not printed:\n{out}");
}

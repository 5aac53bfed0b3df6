//! What the journal costs a write and a budget charge, on a host's own SQLite file and on
//! a group's PostgreSQL, side by side in one run.
//!
//! - `write`: one journaled write's steps, each committed before the next, as the write
//!   path takes them: the intent recorded (`record`), the attempt marked `sent`
//!   (`advance`), the attempt logged, the outcome (`succeeded`).
//! - `budget-charge`: a budgeted call's two journal transactions: the check and charge at
//!   admission (`charge_budget_use`), the correction at its end (`change_budget_use`).
//!
//! The SQLite file is in the system's temporary directory (`synchronous=FULL`, so each
//! commit waits for the disk). PostgreSQL is measured when `SLUICE_BENCH_POSTGRES_URL`
//! names a database (or a schema, by its `search_path`) the bench may fill: for example the
//! cluster `tests/postgres/start.sh` starts, on loopback.
//!
//! Run: `SLUICE_BENCH_POSTGRES_URL=postgres://… cargo bench -p sluice --bench journal`

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use sluice::budget::{Amounts, Calendar, Window};
use sluice::journal::{AttemptRecord, Intent, Journal, State};

static NEXT: AtomicU64 = AtomicU64::new(0);

fn intent(run: u64) -> Intent {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Intent {
        task: format!("bench-{run}"),
        action: format!("charge-{n}"),
        provider: "stripe".into(),
        method: "POST".into(),
        route: "POST /v1/charges".into(),
        class: "idempotent_write".into(),
        body: b"amount=4200&currency=eur&customer=cus_123".to_vec(),
        request: "{}".into(),
        goal: "pay invoice 42".into(),
    }
}

fn one_write(j: &Journal, run: u64) {
    let action = j.record(&intent(run)).unwrap().action().clone();
    j.advance(action.id, State::Sent, None).unwrap();
    j.log_attempt(
        action.id,
        &AttemptRecord {
            attempt: 1,
            at_ms: 0,
            status: Some(200),
            retry_after_ms: None,
            note: "ok".into(),
        },
    )
    .unwrap();
    black_box(
        j.advance(action.id, State::Succeeded, Some("ch_1"))
            .unwrap(),
    );
}

fn one_charge(j: &Journal, periods: &[sluice::budget::Period; 2]) {
    let charge = Amounts {
        requests: 1,
        tokens: 1_500,
        spend_micros: 7_500,
    };
    let before = j
        .budget_use()
        .charge("acme", periods, &charge, |_| Ok::<(), ()>(()))
        .unwrap()
        .unwrap();
    black_box(before);
    let settled = Amounts {
        requests: 0,
        tokens: 300,
        spend_micros: 1_500,
    };
    j.budget_use()
        .change("acme", periods, &Amounts::default(), &settled)
        .unwrap();
}

fn bench(c: &mut Criterion) {
    let run = u64::from(std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let mut journals = vec![(
        "sqlite",
        Journal::open_or_create(&dir.path().join("journal.sqlite")).unwrap(),
    )];
    match std::env::var("SLUICE_BENCH_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => {
            journals.push(("postgres", Journal::connect(&url, "bench").unwrap()));
        }
        _ => eprintln!(
            "PostgreSQL is not measured: set SLUICE_BENCH_POSTGRES_URL to a database the \
             bench may fill"
        ),
    }
    let calendar = Calendar::utc();
    let periods = Window::ALL.map(|w| calendar.period(w, 1_780_000_000_000));
    let mut g = c.benchmark_group("journal");
    for (name, j) in &journals {
        g.bench_function(format!("write/{name}"), |b| b.iter(|| one_write(j, run)));
        g.bench_function(format!("budget-charge/{name}"), |b| {
            b.iter(|| one_charge(j, &periods));
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Interactive requests are served first: their queue wait stays short while background
//! traffic saturates the same scope.

use sluice::admission::{Class, Usage};

use crate::sim::{Arrival, MINUTE, MS, SEC, Sim};

#[test]
fn interactive_p99_wait_stays_bounded_under_background_saturation() {
    let mut sim = Sim::new(
        "[queue]\nmax_queued = 1000000\nmax_queued_per_scope = 1000000\nmax_wait_ms = 86400000\n\
         [providers.p.limits]\nrequests_per_minute = 600\n",
    );
    let route = sim.route("p", "acct", &[]);
    let batch = sim.tenant("batch");
    let chat = sim.tenant("chat");
    let mut arrivals = Vec::new();
    let end = 11 * MINUTE;
    let mut at = 0;
    while at < end {
        // Background: four times the scope's rate. Interactive: a tenth of it, at instants
        // that do not line up with the bucket's pace.
        arrivals.push(Arrival {
            at,
            route,
            tenant: batch,
            class: Class::Background,
            usage: Usage::ONE_REQUEST,
            actual: Usage::ONE_REQUEST,
            latency: 200 * MS,
            deadline: None,
            task: None,
        });
        if (at / (25 * MS)) % 40 == 7 {
            arrivals.push(Arrival {
                at: at + 3 * MS,
                class: Class::Interactive,
                tenant: chat,
                ..arrivals.last().unwrap().clone()
            });
        }
        at += 25 * MS;
    }
    sim.run(arrivals, end);

    let waits = |class| -> Vec<u64> {
        let mut w: Vec<u64> = sim
            .admitted
            .iter()
            .filter(|a| a.class == class && a.submitted >= MINUTE)
            .map(|a| a.at - a.submitted)
            .collect();
        w.sort_unstable();
        w
    };
    let interactive = waits(Class::Interactive);
    let background = waits(Class::Background);
    assert!(
        interactive.len() > 500,
        "{} interactive requests",
        interactive.len()
    );
    let p99 = interactive[interactive.len() * 99 / 100];
    // One request every 111 ms at the paced rate: an interactive request waits at most for
    // the next slot.
    assert!(p99 <= 112 * MS, "interactive p99 wait {} ms", p99 / MS);
    let median = background[background.len() / 2];
    assert!(
        median > 60 * SEC,
        "background median wait {} ms: not saturated",
        median / MS
    );
}

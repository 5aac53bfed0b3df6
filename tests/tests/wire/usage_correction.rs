//! Charges that match the provider: against an account that counts output tokens by what
//! each answer produced, sluice — correcting every charge with the usage the answer reports
//! — uses at least 90% of the output tokens per minute, with at most 0.5% of attempts
//! answered 429, over two minutes of virtual time.

use sluice_tests::usage_workload::{Workload, through_sluice};

/// Told the provider refills by window (`refill = "window"`, the safe refill for any
/// provider), sluice never sends more than the limit in a minute, its first included.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn corrected_charges_use_the_account_fully_without_429s() {
    let f = through_sluice(Workload {
        refill: Some("window"),
        ..Workload::default()
    })
    .await;
    println!("{f:?}");
    assert!(
        f.utilization >= 0.90,
        "output tokens per minute used: {f:?}"
    );
    assert!(f.utilization <= 1.0, "never above the limit: {f:?}");
    assert!(f.limited_share() <= 0.005, "429s: {f:?}");
    assert!(f.answered > 50, "{f:?}");
}

/// Near the limit, by default: against a provider whose quota is a token bucket refilled
/// continuously (Anthropic's), with no `refill` configured — the `anthropic` plugin declares
/// `continuous` (`description.refill`, contract 0.4.0) — sluice's steady use (the run's
/// second half, once both buckets' first fill is spent) is at least 97% of its paced rate at
/// every margin up to 0.98, never above the limit, with at most 0.5% of attempts answered
/// 429: use rises with the margin instead of collapsing when the margin leaves a burst
/// smaller than one request's reservation.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn by_default_use_rises_with_the_margin_up_to_the_limit_as_the_plugin_declares_its_refill() {
    for margin in [0.90, 0.95, 0.98] {
        let w = Workload {
            margin,
            ..Workload::default()
        };
        let f = through_sluice(w).await;
        println!("margin {margin}: {f:?}");
        assert!(
            f.steady >= 0.97 * margin,
            "margin {margin}: {:.1}% of the paced rate: {f:?}",
            100.0 * f.steady / margin
        );
        assert!(f.steady <= 1.0, "never above the limit: {f:?}");
        assert!(f.limited_share() <= 0.005, "margin {margin}, 429s: {f:?}");
    }
}

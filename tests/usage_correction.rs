//! Charges that match the provider: against an account that counts output tokens by what
//! each answer produced, sluice — correcting every charge with the usage the answer reports
//! — uses at least 90% of the output tokens per minute, with at most 0.5% of attempts
//! answered 429, over two minutes of virtual time.

use sluice_tests::usage_workload::{Workload, through_sluice};

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn corrected_charges_use_the_account_fully_without_429s() {
    let f = through_sluice(Workload::default()).await;
    println!("{f:?}");
    assert!(
        f.utilization >= 0.90,
        "output tokens per minute used: {f:?}"
    );
    assert!(f.utilization <= 1.0, "never above the limit: {f:?}");
    assert!(f.limited_share() <= 0.005, "429s: {f:?}");
    assert!(f.answered > 50, "{f:?}");
}

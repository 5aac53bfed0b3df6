//! What `config check` says of a provider's credentials' own endpoints and limits, and of
//! its pools.

use sluice::admission::config::ProviderConfig;
use sluice::config::ProviderSetup;
use sluice::printable::printable;

use super::print_limits;

/// Each credential's own endpoint and limits, then each pool: its members, their weights,
/// and how a call goes with them.
pub(super) fn print(
    out: &mut String,
    p: &ProviderConfig,
    setup: Option<&ProviderSetup>,
    margin: f64,
) -> anyhow::Result<()> {
    if let Some(setup) = setup {
        for (label, source) in &setup.credentials {
            if source.base_url.is_none() && source.path.is_none() {
                continue;
            }
            let base = source.base_url.as_deref().map_or_else(
                || "the provider's base URL".to_owned(),
                |b| printable(b).into_owned(),
            );
            let path = source.path.as_deref().map_or_else(
                || "the call's path".to_owned(),
                |t| printable(t).into_owned(),
            );
            outln!(
                out,
                "  credential {} goes to {base}, path {path}",
                printable(label)
            );
        }
    }
    for (label, own) in &p.credentials {
        let who = format!("  credential {}", printable(label));
        if let Some(limits) = &own.limits {
            print_limits(out, &format!("{who}'s own bucket"), limits, margin)?;
        }
        for (scope, _, limits) in own.named() {
            let what = format!("{who}'s scope {}", printable(&scope));
            print_limits(out, &what, limits, margin)?;
        }
    }
    for (name, pool) in &p.pools {
        let members: Vec<String> = pool
            .weighted()
            .map(|(m, w)| match w {
                1 => printable(m).into_owned(),
                w => format!("{} (weight {w})", printable(m)),
            })
            .collect();
        outln!(
            out,
            "  pool {}: {} — a read goes with the member that would admit it soonest, a write \
             keeps one member for its whole life",
            printable(name),
            members.join(", ")
        );
    }
    Ok(())
}

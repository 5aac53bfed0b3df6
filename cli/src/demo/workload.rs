//! The reference workload: who the agents are, and what each asks for. Both clients — sluice
//! and the naive one — run the same agents with the same seeds, so their figures compare.

use std::time::Duration;

/// The tenants that are meant to be equal.
pub const EQUAL_TENANTS: [&str; 3] = ["acme", "globex", "initech"];
/// The tenant that sends far more than its share.
pub const NOISY: &str = "noisy";
/// The chat route of the model provider.
pub const CHAT: &str = "/v1/chat/completions";
/// The write route of the payments provider.
pub const PAYMENTS: &str = "/v1/payment_intents";
/// The model provider's limits, on one account.
pub const RPM: u64 = 600;
/// Tokens per minute on the model provider's account.
pub const TPM: u64 = 90_000;
/// The payments provider's requests per minute.
pub const PAYMENTS_RPM: u64 = 120;

/// One agent.
#[derive(Debug, Clone)]
pub struct Agent {
    /// Its name.
    pub name: String,
    /// Its tenant.
    pub tenant: &'static str,
    /// A person waits on it: short prompts, think time, the interactive class.
    pub interactive: bool,
    /// Its random stream.
    pub seed: u64,
}

/// One thing an agent asks for.
#[derive(Debug, Clone)]
pub enum Op {
    /// A chat completion: a read, however many tokens it costs.
    Chat {
        /// The JSON body.
        body: String,
        /// The tokens the provider charges for it (prompt + `max_tokens`).
        tokens: u64,
    },
    /// A payment: a write that must happen once.
    Pay {
        /// The form body, unique per logical payment.
        body: String,
    },
}

/// The fewest agents the workload runs with.
pub const MIN_AGENTS: usize = EQUAL_TENANTS.len() * 2 + 1;

/// Exactly `n` agents (at least [`MIN_AGENTS`]): each equal tenant the same number, one
/// interactive and at least one in the background; the noisy tenant, all in the background,
/// about three eighths of them and whatever does not divide evenly among the equal tenants.
pub fn agents(n: usize, seed: u64) -> Vec<Agent> {
    let n = n.max(MIN_AGENTS);
    let equal = EQUAL_TENANTS.len();
    let per_tenant = ((n - n * 3 / 8) / equal).max(2);
    let noisy = n - per_tenant * equal;
    let mut out = Vec::with_capacity(n);
    for tenant in EQUAL_TENANTS {
        for i in 0..per_tenant {
            out.push(Agent {
                name: format!("{tenant}-{i}"),
                tenant,
                interactive: i == 0,
                seed: seed.wrapping_mul(1_000_003).wrapping_add(out.len() as u64),
            });
        }
    }
    for i in 0..noisy {
        out.push(Agent {
            name: format!("{NOISY}-{i}"),
            tenant: NOISY,
            interactive: false,
            seed: seed.wrapping_mul(1_000_003).wrapping_add(out.len() as u64),
        });
    }
    out
}

impl Agent {
    /// Its `i`-th op.
    pub fn op(&self, rng: &mut fastrand::Rng, i: usize) -> Op {
        // One op in ten of a background agent is a payment.
        if !self.interactive && rng.u8(0..10) == 0 {
            return Op::Pay {
                body: format!(
                    "amount={}&currency=usd&description={}-{i}",
                    rng.u32(100..100_000),
                    self.name
                ),
            };
        }
        let (prompt_chars, max_tokens) = if self.interactive {
            (rng.usize(200..1_200), rng.u64(64..256))
        } else {
            (rng.usize(400..2_400), rng.u64(128..640))
        };
        let content: String = (0..prompt_chars)
            .map(|j| if j % 6 == 5 { ' ' } else { 'a' })
            .collect();
        let body = serde_json::json!({
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": content}],
            "max_tokens": max_tokens,
        })
        .to_string();
        Op::Chat {
            body,
            tokens: (prompt_chars as u64).div_ceil(4) + max_tokens,
        }
    }

    /// How long it thinks before its next op.
    pub fn think(&self, rng: &mut fastrand::Rng) -> Duration {
        if self.interactive {
            Duration::from_millis(rng.u64(1_000..4_000))
        } else {
            Duration::ZERO
        }
    }
}

/// When the payments provider drops a connection after storing a write (seconds into the
/// run): about one every ten seconds.
pub fn drops(duration: Duration, seed: u64) -> Vec<Duration> {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0xd509);
    let mut at = Duration::from_millis(rng.u64(2_000..8_000));
    let mut out = Vec::new();
    while at < duration {
        out.push(at);
        at += Duration::from_millis(rng.u64(6_000..14_000));
    }
    out
}

/// What one call came to, as its agent saw it.
#[derive(Debug, Clone)]
pub struct Record {
    /// The agent's tenant.
    pub tenant: &'static str,
    /// Whether a person waited on it.
    pub interactive: bool,
    /// A payment (else a chat).
    pub write: bool,
    /// Whether it succeeded.
    pub ok: bool,
    /// Tokens it cost (chats).
    pub tokens: u64,
    /// From the call to its answer: the queue wait and any retry delay.
    pub wait: Duration,
    /// When it ended, since the run started.
    pub ended: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_exact_and_each_equal_tenant_has_an_interactive_and_a_background_agent() {
        for n in [7, 8, 10, 24, 25, 1_000] {
            let agents = agents(n, 1);
            assert_eq!(agents.len(), n, "--agents {n}");
            let of = |tenant: &str, interactive: bool| {
                agents
                    .iter()
                    .filter(|a| a.tenant == tenant && a.interactive == interactive)
                    .count()
            };
            for tenant in EQUAL_TENANTS {
                assert_eq!(of(tenant, true), 1, "--agents {n}: {tenant}");
                assert!(of(tenant, false) >= 1, "--agents {n}: {tenant}");
                assert_eq!(
                    of(tenant, false),
                    of(EQUAL_TENANTS[0], false),
                    "--agents {n}: equal tenants, equal agents"
                );
            }
            assert!(of(NOISY, false) >= 1, "--agents {n}");
            assert_eq!(of(NOISY, true), 0, "--agents {n}");
            assert!(
                of(NOISY, false) >= n * 3 / 8 - 2,
                "--agents {n}: the noisy share"
            );
        }
        // The reference run is unchanged: 5 for each equal tenant, 9 noisy.
        assert_eq!(
            agents(24, 1).iter().filter(|a| a.tenant == NOISY).count(),
            9
        );
    }
}

//! The plugin contract's vocabulary: the figures and names the host and the plugin SDK must
//! agree on and the WIT cannot carry (it has types, not caps or header names). Both depend
//! on this crate, so neither keeps a copy to drift: the host holds a plugin's answer to
//! [`caps`] and refuses one over them; the SDK fits every answer to the same [`caps`] before
//! it leaves the component, so an absurd figure from outside never gets a plugin
//! quarantined.
//!
//! No dependencies and no `std`: it builds for `wasm32-wasip2` inside every plugin.

#![no_std]

/// The host's caps on what a plugin returns (docs/plugins.md, "The plugin sandbox"): an
/// answer over one is invalid output, answered by the built-in policy, and three in a row
/// quarantine the plugin. The host's defaults (`Caps::default`) are these.
pub mod caps {
    /// Longest string the host takes (an error code, a source, a reason, a URL), in bytes.
    pub const MAX_STRING_BYTES: usize = 2048;
    /// Longest tenant or scope name, in bytes.
    pub const MAX_NAME_BYTES: usize = 256;
    /// Longest provider-specific dimension name, in bytes.
    pub const MAX_DIMENSION_BYTES: usize = 64;
    /// Most entries in a list (observations, costs, usage).
    pub const MAX_LIST_LEN: usize = 64;
    /// Most scopes one plan may name.
    pub const MAX_SCOPES: usize = 16;
    /// Longest status-query body, in bytes.
    pub const MAX_BODY_BYTES: usize = 64 << 10;
    /// Largest quota figure, cost or usage amount.
    pub const MAX_AMOUNT: u64 = 1_000_000_000_000;
    /// Longest delay before a retry, or hold, a plugin may ask for: one day, so a typo or an
    /// attack in a header can never park a scope for a year.
    pub const MAX_DELAY_MS: u64 = 24 * 60 * 60 * 1000;
    /// Longest quota window (`window-ms`), or time until a quota resets (`reset-after-ms`),
    /// an observation may report: 31 days, so a monthly quota keeps its month.
    pub const MAX_WINDOW_MS: u64 = 31 * MAX_DELAY_MS;
    /// Log messages the host keeps of one call; more are dropped.
    pub const MAX_LOG_MESSAGES: usize = 16;
}

/// The names of the scopes a plan charges, as the host's admission reads them.
pub mod scope {
    /// A scope named for the model a request names (`model:gpt-4o`): the provider's
    /// per-model limits.
    pub const MODEL_PREFIX: &str = "model:";
    /// Longest model name a plan turns into a scope, in bytes; a longer one names none.
    pub const MAX_MODEL_BYTES: usize = 128;
}

/// The request headers an agent sets to tell the host about a call, which a plugin's
/// generic policy reads too.
pub mod hints {
    /// `interactive`, `standard` or `background`.
    pub const PRIORITY: &str = "x-sluice-priority";
    /// The tenant, where the agent's token allows naming one.
    pub const TENANT: &str = "x-sluice-tenant";
}

//! The names of the usage a plugin reports for billing beside its rate dimensions: what an
//! answer says of the provider's prompt cache. The host prices each at the model's cached
//! or cache-write price (`[providers.X.prices.MODEL]`).

/// Input tokens, already counted among the reported input tokens, read from the provider's
/// cache: OpenAI's `cached_tokens`.
pub const CACHED_INPUT_TOKENS: &str = "cached-input-tokens";

/// Tokens read from the provider's cache and not counted among the reported input tokens:
/// Anthropic's `cache_read_input_tokens`.
pub const CACHE_READ_TOKENS: &str = "cache-read-tokens";

/// Input tokens, already counted among the reported input tokens, written to the provider's
/// cache: Anthropic's `cache_creation_input_tokens`.
pub const CACHE_WRITE_TOKENS: &str = "cache-write-tokens";

//! Who a policy is, and how it declines a call.

/// Which traffic a plugin governs and who wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// The plugin's name, lower kebab case (for example `openai`).
    pub name: String,
    /// The plugin's own version (semver).
    pub version: String,
    /// The provider it speaks for, as shown to operators (for example `OpenAI`).
    pub provider: String,
    /// Host names it governs; `*.` prefixes match any subdomain.
    pub hosts: Vec<String>,
    /// Route patterns it understands, as `METHOD /path/{param}` or `/path/*`.
    pub routes: Vec<String>,
}

/// Why a plugin declined to answer. The host then uses its built-in conservative policy for
/// that call; a declined call is not a plugin failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// The request is outside what this plugin governs (another host or route).
    Unsupported(String),
    /// The input is malformed in a way the plugin cannot read.
    InvalidInput(String),
    /// Any other reason.
    Other(String),
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unsupported(m) => write!(f, "unsupported: {m}"),
            Self::InvalidInput(m) => write!(f, "invalid input: {m}"),
            Self::Other(m) => f.write_str(m),
        }
    }
}

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
    /// Non-`GET` routes that are reads (a generation), as `METHOD /path` with an optional
    /// trailing `*`: a caller that declares no class sends them as reads, any other
    /// non-`GET` route as an uncertain write.
    pub read_routes: Vec<String>,
    /// How the provider writes an error body; `None`: OpenAI's.
    pub error_shape: Option<ErrorShape>,
}

/// How a provider writes an error body: the shape of the answers the host gives in its
/// place, so a caller's SDK reads them as the provider's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorShape {
    /// `{"error": {"message", "type", "code"}}`.
    OpenAi,
    /// `{"type": "error", "error": {"type", "message"}}`.
    Anthropic,
    /// `{"message", "documentation_url"}`.
    GitHub,
    /// `{"error": {"type", "code", "message"}}`.
    Stripe,
}

impl ErrorShape {
    /// The shape named `name` (`openai`, `anthropic`, `github`, `stripe`).
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "openai" => Some(Self::OpenAi),
            "anthropic" => Some(Self::Anthropic),
            "github" => Some(Self::GitHub),
            "stripe" => Some(Self::Stripe),
            _ => None,
        }
    }
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

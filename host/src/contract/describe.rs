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
    /// Non-`GET` routes that are reads (a generation), as `METHOD /path` where a `*`
    /// matches any run of characters ([`route_matches`]): a caller that declares no class
    /// sends them as reads, any other non-`GET` route as an uncertain write.
    pub read_routes: Vec<String>,
    /// How the provider writes an error body; `None`: OpenAI's.
    pub error_shape: Option<ErrorShape>,
    /// How the provider refills its rate quotas; `None`: not known (the host takes
    /// [`Refill::Window`]). The operator's configuration takes precedence.
    pub refill: Option<Refill>,
}

/// Whether the route pattern `pattern` (`METHOD /path`) names a request of `method` to
/// `path` (without its query). A `*` in the path matches any run of characters, `/`
/// included: `POST /v1/*` every path under `/v1/`, `POST /v1beta/*:generateContent` a
/// generation of any model. One `*` at most; a pattern with more matches nothing.
pub fn route_matches(pattern: &str, method: &str, path: &str) -> bool {
    let Some((m, p)) = pattern.split_once(' ') else {
        return false;
    };
    if m != method {
        return false;
    }
    match p.split_once('*') {
        None => path == p,
        Some((_, suffix)) if suffix.contains('*') => false,
        Some((prefix, suffix)) => {
            path.len() >= prefix.len() + suffix.len()
                && path.starts_with(prefix)
                && path.ends_with(suffix)
        }
    }
}

/// How a provider refills a quota, and so how large a burst is safe.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Refill {
    /// The provider may count a whole window's use at once (a fixed or sliding window): the
    /// burst is the part of the limit above the pace, so no window ever sees more than the
    /// limit. Safe for any provider.
    #[default]
    Window,
    /// The provider's quota is a token bucket refilled continuously at the limit's rate, as
    /// Anthropic documents its limits: the burst is the whole paced amount. A bucket that
    /// holds at most the pace and refills at the pace never holds more than the provider's,
    /// which holds the limit and refills at the limit, so nothing it admits is refused; and
    /// a request larger than the window's margin no longer waits for an idle stretch.
    Continuous,
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
    /// `{"error": {"code", "message", "status"}}`: Google's (Gemini, Vertex AI).
    Google,
    /// `{"message"}`, the error's type in `x-amzn-ErrorType`: AWS's (Bedrock).
    Aws,
}

impl ErrorShape {
    /// The shape named `name` (`openai`, `anthropic`, `github`, `stripe`, `google`, `aws`).
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "openai" => Some(Self::OpenAi),
            "anthropic" => Some(Self::Anthropic),
            "github" => Some(Self::GitHub),
            "stripe" => Some(Self::Stripe),
            "google" => Some(Self::Google),
            "aws" => Some(Self::Aws),
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

#[cfg(test)]
mod tests {
    use super::route_matches;

    #[test]
    fn a_star_matches_any_run_of_characters_once() {
        for (pattern, method, path, matches) in [
            (
                "POST /v1/chat/completions",
                "POST",
                "/v1/chat/completions",
                true,
            ),
            (
                "POST /v1/chat/completions",
                "GET",
                "/v1/chat/completions",
                false,
            ),
            (
                "POST /v1/chat/completions",
                "POST",
                "/v1/chat/completions/x",
                false,
            ),
            ("POST /v1/search/*", "POST", "/v1/search/docs/a", true),
            ("POST /v1/search/*", "POST", "/v1/search/", true),
            ("POST /v1/search/*", "POST", "/v1/search", false),
            (
                "POST /v1beta/*:generateContent",
                "POST",
                "/v1beta/models/m:generateContent",
                true,
            ),
            (
                "POST /v1beta/*:generateContent",
                "POST",
                "/v1beta/models/m:streamGenerateContent",
                false,
            ),
            (
                "POST /v1beta/*:generateContent",
                "POST",
                "/v1beta:generateContent",
                false,
            ),
            ("POST /a*b*c", "POST", "/abc", false),
            ("no-space", "POST", "no-space", false),
        ] {
            assert_eq!(
                route_matches(pattern, method, path),
                matches,
                "{pattern} {method} {path}"
            );
        }
    }
}

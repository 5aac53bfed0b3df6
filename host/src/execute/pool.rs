//! Pools at the executor: where an attempt made with a member goes (its own base URL and
//! path, an Azure OpenAI deployment), which members a read's next attempt avoids (those
//! whose breaker refuses, the one its last attempt failed on), and the one member a write
//! keeps for its whole life.

use std::collections::HashMap;
use std::sync::Arc;

use super::Call;
use super::breaking::BreakerPaths;
use crate::contract::RequestClass;

/// Where calls made with one credential go, when not where its provider's do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endpoint {
    /// The base URL instead of the provider's (no trailing `/`).
    pub base_url: Option<String>,
    /// The path template instead of the call's path: `{path}` is the call's path after its
    /// first segment, and the call's query joins the template's.
    pub path: Option<String>,
}

/// Each provider's credentials' endpoints, by provider, then label.
pub type Endpoints = HashMap<String, HashMap<String, Endpoint>>;

/// The URL an attempt of `call` made with `credential` goes to, when the credential has its
/// own endpoint among `endpoints` and the call's URL is the provider's (relative, or under
/// its base URL, `base`); `None`: the call's own.
pub(super) fn endpoint_url(
    endpoints: &Endpoints,
    base: Option<&str>,
    call: &Call,
    credential: &str,
) -> Option<String> {
    let endpoint = endpoints.get(&call.provider)?.get(credential)?;
    member_url(&call.url, base, endpoint)
}

/// The pool of `call`, a read: one that goes, at each attempt, with the member that would
/// admit it soonest.
pub(super) fn pooled_read(call: &Call) -> Option<&str> {
    call.pool
        .as_deref()
        .filter(|_| call.class == RequestClass::Read)
}

/// Where a call to `url` of a provider whose base URL is `base` goes with a credential of
/// `endpoint`: `None` when `url` is not the provider's (absolute, elsewhere) or nothing says
/// where.
fn member_url(url: &str, base: Option<&str>, endpoint: &Endpoint) -> Option<String> {
    let base = base.map(|b| b.trim_end_matches('/'));
    let rest = match base {
        _ if url.starts_with('/') => url,
        Some(b) => url.strip_prefix(b).filter(|r| r.starts_with('/'))?,
        None => return None,
    };
    let base = endpoint.base_url.as_deref().or(base)?;
    let Some(template) = &endpoint.path else {
        return Some(format!("{base}{rest}"));
    };
    let (path, query) = rest
        .split_once('?')
        .map_or((rest, None), |(p, q)| (p, Some(q)));
    let after_first = path
        .trim_start_matches('/')
        .split_once('/')
        .map_or("", |(_, r)| r);
    let mut url = format!("{base}{}", template.replace("{path}", after_first));
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(q);
    }
    Some(url)
}

/// What a pool's call keeps between its attempts.
#[derive(Debug)]
pub(super) struct Pooled {
    /// The member its attempt goes with, once admitted on one.
    pub(super) member: Option<Arc<str>>,
    /// The route (`METHOD /template`) and the body's model, that its breaker paths name.
    route: String,
    model: Option<String>,
    /// The members its attempts failed on, which its next ones avoid.
    pub(super) failed_on: Vec<Arc<str>>,
    /// The members its attempt last queued avoided: those and the ones whose breaker
    /// refused then.
    pub(super) avoided: Vec<Arc<str>>,
}

impl Pooled {
    /// What `call`, whose body names `model`, keeps.
    pub(super) fn new(call: &Call, model: Option<String>) -> Self {
        Self {
            member: None,
            route: crate::retry::route_template(&call.method, &call.url),
            model,
            failed_on: Vec::new(),
            avoided: Vec::new(),
        }
    }

    /// The breaker paths of this call made with `credential` (the tenant's not named).
    pub(super) fn paths_with(&self, provider: &str, credential: &str) -> BreakerPaths {
        BreakerPaths::before_plan(provider, credential, &self.route, self.model.as_deref())
    }

    /// Queued on `member`, whose breaker then refused it (it opened while the call waited):
    /// whether the call queues again for another member. It does unless `member` was among
    /// those it avoided (no other could take it); it then chooses afresh.
    pub(super) fn choose_again(&mut self, member: &Arc<str>) -> bool {
        let again = !self.avoided.contains(member);
        if again {
            self.member = None;
        }
        again
    }

    /// Its attempt failed on its member: the next ones avoid it.
    pub(super) fn failed(&mut self) {
        if let Some(m) = &self.member
            && !self.failed_on.contains(m)
        {
            self.failed_on.push(m.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Endpoint, member_url};

    #[test]
    fn a_member_s_endpoint_takes_the_provider_s_calls() {
        let azure = Endpoint {
            base_url: Some("https://east.example.azure.com".into()),
            path: Some("/openai/deployments/gpt-4o/{path}?api-version=2024-10-21".into()),
        };
        let base = Some("https://api.openai.com/");
        let deployed = "https://east.example.azure.com/openai/deployments/gpt-4o/chat/completions\
                        ?api-version=2024-10-21";
        for url in [
            "https://api.openai.com/v1/chat/completions",
            "/v1/chat/completions",
        ] {
            assert_eq!(member_url(url, base, &azure).as_deref(), Some(deployed));
        }
        let queried = member_url("/v1/models?limit=5", base, &azure).unwrap();
        assert!(
            queried.ends_with("/gpt-4o/models?api-version=2024-10-21&limit=5"),
            "{queried}"
        );
        // A URL that is not the provider's is left alone; so is any without a base.
        assert_eq!(
            member_url("https://elsewhere.example/v1/x", base, &azure),
            None
        );
        assert_eq!(
            member_url("https://api.openai.com.evil/v1/x", base, &azure),
            None
        );
        let region = Endpoint {
            base_url: Some("https://eu.api.example".into()),
            path: None,
        };
        assert_eq!(
            member_url(
                "https://api.openai.com/v1/chat/completions?x=1",
                base,
                &region
            )
            .as_deref(),
            Some("https://eu.api.example/v1/chat/completions?x=1")
        );
        let no_base = Endpoint {
            base_url: None,
            path: Some("/p/{path}".into()),
        };
        assert_eq!(
            member_url("/v1/a/b", base, &no_base).as_deref(),
            Some("https://api.openai.com/p/a/b")
        );
        assert_eq!(member_url("/v1/a", None, &no_base), None);
    }
}

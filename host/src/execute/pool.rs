//! Pools at the executor: where an attempt made with a member goes (its own base URL and
//! path, an Azure OpenAI deployment), which members a read's next attempt avoids (those
//! whose breaker refuses, the one its last attempt failed on), and the one member a write
//! keeps for its whole life.

use std::collections::HashMap;
use std::sync::Arc;

use super::attempt::Prepared;
use super::breaking::BreakerPaths;
use super::{Call, Executor};
use crate::admission::{Acquire, Rejection, Usage};
use crate::contract::RequestClass;
use crate::retry::Open;

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

impl Executor {
    /// Sends calls made with a credential that has its own [`Endpoint`] there (by
    /// provider, then credential label) instead of to the provider's base URL.
    #[must_use]
    pub fn with_endpoints(mut self, endpoints: Endpoints) -> Self {
        self.endpoints = endpoints;
        self
    }

    /// The URL an attempt of `call` made with `credential` goes to, when the credential has
    /// its own endpoint and the call's URL is the provider's (relative, or under its base
    /// URL); `None`: the call's own.
    pub(super) fn endpoint_url(&self, call: &Call, credential: &str) -> Option<String> {
        let endpoint = self.endpoints.get(&call.provider)?.get(credential)?;
        let base = self.base_urls.get(&call.provider).map(String::as_str);
        member_url(&call.url, base, endpoint)
    }

    /// `acquire` sent to a member of `pool`, told to avoid the members the attempt about to
    /// queue avoids: those whose breaker on the call's path refuses now, and those its
    /// attempts failed on. The call keeps the list, so that a member refused by its breaker
    /// after the call was queued on it is known to have been better than the others
    /// ([`choose_again`]).
    pub(super) fn avoiding(
        &self,
        call: &Call,
        pool: &str,
        p: &mut Prepared,
        mut acquire: Acquire,
    ) -> Acquire {
        let Some(pooled) = p.pooled.as_mut() else {
            return acquire.pool(pool);
        };
        let mut avoid: Vec<Arc<str>> = pooled.failed_on.clone();
        if self.breakers.any_open() {
            let now = self.clock.now();
            for m in self
                .admission
                .pool_members(&call.provider, pool)
                .unwrap_or_default()
            {
                let paths = pooled.paths_with(&call.provider, &m);
                if self.breakers.refuses(&paths, now) && !avoid.contains(&m) {
                    avoid.push(m);
                }
            }
        }
        for m in &avoid {
            acquire = acquire.avoid(&**m);
        }
        pooled.avoided = avoid;
        acquire.pool(pool)
    }

    /// The attempt about to be sent goes with `member`: its breaker paths become the
    /// member's, and the member's breaker is asked (a first attempt's credential path only:
    /// its tenant's is asked after the plan; a retry's, both). Once it lets the attempt go,
    /// the choice is counted, and a move away from the member the last attempt failed on.
    ///
    /// # Errors
    /// The member's breaker refuses now (it may have opened while the call waited).
    pub(super) fn went_with(
        &self,
        call: &Call,
        pool: &str,
        p: &mut Prepared,
        member: &Arc<str>,
        first: bool,
    ) -> Result<(), Open> {
        let Some(pooled) = p.pooled.as_mut() else {
            return Ok(());
        };
        if pooled.member.as_ref() != Some(member) {
            p.paths = pooled
                .paths_with(&call.provider, member)
                .of_tenant(&p.tenant);
            pooled.member = Some(member.clone());
        }
        let now = self.clock.now();
        if first {
            self.breakers.allow_path(&p.paths, now)?;
        } else {
            self.breakers.allow(&p.paths, now)?;
        }
        metrics::counter!(
            crate::observe::POOL_CHOSEN,
            "provider" => call.provider.clone(),
            "pool" => pool.to_owned(),
            "member" => member.to_string(),
        )
        .increment(1);
        if let Some(from) = pooled.failed_on.last()
            && from != member
        {
            metrics::counter!(
                crate::observe::POOL_FAILOVERS,
                "provider" => call.provider.clone(),
                "pool" => pool.to_owned(),
                "from" => from.to_string(),
            )
            .increment(1);
        }
        Ok(())
    }

    /// `call` with the one member of its pool it keeps for its whole life (a write: its
    /// idempotency key and its reconciliation are that member's): the member that would
    /// admit one request of it soonest now. A call without a pool is returned as it is.
    ///
    /// # Errors
    /// [`Rejection::UnknownPool`] when its provider has no such pool.
    pub fn pinned(&self, call: &Call) -> Result<Call, Rejection> {
        let Some(pool) = &call.pool else {
            return Ok(call.clone());
        };
        let mut acquire = Acquire::new(&call.provider, &call.credential)
            .tenant(call.tenant.as_deref().unwrap_or("default"))
            .usage(Usage::ONE_REQUEST)
            .pool(pool.as_str());
        for s in &call.scopes {
            acquire = acquire.scope(s);
        }
        let member = self.admission.choose_member(&acquire)?;
        let mut pinned = call.clone();
        pinned.credential = member.to_string();
        pinned.pool = None;
        Ok(pinned)
    }
}

/// The pool of `call`, a read: one that goes, at each attempt, with the member that would
/// admit it soonest.
pub(super) fn pooled_read(call: &Call) -> Option<&str> {
    call.pool
        .as_deref()
        .filter(|_| call.class == RequestClass::Read)
}

/// A call choosing a member of its pool was queued on `member`, whose breaker then refused
/// it (it opened while the call waited): whether the call queues again for another member.
/// It does unless `member` was among those it avoided (no other could take it); it then
/// chooses afresh.
pub(super) fn choose_again(p: &mut Prepared, member: &Arc<str>) -> bool {
    let Some(pooled) = p.pooled.as_mut() else {
        return false;
    };
    let again = !pooled.avoided.contains(member);
    if again {
        pooled.member = None;
    }
    again
}

/// The pool the attempt of `call` about to queue chooses a member of: a read's at every
/// attempt, a write's at its first only (it keeps that member).
pub(super) fn choosing<'a>(call: &'a Call, p: &Prepared) -> Option<&'a str> {
    let unchosen = p.pooled.as_ref().is_some_and(|x| x.member.is_none());
    call.pool
        .as_deref()
        .filter(|_| call.class == RequestClass::Read || unchosen)
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
    failed_on: Vec<Arc<str>>,
    /// The members its attempt last queued avoided: those and the ones whose breaker
    /// refused then.
    avoided: Vec<Arc<str>>,
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
    fn paths_with(&self, provider: &str, credential: &str) -> BreakerPaths {
        BreakerPaths::before_plan(provider, credential, &self.route, self.model.as_deref())
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

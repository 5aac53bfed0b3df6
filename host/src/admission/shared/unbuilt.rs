//! The store in a build without the `redis` feature: a configuration that names one
//! (`[store]`, [`SharedConfig`]) is refused when the host is built, saying how to get it.
//! No value of this type is ever made, so none of its methods runs.

use std::convert::Infallible;
use std::time::Duration;

use super::answers::{Claimed, EpochCheck, SliceAsk, Sliced, StoreError, Verdict};
use super::{QuotaFigures, ScopeFigures, SharedConfig};
use crate::admission::scope::ScopeKey;
use crate::admission::usage::Usage;

/// The shared store on Redis, which this build has no client for.
#[derive(Debug, Clone)]
pub struct RedisStore {
    never: Infallible,
}

impl RedisStore {
    /// Always the error that names the missing feature.
    ///
    /// # Errors
    /// [`StoreError::Redis`], always.
    pub fn new(_: &SharedConfig) -> Result<Self, StoreError> {
        Err(StoreError::Redis(
            "this build of sluice has no Redis client: build the sluice crate with its `redis` \
             feature (a default one) to share quotas and claims between hosts"
                .to_owned(),
        ))
    }

    pub(super) fn lease_key(&self, _: &ScopeKey) -> String {
        match self.never {}
    }

    pub(super) fn quota_key(&self, _: &ScopeKey, _: &QuotaFigures) -> String {
        match self.never {}
    }

    pub(super) fn hold_key(&self, _: &ScopeKey) -> String {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn slice(
        &self,
        _: &[SliceAsk],
        _: &[String],
        _: Duration,
    ) -> Result<Sliced, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn info(&self) -> Result<String, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn reclaimed(&self, _: &str) -> Result<bool, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn reclaimed_hosts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn admit(&self, _: &[ScopeFigures], _: &str) -> Result<Verdict, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn settle(
        &self,
        _: &[ScopeFigures],
        _: &str,
        _: &[u64],
        _: Option<&Usage>,
    ) -> Result<(), StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn share(&self, _: &ScopeFigures) -> Result<(), StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn renew(&self, _: &[(String, String)], _: bool) -> Result<(), StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn claim(
        &self,
        _: &str,
        _: &str,
        _: Duration,
        _: Option<&str>,
    ) -> Result<Claimed, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn join(&self) -> Result<Option<String>, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn init(&self) -> Result<Option<String>, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn epoch(&self, _: &str) -> Result<EpochCheck, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn reclaim(
        &self,
        _: &[String],
        _: &str,
        _: Duration,
    ) -> Result<Vec<(String, String)>, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn recover_ownership(&self) -> Result<String, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn live_hosts(&self) -> Result<Vec<String>, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn heartbeat(
        &self,
        _: &str,
        _: &str,
        _: Duration,
    ) -> Result<Option<String>, StoreError> {
        match self.never {}
    }

    /// See the Redis store's.
    #[allow(clippy::unused_async)]
    pub async fn ping(&self) -> Result<(), StoreError> {
        match self.never {}
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;

    #[test]
    fn a_store_is_refused_naming_the_feature_that_brings_it() {
        let config = SharedConfig::new("redis://127.0.0.1:6379", NonZeroU32::MIN);
        assert!(config.validate().is_ok(), "the URL itself is fine");
        let err = RedisStore::new(&config).unwrap_err().to_string();
        assert!(err.contains("`redis` feature"), "{err}");
    }
}

//! `POST /plugins/{provider}/reload`: swaps a provider's plugin for the version its
//! configured file holds now, while agents' calls run ([`sluice::Sluice::reload_plugin`]).
//!
//! The new version takes traffic only once it loaded, its `describe` names the same plugin
//! and its vectors (when configured) pass; calls already running finish on the version they
//! began with. Answers:
//!
//! - 200 `{"provider", "plugin", "version", "previous_version", "contract",
//!   "vectors_passed"}`: the new version serves;
//! - 404: no provider has that name;
//! - 409: the new file is another plugin than the one serving the provider;
//! - 422: the new version is unusable (not a component, its `describe` failed, a vector case
//!   failed, the vector file is unreadable).
//!
//! On 409 and 422 the old version keeps serving, and the message says why.

use std::sync::Arc;

use hyper::Response;
use serde_json::json;
use sluice::reload::{Refusal, ReloadError};

use super::text::decode;
use super::{error_reply, json_reply};
use crate::Shared;
use crate::reply::Body;

/// Reloads the plugin of the provider whose percent-encoded name is `raw`.
pub(super) async fn reload(shared: &Shared, raw: &str) -> Response<Body> {
    let provider = match decode("the provider's name in the path", raw) {
        Ok(p) => p,
        Err(e) => {
            return error_reply(
                400,
                format!("{e}: POST /plugins/{{provider}}/reload with the name percent-encoded"),
            );
        }
    };
    // Compiling a plugin and running its vectors blocks: not on the threads serving agents.
    let plugins = Arc::clone(shared.sluice.plugins());
    let name = provider.clone();
    let reloaded = tokio::task::spawn_blocking(move || plugins.reload(&name)).await;
    match reloaded {
        Ok(Ok(r)) => json_reply(
            200,
            &json!({
                "provider": r.provider,
                "plugin": r.plugin,
                "version": r.version,
                "previous_version": r.previous_version,
                "contract": r.contract.package(),
                "vectors_passed": r.vectors_passed,
            }),
        ),
        Ok(Err(e)) => {
            let status = match &e {
                ReloadError::UnknownProvider { .. } => 404,
                ReloadError::Refused {
                    reason: Refusal::OtherPlugin { .. },
                    ..
                } => 409,
                ReloadError::Refused { .. } => 422,
                _ => 500,
            };
            error_reply(status, e.to_string())
        }
        Err(panicked) => error_reply(
            500,
            format!(
                "reloading the plugin of `{}` stopped: {panicked}; the old version keeps serving",
                sluice::printable::printable(&provider)
            ),
        ),
    }
}

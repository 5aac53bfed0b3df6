//! What the journal keeps of a write's request so a restarted host can send it again:
//! everything but the credentials, which are asked for at send time.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Write, WriteError, task_id};
use crate::contract::RequestClass;
use crate::execute::Call;
use crate::journal::{Action, Intent};
use crate::retry::{class_name, class_named, route_template};

/// The idempotency key's header.
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

/// A write's request as journaled: no credential, no body (the body has its own column).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRequest {
    /// The absolute URL.
    pub url: String,
    /// The credential's label (not the credential).
    pub credential: String,
    /// Narrower scopes it charges.
    pub scopes: Vec<String>,
    /// The tenant.
    pub tenant: String,
    /// Headers plugins may see (never credentials, whatever the call carried; the
    /// idempotency key is added per send).
    pub headers: Vec<(String, String)>,
    /// The call's time budget, in milliseconds.
    pub deadline_ms: Option<u64>,
}

impl StoredRequest {
    /// What to keep of `call`.
    pub fn of(call: &Call) -> Self {
        Self {
            url: call.url.clone(),
            credential: call.credential.clone(),
            scopes: call.scopes.clone(),
            tenant: call.tenant.clone().unwrap_or_default(),
            headers: call
                .headers
                .iter()
                .filter(|(n, _)| {
                    !n.eq_ignore_ascii_case(IDEMPOTENCY_KEY) && !crate::headers::is_credential(n)
                })
                .cloned()
                .collect(),
            deadline_ms: call
                .deadline
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    /// The journal's intent for `write`.
    pub(super) fn intent(&self, write: &Write) -> Intent {
        Intent {
            task: write.task.clone(),
            action: write.action.clone(),
            provider: write.call.provider.clone(),
            method: write.call.method.clone(),
            route: route_template(&write.call.method, &write.call.url),
            class: class_name(write.call.class).to_owned(),
            body: write.call.body.to_vec(),
            request: serde_json::to_string(self).unwrap_or_default(),
            goal: write.goal.clone(),
        }
    }

    /// Reads back what `action` stored.
    ///
    /// # Errors
    /// [`WriteError::StoredRequest`] naming the action.
    pub fn load(action: &Action) -> Result<Self, WriteError> {
        serde_json::from_str(&action.request).map_err(|e| WriteError::StoredRequest {
            id: action.id,
            why: e.to_string(),
        })
    }

    /// The call that sends `action` again, with its body (the executor adds the credentials
    /// of now).
    pub(super) fn call(&self, action: &Action, body: Vec<u8>) -> Call {
        Call {
            provider: action.provider.clone(),
            credential: self.credential.clone(),
            pool: None,
            scopes: self.scopes.clone(),
            tenant: Some(self.tenant.clone()).filter(|t| !t.is_empty()),
            task: Some(task_id(&action.task)),
            priority: None,
            class: class_named(&action.class).unwrap_or(RequestClass::UncertainWrite),
            method: action.method.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            body: body.into(),
            deadline: self.deadline_ms.map(Duration::from_millis),
            coalesce: false,
        }
    }
}

/// `call` as `action` sends it: its task, and its one idempotency key on every attempt.
pub(super) fn keyed(action: &Action, call: &Call) -> Call {
    let mut call = call.clone();
    call.task = Some(task_id(&action.task));
    call.headers
        .retain(|(n, _)| !n.eq_ignore_ascii_case(IDEMPOTENCY_KEY));
    call.headers
        .push((IDEMPOTENCY_KEY.to_owned(), action.idempotency_key.clone()));
    call
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 27: a write's headers were journaled with only `Idempotency-Key` removed.
    #[test]
    fn no_credential_a_call_carries_is_journaled() {
        let mut call = Call::new("p", "POST", "https://p.test/v1/things");
        call.headers = vec![
            ("content-type".into(), "application/json".into()),
            ("Idempotency-Key".into(), "k-1".into()),
            ("Authorization".into(), "Bearer sk-live".into()),
            ("cookie".into(), "session=s".into()),
            ("x-auth-token".into(), "t".into()),
            ("x-acme-secret".into(), "s".into()),
        ];
        let stored = StoredRequest::of(&call);
        assert_eq!(
            stored.headers,
            [("content-type".to_owned(), "application/json".to_owned())]
        );
    }
}

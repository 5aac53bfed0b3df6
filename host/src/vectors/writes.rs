//! Write cases (`writes` in `docs/PLUGIN-VECTORS.md`): an uncertain write, the answer to
//! the status query the plugin asked for, and what the plugin must conclude — the two
//! exports that settle a write, `reconcile` and `read-reconciliation`. They read no attempt,
//! so they are cases of their own rather than fields of an attempt's case.
//!
//! A write case costs the plugin one `reconcile` call when it expects a plan and one
//! `read-reconciliation` call when it expects a reconciliation, as settling a write costs it
//! in production.

use serde::Deserialize;

use super::expect::present;
use super::format::{self, RawResponse};
use crate::contract::{
    ProviderPolicy, ReconcilePlan, Reconciliation, Response, StatusQuery, UncertainWrite,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWriteCase {
    pub name: String,
    pub now: Option<String>,
    pub write: RawWrite,
    pub response: Option<RawResponse>,
    pub expect: RawWriteExpect,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWrite {
    pub method: String,
    pub url: String,
    pub idempotency_key: Option<String>,
    pub client_reference: Option<String>,
    pub operation_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWriteExpect {
    pub reconcile: Option<ExpectedReconcile>,
    pub reconciliation: Option<ExpectedReconciliation>,
}

/// The expected answer of `reconcile`: its `kind`, and the fields of that kind present.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ExpectedReconcile {
    /// A status query; only the fields present are checked.
    Query {
        /// The query's method.
        #[serde(default)]
        method: Option<String>,
        /// The query's absolute URL.
        #[serde(default)]
        url: Option<String>,
        /// The headers the query adds, as `[name, value]` pairs in order (`[]`: none).
        #[serde(default)]
        headers: Option<Vec<(String, String)>>,
        /// The query's body, as text (`""`: none).
        #[serde(default)]
        body: Option<String>,
    },
    /// A resend with the same idempotency key. (A variant with no fields, not a unit
    /// variant: serde refuses unknown fields only in the former.)
    ResendSameKey {},
    /// The plugin cannot check the write.
    Unsupported {
        /// The reason, when checked: the exact text.
        #[serde(default)]
        reason: Option<String>,
    },
}

/// The expected answer of `read-reconciliation`: its `kind`, and the fields of that kind
/// present.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ExpectedReconciliation {
    /// The write happened.
    Found {
        /// The operation id the answer names, when checked (`null`: none expected).
        #[serde(default, deserialize_with = "present")]
        operation_id: Option<Option<String>>,
    },
    /// The write did not happen (no fields, as `ResendSameKey`).
    NotFound {},
    /// The answer does not settle it.
    Unknown {
        /// The reason, when checked: the exact text.
        #[serde(default)]
        reason: Option<String>,
    },
}

/// A write case, validated and turned into the host's types.
#[derive(Debug, Clone)]
pub struct WriteCase {
    /// The case's name.
    pub name: String,
    /// The uncertain write.
    pub write: UncertainWrite,
    /// The answer to the status query, when the case checks `read-reconciliation`.
    pub response: Option<Response>,
    /// The expected answer of `reconcile`, when checked.
    pub reconcile: Option<ExpectedReconcile>,
    /// The expected answer of `read-reconciliation`, when checked.
    pub reconciliation: Option<ExpectedReconciliation>,
}

/// Turns a raw write case into a [`WriteCase`], or names the field that is wrong.
pub(super) fn validate(raw: RawWriteCase) -> Result<WriteCase, String> {
    let now_ms = format::now_ms(raw.now.as_deref())?;
    if raw.write.method.is_empty() {
        return Err("write.method: empty".into());
    }
    let write = UncertainWrite {
        method: raw.write.method.to_ascii_uppercase(),
        url: raw.write.url,
        idempotency_key: raw.write.idempotency_key,
        client_reference: raw.write.client_reference,
        operation_id: raw.write.operation_id,
        now_ms,
    };
    let response = raw.response.map(format::response).transpose()?;
    let RawWriteExpect {
        reconcile,
        reconciliation,
    } = raw.expect;
    match (&reconcile, &reconciliation, &response) {
        (None, None, _) => {
            return Err("expect: checks nothing; name reconcile, reconciliation or both".into());
        }
        (_, Some(_), None) => {
            return Err(
                "expect.reconciliation: needs \"response\", the answer to the status query".into(),
            );
        }
        (_, None, Some(_)) => {
            return Err(
                "response: nothing reads it; add expect.reconciliation or remove it".into(),
            );
        }
        _ => {}
    }
    if let Some(ExpectedReconcile::Query {
        method,
        url,
        headers,
        body,
    }) = &reconcile
    {
        if method.is_none() && url.is_none() && headers.is_none() && body.is_none() {
            return Err(
                "expect.reconcile: a query checks nothing more than its kind; name its url \
                 (or method, headers, body)"
                    .into(),
            );
        }
        if let Some(h) = headers {
            format::headers("expect.reconcile.headers", h)?;
        }
    }
    Ok(WriteCase {
        name: raw.name,
        write,
        response,
        reconcile,
        reconciliation,
    })
}

/// Runs one write case: the first difference, or the plugin's failure.
pub(super) fn run(plugin: &dyn ProviderPolicy, case: &WriteCase) -> Option<String> {
    if let Some(want) = &case.reconcile {
        match plugin.reconcile(&case.write) {
            Ok(plan) => {
                if let Some(diff) = check_reconcile(&plan, want) {
                    return Some(diff);
                }
            }
            Err(e) => return Some(e.to_string()),
        }
    }
    let (Some(want), Some(resp)) = (&case.reconciliation, &case.response) else {
        return None;
    };
    match plugin.read_reconciliation(&case.write, resp) {
        Ok(r) => check_reconciliation(&r, want),
        Err(e) => Some(e.to_string()),
    }
}

fn plan_kind(p: &ReconcilePlan) -> String {
    match p {
        ReconcilePlan::Query(q) => format!("query ({} {})", q.method, q.url),
        ReconcilePlan::ResendSameKey => "resend-same-key".into(),
        ReconcilePlan::Unsupported(r) => format!("unsupported ({r:?})"),
    }
}

/// The first difference between a plan and the expected one.
pub(super) fn check_reconcile(got: &ReconcilePlan, want: &ExpectedReconcile) -> Option<String> {
    match (want, got) {
        (
            ExpectedReconcile::Query {
                method,
                url,
                headers,
                body,
            },
            ReconcilePlan::Query(q),
        ) => check_query(q, method, url, headers, body),
        (ExpectedReconcile::ResendSameKey {}, ReconcilePlan::ResendSameKey) => None,
        (ExpectedReconcile::Unsupported { reason }, ReconcilePlan::Unsupported(r)) => reason
            .as_ref()
            .filter(|want| *want != r)
            .map(|want| format!("reconcile.reason: expected {want:?}, got {r:?}")),
        _ => Some(format!(
            "reconcile: expected {}, got {}",
            reconcile_kind(want),
            plan_kind(got)
        )),
    }
}

fn reconcile_kind(e: &ExpectedReconcile) -> &'static str {
    match e {
        ExpectedReconcile::Query { .. } => "query",
        ExpectedReconcile::ResendSameKey {} => "resend-same-key",
        ExpectedReconcile::Unsupported { .. } => "unsupported",
    }
}

fn check_query(
    q: &StatusQuery,
    method: &Option<String>,
    url: &Option<String>,
    headers: &Option<Vec<(String, String)>>,
    body: &Option<String>,
) -> Option<String> {
    let texts = [("method", method, &q.method), ("url", url, &q.url)];
    for (field, want, got) in texts {
        if let Some(want) = want
            && want != got
        {
            return Some(format!("reconcile.{field}: expected {want:?}, got {got:?}"));
        }
    }
    if let Some(h) = headers {
        // Validated when the file was read, so it encodes.
        let want = format::headers("expect.reconcile.headers", h).unwrap_or_default();
        if want != q.headers {
            return Some(format!(
                "reconcile.headers: expected {want:?}, got {:?}",
                q.headers
            ));
        }
    }
    if let Some(want) = body
        && want.as_bytes() != q.body.as_slice()
    {
        return Some(format!(
            "reconcile.body: expected {want:?}, got {:?}",
            String::from_utf8_lossy(&q.body)
        ));
    }
    None
}

/// The first difference between a reconciliation and the expected one.
pub(super) fn check_reconciliation(
    got: &Reconciliation,
    want: &ExpectedReconciliation,
) -> Option<String> {
    match (want, got) {
        (ExpectedReconciliation::Found { operation_id }, Reconciliation::Found(id)) => operation_id
            .as_ref()
            .filter(|want| *want != id)
            .map(|want| {
                format!(
                    "reconciliation.operation_id: expected {}, got {}",
                    show(want.as_ref()),
                    show(id.as_ref())
                )
            }),
        (ExpectedReconciliation::NotFound {}, Reconciliation::NotFound) => None,
        (ExpectedReconciliation::Unknown { reason }, Reconciliation::Unknown(r)) => reason
            .as_ref()
            .filter(|want| *want != r)
            .map(|want| format!("reconciliation.reason: expected {want:?}, got {r:?}")),
        _ => Some(format!(
            "reconciliation: expected {}, got {}",
            match want {
                ExpectedReconciliation::Found { .. } => "found",
                ExpectedReconciliation::NotFound {} => "not-found",
                ExpectedReconciliation::Unknown { .. } => "unknown",
            },
            match got {
                Reconciliation::Found(Some(id)) => format!("found ({id:?})"),
                Reconciliation::Found(None) => "found".into(),
                Reconciliation::NotFound => "not-found".into(),
                Reconciliation::Unknown(r) => format!("unknown ({r:?})"),
            }
        )),
    }
}

fn show(v: Option<&String>) -> String {
    v.map_or_else(|| "null".to_owned(), |x| format!("{x:?}"))
}

//! Settling an uncertain Stripe write.

use sluice_plugin_sdk::{
    PolicyError, ReconcilePlan, Reconciliation, Response, StatusQuery, UncertainWrite, json,
};

/// The metadata key under which the host stores the client's reference.
pub const REFERENCE_KEY: &str = "client_reference";

/// How to settle `write`: by its operation id when one came back; else by a resend with
/// the same idempotency key, which Stripe answers with the first request's result for at
/// least 24 hours (the host reconciles as soon as a write becomes uncertain); else by a
/// search for the client reference in the object's metadata.
///
/// # Errors
/// `invalid-input` when the write's URL has no `/v1/<collection>` path.
pub fn plan(write: &UncertainWrite) -> Result<ReconcilePlan, PolicyError> {
    let collection = collection_url(&write.url)?;
    if let Some(id) = write.operation_id.as_deref().filter(|i| is_id(i)) {
        return Ok(ReconcilePlan::Query(get(format!("{collection}/{id}"))));
    }
    if write.idempotency_key.is_some() {
        return Ok(ReconcilePlan::ResendSameKey);
    }
    if let Some(reference) = write.client_reference.as_deref().filter(|r| is_id(r)) {
        let query = format!("metadata['{REFERENCE_KEY}']:'{reference}'");
        return Ok(ReconcilePlan::Query(get(format!(
            "{collection}/search?query={}",
            percent_encode(&query)
        ))));
    }
    Ok(ReconcilePlan::Unsupported(
        "the write has no operation id, no client reference and no idempotency key: only a \
         person can tell whether it happened"
            .into(),
    ))
}

/// Reads the answer to the query from [`plan`].
pub fn read(write: &UncertainWrite, resp: &Response) -> Reconciliation {
    let Some(body) = json::parse(&resp.body) else {
        return Reconciliation::Unknown(format!("status {} with an unreadable body", resp.status));
    };
    match resp.status {
        200 => {
            if let Some(data) = body.get("data").and_then(|d| d.as_array()) {
                match data
                    .first()
                    .and_then(|o| o.get("id"))
                    .and_then(|i| i.as_str())
                {
                    Some(id) => Reconciliation::Found(Some(id.to_owned())),
                    // Search is eventually consistent: an empty page right after a write
                    // does not prove the write never happened.
                    None => Reconciliation::Unknown(
                        "no object carries the client reference yet; Stripe search can lag up \
                         to a minute behind writes: query again, or resend with the same \
                         idempotency key"
                            .into(),
                    ),
                }
            } else {
                Reconciliation::Found(
                    body.get("id")
                        .and_then(|i| i.as_str())
                        .map(str::to_owned)
                        .or_else(|| write.operation_id.clone()),
                )
            }
        }
        404 if write.operation_id.is_some() => Reconciliation::NotFound,
        s => Reconciliation::Unknown(format!("the lookup answered {s}")),
    }
}

/// `https://api.stripe.com/v1/payment_intents` for a write to that collection (or to an
/// object or action below it), on the write's own origin (the host sends the query only
/// there).
fn collection_url(url: &str) -> Result<String, PolicyError> {
    let bad = || PolicyError::InvalidInput(format!("not an http(s) URL: {url}"));
    let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
    if !matches!(scheme, "https" | "http") {
        return Err(bad());
    }
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (host, path) = rest.split_at(split);
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let mut parts = path.trim_start_matches('/').split('/');
    match (parts.next(), parts.next()) {
        (Some("v1"), Some(collection)) if is_id(collection) => {
            Ok(format!("{scheme}://{host}/v1/{collection}"))
        }
        _ => Err(PolicyError::InvalidInput(format!(
            "no /v1/<collection> in {url}"
        ))),
    }
}

/// Stripe ids, collection names and references: letters, digits, `_` and `-`.
fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn get(url: String) -> StatusQuery {
    StatusQuery {
        method: "GET".into(),
        url,
        headers: String::new(),
        body: vec![],
    }
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(op: Option<&str>, reference: Option<&str>, key: Option<&str>) -> UncertainWrite {
        UncertainWrite {
            method: "POST".into(),
            url: "https://api.stripe.com/v1/payment_intents".into(),
            idempotency_key: key.map(str::to_owned),
            client_reference: reference.map(str::to_owned),
            operation_id: op.map(str::to_owned),
            now_ms: 0,
        }
    }

    #[test]
    fn by_operation_id_first() {
        let ReconcilePlan::Query(q) = plan(&write(Some("pi_1"), Some("ref"), Some("k"))).unwrap()
        else {
            panic!()
        };
        assert_eq!(q.url, "https://api.stripe.com/v1/payment_intents/pi_1");
    }

    #[test]
    fn on_the_write_s_own_origin() {
        let mut w = write(Some("pi_1"), None, None);
        w.url = "http://127.0.0.1:4242/v1/payment_intents".into();
        let ReconcilePlan::Query(q) = plan(&w).unwrap() else {
            panic!()
        };
        assert_eq!(q.url, "http://127.0.0.1:4242/v1/payment_intents/pi_1");
        w.url = "ftp://x/v1/a".into();
        assert!(plan(&w).is_err());
    }

    #[test]
    fn by_client_reference_through_search() {
        let ReconcilePlan::Query(q) = plan(&write(None, Some("act-42"), None)).unwrap() else {
            panic!()
        };
        assert_eq!(
            q.url,
            "https://api.stripe.com/v1/payment_intents/search?query=metadata%5B%27client_reference%27%5D%3A%27act-42%27"
        );
    }

    #[test]
    fn else_resend_with_the_same_key() {
        assert_eq!(
            plan(&write(None, None, Some("k"))).unwrap(),
            ReconcilePlan::ResendSameKey
        );
        assert!(matches!(
            plan(&write(None, None, None)).unwrap(),
            ReconcilePlan::Unsupported(_)
        ));
    }

    #[test]
    fn a_reference_that_could_inject_a_query_is_not_used() {
        assert!(matches!(
            plan(&write(None, Some("x' OR '1"), None)).unwrap(),
            ReconcilePlan::Unsupported(_)
        ));
    }

    #[test]
    fn reads_search_results() {
        let w = write(None, Some("r"), None);
        let resp = |status, body: &str| Response {
            status,
            headers: String::new(),
            body: body.as_bytes().to_vec(),
        };
        assert_eq!(
            read(&w, &resp(200, r#"{"data":[{"id":"pi_9"}]}"#)),
            Reconciliation::Found(Some("pi_9".into()))
        );
        assert!(matches!(
            read(&w, &resp(200, r#"{"data":[]}"#)),
            Reconciliation::Unknown(_)
        ));
        let by_id = write(Some("pi_1"), None, None);
        assert_eq!(
            read(&by_id, &resp(404, r#"{"error":{}}"#)),
            Reconciliation::NotFound
        );
    }
}

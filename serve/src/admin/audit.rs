//! `GET /audit/verify`: verifies the host's audit log as `sluice audit verify` does — the
//! hash chain, every checkpoint's signature with the public half of the host's key, the
//! configured witness — without copying the log or the key anywhere
//! ([`sluice::Sluice::verify_audit`]). `?expect_key=sha256:<hex>` pins the key, as
//! `--expect-key` does.
//!
//! - ok (200): `{"result": "ok", "records", "checkpoints", "first_seq", "last_seq",
//!   "pruned_before", "unsigned_tail", "witnessed", "witness_behind", "key", "log",
//!   "witness"}`; the log is live, so records after its last checkpoint are counted in
//!   `unsigned_tail` rather than refused;
//! - failed (409): `{"result": "failed", "error": {"message"}, "key", "log", "witness"}`:
//!   the log (or its witness) was altered, cut, or signed by another key than the pinned
//!   one; the message names the record;
//! - unreadable (500): the usual error, naming the file.

use hyper::Response;
use serde_json::json;
use sluice::audit::{Fingerprint, VerifyError};

use super::text::query;
use super::{error_reply, json_reply};
use crate::Shared;
use crate::reply::Body;

/// Verifies the audit log.
pub(crate) fn verify(shared: &Shared, q: Option<&str>) -> Response<Body> {
    let expect_key = match query(q, &["expect_key"]) {
        Ok(pairs) => match pairs.last() {
            None => None,
            Some((_, v)) => match v.parse::<Fingerprint>() {
                Ok(k) => Some(k),
                Err(e) => return error_reply(400, format!("expect_key: {e}")),
            },
        },
        Err(e) => return error_reply(400, e),
    };
    let log = shared.sluice.audit();
    let key = Fingerprint::of(&log.verifying_key()).to_string();
    let files = (
        log.path().display().to_string(),
        log.witness().map(|w| w.display().to_string()),
    );
    match shared.sluice.verify_audit(expect_key) {
        Ok(report) => json_reply(
            200,
            &json!({
                "result": "ok",
                "records": report.records,
                "checkpoints": report.checkpoints,
                "first_seq": report.first_seq,
                "last_seq": report.last_seq,
                "pruned_before": report.pruned_before,
                "unsigned_tail": report.unsigned_tail,
                "witnessed": report.witnessed,
                "witness_behind": report.witness_behind,
                "key": report.key.to_string(),
                "log": files.0,
                "witness": files.1,
            }),
        ),
        Err(e @ (VerifyError::Tampered(_) | VerifyError::UnexpectedKey { .. })) => json_reply(
            409,
            &json!({
                "result": "failed",
                "error": {"message": format!(
                    "the audit log does not verify: {}",
                    sluice::printable::printable(&e.to_string())
                )},
                "key": key,
                "log": files.0,
                "witness": files.1,
            }),
        ),
        Err(e) => error_reply(
            500,
            format!(
                "the audit log could not be verified: {}",
                sluice::printable::printable(&e.to_string())
            ),
        ),
    }
}

//! SigV4 checked against AWS's published test suite, both ways: the host's signer makes each
//! case's published signature, and the fake's checker — written apart from it — accepts each
//! published signed request and refuses it once anything signed is changed.

use std::time::Duration;

use sluice::credentials::{AwsKeys, signature};
use sluice_fake_provider::sigv4::{Arrived, AwsAccount};
use sluice_tests::sigv4_suite::{Vector, Written, vectors};

/// The cases the host signs as it signs every request: normalised paths, no
/// `x-amz-content-sha256`, a session token signed with the rest.
fn signed_as_the_host_signs(v: &Vector) -> bool {
    v.normalize && !v.sign_body && !v.omit_session_token
}

#[test]
fn the_host_makes_the_published_signatures() {
    let mut checked = Vec::new();
    let mut skipped = Vec::new();
    for v in vectors() {
        if !signed_as_the_host_signs(&v) {
            skipped.push(format!("{}: signed with other settings", v.name));
            continue;
        }
        let host = v.request.header("host").unwrap();
        let uri = format!("https://{host}{}", v.request.target);
        let as_sent = v.request.target == v.signed.target
            && v.request.target.bytes().all(|b| b.is_ascii_graphic())
            && uri.parse::<http::Uri>().is_ok();
        if !as_sent {
            // A raw space or UTF-8 in the path, or a path the suite signs decoded: the host
            // sends URLs as `url` encodes them, and signs what it sends.
            skipped.push(format!("{}: not a URI as sent", v.name));
            continue;
        }
        let keys = AwsKeys {
            access_key_id: v.access_key_id.clone(),
            secret_access_key: v.secret_access_key.clone(),
            session_token: v.token.clone(),
        };
        let headers = v
            .request
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let made = signature(
            &keys,
            (&v.region, &v.service),
            v.at,
            (&v.request.method, &uri),
            headers,
            &v.request.body,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", v.name));
        let authorization = made
            .iter()
            .find(|(n, ..)| *n == "authorization")
            .map(|(_, value, _)| value.as_str());
        assert_eq!(
            authorization,
            v.signed.header("authorization"),
            "{}: the published signature",
            v.name
        );
        checked.push(v.name);
    }
    assert!(
        checked.len() >= 25,
        "only {} cases checked: {checked:?}; skipped: {skipped:?}",
        checked.len()
    );
    eprintln!(
        "{} published cases signed alike; skipped {skipped:?}",
        checked.len()
    );
}

fn account(v: &Vector) -> AwsAccount {
    AwsAccount {
        session_token: v.token.clone(),
        service: v.service.clone(),
        ..AwsAccount::new(&v.access_key_id, &v.secret_access_key, &v.region)
    }
}

fn arrived(w: &Written) -> Arrived<'_> {
    Arrived {
        method: &w.method,
        target: &w.target,
        headers: &w.headers,
        body: &w.body,
    }
}

/// What could change on the way: each must be refused.
fn misbehaviours(w: &Written) -> Vec<(&'static str, Written)> {
    let mut out = Vec::new();
    let mut body = w.clone();
    body.body.push(b'x');
    out.push(("a byte added to the body", body));
    let mut path = w.clone();
    path.target.insert_str(1, "other/");
    out.push(("another path", path));
    let mut query = w.clone();
    query.target.push_str(if w.target.contains('?') {
        "&a=1"
    } else {
        "?a=1"
    });
    out.push(("a query parameter added", query));
    let mut host = w.clone();
    for (n, v) in &mut host.headers {
        if n.eq_ignore_ascii_case("host") {
            v.insert(0, 'x');
        }
    }
    out.push(("another host", host));
    let mut method = w.clone();
    method.method = if w.method == "GET" { "POST" } else { "GET" }.to_owned();
    out.push(("another method", method));
    let mut unsigned = w.clone();
    unsigned
        .headers
        .retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
    out.push(("no signature", unsigned));
    out
}

#[test]
fn the_fakes_checker_accepts_the_published_requests_and_refuses_them_changed() {
    let mut checked = 0;
    for v in vectors().into_iter().filter(|v| v.normalize) {
        let account = account(&v);
        account
            .check(&arrived(&v.signed), v.at)
            .unwrap_or_else(|r| panic!("{}: {} {}", v.name, r.kind, r.message));
        for (what, changed) in misbehaviours(&v.signed) {
            let refused = account.check(&arrived(&changed), v.at);
            assert!(refused.is_err(), "{}: {what} was accepted", v.name);
        }
        let late = v.at + Duration::from_secs(301);
        let expired = account.check(&arrived(&v.signed), late).unwrap_err();
        assert!(
            expired.message.starts_with("Signature expired"),
            "{}: {expired:?}",
            v.name
        );
        let other_secret = AwsAccount {
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEZ".into(),
            ..account.clone()
        };
        let e = other_secret.check(&arrived(&v.signed), v.at).unwrap_err();
        assert_eq!(e.kind, "InvalidSignatureException", "{}", v.name);
        let other_region = AwsAccount {
            region: "eu-west-1".into(),
            ..account
        };
        assert!(other_region.check(&arrived(&v.signed), v.at).is_err());
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} cases checked");
    eprintln!("{checked} published signed requests accepted, each refused when changed");
}

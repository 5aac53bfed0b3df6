//! Who is signed in to the console, and whether a form was sent by the console itself.
//!
//! An operator signs in with a token: the admin token (as `admin`) or one of the
//! `[serve.admin.operators]`, whose name is then who decides. The console answers with a
//! session cookie — random, `HttpOnly` (no script reads it), `SameSite=Strict` (no other
//! site's page sends it), `Path=/`, with an expiry — and keeps sessions in memory only: a
//! restart signs everyone out, and no session is ever written anywhere.
//!
//! Every form the console serves carries the session's CSRF token, checked here on each
//! POST; and each POST, the sign-in's too, must come from the console's own origin
//! (`Sec-Fetch-Site`, `Origin`), so another site's page can neither submit a decision nor
//! sign a browser in under its own token. The token a person typed is never kept, logged
//! or shown: only its digest is compared.

use std::collections::HashMap;
use std::sync::Mutex;

use hyper::HeaderMap;
use hyper::header::{COOKIE, HOST, ORIGIN};

use crate::agents::digest;

/// The session cookie's name.
pub(crate) const COOKIE_NAME: &str = "sluice_console";

/// How long a session lasts: eight hours, a working day.
pub(crate) const SESSION_MS: i64 = 8 * 60 * 60 * 1000;

/// The name the admin token signs in as.
pub(crate) const ADMIN_OPERATOR: &str = "admin";

/// A signed-in operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Session {
    /// Who: the name a decision records.
    pub operator: String,
    /// The token every form of this session carries.
    pub csrf: String,
    /// When it ends (wall ms).
    pub expires_ms: i64,
}

/// The operators' token digests, and the sessions signed in.
#[derive(Debug)]
pub(crate) struct Sessions {
    operators: Vec<([u8; 32], String)>,
    /// By the digest of the session's cookie value.
    live: Mutex<HashMap<[u8; 32], Session>>,
}

/// Why a POST was refused before its form was read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Forged {
    /// The browser says the request comes from another site.
    #[error(
        "the request comes from another site (Sec-Fetch-Site: {0}): use the console's own page"
    )]
    CrossSite(String),
    /// The `Origin` is not the console's.
    #[error("the request's origin `{0}` is not the console's: use the console's own page")]
    Origin(String),
    /// The form's CSRF token is missing or not the session's.
    #[error(
        "the form is stale or not the console's (its CSRF token does not match): reload the page and try again"
    )]
    Token,
}

/// 32 random bytes, hex.
fn random_hex() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equal strings, compared in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

impl Sessions {
    /// Sessions for the admin token (signing in as `admin`) and `operators` (name, token
    /// digest).
    pub(crate) fn new(admin: [u8; 32], operators: Vec<(String, [u8; 32])>) -> Self {
        let mut all = vec![(admin, ADMIN_OPERATOR.to_owned())];
        all.extend(operators.into_iter().map(|(name, d)| (d, name)));
        Self {
            operators: all,
            live: Mutex::default(),
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Session>> {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Signs in with `token` at `now_ms`: the cookie's value and the session, or `None`
    /// for a token no operator has. An operator's own token wins over the admin token when
    /// both are the same.
    pub(crate) fn sign_in(&self, token: &str, now_ms: i64) -> Option<(String, Session)> {
        let given = digest(token);
        let operator = self
            .operators
            .iter()
            .rev()
            .find(|(d, _)| *d == given)
            .map(|(_, name)| name.clone())?;
        let id = random_hex().ok()?;
        let session = Session {
            operator,
            csrf: random_hex().ok()?,
            expires_ms: now_ms.saturating_add(SESSION_MS),
        };
        let mut live = self.live();
        live.retain(|_, s| s.expires_ms > now_ms);
        live.insert(digest(&id), session.clone());
        Some((id, session))
    }

    /// The session the request's cookie names, if it is live at `now_ms`.
    pub(crate) fn of(&self, headers: &HeaderMap, now_ms: i64) -> Option<Session> {
        let id = cookie(headers, COOKIE_NAME)?;
        let key = digest(&id);
        let mut live = self.live();
        match live.get(&key) {
            Some(s) if s.expires_ms > now_ms => Some(s.clone()),
            Some(_) => {
                live.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Ends the session the request's cookie names.
    pub(crate) fn sign_out(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, COOKIE_NAME) {
            self.live().remove(&digest(&id));
        }
    }
}

/// The `Set-Cookie` value for a session `id` (an empty id with no lifetime: signed out),
/// `Secure` when the console's `public_origin` is https (the browser then never sends the
/// session over plain HTTP).
pub(crate) fn set_cookie(id: &str, lifetime_ms: i64, public_origin: Option<&str>) -> String {
    let secure = public_origin.is_some_and(|o| {
        o.get(..8)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
    });
    format!(
        "{COOKIE_NAME}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
        lifetime_ms / 1000,
        if secure { "; Secure" } else { "" }
    )
}

/// The value of cookie `name` in the request.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
}

/// Whether a POST comes from the console's own origin: a browser's `Sec-Fetch-Site` must be
/// `same-origin` (or `none`: typed by the person), and an `Origin`, when sent, must be
/// `public` (the configured public origin, behind a proxy) or else this listener's
/// (`http://` and the request's `Host`).
///
/// # Errors
/// [`Forged`] naming what gave the request away.
pub(crate) fn same_origin(headers: &HeaderMap, public: Option<&str>) -> Result<(), Forged> {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site")
        && site != "same-origin"
        && site != "none"
    {
        return Err(Forged::CrossSite(
            sluice::printable::printable_cut(site, 50).into(),
        ));
    }
    if let Some(origin) = text(ORIGIN.as_str()) {
        let host = text(HOST.as_str()).unwrap_or("");
        let ours = match public {
            Some(p) => origin.eq_ignore_ascii_case(p),
            None => !host.is_empty() && origin == format!("http://{host}"),
        };
        if !ours {
            return Err(Forged::Origin(
                sluice::printable::printable_cut(origin, 100).into(),
            ));
        }
    }
    Ok(())
}

/// Whether the form's `csrf` field is the session's.
///
/// # Errors
/// [`Forged::Token`].
pub(crate) fn check_csrf(session: &Session, given: Option<&str>) -> Result<(), Forged> {
    match given {
        Some(token) if same(token, &session.csrf) => Ok(()),
        _ => Err(Forged::Token),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(*n, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn a_token_signs_in_as_its_operator_and_the_cookie_finds_the_session_until_it_expires() {
        let sessions = Sessions::new(digest("admin-t"), vec![("ops@x".into(), digest("ops-t"))]);
        assert!(sessions.sign_in("wrong", 0).is_none());
        let (id, s) = sessions.sign_in("ops-t", 1000).unwrap();
        assert_eq!(s.operator, "ops@x");
        assert_eq!((id.len(), s.csrf.len()), (64, 64));
        let h = headers(&[("cookie", &format!("a=b; {COOKIE_NAME}={id}"))]);
        assert_eq!(sessions.of(&h, 2000), Some(s.clone()));
        assert_eq!(sessions.of(&h, 1000 + SESSION_MS), None, "expired");
        let (id, s) = sessions.sign_in("admin-t", 0).unwrap();
        assert_eq!(s.operator, ADMIN_OPERATOR);
        let h = headers(&[("cookie", &format!("{COOKIE_NAME}={id}"))]);
        sessions.sign_out(&h);
        assert_eq!(sessions.of(&h, 1), None, "signed out");
    }

    #[test]
    fn a_post_from_another_origin_or_with_another_csrf_token_is_refused() {
        let ok = headers(&[
            ("host", "127.0.0.1:8701"),
            ("origin", "http://127.0.0.1:8701"),
        ]);
        assert_eq!(same_origin(&ok, None), Ok(()));
        assert_eq!(
            same_origin(&headers(&[]), None),
            Ok(()),
            "no browser headers: a CLI"
        );
        let evil = headers(&[
            ("host", "127.0.0.1:8701"),
            ("origin", "http://evil.example"),
        ]);
        assert!(matches!(same_origin(&evil, None), Err(Forged::Origin(_))));
        let null = headers(&[("host", "127.0.0.1:8701"), ("origin", "null")]);
        assert!(matches!(same_origin(&null, None), Err(Forged::Origin(_))));
        let cross = headers(&[("sec-fetch-site", "cross-site")]);
        assert!(matches!(
            same_origin(&cross, None),
            Err(Forged::CrossSite(_))
        ));
        // Issue 27: behind the TLS proxy docs/security.md recommends, the browser's origin is the
        // proxy's, and the listener's own `http://` origin is no longer the console's.
        let proxied = headers(&[
            ("host", "ops.example.com"),
            ("origin", "https://ops.example.com"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert!(same_origin(&proxied, None).is_err());
        let public = Some("https://ops.example.com");
        assert_eq!(same_origin(&proxied, public), Ok(()));
        assert!(matches!(same_origin(&evil, public), Err(Forged::Origin(_))));
        assert!(matches!(same_origin(&ok, public), Err(Forged::Origin(_))));
        let s = Session {
            operator: "o".into(),
            csrf: "abc".into(),
            expires_ms: 1,
        };
        assert_eq!(check_csrf(&s, Some("abc")), Ok(()));
        assert_eq!(check_csrf(&s, Some("abd")), Err(Forged::Token));
        assert_eq!(check_csrf(&s, None), Err(Forged::Token));
    }

    #[test]
    fn the_cookie_is_http_only_same_site_strict_and_expires() {
        let c = set_cookie("id", SESSION_MS, None);
        for part in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=28800"] {
            assert!(c.contains(part), "{c}");
        }
        assert!(
            !c.contains("Secure"),
            "served over plain HTTP on loopback: {c}"
        );
        for origin in ["https://console.example", "HTTPS://console.example"] {
            let c = set_cookie("id", SESSION_MS, Some(origin));
            assert!(c.ends_with("; Secure"), "{origin}: {c}");
        }
        let c = set_cookie("id", SESSION_MS, Some("http://10.0.0.5:8080"));
        assert!(!c.contains("Secure"), "{c}");
    }
}

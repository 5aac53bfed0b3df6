//! The console's HTML: one layout, its stylesheet and script inline (no CDN, no build step),
//! and answers that a browser may not frame, cache or feed to another origin.
//!
//! Everything from the journal or the configuration is escaped here ([`escape`]) before it
//! reaches the page; the page's script writes what it polls as text nodes, never as markup.
//! The content security policy allows only this response's own inline style and script
//! (by nonce) and requests to this origin, so a name or a note that slipped through as
//! markup still could not run.

use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, LOCATION, SET_COOKIE};
use hyper::{Response, StatusCode};

use super::session::Session;
use crate::reply::{Body, full};

/// The stylesheet, inline in every page.
const STYLE: &str = include_str!("page.css");
/// The live page's script: polls `/console/data` and draws the tables and plots.
const SCRIPT: &str = include_str!("page.js");

/// `text` with `&`, `<`, `>`, `"` and `'` as entities: safe in an element and in a quoted
/// attribute.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A random nonce for one response's inline style and script.
fn nonce() -> String {
    let mut bytes = [0u8; 16];
    // Without randomness the page still works: only the policy's nonce is then guessable,
    // and the escaping above still holds.
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A page: `title`, the signed-in bar when `session` is given, and `main` (HTML, already
/// escaped); `live` adds the script that polls and draws.
pub(crate) fn page(
    status: u16,
    title: &str,
    session: Option<&Session>,
    main: &str,
    live: bool,
) -> Response<Body> {
    let nonce = nonce();
    let bar = match session {
        Some(s) => format!(
            r#"<form method="post" action="/console/sign-out" class="signout">
<span>signed in as <b id="operator">{who}</b></span>
<input type="hidden" name="csrf" value="{csrf}">
<button type="submit">Sign out</button></form>"#,
            who = escape(&s.operator),
            csrf = escape(&s.csrf),
        ),
        None => String::new(),
    };
    let script = if live {
        format!(r#"<script nonce="{nonce}">{SCRIPT}</script>"#)
    } else {
        String::new()
    };
    let html = format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · sluice console</title>
<style nonce="{nonce}">{STYLE}</style></head>
<body><header><a href="/console" class="brand">sluice console</a>{bar}</header>
<main>{main}</main>{script}</body></html>"#,
        title = escape(title),
    );
    let mut r = Response::new(full(html));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let csp = format!(
        "default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; \
         connect-src 'self'; img-src 'self' data:; form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'"
    );
    let headers = r.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(v) = HeaderValue::from_str(&csp) {
        headers.insert("content-security-policy", v);
    }
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    // Not `no-referrer`: under it a browser sends its forms with `Origin: null`, which the
    // forged-form check refuses. `same-origin` tells other sites nothing.
    headers.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    r
}

/// The sign-in page, with `message` (plain text) above the form when given.
pub(crate) fn sign_in(status: u16, message: Option<&str>) -> Response<Body> {
    let message = message
        .map(|m| format!(r#"<p class="error" id="message">{}</p>"#, escape(m)))
        .unwrap_or_default();
    let main = format!(
        r#"<section class="signin"><h1>Sign in</h1>{message}
<p>Sign in with your operator token (<code>[serve.admin.operators]</code>) or the admin token.
Your decisions are recorded under the operator's name.</p>
<form method="post" action="/console/sign-in">
<label>Token <input type="password" name="token" id="token" autocomplete="current-password" required></label>
<button type="submit" id="sign-in">Sign in</button></form></section>"#
    );
    page(status, "Sign in", None, &main, false)
}

/// A `303 See Other` to `location`, setting `cookie` when given.
pub(crate) fn see_other(location: &'static str, cookie: Option<String>) -> Response<Body> {
    let mut r = Response::new(full(""));
    *r.status_mut() = StatusCode::SEE_OTHER;
    r.headers_mut()
        .insert(LOCATION, HeaderValue::from_static(location));
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(c) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        r.headers_mut().insert(SET_COOKIE, c);
    }
    r
}

/// A page that says what went wrong, with a way back.
pub(crate) fn problem(status: u16, session: Option<&Session>, message: &str) -> Response<Body> {
    let main = format!(
        r#"<section><h1>Not done</h1><p class="error" id="message">{}</p>
<p><a href="/console">Back to the console</a></p></section>"#,
        escape(message)
    );
    page(status, "Not done", session, &main, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_is_escaped_for_elements_and_attributes() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }
}

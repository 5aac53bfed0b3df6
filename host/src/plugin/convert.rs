//! The contract's types ([`crate::contract`]) to and from the types generated from
//! `wit/policy.wit`, at the plugin's edge.
//!
//! Each generator — wasmtime's `bindgen!` for the host, wit-bindgen for a plugin's native
//! build — turns the same WIT into types of the same shape: the same records with the same
//! fields, the same cases. [`contract_conversions!`] writes the conversions for one such set
//! from the list of types below, so no case is mapped by hand (where a swapped arm would
//! compile). Whole, it serves the SDK's types (`plugin/native.rs`, with the
//! `native-plugins` feature); its parts serve the frozen 0.4.0 (`v4.rs`), 0.3.0 (`v3.rs`) and
//! 0.2.0 (`v2.rs`).
//! The 0.5.0 bindings here borrow the arguments of a call, so they use its parts for what a plugin
//! answers with, and the `lend_*` functions below for what it is handed. The frozen 0.1.0
//! differs in shape and has its own conversions in `v1.rs`.

use crate::contract::{MediaPart, Request, Response, UncertainWrite, WireOutcome};

/// `From` both ways between every type of `crate::contract` and the type of the same name in
/// the module `$w` (`Outcome as WireOutcome`: the WIT's name, then the contract's), which must
/// mirror `wit/policy.wit` case for case and field for field.
macro_rules! contract_conversions {
    ($w:ident) => {
        $crate::plugin::convert::contract_conversions!(@common $w);
        $crate::plugin::convert::contract_conversions!(@current $w);
        $crate::plugin::convert::contract_conversions!(@request $w);
    };
    // What 0.4.0 changed in the types a plugin answers with, the description's refill, and
    // what 0.5.0 changed, Google's and AWS's error shapes.
    (@current $w:ident) => {
        $crate::plugin::convert::contract_conversions!(@since_v3 $w);
        $crate::plugin::convert::contract_conversions!(@shapes $w {
            Openai => OpenAi, Anthropic => Anthropic, Github => GitHub, Stripe => Stripe,
            Google => Google, Aws => Aws
        });
        $crate::plugin::convert::contract_conversions!(@cases $w Refill { Window, Continuous });
        $crate::plugin::convert::contract_conversions!(@record $w Description {
            name, version, provider, hosts, routes, read_routes, error_shape: opt, refill: opt
        });
    };
    // What 0.3.0 changed in the types a plugin answers with (but the description, which
    // changed again in 0.4.0).
    (@since_v3 $w:ident) => {
        $crate::plugin::convert::contract_conversions!(@record $w Classification {
            verdict, retry_after_ms, error_code, should_retry, scope: opt
        });
        $crate::plugin::convert::contract_conversions!(@cases $w LimitedScope { Credential, Named(x) });
    };
    // The error shapes of 0.2.0 to 0.4.0: the first four, which a frozen plugin may name
    // (the host never hands one back to it).
    (@frozen_shapes $w:ident) => {
        impl From<$w::ErrorShape> for $crate::contract::ErrorShape {
            fn from(v: $w::ErrorShape) -> Self {
                use $w::ErrorShape as W;
                $crate::plugin::convert::contract_conversions!(@shape_arms v, W => Self {
                    Openai => OpenAi, Anthropic => Anthropic, Github => GitHub, Stripe => Stripe
                })
            }
        }
    };
    // Error shapes both ways, each case as `wit => contract`: the generators write `openai`
    // and `github` as `Openai` and `Github`.
    (@shapes $w:ident { $($wit:ident => $host:ident),+ $(,)? }) => {
        impl From<$w::ErrorShape> for $crate::contract::ErrorShape {
            fn from(v: $w::ErrorShape) -> Self {
                use $w::ErrorShape as W;
                $crate::plugin::convert::contract_conversions!(@shape_arms v, W => Self { $($wit => $host),+ })
            }
        }
        impl From<$crate::contract::ErrorShape> for $w::ErrorShape {
            fn from(v: $crate::contract::ErrorShape) -> Self {
                use $crate::contract::ErrorShape as C;
                $crate::plugin::convert::contract_conversions!(@shape_arms v, C => Self { $($host => $wit),+ })
            }
        }
    };
    (@shape_arms $v:ident, $from:ident => $to:ident { $($a:ident => $b:ident),+ }) => {
        match $v {
            $($from::$a => $to::$b,)+
        }
    };
    // The request, owned.
    (@request $w:ident) => {
        impl From<$w::Request> for $crate::contract::Request {
            fn from(v: $w::Request) -> Self {
                Self {
                    method: v.method,
                    url: v.url,
                    class: v.class.into(),
                    headers: v.headers,
                    body: v.body.into(),
                    digest: v.digest.into(),
                    now_ms: v.now_ms,
                }
            }
        }
        /// The request as a plugin is shown it: the body's prefix, and its digest.
        impl From<&$crate::contract::Request> for $w::Request {
            fn from(v: &$crate::contract::Request) -> Self {
                Self {
                    method: v.method.clone(),
                    url: v.url.clone(),
                    class: v.class.into(),
                    headers: v.headers.clone(),
                    body: v.body_prefix().to_vec(),
                    digest: v.digest.clone().into(),
                    now_ms: v.now_ms,
                }
            }
        }
    };
    // Every type whose shape no contract version since 0.1.0 has changed: all but the
    // request (0.3.0 added its digest), the classification (its scope) and the description
    // (its read routes and error shape).
    (@common $w:ident) => {
        $crate::plugin::convert::contract_conversions!(@plain $w);
        $crate::plugin::convert::contract_conversions!(@record $w Response { status, headers, body });
        $crate::plugin::convert::contract_conversions!(@cases $w Outcome as WireOutcome { Response(x), Transport(x) });
        $crate::plugin::convert::contract_conversions!(@record $w UncertainWrite {
            method, url, idempotency_key, client_reference, operation_id, now_ms
        });
    };
    // The common types a host's bindings own in either direction: all but the three a
    // plugin is handed (the response, the outcome, the uncertain write), which bindings
    // that borrow their arguments lend instead (`convert.rs`'s own, for 0.5.0).
    (@plain $w:ident) => {
        $crate::plugin::convert::contract_conversions!(@cases $w RequestClass { Read, IdempotentWrite, UncertainWrite });
        $crate::plugin::convert::contract_conversions!(@cases $w TransportFailure {
            ConnectFailed, TimeoutBeforeSend, TimeoutAfterSend, ResetAfterSend
        });
        $crate::plugin::convert::contract_conversions!(@cases $w ResponsePart { Complete, StreamStart, StreamEnd });
        $crate::plugin::convert::contract_conversions!(@cases $w Verdict {
            Success, RateLimited, QuotaExhausted, Overloaded, Transient, Conflict, ClientError,
            AuthError, OutcomeUnknown
        });
        $crate::plugin::convert::contract_conversions!(@cases $w Dimension as ReportedDimension {
            Requests, Tokens, InputTokens, OutputTokens, Concurrency, Other(x)
        });
        $crate::plugin::convert::contract_conversions!(@record $w Observation {
            scope, dimension, limit, remaining, used, reset_after_ms, window_ms, source
        });
        $crate::plugin::convert::contract_conversions!(@record $w Cost { dimension, amount });
        $crate::plugin::convert::contract_conversions!(@cases $w PriorityClass { Interactive, Standard, Background });
        $crate::plugin::convert::contract_conversions!(@record $w RequestPlan {
            class, tenant, deadline_ms, cost: list, scopes
        });
        $crate::plugin::convert::contract_conversions!(@record $w Reading {
            classification, observations: list, usage: list
        });
        $crate::plugin::convert::contract_conversions!(@record $w StatusQuery { method, url, headers, body });
        $crate::plugin::convert::contract_conversions!(@cases $w ReconcilePlan {
            Query(x), ResendSameKey, Unsupported(x)
        });
        $crate::plugin::convert::contract_conversions!(@cases $w Reconciliation { Found(x), NotFound, Unknown(x) });
        $crate::plugin::convert::contract_conversions!(@cases $w PolicyError {
            Unsupported(x), InvalidInput(x), Other(x)
        });
    };
    // An enum or a variant: each case by name, its payload (if any) converted.
    (@cases $w:ident $name:ident { $($cases:tt)+ }) => {
        $crate::plugin::convert::contract_conversions!(@cases $w $name as $name { $($cases)+ });
    };
    // The same, for a contract type whose name says more than the WIT's (`outcome` is the
    // contract's `WireOutcome`).
    (@cases $w:ident $name:ident as $host:ident { $($case:ident $(($x:ident))?),+ $(,)? }) => {
        impl From<$w::$name> for $crate::contract::$host {
            fn from(v: $w::$name) -> Self {
                match v {
                    $($w::$name::$case $(($x))? => Self::$case $(($x.into()))?,)+
                }
            }
        }
        impl From<$crate::contract::$host> for $w::$name {
            fn from(v: $crate::contract::$host) -> Self {
                match v {
                    $($crate::contract::$host::$case $(($x))? => Self::$case $(($x.into()))?,)+
                }
            }
        }
    };
    // A record: each field by name, converted (element by element for a `list`).
    (@record $w:ident $name:ident { $($field:ident $(: $list:ident)?),+ $(,)? }) => {
        impl From<$w::$name> for $crate::contract::$name {
            fn from(v: $w::$name) -> Self {
                Self { $($field: $crate::plugin::convert::contract_conversions!(@field v.$field $(, $list)?),)+ }
            }
        }
        impl From<$crate::contract::$name> for $w::$name {
            fn from(v: $crate::contract::$name) -> Self {
                Self { $($field: $crate::plugin::convert::contract_conversions!(@field v.$field $(, $list)?),)+ }
            }
        }
    };
    (@field $e:expr) => {
        $e.into()
    };
    (@field $e:expr, list) => {
        $e.into_iter().map(Into::into).collect()
    };
    (@field $e:expr, opt) => {
        $e.map(Into::into)
    };
}
pub(crate) use contract_conversions;

use super::bindings::sluice::policy0_5_0::types as wit;

// The 0.5.0 bindings borrow what the host hands a plugin (`ownership: Borrowing` in
// `bindings.rs`): the request, the outcome and the uncertain write are lent from the
// host's own values and copied once, into the plugin's memory, with nothing made in
// between. What a plugin answers with is owned, converted as every version's is.
contract_conversions!(@plain wit);
contract_conversions!(@current wit);
contract_conversions!(@cases wit MediaKind { Image, Document, Audio, Other });

/// Calls `f` with the 0.5.0 bindings' request for `req`, lent from it: its body's prefix
/// (never the whole body) and its digest. The digest's fields and media parts are gathered
/// as borrowed lists, one allocation each when there are any.
pub(super) fn lend_request<R>(req: &Request, f: impl FnOnce(wit::Request<'_>) -> R) -> R {
    let d = &req.digest;
    let fields: Vec<(&str, &str)> = d
        .fields
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let media: Vec<wit::MediaPart<'_>> = d.media.iter().map(lend_media).collect();
    f(wit::Request {
        method: &req.method,
        url: &req.url,
        class: req.class.into(),
        headers: &req.headers,
        body: req.body_prefix(),
        digest: wit::BodyDigest {
            length: d.length,
            json: d.json,
            text_chars: d.text_chars,
            media: &media,
            media_omitted: d.media_omitted,
            fields: &fields,
        },
        now_ms: req.now_ms,
    })
}

fn lend_media(m: &MediaPart) -> wit::MediaPart<'_> {
    wit::MediaPart {
        kind: m.kind.into(),
        media_type: m.media_type.as_deref(),
        bytes: m.bytes,
        width: m.width,
        height: m.height,
        pages: m.pages,
        detail: m.detail.as_deref(),
        by_url: m.by_url,
    }
}

/// The 0.5.0 bindings' response, lent from `r`.
pub(super) fn lend_response(r: &Response) -> wit::Response<'_> {
    wit::Response {
        status: r.status,
        headers: &r.headers,
        body: &r.body,
    }
}

/// The 0.5.0 bindings' outcome, lent from `o`.
pub(super) fn lend_outcome(o: &WireOutcome) -> wit::Outcome<'_> {
    match o {
        WireOutcome::Response(r) => wit::Outcome::Response(lend_response(r)),
        WireOutcome::Transport(t) => wit::Outcome::Transport((*t).into()),
    }
}

/// The 0.5.0 bindings' uncertain write, lent from `w`.
pub(super) fn lend_write(w: &UncertainWrite) -> wit::UncertainWrite<'_> {
    wit::UncertainWrite {
        method: &w.method,
        url: &w.url,
        idempotency_key: w.idempotency_key.as_deref(),
        client_reference: w.client_reference.as_deref(),
        operation_id: w.operation_id.as_deref(),
        now_ms: w.now_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::wit;
    use crate::contract::*;

    fn round_trip<C, W>(value: C)
    where
        C: Clone + PartialEq + std::fmt::Debug + From<W>,
        W: From<C>,
    {
        assert_eq!(C::from(W::from(value.clone())), value);
    }

    fn request() -> Request {
        Request::new(
            "POST",
            "https://api.example.com/v1/things?x=1",
            RequestClass::IdempotentWrite,
            "content-type:application/json\n".into(),
            br#"{"model":"m","image":"data:image/png;base64,iVBORw0KGgo="}"#.to_vec(),
            -5,
        )
    }

    fn round_trip_request(r: Request) {
        assert_eq!(super::lend_request(&r, owned_request), r);
    }

    /// What a plugin is lent, owned again: the other half of each round trip below.
    fn owned_request(w: wit::Request<'_>) -> Request {
        let d = w.digest;
        Request {
            method: w.method.into(),
            url: w.url.into(),
            class: w.class.into(),
            headers: w.headers.into(),
            body: w.body.to_vec().into(),
            digest: BodyDigest {
                length: d.length,
                json: d.json,
                text_chars: d.text_chars,
                media: d.media.iter().map(owned_media).collect(),
                media_omitted: d.media_omitted,
                fields: d
                    .fields
                    .iter()
                    .map(|(n, v)| ((*n).into(), (*v).into()))
                    .collect(),
            },
            now_ms: w.now_ms,
        }
    }

    fn owned_media(m: &wit::MediaPart<'_>) -> MediaPart {
        MediaPart {
            kind: m.kind.into(),
            media_type: m.media_type.map(Into::into),
            bytes: m.bytes,
            width: m.width,
            height: m.height,
            pages: m.pages,
            detail: m.detail.map(Into::into),
            by_url: m.by_url,
        }
    }

    fn owned_outcome(o: wit::Outcome<'_>) -> WireOutcome {
        match o {
            wit::Outcome::Response(r) => WireOutcome::Response(Response {
                status: r.status,
                headers: r.headers.into(),
                body: r.body.to_vec(),
            }),
            wit::Outcome::Transport(t) => WireOutcome::Transport(t.into()),
        }
    }

    fn owned_write(w: wit::UncertainWrite<'_>) -> UncertainWrite {
        UncertainWrite {
            method: w.method.into(),
            url: w.url.into(),
            idempotency_key: w.idempotency_key.map(Into::into),
            client_reference: w.client_reference.map(Into::into),
            operation_id: w.operation_id.map(Into::into),
            now_ms: w.now_ms,
        }
    }

    #[test]
    fn media_parts_and_digest_fields_are_lent_whole() {
        let mut r = request();
        r.digest.media.push(MediaPart {
            kind: MediaKind::Image,
            media_type: Some("image/png".into()),
            bytes: Some(1_024),
            width: Some(512),
            height: Some(256),
            pages: None,
            detail: Some("low".into()),
            by_url: false,
        });
        r.digest.media.push(MediaPart {
            kind: MediaKind::Document,
            media_type: None,
            bytes: None,
            width: None,
            height: None,
            pages: Some(3),
            detail: None,
            by_url: true,
        });
        r.digest.media_omitted = 2;
        assert!(!r.digest.fields.is_empty());
        round_trip_request(r);
    }

    #[test]
    fn a_plugin_is_shown_the_prefix_of_a_long_body_and_the_digest_of_all_of_it() {
        let mut long = br#"{"messages":[{"role":"user","content":""#.to_vec();
        long.resize(long.len() + (1 << 20), b'a');
        long.extend(br#""}],"model":"gpt-4o"}"#);
        let req = Request::new(
            "POST",
            "https://x/",
            RequestClass::Read,
            String::new(),
            long,
            0,
        );
        super::lend_request(&req, |shown| {
            assert_eq!(shown.body.len(), BODY_PREFIX);
            assert_eq!(shown.digest.length, req.body.len() as u64);
            assert!(
                shown
                    .digest
                    .fields
                    .iter()
                    .any(|&(n, v)| n == "model" && v == "\"gpt-4o\"")
            );
        });
    }

    fn response() -> Response {
        Response {
            status: 429,
            headers: "retry-after:3\n".into(),
            body: b"slow down".to_vec(),
        }
    }

    fn write() -> UncertainWrite {
        UncertainWrite {
            method: "POST".into(),
            url: "https://api.example.com/v1/charges".into(),
            idempotency_key: Some("k-1".into()),
            client_reference: None,
            operation_id: Some("ch_1".into()),
            now_ms: 1_795_953_600_000,
        }
    }

    #[test]
    fn every_contract_type_survives_a_trip_through_the_bindings() {
        round_trip_request(request());
        for class in [RequestClass::Read, RequestClass::UncertainWrite] {
            round_trip_request(Request { class, ..request() });
        }
        for scope in [
            LimitedScope::Credential,
            LimitedScope::Named("model:m".into()),
        ] {
            round_trip::<_, wit::LimitedScope>(scope);
        }
        let lent = |o: WireOutcome| owned_outcome(super::lend_outcome(&o));
        assert_eq!(
            lent(WireOutcome::Response(response())),
            WireOutcome::Response(response())
        );
        for t in [
            TransportFailure::ConnectFailed,
            TransportFailure::TimeoutBeforeSend,
            TransportFailure::TimeoutAfterSend,
            TransportFailure::ResetAfterSend,
        ] {
            assert_eq!(lent(WireOutcome::Transport(t)), WireOutcome::Transport(t));
        }
        for part in [
            ResponsePart::Complete,
            ResponsePart::StreamStart,
            ResponsePart::StreamEnd,
        ] {
            round_trip::<_, wit::ResponsePart>(part);
        }
        let dimensions = [
            ReportedDimension::Requests,
            ReportedDimension::Tokens,
            ReportedDimension::InputTokens,
            ReportedDimension::OutputTokens,
            ReportedDimension::Concurrency,
            ReportedDimension::Other("images".into()),
        ];
        let verdicts = [
            Verdict::Success,
            Verdict::RateLimited,
            Verdict::QuotaExhausted,
            Verdict::Overloaded,
            Verdict::Transient,
            Verdict::Conflict,
            Verdict::ClientError,
            Verdict::AuthError,
            Verdict::OutcomeUnknown,
        ];
        for (verdict, dimension) in verdicts.into_iter().zip(dimensions.iter().cycle()) {
            round_trip::<_, wit::Reading>(Reading {
                classification: Classification {
                    verdict,
                    retry_after_ms: Some(1_500),
                    error_code: Some("rate_limit_exceeded".into()),
                    should_retry: Some(false),
                    scope: None,
                },
                observations: vec![Observation {
                    scope: Some("model:gpt-4o".into()),
                    dimension: dimension.clone(),
                    limit: Some(500),
                    remaining: Some(0),
                    used: None,
                    reset_after_ms: Some(120),
                    window_ms: Some(60_000),
                    source: "x-ratelimit-limit-requests".into(),
                }],
                usage: vec![Cost {
                    dimension: dimension.clone(),
                    amount: 42,
                }],
            });
        }
        for class in [
            PriorityClass::Interactive,
            PriorityClass::Standard,
            PriorityClass::Background,
        ] {
            round_trip::<_, wit::RequestPlan>(RequestPlan {
                class,
                tenant: Some("acme".into()),
                deadline_ms: Some(7),
                cost: dimensions
                    .iter()
                    .map(|d| Cost {
                        dimension: d.clone(),
                        amount: 3,
                    })
                    .collect(),
                scopes: vec!["search".into()],
            });
        }
        assert_eq!(owned_write(super::lend_write(&write())), write());
        for plan in [
            ReconcilePlan::Query(StatusQuery {
                method: "GET".into(),
                url: "https://api.example.com/v1/charges?ref=r".into(),
                headers: "accept:application/json\n".into(),
                body: vec![],
            }),
            ReconcilePlan::ResendSameKey,
            ReconcilePlan::Unsupported("no lookup".into()),
        ] {
            round_trip::<_, wit::ReconcilePlan>(plan);
        }
        for r in [
            Reconciliation::Found(Some("ch_1".into())),
            Reconciliation::Found(None),
            Reconciliation::NotFound,
            Reconciliation::Unknown("ambiguous".into()),
        ] {
            round_trip::<_, wit::Reconciliation>(r);
        }
        round_trip::<_, wit::Description>(Description {
            name: "openai".into(),
            version: "0.2.0".into(),
            provider: "OpenAI".into(),
            hosts: vec!["api.openai.com".into()],
            routes: vec!["POST /v1/chat/completions".into()],
            read_routes: vec![],
            error_shape: None,
            refill: None,
        });
        for e in [
            PolicyError::Unsupported("a".into()),
            PolicyError::InvalidInput("b".into()),
            PolicyError::Other("c".into()),
        ] {
            round_trip::<_, wit::PolicyError>(e);
        }
    }

    #[test]
    fn each_case_lands_on_the_case_of_the_same_name() {
        assert!(matches!(
            wit::Verdict::from(Verdict::RateLimited),
            wit::Verdict::RateLimited
        ));
        assert!(matches!(
            Verdict::from(wit::Verdict::OutcomeUnknown),
            Verdict::OutcomeUnknown
        ));
        assert!(matches!(
            wit::RequestClass::from(RequestClass::IdempotentWrite),
            wit::RequestClass::IdempotentWrite
        ));
        assert!(matches!(
            super::lend_outcome(&WireOutcome::Transport(TransportFailure::TimeoutAfterSend)),
            wit::Outcome::Transport(wit::TransportFailure::TimeoutAfterSend)
        ));
        assert!(matches!(
            ReportedDimension::from(wit::Dimension::OutputTokens),
            ReportedDimension::OutputTokens
        ));
        let r = request();
        super::lend_request(&r, |w| assert_eq!((w.method, w.now_ms), ("POST", -5)));
        assert!(matches!(
            PolicyError::from(wit::PolicyError::InvalidInput("x".into())),
            PolicyError::InvalidInput(m) if m == "x"
        ));
    }
}

//! The contract's types ([`crate::contract`]) to and from the types generated from
//! `wit/policy.wit`, at the plugin's edge.
//!
//! Each generator — wasmtime's `bindgen!` for the host, wit-bindgen for a plugin's native
//! build — turns the same WIT into types of the same shape: the same records with the same
//! fields, the same cases. [`contract_conversions!`] writes the conversions for one such set
//! from the list of types below, so no case is mapped by hand (where a swapped arm would
//! compile). It serves the 0.3.0 bindings here and, with the `native-plugins` feature, the
//! SDK's types (`plugin/native.rs`). The frozen 0.1.0 differs in shape and has its own
//! conversions in `v1.rs`.

use crate::contract::Request;

/// `From` both ways between every type of `crate::contract` and the type of the same name in
/// the module `$w` (`Outcome as WireOutcome`: the WIT's name, then the contract's), which must
/// mirror `wit/policy.wit` case for case and field for field.
macro_rules! contract_conversions {
    ($w:ident) => {
        $crate::plugin::convert::contract_conversions!(@common $w);
        $crate::plugin::convert::contract_conversions!(@record $w Classification {
            verdict, retry_after_ms, error_code, should_retry, scope: opt
        });
        $crate::plugin::convert::contract_conversions!(@cases $w LimitedScope { Credential, Named(x) });
        // The generators write `openai` and `github` as `Openai` and `Github`.
        impl From<$w::ErrorShape> for $crate::contract::ErrorShape {
            fn from(v: $w::ErrorShape) -> Self {
                match v {
                    $w::ErrorShape::Openai => Self::OpenAi,
                    $w::ErrorShape::Anthropic => Self::Anthropic,
                    $w::ErrorShape::Github => Self::GitHub,
                    $w::ErrorShape::Stripe => Self::Stripe,
                }
            }
        }
        impl From<$crate::contract::ErrorShape> for $w::ErrorShape {
            fn from(v: $crate::contract::ErrorShape) -> Self {
                match v {
                    $crate::contract::ErrorShape::OpenAi => Self::Openai,
                    $crate::contract::ErrorShape::Anthropic => Self::Anthropic,
                    $crate::contract::ErrorShape::GitHub => Self::Github,
                    $crate::contract::ErrorShape::Stripe => Self::Stripe,
                }
            }
        }
        $crate::plugin::convert::contract_conversions!(@record $w Description {
            name, version, provider, hosts, routes, read_routes, error_shape: opt
        });
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
        $crate::plugin::convert::contract_conversions!(@cases $w RequestClass { Read, IdempotentWrite, UncertainWrite });
        $crate::plugin::convert::contract_conversions!(@record $w Response { status, headers, body });
        $crate::plugin::convert::contract_conversions!(@cases $w TransportFailure {
            ConnectFailed, TimeoutBeforeSend, TimeoutAfterSend, ResetAfterSend
        });
        $crate::plugin::convert::contract_conversions!(@cases $w Outcome as WireOutcome { Response(x), Transport(x) });
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
        $crate::plugin::convert::contract_conversions!(@record $w UncertainWrite {
            method, url, idempotency_key, client_reference, operation_id, now_ms
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

use super::bindings::sluice::policy0_3_0::types as wit;

contract_conversions!(wit);
// The digest's types are the SDK's (`contract::BodyDigest`): the SDK converts them to and
// from its own bindings, and these are the host's.
contract_conversions!(@cases wit MediaKind { Image, Document, Audio, Other });
contract_conversions!(@record wit MediaPart {
    kind, media_type, bytes, width, height, pages, detail, by_url
});
contract_conversions!(@record wit BodyDigest {
    length, json, text_chars, media: list, media_omitted, fields
});

/// The 0.3.0 bindings' request for `req`: its body's prefix (never the whole body) and its
/// digest.
pub(super) fn request(req: &Request) -> wit::Request {
    req.into()
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
        assert_eq!(Request::from(wit::Request::from(&r)), r);
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
        let shown = wit::Request::from(&req);
        assert_eq!(shown.body.len(), BODY_PREFIX);
        assert_eq!(shown.digest.length, req.body.len() as u64);
        assert!(
            shown
                .digest
                .fields
                .iter()
                .any(|(n, v)| n == "model" && v == "\"gpt-4o\"")
        );
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
        round_trip::<_, wit::Outcome>(WireOutcome::Response(response()));
        for t in [
            TransportFailure::ConnectFailed,
            TransportFailure::TimeoutBeforeSend,
            TransportFailure::TimeoutAfterSend,
            TransportFailure::ResetAfterSend,
        ] {
            round_trip::<_, wit::Outcome>(WireOutcome::Transport(t));
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
        round_trip::<_, wit::UncertainWrite>(write());
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
            wit::Outcome::from(WireOutcome::Transport(TransportFailure::TimeoutAfterSend)),
            wit::Outcome::Transport(wit::TransportFailure::TimeoutAfterSend)
        ));
        assert!(matches!(
            ReportedDimension::from(wit::Dimension::OutputTokens),
            ReportedDimension::OutputTokens
        ));
        let w = wit::Request::from(&request());
        assert_eq!((w.method.as_str(), w.now_ms), ("POST", -5));
        assert!(matches!(
            PolicyError::from(wit::PolicyError::InvalidInput("x".into())),
            PolicyError::InvalidInput(m) if m == "x"
        ));
    }
}

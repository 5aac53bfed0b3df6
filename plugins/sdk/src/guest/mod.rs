//! The guest side: WIT bindings of `sluice:policy@0.5.0`, the [`Plugin`] trait with its
//! defaults, the helpers they are made of, and the export macro.

pub mod caps;
pub mod cost;
mod export;
mod plugin;
pub mod test;

pub use plugin::{Plugin, Priority, default_plan_request, default_read_response};

/// The bindings wit-bindgen generates from the crate's `wit/` (`sluice:policy@0.2.0`, vendored
/// from the repository's `wit/` so the crate builds on its own).
///
/// `wit/deps/` also holds the frozen `sluice:policy@0.1.0`, so two versions of one package
/// are loaded and wit-bindgen names the module of each with its version:
/// `sluice::policy0_5_0`. Plugin code names the types through this crate's re-exports.
#[allow(
    missing_docs,
    unsafe_code,
    unused_qualifications,
    missing_debug_implementations
)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "provider-policy",
        pub_export_macro: true,
        export_macro_name: "export_bindings",
        default_bindings_module: "sluice_plugin_sdk::bindings",
        additional_derives: [PartialEq],
    });
}

pub use bindings::sluice::policy0_5_0::log::Level;
pub use bindings::sluice::policy0_5_0::types::{
    BodyDigest, Classification, Cost, Description, Dimension, ErrorShape, LimitedScope, MediaKind,
    MediaPart, Observation, Outcome, PolicyError, PriorityClass, Reading, ReconcilePlan,
    Reconciliation, Refill, Request, RequestClass, RequestPlan, Response, ResponsePart,
    StatusQuery, TransportFailure, UncertainWrite, Verdict,
};

use crate::generic;
use crate::headers::Headers;
use sluice_contract::{hints, scope};

/// A [`Headers`] view over a WIT `fields` block.
pub fn headers(block: &str) -> Headers<'_> {
    Headers::parse(block)
}

/// `From` both ways between the digest's plain types (`crate::digest`) and the WIT's: a
/// record field for field, an enum case for case.
macro_rules! digest_conversions {
    ($($from:ty => $to:ty),+) => {$(
        impl From<$from> for $to {
            fn from(d: $from) -> Self {
                Self {
                    length: d.length,
                    json: d.json,
                    text_chars: d.text_chars,
                    media: d.media.into_iter().map(Into::into).collect(),
                    media_omitted: d.media_omitted,
                    fields: d.fields,
                }
            }
        }
    )+};
    (@part $($from:ty => $to:ty, $fk:path => $tk:path),+) => {$(
        impl From<$from> for $to {
            fn from(m: $from) -> Self {
                use $fk as F;
                use $tk as T;
                Self {
                    kind: match m.kind {
                        F::Image => T::Image,
                        F::Document => T::Document,
                        F::Audio => T::Audio,
                        F::Other => T::Other,
                    },
                    media_type: m.media_type,
                    bytes: m.bytes,
                    width: m.width,
                    height: m.height,
                    pages: m.pages,
                    detail: m.detail,
                    by_url: m.by_url,
                }
            }
        }
    )+};
}

digest_conversions!(crate::digest::BodyDigest => BodyDigest, BodyDigest => crate::digest::BodyDigest);
digest_conversions!(@part
    crate::digest::MediaPart => MediaPart, crate::digest::MediaKind => MediaKind,
    MediaPart => crate::digest::MediaPart, MediaKind => crate::digest::MediaKind
);

impl BodyDigest {
    /// The value of `field` (a dotted name) as JSON text.
    pub fn field(&self, name: &str) -> Option<&str> {
        crate::digest::field(&self.fields, name)
    }

    /// The string value of `field`, unquoted; `None` when absent or not a string.
    pub fn string(&self, name: &str) -> Option<String> {
        crate::digest::string(self.field(name)?)
    }

    /// The whole-number value of `field`; `None` when absent or not a whole number.
    pub fn number(&self, name: &str) -> Option<u64> {
        self.field(name)?.parse().ok()
    }

    /// The boolean value of `field`; `None` when absent or not a boolean.
    pub fn flag(&self, name: &str) -> Option<bool> {
        self.field(name)?.parse().ok()
    }

    /// The default maximum output the host's configuration sets for the request's model
    /// ([`crate::digest::DEFAULT_MAX_OUTPUT`]); `None` when it sets none.
    pub fn default_max_output(&self) -> Option<u64> {
        self.number(crate::digest::DEFAULT_MAX_OUTPUT)
    }

    /// Sets (or removes) the configured default maximum output, as the host does: for a
    /// plugin's own tests.
    pub fn set_default_max_output(&mut self, tokens: Option<u64>) {
        crate::digest::set_number(&mut self.fields, crate::digest::DEFAULT_MAX_OUTPUT, tokens);
    }
}

/// A response is the outcome of an attempt that got one.
impl From<Response> for Outcome {
    fn from(resp: Response) -> Self {
        Outcome::Response(resp)
    }
}

crate::wit_conversions!(pub Verdict, TransportFailure, Observation, Dimension);

/// Generic classification: the status decides the verdict, `Retry-After` (or an exhausted
/// IETF quota's reset on a 429/503) the delay; a transport failure is transient when
/// nothing was sent and unknown otherwise.
pub fn default_classify(req: &Request, outcome: &Outcome) -> Classification {
    match outcome {
        Outcome::Transport(failure) => Classification {
            verdict: verdict(generic::transport_kind(transport(*failure))),
            retry_after_ms: None,
            error_code: None,
            should_retry: None,
            scope: None,
        },
        Outcome::Response(resp) => {
            let h = headers(&resp.headers);
            Classification {
                verdict: verdict(generic::status_kind(resp.status)),
                retry_after_ms: generic::requested_delay_ms(resp.status, &h, req.now_ms),
                error_code: None,
                should_retry: None,
                scope: None,
            }
        }
    }
}

/// Generic priority: `x-sluice-priority` (`interactive`, `standard`, `background`) and
/// `x-sluice-tenant` request headers when the caller set them; else standard, no tenant, no
/// deadline.
pub fn default_priority(req: &Request) -> Priority {
    let h = headers(&req.headers);
    let class = match h.get(hints::PRIORITY) {
        Some(v) if v.eq_ignore_ascii_case("interactive") => PriorityClass::Interactive,
        Some(v) if v.eq_ignore_ascii_case("background") => PriorityClass::Background,
        _ => PriorityClass::Standard,
    };
    Priority {
        class,
        tenant: h
            .get(hints::TENANT)
            .filter(|t| !t.is_empty())
            .map(str::to_owned),
        deadline_ms: None,
    }
}

/// One request: the cost of any request, before what a provider counts besides.
pub fn one_request() -> Cost {
    Cost {
        dimension: Dimension::Requests,
        amount: 1,
    }
}

/// An amount of `dimension` (a planned cost, or usage reported).
pub fn amount(dimension: Dimension, amount: u64) -> Cost {
    Cost { dimension, amount }
}

/// An observation with only its dimension and source set; fill in the rest.
pub fn observation(dimension: Dimension, source: &str) -> Observation {
    Observation {
        scope: None,
        dimension,
        limit: None,
        remaining: None,
        used: None,
        reset_after_ms: None,
        window_ms: None,
        source: source.into(),
    }
}

/// An observation from a provider's `limit` / `remaining` headers and an already computed
/// reset (from the third header named); `None` when neither figure is present (or both are
/// malformed). Its source names all three headers.
pub fn header_pair(
    h: &Headers<'_>,
    dimension: Dimension,
    [limit, remaining, reset]: [&str; 3],
    reset_after_ms: Option<u64>,
) -> Option<Observation> {
    let lim = h.get_u64(limit);
    let rem = h.get_u64(remaining);
    if lim.is_none() && rem.is_none() {
        return None;
    }
    let mut o = observation(dimension, &[limit, remaining, reset].join(","));
    o.limit = lim;
    o.remaining = rem;
    o.reset_after_ms = reset_after_ms;
    Some(o)
}

/// The `model` named in a JSON request body (from its digest, so a model named past the
/// body's prefix is found too).
pub fn model(req: &Request) -> Option<String> {
    req.digest.string("model").filter(|m| !m.is_empty())
}

/// The `model` named in a JSON request body, as a scope key `model:<name>`.
pub fn model_scope(req: &Request) -> Option<String> {
    model(req)
        .filter(|m| m.len() <= scope::MAX_MODEL_BYTES)
        .map(|m| format!("{}{m}", scope::MODEL_PREFIX))
}

/// Writes a message to the host's log (a no-op when not running as a component).
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    bindings::sluice::policy0_5_0::log::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, message);
}

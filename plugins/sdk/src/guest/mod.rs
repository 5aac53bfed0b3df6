//! The guest side: WIT bindings, the [`Plugin`] trait with its defaults, and the export macro.

/// The bindings wit-bindgen generates from `wit/policy.wit`.
#[allow(
    missing_docs,
    unsafe_code,
    unused_qualifications,
    missing_debug_implementations
)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "provider-policy",
        pub_export_macro: true,
        export_macro_name: "export_bindings",
        default_bindings_module: "sluice_plugin_sdk::bindings",
        additional_derives: [PartialEq],
    });
}

pub use bindings::sluice::policy::log::Level;
pub use bindings::sluice::policy::types::{
    Classification, Cost, Description, Dimension, Observation, Outcome, PolicyError, Priority,
    PriorityClass, ReconcilePlan, Reconciliation, Request, RequestClass, Response, StatusQuery,
    TransportFailure, UncertainWrite, Verdict,
};

use crate::generic;
use crate::headers::Headers;

/// A provider policy. Every function but [`Plugin::describe`] has a default that follows
/// generic HTTP semantics; override what your provider does differently.
pub trait Plugin {
    /// Names the plugin and the traffic it governs.
    fn describe() -> Description;

    /// Reads one attempt's outcome. Default: [`default_classify`].
    ///
    /// # Errors
    /// A [`PolicyError`] makes the host use its built-in policy for this call.
    fn classify(req: &Request, outcome: &Outcome) -> Result<Classification, PolicyError> {
        Ok(default_classify(req, outcome))
    }

    /// Reads the quota figures of a response. Default: the IETF rate-limit fields.
    ///
    /// # Errors
    /// A [`PolicyError`] makes the host use its built-in policy for this call.
    fn parse_quota(req: &Request, resp: &Response) -> Result<Vec<Observation>, PolicyError> {
        let _ = req;
        Ok(ietf_observations(&headers(&resp.headers)))
    }

    /// Advises where a request belongs in the queue. Default: [`default_priority`].
    ///
    /// # Errors
    /// A [`PolicyError`] makes the host use its built-in policy for this call.
    fn decide_priority(req: &Request) -> Result<Priority, PolicyError> {
        Ok(default_priority(req))
    }

    /// Estimates a request's cost before sending. Default: one request.
    ///
    /// # Errors
    /// A [`PolicyError`] makes the host use its built-in policy for this call.
    fn estimate_cost(req: &Request) -> Result<Vec<Cost>, PolicyError> {
        let _ = req;
        Ok(vec![Cost {
            dimension: Dimension::Requests,
            amount: 1,
        }])
    }

    /// Says how to settle an uncertain write. Default: unsupported, so the host escalates.
    ///
    /// # Errors
    /// A [`PolicyError`] makes the host use its built-in policy for this call.
    fn reconcile(write: &UncertainWrite) -> Result<ReconcilePlan, PolicyError> {
        let _ = write;
        Ok(ReconcilePlan::Unsupported(
            "this plugin cannot look up writes".into(),
        ))
    }

    /// Reads the answer to the status query from [`Plugin::reconcile`]. Default: unknown.
    ///
    /// # Errors
    /// A [`PolicyError`] makes the host use its built-in policy for this call.
    fn read_reconciliation(
        write: &UncertainWrite,
        resp: &Response,
    ) -> Result<Reconciliation, PolicyError> {
        let _ = (write, resp);
        Ok(Reconciliation::Unknown(
            "this plugin cannot read lookups".into(),
        ))
    }
}

/// A [`Headers`] view over a WIT `fields` block.
pub fn headers(block: &str) -> Headers<'_> {
    Headers::parse(block)
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
        },
        Outcome::Response(resp) => {
            let h = headers(&resp.headers);
            Classification {
                verdict: verdict(generic::status_kind(resp.status)),
                retry_after_ms: generic::requested_delay_ms(resp.status, &h, req.now_ms),
                error_code: None,
                should_retry: None,
            }
        }
    }
}

/// Generic priority: `x-sluice-priority` (`interactive`, `standard`, `background`) and
/// `x-sluice-tenant` request headers when the caller set them; else standard, no tenant,
/// weight 1.
pub fn default_priority(req: &Request) -> Priority {
    let h = headers(&req.headers);
    let class = match h.get("x-sluice-priority") {
        Some(v) if v.eq_ignore_ascii_case("interactive") => PriorityClass::Interactive,
        Some(v) if v.eq_ignore_ascii_case("background") => PriorityClass::Background,
        _ => PriorityClass::Standard,
    };
    Priority {
        class,
        tenant: h.get("x-sluice-tenant").map(str::to_owned),
        weight: 1,
        deadline_ms: None,
    }
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

/// The `model` named in a JSON request body, as a scope key `model:<name>`.
pub fn model_scope(req: &Request) -> Option<String> {
    crate::json::model(&req.body)
        .filter(|m| !m.is_empty() && m.len() <= 128)
        .map(|m| format!("model:{m}"))
}

/// Writes a message to the host's log (a no-op when not running as a component).
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    bindings::sluice::policy::log::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, message);
}

/// Exports a [`Plugin`] implementation as the component's `sluice:policy/policy` interface.
///
/// Expands to nothing outside `wasm32`, so the same crate builds natively for unit tests.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            use $crate::bindings::exports::sluice::policy::policy::Guest;
            use $crate::{
                Classification, Cost, Description, Observation, Outcome, PolicyError, Priority,
                ReconcilePlan, Reconciliation, Request, Response, UncertainWrite,
            };
            struct Exported;
            impl Guest for Exported {
                fn describe() -> Description {
                    <$plugin as $crate::Plugin>::describe()
                }
                fn classify(req: Request, outcome: Outcome) -> Result<Classification, PolicyError> {
                    <$plugin as $crate::Plugin>::classify(&req, &outcome)
                }
                fn parse_quota(
                    req: Request,
                    resp: Response,
                ) -> Result<Vec<Observation>, PolicyError> {
                    <$plugin as $crate::Plugin>::parse_quota(&req, &resp)
                }
                fn decide_priority(req: Request) -> Result<Priority, PolicyError> {
                    <$plugin as $crate::Plugin>::decide_priority(&req)
                }
                fn estimate_cost(req: Request) -> Result<Vec<Cost>, PolicyError> {
                    <$plugin as $crate::Plugin>::estimate_cost(&req)
                }
                fn reconcile(write: UncertainWrite) -> Result<ReconcilePlan, PolicyError> {
                    <$plugin as $crate::Plugin>::reconcile(&write)
                }
                fn read_reconciliation(
                    write: UncertainWrite,
                    resp: Response,
                ) -> Result<Reconciliation, PolicyError> {
                    <$plugin as $crate::Plugin>::read_reconciliation(&write, &resp)
                }
            }
            $crate::bindings::export_bindings! { Exported with_types_in $crate::bindings }
        };
    };
}

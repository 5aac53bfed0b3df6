//! A plugin's logic compiled natively, answering as its component would.
//!
//! A provider plugin is a crate implementing [`sluice_plugin_sdk::Plugin`]; built for
//! `wasm32-wasip2` it is a component the runtime sandboxes, and built for the host it is
//! plain Rust that tests and benches can call without a runtime. [`NativePlugin`] puts the
//! latter behind [`ProviderPolicy`], keeping what the host does at the sandbox's edge:
//! credentials are redacted from every request, a `policy-error` is a decline, and every
//! answer is checked against the same caps (`validate.rs`). What it does not give is the
//! sandbox: no deadline, no memory limit, and a panic is the caller's. Trusted code only.
//!
//! Behind the `native-plugins` feature, which turns on the SDK's guest bindings (the
//! library otherwise uses only its parsers).

use std::marker::PhantomData;

use sluice_plugin_sdk as guest;

use super::error::{self, LoadError};
use super::limits::Caps;
use super::validate;
use crate::contract::{
    Cost, Description, PluginError, ProviderPolicy, Reading, ReconcilePlan, Reconciliation,
    Request, RequestPlan, Response, ResponsePart, UncertainWrite, WireOutcome,
};
use crate::headers::{without_credentials, write_without_credentials};

super::convert::contract_conversions!(guest);

/// The plugin `P` (a [`sluice_plugin_sdk::Plugin`]) called natively, as a [`ProviderPolicy`].
///
/// ```
/// use std::sync::Arc;
/// use sluice::contract::ProviderPolicy;
/// use sluice::plugin::NativePlugin;
///
/// # #[derive(Debug)] struct Generic;
/// # impl sluice_plugin_sdk::Plugin for Generic {
/// #     fn describe() -> sluice_plugin_sdk::Description {
/// #         sluice_plugin_sdk::Description {
/// #             name: "generic".into(), version: "1.0.0".into(), provider: "Any".into(),
/// #             hosts: vec![], routes: vec![], read_routes: vec![], error_shape: None,
/// #             refill: None,
/// #         }
/// #     }
/// # }
/// let policy = NativePlugin::<Generic>::new()?;
/// assert_eq!(policy.name(), "generic");
/// # Ok::<(), sluice::plugin::LoadError>(())
/// ```
pub struct NativePlugin<P> {
    description: Description,
    caps: Caps,
    plugin: PhantomData<fn() -> P>,
}

impl<P> std::fmt::Debug for NativePlugin<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativePlugin")
            .field("name", &self.description.name)
            .field("version", &self.description.version)
            .finish_non_exhaustive()
    }
}

impl<P: guest::Plugin> NativePlugin<P> {
    /// `P`, described and checked against the default caps.
    ///
    /// # Errors
    /// [`LoadError::Describe`] when its description breaks the caps (an empty name, a string
    /// or a list too long).
    pub fn new() -> Result<Self, LoadError> {
        Self::with_caps(Caps::default())
    }

    /// `P`, its answers checked against `caps`.
    ///
    /// # Errors
    /// As [`NativePlugin::new`].
    pub fn with_caps(caps: Caps) -> Result<Self, LoadError> {
        let description = Description::from(P::describe());
        let origin = format!("native `{}`", std::any::type_name::<P>());
        let verdict = validate::description(&description, &caps);
        let description = error::checked(&origin, "describe", verdict, description)
            .map_err(|error| LoadError::Describe { origin, error })?;
        Ok(Self {
            description,
            caps,
            plugin: PhantomData,
        })
    }

    /// The answer in the contract's types, or the decline; checked against the caps.
    fn answer<W: Into<T>, T>(
        &self,
        function: &'static str,
        r: Result<W, guest::PolicyError>,
        check: fn(&T, &Caps) -> validate::Check,
    ) -> Result<T, PluginError> {
        let name = &self.description.name;
        let value: T = r
            .map_err(|e| error::declined(name, function, &e.into(), &self.caps))?
            .into();
        error::checked(name, function, check(&value, &self.caps), value)
    }
}

impl<P: guest::Plugin> ProviderPolicy for NativePlugin<P> {
    fn description(&self) -> &Description {
        &self.description
    }

    fn plan_request(&self, req: &Request) -> Result<RequestPlan, PluginError> {
        let req = guest::Request::from(&*without_credentials(req));
        self.answer(
            "plan-request",
            P::plan_request(&req),
            validate::request_plan,
        )
    }

    fn read_response(
        &self,
        req: &Request,
        outcome: &WireOutcome,
        part: ResponsePart,
    ) -> Result<Reading, PluginError> {
        let req = guest::Request::from(&*without_credentials(req));
        let outcome = guest::Outcome::from(outcome.clone());
        self.answer(
            "read-response",
            P::read_response(&req, &outcome, part.into()),
            validate::reading,
        )
    }

    fn counts_streams(&self) -> bool {
        true
    }

    fn count_stream(
        &self,
        req: &Request,
        at: u64,
        stretch: &[u8],
    ) -> Result<Vec<Cost>, PluginError> {
        let req = guest::Request::from(&*without_credentials(req));
        let counted = P::count_stream(&req, at, stretch)
            .map(|costs| costs.into_iter().map(Cost::from).collect::<Vec<_>>());
        self.answer("count-stream", counted, validate::counted)
    }

    fn reconcile(&self, write: &UncertainWrite) -> Result<ReconcilePlan, PluginError> {
        let write = guest::UncertainWrite::from(write_without_credentials(write).into_owned());
        self.answer("reconcile", P::reconcile(&write), validate::reconcile_plan)
    }

    fn read_reconciliation(
        &self,
        write: &UncertainWrite,
        resp: &Response,
    ) -> Result<Reconciliation, PluginError> {
        let write = guest::UncertainWrite::from(write_without_credentials(write).into_owned());
        let resp = guest::Response::from(resp.clone());
        self.answer(
            "read-reconciliation",
            P::read_reconciliation(&write, &resp),
            validate::reconciliation,
        )
    }
}

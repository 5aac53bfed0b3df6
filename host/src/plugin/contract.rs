//! Which version of the contract a component speaks, and its bindings for that version.
//!
//! A component that exports `sluice:policy/policy@0.5.0` is bound through the current
//! bindings. One that exports only a frozen version is bound through that version's bindings:
//! `@0.4.0` through `v4.rs` (four error shapes), `@0.3.0` through `v3.rs` (no refill, no
//! stream counting), `@0.2.0` through `v2.rs` (a
//! request without its digest), `@0.1.0` through `v1.rs`, which answers the current functions
//! with the 0.1.0 ones. The rest of the
//! host sees one [`Plugin`](super::Plugin) API either way.
//!
//! What an adapter asks of the loaded plugin is [`Calls`]: the plugin answers it and picks
//! the adapter, so the adapters know the calls and not the plugin.

use wasmtime::Store;
use wasmtime::component::InstancePre;

use super::bindings::{ProviderPolicy, ProviderPolicyPre};
use super::bindings::{v0_1, v0_2, v0_3, v0_4};
use super::state::State;
use crate::contract::{PluginError, PolicyError};

/// What a frozen contract's adapter (`v1` … `v4`) asks of a loaded plugin.
pub(super) trait Calls {
    /// Runs `f` on an instance under the call's deadline and the store's limits; maps every
    /// failure to a [`PluginError`].
    fn call<R>(
        &self,
        function: &'static str,
        f: impl FnOnce(&Bindings, &mut Store<State>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError>;

    /// The answer, or the plugin's `policy-error` (of any contract version) as a declined
    /// call.
    fn declined<T, E: Into<PolicyError>>(
        &self,
        function: &'static str,
        r: Result<T, E>,
    ) -> Result<T, PluginError>;
}

/// A version of the `sluice:policy` contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Contract {
    /// `sluice:policy@0.1.0`, frozen: two calls per attempt, no usage, no scopes.
    V0_1,
    /// `sluice:policy@0.2.0`, frozen: `plan-request` and `read-response`, and a request
    /// body's prefix without its digest.
    V0_2,
    /// `sluice:policy@0.3.0`, frozen: a request's digest, and a classification's scope.
    V0_3,
    /// `sluice:policy@0.4.0`, frozen: a provider's refill, and streams counted as they pass.
    V0_4,
    /// `sluice:policy@0.5.0`, current: errors in Google's and AWS's shapes.
    V0_5,
}

impl Contract {
    /// The WIT package, as `sluice:policy@X.Y.Z`.
    pub fn package(self) -> &'static str {
        match self {
            Self::V0_1 => "sluice:policy@0.1.0",
            Self::V0_2 => "sluice:policy@0.2.0",
            Self::V0_3 => "sluice:policy@0.3.0",
            Self::V0_4 => "sluice:policy@0.4.0",
            Self::V0_5 => "sluice:policy@0.5.0",
        }
    }
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.package())
    }
}

/// A component pre-linked and bound to the contract version it exports.
pub(super) enum Pre {
    V0_5(ProviderPolicyPre<State>),
    V0_4(v0_4::ProviderPolicyPre<State>),
    V0_3(v0_3::ProviderPolicyPre<State>),
    V0_2(v0_2::ProviderPolicyPre<State>),
    V0_1(v0_1::ProviderPolicyPre<State>),
}

impl Pre {
    /// Binds `pre` to the newest version the component exports.
    ///
    /// # Errors
    /// When the component exports none (the error of binding the current version, which
    /// names what is missing).
    pub(super) fn new(pre: InstancePre<State>) -> wasmtime::Result<Self> {
        match ProviderPolicyPre::new(pre.clone()) {
            Ok(p) => Ok(Self::V0_5(p)),
            Err(current) => v0_4::ProviderPolicyPre::new(pre.clone())
                .map(Self::V0_4)
                .or_else(|_| v0_3::ProviderPolicyPre::new(pre.clone()).map(Self::V0_3))
                .or_else(|_| v0_2::ProviderPolicyPre::new(pre.clone()).map(Self::V0_2))
                .or_else(|_| v0_1::ProviderPolicyPre::new(pre).map(Self::V0_1))
                .map_err(|_| current),
        }
    }

    pub(super) fn contract(&self) -> Contract {
        match self {
            Self::V0_5(_) => Contract::V0_5,
            Self::V0_4(_) => Contract::V0_4,
            Self::V0_3(_) => Contract::V0_3,
            Self::V0_2(_) => Contract::V0_2,
            Self::V0_1(_) => Contract::V0_1,
        }
    }

    pub(super) fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<Bindings> {
        Ok(match self {
            Self::V0_5(p) => Bindings::V0_5(p.instantiate(store)?),
            Self::V0_4(p) => Bindings::V0_4(p.instantiate(store)?),
            Self::V0_3(p) => Bindings::V0_3(p.instantiate(store)?),
            Self::V0_2(p) => Bindings::V0_2(p.instantiate(store)?),
            Self::V0_1(p) => Bindings::V0_1(p.instantiate(store)?),
        })
    }
}

/// An instance's exports, in the version it was bound to.
pub(super) enum Bindings {
    V0_5(ProviderPolicy),
    V0_4(v0_4::ProviderPolicy),
    V0_3(v0_3::ProviderPolicy),
    V0_2(v0_2::ProviderPolicy),
    V0_1(v0_1::ProviderPolicy),
}

impl Bindings {
    /// The 0.5.0 functions.
    ///
    /// # Errors
    /// When the instance speaks a frozen version (a caller that did not check
    /// [`Pre::contract`]).
    pub(super) fn current(
        &self,
    ) -> wasmtime::Result<&super::bindings::exports::sluice::policy0_5_0::policy::Guest> {
        match self {
            Self::V0_5(b) => Ok(b.sluice_policy0_5_0_policy()),
            _ => Err(mismatch(Contract::V0_5)),
        }
    }

    /// The 0.4.0 functions.
    ///
    /// # Errors
    /// When the instance speaks another version.
    pub(super) fn frozen_v0_4(
        &self,
    ) -> wasmtime::Result<&v0_4::exports::sluice::policy::policy::Guest> {
        match self {
            Self::V0_4(b) => Ok(b.sluice_policy_policy()),
            _ => Err(mismatch(Contract::V0_4)),
        }
    }

    /// The 0.3.0 functions.
    ///
    /// # Errors
    /// When the instance speaks another version.
    pub(super) fn frozen_v0_3(
        &self,
    ) -> wasmtime::Result<&v0_3::exports::sluice::policy::policy::Guest> {
        match self {
            Self::V0_3(b) => Ok(b.sluice_policy_policy()),
            _ => Err(mismatch(Contract::V0_3)),
        }
    }

    /// The 0.2.0 functions.
    ///
    /// # Errors
    /// When the instance speaks another version.
    pub(super) fn frozen_v0_2(
        &self,
    ) -> wasmtime::Result<&v0_2::exports::sluice::policy::policy::Guest> {
        match self {
            Self::V0_2(b) => Ok(b.sluice_policy_policy()),
            _ => Err(mismatch(Contract::V0_2)),
        }
    }

    /// The 0.1.0 functions.
    ///
    /// # Errors
    /// When the instance speaks another version.
    pub(super) fn frozen_v0_1(
        &self,
    ) -> wasmtime::Result<&v0_1::exports::sluice::policy::policy::Guest> {
        match self {
            Self::V0_1(b) => Ok(b.sluice_policy_policy()),
            _ => Err(mismatch(Contract::V0_1)),
        }
    }
}

fn mismatch(wanted: Contract) -> wasmtime::Error {
    wasmtime::Error::msg(format!("the instance is not bound to {wanted}"))
}

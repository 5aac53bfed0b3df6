//! One loaded plugin: its compiled component, the pre-linked `InstancePre` bound to the
//! contract version it exports, and a small pool of warm instances. Every call runs under an
//! epoch deadline and the store's limits; a call that fails for any reason discards its
//! instance, so a broken instance is never reused.

use std::sync::{Arc, Mutex};

use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;
use wasmtime::{Engine, Store, Trap};

use super::bindings::exports::sluice::policy0_5_0::policy::Guest;
use super::bindings::sluice::policy0_5_0::types as wit;
use super::cache::CacheOutcome;
use super::contract::{Bindings, Calls, Contract, Pre};
use super::error::{self, LoadError};
use super::limits::{Caps, RuntimeConfig};
use super::nonblocking::Blocked;
use super::state::{Deadline, State};
use super::ticker::Ticking;
use super::{convert, v1, v2, v3, v4, validate};
use crate::contract::{
    Cost, Description, Failure, PluginError, PolicyError, ProviderPolicy, Reading, ReconcilePlan,
    Reconciliation, Request, RequestPlan, Response, ResponsePart, UncertainWrite, WireOutcome,
};
use crate::headers::{without_credentials, write_without_credentials};

/// A warm instance and its store.
struct Warm {
    store: Store<State>,
    bindings: Bindings,
    calls: u64,
}

/// A loaded, validated plugin. Cheap to call from many threads: each call takes a warm
/// instance from the pool (or makes one) and returns it afterwards.
pub struct Plugin {
    name: String,
    description: Description,
    exports: Vec<String>,
    engine: Engine,
    pre: Pre,
    config: RuntimeConfig,
    warm: Mutex<Vec<Warm>>,
    cache: CacheOutcome,
    /// Its runtime's count of running calls, which keeps the epoch ticker ticking.
    ticking: Arc<Ticking>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("version", &self.description.version)
            .field("contract", &self.contract())
            .finish_non_exhaustive()
    }
}

impl Plugin {
    pub(super) fn new(
        origin: &str,
        engine: &Engine,
        component: Component,
        pre: wasmtime::component::InstancePre<State>,
        config: RuntimeConfig,
        cache: CacheOutcome,
        ticking: Arc<Ticking>,
    ) -> Result<Self, LoadError> {
        // Its deadline is kept to within a tick: a shorter one than the others' makes the
        // runtime tick more often.
        ticking.serve(config.call_deadline);
        let exports = export_names(engine, &component);
        let pre = Pre::new(pre).map_err(|e| LoadError::Invalid {
            origin: origin.to_owned(),
            message: format!("{e:#}"),
        })?;
        let mut plugin = Self {
            name: origin.to_owned(),
            description: Description {
                name: String::new(),
                version: String::new(),
                provider: String::new(),
                hosts: Vec::new(),
                routes: Vec::new(),
                read_routes: vec![],
                error_shape: None,
                refill: None,
            },
            exports,
            engine: engine.clone(),
            pre,
            config,
            warm: Mutex::new(Vec::new()),
            cache,
            ticking,
        };
        let description = match plugin.contract() {
            Contract::V0_5 => plugin
                .call("describe", |b, s| b.current()?.call_describe(s))
                .map(Description::from),
            Contract::V0_4 => v4::describe(&plugin),
            Contract::V0_3 => v3::describe(&plugin),
            Contract::V0_2 => v2::describe(&plugin),
            Contract::V0_1 => v1::describe(&plugin),
        }
        .and_then(|d| {
            plugin.check(
                "describe",
                validate::description(&d, &plugin.config.caps),
                d,
            )
        })
        .map_err(|error| LoadError::Describe {
            origin: origin.to_owned(),
            error,
        })?;
        plugin.name.clone_from(&description.name);
        plugin.description = description;
        // Instances made while describing carry the origin as their log name.
        plugin.lock_warm().clear();
        Ok(plugin)
    }

    /// The plugin's name, from its `describe`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the plugin said about itself when it was loaded.
    pub fn description(&self) -> &Description {
        &self.description
    }

    /// The component's exported interfaces and functions, as `interface#function`.
    pub fn exports(&self) -> &[String] {
        &self.exports
    }

    /// The limits its calls run under.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// Whether the compiled code came from the on-disk cache.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.cache
    }

    /// Which version of the contract the plugin speaks.
    pub fn contract(&self) -> Contract {
        self.pre.contract()
    }

    /// One contract call: through the 0.5.0 function when the plugin speaks 0.5.0 (`current`),
    /// else through the frozen version's functions that answer it (`frozen`, which matches
    /// on [`Plugin::contract`]); a `policy-error` becomes [`Failure::Declined`], and the
    /// answer is checked against the caps either way.
    fn answer<T, W: Into<T>>(
        &self,
        function: &'static str,
        current: impl FnOnce(&Guest, &mut Store<State>) -> wasmtime::Result<Result<W, wit::PolicyError>>,
        frozen: impl FnOnce(&Self) -> Result<T, PluginError>,
        check: fn(&T, &Caps) -> validate::Check,
    ) -> Result<T, PluginError> {
        let value = match self.contract() {
            Contract::V0_5 => {
                let r = self.call(function, |b, s| current(b.current()?, s))?;
                self.declined(function, r)?.into()
            }
            Contract::V0_4 | Contract::V0_3 | Contract::V0_2 | Contract::V0_1 => frozen(self)?,
        };
        self.check(function, check(&value, &self.config.caps), value)
    }

    fn instantiate(&self) -> wasmtime::Result<Warm> {
        let c = &self.config;
        let ticks = c.deadline_ticks(self.ticking.tick());
        let deadline = Deadline::new(c.call_deadline, ticks);
        let state = State::new(
            &self.name,
            c.max_memory_bytes,
            c.max_table_elements,
            c.caps.max_log_messages,
            deadline,
        );
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| s);
        store.epoch_deadline_callback(|mut ctx| Ok(ctx.data_mut().deadline_passed()));
        // Instantiation runs the guest's initializers: give it ten call deadlines.
        store.set_epoch_deadline(ticks.saturating_mul(10));
        let bindings = self.pre.instantiate(&mut store)?;
        store.data_mut().set_plugin_name(&self.name);
        Ok(Warm {
            store,
            bindings,
            calls: 0,
        })
    }

    fn take_warm(&self) -> Option<Warm> {
        if self.config.reuse_instances {
            self.lock_warm().pop()
        } else {
            None
        }
    }

    fn put_warm(&self, w: Warm) {
        if self.config.reuse_instances && w.calls < self.config.instance_max_calls {
            let mut pool = self.lock_warm();
            if pool.len() < self.config.max_warm_instances {
                pool.push(w);
            }
        }
    }

    fn lock_warm(&self) -> std::sync::MutexGuard<'_, Vec<Warm>> {
        self.warm.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn error(
        &self,
        function: &'static str,
        e: wasmtime::Error,
        memory_denied: bool,
    ) -> PluginError {
        let failure = match e.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => Failure::Timeout(self.config.call_deadline),
            Some(Trap::StackOverflow) => Failure::StackOverflow,
            _ if memory_denied => Failure::OutOfMemory(self.config.max_memory_bytes),
            Some(trap) => Failure::Trap(trap.to_string()),
            None => match e.downcast_ref::<Blocked>() {
                // It would have waited on a stream or a clock.
                Some(blocked) => Failure::Trap(blocked.to_string()),
                // Not a trap: the canonical ABI refused what the plugin returned (bad
                // UTF-8, an out-of-range discriminant, a pointer outside its memory...).
                None => Failure::InvalidOutput(format!("{e:#}")),
            },
        };
        PluginError {
            plugin: self.name.clone(),
            function,
            failure,
        }
    }

    pub(super) fn check<T>(
        &self,
        function: &'static str,
        verdict: validate::Check,
        value: T,
    ) -> Result<T, PluginError> {
        error::checked(&self.name, function, verdict, value)
    }
}

impl Calls for Plugin {
    fn call<R>(
        &self,
        function: &'static str,
        f: impl FnOnce(&Bindings, &mut Store<State>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        // Before any guest code runs (instantiation included): a resting ticker is woken,
        // so the deadline set below is counted.
        let _calling = self.ticking.begin();
        let mut warm = match self.take_warm() {
            Some(w) => w,
            None => self
                .instantiate()
                .map_err(|e| self.error(function, e, false))?,
        };
        let ticks = self.config.deadline_ticks(self.ticking.tick());
        warm.store.data_mut().begin_call(ticks);
        warm.store.set_epoch_deadline(ticks);
        let answer = f(&warm.bindings, &mut warm.store);
        warm.store.data().end_call(function);
        match answer {
            Ok(r) => {
                warm.calls += 1;
                self.put_warm(warm);
                Ok(r)
            }
            Err(e) => {
                let denied = warm.store.data().memory_denied;
                Err(self.error(function, e, denied))
            }
        }
    }

    fn declined<T, E: Into<PolicyError>>(
        &self,
        function: &'static str,
        r: Result<T, E>,
    ) -> Result<T, PluginError> {
        r.map_err(|e| error::declined(&self.name, function, &e.into(), &self.config.caps))
    }
}

/// The contract's calls, each answered by the function of the version the plugin speaks,
/// with credentials redacted from every request the plugin is shown.
impl ProviderPolicy for Plugin {
    fn description(&self) -> &Description {
        &self.description
    }

    fn name(&self) -> &str {
        &self.name
    }

    /// Plans a request before it is queued. A 0.1.0 plugin answers with `decide-priority`
    /// and `estimate-cost` (and no scopes). A plugin of a frozen version declines a body
    /// longer than the prefix its version promised: it cannot see what it would price.
    fn plan_request(&self, req: &Request) -> Result<RequestPlan, PluginError> {
        let req = without_credentials(req);
        let length = req.body_length();
        if matches!(self.contract(), Contract::V0_2 | Contract::V0_1)
            && length > crate::contract::BODY_PREFIX as u64
        {
            return Err(error::declined(
                &self.name,
                "plan-request",
                &PolicyError::InvalidInput(format!(
                    "a body of {length} bytes is longer than the {} KiB prefix {} shows a \
                     plugin; rebuild the plugin against {} to plan it from its digest",
                    crate::contract::BODY_PREFIX >> 10,
                    self.contract(),
                    Contract::V0_5,
                )),
                &self.config.caps,
            ));
        }
        self.answer(
            "plan-request",
            |g, s| convert::lend_request(&req, |r| g.call_plan_request(s, r)),
            |p| match p.contract() {
                Contract::V0_4 => v4::plan_request(p, &req),
                Contract::V0_3 => v3::plan_request(p, &req),
                Contract::V0_2 => v2::plan_request(p, &req),
                _ => v1::plan_request(p, &req),
            },
            validate::request_plan,
        )
    }

    /// Reads one attempt's outcome, or one part of a streamed answer, in one call. A 0.1.0
    /// plugin answers with `classify` and `parse-quota` (and no usage).
    fn read_response(
        &self,
        req: &Request,
        outcome: &WireOutcome,
        part: ResponsePart,
    ) -> Result<Reading, PluginError> {
        let req = without_credentials(req);
        self.answer(
            "read-response",
            |g, s| {
                let outcome = convert::lend_outcome(outcome);
                convert::lend_request(&req, |r| g.call_read_response(s, r, outcome, part.into()))
            },
            |p| match p.contract() {
                Contract::V0_4 => v4::read_response(p, &req, outcome, part),
                Contract::V0_3 => v3::read_response(p, &req, outcome, part),
                Contract::V0_2 => v2::read_response(p, &req, outcome, part),
                _ => v1::read_response(p, &req, outcome, part),
            },
            validate::reading,
        )
    }

    /// A plugin of a version before 0.4.0 has no `count-stream`.
    fn counts_streams(&self) -> bool {
        matches!(self.contract(), Contract::V0_5 | Contract::V0_4)
    }

    /// Counts one stretch of a stream. A plugin of a version before 0.4.0 counts nothing.
    fn count_stream(
        &self,
        req: &Request,
        at: u64,
        stretch: &[u8],
    ) -> Result<Vec<Cost>, PluginError> {
        if !self.counts_streams() {
            return Ok(Vec::new());
        }
        let req = without_credentials(req);
        self.answer(
            "count-stream",
            |g, s| {
                convert::lend_request(&req, |r| g.call_count_stream(s, r, at, stretch))
                    .map(|r| r.map(|costs| costs.into_iter().map(Cost::from).collect::<Vec<_>>()))
            },
            |p| v4::count_stream(p, &req, at, stretch),
            validate::counted,
        )
    }

    fn reconcile(&self, write: &UncertainWrite) -> Result<ReconcilePlan, PluginError> {
        let write = &*write_without_credentials(write);
        self.answer(
            "reconcile",
            |g, s| g.call_reconcile(s, convert::lend_write(write)),
            |p| match p.contract() {
                Contract::V0_4 => v4::reconcile(p, write),
                Contract::V0_3 => v3::reconcile(p, write),
                Contract::V0_2 => v2::reconcile(p, write),
                _ => v1::reconcile(p, write),
            },
            validate::reconcile_plan,
        )
    }

    fn read_reconciliation(
        &self,
        write: &UncertainWrite,
        resp: &Response,
    ) -> Result<Reconciliation, PluginError> {
        let write = &*write_without_credentials(write);
        self.answer(
            "read-reconciliation",
            |g, s| {
                let resp = convert::lend_response(resp);
                g.call_read_reconciliation(s, convert::lend_write(write), resp)
            },
            |p| match p.contract() {
                Contract::V0_4 => v4::read_reconciliation(p, write, resp),
                Contract::V0_3 => v3::read_reconciliation(p, write, resp),
                Contract::V0_2 => v2::read_reconciliation(p, write, resp),
                _ => v1::read_reconciliation(p, write, resp),
            },
            validate::reconciliation,
        )
    }
}

/// `interface#function` for every function the component exports.
fn export_names(engine: &Engine, component: &Component) -> Vec<String> {
    let mut out = Vec::new();
    for (name, item) in component.component_type().exports(engine) {
        match item.ty {
            ComponentItem::ComponentInstance(inst) => {
                for (f, item) in inst.exports(engine) {
                    if matches!(item.ty, ComponentItem::ComponentFunc(_)) {
                        out.push(format!("{name}#{f}"));
                    }
                }
            }
            ComponentItem::ComponentFunc(_) => out.push(name.to_owned()),
            _ => {}
        }
    }
    out
}

//! [`export_plugin!`](crate::export_plugin): a [`Plugin`](super::Plugin) implementation as
//! the component's exports.

/// Exports a [`Plugin`](crate::Plugin) implementation as the component's `sluice:policy/policy@0.5.0`
/// interface: `describe`, `plan-request`, `read-response`, `count-stream`, `reconcile` and
/// `read-reconciliation`. Every answer is fitted to the host's caps on the way out
/// ([`caps`](crate::caps)), so a figure from outside cannot make it invalid output.
///
/// It also makes [`CallArena`](crate::arena::CallArena) the component's global allocator:
/// a call's memory comes from one region that starts over between calls. A plugin with an
/// allocator of its own writes `export_plugin!(Type, without_call_arena)`.
///
/// Expands to nothing outside `wasm32`, so the same crate builds natively for unit tests.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        #[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
        #[global_allocator]
        static SLUICE_CALL_ARENA: $crate::arena::CallArena = $crate::arena::CallArena::new();
        $crate::export_plugin!($plugin, without_call_arena);
    };
    ($plugin:ty, without_call_arena) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            use $crate::bindings::exports::sluice::policy0_5_0::policy::Guest;
            use $crate::{
                Cost, Description, Outcome, PolicyError, Reading, ReconcilePlan, Reconciliation,
                Request, RequestPlan, Response, ResponsePart, UncertainWrite,
            };
            struct Exported;
            impl Guest for Exported {
                fn describe() -> Description {
                    <$plugin as $crate::Plugin>::describe()
                }
                fn plan_request(req: Request) -> Result<RequestPlan, PolicyError> {
                    <$plugin as $crate::Plugin>::plan_request(&req).map($crate::caps::fit_plan)
                }
                fn read_response(
                    req: Request,
                    outcome: Outcome,
                    part: ResponsePart,
                ) -> Result<Reading, PolicyError> {
                    <$plugin as $crate::Plugin>::read_response(&req, &outcome, part)
                        .map($crate::caps::fit_reading)
                }
                fn count_stream(
                    req: Request,
                    at: u64,
                    stretch: Vec<u8>,
                ) -> Result<Vec<Cost>, PolicyError> {
                    <$plugin as $crate::Plugin>::count_stream(&req, at, &stretch)
                        .map($crate::caps::fit_costs)
                }
                fn reconcile(write: UncertainWrite) -> Result<ReconcilePlan, PolicyError> {
                    <$plugin as $crate::Plugin>::reconcile(&write)
                        .map($crate::caps::fit_reconcile_plan)
                }
                fn read_reconciliation(
                    write: UncertainWrite,
                    resp: Response,
                ) -> Result<Reconciliation, PolicyError> {
                    <$plugin as $crate::Plugin>::read_reconciliation(&write, &resp)
                        .map($crate::caps::fit_reconciliation)
                }
            }
            $crate::bindings::export_bindings! { Exported with_types_in $crate::bindings }
        };
    };
}
